"""Report size, peak memory and time of ``analyze`` on near-duplicate question sets.

A tester's 50,000 near-duplicate questions once gave a 510 MB report at 8.3 GB
peak memory. This script builds such question sets and runs the real command
line on them, one fresh process per size. Targets at 50,000 questions: report
<= 50 MB, peak RSS <= 4 GB.

Data. The corpus is the bundled example (``examples/wiki-qa/docs``, real
chunks). The questions are the example's 185 questions, each asked in small
wording variants ("Quick question: …", "… exactly?", …) until there are N,
in shuffled order; one variant in 100 repeats its base question exactly (the
reader's exact repeats). Every other column of the example (source, label …)
is kept, so the retrieval and answerability checks run as well.

Vectors. Embedding 50,000 texts with the local model would take 10+ minutes
on 2 cores, so only the chunks and the 185 base questions are embedded (real
local model, through the embedding cache of ``--cache-dir``); each variant's
vector is synthesised next to its base question's vector (cosine to it
uniform in [0.965, 0.995], so variants of one base are 0.93–0.99 similar to
each other: many pairs above the 0.95 near-duplicate threshold, some below).
All vectors go into a fresh embedding cache, under the local model's key, so
the command line finds every text cached and never loads the model.
Everything after embedding is the real code path: reading, chunking, the
cache lookup, clustering, screening, metrics, gaps, the retrieval and
answerability checks, report building and writing, JUnit XML and the summary.

Peak RSS is the command's own maximum (``os.wait4``, taken by a small
launcher process, see ``_MEASURE``); the time is its wall time, Python
start-up included.

    .venv/bin/python benchmarks/bench_report_scale.py [--sizes 5000 50000] [--keep DIR] [--checkout DIR] [--smoke]

``--smoke``: two of the example's articles and their questions, 300 questions, no questions suggested for
the gaps, the support level fixed (no calibration).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared_data import PROJECT, SMOKE_HELP  # noqa: E402

sys.path.insert(0, str(PROJECT))  # a script: run from anywhere

from coverage_core.embeddings import CacheKey, EmbeddingCache, embed_texts, make_embedder, text_hash  # noqa: E402
from coverage_core.inputs.ingest import read_documents  # noqa: E402
from coverage_core.inputs.questions import read_questions  # noqa: E402
from coverage_core.stages.chunking import ChunkingConfig, chunk_documents  # noqa: E402

EXAMPLE = PROJECT / "examples" / "wiki-qa"
DOCS = [EXAMPLE / "docs"]
"""What the command line reads (``--smoke``: two articles)."""
SMOKE_DOCUMENTS = ("Alessandro_Volta.txt", "Amedeo_Avogadro.txt")
CLI_OPTIONS: list[str] = []
"""More options for the command line (``--smoke``: no suggested questions, no calibration)."""
PREFIXES = ("", "Quick question: ", "Tell me: ", "Please answer: ", "I wonder: ", "Can you say: ",
            "Briefly: ", "In short: ", "Honestly: ", "So: ", "Test: ", "One more: ")
SUFFIXES = ("", " exactly", " please", ", do you know", " then", " in fact", " again", " at all")
ENDINGS = ("?", "??", " ?")
# Cosine of a variant to its base question.
SIMILARITY_RANGE = (0.965, 0.995)
EXACT_REPEAT_EVERY = 100


def variant(text: str, k: int) -> str:
    """The k-th wording variant of a question (k = 0 is the question itself)."""
    stem = text.rstrip("?").rstrip()
    prefix = PREFIXES[k % len(PREFIXES)]
    suffix = SUFFIXES[(k // len(PREFIXES)) % len(SUFFIXES)]
    ending = ENDINGS[(k // (len(PREFIXES) * len(SUFFIXES))) % len(ENDINGS)]
    if prefix:
        stem = stem[:1].lower() + stem[1:]
    return f"{prefix}{stem}{suffix}{ending}"


def near(base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors at a cosine drawn from SIMILARITY_RANGE to each row of ``base`` (unit rows)."""
    noise = rng.standard_normal(base.shape).astype(np.float32)
    noise -= (noise * base).sum(axis=1, keepdims=True) * base  # orthogonal to the base
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    cosine = rng.uniform(*SIMILARITY_RANGE, size=(len(base), 1)).astype(np.float32)
    return cosine * base + np.sqrt(1 - cosine**2) * noise


