"""Read the text of a PDF page by page, within pypdf's safety limits.

A page that cannot be read, is too large for the reader or has only images is
left out with a warning naming it; a PDF with no text layer at all (scanned)
is skipped as a whole. Reading runs against a clock (:class:`PdfBudget`): a
PDF that takes too long has its remaining pages left out, so a small crafted
file cannot hold a run for minutes.
"""

from __future__ import annotations

import io
import logging
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pypdf import PageObject, PasswordType, PdfReader, apply_configuration
from pypdf.errors import DependencyError, LimitReachedError, PyPdfError
from pypdf.generic import ContentStream, StreamObject

from coverage_core import wording
from coverage_core.inputs.text import Unreadable, unfold_ligatures
from coverage_core.types import Document, IngestWarning, PageSpan

PAGE_SEPARATOR = "\n\n"

# A page that draws images and has fewer visible characters than this has no
# real text layer: scans often carry a stray label or page number. A PDF with
# such pages and fewer characters than this per page on average is treated as
# scanned as a whole.
MIN_CHARS_PER_PAGE = 10

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
# valid files under ingest.DEFAULT_MAX_BYTES rarely come near them, and they are what
# stops bombs. Measured on pypdf 7.1, a token costs 100 to 140 bytes
# of memory and 2 to 4 µs, and dense content (text placed glyph by glyph,
# detailed charts) has 200,000 to 500,000 tokens per MB: the default refuses
# pages of only 4 to 10 MB. 5,000,000 tokens lets a page hold 10 to 25 MB (up
# to half the largest file we accept) for at most about 0.7 GB of memory and
# 20 s while that page, read one at a time, is parsed. Applied with
# apply_configuration, so pypdf's settings for the rest of the process stay.
_PDF_LIMITS = {"stream_parsing_work_maximum_count": 5_000_000}

_MB = 1024 * 1024


@dataclass(frozen=True)
class PdfBudget:
    """How long extracting text may take, per PDF and for all the PDFs of one reading call.

    pypdf's limits bound memory, not time: a 25 KB page of 2.4 million
    ``(x) Tj`` operators stays under them and takes minutes, as text shown
    glyph by glyph costs 20 to 100 µs per operator. A PDF may take
    ``seconds_per_file``, all PDFs of one call ``seconds_per_call``, each
    plus ``seconds_per_mb`` per MB of PDF: honest files take 0.1 to 5 s per
    MB (measured on the PDFs in tests, two shared cores), so the allowance
    grows with what was given while a tiny crafted file gets little. Wall
    time rather than an operator count because operators differ a
    hundredfold in cost; only files far slower than honest ones are cut.
    """

    seconds_per_file: float = 30.0
    seconds_per_call: float = 120.0
    seconds_per_mb: float = 30.0


DEFAULT_PDF_BUDGET = PdfBudget()


