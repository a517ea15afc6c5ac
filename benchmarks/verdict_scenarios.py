"""Scenarios for ``eval_verdicts.py``: documents, questions and the ground truth of each verdict.

Every scenario is built from the wiki-qa articles and their human questions
(``../shared/data/wiki-qa``, see its README) and carries its own truth: which
questions are off-topic (and of which kind), which documents no question was
written for. Nothing here runs the product; ``eval_verdicts.py`` does.

The 55 articles are shuffled with one seed into half A (tuning) and half B
(reporting); a scenario draws every corpus article from one half. Off-topic
questions come from outside the corpus: questions written for articles that
are not in it (``"outside"``), and *absent-subject* rewrites (``"absent"``):
a genuine question about a corpus article whose subject's name is replaced
by the name of an article of the same kind that is not in the corpus, and
whose name appears nowhere in the corpus text.
"""

from __future__ import annotations

import csv
import re
import shutil
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared_data import PROJECT, WIKI_QA, require, shortest_files  # noqa: E402

# The six kinds of article in wiki-qa (../shared/data/README.md). Removing a
# whole kind leaves no neighbouring article that half-answers the orphaned
# questions, like a test set asking about companies absent from the corpus.
KINDS = {
    "scientists": ("Alessandro_Volta", "Amedeo_Avogadro", "Blaise_Pascal",
                   "Charles-Augustin_de_Coulomb", "Henri_Becquerel", "Isaac_Newton",
                   "James_Watt", "Michael_Faraday", "Nikola_Tesla"),
    "instruments": ("Cello", "Cymbal", "Drum", "Flute", "Guitar", "Lyre", "Piano", "Trumpet",
                    "Violin", "Xylophone"),
    "cities": ("Antwerp", "Berlin", "Jakarta", "Kuala_Lumpur", "Melbourne", "Montreal",
               "Nairobi", "Saint_Petersburg", "San_Francisco", "Taipei"),
    "languages": ("Arabic_language", "Chinese_language", "Finnish_language", "Korean_language",
                  "Malay_language", "Portuguese_language", "Swahili_language",
                  "Swedish_language", "Turkish_language", "Vietnamese_language"),
    "animals": ("Ant", "Butterfly", "Cougar", "Dragonfly", "Eel", "Giant_Panda", "Koala",
                "Lobster", "Octopus"),
    "painters": ("Jackson_Pollock", "Leonardo_da_Vinci", "Michelangelo", "Norman_Rockwell",
                 "Pablo_Picasso", "Pierre-Auguste_Renoir", "Vincent_van_Gogh"),
}

SPLIT_SEED = 0
"""Seed of the shuffle that splits the 55 articles into halves A and B."""
MAX_ARTICLES = 24
"""Articles per corpus at most: keeps a full run to minutes on two shared cores."""
MIX_CORPUS_ARTICLES = 20
"""Corpus articles of the off-topic mixes; the rest of the half are outside the corpus."""
NO_ARTICLE = ("Zebra",)
"""Titles with questions but no article: always outside the corpus."""
MAX_EDITED_CHARS = 20_000
"""Longest article the no-separation scenario copies ten times."""
GENERIC_QUESTIONS = ("What is this about?", "Can you tell me more about the history?")
EXAMPLE = PROJECT / "examples" / "wiki-qa"

# Words a person's surname keeps in front of it ("da Vinci", "van Gogh").
_PARTICLES = {"da", "van", "de", "von"}
_PLURALS = {"Butterfly": "butterflies", "Dragonfly": "dragonflies", "Octopus": "octopuses",
            "Giant_Panda": "giant pandas"}
_SHORT = {"Giant_Panda": "panda", "Leonardo_da_Vinci": "Leonardo", "Michelangelo": "Michelangelo"}
KIND_OF = {title: kind for kind, titles in KINDS.items() for title in titles}


@dataclass
class Scenario:
    """One analysis to run: its documents, its questions and what is true of them.

    ``question_kind[i]`` is ``"genuine"`` (written for a corpus article),
    ``"outside"`` (written for an article not in the corpus) or ``"absent"``
    (a genuine question whose subject was renamed to an absent one).
    ``untested`` names the documents no question was written for.
    """

    name: str
    documents: dict[str, str]
    questions: list[str]
    question_kind: list[str]
    untested: set[str] = field(default_factory=set)
    chunk_size: int = 1000
    notes: str = ""

    @property
    def chunk_overlap(self) -> int:
        # The product's default ratio (1000 / 200) at every size.
        return self.chunk_size // 5

    def csv_bytes(self) -> bytes:
        frame = pd.DataFrame({"question": self.questions, "kind": self.question_kind})
        return frame.to_csv(index=False).encode("utf-8")


