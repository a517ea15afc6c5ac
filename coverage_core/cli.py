"""Command line for CI pipelines.

``coverage-core analyze …`` (or ``python -m coverage_core analyze …``)
measures coverage and writes the JSON report (and, with ``--junit``, JUnit
XML; with ``--html``, the HTML report); ``coverage-core diff OLD.json
NEW.json`` compares two reports. With ``--record`` (and the other history
flags of :mod:`coverage_core.cli_history`) a run is compared with an earlier
one of the history and recorded in it.

Exit codes: 0 done; 1 the gated metric is below ``--fail-below`` (analyze),
the tested share fell by more than ``--fail-on-drop`` points since the run
compared with, a new document is untested with ``--fail-on-new-untested``, or a
question went stale with ``--fail-on-stale`` (analyze), or the metric fell by
more than ``--fail-on-drop`` (diff); 2 the input cannot be used (one
plain sentence on stderr, never a traceback); 3 an internal error, a bug to
report (one sentence; the traceback only with ``COVERAGE_CORE_DEBUG=1``); 130
interrupted. Every flag, and every path to write (its folder, and that it is
no input and no other output), is checked before any file is read or any text
embedded, and the message names the flag as typed (prefix abbreviations are
off). Everything printed has its control characters removed: a file name or a
question cannot move the cursor, recolour or rewrite the terminal.
API keys are read from the environment only, so they never land in shell
history, logs or the report.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence

from coverage_core import cli_connectors
from coverage_core.checks.retrieval import check_k
from coverage_core.cli_args import (
    VECTOR_COLUMN_FLAGS,
    add_analyze_command,
    add_diff_command,
    add_push_accepted_command,
    remote_providers,
)
from coverage_core.cli_history import HistorySession, history_output, history_request, open_session
from coverage_core.config import AnalysisConfig, EmbeddingConfig
from coverage_core.embeddings import PROVIDERS, provider_spec
from coverage_core.embeddings.choice import AUTO, ENGLISH_MODEL
from coverage_core.errors import CoverageError, InputError
from coverage_core.inputs import store_connectors, vector_store
from coverage_core.inputs.files import (
    DEFAULT_MAX_FILE_BYTES,
    check_output_file,
    check_output_folder,
    check_regular_file,
    refuse_overlaps,
)
from coverage_core.outputs import junit
from coverage_core.outputs.report import (
    METRIC_NAMES as METRIC_NAMES,  # re-exported: the metrics --metric names
    build_report,
    summary_table,
    write_report,
)
from coverage_core.session import EMBEDDING_STAGES, STAGES, distinct_questions
from coverage_core.stages.chunking import ChunkingConfig, check_chunking
from coverage_core.suggest.gaps import COVERAGE_THRESHOLD_RANGE, GapConfig
from coverage_core.suggest.progress import progress_sentence
from coverage_core.validation import SettingError, check_scalar
from coverage_core.verdicts import gate_failed

EXIT_OK, EXIT_BELOW_THRESHOLD, EXIT_UNUSABLE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
DEBUG_VARIABLE = "COVERAGE_CORE_DEBUG"
"""Set to 1 to see the traceback of an internal error (exit 3), e.g. to attach it to a bug report."""

# C0 and C1 control characters but newline and tab (ESC starts a terminal escape sequence, CR rewrites the
# line, 0x9b is an 8-bit CSI), DEL, and the bidirectional overrides that make text read differently than it is.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def plain(text: object) -> str:
    """``text`` as a string safe to print: control characters (but newline and tab) removed."""
    return _CONTROL.sub("", str(text))


def _say(text: object = "", *, error: bool = False) -> None:
    """Print ``text`` on stdout (stderr with ``error``), without control characters."""
    print(plain(text), file=sys.stderr if error else sys.stdout)


_CONSOLE_SCRIPTS = ("rag-coverage", "coverage-core")
"""The console scripts pyproject.toml installs (``[project.scripts]``)."""


def _prog(argv0: str | None = None) -> str:
    """The command as the user ran it: the console script, or ``python -m coverage_core``."""
    name = Path(sys.argv[0] if argv0 is None and sys.argv else argv0 or "").name
    command = name.removesuffix(".exe")
    return command if command in _CONSOLE_SCRIPTS else "python -m coverage_core"


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        # No prefix abbreviations: every message names a flag exactly as typed.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # one sentence, no usage dump
        self.exit(EXIT_UNUSABLE, plain(f"coverage_core: {message} (see --help).") + "\n")


def _build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    prog = prog or _prog()
    parser = _Parser(
        prog=prog,
        description="Semantic coverage of a RAG test set. Run as coverage-core or python -m coverage_core.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_analyze_command(commands)
    add_diff_command(commands)
    add_push_accepted_command(commands)
    return parser


class _ProgressBars:
    """A stage progress callback (:data:`~coverage_core.embedding_steps.Progress`): one tqdm bar per stage on stderr.

    :meth:`close` ends every bar still drawn (with a newline), so a message
    printed after a failure starts on its own line instead of on the bar's.
    """

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bars: dict = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            unit = "text" if stage in EMBEDDING_STAGES else "step"
            bar = self.bars[stage] = tqdm(total=total, desc=STAGES.get(stage, stage), unit=unit, file=sys.stderr)
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()  # a second close does nothing


class _WritingLines:
    """Prints the gap writer's progress on stderr: a line per gap, at most one per ``every`` seconds, and the last."""

    def __init__(self, enabled: bool, every: float = 3.0):
        self.enabled, self.every, self.last = enabled, every, None

    def __call__(self, done: int, total: int, seconds_left: float | None) -> None:
        now = time.monotonic()
        if self.enabled and (done >= total or self.last is None or now - self.last >= self.every):
            self.last = now
            _say(progress_sentence(done, total, seconds_left), error=True)


