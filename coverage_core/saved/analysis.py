"""An analysis saved to a folder, to explore later without embedding anything again.

:func:`save_analysis` writes the expensive part of an
:class:`~coverage_core.results.Analysis`; :func:`load_analysis` reads it back
from the folder or from a zip of it. The folder holds:

=====================  ============================================================
file                   content
=====================  ============================================================
``manifest.json``      format and schema version, creation time, provider, model,
                       dimensions, chunking (null for passages read from a vector
                       store), the analysis settings, row counts; never an API key
``chunks.parquet``     one row per passage: document, text, start, end, page,
                       cluster, topic (the automatic topic the off-topic
                       screening was judged against), vector
``documents.parquet``  one row per document: name, text, page spans
``questions.parquet``  one row per question: file row, text, token count, vector
``question_file.parquet``  the question file as read (every column, as text)
``clusters.parquet``   one row per cluster: number, centre (unit vector)
``calibration.json``   the support level τ and how it was found
``report.json``        the JSON report of the analysis (``coverage_core.outputs.report``)
``gaps.json``          the gaps as found, every field of each ``suggest.gaps.Gap``
                       and of its kept and dropped ``Suggestion`` objects
``decisions.json``     what the user did with the suggested questions, one record per
                       row of the dashboard's suggestions table, then one per deleted
                       suggestion (:mod:`coverage_core.decisions`: accepted, edited,
                       rejected); ``[]`` when nothing was decided (the command line)
=====================  ============================================================

``gaps.json`` came later: a folder without it opens with its gaps found
again (offline), and a field added to ``Gap`` or ``Suggestion`` since takes
its default, so older folders keep opening. ``decisions.json`` came with
layout version 2 (:func:`~coverage_core.saved.schema.upgrade_manifest`
opens version 1): a folder without it opens with no decisions.

The manifest is written last, so a folder whose writing was interrupted has
none and is refused as a whole.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Callable

import numpy as np
import pandas as pd

from coverage_core import wording
from coverage_core.errors import InputError
from coverage_core.inputs.memory import check_fits, memory_budget, size_words
from coverage_core.saved.schema import (
    MAX_JSON_BYTES,
    SAVED_SCHEMA_VERSION,
    check_calibration,
    check_decisions,
    check_gaps,
    check_manifest,
    check_report,
    load_json,
    upgrade_manifest,
)

SCHEMA_VERSION = SAVED_SCHEMA_VERSION
"""Version of the folder layout this program writes; :func:`load_analysis` reads it and every earlier one."""
FORMAT = "coverage-core saved analysis"
"""The manifest's ``format``: tells a saved analysis from any other JSON."""
MANIFEST = "manifest.json"
CHUNKS, DOCUMENTS, QUESTIONS = "chunks.parquet", "documents.parquet", "questions.parquet"
QUESTION_FILE, CLUSTERS = "question_file.parquet", "clusters.parquet"
CALIBRATION, REPORT, GAPS = "calibration.json", "report.json", "gaps.json"
DECISIONS = "decisions.json"
FILES = (CHUNKS, DOCUMENTS, QUESTIONS, QUESTION_FILE, CLUSTERS, CALIBRATION, REPORT, GAPS, DECISIONS)
"""Every file besides the manifest, in the order they are written."""
OPTIONAL_FILES = (GAPS, DECISIONS)
"""Files a folder saved by an earlier version may lack; it opens without them."""
MAX_UNPACKED_BYTES = 4 * 1024**3
"""Largest total a zip of a saved analysis may unpack to: a zip bomb is refused before it is read. What is
held in memory is bounded further, file by file (:func:`_file_limit`) and by the machine's memory."""
MAX_ZIP_RATIO = 100
"""Most times a zip member may unpack to its packed size, once it unpacks to more than
:data:`ZIP_RATIO_FROM_BYTES`: Parquet files are compressed already (a zip shrinks them a little), JSON shrinks
about ten times, while a zip bomb (a 1 MB zip holding a 3.9 GB ``chunks.parquet`` of zeros) shrinks thousands
of times, so it is refused before a byte of it is unpacked, whatever the manifest's counts allow."""
ZIP_RATIO_FROM_BYTES = 1024**2
"""Members unpacking to at most this many bytes are not held to :data:`MAX_ZIP_RATIO`: a small JSON file may
shrink a lot, and costs nothing to unpack."""
ZIP_READ_BYTES = 1024**2
"""A zip member is unpacked this many bytes at a time, counted against its limit as it comes."""
MAX_ZIP_MEMBERS = 256
"""Most files a zip of a saved analysis may hold: its eleven, and room for what zip tools add (``__MACOSX``)."""
MAX_TEXT_BYTES = 1024**3
"""Most text one Parquet file of a saved analysis may hold (passages, documents, the question file)."""
TEXT_BYTES_PER_ROW = 1024**2
"""Most text one passage, question or question-file row may hold: far more than any model reads at once."""
TEXT_BYTES_PER_DOCUMENT = 64 * 1024**2
"""Most text one document may hold: a long book is a few MB."""
PARQUET_ROW_BYTES = 64
"""Bytes a Parquet row may take besides its vector and text: its numbers and offsets."""
PARQUET_SLACK_BYTES = 16 * 1024**2
"""A Parquet file's own metadata and page headers, whatever its rows."""
SAVED_ANALYSES_VARIABLE = "COVERAGE_CORE_SAVED_ANALYSES"
"""Environment variable naming the folder whose sub-folders the dashboard offers to open."""


