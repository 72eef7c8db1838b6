#!/usr/bin/env bash
# GPU smoke test (<= 5 min on one GPU, no downloads): the scale-out paths a CPU machine cannot run.
#
#   bash scripts/gpu_smoke.sh            # uses .venv/bin/python (or $PYTHON)
#
# Builds a 2-scene synthetic project and the tiny offline Qwen3-VL in a temporary directory, then:
#   1. vllm      2 GRPO steps with trl's vLLM generation in colocate mode (train.use_vllm), when
#                vllm imports (SKIP otherwise)
#   2. grpo      2 GRPO steps in bf16 on CUDA
#   3. vlm       8 queries evaluated with the vlm policy on CUDA (bf16)
# One line per check: PASS/FAIL/SKIP <check> <seconds> s <detail>; exit status 1 if any FAILs.
# Logs stay in $WORK/logs (WORK is printed first; kept on failure).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TQDM_DISABLE=1 TRL_EXPERIMENTAL_SILENCE=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

check() {  # check NAME TIMEOUT_S COMMAND...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  if timeout "$limit" "$@" >"$WORK/logs/$name.log" 2>&1; then
    echo "PASS $name $((SECONDS - t0)) s $(tail -n 1 "$WORK/logs/$name.log" | cut -c1-160)"
  else
    echo "FAIL $name $((SECONDS - t0)) s (log: $WORK/logs/$name.log) $(tail -n 1 "$WORK/logs/$name.log" | cut -c1-160)"
    failed=1
  fi
}

if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "FAIL cuda 0 s torch.cuda.is_available() is False (or torch does not import with $PY)"
  exit 1
fi
echo "PASS cuda 0 s $("$PY" -c 'import torch; print(torch.cuda.get_device_name(0), "torch", torch.__version__)')"
WORK=$(mktemp -d -t urbex-gpu-smoke-XXXX)
mkdir -p "$WORK/logs"
echo "gpu_smoke: work dir $WORK"
failed=0

# the project: 2 scenes of 60 m, tiny views (image tokens count in the episode budget)
"$PY" - "$WORK" <<'PYEOF' >"$WORK/logs/setup.log" 2>&1 || { echo "FAIL setup (log: $WORK/logs/setup.log)"; exit 1; }
import sys
from pathlib import Path
import yaml
from tests.fixtures.small_project import write_small_project
from urbex.cli import main
work = Path(sys.argv[1])
env = {"global_view_size": [64, 64], "zoom_size": [64, 64], "oblique_size": [64, 64], "max_turns": 3}
train = {"limit": 4, "num_generations": 2, "per_device_train_batch_size": 4,
         "max_completion_length": 256, "device": "cuda", "bf16": True, "save_steps": 100}
vlm = {"device": "cuda", "dtype": "bfloat16", "batch_size": 8, "max_new_tokens": 64}
p = write_small_project(work / "project", env=env, train=train, vlm=vlm)
for cmd in ("synth", "cache", "landmarks", "splits"):
    assert main(["--params", str(p), "-q", cmd]) == 0, cmd
assert main(["--params", str(p), "-q", "make-tiny-model", str(work / "tiny")]) == 0
doc = yaml.safe_load(p.read_text())
doc["train"]["use_vllm"] = True
doc["train"]["vllm_gpu_memory_utilization"] = 0.2
(work / "project" / "params-vllm.yaml").write_text(yaml.safe_dump(doc))
PYEOF
P="$WORK/project/params.yaml"
URBEX=("$PY" -m urbex.cli)

if "$PY" -c "import vllm" 2>/dev/null; then
  check vllm 150 "${URBEX[@]}" --params "$WORK/project/params-vllm.yaml" -q train \
    --checkpoint "$WORK/tiny" --run-name smoke-vllm --max-steps 2
else
  echo "SKIP vllm 0 s vllm does not import (pip install vllm on this machine to check train.use_vllm)"
fi
check grpo 120 "${URBEX[@]}" --params "$P" -q train --checkpoint "$WORK/tiny" \
  --run-name smoke-grpo --max-steps 2
check vlm 90 "${URBEX[@]}" --params "$P" -q evaluate --policy vlm --split test_no \
  --checkpoint "$WORK/tiny" --limit 8 --run-id smoke-vlm

if [ "$failed" = 0 ]; then rm -rf "$WORK"; echo "gpu_smoke: all checks passed"; else echo "gpu_smoke: FAILED (logs in $WORK/logs)"; fi
exit "$failed"
