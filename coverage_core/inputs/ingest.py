"""Read the knowledge base (PDF, TXT, Markdown) and the test-question table.

Real inputs are messy: encrypted or scanned PDFs, files saved by Excel in
cp1252, semicolon-separated CSVs, empty rows. Every reader here either returns
clean data or says, in one sentence, what is wrong and what to do. Document
files that cannot be read are skipped with an ``IngestWarning`` so one bad
file does not stop a run; only when nothing readable is left is an
``InputError`` raised.
"""

from __future__ import annotations

import codecs
import csv
import errno
import io
import logging
import os
import re
import stat
import warnings
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd
from pypdf import PageObject, PasswordType, PdfReader, apply_configuration
from pypdf.errors import DependencyError, LimitReachedError, PyPdfError
from pypdf.generic import ContentStream, StreamObject

from coverage_core.errors import InputError
from coverage_core.types import Document, DocumentSet, IngestWarning, PageSpan, Question, QuestionSet
from coverage_core.validation import find_column, listed_columns, resolve_column  # noqa: F401 (find_column: re-exported)

DOCUMENT_SUFFIXES = (".pdf", ".txt", ".md")
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
PAGE_SEPARATOR = "\n\n"

# A page that draws images and has fewer visible characters than this has no
# real text layer: scans often carry a stray label or page number. A PDF with
# such pages and fewer characters than this per page on average is treated as
# scanned as a whole.
MIN_CHARS_PER_PAGE = 10

# Names of the question column in common tools (RAGAS uses "user_input",
# many exports "query" or "prompt") and languages (German, Spanish, Italian,
# Portuguese, French, Dutch, Swedish), in order of preference. Matching
# ignores case, accents, spaces, underscores and hyphens
# (coverage_core.validation.column_key), so "Questão" matches "questao" and
# "Requête" matches "requete".
QUESTION_COLUMN_NAMES = (
    "question",
    "questions",
    "question_text",
    "query",
    "queries",
    "user_input",
    "user_query",
    "prompt",
    "prompts",
    "frage",
    "fragen",
    "pregunta",
    "preguntas",
    "domanda",
    "domande",
    "questao",
    "questoes",
    "pergunta",
    "perguntas",
    "requete",
    "requetes",
    "vraag",
    "vragen",
    "fraga",
    "fragor",
    "consulta",
    "consultas",
    "input",
    "text",
)

# Delimiters a question table may use; the order breaks ties (a tab in a
# header is almost never part of a column name, a comma sometimes is).
DELIMITERS = ("\t", ";", ",")
_DELIMITER_NAMES = {"\t": "tabs", ";": "semicolons", ",": "commas"}
# A one-column file has no delimiter; parse it with one that cannot occur in
# text (ASCII unit separator) so commas inside questions stay in the cell.
_NO_DELIMITER = "\x1f"
_SNIFF_CHARS = 32_000

# pypdf reports malformed files not only through its own PyPdfError but also
# through builtin errors raised deep in its parser (an assert, for one, when
# an inline image in page content is malformed).
_PDF_ERRORS = (
    PyPdfError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    AssertionError,
    RecursionError,
    zlib.error,
)

# pypdf stops at fixed safety limits (LimitReachedError) so that a small file
# cannot make it use gigabytes, as a decompression bomb would. Of the limits met
# while extracting text, one grows with honest content: the parsing budget of
# 2,000,000 tokens (operators and operands) per page content stream. The others
# (75 MB per decompressed stream and per declared stream length, 2,000,000
# cross-reference entries, 100,000 elements per array, page-tree size) stay:
# valid files under DEFAULT_MAX_BYTES rarely come near them, and they are what
# stops bombs. Measured on pypdf 7.1, a token costs 100 to 140 bytes
# of memory and 2 to 4 µs, and dense content (text placed glyph by glyph,
# detailed charts) has 200,000 to 500,000 tokens per MB: the default refuses
# pages of only 4 to 10 MB. 5,000,000 tokens lets a page hold 10 to 25 MB (up
# to half the largest file we accept) for at most about 0.7 GB of memory and
# 20 s while that page, read one at a time, is parsed. Applied with
# apply_configuration, so pypdf's settings for the rest of the process stay.
_PDF_LIMITS = {"stream_parsing_work_maximum_count": 5_000_000}


