"""Suggested questions for a gap: offline drafts from its least covered passages, or questions an LLM wrote.

* offline (default): question **drafts** templated from key sentences of
  those passages, marked ``origin="draft"``; they are a starting point for a
  person to edit, not finished test questions;
* with an LLM (:class:`~coverage_core.suggest.llm.ChatClient`): questions the
  model wrote from the passages, marked ``origin="llm"``, each kept only if it
  reaches its passage at the support level. If the LLM fails for a gap, that
  gap falls back to drafts and a warning says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from coverage_core.errors import ProviderError
from coverage_core.stages.topics import stem_word
from coverage_core.suggest.llm import FATAL_KINDS, ChatClient
from coverage_core.validation import shorten, unit_rows

# Longest passage text sent to the LLM / kept in a Suggestion, in characters.
PROMPT_PASSAGE_CHARS = 1200
SUGGESTION_PASSAGE_CHARS = 300
# Existing questions shown to the LLM so it does not repeat them.
N_EXISTING_IN_PROMPT = 20


@dataclass(frozen=True)
class Suggestion:
    """A suggested test question for a gap.

    ``origin`` is ``"llm"`` (written by the model) or ``"draft"`` (templated
    offline, to be edited). ``document`` and ``passage`` (shortened) are the
    source the question is answerable from; empty when an LLM question cited
    no valid passage.
    """

    cluster: int
    text: str
    origin: str
    document: str
    passage: str


def suggestion_from(cluster: int, text: str, origin: str, index: int | None, chunk_texts, chunk_documents) -> Suggestion:
    """A :class:`Suggestion` answerable from chunk ``index`` (None: no passage, empty source)."""
    if index is None:
        return Suggestion(cluster=cluster, text=text, origin=origin, document="", passage="")
    return Suggestion(
        cluster=cluster,
        text=text,
        origin=origin,
        document=str(chunk_documents[index]),
        passage=shorten(chunk_texts[index], SUGGESTION_PASSAGE_CHARS, at_word=True),
    )



_WORD = re.compile(r"[^\W\d_]+")


def duplicate_key(text: str) -> str:
    """Lowercase, punctuation and whitespace runs collapsed: for duplicate checks."""
    return " ".join(re.sub(r"[\W_]+", " ", text.lower()).split())


# Sentence ends: . ! ? (optionally closed by a quote or bracket) before a space, or a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\n+")
# Markers of markup, captions and furniture: such sentences are never quoted.
_NOT_PROSE = re.compile(
    r"=|https?:|www\.|<[^>]*>|\{\{|\}\}|\[\[|\]\]|\||^\s*[*#•·\-–—>]|^\W*(?:fig(?:ure)?|table|photo|image|caption|source|note|see also)\b",
    re.IGNORECASE,
)
# A sentence that needs the one before it to make sense.
_DANGLING_START = re.compile(
    r"^(?:it|its|this|these|that|those|they|their|he|his|she|her|him|them|such|there|here|however|also|"
    r"thus|hence|then|both|which|another|the latter|the former)\b",
    re.IGNORECASE,
)
# "X is a Y…": a definition, asked back as "What is X?".
_DEFINITION = re.compile(
    r"^(?P<subject>(?:(?:The|An|A) )?[A-Z][\w'-]*(?: [\w'-]+){0,3}?)(?: \([^)]{1,80}\))?,? "
    r"(?P<verb>is|are|was|were) (?:an?|the|one of the) \w",
)
_MIN_SENTENCE_WORDS, _MAX_SENTENCE_WORDS = 8, 45


# A period after these does not end a sentence.
_ABBREVIATION = re.compile(r"(?:\b(?:St|Mr|Mrs|Ms|Dr|Jr|Sr|Mt|No|vs|etc|ca|approx|e\.g|i\.e)|\b[A-Z])\.$")
# Reference-list debris: dates of citations, "pp.", "Retrieved", "ISBN", stripped markup (", ," "()").
_CITATION = re.compile(
    r"\b\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{4}\b|\bpp?\. ?\d|\bretrieved\b"
    r"|\bisbn\b|\bdoi\b|,\s*,|\(\s*\)|\(\s*[,;]",
    re.IGNORECASE,
)


def _sentences(text: str) -> list[str]:
    """The complete sentences of a chunk: a fragment cut off at either end of the chunk is left out."""
    parts: list[str] = []
    for part in (" ".join(p.split()) for p in _SENTENCE_END.split(text)):
        if parts and _ABBREVIATION.search(parts[-1]):
            parts[-1] += " " + part
        elif part:
            parts.append(part)
    return [p for p in parts if re.match(r"[\"“‘]?[A-Z]", p) and re.search(r"[.!?][\"'”’)\]]*$", p)]


def _is_prose(sentence: str, strict: bool = True) -> bool:
    """A sentence a tester can quote: not markup, a caption, a list of numbers or a heading.

    Not ``strict``: any sentence of 5 words or more that is not markup,
    numbers or a reference (for passages of short sentences only).
    """
    words = sentence.split()
    shortest = _MIN_SENTENCE_WORDS if strict else 5
    if not shortest <= len(words) <= _MAX_SENTENCE_WORDS or _NOT_PROSE.search(sentence):
        return False
    alphabetic = [w for w in words if _WORD.fullmatch(w.strip(".,;:!?()\"'“”‘’"))]
    if len(alphabetic) < 0.7 * len(words) or _CITATION.search(sentence):
        return False  # numbers, codes, references
    if not strict:
        return True
    if sum(w[:1].isupper() for w in words[1:]) > 0.4 * (len(words) - 1):
        return False  # a title, a caption or a reference: "The Flute Book: A Complete Guide for …"
    # Prose has function words; captions and title lists ("Statue of James Watt in Leeds") few.
    function = sum(w.lower().strip(".,;:!?()\"'“”‘’") in ENGLISH_STOP_WORDS for w in words)
    return function >= 0.2 * len(words)


def _key_sentences(text: str, theme_words: set[str], strict: bool = True) -> list[str]:
    """The chunk's quotable sentences, best first.

    Best is most content-word dense: distinct content words (theme words
    count double) per square root of length, so neither the shortest nor
    the longest sentence wins by size alone; a sentence starting with a
    pronoun or "However" needs its context and ranks last.
    """
    scored = []
    for position, sentence in enumerate(_sentences(text)):
        if not _is_prose(sentence, strict):
            continue
        words = [w.lower() for w in _WORD.findall(sentence)]
        content = {w for w in words if len(w) > 2 and w not in ENGLISH_STOP_WORDS}
        density = (len(content) + len(content & theme_words)) / np.sqrt(len(words))
        scored.append((bool(_DANGLING_START.match(sentence)), -density, position, sentence))
    return [sentence for *_, sentence in sorted(scored)]


def _question_from(sentence: str) -> str | None:
    """A real question from a definitional sentence ("The koala is an …" → "What is the koala?"), else None."""
    match = _DEFINITION.match(sentence)
    if not match:
        return None
    subject = match["subject"]
    first, _, rest = subject.partition(" ")
    if first.lower() in ENGLISH_STOP_WORDS - {"the", "an", "a"}:
        return None  # "Some of …", "Most …", "Many …"
    if first in ("The", "An", "A"):
        subject = first.lower() + " " + rest
    verb = {"is": "is", "are": "are", "was": "was", "were": "were"}[match["verb"]]
    return f"What {verb} {subject}?"


DRAFT_PREFIX = "Write a question answered by:"
"""How an offline draft that the tester still has to word as a question begins."""


def is_unfinished_draft(text: str) -> bool:
    """Whether ``text`` is still an offline draft (``DRAFT_PREFIX`` …), not a question a user would ask."""
    return str(text).strip().lower().startswith(DRAFT_PREFIX.lower())


def draft_questions(
    cluster: int, passages: list[int], chunk_texts, chunk_documents, themes: Sequence[str], n: int, seen: set[str]
) -> list[Suggestion]:
    """Offline drafts from the key sentences of the least covered passages.

    Each draft quotes a real sentence of a passage: a definitional sentence
    becomes the question it answers ("What is the koala?"); any other is
    offered as ``Write a question answered by: “<sentence>”``, a draft the
    tester finishes. Drafts take the best sentence of every passage first,
    then the second best, and so on, until ``n`` distinct drafts exist. A
    passage without a quotable sentence (markup, captions, numbers) gives none.
    """
    theme_words = {w for phrase in themes for w in _WORD.findall(phrase.lower())}
    ranked = [[(index, s) for s in _key_sentences(chunk_texts[index], theme_words)] for index in passages]
    if not any(ranked):  # only short sentences: accept any plain one
        ranked = [[(index, s) for s in _key_sentences(chunk_texts[index], theme_words, False)] for index in passages]
    drafts: list[Suggestion] = []
    for depth in range(max((len(r) for r in ranked), default=0)):
        for candidates in ranked:
            if len(drafts) == n or depth >= len(candidates):
                continue
            index, sentence = candidates[depth]
            text = _question_from(sentence) or f"{DRAFT_PREFIX} “{sentence}”"
            if duplicate_key(text) in seen:
                continue
            seen.add(duplicate_key(text))
            drafts.append(suggestion_from(cluster, text, "draft", index, chunk_texts, chunk_documents))
    return drafts


_SYSTEM_PROMPT = (
    "You write test questions for evaluating a retrieval-augmented generation (RAG) system. "
    "Every question must be answerable from the given passages alone. Reply with JSON only."
)


def _existing_sample(existing_questions: Sequence[str], themes: Sequence[str]) -> list[str]:
    """Existing questions on this topic (sharing theme words), so the LLM avoids them."""
    words = {stem_word(w) for phrase in themes for w in _WORD.findall(phrase.lower())}
    scored = []
    for position, question in enumerate(existing_questions):
        overlap = len({stem_word(w) for w in _WORD.findall(str(question).lower())} & words)
        if overlap:
            scored.append((-overlap, position, str(question)))
    return [question for _, _, question in sorted(scored)[:N_EXISTING_IN_PROMPT]]


def _llm_prompt(themes: Sequence[str], passage_texts: list[str], existing: list[str], n_questions: int) -> str:
    lines = [
        "The passages below come from one topic of a knowledge base that the current test questions "
        "barely cover.",
        f"Topic keywords: {', '.join(themes) if themes else '(none found)'}.",
        "",
        "Passages:",
    ]
    lines += [f"[{i}] {shorten(text, PROMPT_PASSAGE_CHARS, at_word=True)}" for i, text in enumerate(passage_texts, 1)]
    lines += ["", "Existing test questions on this topic (do not repeat or paraphrase them):"]
    lines += [f"- {shorten(q, 300, at_word=True)}" for q in existing] or ["(none)"]
    lines += [
        "",
        f"Write {n_questions} new test questions. Each question must be answerable from the passage it cites, "
        "using only information stated in that passage. Prefer the first passages: they are the least covered.",
        "Also give 3 to 5 short phrases (1-3 words each) naming the topic.",
        'Reply with JSON only, in exactly this form: {"themes": ["..."], '
        '"questions": [{"question": "...", "passage": <number of the passage>}]}',
    ]
    return "\n".join(lines)


def _parse_llm_answer(answer, n_passages: int) -> tuple[list[str], list[tuple[str, int | None]]]:
    """Themes and (question, 0-based passage or None) from the model's JSON."""
    if not isinstance(answer, dict):
        raise ValueError("the reply is not a JSON object")
    themes = []
    raw_themes = answer.get("themes")
    if isinstance(raw_themes, list):
        themes = [shorten(t, 60, at_word=True) for t in raw_themes if isinstance(t, str) and t.strip()][:5]
    questions = []
    raw_questions = answer.get("questions")
    for item in raw_questions if isinstance(raw_questions, list) else []:
        text, passage = (item, None) if isinstance(item, str) else (None, None)
        if isinstance(item, dict):
            text, passage = item.get("question"), item.get("passage")
        if not isinstance(text, str) or not text.strip():
            continue
        try:
            number = int(passage)
        except (TypeError, ValueError):
            number = 0
        questions.append((" ".join(text.split()), number - 1 if 1 <= number <= n_passages else None))
    if not questions:
        raise ValueError("the reply holds no questions")
    return themes, questions


