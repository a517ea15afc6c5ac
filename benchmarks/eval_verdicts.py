"""Every verdict against its target, on scenarios built from the wiki-qa data.

Run from the project root::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python benchmarks/eval_verdicts.py \\
        [--half B] [--seeds 2] [--only clean,mixes,...] [--json verdicts.json]

Each scenario (``verdict_scenarios.py``) is written to files and analysed
exactly as ``python -m coverage_core analyze --docs DIR --questions FILE``
does: ``read_documents`` and ``read_questions`` on the files,
``session.analyze`` with the local model, ``outputs.report.build_report``
written as JSON and read back. Every figure is read from that JSON, so a
field another change has not added yet (``calibration.reliable``,
``documents[].is_undertested``, ``questions[].offtopic_reason``) shows as
``n/a`` instead of failing the run.

Scenarios (targets in the tables): clean; off-topic mixes at 5 / 45 / 65 %
(outside-corpus and absent-subject questions); near-duplicate documents;
long documents with few questions; chunk sizes 500 / 800 / 1000 / 1500;
generic questions on the bundled example; corpora that cannot separate
their documents. Articles come from half B of a seeded split of the 55
(``--half A`` looks at the tuning half instead). Embeddings are cached in
``$EVAL_VERDICTS_CACHE`` (default ``/tmp/eval_verdicts_cache``).

``--smoke``: every scenario, small: the 4 shortest articles of the half, one seed and one mix (45 %), one
edited copy, chunks of 1000 only (2 articles untested), the example's shortest document, 2 documents that cannot be told
apart; no gap questions written.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import verdict_scenarios as scenarios  # noqa: E402
from shared_data import SMOKE_HELP, shortest  # noqa: E402
from verdict_scenarios import Scenario  # noqa: E402

CACHE = Path(os.environ.get("EVAL_VERDICTS_CACHE", "/tmp/eval_verdicts_cache"))
WORKDIR = Path(os.environ.get("EVAL_VERDICTS_WORKDIR", "/tmp/eval_verdicts_work"))
MIXES = (0.05, 0.45, 0.65)
CHUNK_SIZES = (500, 800, 1000, 1500)
SCENARIO_NAMES = ("clean", "mixes", "near-duplicates", "long-few", "chunk-sizes", "generic", "no-separation")

MAX_GENUINE_FLAGGED = 0.05
MIN_PRECISION = 0.9
MIN_RECALL = 0.8
MAX_TESTED_SPREAD = 0.15
MAX_FALSE_UNTESTED = 1
MAX_GENERIC_CHANGE = 10
SMOKE = False
"""``--smoke``: each scenario built small (see the module docstring), no gap questions written."""


# ---------------------------------------------------------------- one measured value
@dataclass
class Check:
    """One measured value and its target; ``ok`` None when the value is missing (n/a) or has no target."""

    measure: str
    value: Any
    target: str = ""
    ok: bool | None = None

    @property
    def status(self) -> str:
        # n/a only when a target could not be judged: the summary counts what a missing field leaves open.
        if not self.target:
            return "info"
        if self.value is None:
            return "n/a"
        return "PASS" if self.ok else "FAIL"


def check(measure: str, value: Any, target: str = "", rule: Callable[[Any], bool] | None = None) -> Check:
    """A :class:`Check`, judged by ``rule`` unless the value is missing."""
    ok = None if value is None or rule is None else bool(rule(value))
    return Check(measure, value, target, ok)


def show(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple, set)):
        items = sorted(value)
        return "[" + ", ".join(map(str, items)) + "]" if items else "none"
    return str(value)


# ---------------------------------------------------------------- running the product
class Runner:
    """Analyses scenarios as the CLI does, one local model and one embedding cache for all of them."""

    def __init__(self, cache_dir: Path = CACHE, workdir: Path = WORKDIR):
        from coverage_core.embeddings import EmbeddingCache, make_embedder

        self.embedder = make_embedder("local")
        self.cache = EmbeddingCache(cache_dir)
        self.workdir = workdir
        self.timings: dict[str, float] = {}

    def report(self, scenario: Scenario) -> dict:
        """The JSON report of ``python -m coverage_core analyze`` on the scenario's files, read back from disk."""
        from coverage_core.config import AnalysisConfig
        from coverage_core.inputs.ingest import read_documents
        from coverage_core.inputs.questions import read_questions
        from coverage_core.outputs.report import build_report, write_report
        from coverage_core.session import analyze
        from coverage_core.stages.chunking import ChunkingConfig

        started = time.perf_counter()
        folder = scenarios.case_folder(self.workdir, scenario.name)
        shutil.rmtree(folder, ignore_errors=True)
        (folder / "docs").mkdir(parents=True)
        for name, text in scenario.documents.items():
            (folder / "docs" / name).write_text(text, encoding="utf-8")
        # Only the question column: truth columns could be picked up as labels.
        (folder / "questions.csv").write_bytes(scenario.csv_bytes())
        documents = read_documents([folder / "docs"])
        questions = read_questions(folder / "questions.csv")
        config = AnalysisConfig(chunking=ChunkingConfig(scenario.chunk_size, scenario.chunk_overlap))
        if SMOKE:  # nothing here reads the questions the bundled model writes for the gaps
            config = dataclasses.replace(config, gaps=dataclasses.replace(config.gaps, local_model=False))
        analysis = analyze(config, documents.documents, questions, embedder=self.embedder, cache=self.cache)
        inputs = {"documents": [d.name for d in documents.documents], "questions_file": "questions.csv",
                  "question_column": questions.question_column, "llm_model": None}
        write_report(build_report(analysis, inputs), folder / "report.json")
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        self.timings[scenario.name] = time.perf_counter() - started
        print(f"  analysed {scenario.name}: {len(scenario.documents)} documents, {len(scenario.questions)} "
              f"questions, {report['summary']['n_chunks']} passages ({self.timings[scenario.name]:.0f} s)",
              file=sys.stderr, flush=True)
        return report