@dataclass(frozen=True)
class WikiQA:
    articles: dict[str, str]
    questions: pd.DataFrame  # columns: title, question

    def of(self, title: str) -> list[str]:
        return self.questions.loc[self.questions["title"] == title, "question"].tolist()


@lru_cache(maxsize=1)
def load() -> WikiQA:
    folder = require(WIKI_QA / "articles")
    articles = {path.stem: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.txt"))}
    frame = pd.read_csv(WIKI_QA / "question_answer_pairs.txt", sep="\t", encoding="latin-1",
                        quoting=csv.QUOTE_NONE, dtype=str, keep_default_na=False)
    frame["Question"] = frame["Question"].str.strip()
    frame = frame[(frame["Question"] != "") & (frame["Question"] != "NULL")].drop_duplicates("Question")
    questions = frame.rename(columns={"ArticleTitle": "title", "Question": "question"})[["title", "question"]]
    return WikiQA(articles, questions.reset_index(drop=True))


def halves(data: WikiQA) -> dict[str, list[str]]:
    """Half A (tuning) and half B (reporting), each in its shuffled order."""
    titles = sorted(data.articles)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(titles))
    middle = len(titles) // 2
    return {"A": [titles[i] for i in order[:middle]], "B": [titles[i] for i in order[middle:]]}


def subsample(rng: np.random.Generator, on_pool, off_pool, mix: float) -> tuple[np.ndarray, np.ndarray]:
    """(indices, is off-topic) drawn from ``on_pool`` and ``off_pool`` so that off-topic ones are ``mix`` of
    them: whichever side is in excess is subsampled (seeded by ``rng``), the other kept whole."""
    n_on, n_off = len(on_pool), len(off_pool)
    if n_off / (n_on + n_off) > mix:
        n_off = int(round(mix * n_on / (1 - mix)))
    else:
        n_on = int(round(n_off * (1 - mix) / mix))
    on = rng.choice(on_pool, size=n_on, replace=False)
    off = rng.choice(off_pool, size=n_off, replace=False)
    return np.r_[on, off], np.r_[np.zeros(len(on), bool), np.ones(len(off), bool)]


def corpus_titles(data: WikiQA, half: list[str], n: int = MAX_ARTICLES) -> list[str]:
    """The first ``n`` articles of the half that have questions (an article without any is untested by nature)."""
    return [t for t in half if data.of(t)][:n]


def file_name(title: str) -> str:
    return f"{title}.txt"


def case_folder(workdir: Path, name: str) -> Path:
    """The folder of the case called ``name`` under ``workdir``: every character but letters and digits becomes "_"."""
    return workdir / "".join(c if c.isalnum() else "_" for c in name)


def write_case(folder: Path, data: WikiQA, titles: list[str], questions: pd.DataFrame) -> None:
    """``folder`` emptied, then filled as the command line reads a case: the articles of ``titles`` in docs/
    (one :func:`file_name` each) and ``questions`` as questions.csv."""
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "docs").mkdir(parents=True)
    for title in titles:
        (folder / "docs" / file_name(title)).write_text(data.articles[title], encoding="utf-8")
    questions.to_csv(folder / "questions.csv", index=False, encoding="utf-8")


# ---------------------------------------------------------------- text edits
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_WORD = re.compile(r"[A-Za-z]{4,}")


def edit_text(text: str, rng: np.random.Generator, word_share: float = 0.10, swaps: int = 3) -> str:
    """``text`` lightly edited: ``word_share`` of its words replaced by other words of the text, and
    ``swaps`` pairs of neighbouring sentences exchanged (a revised edition of the same article)."""
    words = list(_WORD.finditer(text))
    vocabulary = sorted({m.group() for m in words})
    chosen = set(rng.choice(len(words), size=int(word_share * len(words)), replace=False).tolist()) if words else set()
    pieces, last = [], 0
    for i, match in enumerate(words):
        if i in chosen:
            pieces += [text[last:match.start()], vocabulary[rng.integers(len(vocabulary))]]
            last = match.end()
    edited = "".join(pieces) + text[last:]
    sentences = _SENTENCE.split(edited)
    for _ in range(swaps if len(sentences) > 2 else 0):
        i = int(rng.integers(len(sentences) - 1))
        sentences[i], sentences[i + 1] = sentences[i + 1], sentences[i]
    return " ".join(sentences)