def _llm_questions(
    llm: ChatClient,
    cluster: int,
    themes: Sequence[str],
    prompt_passages: list[int],
    chunk_texts,
    chunk_documents,
    existing_questions: Sequence[str],
    n: int,
    seen: set[str],
    chunk_vectors=None,
    embed=None,
    support_threshold: float | None = None,
) -> tuple[list[str], list[Suggestion], int]:
    prompt = _llm_prompt(
        themes, [chunk_texts[i] for i in prompt_passages], _existing_sample(existing_questions, themes), n
    )
    answer = llm.complete_json(_SYSTEM_PROMPT, prompt)
    try:
        llm_themes, questions = _parse_llm_answer(answer, len(prompt_passages))
    except ValueError as error:
        raise ProviderError(f"The LLM reply could not be used: {error}.", kind="bad_response") from None
    fresh = []
    for text, passage in questions:
        if duplicate_key(text) not in seen and duplicate_key(text) not in {duplicate_key(t) for t, _ in fresh}:
            fresh.append((text, prompt_passages[passage] if passage is not None else None))
    n_dropped = 0
    if fresh and embed is not None and support_threshold is not None:
        fresh, n_dropped = _reaching_passages(fresh, prompt_passages, chunk_vectors, embed, support_threshold)
    suggestions = []
    for text, index in fresh:
        if len(suggestions) == n:
            break
        seen.add(duplicate_key(text))
        suggestions.append(suggestion_from(cluster, text, "llm", index, chunk_texts, chunk_documents))
    if not suggestions:
        if n_dropped:
            error = ProviderError(f"none of its questions reached their passage ({n_dropped} dropped)", kind="bad_response")
            error.dropped = n_dropped
            raise error
        raise ProviderError("The LLM only repeated existing questions.", kind="bad_response")
    return llm_themes, suggestions, n_dropped