# The core's settings as its checks name them (check_scalar's ``name``), and
# the flag that sets each: a refusal on the command line names the flag.
_SETTING_FLAGS = {
    "dimensions": "--dimensions",
    "n_clusters": "--clusters",
    "random_state": "--seed",
    "strictness": "--strictness",
    "multi_threshold": "--multi-threshold",
    "multi_n": "--multi-n",
    "support_threshold": "--support-threshold",
    "gap_threshold": "--gap-threshold",
    "n_suggestions": "--suggest",
    "n_written_gaps": "--written-gaps",
    "retrieval_k": "--k",
}
"""The field a core :class:`SettingError` names (``setting``) -> the flag that sets it."""


@contextmanager
def _named_by_flag():
    """A core :class:`SettingError` raised inside becomes the same sentence starting with its flag."""
    try:
        yield
    except SettingError as error:
        flag = _SETTING_FLAGS.get(error.setting)
        if flag is None:
            raise
        raise InputError(f"{flag} {error.requirement}") from None


def _analysis_settings(args: argparse.Namespace):
    """The AnalysisConfig and chunking grid the flags ask for; InputError naming the flag if one is unusable.

    Runs before any file is read or any text embedded. The flags are only
    mapped onto the core's configs and checks, which hold every limit.
    """
    _check_model_without_embedder(args)
    with _named_by_flag():
        # check_chunking first: its sentence about the two sizes names both flags.
        check_chunking(args.chunk_size, args.chunk_overlap, "--chunk-size", "--chunk-overlap")
        check_k(args.k)  # before the config, which holds it too: its sentence names the flag
        config = AnalysisConfig(
            embedding=EmbeddingConfig(args.embedder, args.model, args.dimensions, args.base_url),
            chunking=ChunkingConfig(args.chunk_size, args.chunk_overlap),
            n_clusters=args.clusters,
            random_state=args.seed,
            strictness=args.strictness,
            multi_threshold=args.multi_threshold,
            multi_n=args.multi_n,
            gaps=GapConfig(gap_threshold=args.gap_threshold, rule=args.gap_rule, n_suggestions=args.suggest,
                           n_written_gaps=args.written_gaps),
            support_threshold=args.support_threshold,
            retrieval_k=args.k,
        )
    _check_unconfigured_flags(args)
    _check_flag_combinations(args)
    grid = _chunking_grid(args.compare_chunking) if args.compare_chunking is not None else None
    return config, grid


