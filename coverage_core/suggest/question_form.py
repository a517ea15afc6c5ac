"""Whether an English question written by the bundled model is worded as a tester would keep it.

The word-for-word check (:mod:`coverage_core.suggest.grounding`) keeps a
question to its sentence's words; it cannot see a question that uses them
badly. On the kept questions of wiki-qa's tuning half (issue 47,
``benchmarks/eval_question_quality.py``, labelled in
``benchmarks/question_quality/``) the model's remaining failures were few
kinds, each named by :func:`form_reason`:

* ``statement``: a statement with a question mark ("The headquarter is
  located in Montreal?");
* ``garbled``: no verb ("Which of the two East African bureau of CNBC
  Africa and the Nairobi bureau of the New York Times?"), or a sentence
  pasted after "Is" ("Is Mary averts her eyes and folds her hands …?");
* ``repeated``: two key terms twice in a row ("Is Newton's heliocentric
  view … developed in his heliocentric view …?"; a single word may repeat:
  "Is the port of Montreal the largest inland port in the world?");
* ``advice``: it asks for advice, which no passage states as a fact
  ("Should I get Veterans Mortgage Life Insurance?", "Which repayment plan
  is best for me?");
* ``vague``: it asks for a purpose, significance, origin … (the model's
  favourite questions, which its sentence seldom answers), or "What if
  …?" with no question of what follows;
* ``mentioned_only``: it asks what X is, and the sentence only mentions X;
* ``no_answer``: it asks who, when, where or how many, and the sentence
  holds no name, date, place or number besides the question's own ("When
  should I enroll my Veterans to earn money …?");
* ``unnamed``: it asks about "he" or "it", or is a yes-or-no question,
  and names nothing (no name or number): "Is the tree purchased by the
  school?"; or its subject is a pronoun, whatever else it names ("Is it by
  Michelangelo?", not the "Was it Symonds who …?" that names its answer).

English only: the bundled writer writes English
(:data:`~coverage_core.suggest.local_model.WRITES_LANGUAGES`), and these
are English word patterns.
"""

from __future__ import annotations

import re
from collections import Counter

from coverage_core.suggest.fragments import english_has_verb, english_verb_after
from coverage_core.suggest.grounding import key_terms, plain

__all__ = ["FORM_REASONS", "form_reason"]

FORM_REASONS = ("statement", "garbled", "repeated", "advice", "vague", "mentioned_only", "no_answer", "unnamed")
"""What :func:`form_reason` may return besides ""."""

# How an English question opens: a question word or an auxiliary, perhaps after a preposition ("In which year").
_OPENING = re.compile(
    r"^\W*(?:(?:in|on|at|for|from|by|to|with|of|during|after|before|since|under|according to)\s+)?"
    r"(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|am|do|does|did|can|could|will|would|"
    r"shall|should|may|might|must|has|have|had)\b",
    re.IGNORECASE,
)
# The auxiliaries a yes-or-no question opens with, and the copulas among them.
_COPULA = r"(?:is|are|was|were)"
_AUXILIARY = r"(?:is|are|was|were|do|does|did|can|could|will|would|has|have|had)"
_YES_NO = re.compile(rf"^\W*{_AUXILIARY}\b", re.IGNORECASE)
_COPULA_OPENING = re.compile(rf"^\W*{_COPULA}\s+", re.IGNORECASE)
# "What is the purpose / significance / origin of …", from the question's opening on.
_VAGUE = re.compile(
    r"^\W*(?:what|how)\b[^?]*?\b(?:purpose|significance|importance|meaning|origin|role|story|current|"
    r"relationship|difference)s?\b",
    re.IGNORECASE,
)
# "What is/was (the) X?" and nothing else: the sentence must say what X is (X is …, X was …, X, a …, X (…)).
_WHAT_IS = re.compile(r"^\W*(?:what|who)\s+(?:is|are|was|were)\s+(?P<subject>[^?]{2,80}?)\s*\?\W*$", re.IGNORECASE)
# "What if …?": a condition with no question about it ("What if a motorcycle plate is surrendered to DMV?").
_WHAT_IF = re.compile(r"^\W*what if\b", re.IGNORECASE)
# A preposition closing a question right after a participle or a noun, with no subject between it and the opening
# ("Which agency is located in?", "Is Kuala Lumpur a game set in?"); "Which city is the agency located in?" has one.
_PREPOSITION = r"(?:in|on|at|of|for|from|to|by|with|about|into|after)"
_DANGLING = re.compile(
    rf"^\W*(?:(?:what|which)(?:\s+[\w'’-]+){{0,4}}\s+{_COPULA}\s+[\w'’-]+|{_COPULA}\b[^?]*)"
    rf"\s+{_PREPOSITION}\s*\?\W*$",
    re.IGNORECASE,
)
# A lone lower-case letter other than "a": a possessive broken off its word on the page ("dependent s transfer").
_BROKEN_WORD = re.compile(r"(?<![\w'’.])(?![ai]\b)[b-z](?![\w'’.])")
# A pronoun as the subject, right after the opening ("Is it by …?", "When did he …?"); "Was it X who …" is a cleft.
_PRONOUN_SUBJECT = re.compile(
    r"^\W*(?:(?:what|which|who|when|where|why|how(?:\s+\w+)?)\s+)?"
    rf"{_AUXILIARY}\s+(?:he|she|it|they|this|these|those)\b"
    r"(?![^?]*\b(?:who|that)\b)",
    re.IGNORECASE,
)
_ADVICE = re.compile(r"\bshould (?:i|we|you|my|our)\b|\bbest for (?:me|us|you|my)\b|\bworth it\b", re.IGNORECASE)
# What a who / when / where / how many question's answer looks like: a name, a year or date, a number.
_ASKS = (
    (re.compile(r"^\W*(?:\w+\s+)?(?:when|what year|which year|in what year|in which year)\b", re.IGNORECASE),
     re.compile(r"\b\d{1,4}\b|\b(?:January|February|March|April|May|June|July|August|September|October|November|"
                r"December|century|centuries|age|ago|before|after|until|during)\b", re.IGNORECASE)),
    (re.compile(r"^\W*how (?:many|much|long|old|far|often)\b", re.IGNORECASE),
     re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|dozen|hundred|thousand|million|billion|"
                r"several|few|many|half|twice|once|daily|weekly|monthly|annually|year|month|week|day|hour|minute)s?\b",
                re.IGNORECASE)),
    (re.compile(r"^\W*(?:who|whom|whose|where)\b", re.IGNORECASE), re.compile(r"(?<!^)\b[A-Z][\w'’-]*")),
)
_PRONOUN = re.compile(r"\b(?:he|she|it|they|him|her|his|its|them|their|this|these|those)\b", re.IGNORECASE)
# A name (a capitalised word after the first) or a number: what makes a question about something in particular.
_NAME = re.compile(r"(?<!^)\b[A-Z][\w'’-]*|\d")
# A question opening with "Can" or "Does" has its verb in the base form; a finite verb before any clause
# word means a sentence was pasted after the opening ("Can no leak was observed in group B patients?").
_MODAL_OPENING = re.compile(r"^\W*(?:can|could|will|would|do|does|did)\b", re.IGNORECASE)
_FINITE = frozenset("is are was were has".split())
_CLAUSE_WORDS = frozenset("who whom whose which that where when if because after before since while be".split())
_BEFORE_PARTICIPLE = frozenset("be been being have has had get got".split())
# After these an -ed word is an adjective ("the proposed settlement", "with advanced cancers"), not a verb.
_BEFORE_ADJECTIVE = frozenset("the a an this these those any some no its their his her our your my with of in on "
                              "for to by from and or than most more".split())
