"""Whether a sentence can carry a question draft, or is a fragment no tester can write a question from.

A draft quotes one sentence of a passage ("Write a question answered by:
“…”"); issue 47 found drafts built on fragments: a question of the
document ("Are there any tips I should know about?"), a sentence that
needs the one before it ("This includes both medical and dental
services."), a heading or list item without a verb. :func:`fragment_reason`
names what is wrong with a sentence, or returns "" for one a draft may
quote. The checks that hold in every language come first (length, a
question mark); the verb check needs knowledge of the language, so it runs
only where :data:`VERB_CHECKS` has one (English: a small heuristic on word
forms, :func:`english_has_verb`); other languages skip it rather than lose
their drafts to a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["MIN_DRAFT_WORDS", "VERB_CHECKS", "english_has_verb", "english_verb_after", "fragment_reason"]

MIN_DRAFT_WORDS = 6
"""Fewer words than this is a fragment ("Short line.", "Tips for new drivers.")."""
# A sentence without spaces (Chinese, Japanese) is measured in characters, about two per word.
_MIN_SPACELESS_CHARS = 2 * MIN_DRAFT_WORDS
_QUESTION = re.compile(r"[?？]\W*$|^\W*[¿]")

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
# Auxiliaries, modals and the copula: a sentence with one has a verb.
_EN_AUXILIARIES = frozenset(
    "am is are was were be been being has have had having do does did can could will would shall should may might "
    "must cannot ought need needs get gets got".split()
)
# Past tenses and participles that do not end in -ed.
_EN_IRREGULAR = frozenset(
    "arose awoke became began bent bit bled blew bore born bought bound bred brought built burnt burst caught chose "
    "clung came crept dealt dug drew drank drove ate fell fed felt fought found fled flung flew forbade forgot forgave "
    "froze gave went grew hung heard hid held hurt kept knelt knew laid led leant leapt learnt left lent lay lit lost "
    "made meant met paid rode rang rose ran said saw sought sold sent shook shone shot shrank sang sank sat slept slid "
    "smelt spoke sped spent spun spat sprang stood stole stuck stung struck strove swore swept swam swung took taught "
    "tore told thought threw trod understood undertook woke wore wove wept won wound wrote begun broken chosen done "
    "drawn driven eaten fallen flown forgotten frozen given gone grown hidden known ridden risen seen shaken shown "
    "spoken stolen sworn taken thrown worn written put cut shut quit".split()
)
_EN_FUNCTION = frozenset(
    "the a an this that these those its their his her your our my both all each every some any many most more no not "
    "to on in at for with from by as up out about into over through under between it them him us me you one two three "
    "several such only also well than of and or but if".split()
)
# Words after an opening instruction ("Apply for", "Include the", "Learn how"): a heading rarely continues so.
_EN_AFTER_INSTRUCTION = frozenset(
    "the a an your this these that to for in on with up out it them all any more if whether how about our what when "
    "where online now one".split()
)
_EN_SUBJECTS = frozenset("i you we they he she it this these those who which there".split())
_EN_ADVERBS = frozenset("also only still often never always now then usually even already further again".split())
# Endings of nouns ("information", "requirement") and adjectives ("medical", "federal"): such a word is no verb,
# and an adjective before a plural noun ("medical services") is no subject before its verb.
_EN_NOUN_ENDINGS = ("tion", "sion", "ment", "ness", "ity", "ance", "ence", "ship", "hood", "ism", "ure", "ing")
_EN_ADJECTIVE_ENDINGS = ("al", "ic", "ous", "ive", "ary", "ful", "less", "able", "ible")


def _adverb(word: str) -> bool:
    return word in _EN_ADVERBS or (len(word) > 4 and word.endswith("ly"))


def _third_person(word: str) -> bool:
    """Could be a verb's -s form ("collects", "runs"); not "class", "status", "basis", "physics"."""
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "ics"))


def _base_form(word: str) -> bool:
    """Could be a plural subject's verb ("consist", "take"): no function word, plural, adverb, noun or adjective ending."""
    return (len(word) > 2 and word not in _EN_FUNCTION
            and not word.endswith(("s", "ly", *_EN_NOUN_ENDINGS, *_EN_ADJECTIVE_ENDINGS)))


