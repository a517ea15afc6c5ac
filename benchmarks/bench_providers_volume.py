"""Paid providers at volume: 100k chunk-sized texts through the real openai client
against the loopback fake API, one request at a time vs. up to 4 in flight.

The fake server answers each request after `--latency` seconds plus 1 ms per
1,000 texts, a stand-in for a provider's compute time. Prints requests, wall
time, texts per second, the cost-estimate time and the re-run time (all cached).
Run from the repository root:
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_providers_volume.py --texts 100000
``--smoke``: 3,000 texts, 10 ms latency.
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared_data import parse_with_smoke  # noqa: E402

from coverage_core import costs  # noqa: E402
from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder  # noqa: E402
from coverage_core.embeddings.cache import uncached_texts  # noqa: E402
from tests.fakes import FakeAPIServer  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--texts", type=int, default=100_000)
parser.add_argument("--latency", type=float, default=0.3)
args = parse_with_smoke(parser, "3,000 texts, 10 ms latency", texts=3_000, latency=0.01)

words = "the coverage of a knowledge base by test questions depends on chunking and topics".split()
texts = [f"chunk {i}: " + " ".join(words[(i + j) % len(words)] for j in range(150)) for i in range(args.texts)]
print(f"{len(texts):,} texts, ~{costs.approximate_tokens(texts) / len(texts):.0f} tokens each; server latency {args.latency} s/request")

for concurrency in (1, 4):
    with FakeAPIServer() as server, tempfile.TemporaryDirectory() as folder:
        server.embedding_delay = lambda request: args.latency + len(request.body["input"]) / 1_000_000
        embedder = make_embedder("openai", api_key="sk-bench", base_url=server.url + "/v1",
                                 batch_size=2048, max_concurrency=concurrency)
        cache = EmbeddingCache(folder)
        started = time.perf_counter()
        unsent = uncached_texts(texts, embedder, cache)
        estimate = costs.estimate_embedding_cost(costs.approximate_tokens(unsent), "openai", embedder.model,
                                                 costs.default_price_table())
        estimated = time.perf_counter() - started
        started = time.perf_counter()
        run = embed_texts(texts, embedder, cache)
        took = time.perf_counter() - started
        started = time.perf_counter()
        again = embed_texts(texts, embedder, EmbeddingCache(folder))
        rerun = time.perf_counter() - started
        sizes = [len(r.body["input"]) for r in server.requests]
        print(f"max_concurrency={concurrency}: estimate {estimated:.2f} s ({estimate.input_tokens:,} tokens); "
              f"{len(server.requests)} requests of {min(sizes)}-{max(sizes)} texts, peak {server.peak_in_flight} "
              f"in flight; {took:.1f} s, {run.n_embedded / took:,.0f} texts/s; re-run {rerun:.1f} s, "
              f"{again.n_cached:,} cached, {len(server.requests) - len(sizes)} new requests")
