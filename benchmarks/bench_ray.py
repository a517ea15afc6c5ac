"""Embedding throughput: one process against Ray Data with 1 and 2 workers.

Embeds the same texts (the wiki-qa articles cut into ~1000-character chunks,
as in ``bench_embedding.py``) three ways, each into an empty temporary cache:
``embed_texts`` with the local embedder in this process (its default: one
forward-pass thread per core), then ``embed_on_ray`` on a local Ray with 1
and with 2 actors (one CPU and one torch thread each). Each figure is the
whole job, model loading and actor start included, since a real run pays
them too; Ray's own start-up is printed apart. Checks that every Ray vector
matches the single-process one (cosine) and asserts nothing about speed.

    .venv/bin/python benchmarks/bench_ray.py [--n 2000] [--cpus 2] [--smoke]

``--smoke``: 8 passages, a local Ray of 1 CPU and 1 worker.

Numbers from a shared machine are noisy; the load average is printed.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from bench_embedding import ARTICLES, wiki_chunks  # noqa: E402
from shared_data import SMOKE_HELP  # noqa: E402


def timed(job):
    """``(result, seconds)`` of ``job()``."""
    started = time.perf_counter()
    result = job()
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="number of ~1000-character chunks (default 2000)")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray (default 2)")
    parser.add_argument("--smoke", action="store_true", help="8 passages, 1 CPU, 1 worker: " + SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.n, args.cpus = 8, 1

    import numpy as np
    import ray

    from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder
    from coverage_core.embeddings.ray_embedding import embed_on_ray

    texts = wiki_chunks(args.n)
    if not texts:
        sys.exit(f"No articles found in {ARTICLES}")
    print(f"texts: {len(texts)} chunks, mean {np.mean([len(t) for t in texts]):.0f} chars; "
          f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at start")

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        single, seconds = timed(lambda: embed_texts(texts, make_embedder("local"), EmbeddingCache(Path(folder) / "single")))
        rows.append(("one process (embed_texts)", seconds, single.n_embedded, 1.0))

        _, ray_start = timed(lambda: ray.init(address="local", num_cpus=args.cpus, include_dashboard=False,
                                              logging_level=logging.ERROR, log_to_driver=False))
        try:
            for workers in (1,) if args.smoke else (1, 2):
                cache = EmbeddingCache(Path(folder) / f"ray-{workers}")
                run, seconds = timed(lambda: embed_on_ray(texts, make_embedder("local"), cache, num_workers=workers))
                cosine = float((run.vectors * single.vectors).sum(axis=1).min())
                rows.append((f"Ray Data, {workers} worker{'s' if workers > 1 else ''}", seconds, run.n_embedded, cosine))
        finally:
            ray.shutdown()

    print()
    print(f"{'how':28s} {'seconds':>8s} {'texts/s':>8s} {'min cosine to one process':>26s}")
    for name, seconds, count, cosine in rows:
        print(f"{name:28s} {seconds:8.1f} {count / seconds:8.2f} {cosine:26.7f}")
    print(f"(starting the local Ray took {ray_start:.1f} s more; load average {os.getloadavg()[0]:.2f} at the end, "
          f"2 cores shared with other work: the figures are noisy)")


if __name__ == "__main__":
    main()
