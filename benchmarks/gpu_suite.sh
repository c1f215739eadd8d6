#!/usr/bin/env bash
# The GPU measurements in one command, for a GPU machine available for minutes (issue 28):
#
#   benchmarks/gpu_suite.sh [OUT_DIR]        # default reports/benchmarks; STEPS=30 WARMUP=5 DEVICE=cuda by default
#
# Writes, each as soon as it is measured (so a run cut short keeps what it finished):
#   gpu_step.json        skipview's training step (train_step.py) at paper size: disc, gen, skip-thought
#                        (the paper's printed reset gate and the fused cuDNN one), bf16 and fp32, with
#                        sentences/s, peak GPU memory and the host-device synchronisations inside the timed steps;
#                        disc and gen also at the small size the CPU profiles train
#   gpu_plain_step.json  the plain-PyTorch yardstick (plain_step.py) on the same batches, disc and gen, paper size
#   gpu_disc_batch.json  disc at paper size with larger batches, bf16: where one GPU's sentences/s saturate
#   gpu_env.txt          nvidia-smi and the torch build
#   gpu_{disc,gen}_profile.txt  the torch profiler's operator table of five paper-size bf16 steps
# Needs only torch, numpy, pyyaml, pydantic and skipview's source: neither Ray nor MLflow.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-reports/benchmarks}
steps=${STEPS:-30}
warmup=${WARMUP:-5}
mkdir -p "$out"

# skipview's source folders as the `skipview` package when it is not installed (a bare GPU image)
if ! python3 -c "import skipview.models" 2>/dev/null; then
    link=$(mktemp -d)/skipview_src
    mkdir -p "$link/skipview"
    ln -s "$PWD/models" "$link/skipview/models"
    ln -s "$PWD/platform" "$link/skipview/platform"
    export PYTHONPATH="$link${PYTHONPATH:+:$PYTHONPATH}"
fi

{ nvidia-smi; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), torch.cuda.get_device_name())"; } > "$out/gpu_env.txt" 2>&1
cat "$out/gpu_env.txt"

common=(--device "${DEVICE:-cuda}" --steps "$steps" --warmup "$warmup")
merge() {   # merge.py OUT PARTS...: the documents' results under the first one's header
    python3 - "$@" <<'EOF'
import json, sys
target, parts = sys.argv[1], sys.argv[2:]
documents = [json.load(open(p)) for p in parts]
merged = {**documents[0], "results": [r for d in documents for r in d["results"]]}
json.dump(merged, open(target + ".tmp", "w"), indent=2)
import os; os.replace(target + ".tmp", target)
for r in merged["results"]:
    print(f"{r['objective']:12s} {r['size']:6s} {r.get('amp', '-'):5s} batch {r.get('batch_size', '-'):>5} "
          f"{r.get('sentences_per_second', float('nan')):10.0f} sent/s  {r.get('peak_gpu_memory_gib', float('nan')):6.2f} GiB  "
          f"syncs {r.get('host_syncs_in_timed_steps', '-')}  {r.get('settings', '')}  {r.get('error', '')[-300:]}")
EOF
}

parts=$(mktemp -d)
for amp in bf16 none; do
    python3 benchmarks/train_step.py --objectives disc gen skipthought --sizes paper "${common[@]}" --amp "$amp" \
        --out "$parts/step_paper_$amp.json" > /dev/null
    merge "$out/gpu_step.json" "$parts"/step_*.json
done
python3 benchmarks/train_step.py --objectives skipthought --sizes paper "${common[@]}" --amp bf16 --set reset_gate=fused \
    --out "$parts/step_skipthought_fused.json" > /dev/null
python3 benchmarks/train_step.py --objectives disc gen --sizes small "${common[@]}" --amp bf16 \
    --out "$parts/step_small.json" > /dev/null
merge "$out/gpu_step.json" "$parts"/step_*.json

for amp in bf16 none; do
    python3 benchmarks/plain_step.py --objectives disc gen --sizes paper "${common[@]}" --amp "$amp" \
        --out "$parts/plain_$amp.json" > /dev/null
done
merge "$out/gpu_plain_step.json" "$parts"/plain_*.json

for batch in 1024 2048 4096; do
    python3 benchmarks/train_step.py --objectives disc --sizes paper "${common[@]}" --amp bf16 --batch-size "$batch" \
        --out "$parts/batch_$batch.json" > /dev/null
done
merge "$out/gpu_disc_batch.json" "$parts"/batch_*.json

# where the step's device time goes, for the next round of work on it
for objective in disc gen; do
    python3 benchmarks/train_step.py --objectives "$objective" --sizes paper "${common[@]}" --amp bf16 \
        --profile "$out/gpu_${objective}_profile.txt" --out "$parts/profile_$objective.json" > /dev/null
done
