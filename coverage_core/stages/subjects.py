"""The named subjects of a question, and whether the documents ever make them their subject.

A question can sit squarely in the documents' domain and vocabulary and still
ask about something they never discuss: "How did Intel's gross margin
change?" against Apple's and NVIDIA's quarterly reports. Its embedding is
close to the reports' passages and all its words but one occur together in
a chunk, so neither kind of support evidence notices; only its *subject* is
absent. :func:`question_subjects` names what a question asks about (names,
acronyms, quoted terms, years and quarters) by rules on the written text, no
model; :func:`subject_presence` counts the passages mentioning each, through
the lexical stage's word index (:mod:`coverage_core.stages.lexical`), and
whether a passage the question retrieves mentions it; asked to, it also
lists the question's other content words ("cougar" in "Is the cougar a
cephalopod?"), which no rule on capitals finds. The verdict on that
evidence are the rules of :mod:`coverage_core.offtopic`.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from coverage_core.languages import has_spaceless_text, word_units
from coverage_core.stages.lexical import (
    FRENCH_ORDINAL_ENDINGS,
    MIN_FIXABLE_LENGTH,
    STOP_WORDS,
    Reading,
    WordIndex,
    corpus_reading,
    edit_stems,
    long_enough,
    normalize_word,
    words_of,
)

__all__ = [
    "Subject", "SubjectEvidence", "is_closed_question", "question_subjects", "stems_to_read", "subject_lists",
    "subject_presence",
]

ENGLISH = Reading()
"""How an English corpus is read (the default of functions given no corpus reading)."""

# Lower-case words that may join the capitalised words of one name ("Bank of
# America", "Leonardo da Vinci"); "and" may not: it joins two names.
NAME_CONNECTORS = frozenset("of de da di del der des dos das van von la le du the y al el bin ibn".split())
# Capitalised words that name no subject of their own: calendar words (a
# question "in March" asks about something else), honorifics and company
# suffixes (the name before them is the subject), and the words questions
# use for the source itself.
GENERIC_CAPITALISED = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday "
    "mr mrs ms dr prof st sir saint inc ltd llc plc corp co company corporation group "
    "english according regarding please name list give compare describe explain summarize summarise "
    "tell define identify".split()
    # Era markers: "2nd century BC" asks about the century, not about a "BC".
    + "bc ad bce ce".split()
)
# Name words shorter than this are ignored ("A", initials); acronyms of two
# letters ("AI", "EU") count.
MIN_NAME_LENGTH = 2
# A name word found in no passage counts as the corpus word one typing slip
# away when it has at least this many letters and keeps its first letter
# ("Avagadro" -> "Avogadro", "Collge" -> "College"); shorter names have too
# many neighbours ("Intel" is one letter from "inter").
MIN_FIXABLE_NAME = 6
# Content words not part of a name (``subject_presence(content_words=True)``)
# are spelling-fixed from this many letters of their stem, like the lexical
# stage's words (see coverage_core.stages.lexical.MIN_FIXABLE_LENGTH), with no
# first-letter condition.
MIN_FIXABLE_WORD = MIN_FIXABLE_LENGTH
# ... or as the corpus word it is derived from ("Anglicanism" -> "Anglican").
DERIVED_ENDINGS = ("ism", "ist", "ian", "ern", "ese", "ish", "ic")
NAMED_KINDS = ("name", "acronym", "quoted")

# The off-topic rules' cuts (coverage_core.offtopic.absent_subject and .name_in_passing), kept here because
# they also bound what is worth gathering: the rules read this module, never the other way.
FEW_MENTIONS = 10
"""A subject named in at most this many passages, none of which the question retrieves or reaches, is named
only in passing (:class:`~coverage_core.offtopic.absent_subject.AbsentSubject`)."""

PASSING_MENTIONS = 20
"""A name in at most this many passages whose passages hold little else the question asks is named in passing
(:class:`~coverage_core.offtopic.name_in_passing.NameInPassing`)."""

MIN_COMPANY_WORDS = 2
"""That rule needs more than this many subjects in the question: with fewer, a single paraphrase leaves
nothing."""
"""Subjects a question names, as opposed to periods and common content words."""
# Written eras name no subject, like "BC" and "AD" in GENERIC_CAPITALISED: "since Before Christ" asks
# about a time.
_ERA = re.compile(r"\b(?:Before (?:the )?Common Era|Common Era|Before Christ|Anno Domini)\b")
# The word after these is a name the question asks about its subject ("Is one of the parts of a cymbal
# called a disc?"): in no passage, the answer is no, not another subject. The verbs themselves say
# nothing of a subject either.
_NAMING = frozenset((b"called", b"named", b"termed", b"dubbed"))
_NAMING_AS = frozenset((b"known", b"referred"))  # "known as", "referred to as"
# An English question opening with an auxiliary is answered yes or no ("Was Alessandro Volta an Egyptian?").
_CLOSED_OPENERS = frozenset(
    "is are was were am do does did can could has have had will would shall should may might must "
    "isn aren wasn weren don doesn didn hasn haven hadn won wouldn shouldn couldn".split())

_SENTENCE_BREAK = re.compile(r"(?<=[.!?;:])\s+|\n+")
_TOKEN = re.compile(r"[^\W_](?:[\w&\-.]*[^\W_])?(?:['\u2019]s\b|(?<=s)['\u2019](?!\w))?", re.UNICODE)
_QUOTED = re.compile(r"\"([^\"]{2,80})\"|\u201c([^\u201d]{2,80})\u201d|(?<!\w)'([^']{2,80})'(?!\w)")
_YEAR = re.compile(r"\b(?:1[5-9]\d\d|20\d\d)s?\b")
_QUARTER = re.compile(r"\b(?:Q[1-4]|H[12]|FY) ?'?(?:\d{4}|\d{2})\b")
# A French century ("XXe", "XIXème", "Vᵉ" siècle) is a period like a year; "Le" and "Ce" are words, not the
# 50th and 100th.
_FRENCH_CENTURY = re.compile(rf"\b(?:[IVXLC]{{1,7}}(?:{FRENCH_ORDINAL_ENDINGS})|(?:[IVXLC]{{2,7}}|[VX])e)(?!\w)")
# A file name's extension: a dot and up to 5 letters or digits at its very end.
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}\Z")


@dataclass(frozen=True)
class Subject:
    """One named subject of a question.

    ``text`` as the question writes it (possessive dropped: "Intel's" ->
    "Intel"); ``kind`` one of ``"name"``, ``"acronym"``, ``"quoted"``,
    ``"period"``, or ``"word"`` (any other content word, lower-cased, from
    ``subject_presence(content_words=True)``); ``stems`` its words as the word index reads them
    (lower-cased, stemmed by :func:`~coverage_core.stages.lexical.normalize_word`).
    """

    text: str
    kind: str
    stems: tuple[bytes, ...]


@dataclass(frozen=True)
class SubjectEvidence:
    """How present one subject is in the corpus.

    ``n_passages``: passages mentioning it (for a name of several words, the
    most any one of its words is in: "Pablo Picasso" is as present as
    "Picasso", and a typo in one word ("San Franscico") loses nothing; 0
    only when none of its words is in any passage, "Intel
    Corporation", as "Corporation" is no name). ``retrieved``: one of the passages the question retrieves
    mentions it. ``in_document_names``: every word of it is in a document's
    name (a question naming the plan document it is about). ``company``: for
    a name, acronym or quoted term in at most ``PASSING_MENTIONS`` passages
    of a question with more than ``MIN_COMPANY_WORDS`` subjects, the largest
    share of the other subjects' words that one passage mentioning it also
    holds (``offtopic.name_in_passing``); NaN otherwise. ``names_a_document``: its words hold every
    word of one document's name ("cymbals" and ``Cymbal.txt``).
    """

    subject: Subject
    n_passages: int
    retrieved: bool
    in_document_names: bool = False
    company: float = float("nan")
    names_a_document: bool = False


def _is_capitalised(token: str) -> bool:
    return token[:1].isupper()


def _is_acronym(token: str) -> bool:
    """Two or more capitals and nothing else but dots or ampersands ("AMD", "U.S.", "AT&T"; not "US0")."""
    letters = [c for c in token if c.isalpha()]
    return (len(token) >= MIN_NAME_LENGTH and sum(c.isupper() for c in letters) >= 2
            and all(c.isupper() or c in ".&" for c in token))


def _bare(token: str) -> tuple[str, bool]:
    """The token without a possessive ending, and whether it had one."""
    for ending in ("'s", "\u2019s"):
        if token.endswith(ending):
            return token[: -len(ending)], True
    if token.endswith(("'", "\u2019")):
        return token[:-1], True
    return token, False


def _stems(text: str, reading: Reading = ENGLISH) -> tuple[bytes, ...]:
    """Distinct stems of the words of ``text`` a name is recognised by (not English stop words, not too
    short), read as the word index reads the corpus (:class:`~coverage_core.stages.lexical.Reading`).

    Only English stop words, whatever the corpus's languages: stopwords-iso's lists of some languages
    are frequency lists holding names (Malay's has "kuala", "lumpur", "malaysia"), and a capitalised
    word inside a sentence is seldom a stop word in any language."""
    kept = (
        normalize_word(w) for w in words_of(reading.text(word_units(text)))
        if len(w) >= MIN_NAME_LENGTH and w not in STOP_WORDS and w.decode("utf-8", "replace") not in NAME_CONNECTORS
    )
    return tuple(dict.fromkeys(kept))


def _generic(word: str, reading: Reading = ENGLISH) -> bool:
    """Whether a capitalised word names nothing: a calendar or generic word, an English stop word, or, where the
    corpus's language capitalises every noun, one of that language's stop words ("Welches", "Wann")."""
    lower = word.lower()
    stem = lower.encode("utf-8", "replace")
    return (lower in GENERIC_CAPITALISED or stem in STOP_WORDS
            or reading.capitalises_nouns and stem in reading.stop)


def _names_in_sentence(sentence: str, reading: Reading = ENGLISH) -> list[tuple[str, str]]:
    """(text, kind) of the names and acronyms of one sentence.

    Runs of capitalised words, joined by :data:`NAME_CONNECTORS`, are one
    name; a possessive ends it. The sentence's first word starts a name only
    when it is not a stop, question or generic word and the name is clearly
    one: an acronym, a possessive ("Intel's margin …") or several
    capitalised words ("Abraham Lincoln was …"); otherwise a capital there
    says nothing.
    """
    tokens = [m.group(0) for m in _TOKEN.finditer(sentence)]
    found: list[tuple[str, str]] = []
    run: list[tuple[str, bool]] = []  # (word, is sentence start)

    def close(possessive: bool = False) -> None:
        while run and run[-1][0].lower() in NAME_CONNECTORS:
            run.pop()
        words = [w for w, _ in run]
        while words and _generic(words[0], reading):
            words.pop(0)
        while words and _generic(words[-1], reading):
            words.pop()
        starts_sentence = bool(run) and run[0][1] and len(words) == len(run)
        run.clear()
        if not words:
            return
        if len(words) == 1 and _is_acronym(words[0]):
            found.append((words[0], "acronym"))
            return
        if starts_sentence and len(words) == 1 and not possessive:
            return
        found.append((" ".join(words), "name"))

    for position, token in enumerate(tokens):
        word, possessive = _bare(token)
        lower = word.lower()
        if run and lower in NAME_CONNECTORS and not _is_capitalised(word):
            run.append((word, False))
            continue
        name_like = (_is_capitalised(word) or _is_acronym(word)) and not any(c.isdigit() for c in word)
        if not name_like or (not run and _generic(word, reading) and not _is_acronym(word)):
            close()
            continue
        if _generic(word, reading) and not _is_acronym(word):  # "Is", "The" inside a Title Cased question
            close()
            continue
        run.append((word, position == 0))
        if possessive:
            close(possessive=True)
    close()
    return found


def question_subjects(text: str, reading: Reading = ENGLISH) -> list[Subject]:
    """The named subjects of one question, in order of first mention, each once.

    * names: capitalised words not at a sentence's start (there only when
      clearly a name, see :func:`_names_in_sentence`), several joined into
      one ("Abraham Lincoln", "Bank of America"), possessives folded
      ("Intel's" -> "Intel"); calendar words, honorifics and stop words are
      not names;
    * acronyms: two or more capitals ("AMD", "GPU");
    * quoted terms: text in double quotes, or in single quotes that are not
      apostrophes;
    * periods: years ("1887", "1990s"), quarters ("Q3 2023", "FY24") and, in French, centuries
      ("XXe", "XIXème").

    Rules on the written text, no model: a name written in lower case is not
    found, and a capitalised common word may be (it is then present in the
    corpus, which is all that is asked of it). Spaceless script is read as
    character pairs first (:func:`~coverage_core.languages.word_units`), so
    "1990年" holds the year 1990 and "NBA球隊" the acronym NBA. ``reading``
    (the corpus's, English by default) says how stems are read. Where the
    corpus's language capitalises every noun (German,
    ``Reading.capitalises_nouns``) a capital says nothing of a name: the
    language's stop words (interrogatives "Welches", "Wann", articles)
    start or end no name, and a name of one capitalised word is taken as
    a common word (kind ``"word"``: it counts only when no passage has
    it): only names of several words, acronyms, quoted terms and periods
    are named subjects.
    """
    if not isinstance(text, str) or not text.strip():
        return []
    text = word_units(text)
    single_names = not reading.capitalises_nouns
    found: list[tuple[str, str]] = []
    for match in _QUOTED.finditer(text):
        quoted = next(g for g in match.groups() if g is not None).strip()
        if quoted:
            found.append((quoted, "quoted"))
    for match in _QUARTER.finditer(text):
        found.append((match.group(0), "period"))
    for match in _YEAR.finditer(text):
        found.append((match.group(0), "period"))
    if reading.french:
        found.extend((match.group(0), "period") for match in _FRENCH_CENTURY.finditer(text))
    unquoted = _ERA.sub(" , ", _QUOTED.sub(" , ", text))
    for sentence in _SENTENCE_BREAK.split(unquoted):
        found.extend(_names_in_sentence(sentence.strip(" \t\"'\u201c\u201d([{-"), reading))
    subjects: dict[tuple[bytes, ...], Subject] = {}
    covered: set[bytes] = set()
    for subject_text, kind in found:
        stems = _stems(subject_text, reading)
        if kind == "name" and not single_names and len(stems) == 1 and len(subject_text.split()) == 1:
            kind = "word"
        # A year already inside a quarter, or a name inside a quoted term, is not a subject of its own.
        if not stems or stems in subjects or (kind in ("period", "name", "acronym") and set(stems) <= covered):
            continue
        subjects[stems] = Subject(subject_text, kind, stems)
        covered.update(stems)
    return list(subjects.values())


def _name_stems(names: Sequence[str], reading: Reading = ENGLISH) -> list[tuple[frozenset[bytes], frozenset[bytes]]]:
    """Stems of the words of each document name ("Northwind_Standard_Benefits.pdf"), camel case split: all
    of them, and those of the name without its extension (the words that name the document's subject)."""
    stems = []
    extensions: dict[str, tuple[bytes, ...]] = {}  # a corpus has few kinds of file
    for name in names:
        name = str(name)
        # A search anchored at the very end (\Z, not $: that also matches before a final newline), so a name
        # holding a newline ("new\nline.txt", a legal file name) splits like any other.
        found = _EXTENSION.search(name)
        subject, extension = (name[: found.start()], found.group()) if found else (name, "")
        if extension not in extensions:
            extensions[extension] = _stems(extension, reading)
        words = frozenset(_stems(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", subject.replace("_", " ")), reading))
        stems.append((words.union(extensions[extension]), words))
    return stems


MAX_NAME_WORDS = 5
"""A subject names a document whole (``SubjectEvidence.names_a_document``) by at most this many of its words."""


MAX_TITLE_WORDS = 10


def document_titles(chunk_texts: Sequence[str], chunk_documents: Sequence[str]) -> list[str]:
    """Each document's title: the first line of its first passage when it reads as one (at most
    :data:`MAX_TITLE_WORDS` words, not a sentence ending in a full stop). A file called ``doc_07.txt``
    names no subject; its first line "Alessandro Volta" does, as a wiki page, a manual or a report opens
    with what it is about."""
    first: dict[str, int] = {}
    for i, name in enumerate(chunk_documents):
        first.setdefault(name, i)
    titles = []
    for i in first.values():
        text = chunk_texts[i] if i < len(chunk_texts) and isinstance(chunk_texts[i], str) else ""
        line = text.strip().split("\n", 1)[0].strip().lstrip("#").strip()
        if line and len(line.split()) <= MAX_TITLE_WORDS and not line.endswith("."):
            titles.append(line)
    return titles


def document_names_and_titles(chunk_texts: Sequence[str], chunk_documents: Sequence[str] | None) -> list[str]:
    """The documents' names, then their titles (:func:`document_titles`): what names a document's subject."""
    chunk_documents = chunk_documents or ()
    return [*dict.fromkeys(chunk_documents), *document_titles(chunk_texts, chunk_documents)]


def _names_a_document(stems: Sequence[bytes], whole_names: frozenset[frozenset[bytes]]) -> bool:
    """Whether some of ``stems`` are every word of a document's name (``whole_names``, see :func:`_name_stems`):
    a lookup per combination of a few stems, not a scan of the documents."""
    return bool(whole_names) and any(
        frozenset(words) in whole_names
        for size in range(1, min(len(stems), MAX_NAME_WORDS) + 1) for words in itertools.combinations(stems, size))


def is_closed_question(text: str) -> bool:
    """Whether an English question is answered yes or no: it opens with an auxiliary ("Was …", "Does …")."""
    words = words_of(text[:40]) if isinstance(text, str) else []
    return bool(words) and words[0].decode("ascii", "replace") in _CLOSED_OPENERS


def _fixes(absent: dict[bytes, int], holding: dict[bytes, np.ndarray], index: WordIndex,
           words: frozenset[bytes] = frozenset()) -> dict[bytes, bytes]:
    """Absent name stems (-> the length of the longest word written for them) -> the most frequent
    corpus stem one edit away with the same first letter, or the stem without a :data:`DERIVED_ENDINGS`
    (words of at least :data:`MIN_FIXABLE_NAME` letters only). Stems in ``words`` (content words, not
    names) are fixed as the lexical stage fixes them: a stem of at least :data:`MIN_FIXABLE_WORD`
    letters, any first letter."""
    edits = {}
    for t, written in absent.items():
        if not t.isalpha():
            continue
        if t in words and len(t) >= MIN_FIXABLE_WORD:
            edits[t] = set(edit_stems(t))
        elif written >= MIN_FIXABLE_NAME:
            edits[t] = {v for v in edit_stems(t) if v[:1] == t[:1]}
        else:
            continue
        edits[t].update(_derived_forms(t))
    wanted = {v for vs in edits.values() for v in vs if v not in holding}
    holding.update(index.holding(wanted) if wanted else {})
    fixes = {}
    for stem, candidates in edits.items():
        found = [(len(holding[v]), v) for v in candidates if len(holding[v])]
        if found:
            fixes[stem] = max(found)[1]
    return fixes


_DERIVED = tuple(e.encode("ascii") for e in DERIVED_ENDINGS)


def _derived_forms(stem: bytes) -> list[bytes]:
    """The stems ``stem`` derives from by a :data:`DERIVED_ENDINGS` ("darwinism" -> "darwin")."""
    return [normalize_word(stem[: -len(e)]) for e in _DERIVED if stem.endswith(e) and len(stem) - len(e) >= 5]


def subject_lists(question_texts: Sequence[str], reading: Reading = ENGLISH,
                  content_words: bool = False) -> list[list[Subject]]:
    """Each question's subjects as :func:`subject_presence` reads them: :func:`question_subjects`, then, with
    ``content_words`` in an English corpus, its other content words."""
    question_texts = reading.questions(question_texts)
    subjects = [question_subjects(t, reading) for t in question_texts]
    # The absent-word rule folds endings with the English suffix stemmer (lexical.SUFFIXES): in French,
    # "reçu", "qualifiée", "investir" are forms the passages write otherwise, and on fr-qa the rule flagged
    # genuine questions by the hundred. Other languages keep the name rule only. The corpus's largest
    # language decides (a short passage on Kuala Lumpur reads as Malay).
    if content_words and reading.english:
        subjects = [subs + _content_words(t, subs, reading) for t, subs in zip(question_texts, subjects)]
    return subjects


def stems_to_read(subjects: Sequence[Sequence[Subject]]) -> list[bytes]:
    """The stems :func:`subject_presence` looks up for these ``subjects`` first: theirs and those they derive
    from (a :class:`~coverage_core.stages.lexical.WordIndex` reads them in the word check's pass)."""
    wanted = list(dict.fromkeys(t for subs in subjects for sub in subs for t in sub.stems))
    return wanted + [v for t in wanted for v in _derived_forms(t)]


def _written_lengths(subjects: list[list[Subject]], reading: Reading = ENGLISH) -> dict[bytes, int]:
    """Each subject stem -> the length of the longest word of the questions' subject texts it stems from."""
    lengths: dict[bytes, int] = {}
    for subs in subjects:
        for sub in subs:
            for word in words_of(reading.text(word_units(sub.text))):
                stem = normalize_word(word)
                lengths[stem] = max(lengths.get(stem, 0), len(word))
    return lengths


def _read_stem(stem: bytes, holding: dict[bytes, np.ndarray], fixes: dict[bytes, bytes], top: np.ndarray) -> bytes:
    """``stem``, or for a stem in no passage its fix when one of the passages the question retrieves holds
    it: a question that misspells a corpus word asks about what that word's passages say and reaches them
    ("cimbals" is Cymbal.txt's word), while "Koala's genome" is no typo of Kuala Lumpur."""
    fix = fixes.get(stem)
    if fix is None or not _held(top, holding[fix]).any():
        return stem
    return fix


def _held(chunks: np.ndarray, postings: np.ndarray) -> np.ndarray:
    """Which of ``chunks`` are in ``postings`` (ascending, as the word index gives them): ``np.isin``
    without sorting the postings again, which cost the most at scale (a common word is in most passages)."""
    if not len(postings):
        return np.zeros(len(chunks), dtype=bool)
    where = np.minimum(np.searchsorted(postings, chunks), len(postings) - 1)
    return postings[where] == chunks


# Words that may stand between the words an acronym abbreviates: short stop words ("Bank of America").
MAX_CONNECTOR_LETTERS = 4


@functools.lru_cache(maxsize=256)
def _spelling_out(acronym: str, reading: Reading = ENGLISH) -> re.Pattern:
    """Words whose initials spell ``acronym`` in order, each of two letters or more, with up to two short
    stop words of the corpus's languages between them ("Jeux olympiques" for JO, "Parti communiste" for
    PC, "National Hockey League" for NHL). No such stop word starts the words, and for an acronym of two
    letters, which word pairs spell by chance, none is one of them and the first is capitalised."""
    letters = [c for c in acronym if c.isalpha()]
    connectors = sorted((w.decode("utf-8", "replace") for w in reading.stop
                         if len(w) <= MAX_CONNECTOR_LETTERS), key=len, reverse=True)
    connector = "(?i:%s)" % "|".join(map(re.escape, connectors)) if connectors else "(?!)"
    gap = rf"[\s-]+(?:{connector}[\s-]+){{0,2}}"
    first = re.escape(letters[0].upper()) if len(letters) == 2 else f"(?i:{re.escape(letters[0])})"
    no_connector = rf"(?!{connector}(?!\w))"  # "Prices of the" spells no PT
    later = no_connector if len(letters) == 2 else ""  # but "paid time off" spells PTO
    words = [rf"{no_connector}{first}[^\W\d_]+"]
    words += [rf"{later}(?i:{re.escape(c)})[^\W\d_]+" for c in letters[1:]]
    return re.compile(r"(?<!\w)" + gap.join(words) + r"(?!\w)")


def _spelled_out_in(acronym: str, passages: np.ndarray, chunk_texts: Sequence[str], reading: Reading) -> np.ndarray:
    """The ``passages`` that write ``acronym`` out in full (:func:`_spelling_out`)."""
    pattern = _spelling_out(acronym, reading)
    return np.sort(np.asarray([p for p in passages if pattern.search(chunk_texts[p])], dtype=np.int64))


def _content_words(text: str, subjects: list[Subject], reading: Reading = ENGLISH) -> list[Subject]:
    """The question's content words (as the lexical stage reads them: not stop words, long enough,
    letters only) not already part of one of its ``subjects``, each a :class:`Subject` of kind
    ``"word"``. None for a question in a spaceless script: its character pairs are no words, and a
    pair absent from the passages says little of its subject."""
    if has_spaceless_text(text):
        return []
    taken = {t for sub in subjects for t in sub.stems}
    found: list[Subject] = []
    written = words_of(reading.text(text))
    for i, word in enumerate(written):
        if (word in reading.stop or not long_enough(word, reading.stop_characters)
                or not word.decode("utf-8", "replace").isalpha() or word in _NAMING or word in _NAMING_AS
                or _names_a_term(written, i)):
            continue
        stem = normalize_word(word)
        if stem not in taken:
            taken.add(stem)
            found.append(Subject(word.decode("utf-8", "replace"), "word", (stem,)))
    return found


def _names_a_term(words: list[bytes], i: int) -> bool:
    """Whether ``words[i]`` follows a naming verb ("called", "known as", "referred to as"), skipping
    an article ("called a disc")."""
    j = i - 1
    if j >= 0 and words[j] in (b"a", b"an", b"the"):
        j -= 1
    if j >= 0 and words[j] in _NAMING:
        return True
    if j >= 1 and words[j] == b"as":
        before = words[j - 2] if j >= 2 and words[j - 1] == b"to" else words[j - 1]
        return before in _NAMING_AS
    return False


def subject_presence(
    question_texts: Sequence[str],
    chunk_texts: Sequence[str],
    retrieved_chunks,
    *,
    document_names: Sequence[str] = (),
    content_words: bool = False,
    reaches=None,
    reading: Reading | None = None,
    subjects: Sequence[Sequence[Subject]] | None = None,
    index: WordIndex | None = None,
) -> list[list[SubjectEvidence]]:
    """Each question's subjects (:func:`question_subjects`) and how present each is in the corpus.

    A passage mentions a word when one of its words has the same stem
    (case-insensitive, at word boundaries, plurals and possessives folded;
    the lexical stage's word index, one pass over the texts). A name word
    found in no passage counts as the corpus word one typing slip away (see
    :data:`MIN_FIXABLE_NAME`); an acronym found in no passage is mentioned by
    the retrieved passages that write it out (:func:`_spelling_out`).

    Parameters
    ----------
    question_texts : sequence of str
    chunk_texts : sequence of str
    retrieved_chunks : array-like of shape (n_questions, k), int
        The passages each question retrieves (the screener's most similar
        chunks); -1 entries are ignored.
    document_names : sequence of str
        Names of the documents; a subject all of whose words are in one
        of them is the corpus's own (``in_document_names``).
    content_words : bool
        Also list the question's other content words, lower-cased, as
        subjects of kind ``"word"`` (after its named subjects): the thing a
        question asks about is often a common noun ("Is the cougar a
        cephalopod?"), which no rule on capitals finds. Spelling-fixed as
        the lexical stage fixes words (:data:`MIN_FIXABLE_WORD`), or
        folded to the word they derive from.
    reaches : callable ``(question index, passage indices) -> bool``, optional
        Whether the question reaches one of these passages by similarity;
        asked only of a subject named in at most ``FEW_MENTIONS``
        passages (:data:`FEW_MENTIONS`), none of them retrieved. True counts as retrieved.
    reading : :class:`~coverage_core.stages.lexical.Reading`, optional
        How the texts are read as words (``lexical.corpus_reading`` of these
        texts by default): the corpus languages' stop words are never names
        nor content words; a spaceless corpus (Chinese, Japanese, Thai) is
        read as character pairs and lists no content words (``content_words``
        is ignored there); a German one names no single capitalised word
        (see :func:`question_subjects`).
    subjects : list of list of Subject, optional
        :func:`subject_lists` of these questions, when computed before.
    index : :class:`~coverage_core.stages.lexical.WordIndex`, optional
        The word index of these texts as ``reading`` reads them, shared with the word check.

    Returns
    -------
    evidence : list (per question) of list of :class:`SubjectEvidence`
    """
    if reading is None:
        reading = corpus_reading(chunk_texts, question_texts)
    written_chunks = chunk_texts
    index = index or WordIndex(reading.texts(chunk_texts))
    if subjects is None:
        subjects = subject_lists(question_texts, reading, content_words)
    wanted = list(dict.fromkeys(s for subs in subjects for sub in subs for s in sub.stems))
    holding = index.holding(wanted) if wanted else {}
    written = _written_lengths(subjects, reading)
    words = frozenset(sub.stems[0] for subs in subjects for sub in subs if sub.kind == "word")
    fixes = _fixes({t: written.get(t, len(t)) for t in wanted if not len(holding[t])}, holding, index, words)
    document_stems = _name_stems(dict.fromkeys(document_names), reading)
    named = frozenset().union(*(every for every, _ in document_stems))
    whole_names = frozenset(subject for _, subject in document_stems if subject)
    retrieved = np.asarray(retrieved_chunks, dtype=np.int64).reshape(len(subjects), -1) if len(subjects) else None
    evidence: list[list[SubjectEvidence]] = []
    for q, subs in enumerate(subjects):
        top = retrieved[q][retrieved[q] >= 0] if retrieved is not None else np.zeros(0, np.int64)
        found = []
        for i, sub in enumerate(subs):
            read = [_read_stem(t, holding, fixes, top) for t in sub.stems]
            postings = [holding[t] for t in read]
            n = max(len(p) for p in postings)
            if not n and sub.kind == "acronym" and len(top):
                # An acronym the corpus never writes is still its subject when the passages the question
                # retrieves write it out ("médaillé aux JO" and "aux Jeux olympiques de 2002").
                postings = [_spelled_out_in(sub.text, top, written_chunks, reading)]
                n = len(postings[0])
            hit = bool(n) and any(bool(_held(top, p).any()) for p in postings)
            if not hit and reaches is not None and 0 < n <= FEW_MENTIONS:
                hit = any(reaches(q, p) for p in postings)
            company = float("nan")
            if sub.kind in NAMED_KINDS and 0 < n <= PASSING_MENTIONS and len(subs) > MIN_COMPANY_WORDS:
                others = [t for j, other in enumerate(subs) if j != i for t in other.stems]
                other_names = [[holding[t] for t in other.stems]
                               for j, other in enumerate(subs) if j != i and other.kind in NAMED_KINDS]
                company = _company(max(postings, key=len), [holding[t] for t in others], other_names)
            found.append(SubjectEvidence(sub, int(n), hit, set(read) <= named, company,
                                         _names_a_document(read, whole_names)))
        evidence.append(found)
    return evidence


def _company(passages: np.ndarray, others: list[np.ndarray], other_names: Sequence[list[np.ndarray]] = ()) -> float:
    """The largest share of ``others`` (each the passages holding one word) held by one of ``passages``; 1
    when one of them holds every word of one of ``other_names`` (the question's other names, each as the
    passages holding each of its words).

    A passage naming two of the question's names together speaks of the one with the other, whatever words
    it uses for the rest: questions paraphrase common words, seldom names ("When did the Soviet military
    forces occupy Estonia?" beside "the invasion of Estonia by the Soviet army in 1944": one of four other
    words, as for a name in passing)."""
    for name in other_names:
        if name and _held(passages, functools.reduce(np.intersect1d, name)).any():
            return 1.0
    held = np.zeros(len(passages))
    for holding_word in others:
        held += _held(passages, holding_word)
    return float(held.max() / len(others))


def asks_of_a_document_subject(evidence: list[SubjectEvidence], closed: bool = False) -> bool:
    """Whether the question names a document's own subject (a name in a document's name) and reaches it:
    then what else it names is what it asks of that subject ("Was Alessandro Volta an Egyptian?" beside
    Alessandro_Volta.txt), not what it is about. A ``closed`` question (:func:`is_closed_question`) may
    name the document by a common word that is its whole name ("Does Fender make cymbals?" beside
    Cymbal.txt)."""
    return any(e.retrieved and (e.subject.kind in NAMED_KINDS and e.in_document_names
                                or closed and e.names_a_document) for e in evidence)
