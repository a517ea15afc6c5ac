"""Suggested questions for a gap: offline drafts from its least covered passages, or questions an LLM wrote.

* offline (default): question **drafts** templated from key sentences of
  those passages, marked ``origin="draft"``; they are a starting point for a
  person to edit, not finished test questions;
* with an LLM (:class:`~coverage_core.suggest.llm.ChatClient`): questions the
  model wrote from the passages, marked ``origin="llm"``, each kept only if it
  reaches its passage at the support level. If the LLM fails for a gap, that
  gap falls back to drafts and a warning says so.

Both are written in the language of their passage: drafts use the wording
of :data:`DRAFT_WORDINGS` (a passage in a language without one gets a note
instead of a draft), and the LLM prompt names the language to write in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from coverage_core import wording
from coverage_core.errors import ProviderError
from coverage_core.languages import SPACELESS, UNDETERMINED, detect_language, language_name, stop_words, word_units
from coverage_core.stages.topics import stem_word
from coverage_core.suggest.fragments import fragment_reason
from coverage_core.suggest.llm import FATAL_KINDS, ChatClient
from coverage_core.validation import shorten, unit_rows

# Longest passage text sent to the LLM / kept in a Suggestion, in characters.
PROMPT_PASSAGE_CHARS = 1200
SUGGESTION_PASSAGE_CHARS = 300
# Existing questions shown to the LLM so it does not repeat them.
N_EXISTING_IN_PROMPT = 20
MAX_SUGGESTION_CHARS = 500
"""Longest question kept from an LLM's answer, in characters: a test question is one sentence (the built-in
writer keeps at most 30 words, about 200 characters); a longer "question" is a model rambling, dropped."""


@dataclass(frozen=True)
class Suggestion:
    """A suggested test question for a gap.

    ``origin`` is ``"local"`` (written by the bundled local model),
    ``"llm"`` (written by the user's LLM) or ``"draft"`` (templated
    offline, to be edited). ``document`` and ``passage`` (shortened) are the
    source the question is answerable from; empty when an LLM question cited
    no valid passage. ``chunk`` is that passage's chunk index (None when
    there is none). ``language`` is the ISO 639-1 code of that passage
    ("" when unknown). ``note`` says why a passage got no draft (its
    language has no draft wording); such a suggestion's ``text`` is empty.
    ``kept`` is False for a written question that failed the keep rule
    (:data:`DROP_REASONS`); ``reason`` then says why, in plain words.
    """

    cluster: int
    text: str
    origin: str
    document: str
    passage: str
    language: str = ""
    note: str = ""
    chunk: int | None = None
    kept: bool = True
    reason: str = ""


def suggestion_from(
    cluster: int, text: str, origin: str, index: int | None, chunk_texts, chunk_documents,
    language: str = "", note: str = "",
) -> Suggestion:
    """A :class:`Suggestion` answerable from chunk ``index`` (None: no passage, empty source)."""
    if index is None:
        return Suggestion(cluster=cluster, text=text, origin=origin, document="", passage="", language=language, note=note)
    return Suggestion(
        cluster=cluster,
        text=text,
        origin=origin,
        document=str(chunk_documents[index]),
        passage=shorten(chunk_texts[index], SUGGESTION_PASSAGE_CHARS, at_word=True),
        language=language,
        note=note,
        chunk=int(index),
    )


@dataclass(frozen=True)
class DraftWording:
    """How offline drafts are worded in one language.

    A draft quoting a sentence reads ``prefix``, ``separator``, then the
    sentence between ``opening`` and ``closing``. A definitional sentence
    (subject, a copula named in ``questions``, one of ``complements``, a
    word: "The koala is an …") is asked back as ``questions[copula]`` with
    the subject filled in ("What is the koala?"), an opening article of
    ``articles`` lower-cased, then each ``(pattern, replacement)`` of
    ``fix_ups`` applied (French elision). ``definition`` replaces that
    pattern for scripts without spaces (named groups ``subject`` and
    ``verb``). ``dangling``: how a sentence that needs the one before it
    starts. ``abbreviations``: what ends with a period without ending a
    sentence, besides the English ones ("17." in German is an ordinal:
    "im 17. Jahrhundert"). ``max_capitalised``: the largest share of capitalised words
    (after the first) of a quotable sentence; German capitalises every noun.
    """

    prefix: str
    opening: str
    closing: str
    separator: str = " "
    questions: tuple[tuple[str, str], ...] = ()
    articles: tuple[str, ...] = ()
    complements: tuple[str, ...] = ()
    fix_ups: tuple[tuple[str, str], ...] = ()
    definition: str = ""
    dangling: str = ""
    abbreviations: str = ""
    max_capitalised: float = 0.4

    def quote(self, sentence: str) -> str:
        return f"{self.prefix}{self.separator}{self.opening}{sentence}{self.closing}"


_ZH_DEFINITION = (
    r"^(?P<subject>[\u3400-\u9fff]{2,10}?)(?:（[^）]{1,40}）|\([^)]{1,40}\))?(?P<verb>是)"
    r"(?:一种|一種|一个|一個|一座|一位|一名|一家|一部|一条|一條|一类|一類|一門|一门)"
)
_ZH_DANGLING = r"^(?:他|她|它|这|這|此|该|該|其|但|然而|因此|另外)"

DRAFT_WORDINGS: dict[str, DraftWording] = {
    "en": DraftWording(
        "Write a question answered by:", "“", "”",
        questions=(("is", "What is {subject}?"), ("are", "What are {subject}?"),
                   ("was", "What was {subject}?"), ("were", "What were {subject}?")),
        articles=("The", "An", "A"),
        complements=("a", "an", "the", "one of the"),
        dangling=r"^(?:it|its|this|these|that|those|they|their|he|his|she|her|him|them|such|there|here|however|also|"
        r"thus|hence|then|both|which|another|the latter|the former)\b",
    ),
    "fr": DraftWording(
        "Rédigez une question à laquelle cette phrase répond :", "« ", " »",
        questions=(("est", "Qu'est-ce que {subject} ?"), ("sont", "Que sont {subject} ?"),
                   ("était", "Qu'était {subject} ?"), ("étaient", "Qu'étaient {subject} ?")),
        articles=("Le", "La", "Les", "L'", "L’", "Un", "Une"),
        complements=("un", "une", "le", "la", "l'", "l’", "des"),
        fix_ups=((r"\bque (?=[aeiouyàâæéèêëîïôœûAEIOUYÀÂÆÉÈÊËÎÏÔŒÛ])", "qu'"),),
        dangling=r"^(?:il|ils|elle|elles|ce|cet|cette|ces|cela|ceci|celui|celle|leur|leurs|son|sa|ses|"
        r"toutefois|cependant|ainsi|aussi|en revanche)\b",
        abbreviations=r"\b(?:apr|av|cf|env|J\.-C|M|Mme|Mgr|St|Ste|vol)\.$",
    ),
    "de": DraftWording(
        "Schreiben Sie eine Frage, die dieser Satz beantwortet:", "„", "“",
        questions=(("ist", "Was ist {subject}?"), ("sind", "Was sind {subject}?"),
                   ("war", "Was war {subject}?"), ("waren", "Was waren {subject}?")),
        articles=("Der", "Die", "Das", "Ein", "Eine"),
        complements=("ein", "eine", "einer", "eines", "der", "die", "das"),
        dangling=r"^(?:er|sie|es|dies|diese|dieser|dieses|sein|seine|ihr|ihre|jedoch|dabei|dort|daher|deshalb)\b",
        abbreviations=r"(?:\b\d{1,2}|\b(?:bzw|ca|Chr|d\. h|Dr|Hl|Jh|Nr|St|usw|vgl|z\. ?B))\.$",
        max_capitalised=0.6,
    ),
    "es": DraftWording(
        "Escriba una pregunta a la que responda esta frase:", "«", "»",
        questions=(("es", "¿Qué es {subject}?"), ("son", "¿Qué son {subject}?"),
                   ("fue", "¿Qué fue {subject}?"), ("era", "¿Qué era {subject}?")),
        articles=("El", "La", "Los", "Las", "Un", "Una"),
        complements=("un", "una", "uno de los", "una de las", "el", "la"),
        dangling=r"^(?:él|ella|ellos|ellas|esto|este|esta|estos|estas|ese|esa|su|sus|sin embargo|también|además)\b",
    ),
    "it": DraftWording(
        "Scrivi una domanda a cui risponde questa frase:", "«", "»",
        questions=(("è", "Che cos'è {subject}?"), ("sono", "Che cosa sono {subject}?"),
                   ("era", "Che cos'era {subject}?"), ("erano", "Che cosa erano {subject}?")),
        articles=("Il", "Lo", "La", "I", "Gli", "Le", "L'", "L’", "Un", "Uno", "Una", "Un'", "Un’"),
        complements=("un", "uno", "una", "un'", "un’", "il", "lo", "la", "l'", "l’"),
        dangling=r"^(?:egli|ella|esso|essa|essi|esse|questo|questa|questi|queste|quello|quella|suo|sua|suoi|"
        r"tuttavia|inoltre|anche)\b",
    ),
    "pt": DraftWording(
        "Escreva uma pergunta que esta frase responda:", "“", "”",
        questions=(("é", "O que é {subject}?"), ("são", "O que são {subject}?"),
                   ("foi", "O que foi {subject}?"), ("era", "O que era {subject}?")),
        articles=("O", "A", "Os", "As", "Um", "Uma"),
        complements=("um", "uma", "o", "a", "um dos", "uma das"),
        dangling=r"^(?:ele|ela|eles|elas|isto|isso|este|esta|estes|estas|esse|essa|seu|sua|seus|suas|"
        r"porém|contudo|também)\b",
    ),
    "nl": DraftWording(
        "Schrijf een vraag die deze zin beantwoordt:", "“", "”",
        questions=(("is", "Wat is {subject}?"), ("zijn", "Wat zijn {subject}?"),
                   ("was", "Wat was {subject}?"), ("waren", "Wat waren {subject}?")),
        articles=("De", "Het", "Een"),
        complements=("een", "de", "het"),
        dangling=r"^(?:hij|zij|ze|dit|deze|dat|zijn|haar|hun|echter|ook|daarom)\b",
    ),
    "zh": DraftWording(
        "请写一个以这句话为答案的问题：", "“", "”", separator="",
        questions=(("是", "什么是{subject}？"),), definition=_ZH_DEFINITION, dangling=_ZH_DANGLING,
    ),
    # Traditional characters: the same wording, written as Taiwan and Hong Kong write it.
    "zh-Hant": DraftWording(
        "請寫一個以這句話為答案的問題：", "「", "」", separator="",
        questions=(("是", "什麼是{subject}？"),), definition=_ZH_DEFINITION, dangling=_ZH_DANGLING,
    ),
    "ja": DraftWording(
        "この文が答えとなる質問を書いてください：", "「", "」", separator="",
        dangling=r"^(?:彼|彼女|これ|それ|この|その|しかし|また|ただし)",
    ),
}
"""Offline draft wording by language code: the one place a draft's words are written.