@dataclass
class SavedAnalysis:
    """What :func:`load_analysis` read: the inputs of :func:`coverage_core.measure.measure`, and the files' extras.

    ``chunking`` is None when the passages came from a vector store (they
    cannot be chunked again); ``report`` is the saved JSON report;
    ``topics`` each passage's automatic topic (None in folders saved before
    it was kept: the clusters stand in); ``gaps`` the gaps as saved, with
    their suggestions (None in folders saved before they were kept: they are
    found again); ``decisions`` what the user did with those suggestions
    (:class:`~coverage_core.decisions.SuggestionDecision`, in table order; None
    in folders saved before layout version 2).
    """

    manifest: dict
    config: Any  # config.AnalysisConfig
    corpus: Any  # results.Corpus
    questions: Any  # types.QuestionSet
    question_embedding: Any  # results.EmbeddedTexts
    clustering: Any  # results.Clustering
    calibration: Any  # calibration.Calibration
    report: dict = field(default_factory=dict)
    source: str = ""
    topics: np.ndarray | None = None
    gaps: list | None = None  # of suggest.gaps.Gap
    decisions: list | None = None  # of decisions.SuggestionDecision

    @property
    def chunking(self):
        from coverage_core.stages.chunking import ChunkingConfig

        chunking = self.manifest.get("chunking")
        return None if chunking is None else ChunkingConfig(**chunking)

    @property
    def from_vectors(self) -> bool:
        return self.manifest.get("passages") == "vectors"

    def analysis(self):
        """The analysis again from the saved vectors, clusters and τ, nothing embedded; its gaps as saved
        (the questions a model wrote are not written again), or found again offline when none were saved."""
        from coverage_core.gap_finding import find_gaps
        from coverage_core.measure import measure

        measured = measure(
            self.config, self.corpus, self.questions, self.question_embedding, self.clustering,
            calibration=self.calibration, topics=self.topics,
        )
        if self.gaps is None:
            measured = find_gaps(measured)
        else:
            measured.gaps = list(self.gaps)
        return dataclasses.replace(measured, model_choice=self.model_choice)

    @property
    def model_choice(self):
        """How the automatic choice picked the saved model (``embeddings.choice.ModelChoice``), or None."""
        from coverage_core.embeddings.choice import ModelChoice

        chosen = (self.report.get("config") or {}).get("model_choice")
        if not chosen:
            return None
        embedding = self.config.embedding
        return ModelChoice(embedding.provider, embedding.model or "", str(chosen.get("reason", "")),
                           tuple(chosen.get("languages", ())))

    def topic_clustering(self):
        """The automatic topics as a ``results.Clustering`` (centres: the members' normalised means, as
        ``ChunkClusterer`` leaves them), so opening the folder needs no clustering; None without saved topics."""
        from scipy import sparse

        from coverage_core.results import Clustering
        from coverage_core.validation import unit_rows

        if self.topics is None:
            return None
        vectors = self.corpus.vectors
        k = int(self.topics.max()) + 1 if len(self.topics) else 0
        membership = sparse.csr_matrix(
            (np.ones(len(self.topics)), (self.topics, np.arange(len(self.topics)))), shape=(k, len(self.topics))
        )
        centres = unit_rows(np.asarray(membership @ vectors.astype(np.float64)))
        return Clustering(self.topics, centres.astype(vectors.dtype, copy=False), [])


# --------------------------------------------------------------------------
# saving
# --------------------------------------------------------------------------