# ---------------------------------------------------------------------------
# Documents
# ---------------------------------------------------------------------------


class _Unreadable(Exception):
    """Why one input was skipped: a short ``reason`` and what to do about it."""

    def __init__(self, reason: str, advice: str):
        super().__init__(reason)
        self.reason = reason
        self.advice = advice

    def warning(self, source: str) -> IngestWarning:
        return IngestWarning(source, f"It {self.reason}, so it was skipped; {self.advice}.")

    def sentence(self, source: str) -> str:
        return f"{source} {self.reason}; {self.advice}."


@dataclass(frozen=True)
class _Source:
    """A document file to read: its name, its size, and how to get its bytes."""

    name: str
    size: int
    load: Callable[[], bytes]
    # Set when the path itself is the problem (missing, empty folder); kept
    # as a source so problems are reported in the order the user gave paths.
    problem: _Unreadable | None = None


def read_documents(
    paths: Sequence[str | Path],
    pdf_password: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> DocumentSet:
    """Read document files and folders, skipping unreadable ones with a warning.

    Folders are searched recursively for ``.pdf``, ``.txt`` and ``.md`` files
    (any case; hidden files and folders are left out), in sorted order so runs
    are reproducible. A file named directly is called by its file name; a file
    found in a folder by its path relative to that folder, so two
    ``intro.md`` in different subfolders stay apart. ``pdf_password`` is tried
    on every encrypted PDF. Raises ``InputError`` if no document is readable.

    Links are followed, to files and to folders, and every file is read once
    however many paths lead to it (the first name in sorted order wins, a
    path without links before one through a link). A link that points to
    nothing (broken) or to itself (a loop), and a link inside a folder that
    leads back to a folder containing it, are skipped with a warning naming
    the link; the walk never follows a loop.
    """
    sources: list[_Source] = []
    seen: set[tuple[int, int]] = set()
    for raw in paths:
        path = Path(raw)
        problem = _path_problem(path)
        if problem is not None:
            sources.append(_problem(str(raw), *problem))
            continue
        if path.is_dir():
            found = _folder_entries(path)
            if not any(file is not None for _, file, _ in found):
                sources.append(
                    _problem(
                        str(raw),
                        "contains no PDF, TXT or Markdown files",
                        "add documents to the folder or check the path",
                    )
                )
        elif path.is_file():
            found = [(path.name, path, None)]
        else:
            sources.append(_problem(str(raw), "is not a file or a folder", "give document files or folders"))
            continue
        for name, file, problem in found:
            if problem is not None:
                sources.append(_problem(name, *problem))
                continue
            identity = _file_identity(file)
            if identity in seen:  # the same file named twice, e.g. file and its folder, or through a link
                continue
            seen.add(identity)
            sources.append(_path_source(name, file))
    return _read_sources(sources, pdf_password, max_bytes)


def _path_problem(path: Path) -> tuple[str, str] | None:
    """Why ``path`` leads nowhere, as (reason, advice); None if it leads to something."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "is a link loop (it leads back to itself)", "point the link at a real file or folder"
        if os.path.islink(path):
            return (
                f"is a broken link (it points to {os.readlink(path)}, which does not exist)",
                "fix the link or remove it",
            )
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return "does not exist", "check the path"
        return f"could not be opened ({error.strerror or error})", "check that it is readable"
    return None


def _file_identity(path: Path) -> tuple[int, int]:
    """(device, inode) of what ``path`` leads to: equal for every path to one file."""
    try:
        info = path.stat()
    except OSError:  # reading it will fail and say why; keep it apart
        return (-1, id(path))
    return (info.st_dev, info.st_ino)


_LOOP = (
    "is a link back to a folder that contains it (a link loop)",
    "the folder it leads to is read once already, so nothing is missing",
)


def _folder_entries(folder: Path) -> list[tuple[str, Path | None, tuple[str, str] | None]]:
    """The document files under ``folder`` and the links skipped there, sorted by relative name.

    Each entry is ``(name relative to folder, file, None)`` or ``(name, None,
    (reason, advice))``. Hidden files and folders are left out. Folders are
    walked without links first, then the folders links lead to, each folder
    once: a link to a folder already walked adds nothing, a link to a folder
    that contains it is a loop and is reported.
    """
    entries: list[tuple[str, Path | None, tuple[str, str] | None]] = []
    files: list[tuple[bool, str, Path, tuple[int, int]]] = []  # (through a link, name, path, identity)
    walked: set[tuple[int, int]] = set()
    links: list[tuple[str, Path, frozenset]] = []  # (name, path, identities of the folders holding it)

    def walk(prefix: str, directory: Path, chain: frozenset, through_link: bool) -> None:
        try:
            with os.scandir(directory) as listing:
                children = sorted(listing, key=lambda entry: entry.name)
        except OSError as error:
            entries.append(
                (prefix.rstrip("/") or str(directory), None,
                 (f"could not be listed ({error.strerror or error})", "check that the folder is readable"))
            )
            return
        for child in children:
            if child.name.startswith("."):
                continue
            name, path = prefix + child.name, Path(child.path)
            is_link = child.is_symlink()
            problem = _path_problem(path) if is_link else None
            if problem is not None:
                entries.append((name, None, problem))
                continue
            try:
                info = path.stat()
            except OSError as error:
                entries.append((name, None, (f"could not be opened ({error.strerror or error})", "check that it is readable")))
                continue
            if stat.S_ISDIR(info.st_mode):
                if is_link:
                    links.append((name, path, chain))
                    continue
                identity = (info.st_dev, info.st_ino)
                if identity in chain:  # a bind mount of an enclosing folder
                    entries.append((name, None, _LOOP))
                elif identity not in walked:
                    walked.add(identity)
                    walk(name + "/", path, chain | {identity}, through_link)
            elif stat.S_ISREG(info.st_mode) and PurePosixPath(child.name).suffix.lower() in DOCUMENT_SUFFIXES:
                files.append((through_link or is_link, name, path, (info.st_dev, info.st_ino)))

    top = folder.stat()
    walked.add((top.st_dev, top.st_ino))
    walk("", folder, frozenset({(top.st_dev, top.st_ino)}), False)
    while links:  # folders reached through links, after every folder reached without one
        name, path, chain = links.pop(0)
        try:
            info = path.stat()
        except OSError as error:  # changed since it was listed
            entries.append((name, None, (f"could not be opened ({error.strerror or error})", "check that it is readable")))
            continue
        identity = (info.st_dev, info.st_ino)
        if identity in chain:
            entries.append((name, None, _LOOP))
        elif identity not in walked:
            walked.add(identity)
            walk(name + "/", path, chain | {identity}, True)
    # One entry per file: the name reached without a link wins, else the first name.
    kept: set[tuple[int, int]] = set()
    for _, name, path, identity in sorted(files, key=lambda file: file[:2]):
        if identity not in kept:
            kept.add(identity)
            entries.append((name, path, None))
    return sorted(entries, key=lambda entry: entry[0])


def read_uploaded_documents(
    files: Sequence[tuple[str, bytes]],
    pdf_password: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> DocumentSet:
    """Read uploaded ``(file name, content)`` pairs like ``read_documents`` reads files."""
    sources = [_Source(name, len(data), lambda data=data: data) for name, data in files]
    return _read_sources(sources, pdf_password, max_bytes)


def read_document_bytes(name: str, data: bytes, pdf_password: str | None = None) -> Document:
    """Read one uploaded file; raise ``InputError`` saying why if it is unreadable.

    Problems on single pages of a PDF that is otherwise readable are not
    reported here; use ``read_uploaded_documents`` to get those warnings.
    """
    try:
        return _read_source(_Source(name, len(data), lambda: data), pdf_password, None, [])
    except _Unreadable as problem:
        raise InputError(problem.sentence(name)) from None


def _path_source(name: str, path: Path) -> _Source:
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # reading it will fail and say why
    return _Source(name, size, path.read_bytes)


def _problem(name: str, reason: str, advice: str) -> _Source:
    return _Source(name, 0, bytes, _Unreadable(reason, advice))


def _read_sources(
    sources: Sequence[_Source], pdf_password: str | None, max_bytes: int | None
) -> DocumentSet:
    """The one loop behind both readers: read each source, collect what failed."""
    documents: list[Document] = []
    problems: list[tuple[str, _Unreadable]] = []
    page_warnings: list[IngestWarning] = []
    taken: set[str] = set()
    for source in sources:
        name = _unique_name(source.name, taken)
        taken.add(name)
        try:
            documents.append(
                _read_source(replace(source, name=name), pdf_password, max_bytes, page_warnings)
            )
        except _Unreadable as problem:
            problems.append((name, problem))
    if not documents:
        raise InputError(_nothing_readable(problems))
    warnings_ = [problem.warning(name) for name, problem in problems]
    return DocumentSet(documents=documents, warnings=warnings_ + page_warnings)


def _read_source(
    source: _Source,
    pdf_password: str | None,
    max_bytes: int | None,
    warnings_: list[IngestWarning],
) -> Document:
    if source.problem is not None:
        raise source.problem
    suffix = PurePosixPath(source.name).suffix.lower()
    if suffix not in DOCUMENT_SUFFIXES:
        kind = f"a {suffix} file" if suffix else "a file without extension"
        raise _Unreadable(
            f"is {kind}, not PDF, TXT or Markdown",
            "convert it to one of these formats",
        )
    if max_bytes is not None and source.size > max_bytes:
        raise _Unreadable(
            f"is {_size(source.size)}, more than the {_size(max_bytes)} limit",
            "split it into smaller files or raise the size limit",
        )
    try:
        data = source.load()
    except OSError as error:
        raise _Unreadable(
            f"could not be opened ({error.strerror or error})", "check that the file is readable"
        ) from error
    if not data or data.isspace():  # isspace, not strip: no copy of a large file
        raise _Unreadable("is empty or contains only whitespace", "add text to it or remove it")
    if suffix == ".pdf":
        return _read_pdf(source.name, data, pdf_password, warnings_)
    return _read_text(source.name, data)


def _read_text(name: str, data: bytes) -> Document:
    if _looks_binary(data):
        raise _Unreadable(
            "contains binary data, not text", "save it as plain text (UTF-8) or remove it"
        )
    text, _ = _decode(data)
    # One line-ending convention, so chunk boundaries do not depend on the OS
    # the file was written on.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise _Unreadable("is empty or contains only whitespace", "add text to it or remove it")
    return Document(name=name, text=text)


def _read_pdf(
    name: str, data: bytes, password: str | None, warnings_: list[IngestWarning]
) -> Document:
    """Extract the text of each page; pages are joined with ``PAGE_SEPARATOR``.

    A page that cannot be read, or that has only images, is left out with a
    warning naming it; the rest of the file is still used.
    """
    with _quiet_pypdf(), apply_configuration(**_PDF_LIMITS):
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                _unlock(reader, password)
            pages = list(reader.pages)
        except DependencyError as error:
            raise _Unreadable(
                "is encrypted with AES, which needs the 'cryptography' package",
                "install it with 'pip install cryptography'",
            ) from error
        except _PDF_ERRORS as error:
            raise _unreadable_pdf(isinstance(error, LimitReachedError)) from error
        page_texts: list[str] = []
        unreadable: list[int] = []
        too_large: list[int] = []
        for number, page in enumerate(pages, start=1):
            try:
                page_texts.append(page.extract_text() or "")
            except _PDF_ERRORS as error:
                page_texts.append("")
                (too_large if isinstance(error, LimitReachedError) else unreadable).append(number)
        if pages and len(unreadable) + len(too_large) == len(pages):
            raise _unreadable_pdf(bool(too_large))
        visible = [len("".join(text.split())) for text in page_texts]
        failed = set(unreadable + too_large)
        read = [
            (number, page, count)
            for number, (page, count) in enumerate(zip(pages, visible), start=1)
            if number not in failed
        ]
        scanned = sum(visible) == 0 or (
            sum(visible) < MIN_CHARS_PER_PAGE * len(pages)
            and any(_draws_image(page) for _, page, _ in read)
        )
        image_only = [
            number
            for number, page, count in read
            if not scanned and count < MIN_CHARS_PER_PAGE and _draws_image(page)
        ]
    if scanned:
        raise _Unreadable(
            "has no extractable text (it looks scanned or image-only)",
            "run OCR on it first (for example with ocrmypdf) and add the result",
        )
    for numbers, what in (
        (unreadable, "could not be read and were left out; the rest of the PDF was used"),
        (
            too_large,
            "are too large for the reader's safety limit, so their text was left out; "
            "split the PDF or print it to a new PDF to include them",
        ),
        (
            image_only,
            "have only images and no text, so their content was left out; "
            "run OCR on the PDF (for example with ocrmypdf) to include them",
        ),
    ):
        if numbers:
            listed = ", ".join(str(number) for number in numbers)
            warnings_.append(IngestWarning(name, f"Page(s) {listed} {what}."))
    spans: list[PageSpan] = []
    start = 0
    for number, text in enumerate(page_texts, start=1):
        spans.append(PageSpan(page=number, start=start, end=start + len(text)))
        start += len(text) + len(PAGE_SEPARATOR)
    return Document(name=name, text=PAGE_SEPARATOR.join(page_texts), pages=tuple(spans))


def _unreadable_pdf(too_large: bool) -> _Unreadable:
    if too_large:
        # A safety limit means the file asks for more than the reader allows,
        # not that it is damaged: downloading it again would change nothing.
        return _Unreadable(
            "is too large for the reader's safety limit",
            "split it into smaller PDFs or print it to a new PDF",
        )
    return _Unreadable(
        "could not be read as a PDF (it looks damaged or truncated)",
        "open and save it again, or export or download it again",
    )


def _draws_image(page: PageObject) -> bool:
    """Whether the page draws an image: inline, or an image XObject, also inside forms.

    Judged from the page's operators and resources without decoding any image;
    ``page.images`` decodes every inline image only to count it.
    """
    try:
        return _content_draws_image(
            page.get_contents(), _resolved(page.get("/Resources")), page.pdf, set()
        )
    except _PDF_ERRORS:
        # Content that cannot be parsed draws nothing we could use; whether the
        # page has text was already decided by the text extraction.
        return False


def _content_draws_image(
    content: ContentStream | None, resources: Any, pdf: Any, seen: set[int]
) -> bool:
    if content is None:
        return False
    xobjects = _resolved(resources.get("/XObject")) if isinstance(resources, dict) else None
    for operands, operator in content.operations:
        if operator == b"INLINE IMAGE":
            return True
        if operator != b"Do" or not operands or not isinstance(xobjects, dict):
            continue
        xobject = _resolved(xobjects.get(operands[0]))
        if not isinstance(xobject, StreamObject) or id(xobject) in seen:
            continue
        seen.add(id(xobject))  # forms may draw each other in a loop
        if xobject.get("/Subtype") == "/Image":
            return True
        # A form without resources of its own uses those of what draws it.
        if xobject.get("/Subtype") == "/Form" and _content_draws_image(
            ContentStream(xobject, pdf), _resolved(xobject.get("/Resources")) or resources, pdf, seen
        ):
            return True
    return False


def _resolved(value: Any) -> Any:
    """The object behind a PDF reference (or the value itself, or None)."""
    return value.get_object() if value is not None else None


def _unlock(reader: PdfReader, password: str | None) -> None:
    """Decrypt with the given password, or the empty one many PDFs use."""
    # PDFs protected only against editing open with the empty password.
    candidates = ([password] if password else []) + [""]
    if any(reader.decrypt(candidate) != PasswordType.NOT_DECRYPTED for candidate in candidates):
        return
    if password:
        raise _Unreadable(
            "is encrypted and the given password does not open it",
            "check the PDF password",
        )
    raise _Unreadable(
        "is encrypted", "give its PDF password"
    )


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """Keep pypdf's log and warning noise away from the user while reading.

    pypdf logs recoverable oddities (missing fontTools, rebuilt xref tables)
    that mean nothing to a user; real problems surface as exceptions and are
    turned into ``IngestWarning``. Scoped rather than global so the host
    application's logging setup is left as it was.
    """
    logger = logging.getLogger("pypdf")
    previous = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(previous)


def _nothing_readable(problems: Sequence[tuple[str, _Unreadable]]) -> str:
    """One sentence summarising why no document could be read."""
    if not problems:
        return "No document files were given; add PDF, TXT or Markdown files with text."
    if len(problems) == 1:
        name, problem = problems[0]
        return problem.sentence(name)
    shown = [f"{name} {problem.reason}" for name, problem in problems[:5]]
    if len(problems) > 5:
        shown.append(f"{len(problems) - 5} more could not be read either")
    advice = {problem.advice for _, problem in problems}
    what_to_do = (
        advice.pop() if len(advice) == 1 else "add PDF, TXT or Markdown files with text"
    )
    return (
        f"None of the {len(problems)} documents could be read: "
        f"{', '.join(shown)}; {what_to_do}."
    )


def _unique_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name (2)`` and so on if another document already has it."""
    if name not in taken:
        return name
    path = PurePosixPath(name)
    number = 2
    while (candidate := str(path.with_name(f"{path.stem} ({number}){path.suffix}"))) in taken:
        number += 1
    return candidate


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


# ---------------------------------------------------------------------------
# Text decoding, shared by documents and question tables
# ---------------------------------------------------------------------------


def _looks_binary(data: bytes) -> bool:
    """True for data that is not text: NUL bytes or many control characters."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    if b"\x00" in data:
        return True
    sample = data[:8192]
    controls = sum(1 for byte in sample if byte < 32 and byte not in b"\t\n\r\f")
    return controls > 0.05 * len(sample)


def _decode(data: bytes) -> tuple[str, str]:
    """Decode text and name the encoding used.

    UTF-8 (with or without BOM) first; then cp1252, which is what Excel and
    Windows editors write in Western Europe; latin-1 last since it accepts any
    byte. UTF-16 with BOM (Excel's "Unicode text") is recognised too.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            pass
    try:
        text = data.decode("utf-8-sig")
        return text, "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


# ---------------------------------------------------------------------------
# Questions
# ---------------------------------------------------------------------------


def read_table(source: str | Path | bytes, name: str | None = None) -> pd.DataFrame:
    """The question file's table, every column as text, exactly as
    :func:`read_questions` reads it (so a user can pick the question column
    when none was detected)."""
    return _read_table(source, name)[0]


def _read_table(source: str | Path | bytes, name: str | None) -> tuple[pd.DataFrame, str, str, str]:
    """(frame, encoding, delimiter, name) of a question file; InputError if unusable."""
    name, data = _question_bytes(source, name)
    if not data.strip():
        raise InputError(
            f"The question file {name} is empty; add a header row such as 'question' "
            "and one question per row."
        )
    if _looks_binary(data):
        raise InputError(
            f"The question file {name} is not a text table (it contains binary data, "
            "as an Excel workbook does); save it as CSV and use that file."
        )
    text, encoding = _decode(data)
    delimiter = _detect_delimiter(text)
    return _parse_table(text, delimiter, name), encoding, delimiter, name


def read_questions(
    source: str | Path | bytes,
    question_column: str | None = None,
    name: str | None = None,
) -> QuestionSet:
    """Read a question table (CSV or TSV) as the user wrote it.

    ``source`` is a path or the raw bytes of an upload (then ``name`` names it
    in messages). The delimiter (comma, semicolon or tab) and encoding are
    detected; a file without any delimiter in its header is one column of
    questions, which may contain commas. All columns are kept as text in
    ``frame``; blank question cells are skipped and counted, exact repeats are
    kept and listed in ``duplicates``.
    """
    frame, encoding, delimiter, name = _read_table(source, name)
    column = _question_column(frame, question_column, name)

    questions: list[Question] = []
    duplicates: dict[int, int] = {}
    first_row: dict[str, int] = {}
    n_blank = 0
    for row, cell in enumerate(frame[column]):
        question = cell.strip()
        if not question:
            n_blank += 1
            continue
        if question in first_row:
            duplicates[row] = first_row[question]
        else:
            first_row[question] = row
        questions.append(Question(row=row, text=question))
    if not questions:
        raise InputError(
            f"The question column '{column}' in {name} is empty in all {len(frame)} rows; "
            "fill it in or choose another question column."
        )

    notes: list[IngestWarning] = []
    if n_blank:
        notes.append(
            IngestWarning(
                name,
                f"{n_blank} row(s) with an empty '{column}' cell were skipped; "
                "fill them in or delete them.",
            )
        )
    if duplicates:
        row, first = next(iter(duplicates.items()))
        notes.append(
            IngestWarning(
                name,
                f"{len(duplicates)} question(s) repeat an earlier one exactly (for example "
                f"row {row + 1} repeats row {first + 1}, counting rows below the header "
                "from 1); they are kept, so delete them if they were not meant.",
            )
        )
    return QuestionSet(
        frame=frame,
        question_column=column,
        questions=questions,
        n_blank=n_blank,
        duplicates=duplicates,
        encoding=encoding,
        # A one-column file has no delimiter; a comma is what an export of it
        # should use (cells containing commas get quoted).
        delimiter=delimiter or ",",
        warnings=notes,
    )


def _question_bytes(source: str | Path | bytes, name: str | None) -> tuple[str, bytes]:
    if isinstance(source, bytes):
        return name or "questions", source
    path = Path(source)
    display = name or path.name
    try:
        return display, path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"The question file {path} does not exist; check the path.") from None
    except OSError as error:
        raise InputError(
            f"The question file {path} could not be opened ({error.strerror or error}); "
            "check that it is a readable file."
        ) from None


def _detect_delimiter(text: str) -> str | None:
    """Comma, semicolon or tab; None when the header has none (one column).

    csv.Sniffer looks at several lines and so copes with odd headers, but it
    guesses wrong on some files (a comma inside quoted questions of a
    semicolon file). Its answer is kept only if that delimiter occurs in the
    header outside quotes; otherwise the header's most frequent one is used.
    """
    header = next((line for line in text.splitlines() if line.strip()), "")
    counts = {delimiter: _count_outside_quotes(header, delimiter) for delimiter in DELIMITERS}
    if not any(counts.values()):
        return None
    sample = text[:_SNIFF_CHARS]
    if len(text) > _SNIFF_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # whole lines only
    try:
        sniffed = csv.Sniffer().sniff(sample, delimiters="".join(DELIMITERS)).delimiter
    except csv.Error:
        sniffed = None
    if sniffed in counts and counts[sniffed]:
        return sniffed
    return max(DELIMITERS, key=lambda delimiter: counts[delimiter])


def _count_outside_quotes(line: str, character: str) -> int:
    count, quoted = 0, False
    for char in line:
        if char == '"':
            quoted = not quoted
        elif char == character and not quoted:
            count += 1
    return count


def _quoting(text: str, delimiter: str) -> int:
    """Standard CSV quoting if the file is valid quoted CSV, else quotes are literal.

    Tab-separated exports often contain cells like ``"muddy city," and more``
    that were never meant as CSV quoting; reading them with quoting would
    merge or alter cells.
    """
    try:
        for _ in csv.reader(io.StringIO(text), delimiter=delimiter, strict=True):
            pass
    except csv.Error:
        return csv.QUOTE_NONE
    return csv.QUOTE_MINIMAL


def _parse_table(text: str, delimiter: str | None, name: str) -> pd.DataFrame:
    sep = delimiter or _NO_DELIMITER
    try:
        with warnings.catch_warnings():
            # pandas only warns when a row has more cells than the header and
            # then drops the extra cells; that misreads the file, so fail.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                io.StringIO(text),
                sep=sep,
                dtype=str,
                keep_default_na=False,
                index_col=False,
                quoting=_quoting(text, sep),
            )
    except pd.errors.EmptyDataError:
        raise InputError(
            f"The question file {name} is empty; add a header row such as 'question' "
            "and one question per row."
        ) from None
    except (pd.errors.ParserError, pd.errors.ParserWarning) as error:
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(error))
        where = (
            f"line {found[2]} has {found[3]} cells but the header has {found[1]}"
            if found
            else "some rows have more cells than the header"
        )
        separator = _DELIMITER_NAMES.get(sep, "the delimiter")
        raise InputError(
            f"The question file {name} could not be read as a table separated by "
            f"{separator} ({where}); put cells that contain {separator} in double quotes."
        ) from None
    if frame.empty:
        raise InputError(
            f"The question file {name} has a header but no question rows; "
            "add one question per row."
        )
    return frame


def _question_column(frame: pd.DataFrame, wanted: str | None, name: str) -> str:
    columns = [str(column) for column in frame.columns]
    column = resolve_column(columns, wanted, QUESTION_COLUMN_NAMES, what="question", source=name)
    if column is None:
        raise InputError(
            f"No question column found in {name} (columns: {listed_columns(columns)}); choose the "
            "question column, the one that holds the questions."
        )
    return column
