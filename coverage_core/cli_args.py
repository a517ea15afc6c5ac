"""The command line's flags: the parser's commands and options, each help text ending in its default.

Every default and limit shown is read from the core's configs and range
constants, never restated; :mod:`coverage_core.cli` maps the parsed flags
onto those configs and checks them.
"""

from __future__ import annotations

import argparse
import inspect
from typing import Any

from coverage_core.checks.retrieval import DEFAULT_K
from coverage_core.chunking_comparison import DEFAULT_GRID
from coverage_core.config import MULTI_THRESHOLD_RANGE, SEED_RANGE, AnalysisConfig
from coverage_core.embeddings import CUSTOM_KEY_VARIABLE, DEFAULT_MAX_CONCURRENCY, PROVIDERS
from coverage_core.embeddings.choice import AUTO
from coverage_core.inputs import vector_store
from coverage_core.offtopic.screener import STRICTNESS_RANGE, QuestionScreener
from coverage_core.outputs.report import METRIC_NAMES
from coverage_core.stages.calibration import SUPPORT_THRESHOLD_RANGE
from coverage_core.stages.chunking import ChunkingConfig
from coverage_core.stages.clustering import MAX_DEFAULT_CLUSTERS, MIN_DEFAULT_CLUSTERS
from coverage_core.suggest.gaps import COVERAGE_THRESHOLD_RANGE, GAP_RULES, GapConfig

__all__ = [
    "DEFAULT_GRID_TEXT",
    "DEFAULT_METRIC",
    "DEFAULT_STRICTNESS",
    "VECTOR_COLUMN_FLAGS",
    "add_analyze_command",
    "add_diff_command",
    "add_push_accepted_command",
    "remote_providers",
]

# Defaults shown in --help and used when a flag is left out: all read from the core.
DEFAULT_STRICTNESS = inspect.signature(QuestionScreener).parameters["strictness"].default
DEFAULT_GRID_TEXT = ",".join(f"{c.chunk_size}/{c.chunk_overlap}" for c in DEFAULT_GRID)
DEFAULT_METRIC = "basic"  # the metric the gates of analyze and diff read unless told otherwise
# The column flags of --vectors, each with the names its column is detected by.
VECTOR_COLUMN_FLAGS = (
    ("text", vector_store.TEXT_COLUMN_NAMES),
    ("vector", vector_store.VECTOR_COLUMN_NAMES),
    ("document", vector_store.DOCUMENT_COLUMN_NAMES),
    ("page", vector_store.PAGE_COLUMN_NAMES),
)


def _default(text: str, default) -> str:
    """A help text ending in its default (``%`` escaped for argparse)."""
    return f"{text} (default: {default})".replace("%", "%%")


def _defaulted(text: str, default) -> dict[str, Any]:
    """``add_argument``'s ``default`` and ``help`` for a flag whose help shows its default as it is.

    Returns ``default`` and the help text ``text`` ending in it (:func:`_default`): each such value is
    written once, so the parser and its help cannot disagree.
    """
    return {"default": default, "help": _default(text, default)}


def add_analyze_command(commands) -> None:
    # --help lists the flags in the order they are added.
    analyze = commands.add_parser(
        "analyze", help="measure how well questions cover documents",
        description="Measure how well the test questions cover the documents; write the JSON report.",
    )
    _add_input_arguments(analyze)
    _add_embedding_arguments(analyze)
    _add_chunking_arguments(analyze)
    _add_measurement_arguments(analyze)
    _add_reading_arguments(analyze)
    _add_suggestion_arguments(analyze)
    _add_gate_arguments(analyze)
    _add_history_arguments(analyze)
    _add_check_arguments(analyze)
    analyze.add_argument("--quiet", action="store_true", help=_default("no progress bars", "bars on stderr"))