# Model name families of the paid providers: a --model of theirs without --embedder is named back to its provider.
_MODEL_FAMILIES = (("text-embedding-", "openai"), ("voyage-", "voyage"))


def _check_model_without_embedder(args: argparse.Namespace) -> None:
    """--model with the automatic choice (no --embedder): a bundled model's name picks its provider, since
    nothing leaves this server; any other name is refused in one sentence naming the --embedder to add.

    The automatic choice would otherwise drop the name silently. A provider that sends texts is never picked
    from a model name: sending the documents, and spending the operator's key, stay an explicit choice.
    """
    model = (args.model or "").strip()
    if args.embedder != AUTO or not model:
        return
    owners = [spec for name, spec in PROVIDERS.items() if name != AUTO and model in spec.models]
    if len(owners) == 1 and not owners[0].remote:
        args.embedder = owners[0].name
        return
    remote = owners[0] if owners else next(
        (PROVIDERS[name] for prefix, name in _MODEL_FAMILIES if model.lower().startswith(prefix) and name in PROVIDERS),
        None)
    if remote is not None:
        raise InputError(f"--model {model} is a model of {remote.label}; add --embedder {remote.name} to embed with "
                         f"it (the texts are then sent to {remote.label}), or leave --model out for the automatic "
                         "choice.")
    choices = ", ".join(name for name in PROVIDERS if name != AUTO)
    raise InputError(f"--model {model} needs --embedder to say which provider runs it (one of {choices}; local "
                     "for a sentence-transformers model or folder), or leave --model out for the automatic choice.")


def _check_unconfigured_flags(args: argparse.Namespace) -> None:
    """The flags no config of the core holds: the gate, how many questions to split, Ray workers."""
    if args.fail_below is not None:
        low, high = COVERAGE_THRESHOLD_RANGE
        check_scalar(args.fail_below, "--fail-below", float, min_val=low, max_val=high, include_boundaries="right")
    if args.subquestions is not None:
        check_scalar(args.subquestions, "--subquestions", int, min_val=1)
    if args.ray_workers is not None:
        from coverage_core.embeddings.ray_embedding import check_num_workers

        check_num_workers(args.ray_workers, "--ray-workers")
    _check_max_concurrency(args.max_concurrency, args.embedder)


def _check_flag_combinations(args: argparse.Namespace) -> None:
    """Flags that need another flag or exclude one; Ray and the --save-analysis folder, before anything is read."""
    if args.subquestions and not (args.llm_model or args.llm_base_url):
        raise InputError(
            "--subquestions needs an LLM to break questions into sub-questions; add --llm-model "
            "(with OPENAI_API_KEY) or --llm-base-url (an OpenAI-compatible server such as a local Ollama)."
        )
    if args.vectors is None:
        named = [f"--{role}-column" for role, _ in VECTOR_COLUMN_FLAGS if getattr(args, f"{role}_column")]
        if named:
            raise InputError(f"{', '.join(named)} names a column of the --vectors file; add --vectors PATH or leave it out.")
    elif args.compare_chunking is not None:
        raise InputError(
            "--compare-chunking chunks the documents again, which vectors from a store do not allow; "
            "use it with --docs."
        )
    if args.ray_workers is not None and not args.ray_address:
        raise InputError("--ray-workers sets the Ray workers; add --ray-address (e.g. local) or leave it out.")
    if args.ray_address:
        from coverage_core.embeddings.ray_embedding import import_ray

        import_ray()  # one sentence saying how to install Ray, before anything is read
    if args.save_analysis:
        from coverage_core.saved.analysis import check_folder

        check_folder(args.save_analysis)
    args.history_request = history_request(args)  # None unless a history flag or variable asks for one


