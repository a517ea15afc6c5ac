"""The plain input data: documents, their passages and the test questions.

What an analysis computes from them is in :mod:`coverage_core.results`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass(frozen=True)
class PageSpan:
    """Where one PDF page sits inside its document's text (1-based page)."""

    page: int
    start: int
    end: int


@dataclass(frozen=True)
class Document:
    """One readable input file.

    ``text`` is the whole document; for a PDF the pages are joined with
    ``"\\n\\n"`` and ``pages`` records where each page starts and ends, so a
    chunk's character offset maps back to its page.
    """

    name: str
    text: str
    pages: tuple[PageSpan, ...] = ()

    def page_at(self, offset: int) -> int | None:
        """The 1-based page containing character ``offset``, or None for non-PDFs."""
        for span in self.pages:
            if span.start <= offset < span.end:
                return span.page
        if self.pages and offset >= self.pages[-1].start:
            return self.pages[-1].page
        return None


@dataclass(frozen=True)
class Chunk:
    """A passage of a document: ``document.text[start:end] == text``."""

    document: str
    text: str
    start: int
    end: int
    page: int | None = None


@dataclass(frozen=True)
class Question:
    """A test question and its 0-based data row in the uploaded file."""

    row: int
    text: str


@dataclass(frozen=True)
class IngestWarning:
    """Something in the input was skipped or looks wrong; the run goes on."""

    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


@dataclass
class DocumentSet:
    """Result of reading document files: what was readable, and what was not."""

    documents: list[Document]
    warnings: list[IngestWarning] = field(default_factory=list)


@dataclass
class QuestionSet:
    """A question file as the user has it, plus the questions found in it.

    ``frame`` is the file's table with every column kept as text, untouched,
    in file order, so exports can reproduce the user's schema. ``questions``
    holds the non-blank question cells with their 0-based row in ``frame``.
    ``duplicates`` maps the row of each exact repeat to the row it repeats.
    """

    frame: pd.DataFrame
    question_column: str
    questions: list[Question]
    n_blank: int = 0
    duplicates: dict[int, int] = field(default_factory=dict)
    encoding: str = "utf-8"
    delimiter: str = ","
    warnings: list[IngestWarning] = field(default_factory=list)

    @property
    def texts(self) -> list[str]:
        return [question.text for question in self.questions]

    @property
    def rows(self) -> list[int]:
        return [question.row for question in self.questions]
