"""Relevance labels of a question table: which column names each question's
relevant sources, and the :class:`SourceRef` labels a cell holds.

The accepted forms and how a label matches a document are described in
:mod:`coverage_core.checks.retrieval`, which re-exports these names.

A test set written by a generator (RAGAS, DeepEval, Giskard; see
:mod:`coverage_core.inputs.testset_formats`) carries each question's
reference passages instead: that column is the detected one, and each of
its passages becomes a :class:`PassageRef`, relevant in the chunks that
contain or overlap it (:func:`passage_chunks`).
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from coverage_core.errors import InputError
from coverage_core.inputs import testset_formats
from coverage_core.types import QuestionSet
from coverage_core.validation import is_blank, is_whole, listed_columns, resolve_column, shorten

# Names of the relevant-source column in common test-set exports, in order of
# preference. Matching ignores case, spaces, underscores and hyphens (see
# validation.resolve_column), so "Relevant Sources" and "relevant-sources" match too.
RELEVANT_COLUMN_NAMES = (
    "relevant_sources",
    "relevant_source",
    "relevant_documents",
    "relevant_document",
    "relevant_docs",
    "relevant_doc",
    "relevant_files",
    "relevant_file",
    "source",
    "sources",
    "source_file",
    "source_files",
    "source_document",
    "source_documents",
    "document",
    "documents",
    "document_name",
    "doc",
    "docs",
    "doc_name",
    "file",
    "files",
    "filename",
    "filenames",
)

_SEPARATORS = re.compile(r"[|;]")
_PAGE_FORMS = re.compile(
    r"""^(?P<name>.*?\S)\s*(?:
          \#\s*(?:(?:page|p)\.?\s*=?\s*)?(?P<hash>\d+)        # name#page=3  name#3  name#p3
        | :\s*(?P<colon>\d+)                                 # name:3
        | (?:,\s*|\s+)(?:page|pg|p)\.?\s*(?P<word>\d+)        # name p3  name p.3  name page 3  name, page 3
    )\s*$""",
    re.IGNORECASE | re.VERBOSE,
)
_QUOTES = "\"'\u201c\u201d\u2018\u2019"

# Passage matching: words (or single CJK characters) in runs of SHINGLE_WORDS; a chunk is relevant to a
# reference passage when they share at least PASSAGE_OVERLAP of the shorter one's runs.
SHINGLE_WORDS = 5
PASSAGE_OVERLAP = 0.3
_WORDS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_]+")
# Characters of a passage shown where a label is listed.
PASSAGE_LABEL_CHARS = 80


def name_key(name: str) -> str:
    """File name without directories, Unicode-normalised and case-folded."""
    base = re.split(r"[\\/]", unicodedata.normalize("NFC", str(name)).strip())[-1]
    return base.strip().casefold()


def stem_key(key: str) -> str | None:
    """``key`` without its extension, or None if it has none (``.bashrc`` has none)."""
    stem, dot, suffix = key.rpartition(".")
    return stem if dot and stem and suffix else None


@dataclass(frozen=True)
class SourceRef:
    """One relevant source of a question: a file name and, optionally, a 1-based page.

    ``name`` is kept as written; matching uses :attr:`key` (no directories,
    case-folded). ``str(ref)`` is ``name`` or ``name#page=P``, a form
    :func:`parse_relevant` reads back.
    """

    name: str
    page: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not name_key(self.name):
            raise InputError(f"A relevant source needs a file name; got {self.name!r}.")
        if self.page is not None:
            if not is_whole(self.page):
                raise InputError(f"The page of {self.name} must be a whole number; got {self.page!r}.")
            if self.page < 1:
                raise InputError(f"Pages count from 1, but {self.name} names page {self.page}.")
            object.__setattr__(self, "page", int(self.page))

    @property
    def key(self) -> str:
        return name_key(self.name)

    def __str__(self) -> str:
        return self.name if self.page is None else f"{self.name}#page={self.page}"


@dataclass(frozen=True)
class PassageRef:
    """One reference passage of a question (from a generated test set), as text.

    It is relevant in the chunks that contain or overlap it
    (:func:`passage_chunks`), whatever their document. ``key`` identifies
    the passage (a digest of its words); ``page`` is always None, so it sits
    beside :class:`SourceRef` labels. ``str(ref)`` is the passage, quoted and
    shortened.
    """

    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise InputError(f"A reference passage needs text; got {self.text!r}.")

    @property
    def key(self) -> str:
        words = " ".join(_words(self.text))
        return "passage:" + hashlib.sha1(words.encode("utf-8")).hexdigest()[:16]

    @property
    def page(self) -> None:
        return None

    def __str__(self) -> str:
        return f"\u201c{shorten(' '.join(self.text.split()), PASSAGE_LABEL_CHARS, at_word=True)}\u201d"


def _words(text: str) -> list[str]:
    return _WORDS.findall(unicodedata.normalize("NFKC", text).casefold())


def _shingles(text: str) -> set[int]:
    words = _words(text)
    if not words:
        return set()
    size = min(SHINGLE_WORDS, len(words))
    return {hash(tuple(words[i : i + size])) for i in range(len(words) - size + 1)}


def passage_chunks(passages: Sequence[str], chunk_texts: Sequence[str]) -> list[frozenset[int]]:
    """For each reference passage, the chunks that contain or overlap it.

    Texts are compared as runs of :data:`SHINGLE_WORDS` consecutive words
    (case-folded, punctuation ignored; each Chinese, Japanese or Korean
    character is a word). A chunk matches a passage when they share at least
    ``PASSAGE_OVERLAP`` (30 %) of the runs of the shorter of the two: a chunk
    holding the passage shares all of the passage's runs, a chunk inside a
    longer passage all of its own, and a chunk at a passage's edge counts
    when a good part of it is the passage. Passages shorter than
    :data:`SHINGLE_WORDS` words are one run. The chunks are read once,
    whatever the number of passages.

    Returns
    -------
    list of frozenset of chunk indices, one per passage (empty: no chunk holds it).
    """
    passage_runs = [_shingles(text) for text in passages]
    sizes = [min(SHINGLE_WORDS, max(len(_words(text)), 1)) for text in passages]
    owners: dict[int, list[int]] = {}
    for p, runs in enumerate(passage_runs):
        for run in runs:
            owners.setdefault(run, []).append(p)
    found: list[set[int]] = [set() for _ in passages]
    if not owners:
        return [frozenset() for _ in passages]
    for c, text in enumerate(chunk_texts):
        words = _words(text)
        shared: dict[int, int] = {}
        for size in set(sizes):
            if len(words) < size:
                continue
            runs = {hash(tuple(words[i : i + size])) for i in range(len(words) - size + 1)}
            for run in runs & owners.keys():
                for p in owners[run]:
                    if sizes[p] == size:
                        shared[p] = shared.get(p, 0) + 1
        n_chunk_runs = max(len(words) - SHINGLE_WORDS + 1, 1)
        for p, count in shared.items():
            needed = max(1, math.ceil(PASSAGE_OVERLAP * min(len(passage_runs[p]), n_chunk_runs)))
            if count >= needed:
                found[p].add(c)
    return [frozenset(chunks) for chunks in found]


def passage_column(question_set: QuestionSet) -> str | None:
    """The column holding each question's reference passages, when the file is a generator's test set; else None."""
    found = testset_formats.detect_format(list(question_set.frame.columns))
    return None if found is None else found.context_column


def parse_relevant(cell) -> tuple[SourceRef, ...]:
    """The relevant sources named in one cell, in order, without repeats.

    Sources are separated by ``|`` or ``;``; each is a file name with an
    optional page in one of the forms listed in the module docstring
    (``report.pdf#page=3``, ``report.pdf#3``, ``report.pdf:3``,
    ``report.pdf p.3``, ``report.pdf page 3``, ``report.pdf, page 3`` …).
    Whitespace and surrounding quotes are ignored; empty parts are skipped; a
    source repeated (same file key and page) is kept once.

    Parameters
    ----------
    cell : str, None or NaN
        A blank cell (None, NaN, empty or whitespace) gives ``()``.

    Returns
    -------
    tuple of SourceRef

    Raises
    ------
    InputError
        A page number 0 (pages count from 1).
    """
    if is_blank(cell):
        return ()
    refs: list[SourceRef] = []
    seen: set[tuple[str, int | None]] = set()
    for part in _SEPARATORS.split(str(cell)):
        text = part.strip().strip(_QUOTES).strip()
        if not text:
            continue
        found = _PAGE_FORMS.match(text)
        if found:
            name = found["name"].strip().strip(_QUOTES).strip()
            page_text = found["hash"] or found["colon"] or found["word"]
            ref = SourceRef(name, int(page_text))
        else:
            ref = SourceRef(text)
        if (ref.key, ref.page) not in seen:
            seen.add((ref.key, ref.page))
            refs.append(ref)
    return tuple(refs)


def find_relevant_column(columns: Sequence[str], explicit: str | None = None) -> str | None:
    """The column naming each question's relevant source(s), as spelled in the file; None if none is found.

    ``explicit``'s column; else, in a test set written by RAGAS, DeepEval or Giskard
    (:func:`coverage_core.inputs.testset_formats.detect_format`), its reference-passage column; else the
    first column matching a name in ``RELEVANT_COLUMN_NAMES`` (earlier names preferred). Raises InputError
    when ``explicit`` matches no column (the message lists them). Why passages first: a passage says more
    than a file name.

    Parameters
    ----------
    columns : sequence of str, the question table's column names
    explicit : str, optional, the user's column: matched exactly first, then ignoring case, spaces, ``_``
        and ``-`` (:func:`coverage_core.validation.resolve_column`); None or blank: detect it
    """
    if explicit is None or not str(explicit).strip():
        found = testset_formats.detect_format(list(columns))
        if found is not None and found.context_column is not None:
            return found.context_column
    return resolve_column(columns, explicit, RELEVANT_COLUMN_NAMES, what="relevant-source")


def relevant_from_questions(
    question_set: QuestionSet, column: str | None = None
) -> list[tuple[SourceRef | PassageRef, ...] | None]:
    """The relevant sources of every question, read from the user's table.

    Parameters
    ----------
    question_set : QuestionSet
    column : str, optional
        The relevant-source column; found with :func:`find_relevant_column`
        when not given.

    Returns
    -------
    list, one entry per ``question_set.questions`` (same order)
        A tuple of :class:`SourceRef`, or of :class:`PassageRef` when the
        column is a generator's reference passages; None when the question's
        cell is blank (an unlabelled question).

    Raises
    ------
    InputError
        No such column, none detected, or a cell names page 0.
    """
    frame = question_set.frame
    columns = [str(c) for c in frame.columns]
    found = find_relevant_column(columns, column)
    if found is None:
        raise InputError(
            "No column naming the relevant sources was found (columns: "
            f"{listed_columns(columns)}); name it, for example 'source', or choose one explicitly."
        )
    cells = frame[found]
    tool_format = testset_formats.detect_format(columns)
    if tool_format is not None and found == tool_format.context_column:
        return [
            tuple(PassageRef(text) for text in testset_formats.reference_passages(
                cells.iloc[question.row], tool_format.context_style)) or None
            for question in question_set.questions
        ]
    relevant: list[tuple[SourceRef, ...] | None] = []
    for question in question_set.questions:
        try:
            refs = parse_relevant(cells.iloc[question.row])
        except InputError as error:
            raise InputError(
                f"Row {question.row + 1} of '{found}' (counting rows below the header from 1): {error}"
            ) from None
        relevant.append(refs or None)
    return relevant