def build_inputs(n: int, work: Path, base_cache: EmbeddingCache, seed: int = 0) -> tuple[Path, Path]:
    """The question CSV and a fully filled embedding cache for ``n`` questions; returns (csv, cache dir)."""
    rng = np.random.default_rng(seed)
    embedder = make_embedder("local")
    documents = read_documents(DOCS).documents
    chunk_texts = [chunk.text for chunk in chunk_documents(documents, ChunkingConfig())]
    questions = read_questions(EXAMPLE / "questions.csv")
    frame = questions.frame
    column = questions.question_column
    if DOCS != [EXAMPLE / "docs"]:  # only the questions of the documents read
        frame = frame[frame["source"].isin([d.name for d in documents])]
    bases = frame[frame[column].str.strip() != ""].drop_duplicates(column).reset_index(drop=True)
    base_texts = bases[column].str.strip().tolist()
    # Real vectors for what the model would really see.
    chunks_run = embed_texts(chunk_texts, embedder, base_cache)
    base_run = embed_texts(base_texts, embedder, base_cache)

    picks = np.arange(n) % len(bases)
    counts = np.zeros(len(bases), dtype=int)
    texts = []
    for b in picks:
        k = counts[b]
        counts[b] += 1
        texts.append(base_texts[b] if k % EXACT_REPEAT_EVERY == 0 else variant(base_texts[b], k))
    vectors = near(base_run.vectors[picks], rng)
    # A text identical to its base (exact repeats, variant 0) has the base's vector.
    same = np.array([t == base_texts[b] for t, b in zip(texts, picks)])
    vectors[same] = base_run.vectors[picks[same]]
    tokens = base_run.token_counts[picks] + np.where(same, 0, 3)  # a prefix or suffix is a few tokens

    table = bases.iloc[picks].reset_index(drop=True)
    table[column] = texts
    order = rng.permutation(n)
    table = table.iloc[order].reset_index(drop=True)
    csv_path = work / f"questions-{n}.csv"
    table.to_csv(csv_path, index=False)

    cache_dir = work / f"cache-{n}"
    cache = EmbeddingCache(cache_dir)
    key = CacheKey.of(embedder)
    cache.put_many(key, zip(map(text_hash, chunk_texts), chunks_run.vectors, chunks_run.token_counts))
    seen: dict[str, int] = {}
    for i, text in enumerate(texts):
        seen.setdefault(text, i)
    cache.put_many(key, ((text_hash(t), vectors[i], tokens[i]) for t, i in seen.items()))
    return csv_path, cache_dir


# Starts the command from a small process and writes its peak RSS. Linux counts
# in a child's maximum RSS the memory of the process it was forked from (up to
# exec), so a child forked from this script, which may hold the model and 50,000
# vectors, would report this script's size instead of its own.
_MEASURE = (
    "import json, os, subprocess, sys\n"
    "process = subprocess.Popen(sys.argv[2:])\n"
    "_, status, usage = os.wait4(process.pid, 0)\n"
    "open(sys.argv[1], 'w').write(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss]))\n"
)


def run_cli(csv_path: Path, cache_dir: Path, out: Path, checkout: Path = PROJECT) -> dict:
    """One fresh CLI process of ``checkout``'s coverage_core: wall time, peak RSS and exit code."""
    command = [sys.executable, "-m", "coverage_core", "analyze", "--docs", *map(str, DOCS),
               "--questions", str(csv_path), "--out", str(out), "--junit", str(out.with_suffix(".xml")),
               "--cache-dir", str(cache_dir), "--quiet", *CLI_OPTIONS]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    measured = out.with_suffix(".rss.json")
    with open(out.with_suffix(".log"), "wb") as log:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", _MEASURE, str(measured), *command],
                       cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
        seconds = time.perf_counter() - started
    exit_code, peak_kb = json.loads(measured.read_text())
    return {"seconds": seconds, "peak_mb": peak_kb / 1024, "exit": exit_code}


def section_sizes(report: dict) -> dict[str, int]:
    """Bytes of each top-level section, written as the report writes it."""
    return {key: len(json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8")) for key, value in report.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 50_000])
    parser.add_argument("--cache-dir", help="embedding cache for the real chunk and base-question vectors "
                        "(default: the command line's default cache)")
    parser.add_argument("--keep", help="keep the generated CSVs, caches and reports in this folder")
    parser.add_argument("--checkout", type=Path, default=PROJECT,
                        help="run the CLI of another copy of the project (e.g. `git archive HEAD` unpacked), "
                        "to compare before and after")
    parser.add_argument("--smoke", action="store_true", help=f"{', '.join(SMOKE_DOCUMENTS)}, 300 questions: "
                        + SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        global DOCS, CLI_OPTIONS
        DOCS, args.sizes = [EXAMPLE / "docs" / name for name in SMOKE_DOCUMENTS], [300]
        CLI_OPTIONS = ["--suggest", "0", "--support-threshold", "0.5"]  # every text cached: no model loaded
    base_cache = EmbeddingCache(args.cache_dir)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.keep or scratch)
        work.mkdir(parents=True, exist_ok=True)
        print("analyze on near-duplicate question sets (wiki-qa example docs; variant vectors synthesised "
              "near real base-question vectors, fed through the embedding cache; everything after "
              "embedding is the real CLI path)")
        for n in args.sizes:
            csv_path, cache_dir = build_inputs(n, work, base_cache)
            out = work / f"report-{n}.json"
            found = run_cli(csv_path, cache_dir, out, args.checkout)
            if found["exit"] not in (0, 1):
                print(f"  {n:>7,} questions: the CLI failed (exit {found['exit']}); see {out.with_suffix('.log')}")
                if args.smoke:
                    sys.exit(out.with_suffix(".log").read_text(errors="replace"))
                continue
            size = out.stat().st_size
            report = json.loads(out.read_text(encoding="utf-8"))
            groups = report.get("duplicate_groups") or {}
            biggest = max((len(g["rows"]) for g in groups.get("groups", [])), default=0)
            print(
                f"  {n:>7,} questions: report {size / 1e6:8.1f} MB ({size / n:,.0f} B/question), "
                f"peak RSS {found['peak_mb']:7,.0f} MB, {found['seconds']:7.1f} s"
            )
            if groups:
                print(f"           {groups['n_groups']:,} duplicate groups holding {groups['n_questions']:,} "
                      f"questions (largest {biggest:,})")
            elif "redundant_pairs" in report:
                print(f"           {len(report['redundant_pairs']):,} redundant pairs")
            largest = sorted(section_sizes(report).items(), key=lambda item: -item[1])[:4]
            print("           largest sections: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in largest))
        print("targets at 50,000 questions: report <= 50 MB, peak RSS <= 4,096 MB (2 shared cores: times are noisy)")


if __name__ == "__main__":
    main()