# ---------------------------------------------------------------- reading a report
def calibration(report: dict, name: str) -> Any:
    return report.get("calibration", {}).get(name)


def flagged_by_row(report: dict) -> dict[int, bool]:
    return {q["row"]: bool(q["is_outlier"]) for q in report["questions"]}


def document_flags(report: dict, field: str) -> set[str] | None:
    """Names of the documents whose ``field`` is true; None when the report has no such field."""
    documents = report["documents"]
    if documents and field not in documents[0]:
        return None
    return {d["name"] for d in documents if d.get(field)}


def n_tested(report: dict) -> int:
    return sum(d["n_tested"] for d in report["documents"])


def ratio(part: int, whole: int) -> float:
    """``part / whole``, 1.0 for an empty whole: nothing flagged is never a wrong flag, nothing to find is found."""
    return part / whole if whole else 1.0


def precision_recall(flagged: set, truth: set) -> tuple[float, float]:
    hits = len(flagged & truth)
    return ratio(hits, len(flagged)), ratio(hits, len(truth))


def calibration_checks(report: dict, want_reliable: bool) -> list[Check]:
    return [
        check("calibration reliable", calibration(report, "reliable"), str(want_reliable),
              lambda v: v is want_reliable),
        check("tau (support threshold)", calibration(report, "support_threshold")),
        check("separation (Youden J at tau)", calibration(report, "separation")),
        check("calibration method", calibration(report, "method")),
    ]


def untested_checks(report: dict, truth: set[str], *, min_precision=MIN_PRECISION,
                    min_recall=MIN_RECALL) -> list[Check]:
    flagged = document_flags(report, "is_untested")
    precision, recall = precision_recall(flagged, truth)
    undertested = document_flags(report, "is_undertested")
    return [
        check("untested precision", precision, f">= {min_precision}", lambda v: v >= min_precision),
        check("untested recall", recall, f">= {min_recall}", lambda v: v >= min_recall),
        check("flagged untested", flagged),
        check("truly untested", truth),
        check("under-tested documents", None if undertested is None else len(undertested)),
    ]