# Words after a pasted sentence's verb ("averts her eyes", "takes place"): its object or a preposition.
_AFTER_VERB = frozenset("the a an his her its their to in on at place up out".split())


def _pasted_sentence(question: str) -> bool:
    """"Is Mary averts her eyes …?": after an opening "Is", a verb's -s form follows its subject; "Can no leak
    was observed?", "Does HIE associated with …?": after an opening "Can" or "Does", a finite verb."""
    if _MODAL_OPENING.match(question):
        words = re.findall(r"[^\W\d_]+", question)[1:]
        for before, word in zip([""] + words, words):
            if word.lower() in _CLAUSE_WORDS or before.lower() in _BEFORE_PARTICIPLE:
                return False
            participle = word.islower() and word.endswith("ed") and len(word) > 4
            if word.lower() in _FINITE or (participle and before.lower() not in _BEFORE_ADJECTIVE):
                return True
        return False
    if not _COPULA_OPENING.match(question):
        return False
    words = re.findall(r"[^\W\d_]+", _COPULA_OPENING.sub("", question, count=1))
    return any(english_verb_after(before, word) and after.lower() in _AFTER_VERB
               for before, word, after in zip(words, words[1:], words[2:]))


def _mentioned_only(question: str, source: str) -> bool:
    what_is = _WHAT_IS.match(question)
    if not what_is:
        return False
    subject = re.sub(r"^(?:the|a|an)\s+", "", what_is["subject"].strip(), flags=re.IGNORECASE)
    named, text = re.escape(plain(subject)), plain(source)
    said = re.compile(rf"{named}(?:\s+(?:is|are|was|were)\b|\s*[,(:–—])")
    # Only a name the sentence holds as written is judged: "What is a violin bow strung with?" asks no definition.
    return bool(re.search(rf"\b{named}\b", text)) and not said.search(text)


def _no_answer(question: str, source: str) -> bool:
    """A who / when / where / how many question whose sentence holds no answer of that kind outside the question."""
    asked = {word.lower() for word in re.findall(r"[\w'’-]+", question)}
    for asks, answer in _ASKS:
        if asks.search(question):
            return not any(found.group(0).lower() not in asked for found in answer.finditer(source))
    return False


def form_reason(question: str, source: str) -> str:
    """Why an English ``question`` written from ``source`` (its sentence) is worded as no tester would keep it,
    as one of :data:`FORM_REASONS`, or "" when its wording holds (module docstring)."""
    question = question.strip()
    if not _OPENING.match(question):
        return "statement"
    if (not english_has_verb(question.rstrip("?？ "), question=True) or _pasted_sentence(question)
            or _DANGLING.match(question) or _BROKEN_WORD.search(question)):
        return "garbled"
    terms = key_terms(question, distinct=False)
    pairs = Counter(zip(terms, terms[1:]))
    if pairs and pairs.most_common(1)[0][1] > 1:
        return "repeated"
    if _ADVICE.search(question):
        return "advice"
    if _VAGUE.search(question) or _WHAT_IF.match(question):
        return "vague"
    if _mentioned_only(question, source):
        return "mentioned_only"
    if _no_answer(question, source):
        return "no_answer"
    named = bool(_NAME.search(question))
    if (not named and (_PRONOUN.search(question) or _YES_NO.match(question))) or _PRONOUN_SUBJECT.match(question):
        return "unnamed"
    return ""
