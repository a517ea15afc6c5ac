"""Local embedding speed: our LocalEmbedder against plain fp32 encode.

For the same texts in the same run this prints plain fp32
``SentenceTransformer.encode`` chunks/s, our local embedder's chunks/s, the
speed ratio, the minimum cosine between our vectors and the fp32 ones, and
which precision path ran and why. It asserts nothing about speed.

The texts are the wiki-qa articles cut into ~1000-character chunks (at a
word boundary). Both sides embed exactly the same texts, no cache, no
de-duplication; the two sides alternate slice by slice so background load
hits both alike. Wall-clock and CPU-time rates are both printed: on a busy
machine the CPU-time figure is the steadier one.

    .venv/bin/python benchmarks/bench_embedding.py [--n 400] [--rounds 2]

``--models local,use,e5`` instead compares the throughput (texts/s) of the
bundled models, every one through ``make_embedder`` as ``embedding_steps.build_embedder``
builds it, on the same ~800-character passages (``--n 200 --size 800``), slice by
slice in turn, and prints a table with each model's speed relative to
all-MiniLM-L6-v2 (``local``):

    .venv/bin/python benchmarks/bench_embedding.py --models local,use,e5 --n 200 --size 800

``--smoke``: 8 passages of 400 characters, one round (with ``--models``: those models on them).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from shared_data import SMOKE_HELP, WIKI_QA, require  # noqa: E402

ARTICLES = WIKI_QA / "articles"


def wiki_chunks(n: int, size: int = 1000) -> list[str]:
    """Up to ``n`` chunks of about ``size`` characters from the wiki-qa articles."""
    chunks: list[str] = []
    for path in sorted(require(ARTICLES).glob("*.txt")):
        text = " ".join(path.read_text(encoding="utf-8").split())
        start = 0
        while start < len(text) and len(chunks) < n:
            end = min(len(text), start + size)
            if end < len(text):
                space = text.rfind(" ", start + size // 2, end)
                end = space if space > 0 else end
            piece = text[start:end].strip()
            if len(piece) >= 200:
                chunks.append(piece)
            start = end + 1
        if len(chunks) >= n:
            break
    return chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400, help="number of ~1000-character chunks (default 400)")
    parser.add_argument("--rounds", type=int, default=2, help="timed passes over the texts (default 2)")
    parser.add_argument("--slice", type=int, default=50, help="texts per alternating slice (default 50)")
    parser.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"])
    parser.add_argument("--workers", type=int, default=None, help="forward-pass threads (default: torch threads)")
    parser.add_argument("--encode-batch-size", type=int, default=8)
    parser.add_argument("--models", default=None,
                        help="compare these providers' default models instead, e.g. local,use,e5")
    parser.add_argument("--size", type=int, default=1000, help="characters per chunk (default 1000)")
    parser.add_argument("--smoke", action="store_true", help="8 passages of 400 characters, one round: " + SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.n, args.size, args.rounds, args.slice = 8, 400, 1, 4
    if args.models:
        compare_models([name.strip() for name in args.models.split(",") if name.strip()], args)
        return

    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from coverage_core.embeddings import LocalEmbedder
    from coverage_core.embeddings.local import bundled_model_path, read_cpu_flags

    texts = wiki_chunks(args.n, args.size)
    if not texts:
        sys.exit(f"No articles found in {ARTICLES}")
    ours = LocalEmbedder(precision=args.precision, workers=args.workers, encode_batch_size=args.encode_batch_size)
    plain = SentenceTransformer(str(bundled_model_path()), device="cpu", local_files_only=True)
    tokens = np.array(ours.count_tokens(texts))

    flags = read_cpu_flags()
    interesting = sorted(flags & {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "avx512_vnni", "avx_vnni"})
    print(f"texts: {len(texts)} chunks, mean {np.mean([len(t) for t in texts]):.0f} chars, "
          f"mean {tokens.mean():.0f} tokens, {int((tokens > ours.max_tokens).sum())} over {ours.max_tokens}")
    print(f"cpu: torch capability {torch.backends.cpu.get_cpu_capability()}, flags {' '.join(interesting) or '-'}, "
          f"torch threads {torch.get_num_threads()}")
    print(f"precision path: {ours.precision_used} ({ours.precision_reason})")
    print(f"ours: encode_batch_size={ours.encode_batch_size}, workers={ours.workers or torch.get_num_threads()} "
          "x 1 thread; plain: encode() defaults (batch_size=32, fp32, torch threads)")

    # Warm up both (first calls allocate and pick kernels).
    plain.encode(texts[:16])
    ours.embed(texts[:16])

    # Alternate the two sides slice by slice, so that load from other
    # processes (this machine is shared) hits both alike.
    slices = [texts[i : i + args.slice] for i in range(0, len(texts), args.slice)]
    wall = {"plain": 0.0, "ours": 0.0}
    cpu = {"plain": 0.0, "ours": 0.0}
    reference, ours_vectors = [], []
    load_before = os.getloadavg()[0]
    for round_number in range(args.rounds):
        for part in slices:
            for side in ("plain", "ours"):
                started, cpu_started = time.perf_counter(), time.process_time()
                if side == "plain":
                    vectors = plain.encode(part, convert_to_numpy=True)
                else:
                    vectors = ours.embed(part)
                wall[side] += time.perf_counter() - started
                cpu[side] += time.process_time() - cpu_started
                if round_number == 0:
                    (reference if side == "plain" else ours_vectors).append(vectors)
        done = (round_number + 1) * len(texts)
        print(f"after round {round_number + 1}: plain {done / wall['plain']:6.2f} chunks/s   "
              f"ours {done / wall['ours']:6.2f} chunks/s", flush=True)
    load_after = os.getloadavg()[0]

    reference = np.vstack(reference)
    reference = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    cosines = (reference * np.vstack(ours_vectors)).sum(axis=1)
    total = args.rounds * len(texts)
    print()
    print(f"plain fp32 encode : {total / wall['plain']:6.2f} chunks/s  ({total / cpu['plain']:.2f} per CPU-second)")
    print(f"our local embedder: {total / wall['ours']:6.2f} chunks/s  ({total / cpu['ours']:.2f} per CPU-second)")
    print(f"speed ratio       : {wall['plain'] / wall['ours']:.2f}x wall clock, {cpu['plain'] / cpu['ours']:.2f}x CPU time")
    print(f"min cosine to fp32: {cosines.min():.7f} over {len(cosines)} chunks")
    print(f"load average      : {load_before:.2f} before, {load_after:.2f} after (2 cores; above ~0.5 means other work competed)")
    print(f"precision path    : {ours.precision_used}")


def compare_models(providers: list[str], args: argparse.Namespace) -> None:
    """Throughput of each provider's default model on the same texts, in turn slice by slice, as a table."""
    import numpy as np

    from coverage_core.embeddings import make_embedder

    texts = wiki_chunks(args.n, args.size)
    if not texts:
        sys.exit(f"No articles found in {ARTICLES}")
    embedders = {name: make_embedder(name) for name in providers}
    cores = len(os.sched_getaffinity(0))
    print(f"texts: {len(texts)} passages, mean {np.mean([len(t) for t in texts]):.0f} chars; {cores} cores; "
          "one pass, no cache")
    for embedder in embedders.values():
        embedder.embed(texts[:8])  # load and warm up outside the timing
    slices = [texts[i : i + args.slice] for i in range(0, len(texts), args.slice)]
    wall = dict.fromkeys(providers, 0.0)
    cpu = dict.fromkeys(providers, 0.0)
    load_before = os.getloadavg()[0]
    for part in slices:
        for name, embedder in embedders.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            embedder.embed(part)
            wall[name] += time.perf_counter() - started
            cpu[name] += time.process_time() - cpu_started
    load_after = os.getloadavg()[0]
    tokens = {name: float(np.mean(embedder.count_tokens(texts))) for name, embedder in embedders.items()}
    reference = "local" if "local" in providers else providers[0]
    print()
    print(f"{'provider':<8} {'model':<42} {'dims':>4} {'tokens':>6} {'texts/s':>8} {'per CPU-s':>9} {'vs ' + reference:>9}")
    for name, embedder in embedders.items():
        rate = len(texts) / wall[name]
        dims = embedder.embed(texts[:1]).shape[1]
        print(f"{name:<8} {embedder.model:<42} {dims:>4} {tokens[name]:>6.0f} {rate:>8.2f} "
              f"{len(texts) / cpu[name]:>9.2f} {wall[reference] / wall[name]:>8.2f}x")
    print(f"load average: {load_before:.2f} before, {load_after:.2f} after (2 cores; above ~0.5 means other work competed)")


if __name__ == "__main__":
    main()
