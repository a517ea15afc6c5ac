"""Real questions for a gap's least covered passages, written by a language model and kept only when they hold.

A small model writes uneven questions: some good, some about "the passage"
rather than its content, some unanswerable, some in the wrong language.
Shown a whole passage, SmolLM2-135M also mixes names from different
sentences into questions the passage does not answer ("Is the Montreal
Screwjob a French-language news outlet?"). So the model is shown one key
sentence of the passage at a time (the sentences drafts quote,
:func:`~coverage_core.suggest.questions.quotable_sentences`, the best
first; the next try takes the next sentence), writes one question, and each
question is checked by the **keep rule**: a question ``q`` written from
sentence ``s`` of passage ``c`` is kept when

1. it is one question: ends with a question mark, 4 to ``max_words`` words,
   does not talk about "the passage", "the text" or "you", and is in the
   passage's language;
2. it says only what its sentence says (:mod:`coverage_core.suggest.grounding`):
   each of its key terms occurs in ``s`` as written ("Valangina" is not
   "Valanginian"), it does not give away the name it asks for, and (in
   English) it is worded as a tester would keep it
   (:mod:`coverage_core.suggest.question_form`: a question, with a verb,
   no words twice, no "purpose of", a name or number to be about);
3. it reaches its passage: ``cos(q, c) >= τ``, the calibrated support level;
4. it retrieves its passage: ``c`` is among the ``top_k`` chunks most
   similar to ``q`` (rank by cosine over the whole knowledge base), so a
   generic question that reaches many passages is not kept;
5. it repeats no test question: ``cos(q, e) < duplicate_similarity`` for
   every existing question ``e`` (:func:`repeat_level` of the analysis's
   near-duplicate level: 0.9 on all-MiniLM-L6-v2).

A dropped question keeps its reason (:data:`DROP_REASONS`), and its
passage is tried again with its next sentence and a new seed, up to
``attempts`` times (a passage with no quotable sentence, such as a list,
is shown whole, and its questions are checked against all of it); a passage
with no kept question falls back to an offline draft
(:func:`~coverage_core.suggest.questions.draft_questions`).

Before each passage the model is shown one worked example: one of the
user's own test questions in the passage's language with the passage it
is closest to (:func:`example_questions`), as an earlier turn of the chat.
A small model imitates a shown exchange better than it follows a described
one: it asks about one concrete fact, in the test set's style.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from coverage_core.blockwise import block_rows
from coverage_core.duplicates import NEAR_DUPLICATE_SIMILARITY
from coverage_core.errors import ProviderError
from coverage_core.languages import UNDETERMINED, detect_language, language_name
from coverage_core.suggest.grounding import gives_its_answer, key_terms, missing_terms
from coverage_core.suggest.llm import FATAL_KINDS, ChatClient
from coverage_core.suggest.question_form import form_reason
from coverage_core.suggest.questions import Suggestion, duplicate_key, quotable_sentences, suggestion_from
from coverage_core.validation import check_scalar, shorten, unit_rows

__all__ = [
    "DROP_REASONS", "PassageRanks", "WritingConfig", "WrittenQuestions", "example_questions", "repeat_level",
    "tidy_question", "write_questions",
]

DROP_REASONS = {
    "not_a_question": "it is not a single question",
    "about_the_text": "it asks about the passage or its reader, not about the passage's content",
    "length": "it is too short or too long to be a test question",
    "language": "it is not written in the passage's language ({language})",
    "repeat": "it repeats a question already suggested",
    "ungrounded": "the sentence it was written from does not say {terms}",
    "gives_answer": "it gives away the name it asks for",
    "statement": "it is a statement with a question mark",
    "garbled": "it is not a well-formed question (no verb, or a sentence pasted after “Is”)",
    "repeated": "it says the same words twice",
    "advice": "it asks for advice, not for a fact",
    "vague": "it asks for a purpose, significance or origin the passage does not give",
    "mentioned_only": "it asks what something is, and its passage only mentions it",
    "no_answer": "it asks who, when, where or how many, and its passage gives no such answer",
    "unnamed": "it names nothing it asks about (no name or number)",
    "unreached": "it does not reach its passage (similarity {similarity:.2f}, below the support level {tau:.2f})",
    "not_retrieved": "its passage is not among the {k} passages it retrieves (rank {rank})",
    "duplicate": "it is a near-duplicate of an existing test question",
}
"""Why a written question was dropped, in plain words: the one place these sentences live."""


def repeat_level(near_duplicate_level: float) -> float:
    """The cosine from which a written question repeats a test question (point 5 of the keep rule):
    ``1 - 2 * (1 - near_duplicate_level)``, twice the near-duplicate distance, on the embedding model's own
    scale (:func:`coverage_core.duplicates.near_duplicate_level`): 0.9 on all-MiniLM-L6-v2, 0.974 on
    multilingual-e5-small, whose cosines crowd high."""
    return 1.0 - 2.0 * (1.0 - float(near_duplicate_level))


@dataclass(frozen=True)
class WritingConfig:
    """Settings of the keep rule (module docstring) and of the model's tries.

    ``attempts``: tries per passage, each with a new seed, going through the
    passage's key sentences (the first round at ``temperature``, later ones
    at ``retry_temperature``); how 8 was chosen is in ``docs/question-writer.md``.
    ``max_tokens``: the longest reply read.
    """

    attempts: int = 8
    top_k: int = 5
    max_words: int = 30
    duplicate_similarity: float = round(repeat_level(NEAR_DUPLICATE_SIMILARITY), 12)
    temperature: float = 0.2
    retry_temperature: float = 0.8
    max_tokens: int = 48

    def __post_init__(self):
        for name in ("attempts", "top_k", "max_words", "max_tokens"):
            check_scalar(getattr(self, name), name, int, min_val=1)
        check_scalar(self.duplicate_similarity, "duplicate_similarity", float, min_val=0.0, max_val=1.0)


@dataclass(frozen=True)
class WrittenQuestions:
    """What :func:`write_questions` made of one gap's passages.

    ``kept``: the questions that passed the keep rule, at most one per
    passage, in passage order. ``dropped``: the others, each with
    ``kept=False`` and its ``reason``. ``unwritten``: the passages with no
    kept question (for drafts). ``failure``: the model's error when it
    stopped answering ("" when it did not); ``fatal`` when the next gaps
    would fail the same way. ``unwritable``: the language code of each
    passage the model was not asked about, written in a language it does
    not write (``ChatClient.writes_languages``); they are in ``unwritten`` too.
    """

    kept: tuple[Suggestion, ...]
    dropped: tuple[Suggestion, ...]
    unwritten: tuple[int, ...]
    failure: str = ""
    fatal: bool = False
    unwritable: tuple[str, ...] = ()


_SYSTEM = "You write one quiz question about a passage."
_PROMPT = "Passage: {passage}\n\nWrite one question that this passage answers.{language} Reply with the question only."
# A key sentence is shown as the "passage": a prompt naming it a sentence makes the model ask about the
# question itself (docs/question-writer.md, "Prompt").
_PASSAGE_CHARS = 1200
# The worked example's passage is shorter: it only shows the kind of question asked.
_EXAMPLE_PASSAGE_CHARS = 500
# Openings a small model puts before its question: "Question:", "Q1.", "Here is a question:", quotes, bullets.
_PREAMBLE = re.compile(
    r"^(?:\W*(?:question|q|write)\s*\d*\s*[:.)-]|\W*here(?:'s| is) (?:a|one|the) question[^:]*:|"
    r"\W*the question (?:that|this)[^:]*:|[\s\"'“‘«*#>\-•\d.)]+)\s*",
    re.IGNORECASE,
)
_ABOUT_THE_TEXT = re.compile(
    r"\b(?:the|this|that|given) (?:passage|text|article|paragraph|sentence|excerpt|author|statement)\b|"
    r"\bthis question\b|\bthe answer to\b|\byour?\b",
    re.IGNORECASE,
)
_MIN_WORDS = 4


def tidy_question(reply: str, max_words: int = WritingConfig.max_words) -> tuple[str, str]:
    """The question in a model's reply and "" , or the text and the :data:`DROP_REASONS` key that rejects it.

    The reply's first line is read, with any "Question:" preamble, quotes
    and bullets taken off, and cut after its first question mark.
    """
    line = next((part.strip() for part in str(reply).splitlines() if part.strip()), "")
    for _ in range(2):  # "1. Question: …"
        line = _PREAMBLE.sub("", line, count=1).strip()
    mark = re.search(r"[?？]", line)
    if mark is None:
        return line, "not_a_question"
    question = line[: mark.end()].strip().strip("\"'”’»*").strip()
    if _ABOUT_THE_TEXT.search(question):
        return question, "about_the_text"
    words = len(question.split()) if " " in question else len(question) // 2  # no spaces: Chinese, Japanese
    if not _MIN_WORDS <= words <= max_words:
        return question, "length"
    return question, ""


def example_questions(
    question_texts: Sequence[str],
    chunk_texts: Sequence[str],
    retrieval: PassageRanks,
    embed: Callable[[list[str]], np.ndarray],
    *,
    question_vectors=None,
    question_languages: Sequence[str] | None = None,
    candidates: Sequence[str] | None = None,
    max_tried: int = 20,
) -> dict[str, tuple[str, str]]:
    """One worked example per language of the test questions: ``{code: (passage, question)}``.

    Of the first ``max_tried`` well-formed test questions of each language
    (:func:`tidy_question` leaves them whole), the one closest to its best
    passage, with that passage: the user's own way of asking, in their
    language. :func:`write_questions` shows it to the model before each
    passage of that language. ``question_vectors`` and ``question_languages``
    (in the order of ``question_texts``, as the analysis found them) save
    embedding and reading the questions again.
    """
    if question_languages is not None and len(question_languages) != len(question_texts):
        question_languages = None  # another question set's profile: read them again
    by_language: dict[str, list[int]] = {}
    for index, text in enumerate(question_texts):
        text = str(text).strip()
        question, problem = tidy_question(text)
        if problem or question != text:
            continue
        code = question_languages[index] if question_languages is not None else detect_language(text, candidates)
        if code in ("", UNDETERMINED):
            continue
        tried = by_language.setdefault(code, [])
        if len(tried) < max_tried:
            tried.append(index)
    examples = {}
    for code, indices in by_language.items():
        if question_vectors is not None:
            vectors = np.asarray(question_vectors, dtype=np.float32)[indices]
        else:
            vectors = np.asarray(embed([str(question_texts[i]).strip() for i in indices]), dtype=np.float32)
        best_similarity, best = -np.inf, None
        for index, vector in zip(indices, vectors):
            similarities = retrieval.similarities(vector)
            chunk = int(np.argmax(similarities))
            if similarities[chunk] > best_similarity:
                best_similarity, best = float(similarities[chunk]), (chunk, index)
        chunk, index = best
        examples[code] = (shorten(chunk_texts[chunk], _EXAMPLE_PASSAGE_CHARS, at_word=True),
                          str(question_texts[index]).strip())
    return examples


def _language_clause(code: str) -> str:
    if code in ("", "en", UNDETERMINED):
        return ""
    return f" Write the question in {language_name(code)}, the language of the passage."


class PassageRanks:
    """Ranks of source passages among all chunks, for the keep rule's third point, in bounded memory."""

    def __init__(self, chunk_vectors):
        self.vectors = chunk_vectors
        self._norms: np.ndarray | None = None

    def norms(self) -> np.ndarray:
        if self._norms is None:
            rows = block_rows(self.vectors.shape[1], None)
            self._norms = np.concatenate([
                np.linalg.norm(np.asarray(self.vectors[start:start + rows], dtype=np.float32), axis=1)
                for start in range(0, self.vectors.shape[0], rows)
            ]) if self.vectors.shape[0] else np.zeros(0, dtype=np.float32)
            self._norms[self._norms == 0] = 1.0
        return self._norms

    def similarities(self, question_vector: np.ndarray) -> np.ndarray:
        """cos(q, every chunk)."""
        norms = self.norms()
        rows = block_rows(self.vectors.shape[1], None)
        unit = unit_rows(np.asarray(question_vector, dtype=np.float32)[None, :])[0]
        return np.concatenate([
            np.asarray(self.vectors[start:start + rows], dtype=np.float32) @ unit / norms[start:start + rows]
            for start in range(0, self.vectors.shape[0], rows)
        ])


