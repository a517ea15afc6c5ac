"""Chunk vectors the user already has: a Parquet file or a LanceDB table (Qdrant and Chroma collections:
:mod:`coverage_core.inputs.store_connectors`).

Real knowledge bases are embedded once, into a vector store. Instead of
reading and embedding the documents again, :func:`read_vectors` reads the
store's rows (text, vector, source document, optional page) and builds the
same :class:`~coverage_core.results.Corpus` that embedding would, so every
later stage (:func:`coverage_core.session.analyze_corpus`) is unchanged.
The questions must then be embedded with the model that made the vectors;
:func:`check_dimensions` catches the clearest mismatch before anything else
is embedded.

Rows that cannot be used (no vector, NaN or infinite values, a vector of
another length than most, an all-zero vector, no text) are left out with one
warning per kind naming the first rows; only a file with no usable row at
all stops the run.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from coverage_core.errors import InputError
from coverage_core.inputs.memory import check_fits, memory_budget
from coverage_core.invisible import one_line_name
from coverage_core.results import Corpus
from coverage_core.types import Chunk, Document, PageSpan
from coverage_core.validation import listed_columns, resolve_column, unit_rows

__all__ = [
    "DOCUMENT_COLUMN_NAMES",
    "PAGE_COLUMN_NAMES",
    "TEXT_COLUMN_NAMES",
    "VECTOR_COLUMN_NAMES",
    "VectorColumns",
    "VectorCorpus",
    "check_dimensions",
    "check_model",
    "first_line",
    "read_vector_table",
    "read_vectors",
    "read_vectors_bytes",
    "resolve_columns",
]

TEXT_COLUMN_NAMES = ("text", "chunk", "content", "page_content", "chunk_text", "passage", "document_text")
"""Names the passage-text column is detected by, earlier ones preferred (LangChain stores ``page_content``)."""
VECTOR_COLUMN_NAMES = ("vector", "embedding", "embeddings", "values", "vectors", "emb")
"""Names the vector column is detected by (LanceDB's default is ``vector``, Pinecone exports ``values``)."""
DOCUMENT_COLUMN_NAMES = (
    "document", "source", "doc_id", "document_id", "file", "filename", "file_name", "path", "doc", "title",
)
"""Names the source-document column is detected by."""
PAGE_COLUMN_NAMES = ("page", "page_number", "page_no", "pagenumber", "page_num")
"""Names the optional page column is detected by."""

SHOWN_ROWS = 5
"""Row numbers a warning names before saying "and N more"."""
READ_BATCH_ROWS = 8192
"""Rows decoded at a time from a Parquet file: bounds the reader's working memory at any row-group size."""

ROW_OVERHEAD_BYTES = 512
"""Memory a row takes besides its vector and text once read: its passage, offsets and Python objects."""
TEXT_COPIES = 3
"""Times a row's text is held once read: the Arrow column, the passage, its document's joined text."""
MAX_PAGE_NUMBER = 10**7
"""Largest page number taken from a page column; larger ones (and fractions, NaN, words) are not pages."""

_PASSAGE_SEPARATOR = "\n\n"
"""Between the passages of one document when its text is rebuilt from them (as PDF pages are joined)."""


@dataclass(frozen=True)
class VectorColumns:
    """Which column holds what; None detects it by name (``*_COLUMN_NAMES``)."""

    text: str | None = None
    vector: str | None = None
    document: str | None = None
    page: str | None = None


@dataclass
class VectorCorpus:
    """What :func:`read_vectors` found: the corpus, the columns it read, and what it left out.

    ``corpus`` is a :class:`~coverage_core.results.Corpus` of the usable
    rows in file order (rows ``kept`` of the file, 0-based), with unit-length
    vectors. Each document's text is its passages joined by a blank line, so
    chunk offsets point into it as for chunked documents; overlapping
    passages therefore repeat their overlap.
    """

    corpus: Corpus
    columns: VectorColumns
    source: str
    n_rows: int
    kept: np.ndarray
    warnings: list[str] = field(default_factory=list)

    @property
    def dimensions(self) -> int:
        return int(self.corpus.vectors.shape[1])


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------


def read_vectors(path, columns: VectorColumns = VectorColumns()) -> VectorCorpus:
    """The chunk vectors in a Parquet file or a LanceDB table folder.

    ``path`` is a ``.parquet`` file (or a folder of Parquet files, read as
    one dataset), a LanceDB table folder (``name.lance``) or a LanceDB
    database folder holding exactly one table. A Qdrant or Chroma
    collection is read by :mod:`~coverage_core.inputs.store_connectors`
    (``read_vector_source`` takes either). Raises :class:`InputError` when
    the path cannot be read or holds no usable row.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"The vector file {path} does not exist; give a Parquet file or a LanceDB table folder.")
    # No local name for the table: read_vector_table lets go of it once the vectors are out.
    lance = path.is_dir() and _is_lance(path)
    return read_vector_table(
        _read_lance(path) if lance else _read_parquet(path, path.name, columns), columns, source=path.name
    )


def read_vectors_bytes(data: bytes, name: str, columns: VectorColumns = VectorColumns()) -> VectorCorpus:
    """The chunk vectors of an uploaded Parquet file (its bytes); as :func:`read_vectors`."""
    return read_vector_table(_read_parquet(io.BytesIO(data), name, columns), columns, source=name)


def _read_parquet(source, name: str, columns: VectorColumns):
    """The four columns of a Parquet file or folder (only those are read: a store's other columns can be large)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    budget = memory_budget()
    try:
        if isinstance(source, Path) and source.is_dir():
            dataset = pq.ParquetDataset(source)
            wanted = _wanted(dataset.schema.names, columns, name)
            _check_parquet_size([fragment.metadata for fragment in dataset.fragments], dataset.schema, wanted,
                                name, budget)
            return dataset.read(columns=wanted)
        parquet = pq.ParquetFile(source)
        wanted = _wanted(parquet.schema_arrow.names, columns, name)
        # Before anything is decoded: a small file can declare millions of rows of compressed zeros.
        _check_parquet_size([parquet.metadata], parquet.schema_arrow, wanted, name, budget)
        # In batches: decoding a whole row group of list values at once takes several times its size.
        batches, held = [], 0
        for batch in parquet.iter_batches(batch_size=READ_BATCH_ROWS, columns=wanted):
            held += batch.nbytes
            # The metadata may understate the data; what is decoded is counted as it comes, with the
            # float32 matrix still to be made from it.
            check_fits(2 * held, f"The vectors of {name}", budget)
            batches.append(batch)
        schema = pa.schema([parquet.schema_arrow.field(column) for column in wanted])
        return pa.Table.from_batches(batches, schema=schema)
    except (pa.ArrowException, OSError) as error:
        raise _not_parquet(name, error) from None
    except ValueError as error:
        if isinstance(error, InputError):
            raise
        raise _not_parquet(name, error) from None


def _check_parquet_size(metadatas, schema, wanted: list[str], name: str, budget: int) -> None:
    """InputError when the columns ``wanted`` of Parquet files (their ``FileMetaData``) would take more memory
    than ``budget`` once read, counted from the metadata alone: each list value as its Arrow value and a float32,
    each row's overhead, its text several times."""
    import pyarrow as pa

    rows = sum(metadata.num_rows for metadata in metadatas)
    estimate = rows * ROW_OVERHEAD_BYTES
    for metadata in metadatas:
        paths = [metadata.schema.column(j).path.split(".")[0] for j in range(metadata.num_columns)]
        for j, top in enumerate(paths):
            if top not in wanted:
                continue
            kind = schema.field(top).type
            for i in range(metadata.num_row_groups):
                chunk = metadata.row_group(i).column(j)
                if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
                    width = kind.value_type.bit_width // 8 if pa.types.is_primitive(kind.value_type) else 8
                    estimate += chunk.num_values * (width + 4)
                else:
                    estimate += TEXT_COPIES * chunk.total_uncompressed_size
    check_fits(estimate, f"The {rows} rows of {name}", budget)


def _wanted(names: Sequence[str], columns: VectorColumns, source: str) -> list[str]:
    resolved = resolve_columns(names, columns, source)
    return [name for name in vars(resolved).values() if name is not None]


def _not_parquet(name: str, error: Exception) -> InputError:
    return InputError(
        f"{name} could not be read as a Parquet file ({first_line(error)}); export the vectors as Parquet "
        "or give the LanceDB table folder."
    )


def _is_lance(path: Path) -> bool:
    """A LanceDB table folder (``_versions`` inside) or a database folder of ``*.lance`` tables."""
    return (path / "_versions").is_dir() or any(child.suffix == ".lance" for child in path.iterdir())


def _read_lance(path: Path):
    """The whole table as Arrow, through LanceDB's own API, once its size is known to fit in memory."""
    import pyarrow as pa

    try:
        import lancedb
    except ImportError:  # pinned in requirements.txt; a trimmed install may lack it
        raise InputError(
            f"{path.name} is a LanceDB table, but the lancedb package is not installed; install the pinned "
            "requirements, or export the table to Parquet."
        ) from None
    if (path / "_versions").is_dir():
        database, name = path.parent, path.name.removesuffix(".lance")
    else:
        tables = sorted(child.name.removesuffix(".lance") for child in path.iterdir() if child.suffix == ".lance")
        if len(tables) != 1:
            listed = ", ".join(tables)
            raise InputError(
                f"The LanceDB folder {path.name} holds {len(tables)} tables ({listed}); give the folder of the "
                "one with the chunk vectors (name.lance)."
            )
        database, name = path, tables[0]
    try:
        table = lancedb.connect(str(database)).open_table(name)
        rows, schema = table.count_rows(), table.schema
    except Exception as error:  # lancedb raises plain ValueError/RuntimeError/OSError for a damaged table
        raise InputError(f"The LanceDB table {name} could not be read ({first_line(error)}).") from None
    widths = [field.type.list_size * (field.type.value_type.bit_width // 8 + 4) for field in schema
              if pa.types.is_fixed_size_list(field.type) and pa.types.is_primitive(field.type.value_type)]
    check_fits(rows * (ROW_OVERHEAD_BYTES + sum(widths)), f"The {rows} rows of the LanceDB table {name}")
    try:
        return table.to_arrow()
    except Exception as error:  # as above
        raise InputError(f"The LanceDB table {name} could not be read ({first_line(error)}).") from None


def first_line(error: Exception) -> str:
    """The first line of ``error``'s message, at most 200 characters, for a one-sentence message (its type's
    name when the message is empty)."""
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__


def read_vector_table(table, columns: VectorColumns = VectorColumns(), *, source: str = "the vector file") -> VectorCorpus:
    """The corpus of an Arrow table with one row per chunk (what :func:`read_vectors` reads).

    The vector column may be a list, large list or fixed-size list of
    numbers; it is converted in one pass (no Python loop per row). Rows are
    numbered from 1 in messages.
    """
    from coverage_core.results import Corpus, EmbeddedTexts

    resolved = resolve_columns(table.column_names, columns, source)
    n_rows = table.num_rows
    vectors, vector_problems = _vectors(table.column(resolved.vector), source)
    texts = _strings(table.column(resolved.text))
    empty_text = np.array([not text.strip() for text in texts], dtype=bool)
    usable = np.ones(n_rows, dtype=bool)
    found = []
    for problem, rows in [*vector_problems, ("have no text", empty_text)]:
        rows = rows & usable
        if rows.any():
            found.append((problem, rows))
            usable &= ~rows
    if not usable.any():
        reasons = "; ".join(_rows_warning(rows, n_rows, problem, None).rstrip(".") for problem, rows in found)
        raise InputError(f"No row of {source} can be used: {reasons}; fix these rows or name other columns.")
    warnings = [_rows_warning(rows, n_rows, problem) for problem, rows in found]
    kept = np.flatnonzero(usable)
    documents_column = _strings(table.column(resolved.document))
    unnamed = np.array([not name.strip() for name in documents_column], dtype=bool) & usable
    if unnamed.any():
        warnings.append(
            _rows_warning(unnamed, n_rows, "name no document", f"so they count as document '{source}'")
        )
    names = [one_line_name(documents_column[i]) if documents_column[i].strip() else source for i in kept]
    pages, not_pages = _pages(table.column(resolved.page)) if resolved.page else ([None] * n_rows, None)
    if not_pages is not None and (not_pages & usable).any():
        warnings.append(_rows_warning(
            not_pages & usable, n_rows, f"have a page number that is not a whole number from 1 to {MAX_PAGE_NUMBER}",
            "so they were kept without a page"))
    documents, chunks = _documents_and_chunks([texts[i] for i in kept], names, [pages[i] for i in kept])
    del table  # the caller may still hold it; this function no longer needs its columns
    vectors = vectors if len(kept) == n_rows else vectors[kept]
    vectors = unit_rows(vectors, out=vectors)  # in place: the analysis compares vectors by their dot product
    embedded = EmbeddedTexts(vectors, n_cached=0, n_embedded=0, n_over_limit=0)
    return VectorCorpus(Corpus(documents, chunks, embedded), resolved, source, n_rows, kept, warnings)


def resolve_columns(names: Sequence[str], wanted: VectorColumns, source: str) -> VectorColumns:
    """Each role's column: the one named (exactly, then ignoring case), or detected; InputError when missing."""
    def pick(role: str, given: str | None, candidates: Sequence[str], required: bool) -> str | None:
        try:
            found = resolve_column(names, given, candidates, what=role)
        except InputError:
            raise InputError(
                f"The {role} column {given!r} is not in {source}; name one of its columns: {listed_columns(names)}."
            ) from None
        if found is None and required:
            expected = ", ".join(candidates[:4])
            raise InputError(
                f"{source} has no {role} column (looked for {expected}, …); name the {role} column, one of: "
                f"{listed_columns(names)}."
            )
        return found

    resolved = VectorColumns(
        text=pick("text", wanted.text, TEXT_COLUMN_NAMES, True),
        vector=pick("vector", wanted.vector, VECTOR_COLUMN_NAMES, True),
        document=pick("document", wanted.document, DOCUMENT_COLUMN_NAMES, True),
        page=pick("page", wanted.page, PAGE_COLUMN_NAMES, False),
    )
    roles = [(role, name) for role, name in vars(resolved).items() if name is not None]
    seen: dict[str, str] = {}
    for role, name in roles:
        if name in seen:
            raise InputError(
                f"The column '{name}' of {source} cannot be both the {seen[name]} and the {role} column; "
                f"name the {role} column, one of: {listed_columns(names)}."
            )
        seen[name] = role
    return resolved


def _vectors(column, source: str) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
    """The (rows, d) float32 vectors of a list column, and the rows that cannot be used, by reason.

    ``d`` is the most common length among the rows that have a vector, so a
    few ragged rows are left out rather than the file refused. Unusable rows
    hold zeros in the returned array.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    _check_vector_type(column.type, source)
    # Chunk by chunk (Parquet row groups, batches), so no second copy of the whole column is made.
    pieces = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    nulls = [piece.is_null().to_numpy(zero_copy_only=False) for piece in pieces]
    lengths = [pc.list_value_length(piece).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
               for piece in pieces]
    all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
    n = len(all_lengths)
    missing = np.concatenate(nulls) | (all_lengths == 0) if nulls else np.zeros(0, dtype=bool)
    present = all_lengths[~missing]
    problems: list[tuple[str, np.ndarray]] = [("have no vector", missing)]
    if present.size == 0:
        return np.zeros((n, 0), dtype=np.float32), problems
    values, counts = np.unique(present, return_counts=True)
    dim = int(values[np.argmax(counts)])
    ragged = ~missing & (all_lengths != dim)
    good = ~missing & ~ragged
    vectors = _gathered_rows(pieces, nulls, lengths, good, dim)
    problems += _value_problems(vectors, good, ragged, dim)
    return vectors, problems


def _check_vector_type(array_type, source: str) -> None:
    """InputError unless the column holds lists of numbers."""
    import pyarrow as pa

    if not (pa.types.is_list(array_type) or pa.types.is_large_list(array_type)
            or pa.types.is_fixed_size_list(array_type)):
        raise InputError(
            f"The vector column of {source} holds {array_type}, not lists of numbers; name the column that holds "
            "the embeddings."
        )
    if not (pa.types.is_floating(array_type.value_type) or pa.types.is_integer(array_type.value_type)):
        raise InputError(
            f"The vector column of {source} holds lists of {array_type.value_type}, not numbers; name the column "
            "that holds the embeddings."
        )


def _gathered_rows(pieces, nulls: list[np.ndarray], lengths: list[np.ndarray], good: np.ndarray, dim: int) -> np.ndarray:
    """The (rows, dim) float32 vectors of the ``good`` rows, zeros elsewhere, piece by piece."""
    import pyarrow as pa
    import pyarrow.compute as pc

    vectors = np.zeros((len(good), dim), dtype=np.float32)
    offset = 0
    for piece, piece_nulls, piece_lengths in zip(pieces, nulls, lengths):
        rows = slice(offset, offset + len(piece))
        offset += len(piece)
        piece_good = good[rows]
        if not piece_good.any():
            continue
        # Null lists contribute no values to the flattened array; the others follow in row order.
        flat = np.asarray(pc.list_flatten(piece).cast(pa.float32()).to_numpy(zero_copy_only=False), dtype=np.float32)
        if piece_good.all():
            vectors[rows] = flat.reshape(len(piece), dim)  # nulls inside a list became NaN
            continue
        counted = np.where(piece_nulls, 0, piece_lengths)
        starts = np.concatenate([[0], np.cumsum(counted)[:-1]])
        block = vectors[rows]
        block[piece_good] = flat[starts[piece_good][:, None] + np.arange(dim)]
    return vectors


def _value_problems(
    vectors: np.ndarray, good: np.ndarray, ragged: np.ndarray, dim: int
) -> list[tuple[str, np.ndarray]]:
    """Ragged, non-finite and all-zero rows, by reason; non-finite rows are zeroed in ``vectors``."""
    # Each row's squared length, in float64 (float32 values cannot overflow it): NaN or infinite when
    # any value is, 0 for an all-zero row. One pass, no (rows, d) temporary.
    squared = np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64)
    finite = np.isfinite(squared)
    not_finite = good & ~finite
    if not_finite.any():
        vectors[not_finite] = 0.0
    zero = good & finite & (squared == 0)
    return [
        (f"have a vector of another length than the {dim} of most rows", ragged),
        ("have NaN or infinite values in their vector", not_finite),
        ("have an all-zero vector", zero),
    ]


def _strings(column) -> list[str]:
    """A column as text ("" for a null), whatever its type."""
    import pyarrow as pa

    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        column = column.cast(pa.string()) if _castable(column) else pa.array([str(v) for v in column.to_pylist()])
    return ["" if value is None else value for value in column.to_pylist()]


def _castable(column) -> bool:
    import pyarrow as pa

    kind = column.type
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind) or pa.types.is_dictionary(kind)


def _pages(column) -> tuple[list[int | None], np.ndarray]:
    """1-based page numbers (None where blank or not a page), and the rows whose value was given but is not a
    page: not a whole number from 1 to :data:`MAX_PAGE_NUMBER` (NaN, negative, 1e300, a fraction, a word)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    blank = pc.is_null(column)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        blank = pc.or_(blank, pc.equal(pc.utf8_trim_whitespace(column), "")).fill_null(True)
    blank = np.asarray(blank.to_numpy(zero_copy_only=False), dtype=bool)
    try:
        numbers = column.cast(pa.float64(), safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # text that is not all numbers, lists: one by one
        numbers = pa.array([_number(value) for value in column.to_pylist()], type=pa.float64())
    values = np.asarray(numbers.fill_null(np.nan).to_numpy(zero_copy_only=False), dtype=float)
    with np.errstate(invalid="ignore"):
        page = np.isfinite(values) & (values == np.round(values)) & (values >= 1) & (values <= MAX_PAGE_NUMBER)
    return [int(v) if ok else None for v, ok in zip(values.tolist(), page.tolist())], ~page & ~blank


def _number(value) -> float:
    """``value`` as a float, NaN when it is none (a word, a list)."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


def _documents_and_chunks(texts: Sequence[str], names: Sequence[str], pages: Sequence[int | None]):
    """Documents rebuilt from their passages, and the chunks pointing into them (in row order)."""
    offsets: dict[str, int] = {}
    parts: dict[str, list[str]] = {}
    spans: dict[str, list[PageSpan]] = {}
    chunks = []
    for text, name, page in zip(texts, names, pages):
        start = offsets.get(name, 0)
        if name in parts:
            start += len(_PASSAGE_SEPARATOR)
        end = start + len(text)
        parts.setdefault(name, []).append(text)
        offsets[name] = end
        if page is not None:
            spans.setdefault(name, []).append(PageSpan(page, start, end))
        chunks.append(Chunk(name, text, start, end, page))
    documents = [Document(name, _PASSAGE_SEPARATOR.join(texts_), tuple(spans.get(name, ()))) for name, texts_ in parts.items()]
    return documents, chunks


def _rows_warning(rows: np.ndarray, n_rows: int, problem: str, consequence: str | None = "so they were left out") -> str:
    """'3 of 120 rows (rows 4, 9, 17, counting from 1) have no text, so they were left out.' (None: no consequence)."""
    found = np.flatnonzero(rows)
    shown = ", ".join(str(i + 1) for i in found[:SHOWN_ROWS])
    more = f" and {len(found) - SHOWN_ROWS} more" if len(found) > SHOWN_ROWS else ""
    label = "row" if len(found) == 1 else "rows"
    verb_problem = problem if len(found) != 1 else _singular(problem)
    if len(found) == 1 and consequence:
        consequence = consequence.replace("they were", "it was").replace("they count", "it counts")
    tail = f", {consequence}" if consequence else ""
    return f"{len(found)} of {n_rows} rows ({label} {shown}{more}, counting from 1) {verb_problem}{tail}."


def _singular(problem: str) -> str:
    for plural, singular in (("have ", "has "), ("name ", "names ")):
        if problem.startswith(plural):
            return singular + problem[len(plural):].replace(" their ", " its ")
    return problem


# --------------------------------------------------------------------------
# the model that made them
# --------------------------------------------------------------------------


def check_dimensions(vectors: VectorCorpus | int, embedder, model_name: str, probe_text: str, cache=None) -> int:
    """The embedder's output size, checked against the vectors'; InputError when they differ.

    The embedder's size is read from one embedded text (``probe_text``, a
    question that is embedded anyway, through ``cache``), so this works
    for every provider. ``model_name`` names the model in the message.
    """
    from coverage_core.embeddings import embed_texts

    expected = vectors.dimensions if isinstance(vectors, VectorCorpus) else int(vectors)
    made = int(embed_texts([probe_text], embedder, cache).vectors.shape[1])
    if made != expected:
        raise InputError(
            f"The vectors have {expected} dimensions but {model_name} makes {made}; "
            "name the model that made them."
        )
    return made


def check_model(vectors: VectorCorpus | int, embedder, embedding, question_texts: Sequence[str], cache=None) -> None:
    """:func:`check_dimensions` for the model of ``embedding`` (a config.EmbeddingConfig), probed with the first question.

    Without questions nothing is checked (the analysis then stops on the empty question file).
    """
    from coverage_core.embeddings import DEFAULT_MODELS

    if question_texts:
        name = embedding.model or DEFAULT_MODELS.get(embedding.provider, embedding.provider)
        check_dimensions(vectors, embedder, name, question_texts[0], cache)