def _check_paths(args: argparse.Namespace) -> None:
    """Before any work: every output can be written, and none is an input or another output (resolved paths)."""
    outputs = [(flag, path) for flag, path in (("--out", args.out), ("--junit", args.junit), ("--html", args.html))
               if path]
    outputs += history_output(args.history_request)
    for flag, path in outputs:
        check_output_file(path, flag)
    if args.save_analysis:
        check_output_folder(args.save_analysis, "--save-analysis")
    vectors = args.vectors
    if vectors is not None and store_connectors.is_store_address(vectors):
        vectors = store_connectors.parse_store_address(vectors).path  # its folder: no output may go into it
    elif vectors is not None and not os.path.isdir(vectors):
        check_regular_file(vectors, "--vectors file")  # a device or FIFO would never end
    cli_connectors.check_addresses(args)  # a bad Phoenix address is one sentence before anything is read
    if args.traffic and not cli_connectors.is_phoenix_address(args.traffic):
        check_regular_file(args.traffic, "query log")  # refused before a model is chosen, not after
    inputs = [("--questions", args.questions), *(("--docs", path) for path in args.docs or ()),
              *((flag, path) for flag, path in (("--traffic", args.traffic), ("--vectors", vectors)) if path)]
    from coverage_core.inputs.ingest import DOCUMENT_SUFFIXES

    refuse_overlaps(inputs, outputs, [("--save-analysis", args.save_analysis)] if args.save_analysis else [],
                    read_suffixes={"--docs": DOCUMENT_SUFFIXES})


def _check_max_concurrency(value: int | None, provider: str) -> None:
    """InputError unless --max-concurrency is at least 1 and ``provider`` sends requests it could limit."""
    if value is not None:
        check_scalar(value, "--max-concurrency", int, min_val=1)
    spec = provider_spec(provider)
    if value is not None and not spec.remote:
        raise InputError(
            f"--max-concurrency limits requests to {remote_providers(' or ')}; {spec.label} sends none, "
            "so leave it out."
        )


def _chunking_grid(text: str):
    """The configurations of ``--compare-chunking``; InputError naming the flag and the bad pair."""
    from coverage_core.chunking_comparison import parse_grid

    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            parse_grid(part)
        except InputError as error:
            numbers = re.fullmatch(r"(\d+)\s*(?:/\s*(\d+))?", part)
            if numbers:  # written right, but not a configuration: say why in the flag's own terms
                try:
                    check_chunking(int(numbers[1]), int(numbers[2] or 0), "SIZE", "OVERLAP")
                except InputError as named:
                    raise InputError(f"--compare-chunking {part}: {named}") from None
            raise InputError(f"--compare-chunking: {_clause(error)}") from None
    try:
        return parse_grid(text)
    except InputError as error:  # nothing left, e.g. only commas
        raise InputError(f"--compare-chunking: {_clause(error)}") from None


def _clause(error: Exception) -> str:
    """A core message continuing a sentence the CLI started ("The grid …" -> "the grid …")."""
    text = str(error)
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _embedder(config, args: argparse.Namespace):
    """The embedder (nothing is loaded or sent yet); a --dimensions the model cannot give is named as such."""

    from coverage_core.embedding_steps import build_embedder  # looked up now, so tests can stand in a fake

    limits = {} if args.max_concurrency is None else {"max_concurrency": args.max_concurrency}
    try:
        return build_embedder(config.embedding, **limits)
    except InputError as error:
        if args.dimensions is None:
            raise
        try:
            build_embedder(dataclasses.replace(config.embedding, dimensions=None), **limits)
            without = None
        except InputError as other:
            without = str(other)
        if without == str(error):  # not about the dimensions (e.g. an unknown model)
            raise
        raise InputError(f"--dimensions {args.dimensions} cannot be used: {_clause(error)}") from None


def _run_analyze(args: argparse.Namespace) -> int:
    # Every flag is checked, and the embedder and LLM client set up (no
    # model loaded, nothing sent), before any file is read.
    config, grid = _analysis_settings(args)
    _check_paths(args)
    # Opened before anything is read or embedded: a damaged or unreachable history costs nothing.
    history = open_session(args.history_request)
    try:
        return _analyze(args, config, grid, history)
    finally:
        if history is not None:
            history.close()


