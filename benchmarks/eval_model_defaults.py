"""The support level each bundled model falls back to when a calibration cannot be trusted.

When the calibration of τ fails on a corpus (one document, near-copies
everywhere, a model that barely separates; ``stages.calibration``), the
analysis falls back to the model's default level from the provider registry
(``ModelSpec.default_support_threshold``). all-MiniLM-L6-v2's was measured on
English wiki-qa (``benchmarks/eval_calibration.py``); the multilingual
models had none, so they fell back to the generic 0.5, below nearly every
similarity they give (multilingual-e5-small puts unrelated passages of a
German lecture at 0.8), and every question then reached everything.

Method (as for all-MiniLM-L6-v2): the Youden threshold between each labelled
question's best similarity to a passage of its own article and its best
similarity to a passage of the other articles, chunks as the product makes
them for that model (default chunking, fitted to the model's input limit).
The labelled sets are wiki-qa (English), fr-qa and zh-qa; each is cut in the
halves of ``verdict_scenarios.halves``: the level is chosen on the tuning
halves (A) of all three languages pooled, and reported on the held-out halves
(B): the held-out J at the chosen level, against the best J there.

Run: ``HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python benchmarks/eval_model_defaults.py
[--providers e5 use local]`` (needs ../shared/data; embeddings cached in ``$EVAL_LANGUAGES_CACHE`` or
/tmp/eval_languages_cache, shared with ``eval_languages.py``). ``--smoke``: the local model on the 2
shortest articles of each half of wiki-qa and fr-qa.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import verdict_scenarios as scenarios  # noqa: E402
from eval_languages import load_set  # noqa: E402
from shared_data import SMOKE_HELP, shortest  # noqa: E402

from coverage_core.config import ChunkingConfig  # noqa: E402
from coverage_core.embedding_steps import chunk_corpus, token_limit  # noqa: E402
from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder  # noqa: E402
from coverage_core.embeddings.registry import default_support_level  # noqa: E402
from coverage_core.stages.calibration import youden_threshold  # noqa: E402
from coverage_core.types import Document  # noqa: E402
from coverage_core.validation import unit_rows  # noqa: E402

CACHE = Path(os.environ.get("EVAL_LANGUAGES_CACHE", "/tmp/eval_languages_cache"))
SETS = ("en", "fr", "zh")


def best_similarities(embedder, cache, data, titles) -> tuple[np.ndarray, np.ndarray]:
    """(best own-article similarity, best other-article similarity) of each question of ``titles``."""
    documents = [Document(scenarios.file_name(t), data.articles[t]) for t in titles]
    chunks = chunk_corpus(documents, ChunkingConfig(), token_limit(embedder, cache))
    chunk_article = np.array([Path(c.document).stem for c in chunks])
    questions = [(q, t) for t in titles for q in data.of(t)]
    vectors = unit_rows(embed_texts([c.text for c in chunks], embedder, cache).vectors)
    question_vectors = unit_rows(embed_texts([q for q, _ in questions], embedder, cache).vectors)
    similarity = question_vectors @ vectors.T
    own = np.array([t for _, t in questions])[:, None] == chunk_article[None, :]
    return np.where(own, similarity, -np.inf).max(axis=1), np.where(own, -np.inf, similarity).max(axis=1)


def youden_j(positives: np.ndarray, negatives: np.ndarray, level: float) -> float:
    return float(np.mean(positives >= level) - np.mean(negatives >= level))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--providers", nargs="+", default=["e5", "use", "local"])
    parser.add_argument("--smoke", action="store_true", help="local model, 2 articles per half of wiki-qa and "
                        "fr-qa: " + SMOKE_HELP)
    args = parser.parse_args(argv)
    global SETS
    if args.smoke:
        args.providers, SETS = ["local"], ("en", "fr")
    cache = EmbeddingCache(CACHE)
    sets = {name: load_set(name) for name in SETS}
    for provider in args.providers:
        embedder = make_embedder(provider)
        stored, source = default_support_level(provider, embedder.model)
        by_half = {}
        for name, data in sets.items():
            for half, titles in scenarios.halves(data).items():
                titles = [t for t in titles if data.of(t)]
                if args.smoke:
                    titles = shortest(titles, data.articles, 2)
                by_half[name, half] = best_similarities(embedder, cache, data, titles)
        pooled = {half: tuple(np.concatenate([by_half[name, half][i] for name in SETS]) for i in (0, 1))
                  for half in ("A", "B")}
        level, j_tuned = youden_threshold(*pooled["A"])
        print(f"\n{provider} ({embedder.model}); stored default: {stored} ({source})")
        print(f"  chosen on the tuning halves ({', '.join(SETS)} pooled): level {level:.3f}, J {j_tuned:.3f}")
        for name in SETS:
            for half in ("A", "B"):
                positives, negatives = by_half[name, half]
                best, j_best = youden_threshold(positives, negatives)
                print(f"  {name} half {half}: {len(positives)} questions; own-article median {np.median(positives):.3f}, "
                      f"other-article median {np.median(negatives):.3f}; its own best level {best:.3f} (J {j_best:.3f}); "
                      f"J at the chosen level {youden_j(positives, negatives, level):.3f}"
                      + (f", at the generic 0.5 {youden_j(positives, negatives, 0.5):.3f}" if half == "B" else ""))
        positives, negatives = pooled["B"]
        print(f"  held-out halves pooled: J at the chosen level {youden_j(positives, negatives, level):.3f} "
              f"(best there {youden_threshold(positives, negatives)[1]:.3f}; generic 0.5: "
              f"{youden_j(positives, negatives, 0.5):.3f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
