#!/usr/bin/env bash
# Set up, then run every test.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh requirements-dev.txt
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest -q "$@"