def _add_input_arguments(analyze: argparse.ArgumentParser) -> None:
    add = analyze.add_argument
    passages = analyze.add_mutually_exclusive_group(required=True)
    passages.add_argument("--docs", nargs="+", metavar="PATH",
                          help="document files or folders: PDF, TXT, MD; this or --vectors (required)")
    passages.add_argument("--vectors", metavar="PATH",
                          help="chunk vectors made elsewhere, instead of --docs: a Parquet file or a LanceDB table "
                               "folder, one row per chunk, or a local collection: qdrant:PATH?collection=NAME "
                               "(add &vector=NAME for a named vector) or chroma:PATH?collection=NAME; "
                               "--embedder/--model must name the model that made them; "
                               "this or --docs (required)")
    add("--questions", required=True, metavar="FILE",
        help="CSV/TSV of test questions, or a Phoenix dataset: phoenix+http://HOST:PORT/datasets/NAME, its key "
             "from PHOENIX_API_KEY (required)")
    add("--out", required=True, metavar="REPORT.json", help="where to write the JSON report (required)")
    add("--question-column", metavar="NAME", help=_default("question column", "detected by name, e.g. question"))
    for role, names in VECTOR_COLUMN_FLAGS:
        add(f"--{role}-column", metavar="NAME",
            help=_default(f"with --vectors: the {role} column", f"detected by name, e.g. {', '.join(names[:3])}"))
    add("--traffic", metavar="FILE",
        help=_default("a query log of production traffic (CSV or JSON Lines: query, optional count and "
                      "timestamp; or a Langfuse or LangSmith trace export, Parquet too), or a Phoenix project's "
                      "traces: phoenix+http://HOST:PORT/projects/NAME, its key from PHOENIX_API_KEY; compared with "
                      "the test set and the documents", "none"))
    add("--html", metavar="FILE",
        help=_default("also write the HTML report: one file with its charts, which opens offline", "none"))
    add("--save-analysis", metavar="DIR",
        help=_default("also save the vectors, clusters, calibration and report to DIR, to open later "
                      "(e.g. in the dashboard) without embedding again", "not saved"))


def remote_providers(joiner: str) -> str:
    """The labels of the providers that send texts to a server, e.g. "OpenAI/Voyage" (from the registry)."""
    return joiner.join(spec.label for spec in PROVIDERS.values() if spec.remote)


def _add_embedding_arguments(analyze: argparse.ArgumentParser) -> None:
    add = analyze.add_argument
    key_variables = " / ".join(spec.key_variable for spec in PROVIDERS.values() if spec.key_variable)
    add("--embedder", choices=list(PROVIDERS),
        **_defaulted(f"embedding provider ({AUTO}: the bundled model for the detected languages); keys come "
                     f"from {key_variables}", AUTO))
    defaults = ", ".join(f"{spec.default_model} for {name}" for name, spec in PROVIDERS.items() if spec.default_model)
    add("--model", metavar="NAME",
        help=_default("embedding model; without --embedder only a bundled model's name (e.g. multilingual-e5-small), "
                      "others need --embedder", f"the provider's default: {defaults}"))
    add("--dimensions", type=int, metavar="N",
        help=_default("output dimensions (text-embedding-3, voyage-3.5 and similar)", "the model's native size"))
    add("--base-url", metavar="URL",
        help=_default(f"another endpoint of the provider's API (a compatible server, a proxy); its key comes from "
                      f"{CUSTOM_KEY_VARIABLE}",
                      "the provider's own endpoint"))
    add("--max-concurrency", type=int, metavar="N",
        help=_default(f"{remote_providers('/')}: requests in flight at most (a rate limit halves it for a while)",
                      DEFAULT_MAX_CONCURRENCY))
    add("--ray-address", metavar="ADDRESS",
        help=_default("embed on Ray Data first: local (a Ray on this machine), auto (the cluster this machine "
                      "belongs to) or ray://host:10001; needs requirements-ray.txt", "no Ray"))
    add("--ray-workers", type=int, metavar="N",
        help=_default(f"with --ray-address: actors (local model: 1 CPU each; {remote_providers('/')}: requests "
                      "in flight)",
                      "all CPUs / the provider's concurrency"))


def _add_chunking_arguments(analyze: argparse.ArgumentParser) -> None:
    add = analyze.add_argument
    add("--chunk-size", type=int, metavar="N", **_defaulted("chunk size in characters", ChunkingConfig.chunk_size))
    add("--chunk-overlap", type=int, metavar="N",
        **_defaulted("overlap of consecutive chunks in characters, smaller than --chunk-size",
                     ChunkingConfig.chunk_overlap))


