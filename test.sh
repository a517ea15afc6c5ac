#!/usr/bin/env bash
# Set up (Python packages, Debian's Chromium and PostgreSQL for the browser and history tests), lint, then run every test.
# Arguments go to pytest: ./test.sh -m "not slow" is the developer lane (no model end to end, Ray or browser).
set -euo pipefail
cd "$(dirname "$0")"
# Debian packages the tests drive for real: Chromium (browser tests) and a PostgreSQL server (the team history store).
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
scripts/setup.sh requirements-dev.txt
.venv/bin/ruff check .
# The documentation site: a broken link, anchor or page left out of mkdocs.yml fails (never --quiet: it hides them).
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict  # into site/, git-ignored
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest -q "$@"
