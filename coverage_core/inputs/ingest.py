"""Read the knowledge base (PDF, TXT, Markdown).

Real inputs are messy: encrypted or scanned PDFs, files saved by Excel in
cp1252, semicolon-separated CSVs, empty rows. Every reader here either returns
clean data or says, in one sentence, what is wrong and what to do. Document
files that cannot be read are skipped with an ``IngestWarning`` so one bad
file does not stop a run; only when nothing readable is left is an
``InputError`` raised.

PDF pages are read in :mod:`~coverage_core.inputs.pdf`; the test-question
table in :mod:`~coverage_core.inputs.questions`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from coverage_core.errors import InputError
from coverage_core.inputs.pdf import DEFAULT_PDF_BUDGET, PdfBudget, PdfClock, read_pdf
from coverage_core.inputs.text import Unreadable, decode_text, looks_binary, unfold_ligatures
from coverage_core.invisible import one_line_name
from coverage_core.types import Document, DocumentSet, IngestWarning

DOCUMENT_SUFFIXES = (".pdf", ".txt", ".md")
DEFAULT_MAX_BYTES = 50 * 1024 * 1024


# ---------------------------------------------------------------------------
# Documents
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    """A document file to read: its name, its size, and how to get its bytes."""

    name: str
    size: int
    load: Callable[[], bytes]
    # Set when the path itself is the problem (missing, empty folder); kept
    # as a source so problems are reported in the order the user gave paths.
    problem: Unreadable | None = None


def read_documents(
    paths: Sequence[str | Path],
    pdf_password: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    *,
    follow_symlinks: bool = False,
    pdf_budget: PdfBudget = DEFAULT_PDF_BUDGET,
) -> DocumentSet:
    """Read document files and folders, skipping unreadable ones with a warning.

    Folders are searched recursively for ``.pdf``, ``.txt`` and ``.md`` files
    (any case; hidden files and folders are left out), in sorted order so runs
    are reproducible. A file named directly is called by its file name; a file
    found in a folder by its path relative to that folder, so two
    ``intro.md`` in different subfolders stay apart. ``pdf_password`` is tried
    on every encrypted PDF. Raises ``InputError`` if no document is readable.

    A path named directly is read even if it is a link: the user chose it.
    Inside a folder, links to files and folders within that folder are
    followed; a link that leads outside it is skipped with a warning naming
    the link unless ``follow_symlinks`` is true, so a shared or uploaded
    folder cannot pull in a file it only points at (``~/.ssh``, ``/etc``).
    Only regular files are read: a pipe or device named like a document is
    skipped with a warning. Every file is read once however many paths lead
    to it (the first name in sorted order wins, a path without links before
    one through a link). A link that points to nothing (broken) or to itself
    (a loop), and a link inside a folder that leads back to a folder
    containing it, are skipped with a warning naming the link; the walk never
    follows a loop.
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
            found = _folder_entries(path, follow_symlinks)
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
            sources.append(_path_source(name, file, max_bytes))
    return _read_sources(sources, pdf_password, max_bytes, pdf_budget)


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


_OUTSIDE = (
    "is a link to something outside the folder",
    "copy what it points to into the folder if it should be read",
)
_SPECIAL = (
    "is not a regular file (a pipe, device or socket)",
    "save its content to a regular file if it should be read",
)

_LOOP = (
    "is a link back to a folder that contains it (a link loop)",
    "the folder it leads to is read once already, so nothing is missing",
)


def _folder_entries(
    folder: Path, follow_symlinks: bool = False
) -> list[tuple[str, Path | None, tuple[str, str] | None]]:
    """The document files under ``folder`` and the links skipped there, sorted by relative name.

    Each entry is ``(name relative to folder, file, None)`` or ``(name, None,
    (reason, advice))``. Hidden files and folders are left out. Folders are
    walked without links first, then the folders links lead to, each folder
    once: a link to a folder already walked adds nothing, a link to a folder
    that contains it is a loop and is reported. Unless ``follow_symlinks``,
    a link whose target resolves outside ``folder`` is reported, not followed.
    """
    walk = _FolderWalk(None if follow_symlinks else Path(os.path.realpath(folder)))
    top = folder.stat()
    walk.walked.add((top.st_dev, top.st_ino))
    walk.walk("", folder, frozenset({(top.st_dev, top.st_ino)}), False)
    walk.follow_links()
    return walk.sorted_entries()