def save_analysis(
    analysis, directory: str | Path, *, report: dict | None = None, inputs: dict | None = None,
    from_vectors: bool = False, question_file_name: str | None = None, decisions=None,
) -> Path:
    """Write ``analysis`` to ``directory`` (created if missing); returns the folder.

    ``report`` is the JSON report to keep (built from ``analysis`` and
    ``inputs`` when None). ``from_vectors`` says the passages came from a
    vector store, so the manifest records no chunking. ``decisions`` are the
    user's :class:`~coverage_core.decisions.SuggestionDecision` objects
    (none: ``[]``), kept whole in ``decisions.json``. A folder that holds
    other files and no manifest is refused, so nothing of the user's is
    overwritten; a saved analysis in it is replaced.
    """
    from coverage_core.decisions import decision_records
    from coverage_core.outputs.report import build_report

    folder = check_folder(directory)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST).unlink(missing_ok=True)  # the folder is not a complete saved analysis until the end
    frame = _write_tables(folder, analysis)
    _write_json(folder / CALIBRATION, analysis.calibration.to_dict())
    _write_json(folder / REPORT, report if report is not None else build_report(analysis, inputs))
    _write_json(folder / GAPS, [dataclasses.asdict(gap) for gap in analysis.gaps])
    _write_json(folder / DECISIONS, decision_records(decisions or ()))
    _write_json(folder / MANIFEST, _new_manifest(analysis, frame, inputs, from_vectors, question_file_name))
    return folder


def _write_tables(folder: Path, analysis) -> pd.DataFrame:
    """Write the chunks, documents, questions, question file and cluster centres; returns the question file."""
    corpus, questions, embedding = analysis.corpus, analysis.questions, analysis.question_embedding
    chunks = corpus.chunks
    _write_parquet(folder / CHUNKS, {
        "document": [c.document for c in chunks], "text": [c.text for c in chunks],
        "start": np.array([c.start for c in chunks], dtype=np.int64),
        "end": np.array([c.end for c in chunks], dtype=np.int64),
        "page": pd.array([c.page for c in chunks], dtype="Int64"),
        "cluster": np.asarray(analysis.clustering.labels, dtype=np.int64),
        "topic": np.asarray(analysis.screening_topics, dtype=np.int64),
    }, corpus.vectors)
    _write_parquet(folder / DOCUMENTS, {
        "name": [d.name for d in corpus.documents], "text": [d.text for d in corpus.documents],
        "pages": [[[s.page, s.start, s.end] for s in d.pages] for d in corpus.documents],
    })
    counts = embedding.token_counts
    _write_parquet(folder / QUESTIONS, {
        "row": np.asarray(questions.rows, dtype=np.int64), "text": list(questions.texts),
        "token_count": pd.array(list(counts) if counts is not None else [None] * len(questions.questions), dtype="Int64"),
    }, embedding.vectors)
    frame = questions.frame.copy()
    frame.columns = [str(column) for column in frame.columns]
    _write_frame(folder / QUESTION_FILE, frame.astype(object).where(frame.notna(), None))
    _write_parquet(folder / CLUSTERS, {
        "cluster": np.arange(len(analysis.clustering.centroids), dtype=np.int64)}, analysis.clustering.centroids)
    return frame


def _new_manifest(
    analysis, frame: pd.DataFrame, inputs: dict | None, from_vectors: bool, question_file_name: str | None
) -> dict:
    """What the folder holds and how it was made, written last so a complete folder is recognisable."""
    from coverage_core.embeddings import DEFAULT_MODELS, redact_url

    corpus, questions, config = analysis.corpus, analysis.questions, analysis.config
    provider = config.embedding.provider
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "provider": provider,
        "model": config.embedding.model or DEFAULT_MODELS.get(provider),
        "dimensions": int(corpus.vectors.shape[1]),
        "base_url": redact_url(config.embedding.base_url),
        "passages": "vectors" if from_vectors else "documents",
        "chunking": None if from_vectors else dataclasses.asdict(config.chunking),
        "config": config.to_dict(),
        "counts": {
            "documents": len(corpus.documents), "chunks": len(corpus.chunks), "questions": len(questions.questions),
            "question_file_rows": len(frame), "clusters": int(len(analysis.clustering.centroids)),
        },
        "question_file": {
            "name": question_file_name, "question_column": questions.question_column, "n_blank": questions.n_blank,
            "duplicates": [[int(row), int(of)] for row, of in questions.duplicates.items()],
            "encoding": questions.encoding, "delimiter": questions.delimiter,
            "warnings": [[w.source, w.message] for w in questions.warnings],
        },
        "embedded": {
            "chunks": _embedded_record(corpus.embedded),
            "questions": _embedded_record(analysis.question_embedding),
        },
        "cluster_warnings": list(analysis.clustering.warnings),
        "inputs": inputs or {},
    }


