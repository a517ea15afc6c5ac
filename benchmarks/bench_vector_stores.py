"""Reading chunk vectors from a local Qdrant and a local Chroma collection (``--vectors qdrant:…``, ``chroma:…``).

Builds one collection of ``--n`` passages with ``--dim``-dimensional vectors (seeded random vectors, passage
texts of about 800 characters, a source document and a page each) in each store, in a temporary folder, with
the store's own client (qdrant-client's local mode, Chroma's PersistentClient; building is not timed), then
times :func:`coverage_core.inputs.store_connectors.read_vector_source` on each (the median of ``--repeat`` reads) and
checks that every passage came back with its vector. Target: each read ≤ 10 s at 20,000 × 384.

    .venv/bin/python benchmarks/bench_vector_stores.py [--n 20000] [--dim 384] [--repeat 3] [--smoke]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared_data import parse_with_smoke, timed  # noqa: E402

from coverage_core.inputs.store_connectors import read_vector_source  # noqa: E402

TARGET_SECONDS = 10.0
"""Each store's read of 20,000 × 384 vectors must take at most this."""
WRITE_BATCH = 2000
"""Points written per request while building a collection."""
WORDS = "ants colonies forage workers queen nest pheromone trail soil larvae species tropical".split()


def passages(n: int) -> list[dict]:
    """``n`` payloads: a text of about 800 characters, a source document (one per 50 passages) and a page."""
    return [{"text": f"Passage {i}: " + " ".join(WORDS[(i + j) % len(WORDS)] for j in range(110)),
             "source": f"document-{i // 50}.pdf", "page": i % 50 + 1} for i in range(n)]


def build_qdrant(folder: Path, payloads: list[dict], vectors: np.ndarray) -> str:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(folder))
    client.create_collection("bench", vectors_config=models.VectorParams(size=vectors.shape[1],
                                                                         distance=models.Distance.COSINE))
    for start in range(0, len(payloads), WRITE_BATCH):
        end = start + WRITE_BATCH
        client.upload_collection("bench", vectors=vectors[start:end], payload=payloads[start:end],
                                 ids=list(range(start, min(end, len(payloads)))))
    client.close()
    return f"qdrant:{folder}?collection=bench"


def build_chroma(folder: Path, payloads: list[dict], vectors: np.ndarray) -> str:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
    collection = client.create_collection("bench", embedding_function=None)
    for start in range(0, len(payloads), WRITE_BATCH):
        batch = payloads[start:start + WRITE_BATCH]
        collection.add(ids=[str(i) for i in range(start, start + len(batch))], embeddings=vectors[start:start + WRITE_BATCH],
                       documents=[p["text"] for p in batch],
                       metadatas=[{"source": p["source"], "page": p["page"]} for p in batch])
    return f"chroma:{folder}?collection=bench"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000, help="passages per collection")
    parser.add_argument("--dim", type=int, default=384, help="dimensions of each vector")
    parser.add_argument("--repeat", type=int, default=3, help="reads timed per store (the median is printed)")
    args = parse_with_smoke(parser, "500 passages × 384, one read", n=500, repeat=1)
    vectors = np.random.default_rng(0).normal(size=(args.n, args.dim)).astype(np.float32)
    payloads = passages(args.n)
    expected = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    print(f"{args.n:,} passages × {args.dim} dimensions per collection; median of {args.repeat} read(s)")
    failed = []
    with tempfile.TemporaryDirectory() as work:
        for name, build in (("Qdrant", build_qdrant), ("Chroma", build_chroma)):
            address = build(Path(work) / name.lower(), payloads, vectors)
            seconds, found = timed(lambda: read_vector_source(address), args.repeat)
            complete = (len(found.corpus.chunks) == args.n and not found.warnings
                        and np.allclose(found.corpus.vectors, expected, atol=1e-5))
            met = seconds <= TARGET_SECONDS
            print(f"  {name:7s} {seconds:6.2f} s  ({args.n / seconds:,.0f} passages/s; "
                  f"{len(found.corpus.documents)} documents; every passage and vector read back: "
                  f"{'yes' if complete else 'NO'}; target ≤ {TARGET_SECONDS:g} s: {'met' if met else 'NOT met'})")
            if not complete:
                failed.append(name)
    if failed:
        sys.exit(f"{' and '.join(failed)} did not give back every passage with its vector.")


if __name__ == "__main__":
    main()
