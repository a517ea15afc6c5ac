"""Retrieval check on the full wiki-qa data with the bundled local model.

Run from the project root::

    .venv/bin/python benchmarks/eval_retrieval.py [--cache-dir DIR] [--k 1 3 5 10]

The 55 articles under ``../shared/data/wiki-qa/articles`` are read, chunked
with the default settings and embedded through the product's pipeline
(``embed_corpus`` / ``embed_questions`` with the on-disk ``EmbeddingCache``,
by default in ``$COVERAGE_CORE_CACHE_DIR`` or ``/tmp/eval_retrieval_cache``;
the first run embeds about 2,500 chunks and takes a few minutes on 2 cores,
later runs seconds). ``question_answer_pairs.txt`` is read with
``read_questions``; its ``ArticleTitle`` column is the relevant source
(``Alessandro_Volta`` matches ``Alessandro_Volta.txt``: every title but
``Zebra`` has an article file, which the script checks). The file lists most
questions several times (one row per answerer) and 18 rows whose question is
the placeholder ``NULL``; each distinct real question is evaluated once.

For each k the script prints precision@k, recall@k, hit@k and MRR over all
labelled questions, hit@k and MRR without the Zebra questions (whose article
is not in the corpus, so they can never be retrieved), the number of failed
questions and the time ``evaluate_retrieval`` took. Then it times
``top_k_chunks`` alone at this size and at 20,000 chunks x 2,000 questions x
384 dimensions (random unit vectors), with the peak memory of the latter.

``--smoke``: the 4 shortest articles, the rows of their questions and the Zebra ones, k = 1 and 5, and the
timing at 2,000 chunks x 200 questions.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from shared_data import SMOKE_HELP, WIKI_QA, require, shortest_files  # noqa: E402

from coverage_core.checks.retrieval import evaluate_retrieval, top_k_chunks  # noqa: E402
from coverage_core.checks.retrieval_labels import find_relevant_column, relevant_from_questions  # noqa: E402
from coverage_core.embedding_steps import embed_corpus, embed_questions  # noqa: E402
from coverage_core.embeddings import EmbeddingCache, make_embedder  # noqa: E402
from coverage_core.inputs.ingest import read_documents  # noqa: E402
from coverage_core.inputs.questions import read_questions  # noqa: E402
from coverage_core.stages.chunking import ChunkingConfig  # noqa: E402

DATA = WIKI_QA


def best_of(function, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("COVERAGE_CORE_CACHE_DIR", "/tmp/eval_retrieval_cache")),
    )
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 10])
    parser.add_argument("--no-synthetic", action="store_true", help="skip the 20,000 x 2,000 timing")
    parser.add_argument("--smoke", action="store_true", help="4 articles and their questions: " + SMOKE_HELP)
    args = parser.parse_args()
    n_synthetic_chunks, n_synthetic_questions = (2_000, 200) if args.smoke else (20_000, 2_000)
    if args.smoke:
        args.k = [1, 5]

    started = time.perf_counter()
    folder = require(args.data) / "articles"
    articles = shortest_files(folder, 4) if args.smoke else [folder]
    documents = read_documents(articles).documents
    question_file = args.data / "question_answer_pairs.txt"
    if args.smoke:  # the header and the rows of those articles' questions, and of the Zebra ones (no article)
        import tempfile

        titles = {path.stem for path in articles} | {"Zebra"}
        lines = question_file.read_text(encoding="latin-1").splitlines(keepends=True)
        question_file = Path(tempfile.mkdtemp(prefix="eval-retrieval-smoke-")) / question_file.name
        question_file.write_text("".join([lines[0]] + [line for line in lines[1:] if line.split("\t")[0] in titles]),
                                 encoding="latin-1")
    question_set = read_questions(question_file)
    column = find_relevant_column(question_set.frame.columns, "ArticleTitle")
    relevant_all = relevant_from_questions(question_set, column)

    # Each distinct real question once (the file repeats a question per answerer).
    keep = [
        i for i, q in enumerate(question_set.questions)
        if q.row not in question_set.duplicates and q.text != "NULL"
    ]
    titles = {refs[0].name for refs in relevant_all if refs}
    article_names = {document.name for document in documents}
    missing = sorted(title for title in titles if f"{title}.txt" not in article_names)

    embedder = make_embedder("local")
    cache = EmbeddingCache(args.cache_dir)
    corpus = embed_corpus(documents, ChunkingConfig(), embedder, cache)
    question_embedding = embed_questions(question_set, embedder, cache)
    embedded_in = time.perf_counter() - started

    question_vectors = question_embedding.vectors[keep]
    relevant = [relevant_all[i] for i in keep]
    rows = [question_set.questions[i].row for i in keep]
    texts = [question_set.questions[i].text for i in keep]
    rows_in_corpus = {row for row, refs in zip(rows, relevant) if refs and refs[0].name not in missing}

    n_chunks = len(corpus.chunks)
    print(
        f"wiki-qa: {len(documents)} articles, {n_chunks} chunks (default chunking "
        f"{ChunkingConfig().chunk_size}/{ChunkingConfig().chunk_overlap}); {len(question_set.frame)} rows, "
        f"{len(keep)} distinct questions; relevant column '{column}'"
    )
    print(f"titles without an article file: {', '.join(missing) or 'none'} "
          f"({len(keep) - len(rows_in_corpus)} questions)")
    print(
        f"embedding: {embedded_in:.1f} s (chunks {corpus.embedded.n_embedded} embedded / "
        f"{corpus.embedded.n_cached} cached; questions {question_embedding.n_embedded} / "
        f"{question_embedding.n_cached}), cache {args.cache_dir}"
    )
    print()
    print(f"{'k':>3} {'P@k':>7} {'R@k':>7} {'hit@k':>7} {'MRR':>7}  | {'hit@k*':>7} {'MRR*':>7} "
          f"{'failed':>7} {'time':>8}")
    for k in args.k:
        t0 = time.perf_counter()
        result = evaluate_retrieval(
            question_vectors, corpus.vectors, corpus.chunks, relevant, k=k,
            rows=rows, question_texts=texts, relevant_column=column, documents=documents,
        )
        elapsed = time.perf_counter() - t0
        table = result.per_question
        known = table[table["row"].isin(rows_in_corpus)]
        print(
            f"{result.k:>3} {result.precision_at_k:7.3f} {result.recall_at_k:7.3f} "
            f"{result.hit_at_k:7.3f} {result.mrr:7.3f}  | {known['hit_at_k'].mean():7.3f} "
            f"{known['reciprocal_rank'].mean():7.3f} {result.failures['row'].nunique():>7} "
            f"{elapsed * 1000:6.0f} ms"
        )
    print("  * without the questions whose article is not in the corpus (Zebra)")
    for note in result.notes:
        print(f"  note: {note}")

    failed = result.failures[result.failures["rank"] == 1]
    failed = failed[failed["expected"] != "Zebra"].head(5)
    if len(failed):
        print(f"\nsome failures at k = {result.k} (top chunk shown):")
        for f in failed.itertuples():
            print(f"  row {f.row}: {f.question!r} expected {f.expected}, got {f.source} ({f.similarity:.2f})")

    seconds = best_of(lambda: top_k_chunks(question_vectors, corpus.vectors, 10))
    print(f"\ntop_k_chunks alone, {len(keep)} x {n_chunks}, k = 10: {seconds * 1000:.0f} ms (best of 3)")

    if not args.no_synthetic:
        rng = np.random.default_rng(0)
        chunks = rng.standard_normal((n_synthetic_chunks, 384), dtype=np.float32)
        questions = rng.standard_normal((n_synthetic_questions, 384), dtype=np.float32)
        chunks /= np.linalg.norm(chunks, axis=1, keepdims=True)
        questions /= np.linalg.norm(questions, axis=1, keepdims=True)
        seconds = best_of(lambda: top_k_chunks(questions, chunks, 10))
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        top_k_chunks(questions, chunks, 10)
        peak = (tracemalloc.get_traced_memory()[1] - base) / 2**20
        tracemalloc.stop()
        print(
            f"top_k_chunks, {n_synthetic_questions:,} x {n_synthetic_chunks:,} x 384, k = 10: {seconds:.2f} s "
            f"(best of 3), peak {peak:.0f} MB above the inputs (a full similarity matrix would be "
            f"{n_synthetic_questions * n_synthetic_chunks * 4 / 2**20:.0f} MB)"
        )
    if args.smoke:
        import shutil

        shutil.rmtree(question_file.parent)


if __name__ == "__main__":
    main()
