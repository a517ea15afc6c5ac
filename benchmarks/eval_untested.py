"""Evaluate ``documents[].is_untested`` on the wiki-qa data, and choose its cut.

The 55 Wikipedia articles are the knowledge base and their human-written
questions the test set. For each removal level (10%, 50%, 80% of the
articles) and each of ``SEEDS``, all questions of a random share of the
articles are removed: those articles are truly untested, the others tested.
A document is flagged untested when less than ``cut`` of its passages is
reached by a remaining question, at the support threshold τ calibrated
without labels on the corpus (:func:`coverage_core.stages.calibration.calibrate`,
exactly as ``analyze`` does).

The articles are split in two halves (seeded). The cut is tuned on the first
half (best mean F1 over the three levels, on a grid of 0.05 steps; among
cuts within ``TIE`` of the best, the smallest, so that a tie within noise
flags fewer documents) and precision / recall are reported on the second
half only, with the relative rule ``is_low`` for comparison. Every question left counts as on-topic
(questions of articles with no file are dropped): this isolates the untested
decision from the off-topic screening.

Run: ``.venv/bin/python benchmarks/eval_untested.py`` (needs ../shared/data;
embeddings are cached in ``$EVAL_UNTESTED_CACHE`` or /tmp/eval_untested_cache).
"""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared_data import (
    WIKI_QA as DATA,  # noqa: E402
    require,
)

from coverage_core import metrics, verdicts  # noqa: E402
from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder  # noqa: E402
from coverage_core.inputs.ingest import read_documents  # noqa: E402
from coverage_core.pipeline import chunk_corpus  # noqa: E402
from coverage_core.stages.calibration import calibrate  # noqa: E402
from coverage_core.stages.chunking import ChunkingConfig  # noqa: E402
from coverage_core.stages.clustering import ChunkClusterer  # noqa: E402
from coverage_core.suggest.gaps import GAP_TESTED_SHARE  # noqa: E402

CACHE = Path(os.environ.get("EVAL_UNTESTED_CACHE", "/tmp/eval_untested_cache"))
LEVELS = (0.1, 0.5, 0.8)
SEEDS = tuple(range(30))
CUTS = tuple(np.round(np.arange(0.05, 0.61, 0.05), 2))
TIE = 0.005


def load():
    documents = read_documents([require(DATA / "articles")]).documents
    chunks = chunk_corpus(documents, ChunkingConfig())
    frame = pd.read_csv(
        DATA / "question_answer_pairs.txt", sep="\t", encoding="latin-1", quoting=csv.QUOTE_NONE,
        dtype=str, keep_default_na=False,
    )
    frame["Question"] = frame["Question"].str.strip()
    frame = frame[frame["Question"] != ""].drop_duplicates("Question")
    articles = sorted({Path(chunk.document).stem for chunk in chunks})
    frame = frame[frame["ArticleTitle"].isin(articles)]
    return chunks, frame["Question"].tolist(), frame["ArticleTitle"].to_numpy(dtype=str), articles