def _analyze(args: argparse.Namespace, config, grid, history: HistorySession | None) -> int:
    from coverage_core.embeddings import EmbeddingCache

    embedder = _embedder(config, args)
    llm = _llm_client(args)
    documents, questions = _read_inputs(args)
    questions = distinct_questions(questions)  # repeats are reported, and measured once
    config, embedder, choice = _choose_model(config, args, documents, questions, embedder)
    traffic_log = _read_traffic(args)
    cache = EmbeddingCache(args.cache_dir)
    if args.ray_address:
        _embed_on_ray_first(args, config, documents, questions, embedder, cache)
    if isinstance(documents, _VectorInput):
        analysis = _analyze_vectors(config, documents, questions, embedder, cache, llm, args.quiet)
    else:
        analysis = _analyze_with_progress(config, documents, questions, embedder, cache, llm, args.quiet)
    retrieval, labels, answerability = _run_retrieval_and_answerability_checks(analysis, args)
    chunking = None
    if grid is not None:
        chunking = _compare_chunkings(analysis, grid, retrieval, args.k, embedder, cache, not args.quiet)
    subquestions = _score_subquestions(analysis, args, llm, embedder, cache)
    traffic = _run_traffic_check(analysis, traffic_log, embedder, cache, args.quiet)
    if choice is not None:
        analysis = dataclasses.replace(analysis, model_choice=choice)
    analysis.warnings[:0] = [str(w) for w in [*documents.warnings, *questions.warnings]]
    checks = dict(retrieval=retrieval, answerability=answerability, labels=labels, subquestions=subquestions,
                  chunking=chunking)
    report = _build_report(args, analysis, documents, questions, llm, checks, traffic)
    if history is not None:
        history.compare(analysis, report, args.relevant_column)  # report["since"], before any output is written
    _write_outputs(args, report, analysis, checks)
    if args.save_analysis:
        from coverage_core.saved.analysis import save_analysis

        save_analysis(analysis, args.save_analysis, report=report, from_vectors=isinstance(documents, _VectorInput),
                      question_file_name=Path(args.questions).name, inputs=report["config"].get("inputs"))
    if history is not None:
        history.record()
    _print_results(args, analysis, retrieval, answerability, chunking,
                   n_shown=len(documents.warnings) + len(questions.warnings), traffic=traffic, history=history)
    return _gate(report, args, history)


def _choose_model(config, args: argparse.Namespace, documents, questions, embedder):
    """``(config, embedder, choice)``: ``--embedder auto`` made concrete from the inputs' languages
    (:func:`coverage_core.session.choose_embedding`); other settings unchanged, with no choice."""
    if config.embedding.provider != AUTO:
        return config, embedder, None
    if isinstance(documents, _VectorInput):
        # Vectors made elsewhere: the English default, as before the automatic choice; the vectors' size is
        # checked against it, and a mismatch names --embedder and --model.
        return dataclasses.replace(config, embedding=EmbeddingConfig(ENGLISH_MODEL[0])), embedder, None
    from coverage_core.session import choose_embedding

    config, choice = choose_embedding(config, documents.documents, questions)
    return config, _embedder(config, args), choice


def _llm_client(args: argparse.Namespace):
    """The chat client the LLM flags ask for (nothing is sent yet); None without them."""
    from coverage_core.suggest.llm import DEFAULT_LLM_MODEL, ChatClient, LLMConfig

    if args.llm_model or args.llm_base_url:
        return ChatClient(LLMConfig(model=args.llm_model or DEFAULT_LLM_MODEL, base_url=args.llm_base_url))
    return None


class _VectorInput:
    """Chunk vectors read with --vectors, standing where the documents would (``documents``, ``warnings``)."""

    def __init__(self, found: vector_store.VectorCorpus):
        self.found = found
        self.documents = found.corpus.documents
        self.warnings = list(found.warnings)


