"""Time clustering, topic names, gaps and the 2-D map at up to a million chunks.

The stages of the analysis this script owns, after embedding, on synthetic
data shaped like a real knowledge base:

* vectors: unit vectors in 384 dimensions around ~200 topic directions
  (two chunks of one topic have cosine ~0.5-0.7, of two topics ~0.1);
* texts: 100-200 words per chunk in sentences, words Zipf-drawn from a
  common vocabulary (English stop words most frequent) and from the
  chunk's topic's own words;
* 50-500 documents, each mostly about one or two topics, chunks in order;
* 5,000 questions about two thirds of the topics (so there are gaps).

The data of each size is generated once and cached under
``/tmp/coverage_bench_scale_topics`` (1M chunks: ~2.5 GB, ~1-2 minutes the
first time, including each chunk's distance to its nearest question, which
the similarity stage computes in a real run and is not timed here). Each
size runs in its own process so peak memory figures do not mix.

Timed, as the session calls them: ``session.cluster_chunks`` (default K;
its inertia and the cosine silhouette of a 10,000-chunk sample are
printed too), the dashboard's "change K" (``cluster_chunks`` with K 10
lower, then naming those topics; stage ``changek``),
the cluster table's topic labels (``topics.topic_labels``) and
representative passages (cluster by cluster as ``measure._cluster_table``
does today, and in one pass with ``passages.representatives_by_cluster``),
``gaps.analyze_gaps`` (offline suggestions, as
``gap_finding.find_gaps`` calls it) and ``projection.project_2d`` (t-SNE, the
dashboard's default map). "peak" is the process's resident-set high-water
mark during that stage (reset before each stage), "+peak" that minus the
resident size before it.

    .venv/bin/python benchmarks/bench_scale_topics.py [--sizes 20000 200000 1000000]
        [--questions 5000] [--seed 0] [--stages cluster topics changek gaps map]
    .venv/bin/python benchmarks/bench_scale_topics.py --smoke   # 1,000 chunks x 100 questions, every stage
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "benchmarks"))

from shared_data import SMOKE_HELP  # noqa: E402

CACHE_ROOT = Path(os.environ.get("BENCH_SCALE_TOPICS_DATA", "/tmp/coverage_bench_scale_topics"))
DIMS = 384
N_TOPICS = 200
# Targets at 1M chunks (seconds) for this script's stages; the whole analysis
# after embedding must take <= 120 s at <= 6 GB (benchmarks/bench_scale.py).
# "passages" (the cluster table's representative passages) has no target of
# its own in issue 11; 5 s is this script's budget for it.
TARGETS_1M = {"cluster": 25.0, "topics": 5.0, "passages": 5.0, "gaps": 5.0, "map": 10.0, "change K": 10.0}
CHANGE_K_TARGET_200K = 2.0
"""The dashboard's "change K" at 200,000 chunks must take <= 3 s; clustering
with the new K and naming its topics get <= 2 s of it (issue 11)."""
PEAK_TARGET_MB = 6 * 1024
STAGES = ("cluster", "topics", "changek", "gaps", "map")
SILHOUETTE_SAMPLE = 10_000

_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["an", "el", "in", "or", "us"]


# --------------------------------------------------------------------------
# synthetic data
# --------------------------------------------------------------------------


def _pseudo_words(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct pronounceable lowercase words of 2-4 syllables."""
    words: dict[str, None] = {}
    syllables = np.array(_SYLLABLES)
    while len(words) < n:
        lengths = rng.integers(2, 5, 2 * n)
        picks = rng.integers(0, len(syllables), (2 * n, 4))
        for length, row in zip(lengths, picks):
            words["".join(syllables[row[:length]])] = None
            if len(words) == n:
                break
    return list(words)