A passage in a language not listed gets no draft, only a note
(:func:`no_draft_note`): a template wrapped around its sentence in another
language would be no question a user of that language asks.
"""

NO_DRAFT_NOTE = "No draft for {language} passages: write the question yourself or use a language model."

# Characters written only in Traditional Chinese, and their Simplified forms.
_TRADITIONAL = frozenset("這個們國說會來為與對從還點種開後體發際邊關時灣")
_SIMPLIFIED = frozenset("这个们国说会来为与对从还点种开后体发际边关时湾")


def no_draft_note(code: str) -> str:
    """Why a passage in language ``code`` gets no offline draft, in one sentence."""
    return NO_DRAFT_NOTE.format(language=language_name(code))


def _wording_key(text: str, code: str) -> str:
    """The :data:`DRAFT_WORDINGS` key for a passage in ``code``: Chinese splits by script."""
    if code != "zh":
        return code
    traditional = sum(char in _TRADITIONAL for char in text)
    return "zh-Hant" if traditional > sum(char in _SIMPLIFIED for char in text) else "zh"


_WORD = re.compile(r"[^\W\d_]+")


def duplicate_key(text: str) -> str:
    """Lowercase, punctuation and whitespace runs collapsed: for duplicate checks."""
    return " ".join(re.sub(r"[\W_]+", " ", text.lower()).split())


def _words(text: str) -> list[str]:
    """The lower-cased words of ``text``; runs of a script without spaces as character pairs."""
    return _WORD.findall(word_units(text).lower())


_CLOSERS = "\"'”’)\\]»›」』）"
# Sentence ends: . ! ? … (optionally closed by a quote or bracket) before a space, a full-width
# 。！？ (no space follows in Chinese or Japanese), or a line break.
_SENTENCE_END = re.compile(rf"(?<=[.!?…])[{_CLOSERS}]*\s+|(?<=[。！？])[{_CLOSERS}]*\s*|\n+")
# A bracket is no sentence opener: "(Ethnologue) However, …" is a fragment.
_SENTENCE_OPENERS = "\"“‘„«‹¿¡「『"
# Markers of markup, captions and furniture: such sentences are never quoted.
_NOT_PROSE = re.compile(
    r"=|https?:|www\.|<[^>]*>|\{\{|\}\}|\[\[|\]\]|\||^\s*[*#•·\-–—>]|^\W*(?:fig(?:ure)?|table|photo|image|caption|source|note|see also)\b",
    re.IGNORECASE,
)
_MIN_SENTENCE_WORDS, _MAX_SENTENCE_WORDS = 8, 45
# A sentence without spaces is measured in characters (about two per word unit).
_MIN_SENTENCE_CHARS, _MAX_SENTENCE_CHARS = 10, 120


# A period after these does not end a sentence.
_ABBREVIATION = re.compile(r"(?:\b(?:St|Mr|Mrs|Ms|Dr|Jr|Sr|Mt|No|vs|etc|ca|approx|e\.g|i\.e)|\b[A-Z])\.$")
# Reference-list debris: dates of citations, "pp.", "Retrieved", "ISBN", stripped markup (", ," "()").
_CITATION = re.compile(
    r"\b\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{4}\b|\bpp?\. ?\d|\bretrieved\b"
    r"|\bisbn\b|\bdoi\b|,\s*,|\(\s*\)|\(\s*[,;]",
    re.IGNORECASE,
)


def _sentences(text: str, wording: DraftWording, spaceless: bool) -> list[str]:
    """The complete sentences of a chunk: a fragment cut off at either end of the chunk is left out.

    A sentence starts with a capital letter (any letter in a script without
    case, such as Chinese) and ends with its punctuation.
    """
    closers = _CLOSERS + wording.closing.strip()
    parts: list[str] = []
    own_abbreviation = re.compile(wording.abbreviations) if wording.abbreviations else None
    for part in (" ".join(p.split()) for p in _SENTENCE_END.split(text)):
        if parts and (_ABBREVIATION.search(parts[-1]) or (own_abbreviation and own_abbreviation.search(parts[-1]))):
            parts[-1] += " " + part
        elif part:
            parts.append(part)
    ending = re.compile(rf"[.!?…。！？][{re.escape(closers)}]*$")

    def starts(part: str) -> bool:
        first = part.lstrip(_SENTENCE_OPENERS)[:1]
        return first.isupper() or (spaceless and bool(_WORD.match(first)))

    return [p for p in parts if starts(p) and ending.search(p)]


def _is_prose(sentence: str, wording: DraftWording, stops: frozenset[str], spaceless: bool, strict: bool = True) -> bool:
    """A sentence a tester can quote: not markup, a caption, a list of numbers or a heading.

    Not ``strict``: any sentence of 5 words or more that is not markup,
    numbers or a reference (for passages of short sentences only).
    """
    if _NOT_PROSE.search(sentence) or _CITATION.search(sentence):
        return False
    if spaceless:
        letters = sum(len(w) for w in _WORD.findall(sentence))
        digits = sum(char.isdigit() for char in sentence)
        return _MIN_SENTENCE_CHARS <= len(sentence) <= _MAX_SENTENCE_CHARS and letters >= 0.7 * (letters + digits)
    words = sentence.split()
    shortest = _MIN_SENTENCE_WORDS if strict else 5
    if not shortest <= len(words) <= _MAX_SENTENCE_WORDS:
        return False
    alphabetic = [w for w in words if _WORD.fullmatch(w.strip(".,;:!?()\"'“”‘’„«»"))]
    if len(alphabetic) < 0.7 * len(words):
        return False  # numbers, codes, references
    if not strict:
        return True
    if sum(w[:1].isupper() for w in words[1:]) > wording.max_capitalised * (len(words) - 1):
        return False  # a title, a caption or a reference: "The Flute Book: A Complete Guide for …"
    # Prose has function words; captions and title lists ("Statue of James Watt in Leeds") few.
    function = sum(w.lower().strip(".,;:!?()\"'“”‘’„«»") in stops for w in words)
    return function >= 0.2 * len(words)


@lru_cache(maxsize=None)
def _draft_stop_words(code: str) -> frozenset[str]:
    """The stop words drafts skip in language ``code``: :func:`~coverage_core.languages.stop_words`, but
    scikit-learn's list alone for English.

    stopwords-iso's English list adds words a knowledge base is about
    ("computer", "information", "area"); with it, English drafts changed on
    29 of the 55 wiki-qa articles.
    """
    return frozenset(ENGLISH_STOP_WORDS) if code == "en" else stop_words([code])


def _key_sentences(text: str, theme_words: set[str], code: str, strict: bool = True) -> list[str]:
    """The chunk's quotable sentences, best first.

    Best is most content-word dense: distinct content words (not stop words
    of the passage's language ``code``; theme words count double) per square
    root of length, so neither the shortest nor the longest sentence wins by
    size alone; a sentence starting with a pronoun or "However" needs its
    context: it ranks last, and comes with the sentence before it when that
    one is a candidate too. Languages without spaces count character pairs
    as words. A fragment (:func:`~coverage_core.suggest.fragments.fragment_reason`:
    under 6 words, a question, no verb) is no candidate.
    """
    wording = DRAFT_WORDINGS[_wording_key(text, code)]
    spaceless = code in SPACELESS
    stops = _draft_stop_words(code)
    dangling = re.compile(wording.dangling, re.IGNORECASE) if wording.dangling else None
    shortest_content = 1 if spaceless else 2
    scored = []
    previous = ""  # the sentence before, when a draft may quote it
    for position, sentence in enumerate(_sentences(text, wording, spaceless)):
        if not _is_prose(sentence, wording, stops, spaceless, strict) or fragment_reason(sentence, code, spaceless):
            previous = ""
            continue
        words = _words(sentence)
        content = {w for w in words if len(w) > shortest_content and w not in stops}
        density = (len(content) + len(content & theme_words)) / np.sqrt(len(words))
        needs_context = bool(dangling and dangling.match(sentence.lstrip(_SENTENCE_OPENERS)))
        # "This includes both medical and dental services." says nothing without the sentence before it:
        # quoted with it when the chunk holds it.
        quoted = f"{previous}{'' if spaceless else ' '}{sentence}" if needs_context and previous else sentence
        scored.append((needs_context, -density, position, quoted))
        previous = sentence
    return [sentence for *_, sentence in sorted(scored)]


def quotable_sentences(text: str, code: str) -> list[str]:
    """The sentences of a passage in language ``code`` worth a question, best first (what drafts quote).

    Prose sentences that are no fragment; a sentence that needs the one
    before it comes with it, last. Only short ones when the passage has no
    other; none for a language without draft wording, or a passage of lists
    and tables.
    """
    if _wording_key(text, code) not in DRAFT_WORDINGS:
        return []
    return _key_sentences(text, set(), code) or _key_sentences(text, set(), code, strict=False)


def has_sentences(text: str, code: str) -> bool:
    """Whether a passage in language ``code`` holds a sentence to ask about (prose, not a list, table or caption).

    Languages without draft wording are given the benefit of the doubt.
    """
    if _wording_key(text, code) not in DRAFT_WORDINGS:
        return True
    return bool(_key_sentences(text, set(), code) or _key_sentences(text, set(), code, strict=False))


@lru_cache(maxsize=None)
def _definition_pattern(wording: DraftWording) -> re.Pattern | None:
    """The definitional sentence ("X is a Y…") of a wording, or None when it asks none back."""
    if wording.definition:
        return re.compile(wording.definition)
    if not wording.questions:
        return None
    articles = "|".join(re.escape(a) + ("" if a.endswith(("'", "’")) else " ") for a in wording.articles)
    copulas = "|".join(re.escape(verb) for verb, _ in wording.questions)
    complements = "|".join(re.escape(c) + ("" if c.endswith(("'", "’")) else " ") for c in wording.complements)
    return re.compile(
        rf"^(?P<subject>(?:{articles})?[A-ZÀ-ÖØ-Þ][\w'-]*(?: [\w'-]+){{0,3}}?)(?: \([^)]{{1,80}}\))?,? "
        rf"(?P<verb>{copulas}) (?:{complements})\w",
    )


def _question_from(sentence: str, wording: DraftWording, stops: frozenset[str], spaceless: bool) -> str | None:
    """A real question from a definitional sentence ("The koala is an …" → "What is the koala?"), else None.

    None too when the subject opens with a stop word ("Some of …", "Most …"):
    such a subject names nothing to ask about.
    """
    pattern = _definition_pattern(wording)
    match = pattern.match(sentence) if pattern else None
    if not match:
        return None
    subject = match["subject"]
    if spaceless:
        units = _words(subject)
        if not units or units[0] in stops:
            return None
    else:
        article = next((a for a in wording.articles if subject.startswith(a) and a.endswith(("'", "’"))), None)
        if article is None:
            first, _, rest = subject.partition(" ")
            article = first if first in wording.articles else None
        if article is None and _words(subject)[0] in stops:
            return None
        if article is not None:
            subject = article.lower() + subject[len(article):]
    question = dict(wording.questions)[match["verb"]].format(subject=subject)
    for pattern_text, replacement in wording.fix_ups:
        question = re.sub(pattern_text, replacement, question)
    return question


DRAFT_PREFIX = DRAFT_WORDINGS["en"].prefix
"""How an English offline draft that the tester still has to word as a question begins."""


def is_unfinished_draft(text: str) -> bool:
    """Whether ``text`` is still an offline draft (a :data:`DRAFT_WORDINGS` prefix …), not a question a user would ask."""
    opening = str(text).strip().lower()
    return any(opening.startswith(wording.prefix.lower()) for wording in DRAFT_WORDINGS.values())


def _has_sentence_length(text: str) -> bool:
    """Whether ``text`` is long enough to hold a sentence worth a question (at least 8 words or word units)."""
    return len(word_units(text).split()) >= _MIN_SENTENCE_WORDS


def passage_languages(texts: Sequence[str], candidates: Sequence[str] | None = None) -> list[str]:
    """The language code of each passage (:func:`~coverage_core.languages.detect_language`).

    ``candidates``: the corpus's languages, which an unsure guess is chosen among.
    """
    return [detect_language(text, candidates) for text in texts]


def draft_questions(
    cluster: int, passages: list[int], chunk_texts, chunk_documents, themes: Sequence[str], n: int, seen: set[str],
    candidates: Sequence[str] | None = None,
) -> list[Suggestion]:
    """Offline drafts from the key sentences of the least covered passages, in each passage's language.

    Each draft quotes a real sentence of a passage: a definitional sentence
    becomes the question it answers ("What is the koala?"); any other is
    offered as ``Write a question answered by: “<sentence>”`` (worded in
    the passage's language, :data:`DRAFT_WORDINGS`), a draft the tester
    finishes. Drafts take the best sentence of every passage first, then
    the second best, and so on, until ``n`` distinct drafts exist. A
    passage without a quotable sentence (markup, captions, numbers) gives
    none. A passage in a language without draft wording gives none either;
    instead the gap gets one suggestion per such language with empty text
    and a ``note`` saying why. ``candidates``: the corpus's languages, which
    an unsure language guess is chosen among.
    """
    languages = dict(zip(passages, passage_languages([chunk_texts[i] for i in passages], candidates)))
    draftable = [i for i in passages if languages[i] in DRAFT_WORDINGS]
    theme_words = set(_words(" ".join(themes)))
    ranked = [[(index, s) for s in _key_sentences(chunk_texts[index], theme_words, languages[index])] for index in draftable]
    if not any(ranked):  # only short sentences: accept any plain one
        ranked = [
            [(index, s) for s in _key_sentences(chunk_texts[index], theme_words, languages[index], False)]
            for index in draftable
        ]
    drafts: list[Suggestion] = []
    for depth in range(max((len(r) for r in ranked), default=0)):
        for candidates_of_passage in ranked:
            if len(drafts) == n or depth >= len(candidates_of_passage):
                continue
            index, sentence = candidates_of_passage[depth]
            code = languages[index]
            wording = DRAFT_WORDINGS[_wording_key(chunk_texts[index], code)]
            spaceless = code in SPACELESS
            # A sentence quoted with the one before it (it needs its context) is no definition to ask back.
            single = len(_sentences(sentence, wording, spaceless)) == 1
            asked = _question_from(sentence, wording, _draft_stop_words(code), spaceless) if single else None
            text = asked or wording.quote(sentence)
            if duplicate_key(text) in seen:
                continue
            seen.add(duplicate_key(text))
            drafts.append(suggestion_from(cluster, text, "draft", index, chunk_texts, chunk_documents, code))
    noted: set[str] = set()
    for index in passages:
        code = languages[index]
        if code in DRAFT_WORDINGS or code == UNDETERMINED or code in noted or not _has_sentence_length(chunk_texts[index]):
            continue
        noted.add(code)
        drafts.append(
            suggestion_from(cluster, "", "draft", index, chunk_texts, chunk_documents, code, no_draft_note(code))
        )
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


def language_instruction(codes: Sequence[str]) -> str:
    """The prompt's sentence naming the language to write in, from the passages' language ``codes``.

    One language: "Write the questions in French, the language of the
    passages." (English too: a model otherwise drifts to English). Several,
    or none known: each question in the language of the passage it cites.
    """
    known = [code for code in dict.fromkeys(codes) if code != UNDETERMINED]
    if len(known) == 1:
        return f"Write the questions in {language_name(known[0])}, the language of the passages."
    if known:
        names = ", ".join(language_name(code) for code in known)
        return f"Write each question in the language of the passage it cites ({names})."
    return "Write each question in the language of the passage it cites."


def _llm_prompt(
    themes: Sequence[str], passage_texts: list[str], existing: list[str], n_questions: int,
    languages: Sequence[str] = (),
) -> str:
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
        language_instruction(languages),
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
    n_long = 0
    raw_questions = answer.get("questions")
    for item in raw_questions if isinstance(raw_questions, list) else []:
        text, passage = (item, None) if isinstance(item, str) else (None, None)
        if isinstance(item, dict):
            text, passage = item.get("question"), item.get("passage")
        if not isinstance(text, str) or not text.strip():
            continue
        if len(text) > MAX_SUGGESTION_CHARS and len(" ".join(text.split())) > MAX_SUGGESTION_CHARS:
            n_long += 1
            continue
        try:
            number = int(passage)
        except (TypeError, ValueError, OverflowError):  # "passage": 1e999 is infinity
            number = 0
        questions.append((" ".join(text.split()), number - 1 if 1 <= number <= n_passages else None))
    if not questions and n_long:
        raise ValueError(f"its questions are longer than the {MAX_SUGGESTION_CHARS} characters a test question may have")
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
    candidates: Sequence[str] | None = None,
) -> tuple[list[str], list[Suggestion], int]:
    passage_texts = [chunk_texts[i] for i in prompt_passages]
    languages = passage_languages(passage_texts, candidates)
    prompt = _llm_prompt(themes, passage_texts, _existing_sample(existing_questions, themes), n, languages)
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
    language_of = {index: code for index, code in zip(prompt_passages, languages) if code != UNDETERMINED}
    known = list(dict.fromkeys(language_of.values()))
    suggestions = []
    for text, index in fresh:
        if len(suggestions) == n:
            break
        seen.add(duplicate_key(text))
        language = language_of.get(index, "") if index is not None else (known[0] if len(known) == 1 else "")
        suggestions.append(suggestion_from(cluster, text, "llm", index, chunk_texts, chunk_documents, language))
    if not suggestions:
        if n_dropped:
            missed = ("Its one question did not reach its passage, so it was dropped." if n_dropped == 1 else
                      f"None of its {n_dropped} questions reached their passage, so they were dropped.")
            error = ProviderError(missed, kind="bad_response")
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
    existing_questions, config, seen, vectors, embed, support_threshold, warnings, candidates=None,
):
    """One gap's themes and questions from the LLM, how many of its questions
    were dropped, and whether the LLM failed in a way the next gaps would too.

    On failure a warning is added and the suggestions are None, so the gap
    falls back to drafts. ``candidates``: the corpus's languages, which an
    unsure guess of a passage's language is chosen among.
    """
    # The least covered passages first, then the two most central
    # ones for context if not already there.
    prompt_passages = passages + [int(i) for i in representatives[:2] if int(i) not in passages]
    try:
        llm_themes, suggestions, dropped = _llm_questions(
            llm, cluster, themes, prompt_passages, texts, documents,
            existing_questions, config.n_suggestions, seen, vectors, embed, support_threshold, candidates,
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
        f"{n_unsupported} suggested {wording.plural(n_unsupported, 'question')} did not reach "
        f"{wording.plural(n_unsupported, 'its', 'their')} passage (cosine similarity below "
        f"{support_threshold:.3f}) and {wording.plural(n_unsupported, 'was', 'were')} dropped."
    )
