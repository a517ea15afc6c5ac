"""The analysis after embedding at 20,000, 200,000 and 1,000,000 chunks: time per stage and peak memory.

Targets (2-core machine, vectors given): 1,000,000 chunks x 5,000 questions x
384 dimensions in <= 60 s at <= 6 GB peak RSS (issue 48; 120 s before); 200,000
chunks in <= 15 s (issue 47; 20 s before). Each size runs in a fresh process, so each peak RSS
(``ru_maxrss``) is that size's own; the generated data's loading is timed
but not counted in the analysis total. The CPU time of the process (all
threads) is printed beside the wall time: on a shared machine the wall time
grows with the other processes' load, the CPU time much less.

Data (synthetic, of realistic shape; cached under ``/tmp/bench_scale_data``
keyed by size and seed, so reruns skip generation):

* chunk vectors: unit vectors around 200 topic directions (32 sub-topics
  each, sizes Zipf-like), cosine to their own topic centre about 0.5-0.7 and
  a shared direction giving unrelated texts a cosine near 0.1, as
  all-MiniLM-L6-v2 gives on real text;
* chunk texts: 100-200 words, three quarters drawn Zipf-like from 20,000
  general words, the 100 most frequent of them English's most frequent words
  (so the corpus reads as English, as real English text does), and one
  quarter from the topic's 60 own words (each
  sub-topic favouring different ones), about one word in 14 ends a sentence
  and the next starts with a capital;
* documents: contiguous runs of the topic-sorted chunks, n_chunks / 2,000
  of them within 50-500 (so a document spans one or a few topics);
* questions: 95% near a chunk of 75% of the topics (cosine to it 0.6-0.9;
  the other topics are gaps), words taken from that chunk; 5% off-topic
  (around topics the corpus lacks, with words no chunk has); 30% of the
  on-topic ones name their chunk's document in a ``source`` column (the
  retrieval check at k=5); 3% are near-duplicates of an earlier question.

Everything after embedding is the product's code: ``session.cluster_chunks``,
``calibration.calibrate`` (its embed function returns vectors near the
probe's chunk, so no model runs), the screener fit, ``measure``,
``gap_finding.find_gaps`` (offline suggestions), ``checks.runner.run_retrieval_check``
(k=5), and the JSON report (``report.build_report`` + ``json.dumps``).
Sub-stages inside those calls are timed by wrapping the functions they call.

    .venv/bin/python benchmarks/bench_scale.py [--sizes 20000 200000 1000000] [--questions 5000] [--no-calibrate]
    .venv/bin/python benchmarks/bench_scale.py --float16 --sizes 20000 200000   # float16's effect on the decisions
    .venv/bin/python benchmarks/bench_scale.py --smoke   # 1,000 chunks x 100 questions, and --float16 on them
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # a script: run from anywhere
sys.path.insert(0, str(PROJECT / "benchmarks"))

from shared_data import SMOKE_HELP  # noqa: E402

DATA_ROOT = Path(os.environ.get("BENCH_SCALE_DATA", "/tmp/bench_scale_data"))
DATA_VERSION = 4  # bump when the generator changes, so old cached data is not reused
N_TOPICS = 200
SUBTOPICS = 32
GENERAL_WORDS = 20_000
TOPIC_WORDS = 60
OFF_TOPIC_WORDS = 2_000
TOPIC_WORD_SHARE = 0.25
SENTENCE_END = 1 / 14
COVERED_TOPICS = 0.75
OFF_TOPIC_SHARE = 0.05
LABELLED_SHARE = 0.30
DUPLICATE_SHARE = 0.03
SUPPORT_THRESHOLD = 0.5  # τ when calibration is skipped (--no-calibrate)
TARGETS = {20_000: None, 200_000: 15.0, 1_000_000: 60.0}
"""Seconds for the analysis (loading excluded); the memory target is MEMORY_TARGET_GB at 1M."""
MEMORY_TARGET_GB = 6.0


# --------------------------------------------------------------------------
# generation
# --------------------------------------------------------------------------


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _near(rng, anchors: np.ndarray, cosine: np.ndarray) -> np.ndarray:
    """Unit vectors at about ``cosine`` to the unit ``anchors`` (random directions otherwise)."""
    noise = _unit(rng.standard_normal(anchors.shape, dtype=np.float32))
    cosine = cosine.astype(np.float32)[:, None]
    return _unit(cosine * anchors + np.sqrt(1 - cosine**2) * noise)


# The most frequent general words are English's most frequent words, as in any English text (about half
# its words): without them py3langid read the made-up words as Shona or Croatian, and the analysis took
# the path of a corpus in another language (accents folded, English questions read as foreign).
ENGLISH_COMMON_WORDS = (
    "the of and to a in is it that was for on are as with his they at be this from have or by one had not but "
    "what all were when we there can an your which their said if do will each about how up out them then she "
    "many some so these would other into has more her two like him see time could no make than first been its "
    "who now people my made over did down only way find use may water long little very after words called just "
    "where most know"
).split()


_ONSETS = ("b bl br c ch cl cr d dr f fl fr g gr h j k l m n p pl pr qu r s sh sl sp st str t th tr v w wh").split()
_NUCLEI = ("a e i o u ea ee oo ou ai").split()
_CODAS = ("- n r s t nd nt st ck ng ll rt ss m l").split()
_SUFFIXES = ("- - - - - - - - ing ed er ion ly ness ment able al ity").split()


def _words(rng, count: int, taken: set) -> list[str]:
    """``count`` new made-up words of 1-2 syllables spelt as English spells, none in ``taken``."""
    found = []
    while len(found) < count:
        syllables = [rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS) for _ in range(int(rng.integers(1, 3)))]
        word = ("".join(syllables) + rng.choice(_SUFFIXES)).replace("-", "")
        if len(word) >= 3 and word not in taken:
            taken.add(word)
            found.append(word)
    return found


def _zipf_sampler(rng, size: int, exponent: float = 1.07):
    cdf = np.cumsum(1.0 / np.arange(1, size + 1) ** exponent)
    cdf /= cdf[-1]
    return lambda count: np.minimum(np.searchsorted(cdf, rng.random(count)), size - 1)


def generate(n_chunks: int, n_questions: int, dims: int, seed: int, out: Path) -> None:
    """Write the synthetic data set of this size to ``out`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    common = _unit(rng.standard_normal(dims))
    # Topic centres share a direction: cosine between two topics about 0.1.
    centres = _unit(_unit(rng.standard_normal((N_TOPICS, dims))) + 0.33 * common)
    subs = _near(rng, np.repeat(centres, SUBTOPICS, axis=0), np.full(N_TOPICS * SUBTOPICS, 0.75))

    weights = 1.0 / (rng.permutation(N_TOPICS) + 8.0)
    sizes = rng.multinomial(n_chunks, weights / weights.sum())
    topic = np.repeat(np.arange(N_TOPICS), sizes)
    sub = topic * SUBTOPICS + rng.integers(0, SUBTOPICS, n_chunks)
    vectors = np.empty((n_chunks, dims), dtype=np.float32)
    for start in range(0, n_chunks, 100_000):
        stop = min(start + 100_000, n_chunks)
        vectors[start:stop] = _near(rng, subs[sub[start:stop]], rng.uniform(0.7, 0.9, stop - start))

    n_docs = int(np.clip(n_chunks // 2000, 50, 500))
    cuts = np.sort(rng.choice(np.arange(1, n_chunks), n_docs - 1, replace=False))
    chunk_doc = np.searchsorted(cuts, np.arange(n_chunks), side="right")

    taken: set = set(ENGLISH_COMMON_WORDS)
    general = ENGLISH_COMMON_WORDS + _words(rng, GENERAL_WORDS - len(ENGLISH_COMMON_WORDS), taken)
    topical = _words(rng, N_TOPICS * TOPIC_WORDS, taken)
    off_topic = _words(rng, OFF_TOPIC_WORDS, taken)
    vocabulary = general + topical
    # Each word three times in the blob: "word ", "word. " (id + V) and "Word " (id + 2V),
    # so a sentence end, and the capital that starts the next sentence, are other ids.
    entries = [w + " " for w in vocabulary] + [w + ". " for w in vocabulary] + [w.capitalize() + " " for w in vocabulary]
    blob = np.frombuffer("".join(entries).encode("ascii"), dtype=np.uint8)
    entry_len = np.array([len(e) for e in entries], dtype=np.int64)
    entry_off = np.concatenate([[0], np.cumsum(entry_len)[:-1]])
    n_vocab = len(vocabulary)
    general_sample = _zipf_sampler(rng, GENERAL_WORDS)
    topic_sample = _zipf_sampler(rng, TOPIC_WORDS, 0.9)

    offsets = np.zeros(n_chunks + 1, dtype=np.int64)
    chunk_words = {}  # a few chunks' word ids, for the questions
    question_chunks = _question_chunks(rng, topic, sizes, n_questions)
    wanted = set(question_chunks[question_chunks >= 0].tolist())
    with open(out / "text.bin", "wb") as handle:
        written = 0
        for start in range(0, n_chunks, 20_000):
            stop = min(start + 20_000, n_chunks)
            lengths = rng.integers(100, 201, stop - start)
            total = int(lengths.sum())
            owner = np.repeat(np.arange(start, stop), lengths)
            ids = general_sample(total)
            is_topical = rng.random(total) < TOPIC_WORD_SHARE
            rank = topic_sample(int(is_topical.sum()))
            own_sub = sub[owner[is_topical]] % SUBTOPICS
            ids[is_topical] = GENERAL_WORDS + topic[owner[is_topical]] * TOPIC_WORDS + (rank + 7 * own_sub) % TOPIC_WORDS
            for c in wanted.intersection(range(start, stop)):
                first = int(lengths[: c - start].sum())
                chunk_words[c] = ids[first : first + lengths[c - start]].copy()
            ends = rng.random(total) < SENTENCE_END
            ends[np.cumsum(lengths) - 1] = True  # every chunk ends a sentence
            starts = np.concatenate([[True], ends[:-1]])
            ids = ids + n_vocab * ends + 2 * n_vocab * (starts & ~ends)
            out_len = entry_len[ids]
            out_start = np.concatenate([[0], np.cumsum(out_len)[:-1]])
            gather = np.repeat(entry_off[ids] - out_start, out_len) + np.arange(int(out_len.sum()))
            data = blob[gather]
            word_end = np.cumsum(out_len)
            chunk_end = word_end[np.cumsum(lengths) - 1]
            offsets[start + 1 : stop + 1] = written + chunk_end
            handle.write(data.tobytes())
            written += len(data)
    np.save(out / "vectors.npy", vectors)
    np.save(out / "offsets.npy", offsets)
    np.save(out / "chunk_doc.npy", chunk_doc)
    del vectors

    question_vectors, texts, sources = _questions(
        rng, question_chunks, chunk_words, vocabulary, off_topic, chunk_doc, subs, sub, dims, out
    )
    np.save(out / "question_vectors.npy", question_vectors)
    (out / "questions.json").write_text(json.dumps({"texts": texts, "sources": sources}))
    (out / "done").write_text("ok")


def _question_chunks(rng, topic, sizes, n_questions) -> np.ndarray:
    """The chunk each question is written from; -1 for an off-topic question."""
    covered = rng.permutation(N_TOPICS)[: int(COVERED_TOPICS * N_TOPICS)]
    pool = np.flatnonzero(np.isin(topic, covered))
    chosen = rng.choice(pool, n_questions)
    chosen[rng.random(n_questions) < OFF_TOPIC_SHARE] = -1
    return chosen


def _questions(rng, question_chunks, chunk_words, vocabulary, off_topic, chunk_doc, subs, sub, dims, out):
    m = len(question_chunks)
    vectors = np.empty((m, dims), dtype=np.float32)
    on = question_chunks >= 0
    chunk_vectors = np.load(out / "vectors.npy", mmap_mode="r")
    vectors[on] = _near(rng, np.asarray(chunk_vectors[np.sort(question_chunks[on])])[
        np.argsort(np.argsort(question_chunks[on], kind="stable"), kind="stable")], rng.uniform(0.6, 0.9, on.sum()))
    missing = _near(rng, _unit(rng.standard_normal((20, dims)) + subs.mean(axis=0) * 3), np.full(20, 0.85))
    vectors[~on] = _near(rng, missing[rng.integers(0, 20, (~on).sum())], rng.uniform(0.55, 0.8, (~on).sum()))
    openers = ["What is", "How does", "Why is", "When did", "Which", "Where is", "Who described"]
    texts, sources = [], []
    for j, c in enumerate(question_chunks.tolist()):
        opener = openers[j % len(openers)]
        if c < 0:
            words = [off_topic[i] for i in rng.integers(0, len(off_topic), int(rng.integers(3, 6)))]
            texts.append(f"{opener} the {' '.join(words)}?")
            sources.append("")
            continue
        ids = chunk_words[c]
        topical = ids[ids >= GENERAL_WORDS]
        pick = list(rng.choice(topical, min(len(topical), int(rng.integers(2, 4))), replace=False)) if len(topical) else []
        pick += list(rng.choice(ids, int(rng.integers(2, 5))))
        texts.append(f"{opener} the {' '.join(vocabulary[i] for i in pick)}?")
        sources.append(f"document-{chunk_doc[c]:04d}.txt" if rng.random() < LABELLED_SHARE else "")
    for j in np.flatnonzero(rng.random(m) < DUPLICATE_SHARE):
        if j == 0:
            continue
        original = int(rng.integers(0, j))
        vectors[j] = _near(rng, vectors[original : original + 1], np.array([0.985]))[0]
        texts[j] = "Quick question: " + texts[original]
        sources[j] = sources[original]
    return vectors, texts, sources


def data_dir(n_chunks: int, n_questions: int, dims: int, seed: int) -> Path:
    path = DATA_ROOT / f"v{DATA_VERSION}-c{n_chunks}-q{n_questions}-d{dims}-s{seed}"
    if not (path / "done").exists():
        path.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        generate(n_chunks, n_questions, dims, seed, path)
        print(f"  generated {path} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return path


# --------------------------------------------------------------------------
# the analysis
# --------------------------------------------------------------------------


def load(path: Path):
    from coverage_core.results import Corpus, EmbeddedTexts
    from coverage_core.types import Chunk, Document, Question, QuestionSet

    vectors = np.load(path / "vectors.npy")
    offsets = np.load(path / "offsets.npy")
    chunk_doc = np.load(path / "chunk_doc.npy")
    names = [f"document-{i:04d}.txt" for i in range(int(chunk_doc.max()) + 1)]
    chunks = []
    # Read and decoded 10,000 chunks at a time, so loading never holds the text twice.
    # Document texts are left empty (the analysis reads only the chunks): saves 1 GB at 1M chunks.
    with open(path / "text.bin", "rb") as handle:
        for first in range(0, len(offsets) - 1, 10_000):
            last = min(first + 10_000, len(offsets) - 1)
            base = int(offsets[first])
            handle.seek(base)
            piece = handle.read(int(offsets[last]) - base).decode("ascii")
            for i in range(first, last):
                a, b = int(offsets[i]), int(offsets[i + 1]) - 1  # drop each chunk's trailing space
                chunks.append(Chunk(names[chunk_doc[i]], piece[a - base : b - base], a, b))
    corpus = Corpus([Document(name, "") for name in names], chunks, EmbeddedTexts(vectors, 0, len(chunks), 0))
    saved = json.loads((path / "questions.json").read_text())
    frame = pd.DataFrame({"question": saved["texts"], "source": saved["sources"]})
    questions = QuestionSet(frame, "question", [Question(i, t) for i, t in enumerate(saved["texts"])])
    question_vectors = np.load(path / "question_vectors.npy")
    return corpus, questions, EmbeddedTexts(question_vectors, 0, len(question_vectors), 0)


class StageTimes:
    """Wall time per named stage; wrapping a module function times every call to it."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.order: list[str] = []
        self.peaks: dict[str, float] = {}  # peak RSS (GB) of the process when the stage ended

    def add(self, name: str, seconds: float) -> None:
        if name not in self.seconds:
            self.order.append(name)
        self.seconds[name] += seconds

    def run(self, name: str, function, *args, **kwargs):
        started = time.perf_counter()
        result = function(*args, **kwargs)
        self.add(name, time.perf_counter() - started)
        self.peaks[name] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
        return result

    def wrap(self, module, attribute: str, name: str) -> None:
        original = getattr(module, attribute)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(name, time.perf_counter() - started)

        setattr(module, attribute, timed)


def run_one(n_chunks: int, n_questions: int, dims: int, seed: int, calibrate: bool) -> dict:
    from coverage_core import duplicates, gap_finding, measure as measure_stage, metrics, session
    from coverage_core.checks import retrieval
    from coverage_core.checks.runner import run_retrieval_check
    from coverage_core.config import AnalysisConfig
    from coverage_core.measure import fit_screener, measure
    from coverage_core.offtopic import screener as screening
    from coverage_core.outputs import report
    from coverage_core.stages import calibration, similarity
    from coverage_core.suggest import gaps

    times = StageTimes()
    path = data_dir(n_chunks, n_questions, dims, seed)
    corpus, questions, question_embedding = times.run("load data (not counted)", load, path)
    # Inner stages, timed where they are called from.
    times.wrap(screening, "lexical_coverage", "  screening: lexical coverage")
    times.wrap(screening, "chunk_density", "  screening: chunk density")
    times.wrap(screening, "question_neighbours", "  screening: question neighbours")
    times.wrap(similarity, "scan_similarities", "  measure: similarity scan")
    times.wrap(duplicates, "duplicate_groups", "  measure: duplicates")
    times.wrap(metrics, "document_coverage", "  measure: document table")
    times.wrap(measure_stage, "topic_labels", "  measure: topic names")
    times.wrap(measure_stage, "representatives_by_cluster", "  measure: representative passages")
    times.wrap(gaps, "representative_chunks", "  gaps: representative passages")
    times.wrap(retrieval, "top_k_chunks", "  retrieval: top-k search")

    config = AnalysisConfig()
    # The stand-in for the embedding model is set up before the clock starts: embedding is not timed.
    embed = _probe_embedder(corpus, config.random_state) if calibrate else None
    started = time.perf_counter()
    cpu_started = resource.getrusage(resource.RUSAGE_SELF)
    clustering = times.run("cluster_chunks", session.cluster_chunks, corpus, None, config.random_state)
    if calibrate:
        calibrated = times.run(
            "calibrate", calibration.calibrate, corpus.chunks, corpus.vectors, embed, config.random_state,
            topic_labels=clustering.labels,
        )
    else:
        calibrated = calibration.override(SUPPORT_THRESHOLD)
    # As the session fits it (AnalysisSession.screener): against the automatic topics (here the clustering
    # itself, K being automatic), at the calibration's question level.
    screener = times.run(
        "fit_screener", fit_screener, config, corpus, questions, question_embedding, clustering,
        question_support_threshold=calibrated.question_support_threshold,
    )
    analysis = times.run(
        "measure", measure, config, corpus, questions, question_embedding, clustering,
        screener=screener, calibration=calibrated, topics=clustering.labels,
    )
    analysis = times.run("find_gaps (offline)", gap_finding.find_gaps, analysis)
    checked = times.run("run_retrieval_check (k=5)", run_retrieval_check, analysis, "source", 5)
    built = times.run("build_report", report.build_report, analysis, retrieval=checked)
    text = times.run("json.dumps", json.dumps, built)
    total = time.perf_counter() - started
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    cpu_seconds = (cpu.ru_utime - cpu_started.ru_utime) + (cpu.ru_stime - cpu_started.ru_stime)
    return {
        "cpu_seconds": cpu_seconds,
        "n_chunks": n_chunks,
        "n_questions": n_questions,
        "stages": [(name, times.seconds[name]) for name in times.order],
        "peaks": times.peaks,
        "total": total,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
        "report_mb": len(text) / 1e6,
        "tested_share": analysis.metrics["tested_share"],
        "tau": calibrated.support_threshold,
        "tau_method": calibrated.method,
        "n_outliers": int(analysis.is_outlier.sum()),
        "n_gaps": int(analysis.clusters["is_gap"].sum()),
        "n_clusters": clustering.n_clusters,
        "n_untested_documents": int(analysis.documents["is_untested"].sum()),
        "n_duplicate_groups": analysis.duplicate_groups.n_groups,
        "hit_at_5": checked.hit_at_k if checked is not None else None,
        "gap_names": [gap.label for gap in analysis.gaps[:3]] if analysis.gaps and hasattr(analysis.gaps[0], "label") else [],
    }


def _probe_embedder(corpus, random_state: int):
    """An embed function for the calibration: each probe sentence near its chunk's vector
    (cosine 0.7), each chunk-without-its-sentence nearer (0.95); anything else at random."""
    from coverage_core.stages import calibration

    probes = calibration.sample_probes(corpus.chunks, random_state=random_state)
    where = {}
    for index, sentence, rest in probes:
        where[sentence] = (index, 0.7)
        where[rest] = (index, 0.95)
    rng = np.random.default_rng(random_state)

    def embed(texts):
        found = [where.get(t, (0, 0.0)) for t in texts]
        anchors = corpus.vectors[[i for i, _ in found]]
        return _near(rng, anchors, np.array([c for _, c in found]))

    return embed


def float16_effect(n_chunks: int, n_questions: int, dims: int, seed: int) -> None:
    """Every decision with the vectors stored as float16 (rounded, computed in float32) against float32.

    Same clustering and τ for both, so only the rounding differs.
    """
    import dataclasses

    from coverage_core import session
    from coverage_core.config import AnalysisConfig
    from coverage_core.measure import measure
    from coverage_core.stages import calibration

    corpus, questions, question_embedding = load(data_dir(n_chunks, n_questions, dims, seed))
    config = AnalysisConfig()
    clustering = session.cluster_chunks(corpus, None, config.random_state)
    tau = calibration.override(SUPPORT_THRESHOLD)
    runs = {}
    for name, dtype in (("float32", np.float32), ("float16", np.float16)):
        rounded = dataclasses.replace(corpus, embedded=dataclasses.replace(
            corpus.embedded, vectors=corpus.vectors.astype(dtype).astype(np.float32)))
        asked = dataclasses.replace(question_embedding, vectors=question_embedding.vectors.astype(dtype).astype(np.float32))
        runs[name] = measure(config, rounded, questions, asked, clustering, calibration=tau)
    a, b = runs["float32"], runs["float16"]
    print(f"float16 storage vs float32 at {n_chunks:,} chunks x {n_questions:,} questions (same clusters, τ = {SUPPORT_THRESHOLD}):")
    print(f"  max |difference| of a chunk's best similarity: {np.abs(a.min_distances - b.min_distances).max():.2e}")
    print(f"  tested share: {a.metrics['tested_share']:.6f} vs {b.metrics['tested_share']:.6f}")
    tested_a = 1 - a.min_distances >= SUPPORT_THRESHOLD - 1e-6
    tested_b = 1 - b.min_distances >= SUPPORT_THRESHOLD - 1e-6
    print(f"  chunks whose tested flag changes: {int((tested_a != tested_b).sum()):,} of {n_chunks:,}")
    print(f"  questions whose is_outlier changes: {int((a.is_outlier != b.is_outlier).sum())} of {n_questions:,}")
    gaps = (a.clusters["is_gap"].to_numpy() != b.clusters["is_gap"].to_numpy()).sum()
    print(f"  clusters whose is_gap changes: {int(gaps)} of {clustering.n_clusters}")
    untested = a.documents.set_index("document")["is_untested"] != b.documents.set_index("document")["is_untested"]
    print(f"  documents whose is_untested changes: {int(untested.sum())} of {len(a.documents)}")


# --------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------


def print_table(results: list[dict]) -> None:
    names = []
    for result in results:
        for name, _ in result["stages"]:
            if name not in names:
                names.append(name)
    header = f"{'stage':<40}" + "".join(f"{r['n_chunks']:>14,}" for r in results)
    print(header)
    print("-" * len(header))
    for name in names:
        cells = []
        for r in results:
            value = dict(r["stages"]).get(name)
            cells.append(f"{value:>13.2f}s" if value is not None else f"{'-':>14}")
        print(f"{name:<40}" + "".join(cells))
    print("-" * len(header))
    print("peak RSS (GB) when each stage ended")
    for name in names:
        if any(name in r["peaks"] for r in results):
            print(f"  {name:<38}" + "".join(
                f"{r['peaks'][name]:>14.2f}" if name in r["peaks"] else f"{'-':>14}" for r in results))
    print("-" * len(header))
    print(f"{'analysis total (s)':<40}" + "".join(f"{r['total']:>13.1f}s" for r in results))
    print(f"{'  CPU time, all threads (s)':<40}" + "".join(f"{r['cpu_seconds']:>13.1f}s" for r in results))
    print(f"{'  target (s)':<40}" + "".join(
        f"{TARGETS.get(r['n_chunks']) or '-':>14}" for r in results))
    print(f"{'peak RSS (GB)':<40}" + "".join(f"{r['peak_rss_gb']:>14.2f}" for r in results))
    print(f"{'  target (GB)':<40}" + "".join(
        f"{(MEMORY_TARGET_GB if r['n_chunks'] >= 1_000_000 else '-'):>14}" for r in results))
    print(f"{'report size (MB)':<40}" + "".join(f"{r['report_mb']:>14.2f}" for r in results))
    for key in ("n_questions", "n_clusters", "tau", "tau_method", "tested_share", "n_outliers", "n_gaps", "n_untested_documents",
                "n_duplicate_groups", "hit_at_5"):
        cells = []
        for r in results:
            value = r[key]
            cells.append(f"{value:>14.3f}" if isinstance(value, float) else f"{value!s:>14}")
        print(f"{key:<40}" + "".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000, 1_000_000])
    parser.add_argument("--questions", type=int, default=5_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-calibrate", action="store_true", help=f"use τ = {SUPPORT_THRESHOLD} instead of calibrating")
    parser.add_argument("--float16", action="store_true",
                        help="instead: every decision with float16-rounded vectors against float32, at each size")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # one size, in this process
    parser.add_argument("--smoke", action="store_true",
                        help="1,000 chunks x 100 questions, data in a temporary folder: " + SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:  # the sizes in child processes, then --float16, all on data in a temporary folder
        import tempfile

        global DATA_ROOT
        args.sizes, args.questions = [1_000], 100
        with tempfile.TemporaryDirectory(prefix="bench-scale-smoke-") as folder:
            os.environ["BENCH_SCALE_DATA"] = folder  # the child processes' DATA_ROOT
            DATA_ROOT = Path(folder)
            run_sizes(args)
            float16_effect(args.sizes[0], args.questions, args.dims, args.seed)
        return
    if args.float16:
        for size in args.sizes:
            float16_effect(size, args.questions, args.dims, args.seed)
        return
    if args.one:
        result = run_one(args.one, args.questions, args.dims, args.seed, not args.no_calibrate)
        print("RESULT " + json.dumps(result))
        return
    run_sizes(args)


def run_sizes(args: argparse.Namespace) -> None:
    """Each size in a fresh process, then the table."""
    results = []
    for size in args.sizes:
        command = [sys.executable, __file__, "--one", str(size), "--questions", str(args.questions),
                   "--dims", str(args.dims), "--seed", str(args.seed)] + (["--no-calibrate"] if args.no_calibrate else [])
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        sys.stderr.write(done.stderr)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if done.returncode or not lines:
            sys.exit(f"The run at {size:,} chunks failed (exit code {done.returncode}); its messages are above.")
        results.append(json.loads(lines[-1][len("RESULT "):]))
        print(f"{size:,} chunks: {results[-1]['total']:.1f} s, peak {results[-1]['peak_rss_gb']:.2f} GB", file=sys.stderr)
    print_table(results)


if __name__ == "__main__":
    main()