def _add_measurement_arguments(analyze: argparse.ArgumentParser) -> None:
    """Topics, off-topic screening, gaps and the multi-cluster metrics."""
    add = analyze.add_argument
    add("--clusters", type=int, default=AnalysisConfig.n_clusters, metavar="K",
        help=_default("number of topics, at least 1",
                      f"round(sqrt(chunks / 2)) within [{MIN_DEFAULT_CLUSTERS}, {MAX_DEFAULT_CLUSTERS}]"))
    add("--strictness", type=float, default=AnalysisConfig.strictness, metavar="X",
        help=_default(f"off-topic screening strictness, {STRICTNESS_RANGE[0]:g} (flag only extreme questions) "
                      f"to {STRICTNESS_RANGE[1]:g} (flag many)", f"{DEFAULT_STRICTNESS:g}"))
    add("--support-threshold", type=float, default=AnalysisConfig.support_threshold, metavar="X",
        help=_default(f"support level: the cosine similarity at which a question reaches a passage, "
                      f"{SUPPORT_THRESHOLD_RANGE[0]:g} < X <= {SUPPORT_THRESHOLD_RANGE[1]:g}",
                      "calibrated on the documents"))
    add("--gap-rule", choices=GAP_RULES,
        **_defaulted("tested_share: a cluster is a gap when less than "
                     f"{GapConfig.tested_share_threshold:.0%} of its passages are tested; "
                     "coverage: when its coverage is below --gap-threshold", GapConfig.rule))
    add("--gap-threshold", type=float, metavar="X",
        **_defaulted(f"with --gap-rule coverage (and for schema-1 reports in JUnit), clusters covered below X are gaps, "
                     f"{COVERAGE_THRESHOLD_RANGE[0]:g} < X <= {COVERAGE_THRESHOLD_RANGE[1]:g}",
                     GapConfig.gap_threshold))
    add("--multi-threshold", type=float, metavar="X",
        **_defaulted(f"cosine distance within which a question covers a cluster (multi_threshold metric), "
                     f"{MULTI_THRESHOLD_RANGE[0]:g} < X <= {MULTI_THRESHOLD_RANGE[1]:g}",
                     AnalysisConfig.multi_threshold))
    add("--multi-n", type=int, metavar="N",
        **_defaulted("clusters each question covers in the multi_n metric, at least 1", AnalysisConfig.multi_n))
    add("--seed", type=int, metavar="N",
        **_defaulted(f"random seed for clustering and screening, {SEED_RANGE[0]} to {SEED_RANGE[1]}",
                     AnalysisConfig.random_state))


def _add_reading_arguments(analyze: argparse.ArgumentParser) -> None:
    """Where embeddings are cached and how encrypted PDFs are opened."""
    add = analyze.add_argument
    add("--cache-dir", metavar="DIR",
        help=_default("embedding and written-question cache folder", "$COVERAGE_CORE_CACHE_DIR or ~/.cache/coverage_core"))
    add("--pdf-password", metavar="P", help=_default("password for encrypted PDFs", "none"))
    add("--follow-symlinks", action="store_true",
        help=_default("in --docs folders, also read links that lead outside the folder",
                      "off: such links are skipped with a warning"))


def _add_suggestion_arguments(analyze: argparse.ArgumentParser) -> None:
    """How many questions to suggest per gap, and the LLM that may write them."""
    add = analyze.add_argument
    add("--suggest", type=int, metavar="N",
        **_defaulted("suggested questions per gap, at least 0; 0 writes none", GapConfig.n_suggestions))
    add("--written-gaps", type=int, default=GapConfig.n_written_gaps, metavar="N",
        help=_default("gaps the built-in model writes questions for, most urgent first; the others get drafts",
                      GapConfig.n_written_gaps or "every gap"))
    add("--llm-model", metavar="NAME",
        help=_default("chat model for gap suggestions (every gap) and --subquestions",
                      "none; the built-in model writes them"))
    add("--llm-base-url", metavar="URL",
        help=_default("OpenAI-compatible chat endpoint, e.g. a local Ollama", "OpenAI with --llm-model"))


def _add_gate_arguments(analyze: argparse.ArgumentParser) -> None:
    add = analyze.add_argument
    add("--fail-below", type=float, metavar="X",
        help=_default(f"exit 1 when --metric is below X, {COVERAGE_THRESHOLD_RANGE[0]:g} < X <= "
                      f"{COVERAGE_THRESHOLD_RANGE[1]:g}", "no gate"))
    add("--metric", choices=METRIC_NAMES, **_defaulted("metric gated by --fail-below", DEFAULT_METRIC))
    add("--junit", metavar="FILE",
        help=_default("also write JUnit XML: the support level, the gated metric, every cluster and document "
                      "(gaps, untested and under-tested documents fail; a support level that could not be "
                      "calibrated is an error)", "none"))