def _grounding(question: str, passage: str, code: str) -> str:
    """The keep rule's point 2 for one question: "" when it holds, else the reason."""
    missing = missing_terms(question, passage, code or "en")
    if missing:
        quoted = [f"“{term}”" for term in missing[:3]]
        return DROP_REASONS["ungrounded"].format(
            terms=quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1])
    if gives_its_answer(question):
        return DROP_REASONS["gives_answer"]
    unclear = form_reason(question, passage) if code in ("en", "", UNDETERMINED) else ""
    return DROP_REASONS[unclear] if unclear else ""


def _verdict(
    question_vector, source: int, retrieval: PassageRanks, existing: np.ndarray | None, support_threshold: float,
    config: WritingConfig,
) -> str:
    """The keep rule's points 3-5 for one question: "" when kept, else the reason."""
    similarities = retrieval.similarities(question_vector)
    own = float(similarities[source])
    if own < support_threshold:
        return DROP_REASONS["unreached"].format(similarity=own, tau=support_threshold)
    rank = int(np.count_nonzero(similarities > own)) + 1
    if rank > config.top_k:
        return DROP_REASONS["not_retrieved"].format(k=config.top_k, rank=rank)
    if existing is not None and existing.size:
        unit = unit_rows(np.asarray(question_vector, dtype=np.float32)[None, :])[0]
        if float(np.max(existing @ unit)) >= config.duplicate_similarity:
            return DROP_REASONS["duplicate"]
    return ""