def _not_opened(error: OSError) -> tuple[str, str]:
    return (f"could not be opened ({error.strerror or error})", "check that it is readable")


class _FolderWalk:
    """What one walk of a folder found: entries so far, files, folders walked, links to follow."""

    def __init__(self, root: Path | None) -> None:
        # Links must resolve inside this folder; None: links may lead anywhere.
        self.root = root
        self.entries: list[tuple[str, Path | None, tuple[str, str] | None]] = []
        # (through a link, name, path, identity)
        self.files: list[tuple[bool, str, Path, tuple[int, int]]] = []
        self.walked: set[tuple[int, int]] = set()
        # (name, path, identities of the folders holding it)
        self.links: list[tuple[str, Path, frozenset]] = []

    def walk(self, prefix: str, directory: Path, chain: frozenset, through_link: bool) -> None:
        try:
            with os.scandir(directory) as listing:
                children = sorted(listing, key=lambda entry: entry.name)
        except OSError as error:
            self.entries.append(
                (prefix.rstrip("/") or str(directory), None,
                 (f"could not be listed ({error.strerror or error})", "check that the folder is readable"))
            )
            return
        for child in children:
            if not child.name.startswith("."):
                self._visit(prefix + child.name, child, chain, through_link)

    def _visit(self, name: str, child: os.DirEntry, chain: frozenset, through_link: bool) -> None:
        path = Path(child.path)
        is_link = child.is_symlink()
        problem = _path_problem(path) if is_link else None
        if problem is None and is_link and self._leads_out(path):
            problem = _OUTSIDE
        if problem is not None:
            self.entries.append((name, None, problem))
            return
        try:
            info = path.stat()
        except OSError as error:
            self.entries.append((name, None, _not_opened(error)))
            return
        if stat.S_ISDIR(info.st_mode):
            if is_link:
                self.links.append((name, path, chain))
            else:
                self._enter(name, path, (info.st_dev, info.st_ino), chain, through_link)
        elif PurePosixPath(child.name).suffix.lower() in DOCUMENT_SUFFIXES:
            if stat.S_ISREG(info.st_mode):
                self.files.append((through_link or is_link, name, path, (info.st_dev, info.st_ino)))
            else:  # reading a FIFO blocks, a device never ends
                self.entries.append((name, None, _SPECIAL))

    def _leads_out(self, link: Path) -> bool:
        if self.root is None:
            return False
        return not Path(os.path.realpath(link)).is_relative_to(self.root)

    def _enter(
        self, name: str, path: Path, identity: tuple[int, int], chain: frozenset, through_link: bool
    ) -> None:
        if identity in chain:  # a link or bind mount of an enclosing folder
            self.entries.append((name, None, _LOOP))
        elif identity not in self.walked:
            self.walked.add(identity)
            self.walk(name + "/", path, chain | {identity}, through_link)

    def follow_links(self) -> None:
        """Walk the folders reached through links, after every folder reached without one."""
        while self.links:
            name, path, chain = self.links.pop(0)
            try:
                info = path.stat()
            except OSError as error:  # changed since it was listed
                self.entries.append((name, None, _not_opened(error)))
                continue
            self._enter(name, path, (info.st_dev, info.st_ino), chain, True)

    def sorted_entries(self) -> list[tuple[str, Path | None, tuple[str, str] | None]]:
        """The entries and one per file (the name reached without a link wins, else the first name)."""
        kept: set[tuple[int, int]] = set()
        for _, name, path, identity in sorted(self.files, key=lambda file: file[:2]):
            if identity not in kept:
                kept.add(identity)
                self.entries.append((name, path, None))
        return sorted(self.entries, key=lambda entry: entry[0])


def read_uploaded_documents(
    files: Sequence[tuple[str, bytes]],
    pdf_password: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    *,
    pdf_budget: PdfBudget = DEFAULT_PDF_BUDGET,
) -> DocumentSet:
    """Read uploaded ``(file name, content)`` pairs like ``read_documents`` reads files."""
    sources = [_Source(name, len(data), lambda data=data: data) for name, data in files]
    return _read_sources(sources, pdf_password, max_bytes, pdf_budget)


