"""Off-topic screening when off-topic questions are common (wiki-qa).

Run from the project root::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/eval_offtopic.py [--tune]

The relative rule (robust z-score over the questions) lets off-topic
questions raise their own bar: its recall collapses once they are a large
share of the set. This script compares it with the absolute rule
(``QuestionScreener(question_support_threshold=tau)``), which judges every question
against the documents alone.

Design:

* The 54 wiki-qa articles are split once (``default_rng(0)``) into a
  *tuning* half and a *report* half. Test sets draw their questions from one
  half only; the knowledge base is every article (both halves) except the
  removed ones, so the corpus stays realistic.
* For a mix of ``p`` off-topic: ``REMOVED[p]`` articles of the half are
  removed from the corpus; their questions are off-topic (the ``Zebra``
  questions, which have no article, join the report half's off-topic pool);
  the questions of the half's other articles are on-topic. Whichever side is
  in excess is subsampled so that off-topic questions are ``p`` of the set.
* tau comes from ``coverage_core.stages.calibration.calibrate`` on each corpus
  (pseudo-queries from the chunks, no labels), as in the product.
* Seeds 0..2 draw the removed articles and the subsamples.
* ``--tune`` grids the rule's constants on the tuning half only and prints
  the best settings; the table is always computed on the report half.
* **Absent subjects** (``absent_subject_sets``): the corpus is one half of
  the articles (every kind in it); questions of corpus articles that name
  their article ("Was Volta a professor?") are rewritten to name an article
  of the same kind that is NOT in the corpus ("Was Faraday a professor?"):
  same domain and vocabulary, absent subject. Those are off-topic, the
  corpus articles' other questions on-topic, mixed at 5%, 45% and 65%.
  Tuning: corpus = tuning half, names from the report half; report: the
  other way round. Also the genuine questions of all articles against all
  articles (the clean false-flag rate).

Embeddings: ``make_embedder("local")`` (all-MiniLM-L6-v2) with an
``EmbeddingCache`` in ``$EVAL_SCREENING_CACHE`` (default
``/tmp/eval_screening_cache``).
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "benchmarks"))

from eval_screening import ALWAYS_OFF_TOPIC, load_wiki_qa  # noqa: E402

CACHE = Path(os.environ.get("EVAL_SCREENING_CACHE", "/tmp/eval_screening_cache"))
MIXES = (0.05, 0.45, 0.65)
# Articles removed from the half (of 27) for each mix.
REMOVED = {0.05: 3, 0.45: 9, 0.65: 14}
SEEDS = (0, 1, 2, 3, 4)
STRICTNESS_LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)


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
# Kinds removed from the corpus for each mix (of 6).
KINDS_REMOVED = {0.05: 1, 0.45: 3, 0.65: 4}


def kind_halves(articles: list[str]) -> tuple[list[str], list[str]]:
    """Each kind's articles split in two, so both halves hold every kind."""
    rng = np.random.default_rng(0)
    first, second = [], []
    for titles in KINDS.values():
        present = [t for t in titles if t in articles]
        order = rng.permutation(len(present))
        half = len(present) // 2
        first += [present[i] for i in order[:half]]
        second += [present[i] for i in order[half:]]
    return sorted(first), sorted(second)


def make_kind_set(data, half: list[str], mix: float, seed: int, zebra: bool):
    """Like make_set, but whole kinds of article leave the corpus."""
    rng = np.random.default_rng(1000 * seed + int(100 * mix) + 7)
    kinds = sorted(rng.choice(sorted(KINDS), size=KINDS_REMOVED[mix], replace=False).tolist())
    removed = sorted(t for k in kinds for t in KINDS[k])
    keep_chunks = ~np.isin(data.chunk_article, removed)
    off_titles = [t for t in half if t in removed] + (list(ALWAYS_OFF_TOPIC) if zebra else [])
    on_pool = np.flatnonzero(np.isin(data.question_article, [t for t in half if t not in removed]))
    off_pool = np.flatnonzero(np.isin(data.question_article, off_titles))
    return keep_chunks, *_subsample(rng, on_pool, off_pool, mix), kinds


def _subsample(rng, on_pool, off_pool, mix):
    n_on, n_off = len(on_pool), len(off_pool)
    if n_off / (n_on + n_off) > mix:
        n_off = int(round(mix * n_on / (1 - mix)))
    else:
        n_on = int(round(n_off * (1 - mix) / mix))
    on = rng.choice(on_pool, size=n_on, replace=False)
    off = rng.choice(off_pool, size=n_off, replace=False)
    return np.r_[on, off], np.r_[np.zeros(len(on), bool), np.ones(len(off), bool)]