def _read_inputs(args: argparse.Namespace):
    """The documents (or the --vectors corpus) and questions, with what reading them had to say printed to stderr."""
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.inputs.questions import read_questions

    if args.vectors is not None:
        columns = vector_store.VectorColumns(
            **{role: getattr(args, f"{role}_column") for role, _ in VECTOR_COLUMN_FLAGS}
        )
        documents = _VectorInput(store_connectors.read_vector_source(args.vectors, columns))
    else:
        documents = read_documents(args.docs, pdf_password=args.pdf_password, follow_symlinks=args.follow_symlinks)
    if cli_connectors.is_phoenix_address(args.questions):
        questions = cli_connectors.read_dataset(args)
    else:
        questions = read_questions(args.questions, question_column=args.question_column)
    _check_columns(questions, args.relevant_column, args.label_column)
    for warning in [*documents.warnings, *questions.warnings]:
        _say(f"warning: {_with_flags(warning)}", error=True)
    return documents, questions


def _analyze_with_progress(config, documents, questions, embedder, cache, llm, quiet: bool):
    from coverage_core.session import analyze

    progress = _ProgressBars(not quiet)
    try:
        return analyze(
            config,
            documents.documents,
            questions,
            embedder=embedder,
            cache=cache,
            llm=llm,
            progress=progress,
            writing_progress=_WritingLines(not quiet),
        )
    finally:
        progress.close()


def _analyze_vectors(config, vectors: _VectorInput, questions, embedder, cache, llm, quiet: bool):
    """``session.analyze_corpus`` on the --vectors corpus, once the model is seen to make vectors of its size."""
    from coverage_core.session import analyze_corpus

    vector_store.check_model(vectors.found, embedder, config.embedding, questions.texts, cache)
    progress = _ProgressBars(not quiet)
    try:
        return analyze_corpus(config, vectors.found.corpus, questions, embedder=embedder, cache=cache, llm=llm,
                              progress=progress, writing_progress=_WritingLines(not quiet))
    finally:
        progress.close()


def _run_retrieval_and_answerability_checks(analysis, args: argparse.Namespace):
    """The retrieval check, the answerability labels and their check; their notes join the warnings."""
    from coverage_core.checks.runner import run_label_checks

    found = run_label_checks(analysis, args.relevant_column, args.k, args.label_column)
    found.raise_first_error()  # a column named on the command line must be usable
    analysis.warnings.extend(found.notes)
    return found.retrieval, found.labels, found.answerability


def _score_subquestions(analysis, args: argparse.Namespace, llm, embedder, cache):
    """The sub-question check of ``--subquestions``, its warnings joining the analysis's; None without the flag."""
    if not args.subquestions:
        return None
    from coverage_core.checks.runner import run_subquestion_check
    from coverage_core.checks.subquestions import SubQuestionConfig

    subquestions = run_subquestion_check(
        analysis, args.subquestions, llm, embedder, cache, config=SubQuestionConfig(top_k=args.k)
    )
    analysis.warnings.extend(subquestions.warnings)
    return subquestions


def _embed_on_ray_first(args, config, documents, questions, embedder, cache) -> None:
    """With --ray-address: embed every chunk and question on Ray into the cache, where the analysis then finds them."""
    from coverage_core.embedding_steps import chunk_corpus, token_limit
    from coverage_core.embeddings.ray_embedding import embed_on_ray

    # The chunks the analysis will embed: fitted to the model's input limit as it fits them.
    texts = [] if isinstance(documents, _VectorInput) else [
        chunk.text for chunk in chunk_corpus(documents.documents, config.chunking, token_limit(embedder, cache))]
    texts += list(questions.texts)
    progress = _ProgressBars(not args.quiet)
    try:
        embed_on_ray(texts, embedder, cache, address=args.ray_address, num_workers=args.ray_workers,
                     progress=lambda done, total: progress("on Ray", done, total))
    finally:
        progress.close()


def _read_traffic(args: argparse.Namespace):
    """The --traffic query log, read (and its problems reported) before anything is embedded; None without."""
    if not args.traffic:
        return None
    from coverage_core.checks.query_log import read_traffic

    if cli_connectors.is_phoenix_address(args.traffic):
        return cli_connectors.read_project(args)
    return read_traffic(args.traffic)


