#!/usr/bin/env bash
# Set up, then start the dashboard on the bundled local model (no key, no network):
# open http://localhost:8501 and press "Try the example" on the Upload page.
# Options go on to `streamlit run`; another port: ./run.sh --server.port 8600 (the last port given wins).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh requirements.txt
port=8501
previous=""
for argument in "$@"; do
  if [[ "$argument" == --server.port=* ]]; then
    port="${argument#--server.port=}"
  elif [ "$previous" = "--server.port" ]; then
    port="$argument"
  fi
  previous="$argument"
done
echo "Starting the dashboard on http://localhost:$port (another port: ./run.sh --server.port 8600); Ctrl+C stops it."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m streamlit run app.py --server.port=8501 "$@"