def write_questions(
    client: ChatClient,
    cluster: int,
    passages: Sequence[int],
    chunk_texts: Sequence[str],
    chunk_documents: Sequence[str],
    chunk_vectors,
    embed: Callable[[list[str]], np.ndarray],
    support_threshold: float,
    *,
    existing_vectors=None,
    languages: Sequence[str] | None = None,
    candidates: Sequence[str] | None = None,
    n: int = 3,
    seen: set[str] | None = None,
    config: WritingConfig | None = None,
    origin: str = "local",
    retrieval: PassageRanks | None = None,
    examples: dict[str, tuple[str, str]] | None = None,
) -> WrittenQuestions:
    """One kept question per passage, for up to ``n`` of ``passages`` (least covered first), by the keep rule.

    ``embed`` embeds texts with the model of ``chunk_vectors``;
    ``existing_vectors`` are the test questions' embeddings (point 4);
    ``languages`` each passage's language code (detected when None;
    ``candidates`` are the corpus's languages). ``seen`` holds the
    duplicate keys of questions already suggested, and gains the kept ones.
    ``examples`` (:func:`example_questions`) show the model one exchange in
    the passage's language first, when there is one for it.
    A passage in a language the model does not write
    (``client.writes_languages``) is not asked about. A model error stops
    the writing: what was kept so far stays, and ``failure`` says what happened.
    """
    config = config or WritingConfig()
    seen = seen if seen is not None else set()
    retrieval = retrieval or PassageRanks(chunk_vectors)
    existing = None
    if existing_vectors is not None and len(existing_vectors):
        existing = unit_rows(np.asarray(existing_vectors, dtype=np.float32))
    if languages is None:
        languages = [detect_language(chunk_texts[i], candidates) for i in passages]
    kept: list[Suggestion] = []
    dropped: list[Suggestion] = []
    unwritten: list[int] = []
    unwritable: list[str] = []
    for position, (index, code) in enumerate(zip(passages, languages)):
        if len(kept) == n:
            break
        if client.writes_languages is not None and code not in ("", UNDETERMINED, *client.writes_languages):
            unwritten.append(index)
            unwritable.append(code)
            continue
        requests = _Requests(chunk_texts[index], code, examples.get(code) if examples else None, config)
        found = None
        for attempt in range(config.attempts):
            system, prompt, shown, source, temperature = requests.of(attempt)
            try:
                reply = client.complete_text(system, prompt, max_tokens=config.max_tokens, seed=attempt,
                                             temperature=temperature, examples=shown)
            except ProviderError as error:
                unwritten.extend(passages[position:])
                return WrittenQuestions(tuple(kept), tuple(dropped), tuple(unwritten), str(error),
                                        error.kind in FATAL_KINDS or error.kind == "unavailable", tuple(unwritable))
            text, key = tidy_question(reply, config.max_words)
            reason = DROP_REASONS[key] if key else ""
            if not reason and code not in ("", UNDETERMINED) and detect_language(text, candidates) != code:
                reason = DROP_REASONS["language"].format(language=language_name(code))
            if not reason and duplicate_key(text) in seen:
                reason = DROP_REASONS["repeat"]
            if not reason:
                reason = _grounding(text, source, code)
            if not reason:
                vector = np.asarray(embed([text]), dtype=np.float32)[0]
                reason = _verdict(vector, index, retrieval, existing, support_threshold, config)
            suggestion = suggestion_from(cluster, text, origin, index, chunk_texts, chunk_documents, code)
            if reason:
                if text:
                    dropped.append(_dropped(suggestion, reason))
                continue
            found = suggestion
            break
        if found is None:
            unwritten.append(index)
        else:
            seen.add(duplicate_key(found.text))
            kept.append(found)
    return WrittenQuestions(tuple(kept), tuple(dropped), tuple(unwritten), unwritable=tuple(unwritable))