def _reaching_passages(fresh, prompt_passages, chunk_vectors, embed, support_threshold: float):
    """The (question, chunk) pairs whose question embedding reaches its passage, and how many did not.

    A question reaches its passage when their cosine similarity is at least
    ``support_threshold``. A question that cited no valid passage is matched
    to the prompt passage it is most similar to.
    """
    question_vectors = np.asarray(embed([text for text, _ in fresh]), dtype=np.float64)
    passages = np.asarray(np.asarray(chunk_vectors)[prompt_passages], dtype=np.float64)
    similarity = unit_rows(question_vectors) @ unit_rows(passages).T  # (questions, prompt passages)
    kept = []
    for row, (text, index) in enumerate(fresh):
        column = prompt_passages.index(index) if index is not None else int(np.argmax(similarity[row]))
        if similarity[row, column] >= support_threshold:
            kept.append((text, prompt_passages[column]))
    return kept, len(fresh) - len(kept)


def llm_suggestions(
    llm, cluster, themes, passages, representatives, texts, documents,
    existing_questions, config, seen, vectors, embed, support_threshold, warnings,
):
    """One gap's themes and questions from the LLM, how many of its questions
    were dropped, and whether the LLM failed in a way the next gaps would too.

    On failure a warning is added and the suggestions are None, so the gap
    falls back to drafts.
    """
    # The least covered passages first, then the two most central
    # ones for context if not already there.
    prompt_passages = passages + [int(i) for i in representatives[:2] if int(i) not in passages]
    try:
        llm_themes, suggestions, dropped = _llm_questions(
            llm, cluster, themes, prompt_passages, texts, documents,
            existing_questions, config.n_suggestions, seen, vectors, embed, support_threshold,
        )
    except ProviderError as error:
        fatal = error.kind in FATAL_KINDS
        if fatal:
            warnings.append(f"The LLM is unavailable, so offline question drafts are shown instead: {error}")
        else:
            warnings.append(
                f"Cluster {cluster}: offline question drafts are shown because the LLM failed: {error}"
            )
        return themes, None, getattr(error, "dropped", 0), fatal
    return llm_themes or themes, suggestions, dropped, False


def unsupported_warning(n_unsupported: int, support_threshold: float) -> str:
    return (
        f"{n_unsupported} suggested question{'s' if n_unsupported != 1 else ''} did not reach "
        f"{'their passage' if n_unsupported != 1 else 'its passage'} (cosine similarity below "
        f"{support_threshold:.3f}) and {'were' if n_unsupported != 1 else 'was'} dropped."
    )
