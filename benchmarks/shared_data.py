"""Where benchmarks and evaluations find the shared real data, and a clear stop without it; and what
their command lines and timings share (``--smoke``, :func:`timed`).

The real data (55 Wikipedia articles with human-written questions, real PDFs)
lives beside the project in ``../shared/data`` on developer and CI machines;
a plain clone has no such folder. Tests never need it (they use
``tests/fixtures``); these scripts do, so they say so in one sentence instead
of failing on a missing file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
# COVERAGE_SHARED_DATA points elsewhere when the data is not beside the project.
SHARED_DATA = Path(os.environ.get("COVERAGE_SHARED_DATA", PROJECT.parent / "shared" / "data"))
WIKI_QA = SHARED_DATA / "wiki-qa"
PDFS = SHARED_DATA / "pdfs"


def require(path: Path) -> Path:
    """``path`` if it exists; otherwise stop the script with one sentence saying what is missing."""
    if not path.exists():
        sys.exit(
            f"{path} is missing: this script reads the shared real data (../shared/data beside the "
            "project, see its README); put that folder there or set COVERAGE_SHARED_DATA to where it is."
        )
    return path


SMOKE_HELP = ("a quick check that the script still runs (tiny data, seconds; tests/test_benchmarks_smoke.py runs it "
              "in CI): its figures mean nothing")
"""The help of every script's ``--smoke`` flag."""


def parse_with_smoke(parser: argparse.ArgumentParser, smoke: str, argv: Sequence[str] | None = None,
                     **smoke_values) -> argparse.Namespace:
    """``parser``'s arguments (from ``argv``; None: the command line) with a ``--smoke`` flag added, whose help is
    ``smoke`` (what a smoke run reads) then :data:`SMOKE_HELP`; under ``--smoke`` each argument named in
    ``smoke_values`` takes that value instead of the one given."""
    parser.add_argument("--smoke", action="store_true", help=f"{smoke}: {SMOKE_HELP}")
    args = parser.parse_args(argv)
    if args.smoke:
        for name, value in smoke_values.items():
            setattr(args, name, value)
    return args


def timed(work: Callable[[], object], repeat: int = 1) -> tuple[float, object]:
    """The median seconds of ``repeat`` calls of ``work``, and the last call's result."""
    seconds, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), result


def shortest(titles: Iterable[str], texts: Mapping[str, str], n: int) -> list[str]:
    """The ``n`` titles of ``titles`` whose text is shortest, in their given order: what a ``--smoke`` run reads.
    Titles without a text are passed over, so a smoke run reads the slice in tests/fixtures/shared-data."""
    titles = [title for title in titles if title in texts]
    kept = set(sorted(titles, key=lambda title: (len(texts[title]), title))[:n])
    return [title for title in titles if title in kept]


def shortest_files(folder: Path, n: int, pattern: str = "*.txt") -> list[Path]:
    """The ``n`` smallest files of ``folder`` matching ``pattern``, sorted by name."""
    files = sorted(require(folder).glob(pattern))
    return sorted(sorted(files, key=lambda path: (path.stat().st_size, path.name))[:n])
