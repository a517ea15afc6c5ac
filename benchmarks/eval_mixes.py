"""The product's decisions on knowledge bases that are not only Wikipedia.

Run from the project root (needs ../shared/data; about 3 minutes, less with
the embedding cache warm)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/eval_mixes.py

Every figure comes from the product's own path, ``session.analyze`` with
the default ``AnalysisConfig`` (bundled local model, calibrated support
level, default strictness and gap rule), so the decisions measured are the
ones a user sees: ``documents[].is_untested``, ``questions[].is_outlier`` and
``clusters[].is_gap``.

Other real text, none written on this project, mixed with wiki-qa:

* the readable PDFs of ``../shared/data/pdfs`` (py-pdf sample files,
  CC-BY-SA-4.0): a pdfLaTeX paper, a two-column layout, a Google Docs
  export, German lecture notes and an Arabic text;
* Python's own language reference as the interpreter ships it
  (``pydoc_data.topics``, PSF licence): the topics of at least
  ``MIN_TOPIC_CHARS`` characters, one document each;
* scikit-learn's dataset descriptions (``sklearn/datasets/descr/*.rst``,
  BSD-3-Clause).

No question was written for any of them, so in a mix they are truly
untested; questions about wiki-qa articles absent from the mix are truly
off-topic.

Two kinds of mix, seeds ``SEEDS``:

* **Untested**: ``N_DOCUMENTS`` documents, of which 10%, 50% or 80% are
  foreign (untested) and the rest wiki-qa articles with all their questions.
  Precision / recall of ``is_untested`` against "foreign", the share of
  clusters marked as gaps, and how many foreign documents have their topic
  (the cluster holding most of their passages) among the gaps.
* **Off-topic**: all foreign documents plus the wiki-qa articles of the kinds
  kept (``eval_offtopic.KINDS``); questions of kept articles are on-topic,
  of removed kinds (and ``Zebra``) off-topic, subsampled to 5%, 45% and
  65% off-topic. Precision / recall of ``is_outlier``.

The constants were tuned on wiki-qa alone (``eval_offtopic.py --tune``,
``eval_untested.py``), never on these mixes.

``--smoke``: one seed, one level and one mix, on 4 documents (the 4 shortest articles to draw from; one PDF,
one Python topic and one scikit-learn description as the foreign documents), at most 40 questions, no gap
questions written.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "benchmarks"))

from eval_offtopic import KINDS, KINDS_REMOVED, prf  # noqa: E402
from eval_screening import ALWAYS_OFF_TOPIC, load_wiki_qa  # noqa: E402
from shared_data import PDFS, SMOKE_HELP, WIKI_QA, require, shortest  # noqa: E402

from coverage_core.config import AnalysisConfig  # noqa: E402
from coverage_core.embeddings import EmbeddingCache, make_embedder  # noqa: E402
from coverage_core.inputs.ingest import read_documents  # noqa: E402
from coverage_core.inputs.questions import read_questions  # noqa: E402
from coverage_core.session import analyze  # noqa: E402
from coverage_core.types import Document  # noqa: E402

CACHE = Path(os.environ.get("EVAL_MIXES_CACHE", "/tmp/eval_mixes_cache"))
PDF_FILES = ("pdflatex-4-pages.pdf", "multicolumn.pdf", "google-doc-document.pdf",
             "GeoTopo-komprimiert.pdf", "habibi.pdf")
MIN_TOPIC_CHARS = 8000
N_DOCUMENTS = 30
UNTESTED_LEVELS = (0.1, 0.5, 0.8)
OFF_TOPIC_MIXES = (0.05, 0.45, 0.65)
SEEDS = (0, 1, 2)
MAX_QUESTIONS = 400


def foreign_documents(smoke: bool = False) -> list[Document]:
    """The non-Wikipedia documents, read as the product reads uploads (``smoke``: the smallest of each kind)."""
    import pydoc_data.topics

    import sklearn

    files = [require(PDFS) / name for name in PDF_FILES]
    if smoke:  # the smallest one there: the fixture slice of the data holds only the small PDFs
        files = [min((path for path in files if path.exists()), key=lambda path: path.stat().st_size)]
    pdfs = read_documents(files).documents
    topics = [
        Document(name=f"python-reference-{name}.txt", text=text)
        for name, text in sorted(pydoc_data.topics.topics.items())
        if len(text) >= MIN_TOPIC_CHARS
    ]
    descr = Path(sklearn.__file__).parent / "datasets" / "descr"
    datasets = [
        Document(name=f"sklearn-{path.stem}.txt", text=path.read_text(encoding="utf-8"))
        for path in sorted(descr.glob("*.rst"))
    ]
    if smoke:
        topics, datasets = [min(topics, key=lambda d: len(d.text))], [min(datasets, key=lambda d: len(d.text))]
    return pdfs + topics + datasets


def question_set(texts: list[str]):
    frame = pd.DataFrame({"question": texts})
    return read_questions(frame.to_csv(index=False).encode("utf-8"), name="questions.csv")


def main(argv: list[str] | None = None) -> int:
    global N_DOCUMENTS, UNTESTED_LEVELS, OFF_TOPIC_MIXES, SEEDS, MAX_QUESTIONS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="4 documents, one seed: " + SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        N_DOCUMENTS, UNTESTED_LEVELS, OFF_TOPIC_MIXES, SEEDS, MAX_QUESTIONS = 4, (0.5,), (0.45,), (0,), 40
    t0 = time.perf_counter()
    data = load_wiki_qa()
    articles = {
        path.stem: Document(name=path.name, text=path.read_text(encoding="utf-8"))
        for path in sorted((require(WIKI_QA) / "articles").glob("*.txt"))
    }
    if args.smoke:
        articles = {t: articles[t] for t in shortest(articles, {t: d.text for t, d in articles.items()}, 4)}
    foreign = foreign_documents(args.smoke)
    embedder = make_embedder("local")
    cache = EmbeddingCache(CACHE)
    config = AnalysisConfig()
    if args.smoke:  # nothing here reads the questions the bundled model writes for the gaps
        config = dataclasses.replace(config, gaps=dataclasses.replace(config.gaps, local_model=False))
    kinds = {
        "PDF": sum(d.name.endswith(".pdf") for d in foreign),
        "Python reference": sum(d.name.startswith("python-") for d in foreign),
        "scikit-learn": sum(d.name.startswith("sklearn-") for d in foreign),
    }
    print(f"foreign documents: {len(foreign)} ("
          + ", ".join(f"{n} {k}" for k, n in kinds.items()) + f"); "
          f"wiki-qa: {len(articles)} articles, {len(data.question_texts)} questions")

    def run(documents, questions):
        return analyze(config, documents, question_set(questions),
                                embedder=embedder, cache=cache)

    print("\n== Untested documents (foreign documents have no questions)")
    header = (f"{'untested':>8} {'docs':>5} {'P':>5} {'R':>5}  {'gaps':>9} "
              f"{'gap share':>9}  {'main topic a gap':>16}  {'passages in gaps':>16}  {'tau':>5}")
    print(header)
    print("-" * len(header))
    for level in UNTESTED_LEVELS:
        figures = []
        for seed in SEEDS:
            rng = np.random.default_rng(100 * seed + int(100 * level))
            n_foreign = round(level * N_DOCUMENTS)
            chosen_foreign = [foreign[i] for i in rng.choice(len(foreign), n_foreign, replace=False)]
            titles = sorted(rng.choice(sorted(articles), N_DOCUMENTS - n_foreign, replace=False))
            documents = [articles[t] for t in titles] + chosen_foreign
            questions = [q for q, a in zip(data.question_texts, data.question_article) if a in titles]
            analysis = run(documents, questions)
            table = analysis.documents
            truth = table["document"].isin([d.name for d in chosen_foreign]).to_numpy()
            flagged = table["is_untested"].to_numpy(dtype=bool)
            p, r, _ = prf(truth, flagged)
            clusters = analysis.clusters
            labels = analysis.clustering.labels
            chunk_docs = np.array(analysis.corpus.chunk_documents)
            gap_ids = set(clusters.loc[clusters["is_gap"], "cluster"].astype(int))
            foreign_chunks = np.isin(chunk_docs, [d.name for d in chosen_foreign])
            in_gaps = [
                np.bincount(labels[chunk_docs == d.name]).argmax() in gap_ids
                for d in chosen_foreign if (chunk_docs == d.name).any()
            ]
            passages_in_gaps = np.isin(labels[foreign_chunks], sorted(gap_ids)).mean()
            figures.append((p, r, len(gap_ids), len(clusters), float(np.mean(in_gaps)),
                            passages_in_gaps, analysis.calibration.support_threshold))
        f = np.array(figures)
        m = f.mean(axis=0)
        print(f"{level:>8.0%} {N_DOCUMENTS:>5} {m[0]:>5.2f} {m[1]:>5.2f}  "
              f"{m[2]:>4.1f}/{m[3]:<4.1f} {m[2] / m[3]:>9.0%}  {m[4]:>16.0%}  {m[5]:>16.0%}  "
              f"{m[6]:>5.3f}")
    print(f"mean over {len(SEEDS)} seeds; gap share = clusters marked is_gap / clusters; "
          "main topic a gap = untested (foreign) documents whose main cluster is a gap; "
          "passages in gaps = their passages that lie in gap clusters.")

    print("\n== Off-topic questions (corpus: every foreign document + the kept kinds of "
          "wiki-qa article)")
    header = f"{'mix':>5} {'off/total':>10} {'P':>5} {'R':>5} {'minP':>5} {'minR':>5}  {'tau':>5} {'q-lvl':>5}"
    print(header)
    print("-" * len(header))
    for mix in OFF_TOPIC_MIXES:
        figures = []
        for seed in SEEDS:
            rng = np.random.default_rng(1000 * seed + int(100 * mix) + 3)
            removed_kinds = rng.choice(sorted(KINDS), size=KINDS_REMOVED[mix], replace=False)
            removed = {t for k in removed_kinds for t in KINDS[k]}
            kept = sorted(t for t in articles if t not in removed)
            question_article = data.question_article
            on_pool = np.flatnonzero(np.isin(question_article, kept))
            off_pool = np.flatnonzero(np.isin(question_article, sorted(removed) + list(ALWAYS_OFF_TOPIC)))
            n_on, n_off = len(on_pool), len(off_pool)
            # Keep the sets near the wiki-qa ones in size (about 400 questions).
            n_total = min(MAX_QUESTIONS, round(n_on / (1 - mix)), round(n_off / mix))
            n_off = round(mix * n_total)
            n_on = n_total - n_off
            picked = np.r_[rng.choice(on_pool, n_on, replace=False), rng.choice(off_pool, n_off, replace=False)]
            truth = np.r_[np.zeros(n_on, bool), np.ones(n_off, bool)]
            questions = [data.question_texts[i] for i in picked]
            analysis = run([articles[t] for t in kept] + foreign, questions)
            # QuestionSet keeps file order; map flags back by text (questions are distinct).
            flagged_text = {q.text for q, out in zip(analysis.questions.questions, analysis.is_outlier) if out}
            flagged = np.array([q in flagged_text for q in questions])
            p, r, _ = prf(truth, flagged)
            calibration = analysis.calibration
            figures.append((n_off, n_total, p, r, calibration.support_threshold,
                            calibration.question_support_threshold))
        f = np.array(figures)
        m = f.mean(axis=0)
        print(f"{mix:>5.0%} {m[0]:>4.0f}/{m[1]:<5.0f} {m[2]:>5.2f} {m[3]:>5.2f} "
              f"{f[:, 2].min():>5.2f} {f[:, 3].min():>5.2f}  {m[4]:>5.3f} {m[5]:>5.3f}")
    print(f"mean over {len(SEEDS)} seeds (min = worst seed); tau = passages' support level, q-lvl = the "
          "questions' (calibration.question_support_threshold), which the off-topic rule reads.")
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
