"""Does a question's best similarity to the corpus tell answerable from not?

Run from the project root::

    .venv/bin/python benchmarks/eval_answerability.py [--splits 5] [--hold-out 10] [--html DIR]

On the full wiki-qa data (55 articles, the distinct questions of
question_answer_pairs.txt) each split holds out ``--hold-out`` articles,
drawn with ``numpy.random.default_rng(seed)`` from the sorted titles for
seeds 0, 1, ...: their questions, and the Zebra questions (which have no
article at all), are "not covered"; every other question is "covered". For
each split it prints the labelled counts, the point-biserial r between the
best similarity and the label with its p-value, the AUROC, and the Youden
threshold with its J, sensitivity and specificity
(``coverage_core.checks.answerability.answerability``). Then, for the first split,
the dimension sweep (``dimension_sweep``: rank agreement with the full 384
dimensions and r / AUROC per size, with ``truncation_note`` for the model),
the mean AUROC per size over all splits, and the time of the MDS map
(``mds_points``) at its default size. ``--html DIR`` also writes the three
figures (box plot, sweep chart, MDS map) of the first split as HTML files.

Chunks are made and embedded the product's way (``read_documents``,
``chunk_corpus`` with the default 1,000 / 200 chunking, the bundled
all-MiniLM-L6-v2 through ``embed_texts``) and the vectors are kept in the
product's on-disk ``EmbeddingCache`` (``$COVERAGE_CORE_CACHE_DIR`` or
``~/.cache/coverage_core``), the same cache the CLI benchmarks fill: a first
run embeds about 3,300 texts (minutes on 2 cores), later runs take seconds.

``--smoke``: the 4 shortest articles, their questions and the Zebra ones, one split holding out 2, the
figures written to a temporary folder.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from shared_data import SMOKE_HELP, WIKI_QA as DATA, require, shortest_files  # noqa: E402

# Questions whose topic has no article at all: not covered in every split.
NO_ARTICLE = ("Zebra",)


def load_questions(data_dir: Path = DATA) -> tuple[list[str], np.ndarray]:
    """Distinct non-blank questions and the article title of each."""
    import pandas as pd

    # TAB-separated, Latin-1; quotes inside questions are literal characters.
    frame = pd.read_csv(
        require(data_dir) / "question_answer_pairs.txt", sep="\t", encoding="latin-1",
        quoting=csv.QUOTE_NONE, dtype=str, keep_default_na=False,
    )
    frame["Question"] = frame["Question"].str.strip()
    frame = frame[frame["Question"] != ""].drop_duplicates("Question")
    return frame["Question"].tolist(), frame["ArticleTitle"].to_numpy(dtype=str)


def progress(stage: str):
    def report(done: int, total: int) -> None:
        print(f"\r  embedding {stage}: {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", type=int, default=5, help="number of seeded hold-out splits (default 5)")
    parser.add_argument("--hold-out", type=int, default=10, help="articles held out per split (default 10)")
    parser.add_argument("--html", type=Path, default=None, help="folder for the first split's figures")
    parser.add_argument("--smoke", action="store_true", help="4 articles, one split: " + SMOKE_HELP)
    args = parser.parse_args()
    scratch = None  # --smoke writes the figures to a folder deleted at the end
    if args.smoke:
        import tempfile

        args.splits, args.hold_out = 1, 2
        if args.html is None:
            scratch = tempfile.TemporaryDirectory(prefix="eval-answerability-smoke-")
            args.html = Path(scratch.name)

    from coverage_core import metrics
    from coverage_core.checks import answerability as ans
    from coverage_core.embedding_steps import chunk_corpus
    from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.outputs import plots
    from coverage_core.stages.chunking import ChunkingConfig

    started = time.perf_counter()
    folder = require(DATA) / "articles"
    documents = read_documents(shortest_files(folder, 4) if args.smoke else [folder]).documents
    chunks = chunk_corpus(documents, ChunkingConfig())
    chunk_article = np.array([Path(chunk.document).stem for chunk in chunks])
    articles = sorted({Path(document.name).stem for document in documents})
    question_texts, question_article = load_questions()
    if args.smoke:  # the questions of those articles, and the ones without an article
        kept = np.isin(question_article, articles + list(NO_ARTICLE))
        question_texts, question_article = [q for q, k in zip(question_texts, kept) if k], question_article[kept]

    embedder = make_embedder("local")
    cache = EmbeddingCache()
    chunk_run = embed_texts([chunk.text for chunk in chunks], embedder, cache, progress=progress("chunks"))
    question_run = embed_texts(question_texts, embedder, cache, progress=progress("questions"))
    chunk_vectors, question_vectors = chunk_run.vectors, question_run.vectors
    print(
        f"wiki-qa: {len(articles)} articles, {len(chunks)} chunks, {len(question_texts)} distinct questions; "
        f"embedded {chunk_run.n_embedded + question_run.n_embedded}, from cache "
        f"{chunk_run.n_cached + question_run.n_cached} ({cache.directory}); "
        f"{time.perf_counter() - started:.1f} s\n"
    )

    header = (
        f"{'split':<7} {'covered/not':>11}  {'r_pb':>6} {'p':>9}  {'AUROC':>6}  {'threshold':>9} "
        f"{'J':>5} {'sens':>5} {'spec':>5}  held out"
    )
    print(f"Each split holds out {args.hold_out} articles; their questions and the Zebra questions are not covered.")
    print(header)
    print("-" * len(header))
    results, sweeps, first = [], [], None
    for seed in range(args.splits):
        rng = np.random.default_rng(seed)
        held_out = tuple(articles[i] for i in sorted(rng.choice(len(articles), size=args.hold_out, replace=False)))
        keep = ~np.isin(chunk_article, held_out)
        labels = (~np.isin(question_article, held_out + NO_ARTICLE)).astype(float)
        similarity = metrics.question_support(question_vectors, chunk_vectors[keep])[0]
        result = ans.answerability(similarity, labels)
        results.append(result)
        print(
            f"seed {seed:<2} {result.n_answerable:>5}/{result.n_unanswerable:<5}  {result.point_biserial_r:>6.3f} "
            f"{result.p_value:>9.2e}  {result.auroc:>6.3f}  {result.threshold:>9.3f} {result.youden_j:>5.2f} "
            f"{result.sensitivity:>5.2f} {result.specificity:>5.2f}  {', '.join(held_out)}"
        )
        sweeps.append(ans.dimension_sweep(question_vectors, chunk_vectors[keep], labels=labels))
        if first is None:
            first = (keep, labels, similarity, result)
    print("-" * len(header))
    r = [x.point_biserial_r for x in results]
    auc = [x.auroc for x in results]
    j = [x.youden_j for x in results]
    thresholds = [x.threshold for x in results]
    print(
        f"{'mean':<7} {'':>11}  {np.mean(r):>6.3f} {'':>9}  {np.mean(auc):>6.3f}  {np.mean(thresholds):>9.3f} "
        f"{np.mean(j):>5.2f}  (thresholds {min(thresholds):.3f}-{max(thresholds):.3f})"
    )
    print(f"{'worst':<7} {'':>11}  {min(r):>6.3f} {'':>9}  {min(auc):>6.3f}  {'':>9} {min(j):>5.2f}")

    keep, labels, similarity, result = first
    print("\nDimension sweep, seed 0 (best similarity per question from the first d dimensions, re-normalised):")
    print(sweeps[0].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    note = ans.truncation_note("local", embedder.model)
    if note:
        print(f"Note: {note}")
    mean_auroc = np.mean([frame["auroc"].to_numpy() for frame in sweeps], axis=0)
    mean_spearman = np.mean([frame["spearman"].to_numpy() for frame in sweeps], axis=0)
    print(
        f"Over {len(sweeps)} splits, by d = {sweeps[0]['d'].tolist()}: mean Spearman "
        f"{[round(float(v), 3) for v in mean_spearman]}, mean AUROC {[round(float(v), 3) for v in mean_auroc]}"
    )

    timings = []
    for _ in range(1 if args.smoke else 2):
        t0 = time.perf_counter()
        points = ans.mds_points(question_vectors, chunk_vectors[keep])
        timings.append(time.perf_counter() - t0)
    print(f"\nMDS map at the default cap ({ans.DEFAULT_MDS_POINTS} points): "
          f"{', '.join(f'{t:.1f}' for t in timings)} s. {points.caption}")

    if args.html is not None:
        args.html.mkdir(parents=True, exist_ok=True)
        kept_chunks = [chunk for chunk, k in zip(chunks, keep) if k]
        chunk_frame, question_frame = ans.mds_frames(
            points, [c.text for c in kept_chunks], question_texts,
            chunk_documents=[c.document for c in kept_chunks], labels=labels, similarities=similarity,
        )
        figures = {
            "answerability_box.html": plots.answerability_box(similarity, labels, result.threshold, texts=question_texts),
            "dimension_sweep.html": plots.dimension_sweep_chart(sweeps[0], caption=note),
            "mds_map.html": plots.mds_map(chunk_frame, question_frame, caption=points.caption),
        }
        for name, figure in figures.items():
            figure.write_html(args.html / name, include_plotlyjs=True)  # viewable offline
        print(f"Figures written to {args.html}: {', '.join(figures)}" + (" (deleted: --smoke)" if scratch else ""))
    if scratch is not None:
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
