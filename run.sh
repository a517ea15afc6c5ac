#!/usr/bin/env bash
# Set up, then start the dashboard on the bundled local model (no key, no network):
# open http://localhost:8501 and press "Try the example" on the Upload page.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh requirements.txt
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m streamlit run app.py --server.port=8501 "$@"
