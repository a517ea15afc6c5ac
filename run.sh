#!/usr/bin/env bash
# Set up, then analyse the bundled example with the local model (no key, no network).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh requirements.txt
export HF_HUB_OFFLINE=1
exec .venv/bin/python -m coverage_core analyze \
  --docs examples/wiki-qa/docs \
  --questions examples/wiki-qa/questions.csv \
  --out example-report.json "$@"