def _zipf_ranks(rng: np.random.Generator, exponent: float, n_words: int, size: int) -> np.ndarray:
    return (rng.zipf(exponent, size) - 1) % n_words


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def generate(n_chunks: int, n_questions: int, seed: int, folder: Path) -> None:
    """Write vectors, texts, documents, questions and nearest-question distances of one size to ``folder``."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from coverage_core.metrics import nearest_question_distances

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)

    # Documents of uneven length, each mostly about one topic, partly a second.
    n_documents = int(np.clip(n_chunks // 2000, 50, 500))
    sizes = rng.lognormal(0.0, 0.8, n_documents)
    sizes = np.maximum(1, np.round(sizes / sizes.sum() * n_chunks)).astype(np.int64)
    sizes[-1] += n_chunks - sizes.sum()
    if sizes[-1] < 1:  # rounding took too much from the last one
        sizes = np.full(n_documents, n_chunks // n_documents)
        sizes[: n_chunks - sizes.sum()] += 1
    document = np.repeat(np.arange(n_documents), sizes)
    topic_popularity = rng.dirichlet(np.full(N_TOPICS, 0.8))
    primary = rng.choice(N_TOPICS, n_documents, p=topic_popularity)
    secondary = rng.choice(N_TOPICS, n_documents, p=topic_popularity)
    draw = rng.random(n_chunks)
    chunk_topic = np.where(draw < 0.7, primary[document], secondary[document])
    stray = draw > 0.95
    chunk_topic[stray] = rng.integers(0, N_TOPICS, int(stray.sum()))

    # Vectors: a shared direction (all text has something in common), topic
    # directions, and per-chunk noise; within-topic cosine a_t in [0.5, 0.7].
    shared = _unit(rng.standard_normal((1, DIMS)))
    topic_dirs = _unit(0.3 * shared + _unit(rng.standard_normal((N_TOPICS, DIMS))))
    tightness = rng.uniform(0.5, 0.7, N_TOPICS)
    vectors = np.lib.format.open_memmap(folder / "vectors.npy", "w+", np.float32, (n_chunks, DIMS))
    for start in range(0, n_chunks, 100_000):
        topics = chunk_topic[start : start + 100_000]
        noise = _unit(rng.standard_normal((len(topics), DIMS)))
        a = tightness[topics][:, None]
        vectors[start : start + len(topics)] = _unit(np.sqrt(a) * topic_dirs[topics] + np.sqrt(1 - a) * noise)
    vectors.flush()

    # Questions about two thirds of the topics; question-passage cosine ~0.4-0.6.
    asked = rng.choice(N_TOPICS, 2 * N_TOPICS // 3, replace=False)
    question_topic = rng.choice(asked, n_questions)
    b = rng.uniform(0.35, 0.6, (n_questions, 1))
    questions = _unit(
        np.sqrt(b) * topic_dirs[question_topic] + np.sqrt(1 - b) * _unit(rng.standard_normal((n_questions, DIMS)))
    ).astype(np.float32)
    np.save(folder / "questions.npy", questions)
    min_distances, _ = nearest_question_distances(vectors, questions)
    np.save(folder / "min_distances.npy", min_distances.astype(np.float64))

    # Texts: stop words are the most frequent common words, as in English.
    n_common, n_specific = 5000, 400
    stop = sorted(ENGLISH_STOP_WORDS)
    rng.shuffle(stop)
    invented = _pseudo_words(rng, n_common - len(stop) + N_TOPICS * n_specific)
    common = stop + invented[: n_common - len(stop)]
    rng.shuffle(common[len(stop) :])
    specific = invented[n_common - len(stop) :]
    vocabulary = common + specific  # word id: common 0..4999, topic t's words after
    plain = np.array(vocabulary, dtype=object)
    # Variants: plain, Capitalised (starts a sentence), "word." (ends it), both.
    forms = np.array(
        [*plain, *(w.capitalize() for w in plain), *(w + "." for w in plain), *(w.capitalize() + "." for w in plain),
         "\x00"],
        dtype=object,
    )
    n_vocab, separator = len(plain), 4 * len(plain)
    with open(folder / "texts.txt", "w", encoding="ascii") as out:
        for start in range(0, n_chunks, 50_000):
            topics = chunk_topic[start : start + 50_000]
            lengths = rng.integers(100, 201, len(topics))
            owner = np.repeat(np.arange(len(topics)), lengths)
            total = int(lengths.sum())
            from_topic = rng.random(total) < 0.35
            words = np.where(
                from_topic,
                n_common + topics[owner] * n_specific + _zipf_ranks(rng, 1.2, n_specific, total),
                _zipf_ranks(rng, 1.1, n_common, total),
            )
            last = np.cumsum(lengths) - 1
            ends = rng.random(total) < 1 / 15
            ends[last] = True
            starts = np.roll(ends, 1)
            starts[0] = True
            variant = starts.astype(np.int64) + 2 * ends.astype(np.int64)
            tokens = words + variant * n_vocab
            tokens = np.insert(tokens, last + 1, separator)
            out.write(" ".join(forms[tokens]).replace(" \x00 ", "\x00").rstrip(" \x00") + "\x00")

    np.save(folder / "chunk_document.npy", document.astype(np.int32))
    np.save(folder / "chunk_topic.npy", chunk_topic.astype(np.int32))
    (folder / "done").write_text("ok")


def load(n_chunks: int, n_questions: int, seed: int):
    """``(vectors, texts, documents, questions, min_distances)`` of one size, generated on first use."""
    folder = CACHE_ROOT / f"n{n_chunks}_q{n_questions}_s{seed}"
    if not (folder / "done").exists():
        started = time.perf_counter()
        print(f"  generating {n_chunks:,} chunks into {folder} (once) ...", flush=True)
        generate(n_chunks, n_questions, seed, folder)
        print(f"  generated in {time.perf_counter() - started:.0f} s", flush=True)
    vectors = np.load(folder / "vectors.npy")
    texts = (folder / "texts.txt").read_text(encoding="ascii").split("\x00")[:n_chunks]
    document = np.load(folder / "chunk_document.npy")
    names = [f"doc{d:03d}.txt" for d in range(int(document.max()) + 1)]
    documents = [names[d] for d in document.tolist()]
    questions = np.load(folder / "questions.npy")
    min_distances = np.load(folder / "min_distances.npy")
    assert len(texts) == n_chunks == len(vectors)
    return vectors, texts, documents, questions, min_distances


# --------------------------------------------------------------------------
# measuring
# --------------------------------------------------------------------------


def _rss_mb(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    # Writing 5 to clear_refs resets VmHWM (Linux >= 4.0), so each stage gets its own peak.
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        pass


def run_size(n_chunks: int, n_questions: int, seed: int, stages: list[str]) -> list[dict]:
    from coverage_core import metrics
    from coverage_core.projection import project_2d
    from coverage_core.results import Corpus, EmbeddedTexts
    from coverage_core.session import cluster_chunks
    from coverage_core.stages.calibration import DEFAULT_SUPPORT_THRESHOLD
    from coverage_core.stages.topics import topic_labels
    from coverage_core.suggest.gaps import GapConfig, analyze_gaps
    from coverage_core.suggest.passages import representative_chunks, representatives_by_cluster
    from coverage_core.types import Chunk, Document

    vectors, texts, documents, questions, min_distances = load(n_chunks, n_questions, seed)
    chunks = [Chunk(name, text, 0, len(text)) for name, text in zip(documents, texts)]
    corpus = Corpus(
        documents=[Document(name, "") for name in dict.fromkeys(documents)],
        chunks=chunks,
        embedded=EmbeddedTexts(vectors, 0, n_chunks, 0),
    )
    rows: list[dict] = []

    def timed(stage: str, what: str, work):
        _reset_peak()
        before = _rss_mb("VmRSS")
        started, cpu_started = time.perf_counter(), time.process_time()
        result = work()
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        peak = _rss_mb("VmHWM")
        rows.append({"stage": stage, "what": what, "seconds": seconds, "cpu": cpu, "peak": peak, "added": peak - before})
        return result

    def quality(labels) -> str:
        """Inertia of the unit rows around their cluster means, and a sample's cosine silhouette."""
        from scipy import sparse
        from sklearn.metrics import silhouette_score

        counts = np.bincount(labels)
        membership = sparse.csr_matrix((np.ones(n_chunks), (labels, np.arange(n_chunks))), shape=(len(counts), n_chunks))
        sums = np.asarray(membership @ vectors, dtype=np.float64)
        inertia = float(np.einsum("ij,ij->", vectors, vectors, dtype=np.float64)) - float(
            (np.einsum("ij,ij->i", sums, sums) / np.maximum(counts, 1)).sum()
        )
        sample = np.random.default_rng(seed).choice(n_chunks, min(SILHOUETTE_SAMPLE, n_chunks), replace=False)
        silhouette = silhouette_score(vectors[sample], labels[sample], metric="cosine")
        return f"inertia {inertia:,.1f}, silhouette {silhouette:.4f}"

    clustering = timed("cluster", "session.cluster_chunks (default K)", lambda: cluster_chunks(corpus, None, seed))
    labels, centroids, k = clustering.labels, clustering.centroids, clustering.n_clusters
    rows[-1]["what"] += f": K {k}, {quality(labels)}"
    if "changek" in stages:
        other_k = max(k - 10, 2)
        changed = timed("change K", f"session.cluster_chunks (K {other_k})", lambda: cluster_chunks(corpus, other_k, seed))
        rows[-1]["what"] += f": {quality(changed.labels)}"
        changed_texts = [chunk.text for chunk in corpus.chunks]
        timed(
            "change K", f"topics.topic_labels of those {other_k} topics",
            lambda: topic_labels(changed_texts, changed.labels, changed.n_clusters),
        )
    if "topics" in stages or "gaps" in stages:
        chunk_texts = [chunk.text for chunk in corpus.chunks]
        timed("topics", "topics.topic_labels (c-TF-IDF)", lambda: topic_labels(chunk_texts, labels, k))
        per_cluster = timed(
            "passages", "passages.representative_chunks, 3 per cluster, cluster by cluster (as before)",
            lambda: [representative_chunks(vectors, labels, centroids, c, 3) for c in range(k)],
        )
        one_pass = timed(
            "passages", "passages.representatives_by_cluster, 3 per cluster, one pass (what the pipeline uses)",
            lambda: representatives_by_cluster(vectors, labels, centroids, 3),
        )
        assert all(np.array_equal(a, b) for a, b in zip(per_cluster, one_pass))
    if "gaps" in stages:
        coverage = metrics.cluster_coverages(min_distances, labels, k)
        _, tested_share = metrics.cluster_tested(min_distances, labels, k, DEFAULT_SUPPORT_THRESHOLD)
        is_gap = tested_share < GapConfig().tested_share_threshold
        question_texts = [f"What is {texts[i].split()[0].lower()}?" for i in range(n_questions)]
        gaps, _ = timed(
            "gaps", f"gaps.analyze_gaps ({int(is_gap.sum())} gaps, offline)",
            lambda: analyze_gaps(
                chunk_texts, corpus.chunk_documents, vectors, labels, centroids, min_distances, coverage,
                question_texts, GapConfig(), is_gap=is_gap,
            ),
        )
        assert all(gap.suggestions for gap in gaps)
    if "map" in stages:
        projection = timed(
            "map", "projection.project_2d (t-SNE)",
            lambda: project_2d(vectors, questions, labels, method="tsne", random_state=seed),
        )
        rows[-1]["what"] += f": {projection.caption}"
    for row in rows:
        row.update(n=n_chunks, k=k)
    return rows