def word_salad(vocabulary: list[str], n_words: int, rng: np.random.Generator) -> str:
    """Random words, a full stop every 8 to 16 of them (so calibration finds sentences to probe)."""
    out, since = [], 0
    for _ in range(n_words):
        word = vocabulary[rng.integers(len(vocabulary))]
        since += 1
        if since == 1:
            word = word.capitalize()
        if since >= rng.integers(8, 17):
            word += "."
            since = 0
        out.append(word)
    return " ".join(out) + "."


# ---------------------------------------------------------------- absent subjects
def subject_names(title: str) -> dict[str, str]:
    """How questions name an article's subject: ``full`` always, ``short`` and ``plural`` when they exist."""
    kind = KIND_OF.get(title)
    full = title.replace("_", " ")
    names = {"full": full}
    if kind in ("scientists", "painters"):
        words = full.replace("-", " - ").split()
        if title in _SHORT:
            names["short"] = _SHORT[title]
        elif len(words) > 1:
            start = len(words) - 1
            while start > 0 and words[start - 1].lower() in _PARTICLES:
                start -= 1
            names["short"] = " ".join(words[start:])
    elif kind == "languages":
        names["short"] = full.replace(" language", "")
    elif kind in ("animals", "instruments"):
        names["full"] = full.lower()
        names["plural"] = _PLURALS.get(title, full.lower() + "s")
        if title in _SHORT:
            names["short"] = _SHORT[title]
            names["short_plural"] = _SHORT[title] + "s"
    return names


def _pattern(name: str) -> re.Pattern:
    return re.compile(rf"\b{re.escape(name)}\b", re.IGNORECASE)


def rename_subject(question: str, title: str, new_title: str) -> str | None:
    """``question`` with the subject of ``title`` renamed to that of ``new_title``; None if it does not name it."""
    old, new = subject_names(title), subject_names(new_title)
    # Longest names first: "Alessandro Volta" before "Volta", "ants" before "ant".
    for slot in sorted(old, key=lambda s: -len(old[s])):
        pattern = _pattern(old[slot])
        if pattern.search(question):
            fallback = new.get("plural") if slot.endswith("plural") else new["full"]
            replacement = new.get(slot) or fallback or new["full"]

            def keep_case(match: re.Match, replacement=replacement) -> str:
                text = match.group()
                return replacement[0].upper() + replacement[1:] if text[0].isupper() else replacement
            return _fix_article(pattern.sub(keep_case, question), replacement)
    return None


def _fix_article(text: str, name: str) -> str:
    """The "a"/"an" in front of ``name`` agreeing with it again after a rename ("an octopus" -> "a cougar")."""
    def agree(match: re.Match) -> str:
        article, word = match.group(1), match.group(2)
        wanted = "an" if word[0].lower() in "aeiou" else "a"
        return (wanted.capitalize() if article[0].isupper() else wanted) + " " + word
    return re.sub(rf"\b(an?|An?)\s+({re.escape(name)})\b", agree, text, flags=re.IGNORECASE)


def absent_titles(title: str, corpus: list[str], corpus_text: str) -> list[str]:
    """Same-kind titles outside the corpus whose names appear nowhere in the corpus text."""
    kind = KIND_OF.get(title)
    candidates = [t for t in KINDS.get(kind, ()) if t not in corpus]
    return [t for t in candidates if not any(_pattern(n).search(corpus_text) for n in subject_names(t).values())]


def absent_subject_questions(data: WikiQA, corpus: list[str], rng: np.random.Generator,
                             exclude: set[str] = frozenset()) -> list[tuple[str, str]]:
    """``(original, rewritten)`` for every rewritable question of the corpus articles (not in ``exclude``)."""
    corpus_text = "\n".join(data.articles[t] for t in corpus)
    out = []
    for title in corpus:
        names = absent_titles(title, corpus, corpus_text)
        if not names:
            continue
        for question in data.of(title):
            if question in exclude:
                continue
            rewritten = rename_subject(question, title, names[int(rng.integers(len(names)))])
            if rewritten is not None and rewritten != question:
                out.append((question, rewritten))
    return out