def _seconds(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"


class _OutOfTime(Exception):
    """Raised between content operators when the PDF's time is up."""


class PdfClock:
    """The time left for the PDFs of one reading call and for the PDF being read.

    ``pdf_bytes`` is the size of all PDFs the call will read; ``now`` is a
    seconds clock (injectable so tests need not be slow).
    """

    def __init__(
        self, budget: PdfBudget, pdf_bytes: int, now: Callable[[], float] = time.monotonic
    ) -> None:
        self._budget = budget
        self._now = now
        self.call_seconds = budget.seconds_per_call + budget.seconds_per_mb * pdf_bytes / _MB
        self._call_deadline = now() + self.call_seconds
        self.file_seconds = 0.0
        self._file_deadline = self._call_deadline

    def start_file(self, size: int) -> None:
        self.file_seconds = self._budget.seconds_per_file + self._budget.seconds_per_mb * size / _MB
        self._file_deadline = min(self._call_deadline, self._now() + self.file_seconds)

    def over(self) -> bool:
        return self._now() > self._file_deadline

    def call_over(self) -> bool:
        return self._now() > self._call_deadline

    def check(self, *_: Any) -> None:
        """Raise ``_OutOfTime`` if time is up; shaped as a pypdf operator visitor."""
        if self.over():
            raise _OutOfTime

    def unreadable(self) -> Unreadable:
        """Why a PDF that got no page read in time was skipped."""
        if self.call_over():
            return Unreadable(
                f"could not be read within the {_seconds(self.call_seconds)} s allowed for reading PDFs "
                "in one run",
                "read it in a separate run",
            )
        return Unreadable(
            f"took longer than the {_seconds(self.file_seconds)} s allowed for reading it "
            "(it may be built to be slow to read)",
            "split it into smaller PDFs or print it to a new PDF",
        )

    def pages_left_out(self, first: int, last: int) -> str:
        """The warning for pages ``first`` to ``last`` left out when time ran out."""
        pages = f"Page {first} was" if first == last else f"Pages {first} to {last} were"
        if self.call_over():
            return (
                f"{pages} left out because reading PDFs took longer than the "
                f"{_seconds(self.call_seconds)} s allowed for one run; read this PDF in a separate run "
                "to include them."
            )
        return (
            f"{pages} left out because reading took longer than the {_seconds(self.file_seconds)} s "
            "allowed for this PDF; split it or print it to a new PDF to include them."
        )


def read_pdf(
    name: str,
    data: bytes,
    password: str | None,
    warnings_: list[IngestWarning],
    clock: PdfClock | None = None,
) -> Document:
    """Extract the text of each page; pages are joined with ``PAGE_SEPARATOR``.

    A page that cannot be read, or that has only images, is left out with a
    warning naming it; the rest of the file is still used. ``clock`` (by
    default a fresh one for this file alone) is shared by the PDFs of one
    call: when it runs out the page being read and the rest are left out,
    and a PDF of which no page was read is ``Unreadable``.
    """
    if clock is None:
        clock = PdfClock(DEFAULT_PDF_BUDGET, len(data))
    clock.start_file(len(data))
    if clock.over():
        raise clock.unreadable()
    with _quiet_pypdf(), apply_configuration(**_PDF_LIMITS):
        pages = _open_pages(data, password)
        page_texts, unreadable, too_large, cut = _page_texts(pages, clock)
        failed = set(unreadable + too_large + cut)
        if cut and not "".join(page_texts).strip():
            raise clock.unreadable()
        scanned, image_only = _image_pages(pages, page_texts, failed, clock)
    if cut:
        warnings_.append(IngestWarning(name, clock.pages_left_out(cut[0], cut[-1])))
    if scanned:
        raise Unreadable(
            "has no extractable text (it looks scanned or image-only)",
            "run OCR on it first (for example with ocrmypdf) and add the result",
        )
    _warn_left_out(name, unreadable, too_large, image_only, warnings_)
    return Document(name=name, text=PAGE_SEPARATOR.join(page_texts), pages=_page_spans(page_texts))


def _open_pages(data: bytes, password: str | None) -> list[PageObject]:
    """The PDF's pages, decrypted if need be; ``Unreadable`` if the file cannot be opened."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            _unlock(reader, password)
        return list(reader.pages)
    except DependencyError as error:
        raise Unreadable(
            "is encrypted with AES, which needs the 'cryptography' package",
            "install it with 'pip install cryptography'",
        ) from error
    except _PDF_ERRORS as error:
        raise _unreadable_pdf(isinstance(error, LimitReachedError)) from error


def _page_texts(
    pages: list[PageObject], clock: PdfClock
) -> tuple[list[str], list[int], list[int], list[int]]:
    """(text of each page, numbers of unreadable pages, of pages over the limit, of pages out of time).

    A page that fails has empty text; if every page fails the PDF is
    ``Unreadable``. Once time is up, that page and all after it are out of time.
    """
    page_texts: list[str] = []
    unreadable: list[int] = []
    too_large: list[int] = []
    for number, page in enumerate(pages, start=1):
        try:
            # The visitor is the only hook inside pypdf's operator loop; it
            # also makes pypdf parse pages without text operators, which
            # _draws_image would parse anyway.
            text = page.extract_text(visitor_operand_before=clock.check) or ""
            clock.check()  # pypdf swallows errors inside forms, so time may have run out there
            page_texts.append(unfold_ligatures(text))
        except _OutOfTime:
            cut = list(range(number, len(pages) + 1))
            return page_texts + [""] * len(cut), unreadable, too_large, cut
        except _PDF_ERRORS as error:
            page_texts.append("")
            (too_large if isinstance(error, LimitReachedError) else unreadable).append(number)
    if pages and len(unreadable) + len(too_large) == len(pages):
        raise _unreadable_pdf(bool(too_large))
    return page_texts, unreadable, too_large, []


def _image_pages(
    pages: list[PageObject], page_texts: list[str], failed: set[int], clock: PdfClock
) -> tuple[bool, list[int]]:
    """(whether the whole PDF looks scanned, numbers of the pages with only images)."""
    visible = [len("".join(text.split())) for text in page_texts]
    read = [
        (number, page, count)
        for number, (page, count) in enumerate(zip(pages, visible), start=1)
        if number not in failed
    ]
    scanned = sum(visible) == 0 or (
        sum(visible) < MIN_CHARS_PER_PAGE * len(pages)
        and any(_draws_image(page, clock) for _, page, _ in read)
    )
    image_only = [
        number
        for number, page, count in read
        if not scanned and count < MIN_CHARS_PER_PAGE and _draws_image(page, clock)
    ]
    return scanned, image_only


def _warn_left_out(
    name: str,
    unreadable: list[int],
    too_large: list[int],
    image_only: list[int],
    warnings_: list[IngestWarning],
) -> None:
    """One warning per kind of page left out, listing the page numbers."""
    for numbers, (one, several) in (
        (unreadable, ("could not be read and was left out; the rest of the PDF was used",
                      "could not be read and were left out; the rest of the PDF was used")),
        (
            too_large,
            ("is too large for the reader's safety limit, so its text was left out; "
             "split the PDF or print it to a new PDF to include it",
             "are too large for the reader's safety limit, so their text was left out; "
             "split the PDF or print it to a new PDF to include them"),
        ),
        (
            image_only,
            ("has only images and no text, so its content was left out; "
             "run OCR on the PDF (for example with ocrmypdf) to include it",
             "have only images and no text, so their content was left out; "
             "run OCR on the PDF (for example with ocrmypdf) to include them"),
        ),
    ):
        if numbers:
            listed = ", ".join(str(number) for number in numbers)
            pages = wording.plural(len(numbers), "Page")
            warnings_.append(IngestWarning(name, f"{pages} {listed} {wording.plural(len(numbers), one, several)}."))


def _page_spans(page_texts: list[str]) -> tuple[PageSpan, ...]:
    """Where each page's text starts and ends in the joined text."""
    spans: list[PageSpan] = []
    start = 0
    for number, text in enumerate(page_texts, start=1):
        spans.append(PageSpan(page=number, start=start, end=start + len(text)))
        start += len(text) + len(PAGE_SEPARATOR)
    return tuple(spans)


def _unreadable_pdf(too_large: bool) -> Unreadable:
    if too_large:
        # A safety limit means the file asks for more than the reader allows,
        # not that it is damaged: downloading it again would change nothing.
        return Unreadable(
            "is too large for the reader's safety limit",
            "split it into smaller PDFs or print it to a new PDF",
        )
    return Unreadable(
        "could not be read as a PDF (it looks damaged or truncated)",
        "open and save it again, or export or download it again",
    )


def _draws_image(page: PageObject, clock: PdfClock) -> bool:
    """Whether the page draws an image: inline, or an image XObject, also inside forms.

    Judged from the page's operators and resources without decoding any image;
    ``page.images`` decodes every inline image only to count it. Out of
    time, a page is taken to draw none: its text, if any, is kept.
    """
    if clock.over():
        return False
    try:
        return _content_draws_image(
            page.get_contents(), _resolved(page.get("/Resources")), page.pdf, set(), clock
        )
    except (_OutOfTime, *_PDF_ERRORS):
        # Content that cannot be parsed draws nothing we could use; whether the
        # page has text was already decided by the text extraction.
        return False


def _content_draws_image(
    content: ContentStream | None, resources: Any, pdf: Any, seen: set[int], clock: PdfClock
) -> bool:
    if content is None:
        return False
    xobjects = _resolved(resources.get("/XObject")) if isinstance(resources, dict) else None
    for operands, operator in content.operations:
        clock.check()
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
            ContentStream(xobject, pdf), _resolved(xobject.get("/Resources")) or resources, pdf, seen, clock
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
        raise Unreadable(
            "is encrypted and the given password does not open it",
            "check the PDF password",
        )
    raise Unreadable(
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
