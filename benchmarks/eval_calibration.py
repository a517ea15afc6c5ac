"""Does the calibrated support level τ know when it failed?

Reproduces the reported failure (a knowledge base holding two versions of one
document: the best passage "of another document" is the sentence's own copy,
so τ collapses to ~0 and everything reads as tested) and checks the fix in
``coverage_core/stages/calibration.py`` (near-copies skipped as negatives,
``reliable`` / ``reason``, fallback to the model's default level).

Scenarios, all with the bundled all-MiniLM-L6-v2:

* ``clean``: the 55 wiki-qa articles, default chunking (1000/200). τ must
  stay reliable and within ±0.05 of the old calibration.
* ``copies-<size>``: the 20 shortest wiki-qa articles (to keep the run
  cheap) plus an edited copy of each (about 10 % of the words replaced by
  other words of the article, some adjacent sentences swapped), chunk sizes
  500, 800, 1000, 1500 (overlap 20 %).
* ``fr`` / ``zh``: the French and Chinese article sets, which this English
  model reads poorly (how low the separation goes when the model does not fit
  the language).

For each: the old behaviour (no near-copy test, no reliability check) and the
new one: τ, the question level, Youden's J for other documents (``J``) and
other topics (``Jq``), medians, probes with a near-copy elsewhere, reliable.

Then the model's default level: the Youden threshold between each labelled
wiki-qa question's best similarity to a passage of its own article and to the
best passage of the other articles (the ``Zebra`` questions, which have no
article, only as negatives), and the median calibrated τ over random halves of
the articles for comparison; and the shingle shares behind ``NEAR_COPY_SHARE``.

Run: ``HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python benchmarks/eval_calibration.py``
(needs ../shared/data; embeddings cached in ``$EVAL_CALIBRATION_CACHE``, default ``/tmp/eval_calibration_cache``).
``--quick`` skips the French/Chinese sets and the random halves. ``--smoke`` runs every part on the 2
shortest wiki-qa articles (one copied, chunks of 500 only; their questions), the shortest French article
(no Chinese) and one random half.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared_data import SHARED_DATA, SMOKE_HELP, WIKI_QA, require, shortest  # noqa: E402

from coverage_core import embedding_steps  # noqa: E402
from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder  # noqa: E402
from coverage_core.embeddings.registry import default_support_level  # noqa: E402
from coverage_core.stages import calibration  # noqa: E402
from coverage_core.stages.chunking import ChunkingConfig  # noqa: E402
from coverage_core.stages.clustering import ChunkClusterer  # noqa: E402
from coverage_core.types import Document  # noqa: E402
from coverage_core.validation import unit_rows  # noqa: E402

CACHE = Path(os.environ.get("EVAL_CALIBRATION_CACHE", "/tmp/eval_calibration_cache"))
N_COPIED = 20
CHUNK_SIZES = (500, 800, 1000, 1500)
SMOKE_ARTICLES = 2
WORD_EDIT_SHARE = 0.10
SENTENCE_SWAP_SHARE = 0.2
N_HALVES = 3
FALLBACK = calibration.model_fallback(default_support_level("local")[0])
"""What ``session.support_fallback`` gives for the local model: its measured default level."""


def read_articles(folder: Path) -> dict[str, Document]:
    return {p.stem: Document(p.name, p.read_text(encoding="utf-8")) for p in sorted(require(folder).glob("*.txt"))}


def read_questions() -> tuple[list[str], np.ndarray]:
    import pandas as pd

    frame = pd.read_csv(require(WIKI_QA) / "question_answer_pairs.txt", sep="\t", encoding="latin-1",
                        quoting=csv.QUOTE_NONE, dtype=str, keep_default_na=False)
    frame["Question"] = frame["Question"].str.strip()
    frame = frame[~frame["Question"].isin(["", "NULL"])].drop_duplicates("Question")
    return frame["Question"].tolist(), frame["ArticleTitle"].to_numpy(dtype=str)


def edited_copy(document: Document, seed: int) -> Document:
    """A second version: ~10 % of the words replaced by other words of the document, some sentences swapped."""
    rng = np.random.default_rng(seed)
    vocabulary = document.text.split()
    paragraphs = []
    for paragraph in document.text.split("\n"):
        sentences = calibration._sentences(paragraph)
        for i in range(len(sentences) - 1):
            if rng.random() < SENTENCE_SWAP_SHARE:
                sentences[i], sentences[i + 1] = sentences[i + 1], sentences[i]
        words = " ".join(sentences).split(" ")
        for i in range(len(words)):
            if words[i] and rng.random() < WORD_EDIT_SHARE:
                words[i] = vocabulary[rng.integers(len(vocabulary))]
        paragraphs.append(" ".join(words))
    return Document(document.name.replace(".txt", " (revised).txt"), "\n".join(paragraphs))


class Run:
    def __init__(self):
        self.embedder, self.cache = make_embedder("local"), EmbeddingCache(CACHE)

    def embed(self, texts):
        return embed_texts(list(texts), self.embedder, self.cache).vectors

    def corpus(self, documents, size):
        chunks = embedding_steps.chunk_corpus(documents, ChunkingConfig(size, size // 5))
        vectors = unit_rows(self.embed([c.text for c in chunks]))
        topics = ChunkClusterer(random_state=0).fit(vectors).labels_
        return chunks, vectors, topics


@contextlib.contextmanager
def old_behaviour():
    """The calibration as it was: every chunk of another document is a negative, nothing is checked."""
    saved = calibration.NEAR_COPY_SHARE, calibration.reliability_problem
    calibration.NEAR_COPY_SHARE, calibration.reliability_problem = float("inf"), lambda *args: ""
    try:
        yield
    finally:
        calibration.NEAR_COPY_SHARE, calibration.reliability_problem = saved


@contextlib.contextmanager
def recorded_separations(record: dict):
    """Records the separations the reliability check sees (the question level's J is not in the Calibration)."""
    check = calibration.reliability_problem

    def recording(*args):
        record["J"], record["Jq"] = args[5], args[6]
        return check(*args)

    calibration.reliability_problem = recording
    try:
        yield record
    finally:
        calibration.reliability_problem = check


def first_pass(run, chunks, vectors, topics):
    """The probes and their best other-document candidates, before any near-copy is skipped."""
    probes = calibration.sample_probes(chunks)
    if not probes:
        return probes, None
    probe_vectors = unit_rows(run.embed([p[1] for p in probes]))
    own = [i for i, _, _ in probes]
    documents = np.array([c.document for c in chunks], dtype=object)
    return probes, calibration._candidates_elsewhere(probe_vectors, vectors, (documents,), (documents[own],))


def shingle_shares(chunks, probes, candidates, size):
    """Share of each probe's word ``size``-shingles found in its best other-document chunk, and whether that
    chunk is of the probe's own document's other version (a true near-copy, in the ``copies`` corpora)."""
    indices, _ = candidates[0]
    shares, twin = [], []
    for (own, sentence, _), row in zip(probes, indices):
        s = calibration.word_shingles(sentence, size)
        shares.append(len(s & calibration.word_shingles(chunks[row[0]].text, size)) / max(len(s), 1))
        twin.append(base_name(chunks[row[0]].document) == base_name(chunks[own].document))
    return np.array(shares), np.array(twin)


def base_name(document: str) -> str:
    return document.replace(" (revised)", "")


HEADER = (f"{'corpus':<13}{'chunks':>7} | {'old τ':>6} {'old J':>6} {'pos':>6} {'neg':>6} | "
          f"{'τ':>6} {'q-lvl':>6} {'J':>6} {'Jq':>6} {'pos':>6} {'neg':>6} {'copies':>6}  reliable  method")


def scenario(run, name, documents, size, shares):
    start = time.perf_counter()
    chunks, vectors, topics = run.corpus(documents, size)
    with old_behaviour():
        before = calibration.calibrate(chunks, vectors, run.embed, topic_labels=topics)
    with recorded_separations({}) as record:
        after = calibration.calibrate(chunks, vectors, run.embed, topic_labels=topics, fallback=FALLBACK)
    jq = record.get("Jq") or 0.0
    probes, candidates = first_pass(run, chunks, vectors, topics)
    if probes:  # text without spaces between words (Chinese) yields no probe sentences at all
        shares[name] = {size: shingle_shares(chunks, probes, candidates, size) for size in (2, 3)}
    print(f"{name:<13}{len(chunks):>7} | {before.support_threshold:>6.3f} {fmt(before.separation):>6} "
          f"{fmt(before.positive_median):>6} {fmt(before.negative_median):>6} | "
          f"{after.support_threshold:>6.3f} {after.question_support_threshold:>6.3f} "
          f"{fmt(after.separation):>6} {jq:>6.3f} {fmt(after.positive_median):>6} "
          f"{fmt(after.negative_median):>6} {after.n_near_duplicates:>6}  {str(after.reliable):<8}  {after.method}"
          f"   [{time.perf_counter() - start:.0f}s]", flush=True)
    if after.reason:
        print(f"{'':<13}reason: {after.reason}", flush=True)


def labelled_default(run, articles):
    """Youden threshold between a labelled question's best own-article passage and best other-article passage."""
    questions, question_article = read_questions()
    if len(articles) < 55:  # --smoke: the questions of these articles, and the Zebra ones (no article)
        kept = np.isin(question_article, [*articles, "Zebra"])
        questions, question_article = [q for q, k in zip(questions, kept) if k], question_article[kept]
    chunks, vectors, _ = run.corpus(list(articles.values()), 1000)
    chunk_article = np.array([Path(c.document).stem for c in chunks])
    similarity = unit_rows(run.embed(questions)) @ vectors.T
    own = question_article[:, None] == chunk_article[None, :]
    has_article = own.any(axis=1)
    positives = np.where(own, similarity, -np.inf).max(axis=1)[has_article]
    negatives = np.where(own, -np.inf, similarity).max(axis=1)
    threshold, j = calibration.youden_threshold(positives, negatives)
    return threshold, j, int(has_article.sum()), len(questions)


def halves(run, articles, n):
    names = sorted(articles)
    taus = []
    for seed in range(n):
        kept = np.random.default_rng(seed).choice(names, size=len(names) // 2, replace=False)
        chunks, vectors, topics = run.corpus([articles[t] for t in sorted(kept)], 1000)
        taus.append(calibration.calibrate(chunks, vectors, run.embed, topic_labels=topics).support_threshold)
    return taus


def fmt(value, spec=".3f"):
    return "  -  " if value is None else format(value, spec)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="skip the French/Chinese sets and the random halves")
    parser.add_argument("--smoke", action="store_true",
                        help=f"{SMOKE_ARTICLES} wiki-qa articles, 1 French, one half: " + SMOKE_HELP)
    args = parser.parse_args()
    global N_COPIED, CHUNK_SIZES, N_HALVES
    if args.smoke:
        N_COPIED, CHUNK_SIZES, N_HALVES = 1, (500,), 1
    run = Run()
    articles = read_articles(WIKI_QA / "articles")
    if args.smoke:
        articles = {t: articles[t] for t in shortest(articles, {t: d.text for t, d in articles.items()},
                                                     SMOKE_ARTICLES)}
    shares: dict = {}
    print(HEADER, flush=True)
    scenario(run, "clean", list(articles.values()), 1000, shares)
    copied = sorted(articles, key=lambda t: len(articles[t].text))[:N_COPIED]
    versions = [articles[t] for t in copied] + [edited_copy(articles[t], i) for i, t in enumerate(copied)]
    for size in CHUNK_SIZES:
        scenario(run, f"copies-{size}", versions, size, shares)

    print(f"\nShare of a probe's word n-shingles found in its best other-document chunk (NEAR_COPY_SHARE = "
          f"{calibration.NEAR_COPY_SHARE}); 'twin' = that chunk is of the probe's document's other version:")
    for name, by_size in shares.items():
        for size, (values, twin) in by_size.items():
            parts = [f"{name:<13} n={size}"]
            for label, keep in (("all", np.ones_like(twin)), ("twin", twin), ("other", ~twin)):
                if keep.any():
                    v = values[keep]
                    parts.append(f"{label} ({keep.sum()}): median {np.median(v):.2f} p90 {np.quantile(v, 0.9):.2f} "
                                 f"max {v.max():.2f} >=0.5 {np.mean(v >= 0.5):.0%}")
            print("  " + " | ".join(parts), flush=True)

    threshold, j, n_labelled, n_questions = labelled_default(run, articles)
    print(f"\nModel default (all-MiniLM-L6-v2): labelled Youden threshold {threshold:.3f} (J {j:.3f}) over "
          f"{n_questions} questions ({n_labelled} with an article), {len(articles)} articles, chunks 1000/200",
          flush=True)
    if not args.quick:
        for language in ("fr",) if args.smoke else ("fr", "zh"):
            folder = SHARED_DATA / f"{language}-qa" / "articles"
            documents = read_articles(folder)
            if args.smoke:
                documents = {t: documents[t] for t in shortest(documents, {t: d.text for t, d in documents.items()}, 1)}
            scenario(run, language, list(documents.values()), 1000, shares)
        taus = halves(run, articles, N_HALVES)
        print(f"  calibrated τ on {N_HALVES} random halves of the articles: {', '.join(f'{t:.3f}' for t in taus)}"
              f"; median {np.median(taus):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