class _Requests:
    """What the model is asked at each try for one passage: one of its key sentences, the best first.

    Try ``k`` asks about sentence ``k`` modulo their number (the first
    round at ``temperature``, later rounds at ``retry_temperature``); a
    passage without a quotable sentence (a list, a table) is asked about
    whole, as before. ``source`` is the text the question must be grounded
    in: the sentence asked about, else the passage. The worked example shows
    the sentence of its passage that shares most words with its question.
    """

    def __init__(self, passage: str, code: str, example: tuple[str, str] | None, config: WritingConfig):
        self.passage, self.code, self.config = passage, code, config
        self.sentences = quotable_sentences(passage, code) if code not in ("", UNDETERMINED) else []
        self.shown = ()
        if example is not None:
            example_passage, question = example
            if self.sentences:
                terms = set(key_terms(question, code))
                candidates = quotable_sentences(example_passage, code) or [example_passage]
                example_passage = max(candidates, key=lambda sentence: len(terms & set(key_terms(sentence, code))))
            self.shown = ((_PROMPT.format(passage=example_passage, language=_language_clause(code)), question),)

    def of(self, attempt: int) -> tuple[str, str, tuple, str, float]:
        """(system, prompt, worked example, source, temperature) of try ``attempt``."""
        config, language = self.config, _language_clause(self.code)
        if not self.sentences:
            temperature = config.temperature if attempt == 0 else config.retry_temperature
            prompt = _PROMPT.format(passage=shorten(self.passage, _PASSAGE_CHARS, at_word=True), language=language)
            return _SYSTEM, prompt, self.shown, self.passage, temperature
        sentence = self.sentences[attempt % len(self.sentences)]
        temperature = config.temperature if attempt < len(self.sentences) else config.retry_temperature
        return _SYSTEM, _PROMPT.format(passage=sentence, language=language), self.shown, sentence, temperature


def _dropped(suggestion: Suggestion, reason: str) -> Suggestion:
    return replace(suggestion, kept=False, reason=reason)