def check_folder(directory: str | Path) -> Path:
    """``directory`` as a Path if an analysis may be saved there (missing, empty, or a saved analysis); else InputError."""
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} is a file; name a folder to save the analysis in.")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / MANIFEST).is_file():
        raise InputError(f"The folder {folder} already holds other files; name a new or empty folder to save the analysis in.")
    return folder


def _embedded_record(embedded) -> dict:
    return {"n_cached": int(embedded.n_cached), "n_embedded": int(embedded.n_embedded),
            "n_over_limit": int(embedded.n_over_limit), "token_limit": embedded.token_limit,
            "new_tokens": int(embedded.new_tokens)}


def _write_parquet(path: Path, columns: dict, vectors: np.ndarray | None = None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = {name: pa.array(values) for name, values in columns.items()}
    if vectors is not None:
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        arrays["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])
    pq.write_table(pa.table(arrays), path)


def _write_frame(path: Path, frame: pd.DataFrame) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({name: pa.array(frame[name].tolist(), type=pa.string()) for name in frame.columns})
    pq.write_table(table, path)


def _write_json(path: Path, data: dict | list) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False, default=_plain), encoding="utf-8")


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def zip_folder(directory: str | Path) -> bytes:
    """A saved analysis folder as zip bytes (its files at the zip's top level), for a download."""
    folder = Path(directory)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in (*FILES, MANIFEST):
            if name in OPTIONAL_FILES and not (folder / name).is_file():
                continue
            archive.write(folder / name, name)
    return buffer.getvalue()


# --------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------


def load_analysis(source: str | Path | bytes, name: str | None = None) -> SavedAnalysis:
    """A saved analysis from its folder, a zip file of it, or a zip's bytes (``name`` names it in messages).

    Nothing in it is trusted (:mod:`coverage_core.saved.schema`):
    every field of the manifest and of the JSON files is checked for its
    type and range, the tables for their columns' types, row counts and
    row, cluster and topic numbers that point inside the data, and each file
    for a size it can legitimately have before it is read, within the
    memory the machine can spare. Raises :class:`InputError` with one
    sentence naming the file (and field) and what to do.
    """
    read, label = _reader(source, name)
    manifest = _manifest(read, label)
    return _load(read, label, manifest)


class _Budget:
    """Bytes the files read so far hold, against :func:`~coverage_core.inputs.memory.memory_budget`: a file is refused
    before it is read when it would take the total past the budget."""

    def __init__(self, label: str):
        self.label, self.limit, self.used = label, memory_budget(), 0

    def take(self, file: str, size: int, max_bytes: int) -> None:
        if size > max_bytes:
            raise InputError(
                f"{file} in {self.label} is {size_words(size)}, more than a saved analysis of its size can hold "
                f"({size_words(max_bytes)}); save the analysis again."
            )
        self.used += size
        check_fits(self.used, f"Opening {self.label}", self.limit)


Reader = Callable[[str, int], bytes]
"""``read(file, max_bytes)``: the bytes of one file of the saved analysis, refused when larger than ``max_bytes``."""


def _reader(source, name: str | None) -> tuple[Reader, str]:
    """A function giving each file's bytes (InputError when it is missing or too large), and the source's name."""
    if isinstance(source, (bytes, bytearray)):
        return _zip_reader(io.BytesIO(source), name or "the zip file"), name or "the zip file"
    path = Path(source)
    label = name or path.name
    if path.is_dir():
        budget = _Budget(label)

        def read(file: str, max_bytes: int) -> bytes:
            target = path / file
            if not target.is_file():
                raise _missing(label, file)
            if target.resolve().parent != path.resolve():  # a link may not bring in a file from elsewhere
                raise InputError(f"The {file} of {label} is a link to a file outside the saved analysis, so it "
                                 "was not read; save the analysis again or copy the file into its folder.")
            budget.take(file, target.stat().st_size, max_bytes)
            with target.open("rb") as handle:
                data = handle.read(max_bytes + 1)
            if len(data) > max_bytes:  # it grew since: refused, not read on
                budget.take(file, len(data), max_bytes)
            return data
        return read, label
    if path.is_file() and zipfile.is_zipfile(path):
        return _zip_reader(path, label), label
    if not path.exists():
        raise InputError(f"{label} does not exist; choose a folder (or a zip of one) that an analysis was saved to.")
    raise InputError(f"{label} is neither a folder nor a zip file; choose a folder (or a zip of one) that an analysis was saved to.")


