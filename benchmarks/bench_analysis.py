"""Analysis stage after embedding, on synthetic data the size of a large corpus.

Clustering, screening, metrics and gap analysis (the 2-D map excluded) on
20,000 chunks x 2,000 questions x 384 dimensions. Prints wall time per stage
and the peak resident memory of the process. Target: <= 5 s, <= 2 GB.

    .venv/bin/python benchmarks/bench_analysis.py [--chunks 20000 --questions 2000] [--smoke]

``--smoke``: 1,000 chunks x 100 questions, a check that the script runs.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a script: run from anywhere
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared_data import parse_with_smoke  # noqa: E402

from coverage_core.config import AnalysisConfig  # noqa: E402
from coverage_core.gap_finding import find_gaps  # noqa: E402
from coverage_core.measure import measure  # noqa: E402
from coverage_core.results import Corpus, EmbeddedTexts  # noqa: E402
from coverage_core.session import cluster_chunks  # noqa: E402
from coverage_core.stages.chunking import ChunkingConfig  # noqa: E402
from coverage_core.types import Chunk, Document, Question, QuestionSet  # noqa: E402


def synthetic(n_chunks: int, n_questions: int, dims: int, seed: int = 0):
    """Topic-structured unit vectors and matching word-salad texts."""
    rng = np.random.default_rng(seed)
    n_topics = 60
    centres = rng.standard_normal((n_topics, dims)).astype(np.float32)
    chunk_topic = rng.integers(0, n_topics, n_chunks)
    chunks = centres[chunk_topic] + 1.2 * rng.standard_normal((n_chunks, dims)).astype(np.float32)
    # Questions touch only two thirds of the topics, so there are gaps to find.
    question_topic = rng.integers(0, 2 * n_topics // 3, n_questions)
    questions = centres[question_topic] + 1.4 * rng.standard_normal((n_questions, dims)).astype(np.float32)
    chunks /= np.linalg.norm(chunks, axis=1, keepdims=True)
    questions /= np.linalg.norm(questions, axis=1, keepdims=True)
    # Texts like real 1,000-character chunks: ~150 words whose frequencies
    # follow Zipf's law, as natural language does (a uniform word salad
    # would make nearly every word pair unique, which no real corpus does);
    # half the words come from the topic's own vocabulary.
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocabulary = np.array(["".join(rng.choice(letters, rng.integers(3, 11))) for _ in range(20000)])
    common, specific = vocabulary[:2000], vocabulary[2000:]
    topic_words = [rng.choice(specific, 600, replace=False) for _ in range(n_topics)]

    def zipf_pick(words: np.ndarray, n: int) -> np.ndarray:
        return words[np.minimum(rng.zipf(1.3, n), len(words)) - 1]

    texts = [
        " ".join(np.concatenate([zipf_pick(topic_words[t], 75), zipf_pick(common, 75)])) + "."
        for t in chunk_topic
    ]
    return chunks, questions, texts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--questions", type=int, default=2_000)
    parser.add_argument("--dims", type=int, default=384)
    args = parse_with_smoke(parser, "1,000 chunks x 100 questions", chunks=1_000, questions=100)

    chunk_vectors, question_vectors, texts = synthetic(args.chunks, args.questions, args.dims)
    documents = [Document(f"doc{i // 200:03d}.txt", "") for i in range(args.chunks)]
    chunks = [Chunk(documents[i].name, text, 0, len(text)) for i, text in enumerate(texts)]
    corpus = Corpus(
        documents=list({d.name: d for d in documents}.values()),
        chunks=chunks,
        embedded=EmbeddedTexts(chunk_vectors, 0, len(chunks), 0),
    )
    frame = pd.DataFrame({"question": [f"question {i}" for i in range(args.questions)]})
    question_set = QuestionSet(frame, "question", [Question(i, t) for i, t in enumerate(frame["question"])])
    question_embedding = EmbeddedTexts(question_vectors, 0, args.questions, 0)
    config = AnalysisConfig(chunking=ChunkingConfig())
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    timings = {}
    started = time.perf_counter()
    clustering = cluster_chunks(corpus, config.n_clusters, config.random_state)
    timings["cluster (K-means)"] = time.perf_counter() - started
    mark = time.perf_counter()
    analysis = measure(config, corpus, question_set, question_embedding, clustering)
    timings["screen + metrics + tables"] = time.perf_counter() - mark
    mark = time.perf_counter()
    find_gaps(analysis)
    timings["gaps (offline)"] = time.perf_counter() - mark
    total = time.perf_counter() - started

    mark = time.perf_counter()
    measure(config, corpus, question_set, question_embedding, clustering, screener=analysis.screener)
    threshold_move = time.perf_counter() - mark

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"analysis stage on {args.chunks:,} chunks x {args.questions:,} questions x {args.dims} dims")
    print(f"  K = {clustering.n_clusters}, gaps = {len(analysis.gaps)}, outliers = {int(analysis.is_outlier.sum())}")
    for name, seconds in timings.items():
        print(f"  {name:<28} {seconds:6.2f} s")
    print(f"  {'total':<28} {total:6.2f} s   (target <= 5 s)")
    print(f"  {'re-measure (new threshold)':<28} {threshold_move:6.2f} s")
    print(f"  peak RSS {peak:,.0f} MB (inputs alone {rss_before:,.0f} MB; target <= 2,048 MB)")


if __name__ == "__main__":
    main()
