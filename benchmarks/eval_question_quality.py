"""Are the built-in writer's kept questions usable as written? Questions and passages for a person to label.

For two development sets, the analysis runs with its default settings on
documents of which only some have test questions, so gaps exist; the
bundled model (:mod:`coverage_core.suggest.local_model`) then writes for
every gap, and the keep rule (:mod:`coverage_core.suggest.writing`) keeps
or drops each question. Of the kept questions, ``--per-set`` are drawn with
a fixed seed and written to a CSV beside their full source passage, for a
person to read as a tester would and label usable-as-written or not (the
labels live in ``benchmarks/question_quality/labels_*.csv``;
``--labels`` prints the usable rate of a labelled CSV).

The sets:

* ``wiki``: wiki-qa (``../shared/data/wiki-qa``), the first 16 articles of
  the tuning half A, questions kept for the first 6, 10 passages asked
  about per gap (5 is the default);
* ``docs``: docs-qa (``benchmarks/devsets/docs-qa``, government service
  pages, the kind of PDF set issue 47 came from), all 36 pages, questions
  kept for the first 12, 10 passages asked about per gap (5 is the default).

Two more, held out from the wording rules (``--sets sci fin``), each with
questions kept for some documents and 10 passages asked about per gap:

* ``sci``: sci-qa (``benchmarks/devsets/sci-qa``, PubMed abstracts), all 34
  documents, questions kept for the first 10;
* ``fin``: fin-qa (``benchmarks/devsets/fin-qa``, annual-report excerpts),
  all 60 documents, questions kept for the first 20.

``--gaps N`` writes for the N most urgent gaps of each set only (a run of
every gap of sci-qa takes hours on two cores).

The same script measures the writer before a change: run it with an older
checkout first on the path (``git worktree add /tmp/before HEAD``)::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH=/tmp/before .venv/bin/python \
        benchmarks/eval_question_quality.py --out benchmarks/question_quality/before.csv
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python \
        benchmarks/eval_question_quality.py --out benchmarks/question_quality/after.csv
    .venv/bin/python benchmarks/eval_question_quality.py --labels benchmarks/question_quality/labels_after.csv

``--smoke``: the 4 shortest of those wiki-qa articles, 2 of them tested, one
passage per gap, at most 2 gaps written, 3 questions drawn: a check that the
script still runs, in about a minute; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import inspect
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# First, so that a checkout put first on PYTHONPATH is the one measured (eval_languages puts this project on the path).
import coverage_core  # noqa: I001

sys.path.insert(0, str(Path(__file__).resolve().parent))

import verdict_scenarios as scenarios  # noqa: E402
from eval_languages import load_folder  # noqa: E402
from eval_suggestions import question_set  # noqa: E402
from shared_data import PROJECT  # noqa: E402

from coverage_core.config import AnalysisConfig  # noqa: E402
from coverage_core.embedding_steps import build_embedder  # noqa: E402
from coverage_core.embeddings.cache import EmbeddingCache  # noqa: E402
from coverage_core.gap_finding import with_gaps  # noqa: E402
from coverage_core.session import analyze, choose_embedding  # noqa: E402
from coverage_core.suggest import local_model  # noqa: E402
from coverage_core.types import Document  # noqa: E402

DEVSETS = PROJECT / "benchmarks" / "devsets"
SETS = {"wiki": (16, 6, 10), "docs": (36, 12, 10), "sci": (34, 10, 10), "fin": (60, 20, 10)}
"""Set: (articles in the corpus, articles whose questions are kept, passages asked about per gap). 10
passages per gap (5 is the default) give more kept questions to draw from."""
SEED = 0
SMOKE = {"wiki": (4, 2, 1)}
"""``--smoke``: the 4 shortest articles, 2 tested, 1 passage per gap (and at most 2 gaps written)."""
COLUMNS = ("set", "item", "gap", "document", "chunk", "question", "passage")


def patient_writer() -> None:
    """Give the bundled model 10 minutes a reply instead of 60 s: on two cores shared with other work a reply can
    take minutes, and a timeout would stop the writer and leave drafts, measuring the machine instead."""
    config = local_model.LocalModelServer.config

    def patient(self, temperature: float = 0.2, timeout: float = 600):
        return config(self, temperature, timeout)

    local_model.LocalModelServer.config = patient


def set_inputs(name: str, smoke: bool = False):
    """The set's documents and the questions of its first few articles (the others are untested)."""
    n_articles, n_asked, _ = (SMOKE if smoke else SETS)[name]
    if name == "wiki":
        data = scenarios.load()
        titles = scenarios.corpus_titles(data, scenarios.halves(data)["A"], SETS[name][0])
        if smoke:  # the shortest, in their order
            shortest = set(sorted(titles, key=lambda title: (len(data.articles[title]), title))[:n_articles])
            titles = [title for title in titles if title in shortest]
    else:
        data = load_folder(DEVSETS / f"{name}-qa")
        titles = sorted(data.articles)[:n_articles]
    documents = [Document(name=scenarios.file_name(t), text=data.articles[t]) for t in titles]
    return documents, question_set([q for t in titles[:n_asked] for q in data.of(t)])