def read_document_bytes(
    name: str, data: bytes, pdf_password: str | None = None, pdf_budget: PdfBudget = DEFAULT_PDF_BUDGET
) -> Document:
    """Read one uploaded file; raise ``InputError`` saying why if it is unreadable.

    Problems on single pages of a PDF that is otherwise readable are not
    reported here; use ``read_uploaded_documents`` to get those warnings.
    """
    try:
        clock = PdfClock(pdf_budget, len(data) if _is_pdf(name) else 0)
        return _read_source(_Source(name, len(data), lambda: data), pdf_password, None, [], clock)
    except Unreadable as problem:
        raise InputError(problem.sentence(name)) from None


def _path_source(name: str, path: Path, max_bytes: int | None) -> _Source:
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # reading it will fail and say why
    return _Source(name, size, lambda: _read_regular(path, max_bytes))


def _read_regular(path: Path, max_bytes: int | None) -> bytes:
    """The bytes of ``path`` if it is still a regular file, never more than ``max_bytes`` + 1.

    Checked on the open file, not the name: what was a file when the folder
    was listed may have been swapped for a pipe (whose open would block, hence
    non-blocking) or may have grown past the limit since.
    """
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise Unreadable(*_SPECIAL)
        return handle.read() if max_bytes is None else handle.read(max_bytes + 1)


def _problem(name: str, reason: str, advice: str) -> _Source:
    return _Source(name, 0, bytes, Unreadable(reason, advice))


def _read_sources(
    sources: Sequence[_Source], pdf_password: str | None, max_bytes: int | None, pdf_budget: PdfBudget
) -> DocumentSet:
    """The one loop behind both readers: read each source, collect what failed."""
    pdf_bytes = sum(
        source.size for source in sources
        if _is_pdf(source.name) and (max_bytes is None or source.size <= max_bytes)
    )
    clock = PdfClock(pdf_budget, pdf_bytes)
    documents: list[Document] = []
    problems: list[tuple[str, Unreadable]] = []
    page_warnings: list[IngestWarning] = []
    taken: set[str] = set()
    for source in sources:
        name = _unique_name(one_line_name(source.name), taken)
        taken.add(name)
        try:
            documents.append(
                _read_source(replace(source, name=name), pdf_password, max_bytes, page_warnings, clock)
            )
        except Unreadable as problem:
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
    clock: PdfClock,
) -> Document:
    if source.problem is not None:
        raise source.problem
    suffix = PurePosixPath(source.name).suffix.lower()
    if suffix not in DOCUMENT_SUFFIXES:
        kind = f"a {suffix} file" if suffix else "a file without extension"
        raise Unreadable(
            f"is {kind}, not PDF, TXT or Markdown",
            "convert it to one of these formats",
        )
    if max_bytes is not None and source.size > max_bytes:
        raise Unreadable(
            f"is {_size(source.size)}, more than the {_size(max_bytes)} limit",
            "split it into smaller files or raise the size limit",
        )
    try:
        data = source.load()
    except OSError as error:
        raise Unreadable(
            f"could not be opened ({error.strerror or error})", "check that the file is readable"
        ) from error
    if max_bytes is not None and len(data) > max_bytes:
        raise Unreadable(
            f"grew past the {_size(max_bytes)} limit while it was read",
            "give a file that is not being written to",
        )
    if not data or data.isspace():  # isspace, not strip: no copy of a large file
        raise Unreadable("is empty or contains only whitespace", "add text to it or remove it")
    if suffix == ".pdf":
        return read_pdf(source.name, data, pdf_password, warnings_, clock)
    return _read_text(source.name, data)


def _is_pdf(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() == ".pdf"


def _read_text(name: str, data: bytes) -> Document:
    if looks_binary(data):
        raise Unreadable(
            "contains binary data, not text", "save it as plain text (UTF-8) or remove it"
        )
    text, _ = decode_text(data)
    # One line-ending convention, so chunk boundaries do not depend on the OS
    # the file was written on.
    text = unfold_ligatures(text.replace("\r\n", "\n").replace("\r", "\n"))
    if not text.strip():
        raise Unreadable("is empty or contains only whitespace", "add text to it or remove it")
    return Document(name=name, text=text)


def _nothing_readable(problems: Sequence[tuple[str, Unreadable]]) -> str:
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