def scores(flags: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    tp = int((flags & truth).sum())
    precision = tp / flags.sum() if flags.sum() else 1.0
    recall = tp / truth.sum() if truth.sum() else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def main() -> None:
    chunks, questions, question_article, articles = load()
    embedder = make_embedder("local")
    cache = EmbeddingCache(CACHE)

    def embed(texts):
        return embed_texts(list(texts), embedder, cache).vectors

    chunk_vectors = embed([chunk.text for chunk in chunks])
    question_vectors = embed(questions)
    calibration = calibrate(chunks, chunk_vectors, embed, random_state=0)
    tau = calibration.support_threshold
    print(f"{len(articles)} articles, {len(chunks)} chunks, {len(questions)} questions")
    print(f"calibrated τ = {tau:.3f} ({calibration.method}, {calibration.n_probes} probes, "
          f"positive median {calibration.positive_median:.3f}, negative median {calibration.negative_median:.3f})")

    chunk_article = np.array([Path(chunk.document).stem for chunk in chunks])
    unit = lambda v: v / np.linalg.norm(v, axis=1, keepdims=True)  # noqa: E731
    similarity = unit(chunk_vectors) @ unit(question_vectors).T  # (chunks, questions)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(articles))
    tune = {articles[i] for i in order[: len(articles) // 2]}

    # Gaps: the product's default rule on the product's default clustering.
    clusterer = ChunkClusterer().fit(chunk_vectors)
    labels, n_clusters = clusterer.labels_, clusterer.n_clusters_
    main_cluster = {a: np.bincount(labels[chunk_article == a]).argmax() for a in articles}
    gap_figures = {level: [] for level in LEVELS}

    # results[(level, seed)] = (per-document tested share, truth), documents in `articles` order
    runs = {}
    for level in LEVELS:
        for seed in SEEDS:
            removed = set(np.random.default_rng(1000 + seed).choice(articles, round(level * len(articles)), replace=False))
            keep = ~np.isin(question_article, list(removed))
            best = similarity[:, keep].max(axis=1) if keep.any() else np.full(len(chunks), -1.0)
            table = metrics.document_coverage(
                1.0 - best, [chunk.document for chunk in chunks], support_threshold=tau
            )
            share = dict(zip((Path(d).stem for d in table["document"]), table["tested_share"]))
            runs[level, seed] = (
                np.array([share[a] for a in articles]),
                np.array([a in removed for a in articles]),
            )
            _, cluster_share = metrics.cluster_tested(1.0 - best, labels, n_clusters, tau)
            is_gap = cluster_share < GAP_TESTED_SHARE
            gap_figures[level].append((
                is_gap.mean(),
                np.mean([is_gap[main_cluster[a]] for a in removed]),
                np.mean([is_gap[labels[chunk_article == a]].mean() for a in removed]),
            ))
            # the relative rule, for comparison
            low = dict(zip((Path(d).stem for d in table["document"]), table["is_low"]))
            runs[level, seed] += (np.array([low[a] for a in articles]),)

    half = {name: np.array([(a in tune) == (name == "tune") for a in articles]) for name in ("tune", "test")}

    def evaluate(cut: float, part: str, level: float):
        figures = []
        for seed in SEEDS:
            share, truth, _ = runs[level, seed]
            mask = half[part]
            figures.append(scores(share[mask] < cut, truth[mask]))
        return np.mean(figures, axis=0)

    print("\ntuning half: mean F1 over the levels by cut")
    tuning = {}
    for cut in CUTS:
        per_level = [evaluate(cut, "tune", level)[2] for level in LEVELS]
        f1 = np.mean(per_level)
        print(f"  cut {cut:.2f}: F1 {f1:.3f}  (" + ", ".join(
            f"{level:.0%}: {value:.3f}" for level, value in zip(LEVELS, per_level)) + ")")
        tuning[cut] = f1
    # The smallest cut within TIE of the best: a tie within seed noise goes to flagging less.
    best_f1 = max(tuning.values())
    best_cut = min(cut for cut, f1 in tuning.items() if f1 >= best_f1 - TIE)
    print(f"chosen cut {best_cut:.2f} (verdicts.UNTESTED_SHARE = {verdicts.UNTESTED_SHARE})")

    print(f"\nheld-out half ({int(half['test'].sum())} articles, {len(SEEDS)} seeds each)")
    for cut, name in ((best_cut, "tuned"), (verdicts.UNTESTED_SHARE, "UNTESTED_SHARE")):
        for level in LEVELS:
            precision, recall, f1 = evaluate(cut, "test", level)
            print(f"  is_untested ({name} cut {cut:.2f}), {level:.0%} of articles untested: "
                  f"precision {precision:.3f} recall {recall:.3f} F1 {f1:.3f}")
    for level in LEVELS:
        figures = []
        for seed in SEEDS:
            _, truth, low = runs[level, seed]
            mask = half["test"]
            figures.append(scores(low[mask], truth[mask]))
        precision, recall, f1 = np.mean(figures, axis=0)
        print(f"  is_low (relative rule), {level:.0%} of articles untested: "
              f"precision {precision:.3f} recall {recall:.3f} F1 {f1:.3f}")


    print(f"\ngaps (default rule: cluster tested share < {GAP_TESTED_SHARE}; K = {n_clusters}, "
          f"all {len(articles)} articles, {len(SEEDS)} seeds)")
    _, full_share = metrics.cluster_tested(1.0 - similarity.max(axis=1), labels, n_clusters, tau)
    print(f"  every question kept: {np.mean(full_share < GAP_TESTED_SHARE):.0%} of clusters are gaps")
    for level in LEVELS:
        share, main_in_gap, chunks_in_gap = np.mean(gap_figures[level], axis=0)
        print(f"  {level:.0%} of articles untested: {share:.0%} of clusters are gaps; "
              f"untested articles whose main topic is a gap {main_in_gap:.0%}; "
              f"their passages in gap topics {chunks_in_gap:.0%}")


if __name__ == "__main__":
    main()