def english_verb_after(subject: str, word: str) -> bool:
    """Whether ``word`` reads as an -s verb after ``subject`` ("Mary averts", "ant collects"; not "medical
    services", "the benefits", "of residents")."""
    low = subject.lower()
    adjective = subject.islower() and low.endswith(_EN_ADJECTIVE_ENDINGS)
    return word.islower() and _third_person(word) and not (low.endswith("s") or adjective or low in _EN_FUNCTION)


def english_has_verb(sentence: str, *, question: bool = False) -> bool:
    """Whether an English sentence has a finite verb or is an instruction, by word forms alone (no tagger).

    A verb is seen in an auxiliary, modal or copula ("is", "can"), a
    contraction ("don't", "we're"), a lower-case -ed form or an irregular
    past ("used", "built"), a word after a pronoun subject ("This
    includes", "who meet"), an -s form after a noun or adverb ("An ant
    collects", "also runs", not "medical services"), a base form after a
    plural subject ("Workers specialise in") or a noun with a function word
    after it ("the cougar compete for"), or an opening instruction ("Apply
    for", "Learn how"). Of the English sentences of wiki-qa, sci-qa and
    docs-qa that pass the drafts' prose check, 111 of 15,429 (0.7%) are
    called verbless, most of them captions, references and study-design
    headings ("Retrospective analysis of 92 tumours.", "To determine the
    duration of …").
    ``question``: ``sentence`` is a question, whose base-form verb comes
    with "do" or a modal ("What do ants eat?"), so a noun followed by a
    base form is no verb there ("What criteria for community care under
    …?").
    """
    words = _WORD.findall(sentence)
    lower = [word.lower() for word in words]
    for i, (word, low) in enumerate(zip(words, lower)):
        if low in _EN_AUXILIARIES or low in _EN_IRREGULAR or re.search(r"n['’]t$|['’](?:re|ve|ll|d|m)$", low):
            return True
        if word.islower() and len(low) > 3 and low.endswith("ed"):
            return True
        # The next word, skipping one adverb ("also runs"), and the word after it.
        at = i + 1 + (i + 2 < len(words) and _adverb(lower[i + 1]))
        verb, verb_low = (words[at], lower[at]) if at < len(words) else ("", "")
        after = lower[at + 1] if at + 1 < len(words) else ""
        if not verb:
            continue
        if low in _EN_SUBJECTS and verb_low not in _EN_FUNCTION and len(verb_low) > 1:
            return True
        adjective = word.islower() and low.endswith(_EN_ADJECTIVE_ENDINGS)
        if verb.islower() and _third_person(verb_low) and (
            _adverb(low) or not (low.endswith("s") or adjective or low in _EN_FUNCTION)
        ):
            return True
        plural = low.endswith("s") and (word.islower() or (i == 0 and word[1:].islower()))  # not "DeVos"
        if len(low) > 1 and verb.islower() and _base_form(verb_low) and (
            plural or (not question and word.islower() and low not in _EN_FUNCTION and not adjective
                       and after in _EN_FUNCTION)
        ):
            return True
        if i == 0 and word[:1].isupper() and not low.endswith(("s", *_EN_NOUN_ENDINGS)) and (
            lower[1] if len(lower) > 1 else ""
        ) in _EN_AFTER_INSTRUCTION:
            return True
    return False


VERB_CHECKS: dict[str, Callable[[str], bool]] = {"en": english_has_verb}
"""Languages whose sentences are checked for a verb, with the check. A language not listed keeps sentences
without one: a guess from another language's word forms would cost it real drafts."""


def fragment_reason(sentence: str, code: str, spaceless: bool = False) -> str:
    """Why ``sentence`` (in language ``code``) cannot carry a draft: "short", "question", "no_verb"; "" when it can.

    ``spaceless``: the language writes no spaces between words (Chinese,
    Japanese), so length is counted in characters.
    """
    text = sentence.strip()
    if spaceless:
        if len(text) < _MIN_SPACELESS_CHARS:
            return "short"
    elif len(text.split()) < MIN_DRAFT_WORDS:
        return "short"
    if _QUESTION.search(text):
        return "question"
    check = VERB_CHECKS.get(code)
    if check is not None and not check(text):
        return "no_verb"
    return ""
