"""Each bundled model's near-duplicate level: the cosine that groups as many question pairs as
all-MiniLM-L6-v2 groups at 0.95.

A fixed 0.95 meant different things on different models: multilingual-e5-small
puts unrelated texts near 0.75, so at 0.95 it grouped German questions that
ask different things about one subject ("Wie heißt Scouts Vater …?" and
"Welchen Beruf hat Scouts Vater …?"). The level is stated on the default
model's scale and carried to the others by matching counts of pairs.

* **Tuning**: every pair of wiki-qa's distinct English questions, embedded
  by the three bundled models; for e5 and the Universal Sentence Encoder, the
  similarity of the k-th most similar pair, k being the number of pairs
  all-MiniLM-L6-v2 puts at 0.95 or above (printed with how many of those
  pairs the model's own level also groups).
* **Held out**: fr-qa, zh-qa (``../shared/data``) and de-qa
  (``benchmarks/devsets/de-qa``), which all-MiniLM-L6-v2 does not read: for
  the two multilingual models, the pairs each groups at the old fixed 0.95
  and at its own level, how many pairs both group, and the most similar
  pairs to read.

    .venv/bin/python benchmarks/eval_near_duplicates.py [--show 5]
    .venv/bin/python benchmarks/eval_near_duplicates.py --smoke   # 40 questions a set
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # a script: run from anywhere
sys.path.insert(0, str(PROJECT / "benchmarks"))

from eval_languages import load_folder, load_set  # noqa: E402
from shared_data import parse_with_smoke  # noqa: E402

from coverage_core.duplicates import NEAR_DUPLICATE_SIMILARITY  # noqa: E402
from coverage_core.embeddings import make_embedder, registry  # noqa: E402

MULTILINGUAL = ("e5", "use")
HELD_OUT = {"fr": lambda: load_set("fr"), "zh": lambda: load_set("zh"),
            "de": lambda: load_folder(PROJECT / "benchmarks" / "devsets" / "de-qa")}


def pair_similarities(provider: str, texts: list[str]) -> np.ndarray:
    """The cosine of every pair ``i < j`` of ``texts`` under ``provider``'s bundled model (upper triangle, row-major)."""
    vectors = np.asarray(make_embedder(provider, None).embed(texts), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors @ vectors.T)[np.triu_indices(len(texts), 1)]


def matched_level(reference: np.ndarray, other: np.ndarray, level: float) -> tuple[float, int, int]:
    """``other``'s similarity of its k-th most similar pair, k = pairs of ``reference`` at ``level`` or above;
    and k and how many of those k pairs ``other`` also puts at its level or above."""
    k = int((reference >= level).sum())
    if k == 0:
        return float("nan"), 0, 0
    matched = float(np.sort(other)[-k])
    return matched, k, int(((reference >= level) & (other >= matched)).sum())


def tune(limit: int | None) -> None:
    texts = load_set("en").questions["question"].tolist()[:limit]
    print(f"Tuning: wiki-qa, {len(texts)} English questions, {len(texts) * (len(texts) - 1) // 2:,} pairs")
    reference = pair_similarities("local", texts)
    print(f"  all-MiniLM-L6-v2 at {NEAR_DUPLICATE_SIMILARITY}: {int((reference >= NEAR_DUPLICATE_SIMILARITY).sum())} pairs")
    for provider in MULTILINGUAL:
        level, k, shared = matched_level(reference, pair_similarities(provider, texts), NEAR_DUPLICATE_SIMILARITY)
        stated = registry.near_duplicate_similarity(provider)
        print(f"  {provider}: {level:.4f} groups as many ({shared} of the {k} pairs the same); the registry states {stated}")


def held_out(name: str, limit: int | None, show: int) -> None:
    texts = HELD_OUT[name]().questions["question"].tolist()[:limit]
    similarities = {provider: pair_similarities(provider, texts) for provider in MULTILINGUAL}
    levels = {provider: registry.near_duplicate_similarity(provider) or NEAR_DUPLICATE_SIMILARITY
              for provider in MULTILINGUAL}
    grouped = {provider: similarities[provider] >= levels[provider] for provider in MULTILINGUAL}
    counts = ", ".join(
        f"{provider} {int((similarities[provider] >= NEAR_DUPLICATE_SIMILARITY).sum())} at 0.95, "
        f"{int(grouped[provider].sum())} at {levels[provider]}" for provider in MULTILINGUAL
    )
    both = int((grouped["e5"] & grouped["use"]).sum())
    print(f"{name}: {len(texts)} questions; pairs grouped: {counts}; by both at their levels: {both}")
    rows, columns = np.triu_indices(len(texts), 1)
    for pair in np.argsort(-similarities["e5"])[:show]:
        marks = " ".join(f"{p} {similarities[p][pair]:.3f}{'*' if grouped[p][pair] else ''}" for p in MULTILINGUAL)
        print(f"   {marks} | {texts[rows[pair]]} | {texts[columns[pair]]}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="at most this many questions of each set")
    parser.add_argument("--show", type=int, default=5, help="the most similar pairs (by e5) printed per held-out set")
    args = parse_with_smoke(parser, "40 questions of each set", argv, limit=40, show=2)
    tune(args.limit)
    for name in HELD_OUT:
        held_out(name, args.limit, args.show)
    print("(* : grouped at the model's own level)")


if __name__ == "__main__":
    main()
