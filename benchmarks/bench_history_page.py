"""The History page with 1,000 recorded runs: loading them, building the figures, and the page's first paint.

Synthetic runs the size of the bundled example (30 documents, 160 questions, 30 topics; H1's
``synthetic_snapshot``) are recorded once into a SQLite history (kept with ``--history`` for the next time),
every fifth run with documents added, removed or changed so the document timeline has changes to draw. Then:

* loading the runs (``HistoryStore.runs`` + ``runs_frame``) and the document timeline;
* building the three figures (tested share, verdict counts, document timeline);
* "what changed" between the last two runs (two ``load`` + ``changes_since``);
* the page's first paint through Streamlit's AppTest: the History page's whole script run, after the app
  was loaded once (target: under 1 s once the data is loaded, i.e. the run minus the loading above).

    .venv/bin/python benchmarks/bench_history_page.py [--runs 1000] [--history /tmp/history-1000.sqlite] [--smoke]

``--smoke``: 10 runs, each measure once; the exit code then ignores the target.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # a script, not a page: run from anywhere
sys.path.insert(0, str(PROJECT / "benchmarks"))

from bench_history_changes import synthetic_snapshot  # noqa: E402
from shared_data import parse_with_smoke, timed  # noqa: E402

from coverage_core.history import HISTORY_ENV, changes_since, open_history  # noqa: E402
from coverage_core.outputs.plots import history as history_plots  # noqa: E402

TARGET_PAINT_SECONDS = 1.0
DOCUMENTS, QUESTIONS, TOPICS = 30, 160, 30
START = datetime(2025, 1, 1, tzinfo=timezone.utc)


def fill(path: Path, n_runs: int) -> float:
    """Record ``n_runs`` synthetic runs into ``path`` (as many as are missing); returns the seconds taken."""
    started = time.perf_counter()
    with open_history(str(path)) as store:
        for run in range(len(store.runs()), n_runs):
            churn = run // 5  # every fifth run changes the documents
            store.record(synthetic_snapshot(
                DOCUMENTS, QUESTIONS, TOPICS, seed=run,
                documents_added=churn % 4, documents_removed=churn % 3, documents_changed=churn % 2,
                questions_removed=run % 3, label="main" if run % 4 else "release",
                recorded_at=START + timedelta(hours=6 * run),
            ))
    return time.perf_counter() - started


def first_paint(path: Path, repeat: int) -> float:
    """The median wall time of the History page's script run in AppTest, the app loaded once before."""
    from streamlit.testing.v1 import AppTest

    os.environ[HISTORY_ENV] = str(path)
    seconds = []
    for _ in range(repeat):
        at = AppTest.from_file(str(PROJECT / "app.py"), default_timeout=300)
        at.run()  # the Upload page: imports and the sidebar, not what is measured
        at.switch_page("pages/10_history.py")
        started = time.perf_counter()
        at.run()
        seconds.append(time.perf_counter() - started)
        assert not at.exception, [e.value for e in at.exception]
        assert any("runs recorded" in s.value for s in at.subheader), "the page did not show the runs"
    return statistics.median(seconds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--history", type=Path, help="the SQLite history to fill and read (kept); default: a temporary one")
    parser.add_argument("--repeat", type=int, default=3)
    args = parse_with_smoke(parser, "10 runs, each measure once", argv, runs=10, repeat=1)

    with tempfile.TemporaryDirectory(prefix="bench-history-") as scratch:
        path = args.history or Path(scratch) / "history.sqlite"
        filled = fill(path, args.runs)
        with open_history(str(path)) as store:
            load_runs, runs = timed(lambda: history_plots.runs_frame(store.runs()), args.repeat)
            load_timeline, timeline = timed(store.document_timeline, args.repeat)
            share, _ = timed(lambda: history_plots.tested_share_over_time(runs), args.repeat)
            verdicts, _ = timed(lambda: history_plots.verdict_counts_over_time(runs), args.repeat)
            documents, _ = timed(lambda: history_plots.document_timeline_chart(timeline, runs), args.repeat)
            last, before = int(runs["run"].iloc[-1]), int(runs["run"].iloc[-2])
            compare, _ = timed(lambda: changes_since(store.load(before), store.load(last), previous_run=before),
                               args.repeat)
        paint = first_paint(path, args.repeat)
        loaded = load_runs + load_timeline + compare
        rows = [
            ("runs in the history", f"{len(runs):,}"),
            ("change points in the document timeline", f"{len(timeline):,}"),
            ("recording the runs (once; only a count when the history was filled before)", f"{filled:.1f} s"),
            ("loading the runs (runs + runs_frame)", f"{load_runs * 1000:.0f} ms"),
            ("loading the document timeline", f"{load_timeline * 1000:.0f} ms"),
            ("what changed between the last two runs (2 loads + changes_since)", f"{compare * 1000:.0f} ms"),
            ("figure: tested share over time", f"{share * 1000:.0f} ms"),
            ("figure: verdict counts over time", f"{verdicts * 1000:.0f} ms"),
            ("figure: document timeline", f"{documents * 1000:.0f} ms"),
            ("History page, whole script run (AppTest)", f"{paint:.2f} s"),
            ("  of which after the data is loaded", f"{max(paint - loaded, 0.0):.2f} s "
                                                    f"(target < {TARGET_PAINT_SECONDS:.0f} s)"),
        ]
        width = max(len(name) for name, _ in rows)
        for name, value in rows:
            print(f"{name:<{width}}  {value}")
        return 0 if paint - loaded < TARGET_PAINT_SECONDS or args.smoke else 1


if __name__ == "__main__":
    raise SystemExit(main())
