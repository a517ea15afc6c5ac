"""Command line for CI pipelines.

``python -m coverage_core analyze …`` measures coverage and writes the JSON
report (and, with ``--junit``, JUnit XML); ``python -m coverage_core diff
OLD.json NEW.json`` compares two reports.

Exit codes: 0 done; 1 the gated metric is below ``--fail-below`` (analyze) or
fell by more than ``--fail-on-drop`` (diff); 2 the input cannot be used (one
plain sentence on stderr, never a traceback).
API keys are read from the environment only, so they never land in shell
history, logs or the report.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from coverage_core import ci
from coverage_core.chunking import ChunkingConfig
from coverage_core.errors import CoverageError, InputError
from coverage_core.gaps import GapConfig
from coverage_core.report import METRIC_NAMES, build_report, summary_table, write_report

EXIT_OK, EXIT_BELOW_THRESHOLD, EXIT_UNUSABLE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one sentence, no usage dump
        self.exit(EXIT_UNUSABLE, f"coverage_core: {message} (see --help).\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m coverage_core", description="Semantic coverage of a RAG test set.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    analyze = commands.add_parser("analyze", help="measure how well questions cover documents")
    analyze.add_argument("--docs", nargs="+", required=True, metavar="PATH", help="document files or folders (PDF, TXT, MD)")
    analyze.add_argument("--questions", required=True, metavar="FILE", help="CSV/TSV of test questions")
    analyze.add_argument("--out", required=True, metavar="REPORT.json", help="where to write the JSON report")
    analyze.add_argument("--question-column", metavar="NAME", help="question column (default: detected)")
    analyze.add_argument("--embedder", choices=["local", "openai", "voyage"], default="local",
                         help="embedding provider; keys come from OPENAI_API_KEY / VOYAGE_API_KEY")
    analyze.add_argument("--model", metavar="NAME", help="embedding model (default: the provider's default)")
    analyze.add_argument("--dimensions", type=int, metavar="N", help="output dimensions (text-embedding-3, voyage-3.5)")
    analyze.add_argument("--base-url", metavar="URL", help="OpenAI-compatible or Voyage endpoint")
    analyze.add_argument("--chunk-size", type=int, default=ChunkingConfig.chunk_size, metavar="N")
    analyze.add_argument("--chunk-overlap", type=int, default=ChunkingConfig.chunk_overlap, metavar="N")
    analyze.add_argument("--clusters", type=int, metavar="K", help="number of topics (default: from corpus size)")
    analyze.add_argument("--strictness", type=float, metavar="X", help="off-topic screening strictness")
    analyze.add_argument("--gap-threshold", type=float, default=GapConfig.gap_threshold, metavar="X")
    analyze.add_argument("--multi-threshold", type=float, default=0.5, metavar="X")
    analyze.add_argument("--multi-n", type=int, default=2, metavar="N")
    analyze.add_argument("--seed", type=int, default=0, help="random_state for clustering and screening")
    analyze.add_argument("--cache-dir", metavar="DIR", help="embedding cache (default: $COVERAGE_CORE_CACHE_DIR or ~/.cache/coverage_core)")
    analyze.add_argument("--pdf-password", metavar="P", help="password for encrypted PDFs")
    analyze.add_argument("--llm-model", metavar="NAME", help="chat model for gap suggestions (default: offline drafts)")
    analyze.add_argument("--llm-base-url", metavar="URL", help="OpenAI-compatible chat endpoint, e.g. a local Ollama")
    analyze.add_argument("--fail-below", type=float, metavar="X", help="exit 1 when --metric is below X")
    analyze.add_argument("--metric", choices=METRIC_NAMES, default="basic", help="metric gated by --fail-below")
    analyze.add_argument("--junit", metavar="FILE",
                         help="also write JUnit XML: the gated metric, every cluster and document (below --gap-threshold fail)")
    analyze.add_argument("--relevant-column", metavar="NAME",
                         help="column naming each question's relevant source file(s) for the retrieval check "
                              "(default: detected, e.g. source, relevant_sources, document)")
    analyze.add_argument("--k", type=int, default=5, metavar="N", help="chunks retrieved per question (default 5)")
    analyze.add_argument("--label-column", metavar="NAME",
                         help="column saying whether each question is answerable (default: detected, e.g. answerable)")
    analyze.add_argument("--subquestions", type=int, metavar="N",
                         help="break the first N questions into sub-questions with --llm-model and score them")
    analyze.add_argument("--compare-chunking", nargs="?", const="500/0,1000/0,1000/200,2000/200", metavar="GRID",
                         help="also score other chunkings, SIZE/OVERLAP pairs separated by commas "
                              "(default grid: 500/0,1000/0,1000/200,2000/200)")
    analyze.add_argument("--quiet", action="store_true", help="no progress bars")

    diff = commands.add_parser("diff", help="compare two JSON reports (metrics, documents, questions)")
    diff.add_argument("old", metavar="OLD.json", help="the earlier report")
    diff.add_argument("new", metavar="NEW.json", help="the later report")
    diff.add_argument("--metric", choices=METRIC_NAMES, default="basic", help="metric gated by --fail-on-drop")
    diff.add_argument("--fail-on-drop", type=float, metavar="X", help="exit 1 when --metric fell by more than X")
    diff.add_argument("--json", metavar="FILE", help="also write the comparison as JSON")
    return parser


def _progress_bars(enabled: bool):
    """A pipeline progress callback drawing one tqdm bar per stage on stderr."""
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}

    def update(stage: str, done: int, total: int) -> None:
        if not enabled:
            return
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(total=total, desc=f"embedding {stage}", unit="text", file=sys.stderr)
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()

    return update


def _run_analyze(args: argparse.Namespace) -> int:
    from coverage_core.embeddings import EmbeddingCache
    from coverage_core.ingest import read_documents, read_questions
    from coverage_core.llm import ChatClient, LLMConfig
    from coverage_core.pipeline import (
        AnalysisConfig,
        EmbeddingConfig,
        analyze,
        build_embedder,
        check_answerability,
        check_retrieval,
    )

    if args.k < 1:
        raise InputError(f"--k must be at least 1 (got {args.k}).")
    if args.subquestions is not None and args.subquestions < 1:
        raise InputError(f"--subquestions must be at least 1 (got {args.subquestions}).")
    grid = None
    if args.compare_chunking is not None:
        from coverage_core.chunking_comparison import parse_grid

        grid = parse_grid(args.compare_chunking)
    documents = read_documents(args.docs, pdf_password=args.pdf_password)
    questions = read_questions(args.questions, question_column=args.question_column)
    _check_columns(questions, args.relevant_column, args.label_column)
    for warning in [*documents.warnings, *questions.warnings]:
        print(f"warning: {warning}", file=sys.stderr)

    config = AnalysisConfig(
        embedding=EmbeddingConfig(args.embedder, args.model, args.dimensions, args.base_url),
        chunking=ChunkingConfig(args.chunk_size, args.chunk_overlap),
        n_clusters=args.clusters,
        random_state=args.seed,
        strictness=args.strictness,
        multi_threshold=args.multi_threshold,
        multi_n=args.multi_n,
        gaps=GapConfig(gap_threshold=args.gap_threshold),
    )
    llm = None
    if args.llm_model or args.llm_base_url:
        llm = ChatClient(LLMConfig(model=args.llm_model or LLMConfig.model, base_url=args.llm_base_url))
    if args.subquestions and llm is None:
        from coverage_core.subquestions import UNAVAILABLE_REASON

        raise InputError(UNAVAILABLE_REASON)
    cache = EmbeddingCache(args.cache_dir)
    embedder = build_embedder(config.embedding)
    analysis = analyze(
        config,
        documents.documents,
        questions,
        embedder=embedder,
        cache=cache,
        llm=llm,
        progress=_progress_bars(not args.quiet),
    )
    retrieval = check_retrieval(analysis, args.relevant_column, args.k)
    labels, answerability = check_answerability(analysis, args.label_column)
    analysis.warnings.extend([*(retrieval.notes if retrieval else ()), *labels.notes])
    if answerability is not None and answerability.note:
        analysis.warnings.append(answerability.note)
    chunking = None
    if grid is not None:
        chunking = _compare_chunkings(analysis, grid, retrieval, args.k, embedder, cache, not args.quiet)
    subquestions = None
    if args.subquestions:
        subquestions = _subquestions(analysis, args.subquestions, args.k, embedder, cache, llm)
        analysis.warnings.extend(subquestions.warnings)
    analysis.warnings[:0] = [str(w) for w in [*documents.warnings, *questions.warnings]]
    inputs = {
        "documents": [document.name for document in documents.documents],
        "questions_file": Path(args.questions).name,
        "question_column": questions.question_column,
        "llm_model": llm.config.model if llm else None,
    }
    report = build_report(
        analysis, inputs, retrieval=retrieval, answerability=answerability, labels=labels, subquestions=subquestions,
        chunking=chunking,
    )
    write_report(report, args.out)
    if args.junit:
        xml = ci.junit_xml(report, args.metric, args.fail_below, args.gap_threshold)
        ci.write_junit(xml, args.junit)
    print(summary_table(analysis, retrieval, answerability, chunking))
    for warning in analysis.warnings[len(documents.warnings) + len(questions.warnings):]:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"\nReport written to {args.out}")
    if args.junit:
        print(f"JUnit XML written to {args.junit}")

    # The gate reads the report's value, so the exit code and the JUnit file agree.
    value = report["metrics"][args.metric]
    if ci.gate_failed(value, args.fail_below):
        if value is None:
            message = f"{args.metric} coverage is not defined, so it cannot meet the required {args.fail_below:.3f}."
        else:
            message = f"{args.metric} coverage {value:.3f} is below the required {args.fail_below:.3f}."
        print(message, file=sys.stderr)
        return EXIT_BELOW_THRESHOLD
    return EXIT_OK


def _check_columns(questions, relevant_column: str | None, label_column: str | None) -> None:
    """Fail before embedding when a column the user named is not in the file."""
    from coverage_core.answerability import find_label_column
    from coverage_core.retrieval import find_relevant_column

    columns = [str(c) for c in questions.frame.columns]
    if relevant_column:
        find_relevant_column(columns, relevant_column)
    if label_column:
        find_label_column(columns, label_column)


def _compare_chunkings(analysis, grid, retrieval, k: int, embedder, cache, show_progress: bool):
    """The chunking comparison table; the screening decision of ``analysis`` is held fixed."""
    from coverage_core.chunking_comparison import compare_chunkings
    from coverage_core.retrieval import relevant_from_questions

    def progress(done, total, config, step):
        if show_progress and step == "embedding":
            print(f"chunking {done + 1} of {total}: {config.chunk_size}/{config.chunk_overlap}", file=sys.stderr)

    table, warnings = compare_chunkings(
        analysis.corpus.documents,
        analysis.questions,
        analysis.question_embedding,
        grid,
        embedder,
        cache,
        config=analysis.config,
        is_outlier=analysis.is_outlier,
        relevant=relevant_from_questions(analysis.questions, retrieval.relevant_column) if retrieval else None,
        k=k,
        progress=progress,
    )
    analysis.warnings.extend(warnings)
    return table


def _subquestions(analysis, n: int, k: int, embedder, cache, llm):
    """Sub-question coverage of the first ``n`` questions (one LLM request each)."""
    from coverage_core.embeddings import embed_texts
    from coverage_core.subquestions import SubQuestionConfig, analyse_subquestions

    chosen = analysis.questions.questions[:n]
    return analyse_subquestions(
        chosen,
        analysis.question_vectors[: len(chosen)],
        analysis.corpus.vectors,
        lambda texts: embed_texts(texts, embedder, cache).vectors,
        llm,
        SubQuestionConfig(top_k=k),
    )


def _run_diff(args: argparse.Namespace) -> int:
    if args.fail_on_drop is not None and not args.fail_on_drop >= 0:
        raise InputError(f"--fail-on-drop must be 0 or more (got {args.fail_on_drop}).")
    old, new = ci.load_report(args.old), ci.load_report(args.new)
    diff = ci.diff_reports(old, new)
    print(ci.format_diff(diff, args.old, args.new))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"old": args.old, "new": args.new, **diff.to_dict()}, indent=2, ensure_ascii=False),
            encoding="utf-8",
        )
        print(f"\nComparison written to {args.json}")
    if args.fail_on_drop is None:
        return EXIT_OK
    drop = ci.metric_drop(diff, args.metric)
    if drop is None:
        raise InputError(f"{args.metric} coverage is not defined in both reports, so its drop cannot be checked.")
    if drop > args.fail_on_drop:
        print(
            f"{args.metric} coverage fell by {drop:.3f}, more than the allowed {args.fail_on_drop:.3f}.",
            file=sys.stderr,
        )
        return EXIT_BELOW_THRESHOLD
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _build_parser().parse_args(argv)
    except SystemExit as exit_request:  # --help, or a usage error already reported
        return int(exit_request.code or 0)
    try:
        if args.command == "analyze":
            return _run_analyze(args)
        if args.command == "diff":
            return _run_diff(args)
    except CoverageError as error:
        print(f"coverage_core: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    except OSError as error:
        print(f"coverage_core: could not read or write {error.filename or 'a file'}: {error.strerror}.", file=sys.stderr)
        return EXIT_UNUSABLE
    except KeyboardInterrupt:
        print("coverage_core: interrupted; embeddings computed so far are cached.", file=sys.stderr)
        return 130
    return EXIT_UNUSABLE
