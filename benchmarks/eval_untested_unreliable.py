"""Untested documents when the support level is unreliable: which rule says what a question targets.

When τ cannot be calibrated (``Calibration.reliable`` False) it is the
embedding model's default level, and short questions can stay under it
while retrieval still puts their document's passages first. This script
compares, with the calibration *forced unreliable* (τ = the model's default,
target margin = :data:`coverage_core.verdicts.TARGET_MARGIN`, the values an
unreliable analysis uses), what makes a question target a document:

* ``level``: today's rule, its top k at similarity >= τ within the margin of
  its best (:func:`coverage_core.metrics.question_targets` at τ);
* ``top-k``: any passage among its top k, whatever the similarity;
* ``margin``: its passages within the margin of its best, whatever the
  similarity (``question_targets`` with no level);

a document being untested when fewer than
:data:`~coverage_core.verdicts.MIN_TARGETING_QUESTIONS` questions target it.
It also shows, for the documents that keep their questions, how many the
product would call *under-tested* (targeted, less than
:data:`~coverage_core.verdicts.UNDERTESTED_SHARE` of the passages tested)
when a passage is tested at τ, and when any passage among a question's top
k is tested.

Sets: wiki-qa (English, 55 articles), fr-qa and zh-qa (34 articles, 25
questions each), every article in the corpus; per scenario ``--levels``
shares of the articles lose all their questions (seeded, ``--seeds`` runs):
``all`` (the others keep all their questions) and ``thin`` (articles of at
least 20 passages keep 7 or 8), as ``eval_untested.py`` builds them, and
``few`` (every article that keeps questions keeps only 2 to 4 of them, as a
help desk's test set of a few short customer questions per page). Every
question left counts as on-topic, which isolates the untested decision from
the off-topic screening. k is the product's ``tested_k`` at the default
chunking (5). The real calibration is run too, to show whether it would
have been reliable.

Run from the project root::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python benchmarks/eval_untested_unreliable.py \\
        [--sets en fr zh] [--embedders local use] [--seeds 20] [--levels 0.1 0.5 0.8] \\
        [--scenarios all thin few] [--explore]

``--explore`` adds the other rules of :data:`EXPLORED` (top 1, 2, 3; margin 0.05; a question
counting only when its best document leads the next by 0.02-0.05). Figures and the decision are in
``docs/untested.md``.

Embeddings are cached in ``$EVAL_UNTESTED_CACHE`` (default /tmp/eval_untested_cache). ``--smoke``: wiki-qa's
5 shortest articles with the local model, one seed, 50% untested, every scenario and rule (``--explore``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_languages import SETS, load_set  # noqa: E402
from shared_data import SHARED_DATA, SMOKE_HELP, WIKI_QA, require, shortest_files  # noqa: E402

from coverage_core import metrics, verdicts  # noqa: E402
from coverage_core.config import AnalysisConfig, EmbeddingConfig  # noqa: E402
from coverage_core.embedding_steps import build_embedder, embed_corpus  # noqa: E402
from coverage_core.embeddings import EmbeddingCache, embed_texts  # noqa: E402
from coverage_core.inputs.ingest import read_documents  # noqa: E402
from coverage_core.session import support_fallback  # noqa: E402
from coverage_core.stages import similarity  # noqa: E402
from coverage_core.stages.calibration import calibrate  # noqa: E402

CACHE = Path(os.environ.get("EVAL_UNTESTED_CACHE", "/tmp/eval_untested_cache"))
LONG_PASSAGES = 20
NO_LEVEL = -1.0  # every similarity reaches it
ANY_MARGIN = 2.0  # every passage of the top k is within it
RULES = {"level": (True, None, None), "top-k": (False, None, ANY_MARGIN), "margin": (False, None, None)}
"""Rule name: (reads τ, passages of the top k read (None: k), margin (None: the analysis's))."""
EXPLORED = {"top-1": (False, 1, ANY_MARGIN), "top-2": (False, 2, ANY_MARGIN), "top-3": (False, 3, ANY_MARGIN),
            "margin .05": (False, None, 0.05), "lead .02": (False, None, None), "lead .03": (False, None, None),
            "lead .05": (False, None, None)}
"""More rules of the same family, shown with ``--explore``."""
SCENARIOS = ("all", "thin", "few")
FEW = (2, 4)  # questions each tested article keeps in the "few" scenario, at least and at most


def articles_folder(set_name: str) -> Path:
    return require(WIKI_QA / "articles" if set_name == "en" else SHARED_DATA / SETS[set_name][0] / "articles")


def targets(rule: str, top, sims, documents, tau: float, k: int, margin: float):
    """The documents each question targets under ``rule`` (:data:`RULES`, :data:`EXPLORED`)."""
    level, rank, rule_margin = {**RULES, **EXPLORED}[rule]
    found = metrics.question_targets(top, sims, documents, tau if level else NO_LEVEL, min(rank or k, k),
                                     margin=margin if rule_margin is None else rule_margin)
    if rule.startswith("lead"):  # only questions whose best document leads the next one by the rule's figure
        need = float(rule.split()[1])
        found = [t if lead_over_next_document(top[j], sims[j], documents) >= need else () for j, t in enumerate(found)]
    return found


def lead_over_next_document(top_row, sim_row, documents) -> float:
    """How far a question's best passage is ahead of the best passage of another document in its top k
    (of its k-th passage when all of them are of one document)."""
    first = documents[top_row[0]]
    others = [s for i, s in zip(top_row, sim_row) if documents[i] != first]
    return float(sim_row[0] - (others[0] if others else sim_row[-1]))


def run_set(set_name: str, provider: str, levels, seeds: int, scenarios=SCENARIOS, rules=tuple(RULES),
            n_articles: int | None = None) -> None:
    """Every scenario and level on one set with one embedder; ``n_articles``: its shortest articles only."""
    config = AnalysisConfig(embedding=EmbeddingConfig(provider=provider))
    embedder = build_embedder(config.embedding)
    cache = EmbeddingCache(CACHE)
    data = load_set(set_name)
    folder = articles_folder(set_name)
    documents = read_documents(shortest_files(folder, n_articles) if n_articles else [folder]).documents
    corpus = embed_corpus(documents, config.chunking, embedder, cache)
    titles = [Path(d.name).stem for d in documents]
    questions = data.questions[data.questions["title"].isin(titles)].reset_index(drop=True)
    question_vectors = embed_texts(questions["question"].tolist(), embedder, cache).vectors
    question_title = questions["title"].to_numpy(dtype=str)

    def embed(texts):
        return embed_texts(list(texts), embedder, cache).vectors

    real = calibrate(corpus.chunks, corpus.vectors, embed, config.random_state, fallback=support_fallback(config))
    tau, method = support_fallback(config)
    margin = verdicts.TARGET_MARGIN  # verdicts.target_margin of an unreliable calibration
    k = config.tested_k
    chunk_titles = [Path(chunk.document).stem for chunk in corpus.chunks]
    chunk_title_array = np.array(chunk_titles)
    n_passages = Counter(chunk_titles)
    long_articles = {t for t in titles if n_passages[t] >= LONG_PASSAGES}
    top, sims = similarity.question_top_chunks(corpus.vectors, question_vectors, k)
    best = sims[:, 0]
    own = np.array([chunk_titles[top[j, 0]] == question_title[j] for j in range(len(question_title))])
    in_top = np.array([question_title[j] in {chunk_titles[i] for i in top[j]} for j in range(len(question_title))])
    print(f"\n== {SETS[set_name][0]} with {provider}: {len(titles)} articles, {len(corpus.chunks)} passages, "
          f"{len(question_title)} questions, k = {k}")
    print(f"real calibration: τ {real.support_threshold:.3f}, separation "
          f"{(real.separation or 0):.2f}, reliable {real.reliable}{'' if real.reliable else ' (' + real.reason + ')'}")
    print(f"forced unreliable: τ = {tau:.3f} ({method}), margin {margin}; questions' best similarity median "
          f"{np.median(best):.3f}, {np.mean(best < tau):.0%} below τ; own article first {own.mean():.0%}, "
          f"in the top {k} {in_top.mean():.0%}")

    summary = {rule: [] for rule in rules}
    for scenario in scenarios:
        for level in levels:
            pooled = {rule: Counter() for rule in rules}
            worst = {rule: Counter() for rule in rules}
            thin_calls = {(rule, tested): 0 for rule in rules for tested in ("τ", "top k")}
            n_tested_docs = 0
            for seed in range(seeds):
                rng = np.random.default_rng(1000 + seed)
                removed = set(rng.choice(titles, round(level * len(titles)), replace=False).tolist())
                keep = ~np.isin(question_title, list(removed))
                if scenario == "few":
                    for title in sorted(set(titles) - removed):
                        rows = np.flatnonzero(keep & (question_title == title))
                        n_kept = int(rng.integers(FEW[0], FEW[1] + 1))
                        if len(rows) > n_kept:
                            keep[rng.choice(rows, len(rows) - n_kept, replace=False)] = False
                if scenario == "thin":
                    for title in sorted(long_articles - removed):
                        rows = np.flatnonzero(keep & (question_title == title))
                        if len(rows) > 8:
                            keep[rng.choice(rows, len(rows) - int(rng.integers(7, 9)), replace=False)] = False
                truth = np.isin(titles, list(removed))
                tested_chunks = {
                    "τ": metrics.retrieved_tested_chunks(top[keep], sims[keep], len(chunk_titles), tau, k),
                    "top k": metrics.retrieved_tested_chunks(top[keep], sims[keep], len(chunk_titles), NO_LEVEL, k),
                }
                shares = {name: np.array([tested[chunk_title_array == t].mean() for t in titles])
                          for name, tested in tested_chunks.items()}
                n_tested_docs += int((~truth).sum())
                for rule in rules:
                    counts = Counter(d for t in targets(rule, top[keep], sims[keep], chunk_titles, tau, k, margin)
                                     for d in t)
                    n_questions = np.array([counts.get(t, 0) for t in titles])
                    flags = verdicts.is_untested(n_questions)
                    found, false, missed = int((flags & truth).sum()), int((flags & ~truth).sum()), int((~flags & truth).sum())
                    pooled[rule].update(found=found, false=false, missed=missed, truth=int(truth.sum()))
                    worst[rule]["false"] = max(worst[rule]["false"], false)
                    worst[rule]["missed"] = max(worst[rule]["missed"], missed)
                    worst[rule]["runs_ok"] += int(missed == 0 and false <= 1)
                    for tested_name, share in shares.items():
                        thin_calls[rule, tested_name] += int(verdicts.is_undertested(n_questions, share)[~truth].sum())
            print(f"  {scenario:4s} {level:.0%} untested ({seeds} runs; P/R pooled, false flags and missed per "
                  "run: mean (worst), runs meeting the target, tested documents under-tested at τ / top k):")
            for rule in rules:
                p, w = pooled[rule], worst[rule]
                precision = p["found"] / (p["found"] + p["false"]) if p["found"] + p["false"] else 1.0
                recall = p["found"] / p["truth"] if p["truth"] else 1.0
                summary[rule].append((precision, recall, w["runs_ok"]))
                print(f"    {rule:10s} P {precision:.3f} R {recall:.3f}  false {p['false'] / seeds:5.2f} ({w['false']:2d})  "
                      f"missed {p['missed'] / seeds:5.2f} ({w['missed']:2d})  ok {w['runs_ok']:2d}/{seeds}  "
                      f"under-tested {thin_calls[rule, 'τ'] / n_tested_docs:4.0%} / {thin_calls[rule, 'top k'] / n_tested_docs:4.0%}")
    print(f"  summary over {len(scenarios)} scenarios x {len(levels)} levels: mean precision, mean recall, "
          "runs meeting the target (all untested found, at most 1 false flag)")
    for rule in rules:
        figures = np.array(summary[rule])
        print(f"    {rule:10s} P {figures[:, 0].mean():.3f} R {figures[:, 1].mean():.3f}  ok "
              f"{int(figures[:, 2].sum())}/{seeds * len(figures)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", choices=tuple(SETS), default=["en", "fr", "zh"])
    parser.add_argument("--embedders", nargs="+", default=["local", "use"])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--levels", nargs="+", type=float, default=[0.1, 0.5, 0.8])
    parser.add_argument("--explore", action="store_true", help="also the rules of EXPLORED")
    parser.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--smoke", action="store_true", help="5 wiki-qa articles, local model, one seed: " + SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        args.sets, args.embedders, args.seeds, args.levels, args.explore = ["en"], ["local"], 1, [0.5], True
    for set_name in args.sets:
        for provider in args.embedders:
            rules = (*RULES, *EXPLORED) if args.explore else tuple(RULES)
            run_set(set_name, provider, args.levels, args.seeds, args.scenarios, rules, 5 if args.smoke else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
