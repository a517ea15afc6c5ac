"""A cold multilingual analysis, stage by stage: the French set (fr-qa) through the product's own orchestration.

``session.analyze`` runs as the command line and the dashboard run it, with the automatic model choice
(French documents: the bundled multilingual model) and the built-in question writer on, into a fresh
embedding cache, so nothing is reused. Each stage is timed where the session calls it (wall seconds, and
the process's CPU seconds over the whole run, so a busy machine shows as the gap between them):

* the language profile and model choice; loading the model;
* chunking with the token count, and embedding the passages; embedding the questions;
* calibration (its probe questions are embedded too), clustering, the off-topic screener's fit;
* measuring (verdicts, topic names), then finding gaps and writing questions for them.

Target (issue 47): fr-qa's whole analysis (34 articles, 850 questions) in at most 90 s cold on 2 cores,
with the same verdicts as before (or better ones if the model choice changes). The verdict counts are
printed beside the times so a faster run that decides differently shows.

    .venv/bin/python benchmarks/bench_multilingual.py [--set fr-qa|zh-qa] [--no-writer] [--smoke]

``--smoke``: the 2 shortest articles and their questions; the exit code then ignores the target.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # a script, not a page: run from anywhere
sys.path.insert(0, str(PROJECT / "benchmarks"))

from bench_scale import StageTimes  # noqa: E402
from eval_languages import load_folder  # noqa: E402
from shared_data import SHARED_DATA, SMOKE_HELP, require, shortest  # noqa: E402

from coverage_core import (  # noqa: E402
    embedding_steps,
    gap_finding,
    measure as measure_stage,  # noqa: E402
    session,
)
from coverage_core.config import AnalysisConfig  # noqa: E402
from coverage_core.embeddings import EmbeddingCache  # noqa: E402
from coverage_core.suggest.gaps import GapConfig  # noqa: E402
from coverage_core.types import Document, Question, QuestionSet  # noqa: E402

TARGET_SECONDS = 90.0
SMOKE_ARTICLES = 2


def read_set(name: str, n_articles: int | None) -> tuple[list[Document], QuestionSet]:
    """The set's articles (the ``n_articles`` shortest when given) and the questions about them, each once."""
    data = load_folder(require(SHARED_DATA / name))
    titles = list(data.articles) if n_articles is None else shortest(data.articles, data.articles, n_articles)
    frame = data.questions[data.questions["title"].isin(titles)].reset_index(drop=True)
    documents = [Document(name=f"{title}.txt", text=data.articles[title]) for title in titles]
    questions = QuestionSet(frame, "question", [Question(i, text) for i, text in enumerate(frame["question"])])
    return documents, questions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="fr-qa", choices=("fr-qa", "zh-qa"), help="the shared set (default fr-qa)")
    parser.add_argument("--no-writer", action="store_true", help="gaps get drafts only: no built-in writer")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args(argv)
    documents, questions = read_set(args.set, SMOKE_ARTICLES if args.smoke else None)

    clock = StageTimes()
    clock.wrap(session, "choose_embedding", "language profile and model choice")
    clock.wrap(embedding_steps, "build_embedder", "loading the model")
    clock.wrap(embedding_steps, "_split_corpus", "chunking (with token counts)")
    clock.wrap(embedding_steps, "embed_stage", "embedding passages and questions")
    clock.wrap(session, "calibrate_corpus", "calibration")
    clock.wrap(session, "cluster_chunks", "clustering")
    clock.wrap(measure_stage, "fit_screener", "off-topic screener")
    clock.wrap(measure_stage, "measure", "measuring (verdicts, topic names)")
    clock.wrap(gap_finding, "with_gaps", "gaps and written questions")
    config = AnalysisConfig(gaps=GapConfig(local_model=not args.no_writer))

    with tempfile.TemporaryDirectory(prefix="bench-multilingual-") as folder:
        cpu_before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        analysis = session.analyze(config, documents, questions, cache=EmbeddingCache(Path(folder)))
        total = time.perf_counter() - started
        cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)

    print(f"{args.set}: {len(documents)} articles, {len(questions.questions)} questions, "
          f"{len(analysis.corpus.chunks)} passages; model {analysis.config.embedding.provider}/"
          f"{analysis.config.embedding.model or 'default'}; writer {'off' if args.no_writer else 'on'}")
    width = max(len(stage) for stage in clock.seconds)
    for stage in clock.order:
        seconds = clock.seconds[stage]
        print(f"  {stage:<{width}}  {seconds:7.1f} s")
    # Stages nest (the calibration embeds its probes; gaps embed written questions): the sum is not the total.
    print(f"  {'whole analysis':<{width}}  {total:7.1f} s wall, {cpu:.1f} s CPU (target {TARGET_SECONDS:.0f} s)")
    print(f"verdicts: tested share {analysis.metrics['tested_share']:.3f}, "
          f"{int(analysis.is_outlier.sum())} off-topic, {int(analysis.clusters['is_gap'].sum())} gap topics, "
          f"{int(analysis.documents['is_untested'].sum())} untested documents, "
          f"τ {analysis.calibration.support_threshold:.3f} ({'reliable' if analysis.calibration.reliable else 'unreliable'})")
    return 0 if args.smoke or total <= TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