# ---------------------------------------------------------------- the scenarios' tables
def eval_clean(runner: Runner, data, half) -> list[Check]:
    scenario = scenarios.clean(data, half)
    report = runner.report(scenario)
    flags = flagged_by_row(report)
    share = np.mean([flags[i] for i in range(len(scenario.questions))])
    untested = document_flags(report, "is_untested")
    undertested = document_flags(report, "is_undertested")
    return [
        check("genuine questions flagged off-topic", float(share), f"<= {MAX_GENUINE_FLAGGED:.0%}",
              lambda v: v <= MAX_GENUINE_FLAGGED),
        check("untested documents flagged", len(untested), "0", lambda v: v == 0),
        check("  which", untested),
        check("under-tested documents", None if undertested is None else len(undertested)),
        check("tested share", report["metrics"]["tested_share"]),
        *calibration_checks(report, want_reliable=True),
    ]


def eval_mixes(runner: Runner, data, half, seeds: int) -> list[Check]:
    """Precision / recall of the off-topic flags per mix, counts pooled over the seeds."""
    rows: list[Check] = []
    for mix in MIXES:
        counts = Counter()
        reasons: Counter = Counter()
        has_reason = None
        for seed in range(seeds):
            scenario = scenarios.offtopic_mix(data, half, mix, seed)
            report = runner.report(scenario)
            by_row = {q["row"]: q for q in report["questions"]}
            for i, kind in enumerate(scenario.question_kind):
                entry = by_row[i]
                counts[kind, bool(entry["is_outlier"])] += 1
                if "offtopic_reason" in entry:
                    has_reason = True
                    if kind == "absent" and entry["is_outlier"]:
                        reasons[str(entry["offtopic_reason"] or "")[:50]] += 1
        false_flags = counts["genuine", True]
        off = {kind: (counts[kind, True], counts[kind, True] + counts[kind, False]) for kind in ("outside", "absent")}
        hits = off["outside"][0] + off["absent"][0]
        total = off["outside"][1] + off["absent"][1]
        label = f"{mix:.0%} off-topic"
        # The absent-subject figures judge the set of genuine and absent-subject questions alone.
        rows += [
            check(f"{label}: precision", ratio(hits, hits + false_flags), f">= {MIN_PRECISION}",
                  lambda v: v >= MIN_PRECISION),
            check(f"{label}: recall", ratio(hits, total), f">= {MIN_RECALL}", lambda v: v >= MIN_RECALL),
            check(f"{label}: absent-subject precision", ratio(off["absent"][0], off["absent"][0] + false_flags),
                  f">= {MIN_PRECISION}", lambda v: v >= MIN_PRECISION),
            check(f"{label}: absent-subject recall", ratio(*off["absent"]), f">= {MIN_RECALL}",
                  lambda v: v >= MIN_RECALL),
            check(f"{label}: outside-corpus recall", ratio(*off["outside"])),
            check(f"{label}: genuine / outside / absent",
                  f"{counts['genuine', True] + counts['genuine', False]} / {off['outside'][1]} / {off['absent'][1]}"),
            check(f"{label}: flagged absent-subject with a reason",
                  None if has_reason is None else ratio(sum(n for r, n in reasons.items() if r), off["absent"][0])),
            check(f"{label}: commonest reason on them",
                  None if has_reason is None else next((r for r, _ in reasons.most_common() if r), "none")),
        ]
    return rows


def eval_near_duplicates(runner: Runner, data, half) -> list[Check]:
    scenario = (scenarios.near_duplicates(data, half, n_articles=3, n_copies=1, n_removed=1) if SMOKE
                else scenarios.near_duplicates(data, half))
    report = runner.report(scenario)
    tested = report["metrics"]["tested_share"]
    return [
        *calibration_checks(report, want_reliable=True),
        check("tested share", tested, "< 100% (uncited documents exist)", lambda v: v < 1.0),
        *untested_checks(report, scenario.untested),
    ]


