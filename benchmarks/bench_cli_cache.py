"""Cold CLI run against a fully cached re-run, on the bundled example.

Each run is a fresh process, as in CI, with the built-in question writer on
(``--suggest 5``, the default). The cold run starts from an empty cache folder;
the re-run finds every text embedded and every question written there, so it
must load neither the embedding model nor the writer's, and its report must be
the cold run's (only the embedded / from-cache counts differ). Target: the
re-run takes less than a fifth of the cold run's time.

    .venv/bin/python benchmarks/bench_cli_cache.py [--docs PATH ...] [--questions FILE] [--suggest N] [--smoke]

``--smoke``: one of the example's articles and its questions, no questions suggested for the gaps.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
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
TARGET_RATIO = 0.2
"""The cached re-run's time over the cold run's must be below this."""
RUN_COUNTS = ("embedded", "from_cache")
"""The only report fields a cached re-run may change."""


def run(docs, questions, cache: Path, out: Path, extra: tuple[str, ...] = ()) -> float:
    env = dict(os.environ, COVERAGE_CORE_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1")
    command = [sys.executable, "-m", "coverage_core", "analyze", "--docs", *map(str, docs),
               "--questions", str(questions), "--out", str(out), "--quiet", *extra]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=PROJECT)
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed (exit code {done.returncode}):\n{done.stderr}")
    return time.perf_counter() - started


def written_replies(cache: Path) -> int:
    """Replies the built-in writer keeps in ``cache`` (coverage_core.suggest.reply_cache), 0 without the file."""
    path = cache / "written_questions.sqlite3"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT COUNT(*) FROM replies").fetchone()[0]


def comparable(report: Path) -> dict:
    data = json.loads(report.read_text())
    for name in RUN_COUNTS:
        data["summary"].pop(name, None)
    return data


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", nargs="+", default=[EXAMPLE / "docs"])
    parser.add_argument("--questions", default=EXAMPLE / "questions.csv")
    parser.add_argument("--suggest", type=int, default=5, help="questions per gap the built-in writer writes")
    parser.add_argument("--smoke", action="store_true", help=f"{', '.join(SMOKE_DOCUMENTS)}: {SMOKE_HELP}")
    args = parser.parse_args()
    extra: tuple[str, ...] = ("--suggest", str(args.suggest))
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        if args.smoke:
            import pandas as pd

            questions = pd.read_csv(EXAMPLE / "questions.csv", dtype=str, keep_default_na=False)
            questions[questions["source"].isin(SMOKE_DOCUMENTS)].to_csv(work / "questions.csv", index=False)
            args.docs, args.questions = [EXAMPLE / "docs" / name for name in SMOKE_DOCUMENTS], work / "questions.csv"
            args.suggest, extra = 0, ("--suggest", "0")
        cold = run(args.docs, args.questions, work / "cache", work / "cold.json", extra)
        written = written_replies(work / "cache")
        cached = run(args.docs, args.questions, work / "cache", work / "cached.json", extra)
        rewritten = written_replies(work / "cache") - written
        summary = json.loads((work / "cold.json").read_text())["summary"]
        again = json.loads((work / "cached.json").read_text())["summary"]
        same = comparable(work / "cold.json") == comparable(work / "cached.json")
    ratio = cached / cold
    print(f"{summary['n_chunks']} chunks + {summary['n_questions']} questions, --suggest {args.suggest}")
    print(f"  cold run    {cold:6.2f} s  (embedded {summary['embedded']}, writer replies kept {written})")
    print(f"  cached run  {cached:6.2f} s  (embedded {again['embedded']}, from cache {again['from_cache']}, "
          f"writer replies added {rewritten})")
    print(f"  ratio       {ratio:6.3f}   (cached / cold; {cold / cached:.1f}x faster)")
    print(f"  target      cached < {TARGET_RATIO:g} x cold: {'met' if ratio < TARGET_RATIO else 'NOT met'}")
    print(f"  reports     {'identical' if same else 'DIFFER'} (but for {' and '.join(RUN_COUNTS)})")
    if not same:
        sys.exit("The cached re-run's report differs from the cold run's.")


if __name__ == "__main__":
    main()
