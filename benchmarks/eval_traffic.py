"""Production traffic on wiki-qa: does the traffic-weighted tested share recover the truth?

For each seed (10-19; seeds 0-9 tuned ``traffic.QUERY_MATCH_FRACTION``):

1. 30 of the 55 wiki-qa articles are "asked about"; every question of those
   articles is a traffic query. Articles get a Zipf weight (rank r of a random
   order: ``ceil(30 / r)``) and each query a Zipf count (``zipf(2)``, at most
   100) times its article's weight, so a few articles carry most traffic.
2. A biased test set: the questions of 10 of the 30 articles (drawn at random).
3. Truth: the traffic mass of those 10 articles. The product's
   ``tested_share_weighted`` must recover it within ±0.05.
4. The top 3 "most asked, least tested" topics must be about the heavy
   untested articles: each topic's main article is one of the 5 heaviest
   untested articles.

Then the scale figure: 100,000 distinct traffic queries against 20,000 chunks
(synthetic unit vectors, 384 dimensions), analysed after embedding, with
time and peak RSS (target ≤ 15 s, ≤ 3 GB).

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/eval_traffic.py [--scale-only]``
(needs ../shared/data; reuses the ``eval_untested`` embedding cache).
"""

from __future__ import annotations

import io
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from coverage_core.checks.traffic import analyze_traffic, read_traffic  # noqa: E402
from coverage_core.stages.calibration import calibrate  # noqa: E402

SEEDS = tuple(range(10, 20))  # seeds 0-9 tuned traffic.QUERY_MATCH_FRACTION
N_ASKED, N_TESTED = 30, 10
TOLERANCE = 0.05


def _log_csv(texts, counts) -> bytes:
    buffer = io.StringIO()
    pd.DataFrame({"query": texts, "count": counts}).to_csv(buffer, index=False)
    return buffer.getvalue().encode()


def wiki_qa() -> int:
    import eval_untested as data

    from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder

    chunks, questions, question_article, articles = data.load()
    embedder, cache = make_embedder("local"), EmbeddingCache(data.CACHE)

    def embed(texts):
        return embed_texts(list(texts), embedder, cache).vectors

    chunk_vectors = embed([c.text for c in chunks])
    question_vectors = embed(questions)
    calibration = calibrate(chunks, chunk_vectors, embed, random_state=0)
    tau, level = calibration.support_threshold, calibration.question_support_threshold
    vector_of = dict(zip(questions, question_vectors))
    print(f"wiki-qa: {len(articles)} articles, {len(chunks)} chunks, {len(questions)} questions; "
          f"τ {tau:.3f}, answerable from {level:.3f}")
    print(f"{'seed':>4} {'queries':>8} {'asked':>7} {'truth':>6} {'measured':>8} {'error':>6} {'answerable':>10}  "
          "top-3 most asked least tested: main article (heavy untested?)")
    errors, hits = [], []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        asked = rng.choice(articles, N_ASKED, replace=False)
        weight = {a: int(np.ceil(N_ASKED / (rank + 1))) for rank, a in enumerate(asked)}
        tested_articles = set(rng.choice(asked, N_TESTED, replace=False))
        picked = np.flatnonzero(np.isin(question_article, asked))
        texts = [questions[i] for i in picked]
        counts = np.minimum(rng.zipf(2.0, len(picked)), 100) * np.array([weight[question_article[i]] for i in picked])
        log = read_traffic(_log_csv(texts, counts), "traffic.csv")
        article_of = {q.casefold(): question_article[i] for q, i in zip(texts, picked)}
        tests = [questions[i] for i in picked if question_article[i] in tested_articles]
        result = analyze_traffic(
            log, np.stack([vector_of[q] for q in log.queries]), np.stack([vector_of[q] for q in tests]), tests,
            chunk_vectors, support_threshold=tau, question_support_threshold=level,
        )
        mass = pd.Series(log.counts, index=[article_of[q.casefold()] for q in log.queries]).groupby(level=0).sum()
        truth = mass[mass.index.isin(tested_articles)].sum() / mass.sum()
        measured = result.tested_share_weighted
        errors.append(abs(measured - truth))
        heavy_untested = set(mass[~mass.index.isin(tested_articles)].sort_values(ascending=False).index[:5])
        queries = result.queries.assign(article=[article_of[q.casefold()] for q in result.queries["text"]])
        tops = []
        for topic in result.topics["topic"].head(3):
            rows = queries[queries["topic"] == topic]
            main = rows.groupby("article")["count"].sum().idxmax()
            tops.append((main, main in heavy_untested))
        hits.extend(ok for _, ok in tops)
        shown = ", ".join(f"{main} ({'yes' if ok else 'no'})" for main, ok in tops)
        print(f"{seed:>4} {log.n_distinct:>8} {log.n_queries:>7} {truth:>6.3f} {measured:>8.3f} "
              f"{measured - truth:>+6.3f} {result.answerable_share_weighted:>10.2f}  {shown}")
    print(f"worst error {max(errors):.3f} (target ≤ {TOLERANCE}); top-3 topics on heavy untested articles: "
          f"{sum(hits)} of {len(hits)}")
    return 0


def scale(n_queries: int = 100_000, n_chunks: int = 20_000, n_tests: int = 2_000, dim: int = 384) -> None:
    """Time and peak RSS of the analysis after embedding (run in a fresh process for a clean peak)."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(200, dim)).astype(np.float32)

    def around(n):
        rows = centres[rng.integers(0, len(centres), n)] + rng.normal(scale=1.2, size=(n, dim)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    chunks, tests, queries = around(n_chunks), around(n_tests), around(n_queries)
    texts = [f"query {i} about topic {i % 200} word{i % 997} term{i % 89}" for i in range(n_queries)]
    counts = np.minimum(rng.zipf(1.8, n_queries), 10_000)
    log = read_traffic(_log_csv(texts, counts), "traffic.csv")
    assert log.n_distinct == n_queries
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    result = analyze_traffic(log, queries, tests, [f"test {i}" for i in range(n_tests)], chunks,
                             support_threshold=0.5, question_support_threshold=0.45)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"scale: {n_queries:,} queries × {n_chunks:,} chunks × {n_tests:,} tests: {seconds:.1f} s, "
          f"peak RSS {peak:,.0f} MB (inputs {before:,.0f} MB); targets ≤ 15 s, ≤ 3,072 MB; "
          f"{len(result.topics)} topics, tested {result.tested_share_weighted:.2f}")


def main() -> int:
    if "--scale" in sys.argv:
        scale()
        return 0
    if "--scale-only" not in sys.argv:
        wiki_qa()
    subprocess.run([sys.executable, __file__, "--scale"], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