def _zip_reader(source, label: str) -> Reader:
    try:
        archive = zipfile.ZipFile(source)
        members = {info.filename: info for info in archive.infolist() if not info.is_dir()}
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        raise InputError(f"{label} is not a readable zip file; zip the saved analysis folder again.") from None
    if len(members) > MAX_ZIP_MEMBERS:
        raise InputError(
            f"{label} holds {len(members)} files, more than the {MAX_ZIP_MEMBERS} a zip of a saved analysis may; "
            "zip only the saved analysis folder."
        )
    if sum(info.file_size for info in members.values()) > MAX_UNPACKED_BYTES:
        raise InputError(
            f"{label} would unpack to more than {size_words(MAX_UNPACKED_BYTES)}; open the saved folder itself instead."
        )
    # The files sit at the top, or in one folder (a zipped folder keeps its name).
    prefixes = {str(PurePosixPath(n).parent) for n in members if PurePosixPath(n).name == MANIFEST}
    prefix = "" if "." in prefixes or not prefixes else sorted(prefixes, key=len)[0] + "/"
    budget = _Budget(label)

    def read(file: str, max_bytes: int) -> bytes:
        info = members.get(prefix + file)
        if info is None:
            raise _missing(label, file)
        budget.take(file, info.file_size, max_bytes)
        if info.file_size > max(ZIP_RATIO_FROM_BYTES, MAX_ZIP_RATIO * info.compress_size):
            raise InputError(
                f"{file} in {label} would unpack to {size_words(info.file_size)} from "
                f"{size_words(info.compress_size)}, far more than the files of a saved analysis shrink in a zip (at "
                f"most {MAX_ZIP_RATIO} times), so it was not unpacked; zip the saved analysis folder again."
            )
        try:
            data = _unpack(archive, info, min(info.file_size, max_bytes))
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, ValueError, NotImplementedError):
            raise InputError(f"{file} in {label} could not be unpacked; zip the saved analysis folder again.") from None
        if len(data) != info.file_size:
            raise InputError(f"{file} in {label} could not be unpacked; zip the saved analysis folder again.")
        return data

    return read