def _run_traffic_check(analysis, log, embedder, cache, quiet: bool):
    """The production-traffic comparison of ``log`` (None without); what reading the log said joins the warnings."""
    if log is None:
        return None
    from coverage_core.checks.runner import run_traffic_check

    progress = _ProgressBars(not quiet)
    try:
        result = run_traffic_check(analysis, log, embedder, cache, progress=progress)
    finally:
        progress.close()
    analysis.warnings.extend(log.warnings)  # printed with the others at the end
    return result


def _build_report(args, analysis, documents, questions, llm, checks: dict, traffic=None) -> dict:
    """The JSON report of the run (written by :func:`_write_outputs`)."""
    inputs = {
        **({"vectors": documents.found.source} if isinstance(documents, _VectorInput) else {}),
        "documents": [document.name for document in documents.documents],
        "questions_file": cli_connectors.input_name(args.questions),
        "question_column": questions.question_column,
        "llm_model": llm.config.model if llm else None,
    }
    report = build_report(analysis, inputs, **checks)
    if traffic is not None:
        report["config"].setdefault("inputs", {})["traffic_file"] = cli_connectors.input_name(args.traffic)
        report["traffic"] = traffic.to_dict()
    return report


def _write_outputs(args, report: dict, analysis, checks: dict) -> None:
    """Write the JSON report, and the JUnit XML with ``--junit`` and the HTML report with ``--html``."""
    write_report(report, args.out)
    if args.junit:
        fail_on_drop = args.history_request.fail_on_drop if args.history_request else None
        fail_on_stale = bool(args.history_request and args.history_request.fail_on_stale)
        xml = junit.junit_xml(report, args.metric, args.fail_below, args.gap_threshold, fail_on_drop=fail_on_drop,
                              fail_on_stale=fail_on_stale)
        junit.write_junit(xml, args.junit)
    if args.html:
        from coverage_core.outputs.html_report import build_html_report

        page = build_html_report(analysis, inputs=report["config"].get("inputs"), since=report.get("since"),
                                 **{name: checks[name] for name in ("retrieval", "answerability", "labels",
                                                                    "subquestions")})
        Path(args.html).write_text(page, encoding="utf-8")


def _print_results(args, analysis, retrieval, answerability, chunking, n_shown: int, traffic=None,
                   history: HistorySession | None = None) -> None:
    """The summary table (and what changed since the run compared with), the warnings not printed yet (the
    first ``n_shown`` were) and where the files went."""
    _say(summary_table(analysis, retrieval, answerability, chunking))
    if traffic is not None:
        _say(traffic.headline())
    if history is not None:
        _say("\n" + "\n".join(history.summary_lines()))
    for warning in analysis.warnings[n_shown:]:
        _say(f"warning: {warning}", error=True)
    _say(f"\nReport written to {args.out}")
    if args.save_analysis:
        _say(f"Analysis saved to {args.save_analysis}")
    if args.junit:
        _say(f"JUnit XML written to {args.junit}")
    if args.html:
        _say(f"HTML report written to {args.html}")
    if history is not None and history.recorded_line():
        _say(history.recorded_line())


def _gate(report: dict, args: argparse.Namespace, history: HistorySession | None = None) -> int:
    # The gates read the report's values, so the exit code and the JUnit file agree; every failed one is said.
    value = report["metrics"][args.metric]
    failures = history.gate_failures() if history is not None else []
    if gate_failed(value, args.fail_below):
        if value is None:
            message = f"{args.metric} coverage is not defined, so it cannot meet the required {args.fail_below:.3f}."
        else:
            message = f"{args.metric} coverage {value:.3f} is below the required {args.fail_below:.3f}."
        failures.insert(0, message)
    for message in failures:
        _say(message, error=True)
    return EXIT_BELOW_THRESHOLD if failures else EXIT_OK


def _check_columns(questions, relevant_column: str | None, label_column: str | None) -> None:
    """Fail before embedding when a column the user named is not in the file."""
    from coverage_core.checks.answerability_labels import find_label_column
    from coverage_core.checks.retrieval_labels import find_relevant_column

    columns = [str(c) for c in questions.frame.columns]
    if relevant_column:
        find_relevant_column(columns, relevant_column)
    if label_column:
        find_label_column(columns, label_column)


