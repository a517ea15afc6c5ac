"""What a dashboard user waits for, through the functions the pages call (ui.engine).

Synthetic topic-structured vectors stand in for an embedded corpus (the
embedding itself is cached and measured by bench_embedding.py). Prints the
wall time of each interaction the dashboard promises to keep fast:

* moving a threshold / the strictness / an override: <= 0.5 s
  (reuses the clustering, the fitted screener and each chunk's nearest
  questions, built once per data set; ``measure`` only)
* changing K: <= 2 s at 20,000 chunks, <= 3 s at 200,000 (``session.cluster_chunks``
  + measure; the screener is judged against the automatic topics, so it is reused)
* moving K back to a value seen before: cached clustering and screener
* the 2-D map: computed once per data set; moving thresholds or K never recomputes it
  (shown by timing ``project_2d`` once and checking the tuning path never calls it)

    .venv/bin/python benchmarks/bench_dashboard.py [--chunks 20000 --questions 2000 --dims 384]
    .venv/bin/python benchmarks/bench_dashboard.py --chunks 200000 --repeat 1   # the 200k targets
    .venv/bin/python benchmarks/bench_dashboard.py --smoke   # 1,000 chunks x 100 questions, once (--map: and the map)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a script, not a page: run from anywhere

from coverage_core.gap_finding import with_gaps  # noqa: E402
from coverage_core.outputs import plots  # noqa: E402
from coverage_core.results import Corpus, EmbeddedTexts  # noqa: E402  # noqa: E402
from coverage_core.session import AnalysisSession  # noqa: E402
from coverage_core.types import Chunk, Document, Question, QuestionSet  # noqa: E402  # noqa: E402
from ui import engine  # noqa: E402
from ui.views import results as view  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_analysis import synthetic  # noqa: E402  (the same data as the analysis benchmark)
from shared_data import parse_with_smoke, timed  # noqa: E402

from ui.state import Overrides, Settings  # noqa: E402


def synthetic_inputs(n_chunks: int, n_questions: int, dims: int, seed: int = 0) -> engine.EmbeddedInputs:
    chunks, questions, texts = synthetic(n_chunks, n_questions, dims, seed)
    names = [f"doc{i // 200:03d}.txt" for i in range(n_chunks)]
    corpus = Corpus(
        documents=[Document(name, "") for name in dict.fromkeys(names)],
        chunks=[Chunk(names[i], text, 0, len(text)) for i, text in enumerate(texts)],
        embedded=EmbeddedTexts(chunks, 0, n_chunks, 0),
    )
    frame = pd.DataFrame({"question": [f"question {i}" for i in range(n_questions)]})
    question_set = QuestionSet(frame, "question", [Question(i, t) for i, t in enumerate(frame["question"])])
    settings = Settings()
    return engine.EmbeddedInputs(
        corpus,
        engine.corpus_key("synthetic-docs", settings),
        question_set,
        EmbeddedTexts(questions, 0, n_questions, 0),
        engine.question_key(engine.questions_fingerprint(question_set), settings),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--questions", type=int, default=2_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--map", action="store_true", help="also time the 2-D map (t-SNE, ~15 s)")
    args = parse_with_smoke(parser, "1,000 chunks x 100 questions, once", chunks=1_000, questions=100, repeat=1)

    inputs = synthetic_inputs(args.chunks, args.questions, args.dims)
    cache = AnalysisSession()
    settings = Settings()
    none = Overrides()
    rows: list[tuple[str, float, str]] = []

    seconds, analysis = timed(lambda: engine.tune(inputs, settings, none, cache))
    k = analysis.clustering.n_clusters
    rows.append((f"first analysis after embedding (cluster K={k}, fit screener, index, measure)", seconds, "once per run"))

    def step(new_settings, overrides=none):
        """Time the rerun after one widget change, from the analysis the session already has."""
        times = []
        for _ in range(args.repeat):
            engine.tune(inputs, settings, none, cache)  # the state before the change (cached)
            started = time.perf_counter()
            engine.tune(inputs, new_settings, overrides, cache)
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    for name, change in (
        ("gap threshold 0.70 -> 0.60 (relabels clusters only)", {"gap_threshold": 0.6}),
        ("multi-cluster threshold 0.50 -> 0.40", {"multi_threshold": 0.4}),
        ("multi-cluster N 2 -> 3", {"multi_n": 3}),
        ("screening strictness default -> 0.8", {"strictness": 0.8}),
    ):
        rows.append((name, step(settings.replace(**change)), "<= 0.5 s"))

    outliers = [int(r) for r, flag in zip(inputs.questions.rows, analysis.is_outlier) if flag][:5]
    include = Overrides(include=frozenset(outliers), exclude=frozenset({int(inputs.questions.rows[0])}))
    rows.append((f"override ({len(outliers)} included, 1 excluded)", step(settings, include), "<= 0.5 s"))

    new_k = max(2, k - 10)
    seconds, _ = timed(lambda: engine.tune(inputs, settings.replace(n_clusters=new_k), none, cache))
    k_target = "<= 2 s" if args.chunks <= 20_000 else "<= 3 s"
    rows.append((f"K {k} -> {new_k} (K-means, measure; screener reused)", seconds, k_target))
    seconds, _ = timed(lambda: engine.tune(inputs, settings.replace(multi_n=4), none, cache))
    rows.append((f"K back to {k} (clustering and screener cached; measure)", seconds, "<= 0.5 s"))

    seconds, gapped = timed(lambda: with_gaps(analysis))
    rows.append((f"gap analysis, offline drafts ({len(gapped.gaps)} gaps)", seconds, "Gap page, once per analysis"))

    def figures():
        plots.cluster_coverage_bar(analysis.clusters, 0.7).to_json()
        plots.document_coverage_bar(analysis.documents).to_json()
        view.cluster_table(analysis), view.document_table(analysis), view.off_topic_table(analysis, none)
        return None

    seconds, _ = timed(figures, args.repeat)
    rows.append(("Results page tables and charts", seconds, "every rerun"))

    if args.map:
        from coverage_core.projection import project_2d

        seconds, projection = timed(
            lambda: project_2d(inputs.corpus.vectors, inputs.question_embedding.vectors, analysis.clustering.labels)
        )
        rows.append((f"2-D map, t-SNE ({projection.caption})", seconds, "once per data set"))
        seconds, _ = timed(lambda: plots.coverage_map(*plots.map_frames(analysis, projection), analysis.metrics).to_json())
        rows.append(("drawing the map figure from the stored projection", seconds, "map tab rerun"))

    print(f"Dashboard interactions at {args.chunks:,} chunks x {args.questions:,} questions x {args.dims} dims "
          f"(median of {args.repeat} where repeated)")
    width = max(len(name) for name, _, _ in rows)
    for name, seconds, target in rows:
        print(f"  {name:<{width}}  {seconds:7.3f} s   {target}")


if __name__ == "__main__":
    main()
