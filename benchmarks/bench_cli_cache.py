"""Cold CLI run against a fully cached re-run, on the bundled example.

Each run is a fresh process, as in CI. The cold run starts from an empty
embedding cache; the re-run finds every text cached and must not load the
model. Target: re-run >= 10x faster.

    .venv/bin/python benchmarks/bench_cli_cache.py [--docs PATH ...] [--questions FILE] [--smoke]

``--smoke``: one of the example's articles and its questions, no questions suggested for the gaps.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared_data import SMOKE_HELP  # noqa: E402

PROJECT = Path(__file__).resolve().parents[1]
EXAMPLE = PROJECT / "examples" / "wiki-qa"
SMOKE_DOCUMENTS = ("Amedeo_Avogadro.txt",)


def run(docs, questions, cache: Path, out: Path, extra: tuple[str, ...] = ()) -> float:
    env = dict(os.environ, COVERAGE_CORE_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1")
    command = [sys.executable, "-m", "coverage_core", "analyze", "--docs", *map(str, docs),
               "--questions", str(questions), "--out", str(out), "--quiet", *extra]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=PROJECT)
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed (exit code {done.returncode}):\n{done.stderr}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", nargs="+", default=[EXAMPLE / "docs"])
    parser.add_argument("--questions", default=EXAMPLE / "questions.csv")
    parser.add_argument("--smoke", action="store_true", help=f"{', '.join(SMOKE_DOCUMENTS)}: {SMOKE_HELP}")
    args = parser.parse_args()
    extra: tuple[str, ...] = ()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        if args.smoke:
            import pandas as pd

            questions = pd.read_csv(EXAMPLE / "questions.csv", dtype=str, keep_default_na=False)
            questions[questions["source"].isin(SMOKE_DOCUMENTS)].to_csv(work / "questions.csv", index=False)
            args.docs, args.questions = [EXAMPLE / "docs" / name for name in SMOKE_DOCUMENTS], work / "questions.csv"
            extra = ("--suggest", "0")
        cold = run(args.docs, args.questions, work / "cache", work / "cold.json", extra)
        cached = run(args.docs, args.questions, work / "cache", work / "cached.json", extra)
        summary = json.loads((work / "cold.json").read_text())["summary"]
        again = json.loads((work / "cached.json").read_text())["summary"]
    print(f"{summary['n_chunks']} chunks + {summary['n_questions']} questions")
    print(f"  cold run    {cold:6.2f} s  (embedded {summary['embedded']})")
    print(f"  cached run  {cached:6.2f} s  (embedded {again['embedded']}, from cache {again['from_cache']})")
    print(f"  speed-up    {cold / cached:6.1f}x  (target >= 10x)")


if __name__ == "__main__":
    main()