def _compare_chunkings(analysis, grid, retrieval, k: int, embedder, cache, show_progress: bool):
    """The chunking comparison table; the screening decision of ``analysis`` is held fixed."""
    from coverage_core.checks.retrieval_labels import relevant_from_questions
    from coverage_core.chunking_comparison import compare_chunkings

    def progress(done, total, config, step):
        if show_progress and step == "embedding":
            _say(f"chunking {done + 1} of {total}: {config.chunk_size}/{config.chunk_overlap}", error=True)

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


def _run_diff(args: argparse.Namespace) -> int:
    if args.fail_on_drop is not None:
        check_scalar(args.fail_on_drop, "--fail-on-drop", float, min_val=0)
    for path in (args.old, args.new):
        check_regular_file(path, "report", DEFAULT_MAX_FILE_BYTES)  # /dev/zero or a FIFO would never end
    if args.json:
        check_output_file(args.json, "--json")
        refuse_overlaps([("OLD.json", args.old), ("NEW.json", args.new)], [("--json", args.json)])
    old, new = junit.load_report(args.old), junit.load_report(args.new)
    diff = junit.diff_reports(old, new)
    _say(junit.format_diff(diff, args.old, args.new))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"old": args.old, "new": args.new, **diff.to_dict()}, indent=2, ensure_ascii=False),
            encoding="utf-8",
        )
        _say(f"\nComparison written to {args.json}")
    if args.fail_on_drop is None:
        return EXIT_OK
    drop = junit.metric_drop(diff, args.metric)
    if drop is None:
        raise InputError(f"{args.metric} coverage is not defined in both reports, so its drop cannot be checked.")
    if drop > args.fail_on_drop:
        _say(f"{args.metric} coverage fell by {drop:.3f}, more than the allowed {args.fail_on_drop:.3f}.", error=True)
        return EXIT_BELOW_THRESHOLD
    return EXIT_OK


# The core's messages name settings in words, as the dashboard shows them; on the
# command line, also say which flag sets them.
_FLAG_HINTS = (
    ("question column", "--question-column"), ("PDF password", "--pdf-password"),
    *((f"{role} column", f"--{role}-column") for role, _ in VECTOR_COLUMN_FLAGS),
    ("name the model that made them", "--embedder, --model"),
    ("named vector", "&vector=NAME in the --vectors address"),
)


def _with_flags(message: object) -> str:
    """``message`` plus the flags that set what it names, e.g. "(command line: --pdf-password)"."""
    text = str(message)
    flags = [flag for words, flag in _FLAG_HINTS if words in text and flag not in text]
    return f"{text} (command line: {', '.join(flags)})" if flags else text


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
        if args.command == "push-accepted":
            _say(cli_connectors.push_accepted(args))
            return EXIT_OK
    except CoverageError as error:
        _say(f"coverage_core: {_with_flags(error)}", error=True)
        return EXIT_UNUSABLE
    except OSError as error:
        _say(f"coverage_core: could not read or write {error.filename or 'a file'}: {error.strerror}.", error=True)
        return EXIT_UNUSABLE
    except KeyboardInterrupt:
        _say("coverage_core: interrupted; embeddings computed so far are cached.", error=True)
        return EXIT_INTERRUPTED
    except Exception as error:  # a bug: its own exit code, so a CI never takes it for a failed gate
        return _internal_error(error)
    return EXIT_UNUSABLE


def _internal_error(error: Exception) -> int:
    """One sentence asking to report an unexpected exception (its traceback with COVERAGE_CORE_DEBUG=1)."""
    if isinstance(error, MemoryError):  # the inputs are too large for this machine: the user can act on it
        _say("coverage_core: the analysis ran out of memory; use fewer documents or questions, or a machine with "
             "more memory.", error=True)
        return EXIT_UNUSABLE
    if os.environ.get(DEBUG_VARIABLE, "").strip() not in ("", "0"):
        _say("".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip(), error=True)
    _say(f"coverage_core: internal error ({type(error).__name__}), a bug in coverage_core; please report it to "
         f"its maintainers with the command you ran (set {DEBUG_VARIABLE}=1 to see the traceback).", error=True)
    return EXIT_INTERNAL
