"""Time the 2-D map (t-SNE) at the sizes users have.

Targets: <= 6 s for 3,300 points without sampling; any corpus <= 15 s with
sampling (shown on the figure). Uses the wiki-qa articles and questions
embedded with the bundled model (through the embedding cache, so only the
first run embeds), topped up with perturbed copies to reach larger sizes.

    .venv/bin/python benchmarks/bench_projection.py [--sizes 3300 20000 100000] [--smoke]

``--smoke``: the 2 shortest articles and their questions, grown to 250 points.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a script: run from anywhere
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared_data import SMOKE_HELP, WIKI_QA, require, shortest_files  # noqa: E402

from coverage_core.projection import project_2d  # noqa: E402
from coverage_core.stages.clustering import ChunkClusterer  # noqa: E402

PROJECT = Path(__file__).resolve().parents[1]
WIKI = WIKI_QA


def wiki_vectors(n_articles: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The chunks' and the distinct questions' vectors; ``n_articles``: only the shortest articles and their questions."""
    from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.inputs.questions import read_questions
    from coverage_core.stages.chunking import ChunkingConfig, chunk_documents

    folder = require(WIKI) / "articles"
    documents = read_documents(shortest_files(folder, n_articles) if n_articles else [folder]).documents
    chunks = chunk_documents(documents, ChunkingConfig())
    questions = read_questions(WIKI / "question_answer_pairs.txt")
    texts = questions.texts
    if n_articles:
        titles = {Path(document.name).stem for document in documents}
        article = questions.frame["ArticleTitle"].tolist()
        texts = [question.text for question in questions.questions if article[question.row] in titles]
    embedder, cache = make_embedder("local"), EmbeddingCache()
    chunk_vectors = embed_texts([c.text for c in chunks], embedder, cache).vectors
    question_vectors = embed_texts(sorted(set(texts)), embedder, cache).vectors
    return chunk_vectors, question_vectors


def grow(vectors: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """``n`` vectors: the originals, then jittered copies (same topic structure)."""
    rng = np.random.default_rng(seed)
    extra = vectors[rng.integers(0, len(vectors), max(0, n - len(vectors)))]
    extra = extra + 0.05 * rng.standard_normal(extra.shape).astype(np.float32)
    grown = np.vstack([vectors, extra])[:n]
    return grown / np.linalg.norm(grown, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[3300, 20000, 100000])
    parser.add_argument("--smoke", action="store_true", help="2 articles, 250 points: " + SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.sizes = [250]
    chunk_vectors, question_vectors = wiki_vectors(2 if args.smoke else None)
    print(f"wiki-qa: {len(chunk_vectors)} chunks, {len(question_vectors)} questions (bundled MiniLM)")
    for size in args.sizes:
        n_questions = min(len(question_vectors), size // 4)
        chunks = grow(chunk_vectors, size - n_questions)
        labels = ChunkClusterer(random_state=0).fit(chunks).labels_
        started = time.perf_counter()
        projection = project_2d(chunks, question_vectors[:n_questions], labels)
        total = time.perf_counter() - started
        drawn = len(projection.chunk_index) + n_questions
        print(
            f"  {size:>7,} points: {total:5.1f} s  (t-SNE on {drawn:,} drawn points: "
            f"{projection.seconds:4.1f} s; sampled: {projection.sampled})"
        )


if __name__ == "__main__":
    main()