def written_questions(name: str, cache_dir: Path, smoke: bool = False, n_gaps: int = 10_000) -> tuple[list[dict], dict]:
    """Every kept question the bundled model wrote for the set's gaps, with its passage, and the run's figures."""
    documents, questions = set_inputs(name, smoke)
    config, _ = choose_embedding(AnalysisConfig(), documents, questions)
    embedder = build_embedder(config.embedding)
    cache = EmbeddingCache(cache_dir)
    drafts_only = dataclasses.replace(config, gaps=dataclasses.replace(config.gaps, local_model=False))
    measured = analyze(drafts_only, documents, questions, embedder=embedder, cache=cache)
    # Every gap is written for, whatever the default of the code measured (it was 8 gaps before issue 47).
    n_passages = (SMOKE if smoke else SETS)[name][2]
    config = dataclasses.replace(config, gaps=dataclasses.replace(
        config.gaps, n_written_gaps=2 if smoke else n_gaps, n_passages=n_passages, n_suggestions=n_passages))
    options = {}
    if "progress" in inspect.signature(with_gaps).parameters:
        options["progress"] = lambda done, total, left: print(
            f"  {name}: {done} of {total} gaps written", file=sys.stderr, flush=True)
    started = time.perf_counter()
    gapped = with_gaps(dataclasses.replace(measured, config=config), None, embedder, cache, **options)
    seconds = time.perf_counter() - started
    texts = {i: chunk.text for i, chunk in enumerate(gapped.corpus.chunks)}
    rows = [
        {"set": name, "gap": rank, "document": s.document, "chunk": s.chunk, "question": s.text,
         "passage": texts[s.chunk]}
        for rank, gap in enumerate(gapped.gaps, 1) for s in gap.suggestions if s.origin == "local"
    ]
    figures = {
        "set": name, "code": str(Path(coverage_core.__file__).parent), "gaps": len(gapped.gaps),
        "gaps_written": sum(gap.written for gap in gapped.gaps), "kept": len(rows),
        "dropped": sum(len(gap.dropped) for gap in gapped.gaps),
        "drafts": sum(s.origin == "draft" and bool(s.text) for gap in gapped.gaps for s in gap.suggestions),
        "seconds_writing": round(seconds, 1),
    }
    return rows, figures


def sample(rows: list[dict], n: int, seed: int) -> list[dict]:
    """``n`` of ``rows`` drawn with ``seed``, in their order (all of them when there are fewer)."""
    if len(rows) <= n:
        return rows
    chosen = np.sort(np.random.default_rng(seed).choice(len(rows), size=n, replace=False))
    return [rows[i] for i in chosen]


def usable_rate(labels: Path, questions: Path | None = None) -> dict:
    """Usable share per set of a labelled CSV (columns ``set``, ``usable`` yes/no, ``reason``); with the drawn
    ``questions`` CSV beside it, only of the questions today's English wording check keeps against their passage
    (:func:`~coverage_core.suggest.question_form.form_reason`): what a change of that check does to the share."""
    with labels.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    if questions is not None:
        from coverage_core.suggest.question_form import form_reason

        with questions.open(encoding="utf-8", newline="") as handle:
            passages = {(row["set"], row["item"]): row["passage"] for row in csv.DictReader(handle)}
        rows = [row for row in rows if not form_reason(row["question"], passages[row["set"], row["item"]])]
    result = {}
    for name in sorted({row["set"] for row in rows}) + ["all"]:
        own = [row for row in rows if name in ("all", row["set"])]
        usable = sum(row["usable"].strip().lower() == "yes" for row in own)
        result[name] = {"labelled": len(own), "usable": usable, "rate": round(usable / max(1, len(own)), 3)}
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=["wiki", "docs"], choices=list(SETS))
    parser.add_argument("--per-set", type=int, default=50)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--gaps", type=int, default=10_000, help="write for at most this many gaps per set, most "
                        "urgent first (default: every gap)")
    parser.add_argument("--out", type=Path, help="the CSV of drawn questions and their passages")
    parser.add_argument("--cache-dir", type=Path, help="embedding (and written-question) cache; default: a new "
                        "temporary folder, so every question is written in this run")
    parser.add_argument("--labels", type=Path, help="print the usable rate of this labelled CSV and stop")
    parser.add_argument("--questions", type=Path, help="with --labels: the drawn questions' CSV; also print the rate "
                        "of the questions today's wording check keeps")
    parser.add_argument("--smoke", action="store_true", help="a quick check that the script still runs (tiny data, "
                        "about a minute; tests/test_benchmarks_smoke.py runs it): its figures mean nothing")
    args = parser.parse_args(argv)
    if args.smoke:
        args.sets, args.per_set = ["wiki"], 3
    if args.labels:
        print(json.dumps(usable_rate(args.labels)))
        if args.questions:
            print(json.dumps({"kept by today's wording check": usable_rate(args.labels, args.questions)}))
        return
    patient_writer()
    drawn = []
    with tempfile.TemporaryDirectory() as temporary:
        cache_dir = args.cache_dir or Path(temporary)
        for name in args.sets:
            rows, figures = written_questions(name, cache_dir, args.smoke, args.gaps)
            picked = sample(rows, args.per_set, args.seed)
            figures["drawn"] = len(picked)
            print(json.dumps(figures), flush=True)
            drawn += picked
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS)
            writer.writeheader()
            for item, row in enumerate(drawn, 1):
                writer.writerow({**row, "item": item})


if __name__ == "__main__":
    main()
