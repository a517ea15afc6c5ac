"""Does a knowledge base about one subject look like a poor model fit? Separation and verdicts per corpus.

A product team's documents are usually about one subject, so a sentence's
best passage in another document is close, and the calibration's
separation (Youden's J, :mod:`coverage_core.stages.calibration`) is modest
even with a model that reads the texts well. This measures, per corpus, the
separation, whether the calibration is trusted, the headline's fit warning
(:func:`coverage_core.verdicts.model_fit_problem`), the share of genuine
questions flagged off-topic and the silent articles found untested, so that
the warning's cut (``verdicts.POOR_SEPARATION``) is set where the verdicts
actually fail, not where a corpus is merely about one thing.

Corpora: wiki-qa articles of one kind (instruments, cities, languages,
scientists, animals, painters; the first two articles of each lose their
questions), 20 mixed articles of each half of wiki-qa, fr-qa and zh-qa
(every question kept), each with the automatic model choice::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python benchmarks/eval_separation.py
    .venv/bin/python benchmarks/eval_separation.py --corpora instruments fr_A
    .venv/bin/python benchmarks/eval_separation.py --smoke   # scientists (4 articles) and en_B (2)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import verdict_scenarios as scenarios  # noqa: E402
from eval_languages import load_set  # noqa: E402
from shared_data import SMOKE_HELP, shortest  # noqa: E402

from coverage_core.config import AnalysisConfig  # noqa: E402
from coverage_core.embedding_steps import build_embedder  # noqa: E402
from coverage_core.session import analyze, choose_embedding  # noqa: E402
from coverage_core.types import Document, Question, QuestionSet  # noqa: E402
from coverage_core.verdicts import POOR_SEPARATION, Verdicts  # noqa: E402

KINDS = {
    "instruments": ["Cello", "Cymbal", "Drum", "Flute", "Guitar", "Lyre", "Piano", "Trumpet", "Violin", "Xylophone"],
    "cities": ["Antwerp", "Berlin", "Jakarta", "Kuala_Lumpur", "Melbourne", "Montreal", "Nairobi",
               "Saint_Petersburg", "San_Francisco", "Taipei"],
    "languages": ["Arabic_language", "Chinese_language", "Finnish_language", "Korean_language", "Malay_language",
                  "Portuguese_language", "Swahili_language", "Swedish_language", "Turkish_language",
                  "Vietnamese_language"],
    "scientists": ["Alessandro_Volta", "Amedeo_Avogadro", "Blaise_Pascal", "Charles-Augustin_de_Coulomb",
                   "Henri_Becquerel", "Isaac_Newton", "James_Watt", "Michael_Faraday", "Nikola_Tesla"],
    "animals": ["Ant", "Butterfly", "Cougar", "Dragonfly", "Eel", "Giant_Panda", "Koala", "Lobster", "Octopus"],
    "painters": ["Jackson_Pollock", "Leonardo_da_Vinci", "Michelangelo", "Norman_Rockwell", "Pablo_Picasso",
                 "Pierre-Auguste_Renoir", "Vincent_van_Gogh"],
}
MIXED = ("en_A", "en_B", "fr_A", "fr_B", "zh_A", "zh_B")
N_SILENT = 2
N_MIXED_ARTICLES = 20
SMOKE = False
"""``--smoke``: the shortest articles only (4 of a kind, 2 of a mixed corpus), 8 questions each, embeddings
cached in the default embedding cache, no gap questions written."""


def corpus(name: str) -> tuple[list[Document], list[str], set[str]]:
    """Documents, questions and the documents left without questions."""
    if name in KINDS:
        data, titles = load_set("en"), KINDS[name]
        if SMOKE:
            titles = shortest(titles, data.articles, 4)
        silent = titles[:N_SILENT]
    else:
        language, half = name.split("_")
        data = load_set(language)
        titles, silent = scenarios.corpus_titles(data, scenarios.halves(data)[half], N_MIXED_ARTICLES), []
        if SMOKE:
            titles = shortest(scenarios.corpus_titles(data, scenarios.halves(data)[half], len(data.articles)),
                              data.articles, 2)
    documents = [Document(name=scenarios.file_name(t), text=data.articles[t]) for t in titles]
    questions = [q for t in titles if t not in silent for q in data.of(t)[:8 if SMOKE else None]]
    return documents, questions, {scenarios.file_name(t) for t in silent}


def measure(name: str, embedders: dict) -> dict:
    import pandas as pd

    documents, texts, silent = corpus(name)
    questions = QuestionSet(frame=pd.DataFrame({"question": texts}), question_column="question",
                            questions=[Question(text=t, row=i) for i, t in enumerate(texts)])
    config, _ = choose_embedding(AnalysisConfig(), documents, questions)
    if SMOKE:  # nothing here reads the questions the bundled model writes for the gaps
        config = dataclasses.replace(config, gaps=dataclasses.replace(config.gaps, local_model=False))
    key = (config.embedding.provider, config.embedding.model)
    if key not in embedders:
        embedders[key] = build_embedder(config.embedding)
    cache = None
    if SMOKE:
        from coverage_core.embeddings import EmbeddingCache

        cache = EmbeddingCache()
    analysis = analyze(config, documents, questions, embedder=embedders[key], cache=cache)
    verdicts = Verdicts.from_analysis(analysis)
    untested = set(analysis.documents.loc[analysis.documents["is_untested"], "document"])
    return {
        "corpus": name, "model": config.embedding.model, "documents": len(documents), "questions": len(texts),
        "separation": analysis.calibration.separation, "reliable": analysis.calibration.reliable,
        "fit_warning": bool(verdicts.model_fit), "genuine_flagged": round(float(np.mean(analysis.is_outlier)), 3),
        "silent_found": f"{len(untested & silent)} of {len(silent)}", "false_untested": sorted(untested - silent),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs="+", default=[*KINDS, *MIXED], choices=[*KINDS, *MIXED])
    parser.add_argument("--json", type=Path, help="write every number here")
    parser.add_argument("--smoke", action="store_true", help="scientists (4 articles) and en_B (2): " + SMOKE_HELP)
    args = parser.parse_args(argv)
    global SMOKE
    if args.smoke:
        SMOKE, args.corpora = True, ["scientists", "en_B"]
    embedders: dict = {}
    rows = []
    print(f"fit warning below separation {POOR_SEPARATION}")
    print(f"{'corpus':12} {'model':24} {'separation':>10} {'reliable':>8} {'warning':>7} {'flagged':>7} "
          f"{'silent':>7}  false untested")
    for name in args.corpora:
        row = measure(name, embedders)
        rows.append(row)
        print(f"{name:12} {row['model']:24} {row['separation'] or 0:>10.3f} {row['reliable']!s:>8} "
              f"{row['fit_warning']!s:>7} {row['genuine_flagged']:>7.1%} {row['silent_found']:>7}  "
              f"{', '.join(row['false_untested']) or '-'}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
