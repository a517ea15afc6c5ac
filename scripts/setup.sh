#!/usr/bin/env bash
# Creates .venv and installs the pinned requirements. Usage: scripts/setup.sh [requirements file]
# Re-running is cheap: pip skips what is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
requirements="${1:-requirements.txt}"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements"
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.txt
# Editable, without dependencies (pinned above): benchmarks and tools import the package from anywhere.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