def halves(articles: list[str]) -> tuple[list[str], list[str]]:
    order = np.random.default_rng(0).permutation(len(articles))
    half = len(articles) // 2
    return sorted(articles[i] for i in order[:half]), sorted(articles[i] for i in order[half:])


def make_set(data, half: list[str], mix: float, seed: int, zebra: bool):
    """(chunk mask, question indices, labels, removed titles) for one test set."""
    rng = np.random.default_rng(1000 * seed + int(100 * mix))
    removed = sorted(rng.choice(half, size=REMOVED[mix], replace=False).tolist())
    keep_chunks = ~np.isin(data.chunk_article, removed)
    off_titles = removed + (list(ALWAYS_OFF_TOPIC) if zebra else [])
    on_pool = np.flatnonzero(np.isin(data.question_article, [t for t in half if t not in removed]))
    off_pool = np.flatnonzero(np.isin(data.question_article, off_titles))
    return keep_chunks, *_subsample(rng, on_pool, off_pool, mix), removed


# How questions name each article: the full title, and the short form people use.
SHORT_NAMES = {"Leonardo_da_Vinci": "Leonardo", "Vincent_van_Gogh": "Van Gogh", "Giant_Panda": "panda"}
PEOPLE = ("scientists", "painters")


def article_names(title: str) -> list[str]:
    """The ways a question names the article ``title``, longest first."""
    full = title.replace("_", " ")
    kind = next(k for k, titles in KINDS.items() if title in titles)
    names = [full]
    if title in SHORT_NAMES:
        names.append(SHORT_NAMES[title])
    elif kind in PEOPLE and " " in full:
        names.append(full.split()[-1])
    elif kind == "languages":
        names.append(full.split()[0])
    return names


def rename(question: str, title: str, other: str) -> str | None:
    """``question`` naming ``other`` where it named ``title`` (the same form, the same initial case);
    None if it does not name ``title``."""
    import re

    for name, replacement in zip(article_names(title), article_names(other)):
        pattern = re.compile(rf"\b{re.escape(name)}\b", re.IGNORECASE)
        if pattern.search(question):
            return pattern.sub(lambda m: replacement if m.group(0)[:1].isupper() else replacement.lower(), question)
    return None


def absent_subject_sets(data, corpus_half: list[str], absent_half: list[str], seed: int):
    """(chunk mask, question texts, labels) per mix: on-topic questions of ``corpus_half``, and
    questions of it renamed to an article of the same kind in ``absent_half`` (off-topic)."""
    rng = np.random.default_rng(5000 + seed)
    keep = np.isin(data.chunk_article, corpus_half)
    on, off = [], []
    for kind, titles in KINDS.items():
        present = [t for t in titles if t in corpus_half]
        absent = [t for t in titles if t in absent_half]
        for title in present:
            other = absent[int(rng.integers(len(absent)))]
            for q in np.flatnonzero(data.question_article == title):
                text = data.question_texts[q]
                renamed = rename(text, title, other)
                # Half the questions that name their article are renamed, the rest stay as asked.
                if renamed is not None and rng.random() < 0.5:
                    off.append(renamed)
                else:
                    on.append(text)
    texts = np.array(on + off, dtype=object)
    on_pool, off_pool = np.arange(len(on)), len(on) + np.arange(len(off))
    for mix in MIXES:
        idx, y = _subsample(rng, on_pool, off_pool, mix)
        yield mix, keep, [str(t) for t in texts[idx]], y


def prf(y, flagged) -> tuple[float, float, float]:
    tp = int((y & flagged).sum())
    p = tp / max(int(flagged.sum()), 1)
    r = tp / max(int(y.sum()), 1)
    f = 2 * p * r / max(p + r, 1e-12)
    return p, r, f


DESIGNS = {
    # name: (halves, make a test set, what it measures)
    "kinds": (kind_halves, make_kind_set,
              "whole kinds of article (e.g. every city) missing from the corpus"),
    "articles": (halves, make_set,
                 "single articles missing; kindred articles remain (labels are noisy: "
                 "the Chinese article answers some Korean questions)"),
}


