"""Evaluate ``documents[].is_untested`` on the wiki-qa data, and choose what *targets* a document.

The 55 Wikipedia articles are the knowledge base and their human-written
questions the test set. A document is untested when no on-topic question
*targets* it (:func:`coverage_core.verdicts.is_untested`); a question targets
the documents holding one of its tested passages (its top ``k`` at
similarity >= τ) within ``margin`` of its best one
(:func:`coverage_core.metrics.question_targets`). This script chooses the
margin (:data:`coverage_core.verdicts.TARGET_MARGIN`).

Scenarios, each with 10%, 50% or 80% of the articles losing all their
questions (those are truly untested, the others tested), ``SEEDS`` times:

* ``all``: the other articles keep all their questions;
* ``thin``: articles of at least ``LONG_PASSAGES`` passages keep only 7 or 8
  questions (the report of 40 papers of ~30 passages with 7-8 one-sentence
  questions each, where the old share rule flagged 16 of 36 tested papers);
* ``copies``: ``N_COPIES`` articles get a near-duplicate document (every
  ``EDIT_EVERY``-th word dropped), tested exactly when its original is.

Also shown: the old rule (less than ``UNDERTESTED_SHARE`` of the passages
reached at τ, top k or not) and how many tested documents the new
``is_undertested`` calls thin. The articles (with their copies) are split
in two halves (seeded): the margin is tuned on the first (best mean F1 over
scenarios and levels; among margins within ``TIE``, the smallest) and
precision / recall / false flags reported on the second only. Every
question left counts as on-topic: this isolates the untested decision from
the off-topic screening. τ is calibrated without labels on the corpus
(:func:`coverage_core.stages.calibration.calibrate`), as ``analyze`` does.

Run: ``.venv/bin/python benchmarks/eval_untested.py`` (needs ../shared/data;
embeddings are cached in ``$EVAL_UNTESTED_CACHE`` or /tmp/eval_untested_cache). ``--smoke``: the 5 shortest
articles (2 copied), one seed, 50% untested.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared_data import (  # noqa: E402
    SMOKE_HELP,
    WIKI_QA as DATA,
    require,
    shortest_files,
)

from coverage_core import metrics, verdicts  # noqa: E402
from coverage_core.config import DEFAULT_RETRIEVAL_K  # noqa: E402
from coverage_core.embedding_steps import chunk_corpus  # noqa: E402
from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder  # noqa: E402
from coverage_core.inputs.ingest import read_documents  # noqa: E402
from coverage_core.stages.calibration import calibrate  # noqa: E402
from coverage_core.stages.chunking import ChunkingConfig  # noqa: E402

CACHE = Path(os.environ.get("EVAL_UNTESTED_CACHE", "/tmp/eval_untested_cache"))
LEVELS = (0.1, 0.5, 0.8)
SEEDS = tuple(range(20))
SCENARIOS = ("all", "thin", "copies")
MARGINS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 1.0)
MIN_QUESTIONS = (1, 2, 3)  # a document is flagged with fewer targeting questions (the product's rule: 1)
TIE = 0.005
LONG_PASSAGES = 20
N_COPIES = 6
EDIT_EVERY = 12
K = DEFAULT_RETRIEVAL_K
COPY = "__copy"


def load(n_copies: int = 0, n_articles: int | None = None):
    """Chunks, questions, each question's article and the article names; ``n_copies`` articles get a
    near-duplicate document (``eval_traffic`` reads the corpus without them); ``n_articles``: only the
    shortest articles (``--smoke``)."""
    folder = require(DATA / "articles")
    documents = read_documents(shortest_files(folder, n_articles) if n_articles else [folder]).documents
    rng = np.random.default_rng(7)
    copied = rng.choice(len(documents), n_copies, replace=False)
    for i in copied:  # a near-duplicate: the same article with every EDIT_EVERY-th word dropped
        original = documents[i]
        words = original.text.split(" ")
        text = " ".join(w for j, w in enumerate(words) if j % EDIT_EVERY != EDIT_EVERY - 1)
        stem = Path(original.name).stem
        documents.append(dataclasses.replace(original, name=f"{stem}{COPY}.txt", text=text))
    chunks = chunk_corpus(documents, ChunkingConfig())
    frame = pd.read_csv(
        DATA / "question_answer_pairs.txt", sep="\t", encoding="latin-1", quoting=csv.QUOTE_NONE,
        dtype=str, keep_default_na=False,
    )
    frame["Question"] = frame["Question"].str.strip()
    frame = frame[frame["Question"] != ""].drop_duplicates("Question")
    articles = sorted({Path(chunk.document).stem for chunk in chunks if COPY not in chunk.document})
    frame = frame[frame["ArticleTitle"].isin(articles)]
    return chunks, frame["Question"].tolist(), frame["ArticleTitle"].to_numpy(dtype=str), articles


def scores(flags: np.ndarray, truth: np.ndarray) -> tuple[float, float, float, int]:
    tp = int((flags & truth).sum())
    precision = tp / flags.sum() if flags.sum() else 1.0
    recall = tp / truth.sum() if truth.sum() else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1, int((flags & ~truth).sum())


def main(argv: list[str] | None = None) -> None:
    global SEEDS, LEVELS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="5 articles, one seed, one level: " + SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        SEEDS, LEVELS = (0,), (0.5,)
    chunks, questions, question_article, articles = load(2 if args.smoke else N_COPIES, 5 if args.smoke else None)
    embedder = make_embedder("local")
    cache = EmbeddingCache(CACHE)

    def embed(texts):
        return embed_texts(list(texts), embedder, cache).vectors

    chunk_vectors = embed([chunk.text for chunk in chunks])
    question_vectors = embed(questions)
    originals = [i for i, chunk in enumerate(chunks) if COPY not in chunk.document]
    calibration = calibrate([chunks[i] for i in originals], chunk_vectors[originals], embed, random_state=0)
    tau = calibration.support_threshold
    product_margin = verdicts.target_margin(calibration)  # what the analysis uses on this corpus
    margins = sorted({*MARGINS, product_margin})
    chunk_documents = [Path(chunk.document).stem for chunk in chunks]
    documents = list(dict.fromkeys(chunk_documents))
    root = np.array([d.replace(COPY, "") for d in documents])
    n_passages = Counter(chunk_documents)
    print(f"{len(articles)} articles + {len(documents) - len(articles)} near-duplicate copies, {len(chunks)} chunks, "
          f"{len(questions)} questions, k = {K}")
    print(f"calibrated τ = {tau:.3f} ({calibration.method}, {calibration.n_probes} probes); the product's margin "
          f"here {product_margin:.4f} (verdicts.target_margin)")

    unit = lambda v: v / np.linalg.norm(v, axis=1, keepdims=True)  # noqa: E731
    similarity = (unit(question_vectors) @ unit(chunk_vectors).T).astype(np.float32)  # (questions, chunks)
    is_copy = np.array([COPY in d for d in chunk_documents])
    tune = set(np.random.default_rng(0).permutation(articles)[: len(articles) // 2])
    half = {"tune": np.isin(root, list(tune)), "test": ~np.isin(root, list(tune))}
    long_articles = {a for a in articles if n_passages[a] >= LONG_PASSAGES}

    # runs[scenario, level, seed] = (documents targeted per margin, truth, old rule, under-tested)
    runs = {}
    for scenario in SCENARIOS:
        with_copies = scenario == "copies"
        chunk_mask = np.ones(len(chunks), dtype=bool) if with_copies else ~is_copy
        in_scenario = np.array([with_copies or COPY not in d for d in documents])
        for level in LEVELS:
            for seed in SEEDS:
                rng = np.random.default_rng(1000 + seed)
                removed = set(rng.choice(articles, round(level * len(articles)), replace=False))
                keep = ~np.isin(question_article, list(removed))
                if scenario == "thin":
                    for article in long_articles - removed:
                        rows = np.flatnonzero(keep & (question_article == article))
                        if len(rows) > 8:
                            keep[rng.choice(rows, len(rows) - int(rng.integers(7, 9)), replace=False)] = False
                # The scenario's corpus: its chunks only, so the top k are ranked among them.
                sims = similarity[np.ix_(keep, chunk_mask)]
                index = np.flatnonzero(chunk_mask)
                order = np.argsort(-sims, axis=1, kind="stable")[:, :K]
                top_k, top_k_sim = index[order], np.take_along_axis(sims, order, axis=1)
                tested = metrics.retrieved_tested_chunks(top_k, top_k_sim, len(chunks), tau, K)[chunk_mask]
                docs = [chunk_documents[i] for i in index]
                table = verdicts.with_document_verdicts(
                    metrics.document_coverage(1.0 - np.clip(sims.max(axis=0, initial=-1.0), -1, 1), docs, tested=tested),
                    Counter(d for t in metrics.question_targets(
                        top_k, top_k_sim, chunk_documents, tau, K, margin=0.0) for d in t),
                ).set_index("document").reindex(documents)
                reached = metrics.tested_chunks(1.0 - np.clip(sims.max(axis=0, initial=-1.0), -1, 1), tau)
                old = pd.Series(reached).groupby(pd.Series(docs)).mean().reindex(documents)
                targeted = {}
                for margin in margins:
                    counts = Counter(d for t in metrics.question_targets(
                        top_k, top_k_sim, chunk_documents, tau, K, margin=margin) for d in t)
                    targeted[margin] = np.array([counts.get(d, 0) for d in documents])
                runs[scenario, level, seed] = (
                    targeted, np.isin(root, list(removed)), (old < verdicts.UNDERTESTED_SHARE).to_numpy(),
                    table["tested_share"].to_numpy(), in_scenario,
                )

    def evaluate(rule, part: str, scenario: str, level: float):
        figures = []
        for seed in SEEDS:
            targeted, truth, old, share, in_scenario = runs[scenario, level, seed]
            mask = half[part] & in_scenario
            flags = old if rule == "old" else targeted[rule[0]] < rule[1]
            figures.append(scores(flags[mask], truth[mask]))
        figures = np.array(figures)
        return (*figures[:, :3].mean(axis=0), figures[:, 3].mean(), figures[:, 3].max(), int(mask.sum()))

    print("\ntuning half: mean F1 over scenarios and levels by margin and questions needed")
    tuning = {}
    for margin in margins:
        for needed in MIN_QUESTIONS:
            figures = np.array([evaluate((margin, needed), "tune", s, level) for s in SCENARIOS for level in LEVELS])
            tuning[margin, needed] = figures[:, 2].mean()
            print(f"  margin {margin:.2f}, untested below {needed} question(s): F1 {figures[:, 2].mean():.3f} "
                  f"(precision {figures[:, 0].mean():.3f}, recall {figures[:, 1].mean():.3f}, "
                  f"worst false flags {figures[:, 4].max():.0f})")
    best = max(tuning.values())
    chosen = min(rule for rule, f1 in tuning.items() if f1 >= best - TIE)
    print(f"best margin {chosen[0]:.3f} with {chosen[1]} question(s) (verdicts: TARGET_MARGIN = "
          f"{verdicts.TARGET_MARGIN}, here {product_margin:.4f} by TARGET_MARGIN_SHARE = "
          f"{verdicts.TARGET_MARGIN_SHARE}; MIN_TARGETING_QUESTIONS = {verdicts.MIN_TARGETING_QUESTIONS})")

    print("\nheld-out half: precision / recall / F1, false flags per run (mean, worst)")
    for scenario in SCENARIOS:
        for level in LEVELS:
            for rule, name in (((product_margin, verdicts.MIN_TARGETING_QUESTIONS), "targets"),
                               ((product_margin, 1), "targets, 1 q"), ((0.0, 1), "top-1, 1 q"),
                               ("old", "old share")):
                p, r, f1, false_mean, false_max, n = evaluate(rule, "test", scenario, level)
                label = f"{name} (margin {rule[0]:.3f}, {rule[1]} q)" if rule != "old" else name
                print(f"  {scenario:6s} {level:.0%} untested, {n} documents, {label:22s}: precision {p:.3f} "
                      f"recall {r:.3f} F1 {f1:.3f}, false flags {false_mean:.2f} (worst {false_max})")

    print(f"\nthin scenario, held-out half: tested documents called under-tested (< {verdicts.UNDERTESTED_SHARE:.0%})")
    for level in LEVELS:
        flagged, total, untested_long = 0, 0, 0
        for seed in SEEDS:
            targeted, truth, _, share, in_scenario = runs["thin", level, seed]
            counts = targeted[product_margin]  # is_untested / is_undertested read the product's rule
            mask = half["test"] & in_scenario & ~truth
            flagged += int(verdicts.is_undertested(counts[mask], np.nan_to_num(share[mask])).sum())
            long_mask = mask & np.isin(root, list(long_articles))
            untested_long += int(verdicts.is_untested(counts[long_mask]).sum())
            total += int(mask.sum())
        print(f"  {level:.0%} untested: {flagged / total:.0%} of tested documents under-tested; "
              f"long tested articles flagged untested: {untested_long} in {len(SEEDS)} runs")


if __name__ == "__main__":
    main()
