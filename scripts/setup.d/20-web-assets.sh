#!/usr/bin/env bash
# Offline Tailwind for frontend rendering: unpack the pinned npm packages (tailwindcss-cdn v3 play
# script, @tailwindcss/browser v4, tailwindcss@2.2.19 dist CSS) into $VENV/share/colbench-web-assets
# (override with COLBENCH_WEB_ASSETS). Full profile: also chromium-driver, which only the
# Selenium side of benchmarks/bench_rendering.py uses. Silent when everything is in place.
set -euo pipefail
VENV=${VENV:-.venv}
PROFILE=${PROFILE:-full}
say() { echo "[setup] $*"; }
DIR=${COLBENCH_WEB_ASSETS:-$VENV/share/colbench-web-assets}

if ! "$VENV/bin/python" -m colbench_gym.rendering.assets where --dir "$DIR" >/dev/null 2>&1; then
  if ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      say "installing npm (apt-get) to fetch offline Tailwind"
      apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
    else
      say "WARNING: npm is missing; install it, then run: $VENV/bin/python -m colbench_gym.rendering.assets install --dir $DIR"
      exit 0
    fi
  fi
  say "unpacking offline Tailwind packages into $DIR"
  "$VENV/bin/python" -m colbench_gym.rendering.assets install --dir "$DIR" --quiet >/dev/null
fi

if [ "$PROFILE" = full ] && ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing chromium-driver (apt-get; used only by the Selenium side of the rendering benchmark)"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-driver >/dev/null || say "WARNING: chromium-driver could not be installed; the rendering benchmark will skip its Selenium side"
  fi
fi
