"""Lineage tags: from a logged number back to the code and data that produced it.

The hardware is what each training worker computed on (``hardware``: the run's ``hardware`` tag), so a run's time
reads against its machine. The code is identified by its git commit (``SKIPVIEW_GIT_COMMIT`` wins: a job submitted
to a cluster runs from a copied package with no ``.git``, so ``skipview submit`` passes the commit along). Data is
identified by the hash DVC recorded for it (``dvc.lock`` stage outputs or a ``.dvc`` file), which ``dvc checkout``
can bring back; data DVC does not track gets the SHA-256 of its ``meta.json`` so two runs on the same prepared data
still match.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

SOURCE_DIR = Path(__file__).resolve().parent
HARDWARE_TAG = "hardware"       # what the workers computed on (``hardware``), set by rank 0 at every (re)start
COMMAND_TAG = "skipview.command"    # the command line that started the run, where a `skipview` command did


def cpu() -> tuple[str, bool]:
    """This machine's CPU model (/proc/cpuinfo's model name, else the architecture) and whether it computes bf16
    natively (avx512_bf16 or AMX; without either torch emulates bf16, slower than fp32). The benchmarks' JSON
    and the runs' ``hardware`` both read it here."""
    model, flags = f"{os.uname().machine} CPU", set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    return model, bool(flags & {"avx512_bf16", "amx_bf16"})


def hardware(device: str = "cpu") -> str:
    """What this process computes on: a CUDA device's name, or the CPU's model, the cores this process may use and
    whether it computes bf16 natively."""
    if device.startswith("cuda"):
        import torch

        return f"{torch.cuda.get_device_name(torch.device(device))} (CUDA)"
    model, native_bf16 = cpu()
    return (f"{model}, {len(os.sched_getaffinity(0))} cores, native bf16: "
            f"{'yes' if native_bf16 else 'no (emulated)'}")


def hardware_of_group(each_worker: list[str]) -> str:
    """The ``hardware`` of a group of workers, one entry per kind: ``2 × NVIDIA H100 80GB HBM3 (CUDA)``."""
    return "; ".join(f"{count} × {kind}" for kind, count in Counter(each_worker).items())


def git_commit(where: Path = SOURCE_DIR) -> str:
    if os.environ.get("SKIPVIEW_GIT_COMMIT"):
        return os.environ["SKIPVIEW_GIT_COMMIT"]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}-dirty" if dirty else commit


def dvc_hash(path: str | Path) -> str | None:
    """The md5 DVC recorded for ``path`` in ``path.dvc`` or in a ``dvc.lock`` of its project: the nearest above it,
    then the project's other pipelines one folder down (``reports/dvc.lock``: a stage there may write ``data/``,
    with ``wdir: ..``), so an output keeps its hash when its stage moves to another pipeline file; else None."""
    path = Path(path).resolve()
    pointer = path.with_name(path.name + ".dvc")
    if pointer.is_file():
        for out in yaml.safe_load(pointer.read_text()).get("outs", []):
            if out.get("md5"):
                return out["md5"]
    nearest = next((folder for folder in path.parents if (folder / "dvc.lock").is_file()), None)
    if nearest is None:
        return None
    root = repository_root(path) or nearest
    for lock in dict.fromkeys([nearest / "dvc.lock", *sorted(root.glob("*/dvc.lock"))]):   # each read once
        stages = (yaml.safe_load(lock.read_text()) or {}).get("stages", {})
        for stage in stages.values():
            for out in stage.get("outs", []):
                # a lock's paths are relative to its stages' wdir: its own folder, or the project's root
                if path in {(lock.parent / out["path"]).resolve(), (root / out["path"]).resolve()} and out.get("md5"):
                    return out["md5"]
    return None


def data_fingerprint(path: str | Path) -> str:
    """``dvc:<md5>`` when DVC tracks ``path``; else ``vectors-sha256:<hash>`` for word vectors whose ``meta.json``
    records the hash of their matrix; else ``meta-sha256:<hash of its meta.json>`` (which tells prepared corpora
    apart, as they record their input's hash, but not two fastText runs with the same settings)."""
    found = dvc_hash(path)
    if found:
        return f"dvc:{found}"
    meta = Path(path) / "meta.json"
    if meta.is_file():
        recorded = json.loads(meta.read_text()).get("vectors_sha256")
        if recorded:
            return f"vectors-sha256:{recorded}"
        return "meta-sha256:" + hashlib.sha256(meta.read_bytes()).hexdigest()
    return "untracked"


def repository_root(path: Path) -> Path | None:
    """The nearest folder above ``path`` that is a git or DVC repository."""
    return next((folder for folder in path.parents if (folder / ".git").exists() or (folder / ".dvc").is_dir()), None)


def portable_path(path: str | Path) -> str:
    """``path`` as a record committed to the repository should hold it: relative to the repository it lies in
    (``runs/disc-.../checkpoint_...``), so the record does not carry the absolute paths of the machine that wrote
    it. A URI (``s3://...``) and a path outside any repository are kept as given."""
    if "://" in str(path):
        return str(path)
    resolved = Path(path).expanduser().resolve()
    root = repository_root(resolved)
    return resolved.relative_to(root).as_posix() if root is not None else str(path)


def command_line() -> str | None:
    """This process's command line as typed, when the process is the ``skipview`` command (``skipview ...`` or
    ``python -m skipview.platform.cli ...``); None inside another program (a test, a notebook, a Tune trial)."""
    program = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if program is not None and (program.name == "skipview" or program.resolve() == SOURCE_DIR.parent / "cli.py"):
        return shlex.join(["skipview", *sys.argv[1:]])
    return None


def lineage_tags(corpus: str | Path, wordvecs: str | Path | None) -> dict[str, str]:
    tags = {"git_commit": git_commit(), "corpus.path": str(Path(corpus).resolve()),
            "corpus.hash": data_fingerprint(corpus)}
    if (command := command_line()) is not None:
        tags[COMMAND_TAG] = command
    if wordvecs is not None:
        tags.update({"wordvecs.path": str(Path(wordvecs).resolve()), "wordvecs.hash": data_fingerprint(wordvecs)})
    return tags