def _unpack(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """The bytes of the member ``info``, unpacked :data:`ZIP_READ_BYTES` at a time; ValueError as soon as more
    than ``limit`` came out. zipfile itself stops at the size the header declares, but the count here does not
    depend on the header being honest (or on zipfile's handling of it)."""
    buffer = io.BytesIO()  # getvalue() hands over its bytes without a copy
    with archive.open(info) as member:
        while True:
            piece = member.read(min(ZIP_READ_BYTES, limit + 1 - buffer.tell()))
            if not piece:
                return buffer.getvalue()
            buffer.write(piece)
            if buffer.tell() > limit:
                raise ValueError("the member unpacks to more than its limit")


class _MissingFile(InputError):
    """A file of the saved analysis is not there (an optional one may not be)."""


def _missing(label: str, file: str) -> InputError:
    if file == MANIFEST:
        return _MissingFile(
            f"{label} has no {MANIFEST}, so it is not a saved analysis; choose a folder (or a zip of one) "
            "that an analysis was saved to."
        )
    return _MissingFile(f"{label} is missing {file}; save the analysis again.")


def _manifest(read: Reader, label: str) -> dict:
    manifest = load_json(read(MANIFEST, MAX_JSON_BYTES), MANIFEST, label)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InputError(f"The {MANIFEST} of {label} does not describe a saved analysis; choose a folder an analysis was saved to.")
    return upgrade_manifest(manifest, label)


def _file_limit(n_rows: int, dimensions: int, text_per_row: int) -> int:
    """The most bytes a Parquet file of ``n_rows`` rows can legitimately take: its vectors, a few numbers per
    row, its text (at most ``text_per_row`` a row, :data:`MAX_TEXT_BYTES` in all) and the file's own metadata."""
    text = min(MAX_TEXT_BYTES, n_rows * text_per_row)
    return n_rows * (4 * dimensions + PARQUET_ROW_BYTES) + text + PARQUET_SLACK_BYTES


def _table(read: Reader, label: str, file: str, n_rows: int, columns: dict[str, str] | None, dimensions: int = 0,
           text_per_row: int | None = None):
    """The Parquet file ``file``, checked before it is decoded: its rows as the manifest says, each of
    ``columns`` of its kind (:func:`_kind_of`; None: every column is text), and its decoded size within what it
    can legitimately hold."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    limit = _file_limit(n_rows, dimensions, TEXT_BYTES_PER_ROW if text_per_row is None else text_per_row)
    data = read(file, limit)  # outside the try: a missing file says so (InputError is a ValueError too)
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        schema, metadata = parquet.schema_arrow, parquet.metadata
    except (pa.ArrowException, OSError, ValueError):
        raise InputError(f"{file} in {label} is not a readable Parquet file; save the analysis again.") from None
    columns = dict.fromkeys(schema.names, "text") if columns is None else columns
    absent = [c for c in columns if c not in schema.names]
    if absent:
        raise InputError(f"{file} in {label} lacks the {wording.plural(len(absent), 'column')} {', '.join(absent)}; save the analysis again.")
    if metadata.num_rows != n_rows:
        raise InputError(
            f"{file} in {label} has {metadata.num_rows} rows but the manifest says {n_rows}; the folder is incomplete "
            "or was changed, so save the analysis again."
        )
    for column, kind in columns.items():
        if not _kind_of(schema.field(column).type, kind, dimensions):
            raise InputError(f"The column {column} of {file} in {label} holds {str(schema.field(column).type)[:60]}, "
                             f"not {kind}; save the analysis again.")
    decoded = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    if decoded > limit:
        raise InputError(f"{file} in {label} would unpack to {size_words(decoded)}, more than a saved analysis of "
                         f"its size can hold ({size_words(limit)}); save the analysis again.")
    try:
        return parquet.read()
    except (pa.ArrowException, OSError, ValueError):
        raise InputError(f"{file} in {label} is not a readable Parquet file; save the analysis again.") from None


def _kind_of(arrow_type, kind: str, dimensions: int) -> bool:
    """Whether ``arrow_type`` is what a column of ``kind`` holds: text, whole numbers, the vectors of
    ``dimensions`` numbers, or page spans (lists of three whole numbers)."""
    import pyarrow as pa

    types = pa.types
    if kind == "text":
        return types.is_string(arrow_type) or types.is_large_string(arrow_type) or types.is_null(arrow_type)
    if kind == "whole numbers":
        return types.is_integer(arrow_type) or types.is_null(arrow_type)
    if kind == "vectors":
        return (types.is_fixed_size_list(arrow_type) and arrow_type.list_size == dimensions
                and (types.is_floating(arrow_type.value_type) or types.is_integer(arrow_type.value_type)))
    if kind == "page spans":
        inner = arrow_type.value_type if types.is_list(arrow_type) or types.is_large_list(arrow_type) else None
        return types.is_null(arrow_type) or (
            inner is not None and (types.is_list(inner) or types.is_large_list(inner) or types.is_null(inner))
            and (types.is_null(inner) or types.is_integer(inner.value_type) or types.is_null(inner.value_type)))
    return True


def _matrix(table, label: str, file: str, dimensions: int) -> np.ndarray:
    """The ``vector`` column as a (rows, dimensions) float32 array, in one pass."""
    column = table.column("vector").combine_chunks()
    if column.null_count:
        raise InputError(
            f"The vectors in {file} of {label} are not all of the manifest's {dimensions} dimensions; "
            "save the analysis again."
        )
    values = column.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(values, dtype=np.float32).reshape(len(column), dimensions)


def _load(read: Reader, label: str, manifest: dict) -> SavedAnalysis:
    from coverage_core.results import Clustering, Corpus, EmbeddedTexts

    checked = check_manifest(manifest, label, MANIFEST)
    counts, dimensions, embedded = checked["counts"], checked["dimensions"], checked["embedded"]
    text, number, vectors = "text", "whole numbers", "vectors"
    chunk_table = _table(read, label, CHUNKS, counts["chunks"], {
        "document": text, "text": text, "start": number, "end": number, "page": number, "cluster": number,
        "vector": vectors}, dimensions)
    document_table = _table(read, label, DOCUMENTS, counts["documents"],
                            {"name": text, "text": text, "pages": "page spans"}, text_per_row=TEXT_BYTES_PER_DOCUMENT)
    question_table = _table(read, label, QUESTIONS, counts["questions"],
                            {"row": number, "text": text, "token_count": number, "vector": vectors}, dimensions)
    file_table = _table(read, label, QUESTION_FILE, counts["question_file_rows"], None)
    cluster_table = _table(read, label, CLUSTERS, counts["clusters"], {"cluster": number, "vector": vectors},
                           dimensions, text_per_row=0)

    documents = _documents(document_table, label)
    chunks, labels, topics = _chunk_rows(chunk_table, label, counts["clusters"])
    chunk_vectors = _matrix(chunk_table, label, CHUNKS, dimensions)
    question_vectors = _matrix(question_table, label, QUESTIONS, dimensions)
    centroids = _matrix(cluster_table, label, CLUSTERS, dimensions)
    questions = _question_set(file_table, question_table, checked["question_file"], label)
    question_embedding = _question_embedding(question_table, question_vectors, embedded["questions"], label)
    corpus = Corpus(documents, chunks, EmbeddedTexts(chunk_vectors, **_embedded_counts(embedded["chunks"])))
    clustering = Clustering(labels, centroids, checked["cluster_warnings"])
    calibration = check_calibration(load_json(read(CALIBRATION, MAX_JSON_BYTES), CALIBRATION, label),
                                    label, CALIBRATION)
    report, corpus.token_fit = check_report(load_json(read(REPORT, MAX_JSON_BYTES), REPORT, label), label, REPORT)
    return SavedAnalysis(
        manifest, checked["config"], corpus, questions, question_embedding, clustering, calibration, report, label,
        topics, _saved_gaps(read, label, len(chunks), counts["clusters"]), _saved_decisions(read, label),
    )


def _damaged(file: str, label: str, what: str) -> InputError:
    return InputError(f"The {what} in {file} of {label} are damaged; save the analysis again.")


def _documents(document_table, label: str) -> list:
    from coverage_core.types import Document, PageSpan

    names, texts, pages = (document_table.column(c).to_pylist() for c in ("name", "text", "pages"))
    if any(value is None for value in (*names, *texts)):
        raise _damaged(DOCUMENTS, label, "document names or texts")
    spans = [[span for span in document or ()] for document in pages]
    if any(span is None or len(span) != 3 or None in span or span[0] < 1 or not 0 <= span[1] <= span[2]
           for document in spans for span in document):
        raise InputError(f"The page spans in {DOCUMENTS} of {label} are not each a page (from 1), a start and an "
                         "end; save the analysis again.")
    return [Document(name, text, tuple(PageSpan(*span) for span in document))
            for name, text, document in zip(names, texts, spans)]


def _chunk_rows(chunk_table, label: str, n_clusters: int) -> tuple[list, np.ndarray, np.ndarray | None]:
    """(chunks, cluster of each chunk, topic of each chunk or None), checked against the clusters and passages."""
    from coverage_core.types import Chunk

    chunk_columns = {c: chunk_table.column(c).to_pylist() for c in ("document", "text", "start", "end", "page")}
    if any(value is None for c in ("document", "text", "start", "end") for value in chunk_columns[c]):
        raise _damaged(CHUNKS, label, "passages")
    if any(not 0 <= start <= end for start, end in zip(chunk_columns["start"], chunk_columns["end"])):
        raise _damaged(CHUNKS, label, "passage offsets")
    if any(page is not None and page < 1 for page in chunk_columns["page"]):
        raise _damaged(CHUNKS, label, "page numbers")
    chunks = [Chunk(*values) for values in zip(*chunk_columns.values())]
    labels = _numbers(chunk_table, "cluster", label)
    if len(labels) and (labels.min() < 0 or labels.max() >= n_clusters):
        raise InputError(f"The cluster numbers in {CHUNKS} of {label} do not match {CLUSTERS}; save the analysis again.")
    if "topic" not in chunk_table.column_names:
        return chunks, labels, None
    if not _kind_of(chunk_table.schema.field("topic").type, "whole numbers", 0):
        raise _damaged(CHUNKS, label, "topic numbers")
    topics = _numbers(chunk_table, "topic", label)
    # A topic is a group of passages, so there are at most as many as passages: a larger number would
    # make the topic centres (one row per topic) as large as the number says.
    if len(topics) and (topics.min() < 0 or topics.max() >= len(topics)):
        raise InputError(f"The topic numbers in {CHUNKS} of {label} are not between 0 and the number of passages; "
                         "save the analysis again.")
    return chunks, labels, topics


def _numbers(table, column: str, label: str) -> np.ndarray:
    values = table.column(column)
    if values.null_count:
        raise _damaged(CHUNKS, label, f"{column} numbers")
    return values.to_numpy().astype(np.int64)


def _question_set(file_table, question_table, asked: dict, label: str):
    """The question set again, its file table as the user wrote it."""
    from coverage_core.types import IngestWarning, Question, QuestionSet

    frame = file_table.to_pandas().astype(object)
    frame = frame.where(frame.notna(), None) if len(frame.columns) else frame
    rows = question_table.column("row").to_pylist()
    texts = question_table.column("text").to_pylist()
    if None in rows or None in texts:
        raise _damaged(QUESTIONS, label, "questions")
    if len(frame.columns) and asked["question_column"] not in frame.columns:
        raise InputError(f"The question column {asked['question_column'][:60]!r} of {MANIFEST} is not a column of "
                         f"{QUESTION_FILE} in {label}; save the analysis again.")
    if rows and (min(rows) < 0 or max(rows) >= len(frame)):
        raise InputError(f"The question rows in {QUESTIONS} of {label} are not rows of the question file; save the analysis again.")
    return QuestionSet(
        frame=frame, question_column=asked["question_column"],
        questions=[Question(int(row), text) for row, text in zip(rows, texts)],
        n_blank=asked["n_blank"], duplicates=asked["duplicates"], encoding=asked["encoding"],
        delimiter=asked["delimiter"], warnings=[IngestWarning(source, message) for source, message in asked["warnings"]],
    )


def _question_embedding(question_table, question_vectors: np.ndarray, record: dict, label: str):
    from coverage_core.results import EmbeddedTexts

    token_counts = question_table.column("token_count").to_pandas()
    known = token_counts.notna().all() and len(token_counts)
    if known and (token_counts < 0).any():
        raise _damaged(QUESTIONS, label, "token counts")
    return EmbeddedTexts(
        question_vectors, **_embedded_counts(record),
        token_counts=token_counts.to_numpy(dtype=np.int64) if known else None,
    )


def _saved_gaps(read: Reader, label: str, n_chunks: int, n_clusters: int) -> list | None:
    """The gaps of ``gaps.json`` (None when the folder predates it); InputError when it is damaged."""
    try:
        data = read(GAPS, MAX_JSON_BYTES)
    except _MissingFile:
        return None
    try:
        records = load_json(data, GAPS, label)
    except InputError:
        raise InputError(f"The {GAPS} of {label} is damaged; save the analysis again.") from None
    return check_gaps(records, label, GAPS, n_chunks, n_clusters)


def _saved_decisions(read: Reader, label: str) -> list | None:
    """The decisions of ``decisions.json`` (None when the folder has none: saved before layout version 2);
    InputError naming the field when it is damaged."""
    try:
        data = read(DECISIONS, MAX_JSON_BYTES)
    except _MissingFile:
        return None
    return check_decisions(load_json(data, DECISIONS, label), label, DECISIONS)


def _embedded_counts(record: dict) -> dict:
    return {key: record[key] for key in ("n_cached", "n_embedded", "n_over_limit", "token_limit", "new_tokens")}


# --------------------------------------------------------------------------
# the folders an operator allows
# --------------------------------------------------------------------------


def allowed_root(environ: dict | None = None) -> Path | None:
    """The folder named by ``$COVERAGE_CORE_SAVED_ANALYSES`` (None when unset or not a folder)."""
    value = (environ if environ is not None else os.environ).get(SAVED_ANALYSES_VARIABLE, "").strip()
    if not value:
        return None
    root = Path(value).expanduser()
    return root.resolve() if root.is_dir() else None


def saved_folders(root: Path) -> list[str]:
    """Names of the sub-folders of ``root`` holding a saved analysis, sorted; links leading outside are left out."""
    resolved = Path(root).resolve()
    names = []
    for child in sorted(resolved.iterdir(), key=lambda p: p.name.casefold()):
        if child.name.startswith(".") or not child.is_dir() or child.resolve().parent != resolved:
            continue
        if (child / MANIFEST).is_file():
            names.append(child.name)
    return names


def saved_folder(root: Path, name: str) -> Path:
    """The sub-folder ``name`` of ``root``; InputError unless it is one :func:`saved_folders` lists."""
    if name not in saved_folders(root):
        raise InputError(f"{name!r} is not one of the saved analyses offered here; choose one from the list.")
    return Path(root).resolve() / name
