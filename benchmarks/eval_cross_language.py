"""Questions in another language than the documents: French articles, English questions.

Run from the project root::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python benchmarks/eval_cross_language.py

Eight fr-qa articles (``../shared/data/fr-qa``) are analysed twice with the
automatic model choice, as ``python -m coverage_core analyze`` would: once
with their own French questions (the volunteers'), once with the English
questions below, 15 about the articles (two or so per article, written for
this benchmark: no published set asks English questions of these articles)
and 5 about nothing in them. Per case: the model, τ, the median best
similarity of the questions written for an article, retrieval hit@5 (the
product's check on the ``source`` column), documents called untested
(every article has questions), genuine and unrelated questions flagged, and
whether the verdicts say they may be wrong
(``verdicts.cross_language_problem`` on the report's language summary).
Embeddings are cached as for ``eval_languages.py``. ``--smoke``: 2 articles (Moscou,
Tortue_géante_des_Galápagos), 5 French questions each, their English questions and the unrelated ones,
the support level fixed at 0.8 (no calibration).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_languages import AUTO, Case, Runner, load_set, without_writer  # noqa: E402
from shared_data import SMOKE_HELP  # noqa: E402

ARTICLES = ("Canada", "Hongrie", "Martin_Brodeur", "Moscou", "Organisation_des_Nations_unies_pour_l'éducation,_la_"
            "science_et_la_culture", "Pakistan", "Surréalisme", "Tortue_géante_des_Galápagos")
UNESCO = ARTICLES[4]
SMOKE_ARTICLES, SMOKE_QUESTIONS = ("Moscou", "Tortue_géante_des_Galápagos"), 5
ENGLISH = (
    ("What is the capital of Hungary?", "Hongrie"),
    ("Which river flows through Budapest?", "Hongrie"),
    ("When was Moscow founded?", "Moscou"),
    ("What is the Kremlin?", "Moscou"),
    ("What are the official languages of Canada?", "Canada"),
    ("Which province of Canada is mostly French-speaking?", "Canada"),
    ("When did Pakistan become independent?", "Pakistan"),
    ("Who wrote the first Surrealist manifesto?", "Surréalisme"),
    ("Which artists belonged to the surrealist movement?", "Surréalisme"),
    ("How long do Galapagos giant tortoises live?", "Tortue_géante_des_Galápagos"),
    ("On which islands do giant tortoises live?", "Tortue_géante_des_Galápagos"),
    ("Which team did Martin Brodeur play for?", "Martin_Brodeur"),
    ("How many Stanley Cups did Martin Brodeur win?", "Martin_Brodeur"),
    ("When was UNESCO founded?", UNESCO),
    ("Where is the headquarters of UNESCO?", UNESCO),
    ("How do I reset my password?", None),
    ("What is the boiling point of water in Kelvin?", None),
    ("Who won the 2018 FIFA World Cup?", None),
    ("How do I bake an apple pie?", None),
    ("What is the price of a Tesla Model 3?", None),
)


def summary(report: dict, case: Case) -> dict:
    from coverage_core.verdicts import cross_language_problem

    questions = report["questions"]
    genuine = ~case.off_topic
    flagged = np.array([bool(q.get("is_outlier")) for q in questions])
    best = np.array([q["max_similarity"] for q in questions])
    shares = {where: [(e["code"], e["name"], e["share"]) for e in report["languages"][where]]
              for where in ("documents", "questions")}
    return {
        "model": report["config"]["embedding"].get("model") or report["config"]["embedding"]["provider"],
        "tau": report["calibration"]["support_threshold"],
        "median best similarity (genuine)": float(np.median(best[genuine])),
        "retrieval hit@5": report["retrieval_hits"].get(5),
        f"documents called untested (of {len(case.titles)}, all asked about)": sum(
            d["is_untested"] for d in report["documents"]),
        "genuine flagged": f"{int(flagged[genuine].sum())} of {int(genuine.sum())}",
        "unrelated flagged": f"{int(flagged[~genuine].sum())} of {int((~genuine).sum())}",
        "verdicts say they may be wrong": bool(cross_language_problem(shares["documents"], shares["questions"])),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help=f"{len(SMOKE_ARTICLES)} articles: " + SMOKE_HELP)
    args = parser.parse_args(argv)
    data = load_set("fr")
    titles = list(SMOKE_ARTICLES if args.smoke else ARTICLES)
    french = [(q, t) for t in titles for q in data.of(t)[:SMOKE_QUESTIONS if args.smoke else None]]
    english = [(q, t) for q, t in ENGLISH if t is None or t in titles]
    cases = [
        Case("clean", titles, [q for q, _ in french], [t for _, t in french]),
        Case("clean", titles, [q for q, _ in english], [t for _, t in english]),
    ]
    runner = Runner(AUTO)
    if args.smoke:  # and a fixed support level: the calibration's texts would take most of the time
        runner.config = dataclasses.replace(without_writer(runner.config), support_threshold=0.8)
    results = {label: summary(runner.report(data, case, f"cross {label}"), case)
               for label, case in zip(("French questions", "English questions"), cases)}
    width = max(len(measure) for measure in next(iter(results.values())))
    print(f"{'measure':<{width}}  " + "  ".join(f"{label:>18}" for label in results))
    for measure in next(iter(results.values())):
        values = [results[label][measure] for label in results]
        shown = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in values]
        print(f"{measure:<{width}}  " + "  ".join(f"{v:>18}" for v in shown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
