"""Every language (issue 20): the verdicts on French, Chinese and English sets, per embedding model.

Run from the project root::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python benchmarks/eval_languages.py \\
        [--sets fr zh en] [--embedders local use e5 auto] [--halves A B] [--seeds 2] [--json PATH] [--smoke]

``--smoke``: wiki-qa with the local model, the 3 shortest articles of half B, one seed, no gap questions written.

The sets are ``fr-qa`` and ``zh-qa`` (34 Wikipedia articles each, 25
questions written in the language per article) and their English twin
``wiki-qa`` (55 articles; the ``Zebra`` questions, which have no article, are
left out), all in ``../shared/data`` (see its README). Each set's articles are
split once into half A (tuning) and half B (held out: the figure to quote) by
``verdict_scenarios.halves`` (a seeded shuffle of the sorted titles).

Every analysis is run as ``python -m coverage_core analyze`` runs it: the
scenario is written to a folder (one ``.txt`` per article, ``questions.csv``),
read back with ``read_documents`` / ``read_questions``, analysed with
``session.analyze`` under the default ``AnalysisConfig`` (only the embedding
provider changes) and its JSON report (``outputs.report.build_report``)
written and read back; every figure comes from that JSON, so the work of
other changes (multilingual models, chunking, topic labels) shows here
unchanged. Per half and embedder:

* **clean**: every article of the half, every question written for them.
  Calibration (``calibration.separation`` / ``reliable`` / τ / probes), the
  retrieval check of the product (``checks.runner.run_retrieval_check`` on the
  ``source`` column: hit@1, hit@5), the share of genuine questions flagged
  off-topic, the topic labels (``clusters[].label``) and the share of their
  terms that are stop words of the set's language
  (``coverage_core.languages.stop_words``; a term counts when it, or every
  word unit of it, is one).
* **off-topic 8% / 45%**: ``ceil(rate × articles)`` articles of the half
  leave the corpus; their questions are off-topic, the others' on-topic,
  subsampled (``verdict_scenarios.subsample``) to that rate; ``--seeds`` seeds,
  precision / recall of ``questions[].is_outlier`` pooled over the seeds.
* **untested**: every article in the corpus, the questions of
  ``N_UNTESTED`` (seeded) articles removed; precision / recall of
  ``documents[].is_untested`` against them.
* **throughput**: texts per second of each embedder on (at most
  ``--timing-chunks``) chunks of the half's clean corpus, on an emptied cache
  (``/tmp/eval_languages_timing_<embedder>``) with the model already loaded;
  the ratio is to the local MiniLM's rate on the same texts.

An embedder name that ``make_embedder`` does not know yet (``use``, ``e5``,
``auto`` before they are registered) is skipped with a one-line note.
Embeddings are cached in ``$EVAL_LANGUAGES_CACHE`` (default
``/tmp/eval_languages_cache``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import verdict_scenarios as scenarios  # noqa: E402
from eval_verdicts import plain, precision_recall, ratio  # noqa: E402
from shared_data import SHARED_DATA, SMOKE_HELP, require, shortest  # noqa: E402
from verdict_scenarios import subsample as _subsample  # noqa: E402

CACHE = Path(os.environ.get("EVAL_LANGUAGES_CACHE", "/tmp/eval_languages_cache"))
WORKDIR = Path(os.environ.get("EVAL_LANGUAGES_WORKDIR", "/tmp/eval_languages_work"))
TIMING_CACHE = "/tmp/eval_languages_timing_{}"
SETS = {"fr": ("fr-qa", "fr"), "zh": ("zh-qa", "zh"), "en": ("wiki-qa", "en")}
"""Set name: (folder under the shared data, ISO 639-1 code of its language)."""
AUTO = "auto"
EMBEDDERS = ("local", "use", "e5", AUTO)
BASELINE = "local"
OFFTOPIC_RATES = (0.08, 0.45)
N_UNTESTED = 5
N_LABELS_SHOWN = 5
COLUMN_WIDTH = 16
RETRIEVAL_KS = (1, 5)
RELEVANT_COLUMN = "source"

MIN_HIT_AT_5 = 0.95
MAX_GENUINE_FLAGGED = 0.05
MIN_PRECISION = 0.9
MIN_RECALL = 0.8
MAX_FALSE_UNTESTED = 1
MAX_STOP_WORD_SHARE = 0.0
SMOKE_ARTICLES = 3


# ---------------------------------------------------------------- the data
def load_set(name: str) -> scenarios.WikiQA:
    """The set's articles and its questions (columns ``title``, ``question``), each question once,
    only questions whose article is present."""
    folder, _ = SETS[name]
    if name == "en":
        data = scenarios.load()
        questions = data.questions
        articles = data.articles
    else:
        return load_folder(require(SHARED_DATA / folder))
    questions = questions[questions["title"].isin(articles)].reset_index(drop=True)
    return scenarios.WikiQA(articles, questions)


def load_folder(root: Path) -> scenarios.WikiQA:
    """A set in the fr-qa layout (``articles/*.txt``, ``questions.csv`` with ``ArticleTitle``, ``Question``):
    each question once, only questions whose article is present."""
    articles = {p.stem: p.read_text(encoding="utf-8") for p in sorted((root / "articles").glob("*.txt"))}
    frame = pd.read_csv(root / "questions.csv", dtype=str, keep_default_na=False, encoding="utf-8")
    frame["Question"] = frame["Question"].str.strip()
    frame = frame[frame["Question"] != ""].drop_duplicates("Question")
    questions = frame.rename(columns={"ArticleTitle": "title", "Question": "question"})[["title", "question"]]
    questions = questions[questions["title"].isin(articles)].reset_index(drop=True)
    return scenarios.WikiQA(articles, questions)


@dataclass
class Case:
    """One analysis: documents, questions with the article each was written for (None: off-topic), the truth."""

    name: str
    titles: list[str]
    questions: list[str]
    sources: list[str | None]
    untested: set[str] = field(default_factory=set)

    @property
    def off_topic(self) -> np.ndarray:
        return np.array([s is None for s in self.sources], dtype=bool)


def clean_case(data: scenarios.WikiQA, half: list[str]) -> Case:
    titles = [t for t in half if data.of(t)]
    rows = [(q, t) for t in titles for q in data.of(t)]
    return Case("clean", titles, [q for q, _ in rows], [t for _, t in rows])


def offtopic_case(data: scenarios.WikiQA, half: list[str], rate: float, seed: int) -> Case:
    """``ceil(rate × n)`` articles leave the corpus; their questions are off-topic, mixed in at ``rate``."""
    titles = [t for t in half if data.of(t)]
    rng = np.random.default_rng(1000 * seed + int(round(100 * rate)))
    removed = set(rng.choice(titles, size=math.ceil(rate * len(titles)), replace=False).tolist())
    kept = [t for t in titles if t not in removed]
    on = [(q, t) for t in kept for q in data.of(t)]
    off = [(q, None) for t in sorted(removed) for q in data.of(t)]
    index, _ = _subsample(rng, np.arange(len(on)), len(on) + np.arange(len(off)), rate)
    rows = [(on + off)[i] for i in rng.permutation(index)]
    return Case(f"offtopic {rate:.0%} seed {seed}", kept, [q for q, _ in rows], [t for _, t in rows])


def untested_case(data: scenarios.WikiQA, half: list[str], seed: int = 0) -> Case:
    titles = [t for t in half if data.of(t)]
    rng = np.random.default_rng(30_000 + seed)
    silent = set(rng.choice(titles, size=min(N_UNTESTED, len(titles) - 1), replace=False).tolist())
    rows = [(q, t) for t in titles if t not in silent for q in data.of(t)]
    return Case("untested", titles, [q for q, _ in rows], [t for _, t in rows],
                {scenarios.file_name(t) for t in silent})


# ---------------------------------------------------------------- running the product
def without_writer(config):
    """``config`` with the bundled model writing no gap questions (``--smoke``: nothing reads them, and it is slow)."""
    import dataclasses

    return dataclasses.replace(config, gaps=dataclasses.replace(config.gaps, local_model=False))


class Runner:
    """Analyses cases as the CLI does, with one embedder and one embedding cache."""

    def __init__(self, provider: str, cache_dir: Path = CACHE, workdir: Path = WORKDIR):
        from coverage_core.config import AnalysisConfig, EmbeddingConfig
        from coverage_core.embedding_steps import build_embedder
        from coverage_core.embeddings import EmbeddingCache

        self.provider = provider
        self.config = AnalysisConfig(embedding=EmbeddingConfig(provider=provider))
        self.embedder = build_embedder(self.config.embedding)  # InputError for an unregistered provider
        # "auto" is resolved by the analysis from the texts' languages, as the CLI's default does.
        self.analysis_embedder = None if provider == AUTO else self.embedder
        self.cache = EmbeddingCache(cache_dir)
        self.workdir = workdir
        self.chunk_texts: list[str] = []

    def report(self, data: scenarios.WikiQA, case: Case, label: str) -> dict:
        """The JSON report of the case, read back from disk; the clean case adds ``retrieval_hits`` {k: hit@k}."""
        from coverage_core.checks.runner import run_retrieval_check
        from coverage_core.inputs.ingest import read_documents
        from coverage_core.inputs.questions import read_questions
        from coverage_core.outputs.report import build_report, write_report
        from coverage_core.session import analyze

        started = time.perf_counter()
        folder = scenarios.case_folder(self.workdir, f"{label} {self.provider} {case.name}")
        relevant = [scenarios.file_name(s) if s else "" for s in case.sources]
        scenarios.write_case(folder, data, case.titles,
                             pd.DataFrame({"question": case.questions, RELEVANT_COLUMN: relevant}))
        documents = read_documents([folder / "docs"])
        questions = read_questions(folder / "questions.csv", question_column="question")
        analysis = analyze(self.config, documents.documents, questions, embedder=self.analysis_embedder,
                           cache=self.cache)
        hits = {}
        if case.name == "clean":
            for k in RETRIEVAL_KS:
                result = run_retrieval_check(analysis, RELEVANT_COLUMN, k)
                hits[k] = None if result is None else float(result.hit_at_k)
            self.chunk_texts = [chunk.text for chunk in analysis.corpus.chunks]
        inputs = {"documents": [d.name for d in documents.documents], "questions_file": "questions.csv",
                  "question_column": questions.question_column, "llm_model": None}
        write_report(build_report(analysis, inputs), folder / "report.json")
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        report["retrieval_hits"] = hits
        report["seconds"] = time.perf_counter() - started
        print(f"  {label} {self.provider} {case.name}: {len(case.titles)} documents, {len(case.questions)} "
              f"questions, {report['summary']['n_chunks']} passages ({report['seconds']:.0f} s)",
              file=sys.stderr, flush=True)
        return report

    def throughput(self, texts: list[str]) -> float:
        """Texts per second embedding ``texts`` on an emptied cache of its own (the model already loaded)."""
        from coverage_core.embeddings import EmbeddingCache, embed_texts

        folder = Path(TIMING_CACHE.format(self.provider))
        shutil.rmtree(folder, ignore_errors=True)
        started = time.perf_counter()
        embed_texts(texts, self.embedder, EmbeddingCache(folder))
        seconds = time.perf_counter() - started
        shutil.rmtree(folder, ignore_errors=True)
        return len(texts) / seconds


# ---------------------------------------------------------------- reading the reports
def flagged(report: dict, n: int) -> np.ndarray:
    by_row = {q["row"]: bool(q["is_outlier"]) for q in report["questions"]}
    return np.array([by_row[i] for i in range(n)], dtype=bool)


def label_terms(report: dict) -> list[str]:
    from coverage_core.stages.topics import LABEL_SEPARATOR

    return [term.strip() for c in report["clusters"] for term in str(c.get("label") or "").split(LABEL_SEPARATOR)
            if term.strip()]


def is_stop_term(term: str, stop: frozenset[str]) -> bool:
    """Whether a label term is a stop word: the term itself, or every word unit of it (Chinese: character pairs)."""
    from coverage_core.languages import word_units

    lowered = term.lower()
    units = word_units(lowered).split()
    return lowered in stop or bool(units) and all(unit in stop for unit in units)


def evaluate_half(runner: Runner, data: scenarios.WikiQA, half: list[str], code: str, label: str,
                  seeds: int) -> dict[str, Any]:
    """Every figure of one half with one embedder."""
    from coverage_core.languages import stop_words

    out: dict[str, Any] = {}
    case = clean_case(data, half)
    report = runner.report(data, case, label)
    calibration = report.get("calibration", {})
    embedding = report.get("config", {}).get("embedding", {})
    out["model"] = str(embedding.get("model") or f"{embedding.get('provider')} default")[:COLUMN_WIDTH]
    out["separation"] = calibration.get("separation")
    out["reliable"] = calibration.get("reliable")
    out["tau"] = calibration.get("support_threshold")
    out["probes"] = calibration.get("n_probes")
    out["method"] = calibration.get("method")
    out["reason"] = calibration.get("reason") or None
    for k, hit in report["retrieval_hits"].items():
        out[f"hit@{k}"] = hit
    out["genuine_flagged"] = float(flagged(report, len(case.questions)).mean())
    reasons = Counter(str(q.get("offtopic_reason") or "?") for q in report["questions"] if q["is_outlier"])
    out["flag_reasons"] = dict(reasons)
    out["flag_reasons_short"] = " ".join(f"{''.join(w[0] for w in r.split('_'))}{n}" for r, n in reasons.most_common())
    out["n_chunks"] = report["summary"]["n_chunks"]
    out["n_questions"] = len(case.questions)
    stop = stop_words([code])
    terms = label_terms(report)
    stop_terms = [t for t in terms if is_stop_term(t, stop)]
    out["label_stop_share"] = ratio(len(stop_terms), len(terms)) if terms else None
    out["label_stop_terms"] = sorted(set(stop_terms))
    out["labels"] = [c.get("label") or "" for c in report["clusters"]][:N_LABELS_SHOWN]
    seconds = [report["seconds"]]

    for rate in OFFTOPIC_RATES:
        counts: Counter = Counter()
        for seed in range(seeds):
            case = offtopic_case(data, half, rate, seed)
            report = runner.report(data, case, label)
            seconds.append(report["seconds"])
            truth, flags = case.off_topic, flagged(report, len(case.questions))
            counts.update(tp=int((truth & flags).sum()), flagged=int(flags.sum()), off=int(truth.sum()),
                          n=len(truth))
        out[f"offtopic_{rate:.0%}_precision"] = ratio(counts["tp"], counts["flagged"])
        out[f"offtopic_{rate:.0%}_recall"] = ratio(counts["tp"], counts["off"])
        out[f"offtopic_{rate:.0%}_sizes"] = f"{counts['off']}/{counts['n']}"

    case = untested_case(data, half)
    report = runner.report(data, case, label)
    seconds.append(report["seconds"])
    found = {d["name"] for d in report["documents"] if d.get("is_untested")}
    out["untested_found"] = len(found & case.untested)
    out["untested_truth"] = len(case.untested)
    out["untested_false"] = len(found - case.untested)
    out["untested_precision"], out["untested_recall"] = precision_recall(found, case.untested)
    out["analysis_seconds"] = float(sum(seconds))
    return out


# ---------------------------------------------------------------- the table
ROWS = (
    # (key, measure, target, rule)
    ("model", "model (as the report names it)", "", None),
    ("separation", "calibration separation (J at tau)", "", None),
    ("reliable", "calibration reliable", "True", lambda v: v is True),
    ("tau", "tau (support threshold)", "", None),
    ("probes", "calibration probes", "", None),
    ("hit@1", "retrieval hit@1", "", None),
    ("hit@5", "retrieval hit@5", f">= {MIN_HIT_AT_5}", lambda v: v >= MIN_HIT_AT_5),
    ("genuine_flagged", "clean: genuine flagged off-topic", f"<= {MAX_GENUINE_FLAGGED:.0%}",
     lambda v: v <= MAX_GENUINE_FLAGGED),
    ("flag_reasons_short", "  by reason (initials: count)", "", None),
    *(row for rate in OFFTOPIC_RATES for row in (
        (f"offtopic_{rate:.0%}_precision", f"off-topic {rate:.0%}: precision", f">= {MIN_PRECISION}",
         lambda v: v >= MIN_PRECISION),
        (f"offtopic_{rate:.0%}_recall", f"off-topic {rate:.0%}: recall", f">= {MIN_RECALL}",
         lambda v: v >= MIN_RECALL),
        (f"offtopic_{rate:.0%}_sizes", f"off-topic {rate:.0%}: off/total", "", None),
    )),
    ("untested_found", f"untested found (of {N_UNTESTED})", "all", "all"),
    ("untested_false", "untested false flags", f"<= {MAX_FALSE_UNTESTED}", lambda v: v <= MAX_FALSE_UNTESTED),
    ("untested_precision", "untested precision", "", None),
    ("untested_recall", "untested recall", "", None),
    ("label_stop_share", "label terms that are stop words", f"<= {MAX_STOP_WORD_SHARE:g}",
     lambda v: v <= MAX_STOP_WORD_SHARE),
    ("texts_per_second", "throughput (texts/s, cold cache)", "", None),
    ("throughput_ratio", f"throughput / {BASELINE}", "", None),
    ("n_chunks", "passages (clean corpus)", "", None),
    ("analysis_seconds", "analysis seconds (all cases)", "", None),
)


def judge(key: str, rule, value: Any, figures: dict) -> bool | None:
    if rule is None or value is None:
        return None
    if rule == "all":
        return value == figures.get("untested_truth")
    return bool(rule(value))


def cell(value: Any, ok: bool | None) -> str:
    if value is None:
        text = "n/a"
    elif isinstance(value, bool):
        text = str(value)
    elif isinstance(value, float):
        text = f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
    else:
        text = str(value)
    return text + ("" if ok is None else " ok" if ok else " FAIL")


def print_table(set_name: str, results: dict[tuple[str, str], dict]) -> None:
    columns = list(results)
    width = max(len(m) for _, m, _, _ in ROWS)
    heads = [f"{provider} {half}{'*' if half == 'B' else ''}" for provider, half in columns]
    print(f"\n== {set_name}  (* half B: held out; A: tuning)")
    print(f"{'measure':<{width}}  {'target':<8}  " + "  ".join(f"{h:>{COLUMN_WIDTH}}" for h in heads))
    print("-" * (width + 12 + (COLUMN_WIDTH + 2) * len(heads)))
    for key, measure, target, rule in ROWS:
        cells = [cell(results[c].get(key), judge(key, rule, results[c].get(key), results[c])) for c in columns]
        print(f"{measure:<{width}}  {target:<8}  " + "  ".join(f"{v:>{COLUMN_WIDTH}}" for v in cells))
    for column in columns:
        figures = results[column]
        provider, half = column
        notes = []
        if figures.get("method") and figures["method"] != "pseudo-queries":
            notes.append(f"calibration method {figures['method']!r}")
        if figures.get("reason"):
            notes.append(f"reason: {figures['reason']}")
        if figures.get("label_stop_terms"):
            notes.append(f"stop-word label terms: {', '.join(figures['label_stop_terms'][:10])}")
        print(f"{provider} {half} labels: " + " | ".join(figures["labels"]))
        for note in notes:
            print(f"    {note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", choices=tuple(SETS), default=["fr", "zh", "en"])
    parser.add_argument("--embedders", nargs="+", default=list(EMBEDDERS),
                        help="providers to compare (unregistered ones are skipped with a note)")
    parser.add_argument("--halves", nargs="+", choices=("A", "B"), default=["A", "B"])
    parser.add_argument("--seeds", type=int, default=2, help="seeds per off-topic rate")
    parser.add_argument("--timing-chunks", type=int, default=100,
                        help="chunks embedded for the throughput (0: no timing)")
    parser.add_argument("--json", metavar="PATH", help="write every number here")
    parser.add_argument("--smoke", action="store_true", help=f"wiki-qa, local model, half B's {SMOKE_ARTICLES} "
                        "shortest articles, one seed, no gap questions written: " + SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        args.sets, args.embedders, args.halves, args.seeds, args.timing_chunks = ["en"], ["local"], ["B"], 1, 8

    from coverage_core.errors import InputError

    started = time.perf_counter()
    runners: dict[str, Runner] = {}
    skipped: dict[str, str] = {}
    for provider in dict.fromkeys(args.embedders):
        try:
            runners[provider] = Runner(provider)
            if args.smoke:
                runners[provider].config = without_writer(runners[provider].config)
        except (InputError, ImportError, OSError) as error:
            skipped[provider] = str(error).splitlines()[0]
            print(f"skipping embedder {provider!r}: {skipped[provider]}")
    timing_baseline = runners.get(BASELINE)
    if args.timing_chunks and timing_baseline is None and runners:
        try:
            timing_baseline = Runner(BASELINE)
        except (InputError, ImportError, OSError):
            timing_baseline = None

    everything: dict[str, dict] = {}
    for set_name in args.sets:
        data = load_set(set_name)
        code = SETS[set_name][1]
        half_titles = scenarios.halves(data)
        if args.smoke:
            half_titles = {half: shortest(titles, data.articles, SMOKE_ARTICLES) for half, titles in half_titles.items()}
        print(f"{SETS[set_name][0]}: {len(data.articles)} articles, {len(data.questions)} questions; "
              f"half A {len(half_titles['A'])}, half B {len(half_titles['B'])} articles", file=sys.stderr, flush=True)
        results: dict[tuple[str, str], dict] = {}
        for provider, runner in runners.items():
            for half in args.halves:
                figures = evaluate_half(runner, data, half_titles[half], code, f"{set_name} {half}", args.seeds)
                # "auto" embeds with one of the others: its speed is theirs.
                timed = args.timing_chunks and provider != AUTO and runner.chunk_texts
                if timed and half == args.halves[-1]:
                    step = max(1, len(runner.chunk_texts) // args.timing_chunks)
                    texts = runner.chunk_texts[::step][:args.timing_chunks]
                    rate = runner.throughput(texts)
                    base = rate if runner is timing_baseline else (
                        timing_baseline.throughput(texts) if timing_baseline else None)
                    figures["texts_per_second"] = rate
                    figures["throughput_ratio"] = rate / base if base else None
                    figures["timing_texts"] = len(texts)
                results[provider, half] = figures
        if results:
            print_table(SETS[set_name][0], results)
        everything[set_name] = {f"{provider} {half}": figures for (provider, half), figures in results.items()}

    runtime = time.perf_counter() - started
    print(f"\nembedders run: {', '.join(runners) or 'none'}"
          + (f"; skipped: {', '.join(skipped)}" if skipped else "") + f"; {runtime:.0f} s in all")
    if args.json:
        payload = {"runtime_seconds": round(runtime, 1), "skipped": skipped, "seeds": args.seeds,
                   "halves": args.halves, "results": everything}
        Path(args.json).write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=plain), encoding="utf-8")
        print(f"numbers written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
