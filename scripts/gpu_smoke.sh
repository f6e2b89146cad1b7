#!/usr/bin/env bash
# Every training and evaluation command on the GPU with a tiny random model, each checked to have
# used it (parameters' device, torch.cuda.max_memory_allocated() > 0 per stage): scripts/gpu_smoke.py.
# Without a GPU it says so and exits 0. Extra arguments go to the script (e.g. --workdir DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TOKENIZERS_PARALLELISM=${TOKENIZERS_PARALLELISM:-false}
exec "$PY" scripts/gpu_smoke.py --device cuda "$@"