def _add_history_arguments(analyze: argparse.ArgumentParser) -> None:
    """The history of runs: recording this one, comparing with an earlier one, and the gates against it."""
    from coverage_core.history.location import DEFAULT_HISTORY_FILE, HISTORY_ENV, RECORD_ENV

    add = analyze.add_argument
    add("--record", metavar="LABEL",
        help=_default(f"record this run in the history under LABEL: a branch, commit or release (also ${RECORD_ENV})",
                      "not recorded"))
    add("--history", metavar="PATH_OR_URL",
        help=_default(f"the history: a SQLite file, or a database URL such as postgresql://user@host/db, whose "
                      f"password is never shown (also ${HISTORY_ENV})",
                      f"{DEFAULT_HISTORY_FILE} in the working directory"))
    add("--since", metavar="RUN_OR_LABEL",
        help=_default("compare with that run of the history: a run number, or the last run with that label",
                      "the last run with the --record label, else the last run"))
    add("--fail-on-drop", type=float, metavar="POINTS",
        help=_default("exit 1 when the tested share fell by more than POINTS percentage points since the last run "
                      "with the same label (or --since), POINTS >= 0", "no gate"))
    add("--fail-on-new-untested", action="store_true",
        help=_default("exit 1 when a document added or changed since the last run with the same label (or --since) "
                      "has no question testing it", "off"))
    add("--fail-on-stale", action="store_true",
        help=_default("exit 1 when a question's source document (its source column, else the document it "
                      "retrieved) was removed or changed since the last run with the same label (or --since)", "off"))
    add("--keep-document-text", action="store_true",
        help=_default("also keep each document's text in the history", "off: content hashes and chunk counts only"))


def _add_check_arguments(analyze: argparse.ArgumentParser) -> None:
    """The optional checks: retrieval, answerability, sub-questions, other chunkings."""
    add = analyze.add_argument
    add("--relevant-column", metavar="NAME",
        help=_default("column naming each question's relevant source files for the retrieval check",
                      "detected, e.g. source, relevant_sources, document"))
    add("--k", type=int, metavar="N",
        **_defaulted("chunks retrieved per question, at least 1: a passage is tested when a question retrieves it "
                     "among its top N with similarity at least the support level; also the retrieval check's k",
                     DEFAULT_K))
    add("--label-column", metavar="NAME",
        help=_default("column saying whether each question is answerable", "detected, e.g. answerable"))
    add("--subquestions", type=int, metavar="N",
        help=_default("break the first N questions into sub-questions with the LLM and score them", "off"))
    add("--compare-chunking", nargs="?", const=DEFAULT_GRID_TEXT, metavar="GRID",
        help=_default(f"also score other chunkings, SIZE/OVERLAP pairs separated by commas; "
                      f"the flag alone uses {DEFAULT_GRID_TEXT}", "off"))


def add_push_accepted_command(commands) -> None:
    push = commands.add_parser(
        "push-accepted", help="send the accepted questions to a Phoenix dataset",
        description="Send the questions accepted on the dashboard's Gap analysis page, with their origin and source "
                    "passage, to a Phoenix dataset: a new version of it, or a new dataset.",
    )
    push.add_argument("source", metavar="REPORT_OR_ANALYSIS",
                      help="the JSON report downloaded after Apply, or a saved analysis (folder or zip)")
    push.add_argument("--to", required=True, metavar="ADDRESS",
                      help="the dataset: phoenix+http://HOST:PORT/datasets/NAME (or https); its key from "
                           "PHOENIX_API_KEY (required)")


def add_diff_command(commands) -> None:
    diff = commands.add_parser(
        "diff", help="compare two JSON reports (metrics, documents, questions)",
        description="Compare two JSON reports: metric deltas, per-document coverage, questions added and removed.",
    )
    diff.add_argument("old", metavar="OLD.json", help="the earlier report")
    diff.add_argument("new", metavar="NEW.json", help="the later report")
    diff.add_argument("--metric", choices=METRIC_NAMES, **_defaulted("metric gated by --fail-on-drop", DEFAULT_METRIC))
    diff.add_argument("--fail-on-drop", type=float, metavar="X",
                      help=_default("exit 1 when --metric fell by more than X, X >= 0", "no gate"))
    diff.add_argument("--json", metavar="FILE", help=_default("also write the comparison as JSON", "none"))