def eval_long_few(runner: Runner, data, half) -> list[Check]:
    scenario = scenarios.long_few_questions(data, half, n_silent=2 if SMOKE else 3)
    report = runner.report(scenario)
    flagged = document_flags(report, "is_untested")
    undertested = document_flags(report, "is_undertested")
    return [
        check("silent articles found", len(flagged & scenario.untested), f"{len(scenario.untested)}",
              lambda v: v == len(scenario.untested)),
        check("false untested flags", len(flagged - scenario.untested), f"<= {MAX_FALSE_UNTESTED}",
              lambda v: v <= MAX_FALSE_UNTESTED),
        check("untested precision", precision_recall(flagged, scenario.untested)[0]),
        check("untested recall", precision_recall(flagged, scenario.untested)[1]),
        check("flagged untested", flagged),
        check("truly untested", scenario.untested),
        check("under-tested documents", None if undertested is None else len(undertested)),
        check("calibration reliable", calibration(report, "reliable")),
    ]


def eval_chunk_sizes(runner: Runner, data, half) -> list[Check]:
    rows, shares, sets = [], [], []
    truth = set()
    for size in CHUNK_SIZES:
        scenario = scenarios.chunk_size_corpus(data, half, size, n_removed=2 if SMOKE else 4)
        truth = scenario.untested
        report = runner.report(scenario)
        flagged = document_flags(report, "is_untested")
        shares.append(report["metrics"]["tested_share"])
        sets.append(frozenset(flagged))
        precision, recall = precision_recall(flagged, truth)
        rows += [
            check(f"{size}: tested share", shares[-1]),
            check(f"{size}: untested (P {precision:.2f} R {recall:.2f})", flagged),
            check(f"{size}: calibration reliable", calibration(report, "reliable"), "True", lambda v: v is True),
            check(f"{size}: tau", calibration(report, "support_threshold")),
        ]
    return [
        check("tested share spread (max - min)", max(shares) - min(shares), f"<= {MAX_TESTED_SPREAD:.0%}",
              lambda v: v <= MAX_TESTED_SPREAD),
        check("untested set identical across sizes", len(set(sets)) == 1, "True", lambda v: v),
        check("truly untested", truth),
        *rows,
    ]


def eval_generic(runner: Runner) -> list[Check]:
    n_documents = 1 if SMOKE else None
    plain = runner.report(scenarios.bundled_example(generic=False, n_documents=n_documents))
    scenario = scenarios.bundled_example(generic=True, n_documents=n_documents)
    generic = runner.report(scenario)
    change = n_tested(generic) - n_tested(plain)
    flags = flagged_by_row(generic)
    generic_rows = [i for i, kind in enumerate(scenario.question_kind) if kind == "generic"]
    return [
        check("tested passages without generic questions", n_tested(plain)),
        check("tested passages with them", n_tested(generic)),
        check("change in tested passages", abs(change), f"<= {MAX_GENERIC_CHANGE}",
              lambda v: v <= MAX_GENERIC_CHANGE),
        check("generic questions flagged off-topic", f"{sum(flags[i] for i in generic_rows)} of {len(generic_rows)}"),
    ]


def eval_no_separation(runner: Runner, data, half) -> list[Check]:
    rows = []
    builds = ((lambda: scenarios.same_text_edited(data, half, n_documents=2)),
              (lambda: scenarios.shuffled_words(data, half, n_documents=2, n_words=200))) if SMOKE else (
        (lambda: scenarios.same_text_edited(data, half)), (lambda: scenarios.shuffled_words(data, half)))
    for build in builds:
        scenario = build()
        report = runner.report(scenario)
        short = scenario.name.removeprefix("no separation: ")
        rows += [
            check(f"{short}: calibration reliable", calibration(report, "reliable"), "False", lambda v: v is False),
            check(f"{short}: tau", calibration(report, "support_threshold")),
            check(f"{short}: separation", calibration(report, "separation")),
            check(f"{short}: method", calibration(report, "method")),
            check(f"{short}: reason", calibration(report, "reason") or None),
            check(f"{short}: tested share", report["metrics"]["tested_share"]),
        ]
    return rows


