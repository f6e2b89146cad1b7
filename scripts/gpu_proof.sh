#!/usr/bin/env bash
# The GPU proof (issue 40) on the device machine: installs the wheels carried in .whl/ (trl,
# transformers, datasets, gymnasium, openai and what they need beyond the machine's image) into
# /tmp/site, puts this checkout on the path, and runs scripts/gpu_proof.py (arguments passed on;
# figures to $OUT/gpu_proof.json). Here, without a GPU: `bash scripts/gpu_proof.sh --dry-run`.
# Preparing the carry (once, here): docs/training.md, "The GPU proof"; its figures: docs/results/gpu.md.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if command -v nvidia-smi >/dev/null && compgen -G ".whl/*.whl" >/dev/null; then  # the device machine
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "gpu-proof: installing the carried wheels failed"; exit 1; }
  export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  [ -x .venv/bin/python ] && PY=.venv/bin/python  # here: the project's virtualenv
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
exec "$PY" scripts/gpu_proof.py "$@"
