#!/usr/bin/env bash
# Set up (Python packages, and Debian's Chromium for the browser test), lint, then run every test.
# Arguments go to pytest: ./test.sh -m "not slow" is the developer lane (no model end to end, Ray or browser).
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
fi
scripts/setup.sh requirements-dev.txt
.venv/bin/ruff check .
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest -q "$@"
