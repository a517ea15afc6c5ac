"""Every benchmark and evaluation script in benchmarks/ still runs: each one in its ``--smoke`` mode.

A smoke run reads tiny data (the shortest articles, a few hundred synthetic chunks, one seed) and takes
seconds to a minute; its figures mean nothing, its exit code does: a script that no longer fits the code it
measures (a renamed argument, a moved function) fails here instead of on the day someone needs its numbers.
Each script runs as a subprocess, as a person runs it, two at a time (the machines have two cores), all with
one embedding cache in a temporary folder, so the articles several scripts share are embedded once.
Scripts that read the shared real data read its slice in ``tests/fixtures/shared-data`` (the 10 shortest
articles of wiki-qa, fr-qa and zh-qa, and the fixture PDFs), so a plain clone runs every one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import PROJECT

BENCHMARKS = PROJECT / "benchmarks"
LIBRARIES = {"shared_data.py", "verdict_scenarios.py"}
"""Modules the scripts import, not scripts."""
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py") if path.name not in LIBRARIES)
SLOWEST_FIRST = (
    "eval_question_quality.py", "eval_verdicts.py", "eval_suggestions.py", "eval_separation.py", "eval_calibration.py", "eval_cross_language.py",
    "eval_mixes.py", "bench_report_scale.py", "bench_cli_cache.py", "bench_ray.py", "eval_offtopic.py",
    "eval_languages.py", "eval_screening.py",
)
"""Started first, so that two workers finish together (the others in name order)."""
PARALLEL = 2
TIMEOUT_SECONDS = 900
SHARED_DATA = PROJECT / "tests" / "fixtures" / "shared-data"
"""The copied slice of the shared real data the scripts read (``COVERAGE_SHARED_DATA``); see tests/fixtures/README.md."""


def _environment(root: Path) -> dict[str, str]:
    cache = root / "embedding-cache"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", COVERAGE_CORE_CACHE_DIR=str(cache),
               COVERAGE_SHARED_DATA=str(SHARED_DATA),
               EVAL_SCREENING_CACHE=str(root / "screening-cache"))
    for name in ("OFFTOPIC", "LANGUAGES", "MIXES", "UNTESTED", "VERDICTS", "CALIBRATION"):
        env[f"EVAL_{name}_CACHE"] = str(cache)  # one SQLite embedding cache for every script
    for name in ("OFFTOPIC", "LANGUAGES", "VERDICTS"):
        env[f"EVAL_{name}_WORKDIR"] = str(root / "work" / name.lower())
    return env


class SmokeRuns:
    """The selected scripts' smoke runs, started at once on :data:`PARALLEL` workers."""

    def __init__(self, root: Path, scripts: list[str]):
        self.env = _environment(root)
        self.cwd = root
        self.pool = ThreadPoolExecutor(PARALLEL)
        order = sorted(scripts, key=lambda s: (SLOWEST_FIRST.index(s) if s in SLOWEST_FIRST else len(SLOWEST_FIRST), s))
        self.runs: dict[str, Future] = {script: self.pool.submit(self._run, script) for script in order}

    def _run(self, script: str) -> tuple[subprocess.CompletedProcess, float]:
        started = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--smoke"], cwd=self.cwd, env=self.env,
                                  capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False)
        except subprocess.TimeoutExpired as expired:
            done = subprocess.CompletedProcess(expired.cmd, -1, str(expired.stdout or ""),
                                               f"timed out after {TIMEOUT_SECONDS} s\n{expired.stderr or ''}")
        return done, time.perf_counter() - started

    def result(self, script: str) -> tuple[subprocess.CompletedProcess, float]:
        return self.runs[script].result()


@pytest.fixture(scope="module")
def smoke_runs(request, tmp_path_factory):
    selected = [item.callspec.params["script"] for item in request.session.items
                if getattr(item, "originalname", "") == "test_the_script_runs_in_smoke_mode"]
    runs = SmokeRuns(tmp_path_factory.mktemp("benchmark-smoke"), selected)
    yield runs
    runs.pool.shutdown(wait=True, cancel_futures=True)


def test_every_script_has_a_smoke_mode():
    without = [script for script in SCRIPTS if "--smoke" not in (BENCHMARKS / script).read_text(encoding="utf-8")]
    assert not without, f"give these a --smoke mode (tiny data, seconds): {', '.join(without)}"


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_the_script_runs_in_smoke_mode(script, smoke_runs):
    done, seconds = smoke_runs.result(script)
    tail = "\n".join((done.stdout + "\n" + done.stderr).strip().splitlines()[-40:])
    assert done.returncode == 0, f"benchmarks/{script} --smoke failed (exit {done.returncode}, {seconds:.0f} s):\n{tail}"