# ---------------------------------------------------------------- the scenarios
def clean(data: WikiQA, half: list[str]) -> Scenario:
    """Half-B articles with every question written for them: nothing is off-topic, nothing untested."""
    titles = corpus_titles(data, half)
    questions = [q for t in titles for q in data.of(t)]
    return Scenario("clean", {file_name(t): data.articles[t] for t in titles}, questions,
                    ["genuine"] * len(questions),
                    notes=f"{len(titles)} articles, {len(questions)} questions")


def offtopic_mix(data: WikiQA, half: list[str], mix: float, seed: int) -> Scenario:
    """Genuine questions of the corpus articles, with ``mix`` of the set off-topic.

    The off-topic questions are half ``"outside"`` (questions of the half's
    articles left out of the corpus, and of articles without a file) and half
    ``"absent"`` rewrites of corpus questions (never of a question kept as
    genuine), as far as each pool allows. Whichever side is in excess is
    subsampled (seeded) so that off-topic questions are ``mix`` of the set.
    """
    rng = np.random.default_rng(10_000 + 1000 * seed + int(round(100 * mix)))
    candidates = corpus_titles(data, half, n=len(half))
    titles = candidates[:MIX_CORPUS_ARTICLES]
    outside_titles = [t for t in half if t not in titles] + list(NO_ARTICLE)
    genuine = [q for t in titles for q in data.of(t)]
    outside = [q for t in outside_titles for q in data.of(t)]
    rewrites = absent_subject_questions(data, titles, rng)
    rng.shuffle(rewrites)
    # A question rewritten for the absent pool leaves the genuine pool: no pair of near-twins.
    n_absent_pool = min(len(rewrites), len(genuine) // 3)
    absent = [new for _, new in rewrites[:n_absent_pool]]
    used = {old for old, _ in rewrites[:n_absent_pool]}
    genuine = [q for q in genuine if q not in used]

    n_off_pool = len(outside) + len(absent)
    n_on = len(genuine)
    if n_off_pool / (n_off_pool + n_on) > mix:
        n_off = int(round(mix * n_on / (1 - mix)))
    else:
        n_off = n_off_pool
        n_on = int(round(n_off * (1 - mix) / mix))
    n_absent = min(len(absent), max(n_off - len(outside), (n_off + 1) // 2))
    n_outside = n_off - n_absent
    picked = {
        "genuine": list(rng.choice(genuine, size=n_on, replace=False)),
        "outside": list(rng.choice(outside, size=n_outside, replace=False)),
        "absent": list(rng.choice(absent, size=n_absent, replace=False)),
    }
    rows = [(q, kind) for kind, qs in picked.items() for q in qs]
    rows = [rows[i] for i in rng.permutation(len(rows))]
    return Scenario(f"offtopic {mix:.0%} seed {seed}", {file_name(t): data.articles[t] for t in titles},
                    [q for q, _ in rows], [k for _, k in rows],
                    notes=f"{len(titles)} articles; {n_on} genuine, {n_outside} outside, {n_absent} absent-subject")


def near_duplicates(data: WikiQA, half: list[str], n_articles: int = 12, n_copies: int = 8,
                    n_removed: int = 3, seed: int = 0) -> Scenario:
    """``n_articles`` articles plus an edited copy of ``n_copies`` of them ("X (2024 edition).txt");
    every question of ``n_removed`` copied articles is dropped, so they and their copies are untested."""
    rng = np.random.default_rng(20_000 + seed)
    titles = corpus_titles(data, half, n_articles)
    copied = [titles[i] for i in sorted(rng.choice(len(titles), size=n_copies, replace=False))]
    removed = [copied[i] for i in sorted(rng.choice(len(copied), size=n_removed, replace=False))]
    documents = {file_name(t): data.articles[t] for t in titles}
    for title in copied:
        documents[f"{title} (2024 edition).txt"] = edit_text(data.articles[title], rng)
    questions = [q for t in titles if t not in removed for q in data.of(t)]
    untested = {file_name(t) for t in removed} | {f"{t} (2024 edition).txt" for t in removed}
    return Scenario("near-duplicates", documents, questions, ["genuine"] * len(questions), untested,
                    notes=f"{len(documents)} documents ({n_copies} edited copies); questions of "
                          f"{', '.join(removed)} removed")


def long_few_questions(data: WikiQA, half: list[str], n_silent: int = 3, seed: int = 0) -> Scenario:
    """Articles at chunk size 500, each keeping 7 or 8 of its questions; ``n_silent`` keep none."""
    rng = np.random.default_rng(30_000 + seed)
    titles = corpus_titles(data, half)
    silent = [titles[i] for i in sorted(rng.choice(len(titles), size=n_silent, replace=False))]
    questions = []
    for title in titles:
        if title in silent:
            continue
        own = data.of(title)
        keep = min(len(own), int(rng.integers(7, 9)))
        questions += [own[i] for i in sorted(rng.choice(len(own), size=keep, replace=False))]
    return Scenario("long documents, few questions", {file_name(t): data.articles[t] for t in titles}, questions,
                    ["genuine"] * len(questions), {file_name(t) for t in silent}, chunk_size=500,
                    notes=f"{len(titles)} articles, {len(questions)} questions; none for {', '.join(silent)}")


def chunk_size_corpus(data: WikiQA, half: list[str], chunk_size: int, n_removed: int = 4,
                      seed: int = 0) -> Scenario:
    """The half's corpus with every question of ``n_removed`` articles dropped, at ``chunk_size``."""
    rng = np.random.default_rng(40_000 + seed)
    titles = corpus_titles(data, half)
    removed = [titles[i] for i in sorted(rng.choice(len(titles), size=n_removed, replace=False))]
    questions = [q for t in titles if t not in removed for q in data.of(t)]
    return Scenario(f"chunk size {chunk_size}", {file_name(t): data.articles[t] for t in titles}, questions,
                    ["genuine"] * len(questions), {file_name(t) for t in removed}, chunk_size=chunk_size,
                    notes=f"questions of {', '.join(removed)} removed")


def bundled_example(generic: bool, n_documents: int | None = None) -> Scenario:
    """The bundled example (``examples/wiki-qa``), with the two generic questions appended or not;
    ``n_documents``: only its shortest documents, their questions and the ones about no document."""
    folder = require(EXAMPLE)
    files = shortest_files(folder / "docs", n_documents) if n_documents else sorted((folder / "docs").glob("*.txt"))
    documents = {p.name: p.read_text(encoding="utf-8") for p in files}
    frame = pd.read_csv(folder / "questions.csv", dtype=str, keep_default_na=False)
    if n_documents:
        frame = frame[frame["source"].isin(documents) | (frame["source"] == "")]
    questions = frame["question"].tolist() + (list(GENERIC_QUESTIONS) if generic else [])
    kinds = ["genuine" if s else "outside" for s in frame["source"]] + ["generic"] * (len(questions) - len(frame))
    return Scenario("example + generic" if generic else "example", documents, questions, kinds)


def same_text_edited(data: WikiQA, half: list[str], n_documents: int = 10, seed: int = 0) -> Scenario:
    """One article in ``n_documents`` lightly edited versions: nothing tells the documents apart."""
    rng = np.random.default_rng(50_000 + seed)
    # A short article: ten versions of a long one would cost minutes of embedding for nothing more.
    title = next(t for t in corpus_titles(data, half, len(half)) if len(data.articles[t]) < MAX_EDITED_CHARS)
    documents = {f"{title} (draft {i + 1}).txt": edit_text(data.articles[title], rng) for i in range(n_documents)}
    questions = data.of(title)
    return Scenario("no separation: one text edited", documents, questions, ["genuine"] * len(questions),
                    notes=f"{n_documents} edits of {title}")


def shuffled_words(data: WikiQA, half: list[str], n_documents: int = 10, n_words: int = 1500,
                   seed: int = 0) -> Scenario:
    """``n_documents`` documents of random words from the corpus's vocabulary: no passage is about anything."""
    rng = np.random.default_rng(60_000 + seed)
    titles = corpus_titles(data, half, 8)
    vocabulary = sorted({w.lower() for t in titles for w in _WORD.findall(data.articles[t])})
    documents = {f"salad {i + 1}.txt": word_salad(vocabulary, n_words, rng) for i in range(n_documents)}
    questions = [q for t in titles[:4] for q in data.of(t)]
    return Scenario("no separation: shuffled words", documents, questions, ["genuine"] * len(questions),
                    notes=f"{n_documents} documents of {n_words} random words")
