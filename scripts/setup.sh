#!/usr/bin/env bash
# Create .venv and install skipview with its test tools. Idempotent: a second run only checks.
# TORCH_SPEC picks the PyTorch build (default: the CPU build this project's machines carry locally; on a GPU
# machine set e.g. TORCH_SPEC="torch" to take the registry's CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch first, so the project's `torch>=2.4` is already satisfied and pip pulls no CUDA wheels.
.venv/bin/python -m pip install -q "$TORCH_SPEC"
.venv/bin/python -m pip install -q -e ".[dev]"
echo "skipview installed in $(pwd)/.venv"
