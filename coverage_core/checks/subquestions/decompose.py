"""Breaking questions into sub-questions with the LLM, and the entry point that also scores them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from coverage_core import wording
from coverage_core.checks.subquestions.config import UNAVAILABLE_REASON, SubQuestionConfig
from coverage_core.checks.subquestions.parsing import parse_decomposition
from coverage_core.checks.subquestions.prompt import SYSTEM_PROMPT, build_prompt
from coverage_core.checks.subquestions.results import Decomposition, SubQuestionResult
from coverage_core.checks.subquestions.scoring import check_embeddings, score_subquestions
from coverage_core.errors import InputError, ProviderError
from coverage_core.suggest.llm import FATAL_KINDS, ChatClient
from coverage_core.types import Question


def _as_questions(questions: Sequence[Question | str]) -> list[Question]:
    return [q if isinstance(q, Question) else Question(row=i, text=str(q)) for i, q in enumerate(questions)]


def decompose_questions(
    questions: Sequence[Question | str],
    llm: ChatClient,
    config: SubQuestionConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Decomposition], list[str]]:
    """Ask the LLM for the typed sub-questions of each question, one request per question.

    A question whose reply cannot be used (not JSON even after the client's
    one reminder, or JSON without sub-questions) or whose request the server
    refused is marked ``"failed"`` with the reason, and the next question is
    asked. After an authentication, connection, timeout or rate-limit
    failure (the client has already retried rate limits and timeouts), the
    remaining questions are marked ``"skipped"`` and not sent; the questions
    already done are kept, and a warning says so.

    Parameters
    ----------
    questions : sequence of Question (row, text), or of str (row = position)
    llm : ChatClient
    config : SubQuestionConfig, for ``max_sub_questions``
    progress : callable(done, total), optional, called after each question

    Returns
    -------
    decompositions : list of Decomposition, one per question, in order
    warnings : list of str, one sentence each
    """
    config = config or SubQuestionConfig()
    items = _as_questions(questions)
    decompositions: list[Decomposition] = []
    warnings: list[str] = []
    stopped: str | None = None
    for done, question in enumerate(items):
        if stopped is not None:
            decompositions.append(
                Decomposition(question.row, question.text, status="skipped", reason=stopped)
            )
        else:
            decomposition, fatal = _decompose_one(question, llm, config)
            decompositions.append(decomposition)
            if fatal:
                error = decomposition.reason
                stopped = f"Not sent because the LLM stopped answering: {error}"
                warnings.append(
                    f"Sub-question decomposition stopped after {done} of {len(items)} questions because the "
                    f"LLM is unavailable: {error} The finished questions are kept; run again for the rest."
                )
        if progress is not None:
            progress(done + 1, len(items))
    failed = sum(d.status == "failed" for d in decompositions) - (1 if stopped else 0)
    if failed:
        warnings.append(
            f"{failed} {wording.plural(failed, 'question')} could not be broken into sub-questions; "
            "see the reason next to each."
        )
    return decompositions, warnings


def _decompose_one(question: Question, llm: ChatClient, config: SubQuestionConfig) -> tuple[Decomposition, bool]:
    """The question's decomposition, and whether its failure should stop the run."""
    try:
        reply = llm.complete_json(SYSTEM_PROMPT, build_prompt(question.text, config.max_sub_questions))
    except ProviderError as error:
        failed = Decomposition(question.row, question.text, status="failed", reason=str(error))
        return failed, error.kind in FATAL_KINDS
    try:
        subs = parse_decomposition(reply, question.text, config.max_sub_questions)
    except ValueError as error:
        return Decomposition(
            question.row,
            question.text,
            status="failed",
            reason=f"The LLM's reply could not be used: {error}; run it again or try a stronger model.",
        ), False
    return Decomposition(question.row, question.text, subs), False


# --------------------------------------------------------------------------
# the entry point for the dashboard and the CLI
# --------------------------------------------------------------------------


def analyze_subquestions(
    questions: Sequence[Question | str],
    question_vectors,
    chunk_vectors,
    embed: Callable[[list[str]], Any],
    llm: ChatClient | None,
    config: SubQuestionConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SubQuestionResult:
    """Decompose the selected questions with the LLM and score their sub-questions: a :class:`SubQuestionResult`.

    Scored by :func:`score_subquestions`. Why: one call for the dashboard and the CLI, arrays checked first.

    Parameters
    ----------
    questions : sequence of m Question (or str), the user's selection
    question_vectors : array-like of shape (m, d), their embeddings, same order
    chunk_vectors : array-like of shape (n, d)
    embed : callable(list of str) -> array-like of shape (len, d), the cached embedder
    llm : ChatClient or None
    config : SubQuestionConfig
    progress : callable(done, total), optional, after each question sent

    Raises
    ------
    InputError
        With :data:`UNAVAILABLE_REASON` when no LLM is configured, or when no
        question is selected or the arrays do not match. LLM failures never
        raise: see :func:`decompose_questions`.
    """
    if llm is None:
        raise InputError(UNAVAILABLE_REASON)
    config = config or SubQuestionConfig()
    items = _as_questions(questions)
    if not items:
        raise InputError("Select at least one question to break into sub-questions.")
    # Check the arrays before paying for the LLM.
    vectors, chunks = check_embeddings(question_vectors, chunk_vectors, len(items), "selected")
    decompositions, warnings = decompose_questions(items, llm, config, progress)
    model = getattr(getattr(llm, "config", None), "model", None)
    return score_subquestions(decompositions, vectors, chunks, embed, config, model, warnings)
