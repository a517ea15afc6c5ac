"""Off-topic screening and untested documents on every development set: one table, and each rule's share.

Run from the project root::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python benchmarks/eval_offtopic.py \\
        [--sets wiki-qa docs-qa sci-qa fin-qa fr-qa zh-qa de-qa] [--half A|B] [--seeds 1] \\
        [--json PATH] [--markdown PATH] [--smoke]

``--smoke`` runs the 5 shortest articles of wiki-qa's half B with one seed (seconds, once
the embeddings are cached): a check that the script runs, not a figure to quote.

What it measures, per set (``SETS``: the English wiki-qa and its French and
Chinese twins fr-qa and zh-qa in ``../shared/data``; docs-qa, sci-qa, fin-qa
and de-qa in ``benchmarks/devsets``, all in the fr-qa layout; a set whose
``questions.csv`` is missing is skipped with a one-line note). Its articles
are split into half A (tuning) and half B (held out, the default: the figure
to quote) by ``verdict_scenarios.halves``; only articles with questions take
part. Variants of the half:

* **clean**: every article, every question written for it; the share of
  these genuine questions flagged off-topic (target <= 5%).
* **off-topic 5% / 45%** (``eval_languages.offtopic_case``): ``ceil(rate × n)``
  articles leave the corpus, their questions are the off-topic ones, and
  whichever side is in excess is subsampled so that off-topic questions are
  ``rate`` of the set (at 5% with few articles the removed articles'
  questions are subsampled). Precision (target >= 0.9) and recall
  (target >= 0.8) of the flags, pooled over ``--seeds`` seeds.
* **untested**: every article in the corpus, the questions of
  ``min(5, n // 5)`` seeded articles removed; how many of those documents
  are found untested (target: all) and how many others are wrongly called
  untested (target <= 1). One case per seed.

Every variant is analysed as ``python -m coverage_core analyze`` does it: the
articles are written as ``.txt`` files to a work folder
(``$EVAL_OFFTOPIC_WORKDIR``, default ``/tmp/eval_offtopic_work``) with a
``questions.csv``, read back with ``read_documents`` / ``read_questions`` and
analysed by ``session.analyze`` under the default ``AnalysisConfig`` with the
automatic model choice (``provider="auto"``: MiniLM for English, a
multilingual model for French, Chinese and German, as a user gets), embeddings
cached in ``$EVAL_OFFTOPIC_CACHE`` (default ``/tmp/eval_offtopic_cache``). One
setting differs from the CLI's: the bundled model that writes questions for
the gaps is off (``GapConfig(local_model=False)``, drafts instead): it runs
after the screening and the untested verdicts, nothing here reads its
questions, and it took nine tenths of each analysis. The figures are read
from the ``Analysis`` in memory.

Printed:

1. **The table**: one row per set and a pooled row (counts summed over the
   sets), each cell marked ``ok`` or ``FAIL`` against its target, and whether
   the calibration of the support level was reliable on every analysis.
2. **The ablation**: for each rule of ``coverage_core.offtopic.RULE_NAMES``,
   the off-topic columns with that rule turned off
   (``screener.decide(strictness, without=[rule])``, no refit), as changes
   against all the rules (``screener.decide(strictness)``); ``=`` is no
   change at all, ``n/a`` a rule that does not apply to the set's corpus
   (not in ``screener.rules_.names``). ``explains`` counts the flags the rule
   explains (``screener.flagging_rules``: the first rule that fires) over the
   clean and off-topic analyses, and how many of them are genuine questions.
3. **Misfires**: per set, the five rules that explain most flags on genuine
   questions of the clean variant, with three of those questions each.

Progress (seconds per analysis) goes to stderr; ``--markdown`` writes the
table and the ablation as Markdown (for ``docs/``), ``--json`` every count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "benchmarks"))

import verdict_scenarios as scenarios  # noqa: E402
from eval_languages import Case, clean_case, load_folder, load_set, offtopic_case  # noqa: E402
from shared_data import SHARED_DATA, SMOKE_HELP, WIKI_QA, shortest  # noqa: E402
from verdict_scenarios import KINDS, subsample as _subsample  # noqa: E402,F401  (kept importable from here)

from coverage_core.offtopic.screen import RULE_NAMES  # noqa: E402

CACHE = Path(os.environ.get("EVAL_OFFTOPIC_CACHE", "/tmp/eval_offtopic_cache"))
WORKDIR = Path(os.environ.get("EVAL_OFFTOPIC_WORKDIR", "/tmp/eval_offtopic_work"))
DEVSETS = PROJECT / "benchmarks" / "devsets"
SETS = {
    "wiki-qa": WIKI_QA,
    "fr-qa": SHARED_DATA / "fr-qa",
    "zh-qa": SHARED_DATA / "zh-qa",
    "docs-qa": DEVSETS / "docs-qa",
    "sci-qa": DEVSETS / "sci-qa",
    "fin-qa": DEVSETS / "fin-qa",
    "de-qa": DEVSETS / "de-qa",
}
"""Set name: its folder (wiki-qa has its own layout, read by ``verdict_scenarios.load``)."""
RATES = (0.05, 0.45)
MAX_UNTESTED = 5
UNTESTED_SHARE = 5
"""The untested case silences ``min(MAX_UNTESTED, n // UNTESTED_SHARE)`` of the half's n articles."""
SMOKE_SET, SMOKE_ARTICLES = "wiki-qa", 5
N_MISFIRE_RULES, N_EXAMPLES = 5, 3

MAX_GENUINE_FLAGGED = 0.05
MIN_PRECISION = 0.9
MIN_RECALL = 0.8
MAX_FALSE_UNTESTED = 1

FULL = "full"
"""The analysis's own flags (``analysis.is_outlier``)."""
ALL_RULES = "all rules"
"""``screener.decide(strictness)``: the ablation's reference (equal to ``full`` unless overrides apply)."""
OFFTOPIC_VARIANTS = ("clean", *(f"{rate:.0%}" for rate in RATES))


# ---------------------------------------------------------------- kept for eval_mixes.py
KINDS_REMOVED = {0.05: 1, 0.45: 3, 0.65: 4}
"""Kinds of wiki-qa article (of 6, ``KINDS``) removed from the corpus per off-topic mix (``eval_mixes.py``)."""


def prf(y, flagged) -> tuple[float, float, float]:
    """Precision, recall and F1 of the boolean ``flagged`` against the truth ``y`` (0 for an empty side)."""
    tp = int((y & flagged).sum())
    p = tp / max(int(flagged.sum()), 1)
    r = tp / max(int(y.sum()), 1)
    f = 2 * p * r / max(p + r, 1e-12)
    return p, r, f


# ---------------------------------------------------------------- the sets and their variants
def load(name: str) -> scenarios.WikiQA | None:
    """The set ``name``, or None (with a one-line note on stderr) when its data is not there."""
    folder = SETS[name]
    if name == "wiki-qa":
        if not (folder / "articles").is_dir():
            print(f"skipping {name}: {folder} is missing", file=sys.stderr)
            return None
        return load_set("en")
    if not (folder / "questions.csv").is_file():
        print(f"skipping {name}: {folder / 'questions.csv'} is missing (not built yet?)", file=sys.stderr)
        return None
    return load_folder(folder)


def untested_case(data: scenarios.WikiQA, half: list[str], seed: int = 0) -> Case | None:
    """Every article of the half in the corpus, no question for ``min(5, n // 5)`` of them (None: n < 5)."""
    titles = [t for t in half if data.of(t)]
    size = min(MAX_UNTESTED, len(titles) // UNTESTED_SHARE)
    if size == 0:
        return None
    rng = np.random.default_rng(30_000 + seed)
    silent = set(rng.choice(titles, size=size, replace=False).tolist())
    rows = [(q, t) for t in titles if t not in silent for q in data.of(t)]
    return Case(f"untested seed {seed}", titles, [q for q, _ in rows], [t for _, t in rows],
                {scenarios.file_name(t) for t in silent})


# ---------------------------------------------------------------- running the product
class Analyser:
    """Analyses cases as the CLI does: files on disk, read back, the automatic model choice, one cache."""

    def __init__(self, cache_dir: Path = CACHE, workdir: Path = WORKDIR):
        from coverage_core.config import AnalysisConfig, EmbeddingConfig
        from coverage_core.embeddings import EmbeddingCache
        from coverage_core.suggest.gaps import GapConfig

        # The bundled model writing gap questions is off: nothing here reads them, and it took 90 % of an analysis.
        self.config = AnalysisConfig(embedding=EmbeddingConfig(provider="auto"), gaps=GapConfig(local_model=False))
        self.cache = EmbeddingCache(cache_dir)
        self.workdir = workdir

    def __call__(self, data: scenarios.WikiQA, case: Case, label: str):
        """(analysis, seconds, flags in the case's question order)."""
        from coverage_core.inputs.ingest import read_documents
        from coverage_core.inputs.questions import read_questions
        from coverage_core.session import analyze

        started = time.perf_counter()
        folder = scenarios.case_folder(self.workdir, f"{label} {case.name}")
        scenarios.write_case(folder, data, case.titles, pd.DataFrame({"question": case.questions}))
        documents = read_documents([folder / "docs"])
        questions = read_questions(folder / "questions.csv", question_column="question")
        if len(questions.questions) != len(case.questions):
            raise RuntimeError(f"{label} {case.name}: {len(case.questions)} questions written, "
                               f"{len(questions.questions)} read back")
        analysis = analyze(self.config, documents.documents, questions, embedder=None, cache=self.cache)
        seconds = time.perf_counter() - started
        print(f"  {label} {case.name}: {len(case.titles)} documents, {len(case.questions)} questions, "
              f"{len(analysis.corpus.chunks)} passages, {model_name(analysis)} ({seconds:.1f} s)",
              file=sys.stderr, flush=True)
        return analysis, seconds


def model_name(analysis) -> str:
    embedding = analysis.config.embedding
    return str(embedding.model or f"{embedding.provider} default")


def case_order(analysis) -> np.ndarray:
    """Index that puts the analysis's question arrays in the order the questions were written."""
    return np.argsort(np.asarray(analysis.questions.rows), kind="stable")


def tally(truth: np.ndarray, flags: np.ndarray) -> Counter:
    return Counter(tp=int((truth & flags).sum()), flagged=int(flags.sum()), off=int(truth.sum()), n=len(truth))


@dataclass
class SetFigures:
    """Every count of one set and half."""

    name: str
    half: str
    n_articles: int = 0
    n_questions: int = 0
    # ruleset (FULL, ALL_RULES, rule name) -> variant ("clean", "5%", "45%") -> counts tp/flagged/off/n
    tallies: dict[str, dict[str, Counter]] = field(default_factory=dict)
    applies: set[str] = field(default_factory=set)
    explains: dict[str, Counter] = field(default_factory=dict)  # rule -> flags, false
    untested: Counter = field(default_factory=Counter)  # found, truth, false
    reliable: list[bool] = field(default_factory=list)
    unreliable_reasons: list[str] = field(default_factory=list)
    models: set[str] = field(default_factory=set)
    strictness: set[float] = field(default_factory=set)
    misfires: dict[str, list[str]] = field(default_factory=dict)  # rule -> genuine questions it flags on clean
    analyses: list[dict] = field(default_factory=list)
    override_mismatch: int = 0

    def add(self, ruleset: str, variant: str, counts: Counter) -> None:
        self.tallies.setdefault(ruleset, {}).setdefault(variant, Counter()).update(counts)

    def counts(self, ruleset: str, variant: str) -> Counter:
        return self.tallies.get(ruleset, {}).get(variant, Counter())

    def as_json(self) -> dict:
        return {
            "half": self.half, "articles": self.n_articles, "questions": self.n_questions,
            "tallies": {r: {v: dict(c) for v, c in t.items()} for r, t in self.tallies.items()},
            "rules_applying": sorted(self.applies), "explains": {r: dict(c) for r, c in self.explains.items()},
            "untested": dict(self.untested), "reliable": self.reliable, "unreliable_reasons": self.unreliable_reasons,
            "models": sorted(self.models), "strictness": sorted(self.strictness),
            "clean_misfires": self.misfires, "analyses": self.analyses,
            "flags_differing_from_decide": self.override_mismatch,
        }


def measure(figures: SetFigures, analysis, case: Case, variant: str | None, seconds: float) -> None:
    """Fold one analysis into ``figures``; ``variant`` is "clean", "5%", "45%" or None (the untested case)."""
    screener = analysis.screener
    strictness = float(screener.strictness)
    order = case_order(analysis)
    flags = np.asarray(analysis.is_outlier, dtype=bool)[order]
    truth = case.off_topic
    calibration = analysis.calibration
    figures.reliable.append(bool(calibration.reliable))
    if not calibration.reliable and calibration.reason:
        figures.unreliable_reasons.append(f"{case.name}: {calibration.reason}")
    figures.models.add(model_name(analysis))
    figures.strictness.add(strictness)
    figures.applies.update(screener.rules_.names)
    record = {"case": case.name, "documents": len(case.titles), "questions": len(case.questions),
              "passages": len(analysis.corpus.chunks), "seconds": round(seconds, 1), "model": model_name(analysis),
              "reliable": bool(calibration.reliable), "tau": float(calibration.support_threshold),
              "strictness": strictness, "rules": list(screener.rules_.names), "flagged": int(flags.sum())}

    if variant is None:
        names = analysis.documents["document"].astype(str).map(lambda n: Path(n).name)
        found = set(names[analysis.documents["is_untested"].astype(bool)])
        figures.untested.update(found=len(found & case.untested), truth=len(case.untested),
                                false=len(found - case.untested), cases=1)
        record.update(untested=sorted(case.untested), found_untested=sorted(found))
        figures.analyses.append(record)
        return

    figures.add(FULL, variant, tally(truth, flags))
    reference = np.asarray(screener.decide(strictness), dtype=bool)[order]
    figures.override_mismatch += int((reference != flags).sum())
    figures.add(ALL_RULES, variant, tally(truth, reference))
    for rule in RULE_NAMES:
        figures.add(rule, variant, tally(truth, np.asarray(screener.decide(strictness, without=[rule]),
                                                           dtype=bool)[order]))
    first = np.asarray(screener.flagging_rules(strictness), dtype=object)[order]
    for q in np.flatnonzero(reference):
        rule = str(first[q]) or "(none)"
        figures.explains.setdefault(rule, Counter()).update(flags=1, false=int(not truth[q]))
    if variant == "clean":
        for q in np.flatnonzero(flags):
            figures.misfires.setdefault(str(first[q]) or "(none)", []).append(case.questions[q])
    record.update(tally(truth, flags))
    figures.analyses.append(record)


def evaluate(analyser: Analyser, name: str, data: scenarios.WikiQA, half_name: str, seeds: int,
             max_articles: int | None = None) -> SetFigures:
    half = [t for t in scenarios.halves(data)[half_name] if data.of(t)]
    if max_articles:  # --smoke: the shortest, so that a check takes seconds
        half = shortest(half, data.articles, max_articles)
    figures = SetFigures(name, half_name, len(half), sum(len(data.of(t)) for t in half))
    label = f"{name} {half_name}"
    cases = [(clean_case(data, half), "clean")]
    cases += [(offtopic_case(data, half, rate, seed), f"{rate:.0%}") for rate in RATES for seed in range(seeds)]
    cases += [(case, None) for case in (untested_case(data, half, seed) for seed in range(seeds)) if case is not None]
    for case, variant in cases:
        analysis, seconds = analyser(data, case, label)
        measure(figures, analysis, case, variant, seconds)
        del analysis
    return figures


# ---------------------------------------------------------------- figures and cells
def share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def offtopic_figures(figures: list[SetFigures], ruleset: str) -> dict[str, Any]:
    """Genuine flagged (count, total, share), and precision / recall per rate, pooled over ``figures``."""
    def pooled(variant):
        total = Counter()
        for f in figures:
            total.update(f.counts(ruleset, variant))
        return total

    clean = pooled("clean")
    out: dict[str, Any] = {"genuine_flagged": clean["flagged"], "genuine_total": clean["n"],
                           "genuine_share": share(clean["flagged"], clean["n"])}
    for rate in RATES:
        counts = pooled(f"{rate:.0%}")
        out[f"P@{rate:.0%}"] = share(counts["tp"], counts["flagged"])
        out[f"R@{rate:.0%}"] = share(counts["tp"], counts["off"])
        out[f"sizes@{rate:.0%}"] = f"{counts['off']}/{counts['n']}"
    return out


def mark(ok: bool | None) -> str:
    return "" if ok is None else " ok" if ok else " FAIL"


def number(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def table_rows(figures: list[SetFigures]) -> tuple[list[str], list[list[str]]]:
    heads = ["set", "articles", "genuine flagged", *(f"{m}@{rate:.0%}" for rate in RATES for m in "PR"),
             "untested found", "untested false", "calibration"]
    rows = []
    for label, group in [*((f.name, [f]) for f in figures), *((("pooled", figures),) if len(figures) > 1 else ())]:
        o = offtopic_figures(group, FULL)
        untested = Counter()
        for f in group:
            untested.update(f.untested)
        reliable = [r for f in group for r in f.reliable]
        g = o["genuine_share"]
        cells = [label, str(sum(f.n_articles for f in group)),
                 f"{o['genuine_flagged']}/{o['genuine_total']} {number(100 * g if g is not None else None, 1)}%"
                 + mark(None if g is None else g <= MAX_GENUINE_FLAGGED)]
        for rate in RATES:
            p, r = o[f"P@{rate:.0%}"], o[f"R@{rate:.0%}"]
            cells += [number(p) + mark(None if p is None else p >= MIN_PRECISION),
                      number(r) + mark(None if r is None else r >= MIN_RECALL)]
        if untested["truth"]:
            # At most MAX_FALSE_UNTESTED per untested case, in every set of the row.
            few_false = all(f.untested["false"] <= MAX_FALSE_UNTESTED * f.untested["cases"] for f in group)
            cells += [f"{untested['found']}/{untested['truth']}" + mark(untested["found"] == untested["truth"]),
                      str(untested["false"]) + mark(few_false)]
        else:
            cells += ["n/a", "n/a"]
        cells.append("reliable" if all(reliable) else f"{reliable.count(False)}/{len(reliable)} unreliable")
        rows.append(cells)
    return heads, rows


def delta(new: float | None, old: float | None, same: bool, points: bool = False) -> str:
    if same:
        return "="
    if new is None or old is None:
        return f"{number(old)}->{number(new)}"
    if points:
        return f"{100 * (new - old):+.1f} pts"
    # A change too small for two decimals still shows (-0.004, +<0.001), apart from "=" (no flag changed).
    change = new - old
    if abs(change) >= 0.005:
        return f"{change:+.2f}"
    return f"{change:+.3f}" if abs(change) >= 0.0005 else ("+" if change >= 0 else "-") + "<0.001"


def ablation_rows(figures: list[SetFigures]) -> tuple[list[str], list[list[str]]]:
    heads = ["rule off", "set", "genuine flagged", *(f"{m}@{rate:.0%}" for rate in RATES for m in "PR"),
             "explains (false)"]
    rows = []
    groups = [*((f.name, [f]) for f in figures), *((("pooled", figures),) if len(figures) > 1 else ())]
    for rule in RULE_NAMES:
        for label, group in groups:
            if len(group) == 1 and rule not in group[0].applies:
                rows.append([rule, label, *["n/a"] * (2 + 2 * len(RATES))])
                continue
            base, off = offtopic_figures(group, ALL_RULES), offtopic_figures(group, rule)
            unchanged = all(f.counts(rule, v) == f.counts(ALL_RULES, v) for f in group for v in OFFTOPIC_VARIANTS)
            cells = [rule, label, delta(off["genuine_share"], base["genuine_share"],
                                        unchanged or off["genuine_flagged"] == base["genuine_flagged"], points=True)]
            for rate in RATES:
                for m in "PR":
                    key = f"{m}@{rate:.0%}"
                    cells.append(delta(off[key], base[key], unchanged or off[key] == base[key]))
            explained = Counter()
            for f in group:
                explained.update(f.explains.get(rule, Counter()))
            cells.append(f"{explained['flags']} ({explained['false']})")
            rows.append(cells)
    return heads, rows


def text_table(heads: list[str], rows: list[list[str]], group_first: bool = False) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    line = lambda cells: "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    out = [line(heads), "-" * (sum(widths) + 2 * (len(widths) - 1))]
    previous = None
    for row in rows:
        if group_first and previous is not None and row[0] != previous:
            out.append("")
        shown = list(row)
        if group_first and row[0] == previous:
            shown[0] = ""
        out.append(line(shown))
        previous = row[0]
    return "\n".join(out)


def markdown_table(heads: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" if i < 2 else "---:" for i in range(len(heads))) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(out)


def misfire_lines(f: SetFigures) -> list[str]:
    total = sum(len(v) for v in f.misfires.values())
    clean = f.counts(FULL, "clean")
    lines = [f"{f.name} {f.half}: {total} of {clean['n']} genuine questions flagged on the clean variant"]
    ranked = sorted(f.misfires.items(), key=lambda item: (-len(item[1]), item[0]))[:N_MISFIRE_RULES]
    for rule, questions in ranked:
        lines.append(f"  {rule}: {len(questions)}")
        for question in questions[:N_EXAMPLES]:
            text = " ".join(question.split())
            lines.append(f"      - {text[:117] + '...' if len(text) > 120 else text}")
    return lines


def commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=PROJECT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" with uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def plain(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    return str(value)


# ---------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", choices=tuple(SETS), default=list(SETS))
    parser.add_argument("--half", choices=("A", "B"), default="B", help="A: tuning half; B: held out (default)")
    parser.add_argument("--seeds", type=int, default=1, help="seeds per off-topic rate and untested case")
    parser.add_argument("--smoke", action="store_true",
                        help=f"{SMOKE_ARTICLES} articles of {SMOKE_SET}, one seed: {SMOKE_HELP}")
    parser.add_argument("--json", metavar="PATH", help="write every count here")
    parser.add_argument("--markdown", metavar="PATH", help="write the table and the ablation here as Markdown")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    set_names, seeds, max_articles = (([SMOKE_SET], 1, SMOKE_ARTICLES) if args.smoke
                                      else (list(dict.fromkeys(args.sets)), args.seeds, None))

    started = time.perf_counter()
    analyser = Analyser()
    results: list[SetFigures] = []
    skipped: list[str] = []
    seconds: dict[str, float] = {}
    for name in set_names:
        data = load(name)
        if data is None:
            skipped.append(name)
            continue
        set_started = time.perf_counter()
        print(f"{name}: {len(data.articles)} articles, {len(data.questions)} questions; half {args.half}",
              file=sys.stderr, flush=True)
        results.append(evaluate(analyser, name, data, args.half, seeds, max_articles))
        seconds[name] = time.perf_counter() - set_started
        print(f"{name}: {seconds[name]:.0f} s", file=sys.stderr, flush=True)
    runtime = time.perf_counter() - started
    if not results:
        print("no set to evaluate" + (f" (skipped: {', '.join(skipped)})" if skipped else ""))
        return 1

    smoke = f" -- SMOKE: {SMOKE_ARTICLES} articles, not a figure" if args.smoke else ""
    what = (f"half {args.half}{' (held out)' if args.half == 'B' else ' (tuning)'}, {seeds} seed(s), "
            f"model chosen automatically, commit {commit()}{smoke}")
    heads, rows = table_rows(results)
    aheads, arows = ablation_rows(results)
    print(f"\n== Off-topic and untested: {what}")
    print(f"targets: genuine flagged <= {MAX_GENUINE_FLAGGED:.0%}, precision >= {MIN_PRECISION}, recall >= "
          f"{MIN_RECALL}, every untested document found, <= {MAX_FALSE_UNTESTED} false per set")
    print(text_table(heads, rows))
    for f in results:
        mismatch = f" ({f.override_mismatch} flags differ from screener.decide)" if f.override_mismatch else ""
        sizes = offtopic_figures([f], FULL)
        print(f"  {f.name}: {f.n_articles} articles, {f.n_questions} questions; {', '.join(sorted(f.models))}; "
              f"strictness {', '.join(format(s, 'g') for s in sorted(f.strictness))}; off-topic/total "
              + ", ".join(f"{rate:.0%} {sizes[f'sizes@{rate:.0%}']}" for rate in RATES)
              + f"; {seconds[f.name]:.0f} s{mismatch}")
        for reason in f.unreliable_reasons[:3]:
            print(f"    unreliable calibration, {reason}")

    print("\n== Ablation: change with one rule off (screener.decide(strictness, without=[rule])) against all rules;"
          "\n   '=' no flag changed; n/a: the rule does not apply to the set; explains: flags it explains on clean,"
          f" {' and '.join(f'{rate:.0%}' for rate in RATES)} (of which genuine questions)")
    print(text_table(aheads, arows, group_first=True))

    print("\n== Misfires: rules explaining the genuine questions flagged on the clean variant")
    for f in results:
        print("\n".join(misfire_lines(f)))

    print(f"\n{len(results)} set(s) in {runtime:.0f} s" + (f"; skipped: {', '.join(skipped)}" if skipped else ""))
    if args.markdown:
        text = "\n".join([
            f"## Off-topic screening and untested documents ({time.strftime('%Y-%m-%d')})", "",
            f"`benchmarks/eval_offtopic.py --sets {' '.join(set_names)} --half {args.half} --seeds {seeds}`"
            + (" `--smoke`" if args.smoke else "") + f": {what}. Targets: genuine flagged <= "
            f"{MAX_GENUINE_FLAGGED:.0%}, precision >= {MIN_PRECISION}, recall >= {MIN_RECALL}, every untested "
            f"document found, <= {MAX_FALSE_UNTESTED} false per set. Pooled: counts summed over the sets.", "",
            markdown_table(heads, rows), "",
            "### Ablation: one rule off", "",
            "Change against all rules with the rule turned off (`QuestionScreener.decide(strictness, without=[rule])`, "
            "no refit); `=`: no flag changed; n/a: the rule does not apply to the set's corpus; explains: the flags "
            "the rule explains (the first rule that fires) on the clean and off-topic analyses, and in brackets "
            "how many of them are genuine questions.", "",
            markdown_table(aheads, arows), "",
        ])
        Path(args.markdown).write_text(text, encoding="utf-8")
        print(f"Markdown written to {args.markdown}")
    if args.json:
        payload = {"half": args.half, "seeds": seeds, "smoke": args.smoke, "commit": commit(),
                   "runtime_seconds": round(runtime, 1), "set_seconds": {k: round(v, 1) for k, v in seconds.items()},
                   "skipped": skipped, "rules": list(RULE_NAMES),
                   "sets": {f.name: {**f.as_json(), "full": offtopic_figures([f], FULL),
                                     "without": {r: offtopic_figures([f], r) for r in RULE_NAMES}}
                            for f in results},
                   "pooled": {"full": offtopic_figures(results, FULL),
                              "without": {r: offtopic_figures(results, r) for r in RULE_NAMES}},
                   "table": {"heads": heads, "rows": rows}, "ablation": {"heads": aheads, "rows": arows}}
        Path(args.json).write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=plain), encoding="utf-8")
        print(f"numbers written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
