#!/usr/bin/env bash
# Idempotent set-up for this repo on a Debian machine: virtualenv, Python packages, Chromium,
# offline web assets. Each step says so when it does work and is silent when already done.
# Usage: scripts/setup.sh [base|full]   (base: environments only; full: + torch/agent/clip/dev)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PROFILE=${1:-full}
VENV=$ROOT/.venv
STAMPS=$VENV/.stamps
PY=${PYTHON:-}
say() { echo "[setup] $*"; }

# one set-up at a time (parallel `make` invocations share .venv)
exec 9>"${TMPDIR:-/tmp}/colbench-setup-$(echo "$ROOT" | sha256sum | cut -c1-8).lock"
flock 9

if [ -z "$PY" ]; then
  for c in python3.11 python3; do command -v "$c" >/dev/null 2>&1 && { PY=$c; break; }; done
fi

# 0. room for a first full set-up: .venv (~7 GB: torch's CUDA build, which runs on the CPU), the
# default model's conversion in ~/.cache/colbench (~3 GB) and pip's downloads. Without it pip fails
# deep in an install with "[Errno 28] No space left on device".
NEED_GB=${COLBENCH_SETUP_NEED_GB:-12}
if [ "$PROFILE" = full ] && ! ls "$STAMPS"/torch-* >/dev/null 2>&1; then
  free_kb=$(df -Pk "$ROOT" | awk 'NR==2 {print $4}')
  if [ "$free_kb" -lt $((NEED_GB * 1024 * 1024)) ]; then
    echo "[setup] error: $((free_kb / 1024 / 1024)) GB free on the disk of $ROOT; a first full set-up needs about" \
         "$NEED_GB GB (.venv ~7 GB, the default model ~3 GB in ~/.cache/colbench, pip's downloads): free space and rerun" >&2
    exit 1
  fi
fi

# 1. virtualenv
if [ ! -x "$VENV/bin/python" ]; then
  say "creating virtualenv .venv ($($PY --version))"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
mkdir -p "$STAMPS"
PIP="$VENV/bin/pip"
hash_of() { cat "$@" | sha256sum | cut -c1-16; }

# 2. torch pair (full profile). PyPI's torchvision does not import beside the local CPU wheel
# torch 2.13.0, so we take the pair that works together: torch 2.14.1 + torchvision 0.29.1 on
# x86_64 (CUDA build that runs on CPU), torch 2.9.1 + torchvision 0.24.1 on aarch64.
if [ "$PROFILE" = full ]; then
  case "$(uname -m)" in
    aarch64|arm64) TORCH="torch==2.9.1 torchvision==0.24.1" ;;
    *) TORCH="torch==2.14.1 torchvision==0.29.1" ;;
  esac
  key=$(echo "$TORCH" | sha256sum | cut -c1-16)
  if [ ! -f "$STAMPS/torch-$key" ]; then
    say "installing $TORCH (large; once)"
    "$PIP" install -q $TORCH
    touch "$STAMPS/torch-$key"
  fi
fi

# 3. this project (editable) with its extras
EXTRAS=$([ "$PROFILE" = full ] && echo "[all,dev,zero3,inspect,verifiers]" || echo "[dev]")  # zero3: tests/training/test_zero3_cpu.py; inspect, verifiers: tests/integrations
key=$(hash_of pyproject.toml)-$PROFILE
if [ ! -f "$STAMPS/project-$key" ]; then
  say "installing colbench-gym$EXTRAS (editable) and its dependencies"
  "$PIP" install -q -e ".$EXTRAS"
  rm -f "$STAMPS"/project-*; touch "$STAMPS/project-$key"
fi

# 3b. the OpenEnv hub package (hub/colbench_env, needs the serve extra): `AutoEnv.from_env("colbench")`
# finds ColBench through it (tests/online/test_openenv_hub.py)
if [ "$PROFILE" = full ]; then
  key=$(hash_of hub/colbench_env/pyproject.toml)
  if [ ! -f "$STAMPS/hub-$key" ]; then
    say "installing the OpenEnv hub package hub/colbench_env (editable)"
    "$PIP" install -q --no-deps -e hub/colbench_env
    rm -f "$STAMPS"/hub-*; touch "$STAMPS/hub-$key"
  fi
fi

# 4. Chromium for rendering (Debian's; Playwright's own browser download does not work offline)
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian chromium (apt-get)"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    say "WARNING: chromium is missing and cannot be installed here (need root + apt-get); frontend rendering will fail"
  fi
fi

# 5. further steps contributed by components (offline web assets, default model, ...)
for step in scripts/setup.d/*.sh; do
  [ -e "$step" ] || continue
  PROFILE=$PROFILE VENV=$VENV STAMPS=$STAMPS bash "$step"
done
exit 0
