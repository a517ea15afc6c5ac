"""Whether a written question says only what its passage says: its key terms as written, and no answer given away.

Issue 47's tester had to fix about half of the bundled model's questions:
"…found in the Valanginian Formation?" came out as "Valangina", a passage
giving a measured mercury level became "What is the FDA's regulation on
…?", and "What is the name of the family that is named Argonautidae?"
answers itself. Similarity to the passage (the keep rule's other points)
cannot see any of these: the question is about the right thing, worded
wrong. So a written question is also checked word for word:

* :func:`missing_terms`: every key term of the question (a word that is no
  stop word of the language, nor one of the few words English questions
  ask with, and every number) must occur in the passage, compared after a
  simple folding (case, accents, a possessive, one regular ending:
  "died" = "die", "studied" = "study"); "Valangina" is not
  "Valanginian";
* :func:`gives_its_answer`: a question asking for a name that names it
  ("… the family that is named Argonautidae?", "What was Becquerel's son
  Jean's name?").

:mod:`coverage_core.suggest.question_form` checks how a question is worded.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from coverage_core.languages import SPACELESS, stop_words

__all__ = ["QUESTION_WORDS", "gives_its_answer", "key_terms", "missing_terms", "plain"]

QUESTION_WORDS = {
    "en": frozenset(
        "year years date name names named called call kind kinds type types sort number located known mean means "
        "meaning term word happen happened happens does did".split()
    ),
}
"""Words a question asks *with* rather than about ("In what year …", "What is … called?"): not key terms.
Only for the languages the bundled writer writes (:data:`~coverage_core.suggest.local_model.WRITES_LANGUAGES`)."""

_WORD = re.compile(r"[^\W\d_]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# One regular ending, longest first; "ies" and "ied" fold to "y" ("families" = "family", "studied" = "study").
_ENDINGS = ("ies", "ied", "ing", "es", "ed", "s", "d")


@lru_cache(maxsize=None)
def _stop_words(code: str) -> frozenset[str]:
    """Stop words of ``code`` plus its question words; scikit-learn's list for English, as drafts use."""
    stops = frozenset(ENGLISH_STOP_WORDS) if code in ("en", "", "und") else stop_words([code])
    return stops | QUESTION_WORDS.get(code or "en", frozenset())


def plain(text: str) -> str:
    """Lower case without accents: "Angoulême" = "angouleme"."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _forms(word: str) -> set[str]:
    """``word`` and the word with one regular ending taken off: the folding both sides of a comparison get."""
    forms = {word}
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            stem = word[: -len(ending)]
            forms.add(stem + "y" if ending in ("ies", "ied") else stem)
    return forms


def key_terms(question: str, code: str = "en", *, distinct: bool = True) -> list[str]:
    """The words and numbers of ``question`` that name what it is about, in order, folded (lower case, no accents).

    Not key terms: stop words of ``code`` and its :data:`QUESTION_WORDS`, a
    possessive's "s", single letters. Numbers lose their thousands
    separators ("1,000" = "1000"). ``distinct`` False keeps repeats.
    """
    text = plain(re.sub(r"['’]s\b", "", question))
    stops = _stop_words(code)
    terms = [word for word in _WORD.findall(text) if len(word) > 1 and word not in stops]
    terms += [number.replace(",", "") for number in _NUMBER.findall(text)]
    return list(dict.fromkeys(terms)) if distinct else terms


def missing_terms(question: str, passage: str, code: str = "en") -> list[str]:
    """The key terms (:func:`key_terms`) of ``question`` that ``passage`` does not hold, even after folding.

    A language written without spaces (Chinese, Japanese) is not checked
    (no words to compare): the result is empty.
    """
    if code in SPACELESS:
        return []
    text = plain(re.sub(r"['’]s\b", "", passage))
    words = set(_WORD.findall(text))
    numbers = {number.replace(",", "") for number in _NUMBER.findall(text)}
    folded = {form for word in words for form in _forms(word)}
    missing = []
    for term in key_terms(question, code):
        if term[0].isdigit():
            if term not in numbers:
                missing.append(term)
        elif term not in words and not (_forms(term) & folded):
            missing.append(term)
    return missing


_ASKS_FOR_A_NAME = re.compile(
    r"\b(?:what|which)\b[^?]*?\b(?:name|names|called|named|known as|term)\b|\bwhat\b[^?]*\bcalled\?", re.IGNORECASE
)
_GIVES_A_NAME = re.compile(
    r"\b(?:named|called|known as|titled)\s+(?:after\s+)?(?:the\s+)?[\"“‘']?[A-Z0-9]|\b[A-Z][\w-]*['’]s\s+name\b"
)


def gives_its_answer(question: str) -> bool:
    """Whether ``question`` asks for a name that it gives itself: "What is the name of the family that is named
    Argonautidae?". English wording: the bundled writer writes English only."""
    return bool(_ASKS_FOR_A_NAME.search(question) and _GIVES_A_NAME.search(question))