# ---------------------------------------------------------------- output
def print_table(title: str, rows: list[Check]) -> None:
    width = max([len(r.measure) for r in rows] + [30])
    print(f"\n== {title}")
    print(f"{'measure':<{width}}  {'value':>24}  {'target':<32}  status")
    print("-" * (width + 68))
    for row in rows:
        value = show(row.value)
        if len(value) > 24:
            print(f"{row.measure:<{width}}  {'(below)':>24}  {row.target:<32}  {row.status}\n    {value}")
            continue
        print(f"{row.measure:<{width}}  {value:>24}  {row.target:<32}  {row.status}")


def plain(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--half", choices=("A", "B"), default="B", help="articles to report on (A is for tuning)")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per off-topic mix")
    parser.add_argument("--only", default=",".join(SCENARIO_NAMES),
                        help=f"comma-separated scenarios, of: {', '.join(SCENARIO_NAMES)}")
    parser.add_argument("--json", metavar="PATH", help="write every number here")
    parser.add_argument("--smoke", action="store_true", help="every scenario, small: " + SMOKE_HELP)
    args = parser.parse_args(argv)
    global SMOKE, MIXES, CHUNK_SIZES
    if args.smoke:
        SMOKE, MIXES, CHUNK_SIZES, args.seeds = True, (0.45,), (1000,), 1
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(SCENARIO_NAMES))
    if unknown:
        parser.error(f"unknown scenario {', '.join(unknown)}; choose from {', '.join(SCENARIO_NAMES)}")

    started = time.perf_counter()
    data = scenarios.load()
    half = scenarios.halves(data)[args.half]
    if SMOKE:
        half = shortest(half, data.articles, 4)
    runner = Runner()
    tables = {
        "clean": ("1. clean: every question genuine, every document tested", lambda: eval_clean(runner, data, half)),
        "mixes": ("2. off-topic mixes (precision/recall pooled over seeds)",
                  lambda: eval_mixes(runner, data, half, args.seeds)),
        "near-duplicates": ("3. near-duplicate documents (edited copies; 3 articles and their copies untested)",
                            lambda: eval_near_duplicates(runner, data, half)),
        "long-few": ("4. long documents, few questions (chunk size 500; 7-8 questions each, 3 with none)",
                     lambda: eval_long_few(runner, data, half)),
        "chunk-sizes": ("5. chunk sizes (same corpus and questions; 4 articles untested)",
                        lambda: eval_chunk_sizes(runner, data, half)),
        "generic": ("6. generic questions on the bundled example", lambda: eval_generic(runner)),
        "no-separation": ("7. corpora that cannot separate their documents", lambda: eval_no_separation(runner, data, half)),
    }
    results: dict[str, list[Check]] = {}
    for name in chosen:
        title, evaluate = tables[name]
        print(f"{title} ...", file=sys.stderr, flush=True)
        results[name] = evaluate()
        print_table(title, results[name])

    runtime = time.perf_counter() - started
    print(f"\n== summary (half {args.half}, {runtime:.0f} s)")
    totals: Counter = Counter()
    for name, rows in results.items():
        count = Counter(r.status for r in rows)
        totals.update(count)
        failed = [r.measure.strip() for r in rows if r.status == "FAIL"]
        print(f"{name:<16} PASS {count['PASS']:>2}  FAIL {count['FAIL']:>2}  n/a {count['n/a']:>2}"
              + (f"   failing: {'; '.join(failed)}" if failed else ""))
    print(f"{'all':<16} PASS {totals['PASS']:>2}  FAIL {totals['FAIL']:>2}  n/a {totals['n/a']:>2}")
    if args.json:
        payload = {
            "half": args.half, "seeds": args.seeds, "runtime_seconds": round(runtime, 1),
            "analysis_seconds": {k: round(v, 1) for k, v in runner.timings.items()},
            "scenarios": {name: [{**{k: plain(v) for k, v in asdict(r).items()}, "status": r.status}
                                 for r in rows] for name, rows in results.items()},
        }
        Path(args.json).write_text(json.dumps(payload, indent=2, default=plain), encoding="utf-8")
        print(f"numbers written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
