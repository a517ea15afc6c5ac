"""Production traffic: which real queries the documents cannot answer, and the masking tokens of anonymised logs.

* **answers**: a query has *no answer in the documents* when the off-topic
  screener flags it, exactly as it flags a test question
  (:class:`coverage_core.offtopic.screener.QuestionScreener` deciding against
  the documents at the questions' support level: best similarity and the
  query's distinctive words together in one passage, short of
  ``margin_cut(strictness)`` units of evidence, or a subject or content word
  the documents never discuss). One rule for test questions and real
  queries: the Results page's off-topic count and the traffic's unmet
  demand cannot disagree. That decision reads one query and the passages
  only (the screener's neighbour smoothing moves no flag when it decides
  against the documents), so the queries are screened in blocks of
  :data:`SCREEN_BLOCK`, which keeps its neighbour search small at 100,000
  queries. The chunk density of the relative rule decides nothing here and
  is skipped (``density_weight=0``).
* **masks**: anonymised logs carry placeholders (``<EMAIL>``,
  ``[REDACTED]``, ``{name}``, ``XXXX``, ``***``, and this package's own
  ``[email]``, ``[phone]``, ``[secret]``… of
  :mod:`coverage_core.checks.personal_data`); :func:`strip_masks` removes them, and the one- or
  two-letter fragments glued to them ("J***n", "<NAME>'s"), before topics
  are named and before any word evidence is read, so a placeholder never
  becomes a topic word or an "absent word".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from coverage_core.offtopic.screener import QuestionScreener

__all__ = ["NO_ANSWER", "SCREEN_BLOCK", "QueryAnswers", "has_mask", "query_answers", "strip_masks"]

NO_ANSWER = "no answer in the documents"
"""What a query (or a group of queries) no passage answers is called wherever it is shown."""

SCREEN_BLOCK = 4096
"""Queries screened per screener fit: the neighbour search inside a fit is quadratic in its rows."""

# A placeholder: a bracketed identifier (<EMAIL>, <PERSON_1>, [REDACTED], [email], {name}, {{user}}),
# a run of 3+ X (XXXX, xxx-xxx), of 2+ asterisks or 3+ of # • _ █, or a bare REDACTED-like word.
_PLACEHOLDER = (
    r"(?:<\s*[A-Za-z][\w .-]{0,30}?\s*>"
    r"|\[\s*[A-Za-z][\w .-]{0,30}?\s*\]"
    r"|\{\{?\s*[A-Za-z][\w.-]{0,30}\s*\}?\}"
    r"|\b[Xx]{3,}\b"
    r"|\*{2,}|#{3,}|•{3,}|_{3,}|█+"
    r"|\b(?:REDACTED|ANONYMI[SZ]ED|MASKED|CENSORED)\b)"
)
# The placeholder with the stray 1-2 letter fragments glued to it ("J***n", "<NAME>'s", "Mr.XXX").
_MASK = re.compile(rf"(?:\b\w{{1,2}}\.?)?{_PLACEHOLDER}(?:['’]?\w{{1,2}}\b)?")
_BRACKET_WORDS = re.compile(r"[\w .-]")


def strip_masks(text: str) -> str:
    """``text`` without its anonymisation placeholders (and the 1-2 letter fragments glued to them), each
    replaced by a comma so that no two words around a placeholder read as one phrase; spacing tidied."""
    if not text:
        return text
    stripped = _MASK.sub(" , ", text)
    if stripped == text:
        return text
    stripped = re.sub(r"\s+", " ", stripped)
    stripped = re.sub(r"(?:\s*,\s*)+(?=[\s?.!]*$)", "", stripped)  # a trailing placeholder ends the text
    stripped = re.sub(r"^(?:\s*,\s*)+", "", stripped)
    return re.sub(r"(?:\s*,){2,}", " ,", stripped).strip()


def has_mask(text: str) -> bool:
    """Whether ``text`` holds an anonymisation placeholder."""
    return bool(_MASK.search(text or ""))


@dataclass(frozen=True)
class QueryAnswers:
    """Per query: ``is_answerable`` (not flagged by the screener), ``best_similarity`` (best cosine to a
    passage) and ``best_passage`` (that passage's chunk index; -1 without passages)."""

    is_answerable: np.ndarray
    best_similarity: np.ndarray
    best_passage: np.ndarray


def query_answers(
    texts: Sequence[str],
    query_vectors: np.ndarray,
    chunk_vectors: np.ndarray,
    *,
    question_support_threshold: float,
    chunk_texts: Sequence[str] = (),
    chunk_documents: Sequence[str] = (),
    strictness: float | None = None,
    random_state: int = 0,
) -> QueryAnswers:
    """Which queries the documents answer, by the off-topic rule of the test questions (module docstring).

    ``query_vectors`` and ``chunk_vectors`` are unit rows of one model;
    ``texts`` are the queries as the word check reads them (masks stripped,
    :func:`strip_masks`). Without ``chunk_texts`` the decision reads the
    similarities alone, as the screener does. ``strictness`` None is the
    screener's default.
    """
    n = query_vectors.shape[0]
    best = np.full(n, -1.0, dtype=np.float32)
    passage = np.full(n, -1, dtype=np.int64)
    answerable = np.zeros(n, dtype=bool)
    if n == 0 or chunk_vectors.shape[0] == 0:
        return QueryAnswers(answerable, best, passage)
    with_texts = len(chunk_texts) == chunk_vectors.shape[0]
    documents = list(chunk_documents) if len(chunk_documents) == chunk_vectors.shape[0] else None
    settings = {} if strictness is None else {"strictness": float(strictness)}
    for start in range(0, n, SCREEN_BLOCK):
        rows = slice(start, min(start + SCREEN_BLOCK, n))
        screener = QuestionScreener(density_weight=0.0, random_state=random_state,
                                    question_support_threshold=float(question_support_threshold), **settings)
        screener.fit(
            query_vectors[rows], chunk_vectors,
            question_texts=list(texts[rows]) if with_texts else None,
            chunk_texts=list(chunk_texts) if with_texts else None,
            chunk_documents=documents if with_texts else None,
        )
        answerable[rows] = ~screener.is_outlier_
        best[rows] = screener.max_similarity_
        passage[rows] = screener.nearest_chunk_
    return QueryAnswers(answerable, best, passage)
