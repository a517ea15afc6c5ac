"""Cold CLI run against a fully cached re-run, on the bundled example.

Each run is a fresh process, as in CI. The cold run starts from an empty
embedding cache; the re-run finds every text cached and must not load the
model. Target: re-run >= 10x faster.

    .venv/bin/python benchmarks/bench_cli_cache.py [--docs PATH ...] [--questions FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
EXAMPLE = PROJECT / "examples" / "wiki-qa"


def run(docs, questions, cache: Path, out: Path) -> float:
    env = dict(os.environ, COVERAGE_CORE_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1")
    command = [sys.executable, "-m", "coverage_core", "analyze", "--docs", *map(str, docs),
               "--questions", str(questions), "--out", str(out), "--quiet"]
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, cwd=PROJECT)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", nargs="+", default=[EXAMPLE / "docs"])
    parser.add_argument("--questions", default=EXAMPLE / "questions.csv")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        cold = run(args.docs, args.questions, work / "cache", work / "cold.json")
        cached = run(args.docs, args.questions, work / "cache", work / "cached.json")
        summary = json.loads((work / "cold.json").read_text())["summary"]
        again = json.loads((work / "cached.json").read_text())["summary"]
    print(f"{summary['n_chunks']} chunks + {summary['n_questions']} questions")
    print(f"  cold run    {cold:6.2f} s  (embedded {summary['embedded']})")
    print(f"  cached run  {cached:6.2f} s  (embedded {again['embedded']}, from cache {again['from_cache']})")
    print(f"  speed-up    {cold / cached:6.1f}x  (target >= 10x)")


if __name__ == "__main__":
    main()