def _print_table(rows: list[dict]) -> None:
    """One line per timed step; each stage's total against its 1M target."""
    print(f"\n{'chunks':>9} {'K':>3}  {'stage':<8} {'step s':>7} {'cpu s':>6} {'stage s':>8} {'1M target':>14} "
          f"{'peak MB':>8} {'+peak MB':>9}  step")
    for row in rows:
        # The two "passages" rows are alternatives, not parts: each is its own total.
        same = [r for r in rows if r["n"] == row["n"] and r["stage"] == row["stage"]]
        if row["stage"] == "passages":
            same = [row]
        stage_total, target = "", ""
        if row is same[0]:
            seconds = sum(r["seconds"] for r in same)
            stage_total = f"{seconds:.2f}"
            target = f"<= {TARGETS_1M[row['stage']]:.0f} s"
            if row["n"] >= 1_000_000:
                target += " ok" if seconds <= TARGETS_1M[row["stage"]] else " OVER"
            elif row["stage"] == "change K" and row["n"] == 200_000:
                target = f"200k <= {CHANGE_K_TARGET_200K:.0f} s" + (" ok" if seconds <= CHANGE_K_TARGET_200K else " OVER")
        print(
            f"{row['n']:>9,} {row['k']:>3}  {row['stage']:<8} {row['seconds']:>7.2f} {row['cpu']:>6.2f} {stage_total:>8} {target:>14} "
            f"{row['peak']:>8,.0f} {row['added']:>9,.0f}  {row['what']}"
        )
    print(
        f"\nThe targets are for 1,000,000 chunks; the whole analysis after embedding (not only these stages) "
        f"must fit in {PEAK_TARGET_MB:,} MB peak, 120 s at 1M and 20 s at 200k. Timings on a shared 2-core "
        "machine are noisy: compare them with the load average printed above."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000, 1_000_000])
    parser.add_argument("--questions", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    parser.add_argument("--json", help=argparse.SUPPRESS)  # one size, rows to this file (child process)
    parser.add_argument("--smoke", action="store_true",
                        help="1,000 chunks x 100 questions, data in a temporary folder: " + SMOKE_HELP)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.smoke:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="bench-scale-topics-smoke-") as folder:
            os.environ["BENCH_SCALE_TOPICS_DATA"] = folder  # the child process's CACHE_ROOT
            command = [sys.executable, __file__, "--sizes", "1000", "--questions", "100", "--seed", str(args.seed),
                       "--stages", *args.stages]
            sys.exit(subprocess.run(command, check=False).returncode)

    if args.json:
        import json

        rows = run_size(args.sizes[0], args.questions, args.seed, args.stages)
        Path(args.json).write_text(json.dumps(rows))
        return
    import json
    import tempfile

    all_rows: list[dict] = []
    for size in args.sizes:
        print(f"{size:,} chunks x {args.questions:,} questions x {DIMS} dims "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)", flush=True)
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            command = [sys.executable, __file__, "--sizes", str(size), "--questions", str(args.questions),
                       "--seed", str(args.seed), "--stages", *args.stages, "--json", out.name]
            subprocess.run(command, check=True)
            rows = json.loads(Path(out.name).read_text())
        for row in rows:
            print(f"  {row['stage']:<8} {row['seconds']:7.2f} s  cpu {row['cpu']:6.2f} s  peak {row['peak']:,.0f} MB  {row['what']}", flush=True)
        all_rows += rows
    _print_table(all_rows)


if __name__ == "__main__":
    main()
