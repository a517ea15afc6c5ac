"""Replacement questions for stale ones: one question for each passage new or rewritten in a changed document.

When a document changes, the questions written for it may ask about what it no longer says
(:mod:`coverage_core.history.stale`). Its new and rewritten passages are the ones a replacement is written for:
the question writer's keep rule as for a gap (:func:`~coverage_core.suggest.writing.write_questions`), an offline
draft where no written question holds. Every suggestion's origin is :data:`REPLACES_STALE` and its topic the
topic of its passage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from coverage_core.duplicates import NEAR_DUPLICATE_SIMILARITY
from coverage_core.languages import corpus_languages
from coverage_core.suggest.llm import ChatClient
from coverage_core.suggest.questions import Suggestion, draft_questions, duplicate_key
from coverage_core.suggest.writing import WritingConfig, repeat_level, write_questions

__all__ = ["REPLACES_STALE", "replacement_questions"]

REPLACES_STALE = "stale"
"""The origin of a question written to replace a stale one."""


def replacement_questions(
    passages: Sequence[int],
    chunk_texts: Sequence[str],
    chunk_documents: Sequence[str],
    chunk_vectors,
    labels,
    existing_questions: Sequence[str],
    *,
    writer: ChatClient | None = None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    support_threshold: float | None = None,
    question_vectors=None,
    near_duplicate_level: float = NEAR_DUPLICATE_SIMILARITY,
) -> tuple[list[Suggestion], str]:
    """At most one suggestion per passage of ``passages`` (chunk indices), in their order.

    Parameters
    ----------
    passages : the chunks to write for (the changed passages)
    chunk_texts, chunk_documents, chunk_vectors, labels : every chunk's text, document, vector and topic
    existing_questions : the test questions, never repeated
    writer, embed, support_threshold : the question writer and what its keep rule needs; without all three,
        offline drafts
    question_vectors : the test questions' vectors (the keep rule's repeat check), optional
    near_duplicate_level : the analysis's near-duplicate level, the repeat check's scale

    Returns
    -------
    suggestions : list of Suggestion, origin :data:`REPLACES_STALE`, each in its passage's topic
    failure : str, the writer's error when it stopped ("" when it did not); drafts stand in for the rest
    """
    passages = [int(index) for index in passages]
    labels = np.asarray(labels)
    seen = {duplicate_key(str(question)) for question in existing_questions}
    languages = corpus_languages(list(chunk_texts)) if passages else []
    written, unwritten, failure = [], list(passages), ""
    if passages and writer is not None and embed is not None and support_threshold is not None:
        result = write_questions(writer, -1, passages, chunk_texts, chunk_documents, chunk_vectors, embed,
                                 support_threshold, existing_vectors=question_vectors, candidates=languages,
                                 n=len(passages), seen=seen, origin=REPLACES_STALE,
                                 config=WritingConfig(duplicate_similarity=repeat_level(near_duplicate_level)))
        written, unwritten, failure = list(result.kept), list(result.unwritten), result.failure
    drafts = [draft for index in unwritten
              for draft in draft_questions(int(labels[index]), [index], chunk_texts, chunk_documents, (), 1, seen,
                                           languages) if draft.text]
    order = {index: position for position, index in enumerate(passages)}
    found = sorted([*written, *drafts], key=lambda suggestion: order.get(suggestion.chunk, len(order)))
    return [replace(suggestion, origin=REPLACES_STALE, cluster=int(labels[suggestion.chunk]))
            for suggestion in found], failure
