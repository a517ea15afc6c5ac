"""The prompt that asks an LLM for typed sub-questions, and what sending it costs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from coverage_core import wording
from coverage_core.checks.subquestions.config import (
    PROMPT_QUESTION_CHARS,
    REPLY_TOKENS_OVERHEAD,
    REPLY_TOKENS_PER_SUB_QUESTION,
    SubQuestionConfig,
)
from coverage_core.costs import CostEstimate, approximate_tokens, default_price_table, estimate_llm_cost
from coverage_core.languages import LANGUAGE_NAMES, UNDETERMINED, detect_language, language_name
from coverage_core.types import Question
from coverage_core.validation import shorten

SYSTEM_PROMPT = (
    "You help check whether a knowledge base can answer the test questions of a retrieval-augmented "
    "generation (RAG) system. You split a question into the smaller questions that a complete answer "
    "has to settle. Reply with JSON only."
)


def question_language(question: str) -> str:
    """The language code of ``question`` when it is clear, else :data:`~coverage_core.languages.UNDETERMINED`.

    Short questions fool the detector ("When did Volta die?" reads as
    Nigerian Pidgin at 0.1), and a wrongly named language would make the
    model answer in it. :func:`~coverage_core.languages.detect_language`
    keeps a confident guess whatever its candidates, so a guess that
    survives being left out of them is confident.
    """
    guess = detect_language(question)
    if guess == UNDETERMINED:
        return guess
    others = [code for code in LANGUAGE_NAMES if code not in (guess, UNDETERMINED)]
    return guess if detect_language(question, others) == guess else UNDETERMINED


def language_rule(language: str) -> str:
    """The prompt's rule naming the language of the sub-questions ("" or undetermined: the question's own)."""
    if language and language != UNDETERMINED:
        return f"- Write the sub-questions in {language_name(language)}, the language of the question."
    return "- Write the sub-questions in the language of the question."


def build_prompt(question: str, max_sub_questions: int, language: str | None = None) -> str:
    """The user prompt that asks for the typed sub-questions of ``question``.

    ``language``: the code of the question's language, named in the prompt;
    None detects it (:func:`question_language`).
    """
    language = question_language(question) if language is None else language
    return "\n".join(
        [
            f"Question: {shorten(question, PROMPT_QUESTION_CHARS, at_word=True)}",
            "",
            f"Split this question into at most {max_sub_questions} sub-questions and label each one:",
            '- "core": a complete answer must settle it; without it the answer would be wrong or incomplete.',
            '- "background": context that makes the answer easier to follow (who or what something is, '
            "a definition, when or where), but the answer is still correct without it.",
            '- "follow-up": what a reader might ask after getting the answer; related, but not needed '
            "to answer the question.",
            "",
            "Rules:",
            "- Each sub-question asks one thing and stands on its own: name the people, things and places "
            'instead of writing "it" or "they".',
            "- Ask what a reference text could state; no opinions and nothing about the person asking.",
            "- Do not repeat the question itself, and do not ask the same thing twice.",
            '- Give at least one "core" sub-question; a simple factual question may need only one or two '
            "sub-questions in all.",
            "- List the core sub-questions first, then background, then follow-up.",
            language_rule(language),
            "",
            "Reply with JSON only, in exactly this form:",
            '{"sub_questions": [{"text": "...", "type": "core"}, {"text": "...", "type": "background"}, '
            '{"text": "...", "type": "follow-up"}]}',
        ]
    )


def _question_text(question: Question | str) -> str:
    return question.text if isinstance(question, Question) else str(question)


@dataclass(frozen=True)
class DecompositionCost:
    """An **estimate** of what decomposing the selected questions costs.

    Input tokens are those of the actual prompts, counted offline at about 4
    characters per token; output tokens are an *assumed* budget per question
    (``REPLY_TOKENS_OVERHEAD + max_sub_questions * REPLY_TOKENS_PER_SUB_QUESTION``).
    A reply that is not valid JSON is asked for again once, which costs more.
    """

    estimate: CostEstimate
    n_questions: int
    output_tokens_per_question: int

    @property
    def input_tokens(self) -> int:
        return self.estimate.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.estimate.output_tokens

    @property
    def usd(self) -> float | None:
        return self.estimate.usd

    @property
    def label(self) -> str:
        return (
            f"Estimate for {self.n_questions} {wording.plural(self.n_questions, 'question')}: "
            f"{self.estimate.label}; the output is an assumed budget of ~{self.output_tokens_per_question:,} "
            "tokens per question, and a reply that is not valid JSON is asked for again, which costs more"
        )


def estimate_decomposition_cost(
    questions: Sequence[Question | str],
    model: str,
    table: pd.DataFrame | None = None,
    provider: str = "openai",
    config: SubQuestionConfig | None = None,
) -> DecompositionCost:
    """Estimate tokens and dollars of decomposing ``questions``, before anything is sent.

    Parameters
    ----------
    questions : sequence of Question or str, the user's selection
    model : str, the LLM model name as in the price table
    table : DataFrame, the editable price table (default:
        :func:`coverage_core.costs.default_price_table`)
    provider : str, the provider column of the price table
    config : SubQuestionConfig, for ``max_sub_questions``

    Returns
    -------
    DecompositionCost; ``usd`` is None when the table has no price for the model.
    """
    config = config or SubQuestionConfig()
    texts = [_question_text(q) for q in questions]
    input_tokens = sum(
        approximate_tokens([SYSTEM_PROMPT, build_prompt(text, config.max_sub_questions)]) for text in texts
    )
    per_question = REPLY_TOKENS_OVERHEAD + config.max_sub_questions * REPLY_TOKENS_PER_SUB_QUESTION
    table = default_price_table() if table is None else table
    estimate = estimate_llm_cost(input_tokens, per_question * len(texts), model, table, provider=provider)
    return DecompositionCost(estimate, len(texts), per_question)