def main() -> int:
    from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder
    from coverage_core.stages import calibration, screening
    from coverage_core.stages.clustering import ChunkClusterer
    from coverage_core.stages.lexical import lexical_coverage
    from coverage_core.stages.screening import QuestionScreener
    from coverage_core.types import Chunk

    t0 = time.perf_counter()
    data = load_wiki_qa()
    embedder = make_embedder("local")
    cache = EmbeddingCache(CACHE)

    def embed(texts):
        return embed_texts(list(texts), embedder, cache).vectors

    chunk_vectors = embed(data.chunk_texts)
    question_vectors = embed(data.question_texts)
    print(
        f"wiki-qa: {len(data.articles)} articles, {len(data.chunk_texts)} chunks, "
        f"{len(data.question_texts)} questions ({time.perf_counter() - t0:.1f} s)"
    )

    corpora: dict[tuple, tuple] = {}

    def corpus(keep: np.ndarray):
        key = tuple(np.flatnonzero(~keep))
        if key not in corpora:
            idx = np.flatnonzero(keep)
            chunks = [
                Chunk(document=str(data.chunk_article[i]), text=data.chunk_texts[i], start=0,
                      end=len(data.chunk_texts[i]))
                for i in idx
            ]
            cal = calibration.calibrate(chunks, chunk_vectors[idx], embed)
            labels = ChunkClusterer().fit(chunk_vectors[idx]).labels_
            corpora[key] = (idx, cal.question_support_threshold, labels)
        return corpora[key]

    def runs(design, report: bool):
        split, make, _ = DESIGNS[design]
        half = split(data.articles)[1 if report else 0]
        for mix in MIXES:
            for seed in SEEDS:
                keep, q, y, removed = make(data, half, mix, seed, report)
                idx, tau, labels = corpus(keep)
                q_texts = [data.question_texts[i] for i in q]
                c_texts = [data.chunk_texts[i] for i in idx]
                lex = lexical_coverage(q_texts, c_texts)
                yield mix, seed, y, tau, dict(
                    question_vectors=question_vectors[q], chunk_vectors=chunk_vectors[idx],
                    chunk_labels=labels, question_texts=q_texts, chunk_texts=c_texts, lexical=lex,
                    chunk_documents=[str(data.chunk_article[i]) for i in idx],
                )

    def absent_runs(report: bool):
        first, second = kind_halves(data.articles)
        corpus_half, absent_half = (second, first) if report else (first, second)
        for seed in SEEDS:
            for mix, keep, q_texts, y in absent_subject_sets(data, corpus_half, absent_half, seed):
                idx, tau, labels = corpus(keep)
                c_texts = [data.chunk_texts[i] for i in idx]
                yield mix, seed, y, tau, dict(
                    question_vectors=embed(q_texts), chunk_vectors=chunk_vectors[idx], chunk_labels=labels,
                    question_texts=q_texts, chunk_texts=c_texts, lexical=lexical_coverage(q_texts, c_texts),
                    chunk_documents=[str(data.chunk_article[i]) for i in idx],
                )

    def fit(args, **params):
        a = dict(args)
        return QuestionScreener(**params).fit(
            a.pop("question_vectors"), a.pop("chunk_vectors"), a.pop("chunk_labels"), **a
        )

    if "--tune" in sys.argv:
        # Tuned on the kinds design (clean labels) and the absent subjects, tuning half only.
        tune = [("kinds", *run) for run in runs("kinds", report=False)]
        tune += [("absent", *run) for run in absent_runs(report=False)]
        fits = [(mix, y, tau, fit(args, question_support_threshold=tau), scenario)
                for scenario, mix, _, y, tau, args in tune]
        print(f"tuning half: {len(fits)} sets (kinds + absent subjects), tau {min(f[2] for f in fits):.3f}.."
              f"{max(f[2] for f in fits):.3f}")
        results = []
        grid = itertools.product(
            (0.1,), (0.6, 0.7, 0.8), (0.25,), (0.4, 0.5, 0.6),
            np.round(np.arange(-1.2, -0.39, 0.05), 2),
        )
        for unit, cut, lunit, weight, shift in grid:
            per_mix = {(m, k): [] for m in MIXES for k in ("kinds", "absent")}
            for mix, y, tau, s, scenario in fits:
                screening.EMBEDDING_UNIT, screening.LEXICAL_CUT = unit, cut
                screening.LEXICAL_UNIT, screening.MARGIN_LEXICAL_WEIGHT = lunit, weight
                margin = screening.support_margin(s.max_similarity_, s.lexical_coverage_, tau)
                per_mix[mix, scenario].append(prf(y, (margin < shift) | s.absent_subject_))
            means = {f"{m:.0%} {k}": np.mean(v, axis=0) for (m, k), v in per_mix.items()}
            worst = min(min(v[0], v[1]) for v in means.values())
            results.append((worst, unit, cut, lunit, weight, shift, means))
        results.sort(key=lambda r: -r[0])
        for worst, unit, cut, lunit, weight, shift, means in results[:15]:
            print(
                f"unit {unit:.2f} lexcut {cut:.1f} lexunit {lunit:.2f} w {weight:.2f} "
                f"cut {shift:+.2f}: worst P or R {worst:.3f}  "
                + "  ".join(f"{m}: P {v[0]:.2f} R {v[1]:.2f}" for m, v in means.items())
            )
        return 0

    # The clean set: every genuine question against every article.
    genuine = np.flatnonzero(~np.isin(data.question_article, ALWAYS_OFF_TOPIC))
    idx, tau, labels = corpus(np.ones(len(data.chunk_texts), bool))
    q_texts = [data.question_texts[i] for i in genuine]
    clean = fit(dict(question_vectors=question_vectors[genuine], chunk_vectors=chunk_vectors, chunk_labels=labels,
                     question_texts=q_texts, chunk_texts=data.chunk_texts,
                     chunk_documents=[str(a) for a in data.chunk_article]), question_support_threshold=tau)
    codes, _ = clean.explain(clean.strictness)
    print(f"\n== clean: {len(genuine)} genuine questions against all {len(data.articles)} articles (tau {tau:.3f})")
    print(f"flagged {clean.is_outlier_.mean():.1%} ({int(clean.is_outlier_.sum())}): "
          + ", ".join(f"{c} {int((codes == c).sum())}" for c in ("no_support", "missing_words", "absent_subject")))

    print("\n== absent subjects: corpus = report half; questions of its articles renamed to an article of "
          "the same kind in the tuning half")
    absent: dict[float, list] = {m: [] for m in MIXES}
    for mix, seed, y, tau, args in absent_runs(report=True):
        new = fit(args, question_support_threshold=tau)
        absent[mix].append((int(y.sum()), len(y)) + prf(y, new.is_outlier_) + prf(y, new.absent_subject_)[:2])
    print(f"{'mix':>5} {'off/total':>10}  {'P':>5} {'R':>5} {'F1':>5}  {'subject rule alone P/R':>22}")
    for mix in MIXES:
        m = np.mean(absent[mix], axis=0)
        print(f"{mix:>5.0%} {m[0]:>4.0f}/{m[1]:<5.0f}  {m[2]:>5.2f} {m[3]:>5.2f} {m[4]:>5.2f}  "
              f"{m[5]:>10.2f} / {m[6]:.2f}")

    for design, (_, _, what) in DESIGNS.items():
        print(f"\n== {design}: {what}")
        print(f"Report half (tau calibrated per corpus with pseudo-queries; {len(SEEDS)} seeds "
              "per mix)")
        header = (f"{'mix':>5} {'sets':>4} {'off/total':>10} {'tau':>11}  "
                  f"{'P':>5} {'R':>5} {'F1':>5} {'minR':>5}  {'old P':>5} {'old R':>5} "
                  f"{'old F1':>6}")
        print(header)
        print("-" * len(header))
        rows: dict[float, list] = {m: [] for m in MIXES}
        sweep: dict[float, list] = {m: [] for m in MIXES}
        for mix, seed, y, tau, args in runs(design, report=True):
            new = fit(args, question_support_threshold=tau)
            old = fit(args)
            rows[mix].append(
                (int(y.sum()), len(y), tau) + prf(y, new.is_outlier_) + prf(y, old.is_outlier_)
            )
            sweep[mix].append([prf(y, new.decide(level))[:2] for level in STRICTNESS_LEVELS])
        for mix in MIXES:
            r = np.array(rows[mix], dtype=float)
            m = r.mean(axis=0)
            print(
                f"{mix:>5.0%} {len(r):>4} {m[0]:>4.0f}/{m[1]:<5.0f} "
                f"{r[:, 2].min():.3f}-{r[:, 2].max():.3f}  "
                f"{m[3]:>5.2f} {m[4]:>5.2f} {m[5]:>5.2f} {r[:, 4].min():>5.2f}  "
                f"{m[6]:>5.2f} {m[7]:>5.2f} {m[8]:>6.2f}"
            )
        print("P/R/F1: absolute rule (question_support_threshold=tau, default strictness 0.5), mean "
              "over seeds; minR = worst seed's recall; old: relative rule (no tau).")
        print("Absolute rule by strictness (precision / recall, mean over seeds):")
        print(f"{'mix':>5}  "
              + "  ".join(f"{'s=' + format(level, 'g'):>11}" for level in STRICTNESS_LEVELS))
        for mix in MIXES:
            v = np.mean(sweep[mix], axis=0)
            print(f"{mix:>5.0%}  " + "  ".join(f"{p:>5.2f}/{r:<5.2f}" for p, r in v))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
