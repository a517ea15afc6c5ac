"""How the verdicts move with the number of calibration probes, against how they move with the probes' seed.

Runs the product's analysis (``session.analyze``, automatic model choice, writer off) on a shared set once
per ``PROBES:SEED`` variant, calibrating on ``PROBES`` sentences drawn with ``SEED``; embeddings are cached
in ``/tmp/probe_count_cache_<set>``, so only the first variant embeds. Prints τ, the question level, J and
the verdicts, and how the off-topic questions and untested documents differ from the first variant.

    .venv/bin/python benchmarks/eval_probe_count.py fr-qa 400:0 400:1 400:2 200:0 200:1 200:2 100:0
    .venv/bin/python benchmarks/eval_probe_count.py --smoke
"""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_multilingual import read_set

from coverage_core import session
from coverage_core.config import AnalysisConfig
from coverage_core.embeddings import EmbeddingCache
from coverage_core.stages import calibration as cal
from coverage_core.suggest.gaps import GapConfig

SMOKE = ["fr-qa", "40:0", "20:0"]
SMOKE_ARTICLES = 2


def main(argv: list[str]) -> int:
    smoke = argv == ["--smoke"]
    name, *wanted = SMOKE if smoke else argv
    variants = [(int(a.split(":")[0]), int(a.split(":")[1])) for a in wanted]
    documents, questions = read_set(name, SMOKE_ARTICLES if smoke else None)
    original = cal.calibrate
    base = None
    for n_probes, seed in variants:
        base = run_variant(name, documents, questions, original, n_probes, seed, base, smoke)
    cal.calibrate = original
    return 0


def run_variant(name, documents, questions, original, n_probes, seed, base, smoke):
    def patched(chunks, vectors, embed, random_state=0, **kw):
        return original(chunks, vectors, embed, seed, max_probes=n_probes, **kw)

    cal.calibrate = patched
    started = time.perf_counter()
    cache = Path(os.environ.get("COVERAGE_CORE_CACHE_DIR") or f"/tmp/probe_count_cache_{name}") if smoke else \
        Path(f"/tmp/probe_count_cache_{name}")
    a = session.analyze(AnalysisConfig(gaps=GapConfig(local_model=False)), documents, questions,
                        cache=EmbeddingCache(cache))
    seconds = time.perf_counter() - started
    off = set(map(int, (a.is_outlier.nonzero()[0])))
    unt = set(a.documents.loc[a.documents.is_untested, "document"])
    gaps = int(a.clusters.is_gap.sum())
    c = a.calibration
    if base is None:
        base = (off, unt)
    print(f"{name} probes {n_probes} seed {seed}: tau {c.support_threshold:.4f} q {c.question_support_threshold} "
          f"J {c.separation if c.separation is None else round(c.separation, 3)} n {c.n_probes}; tested {a.metrics['tested_share']:.3f} off {len(off)} "
          f"(vs first: -{len(base[0]-off)} +{len(off-base[0])}) untested {len(unt)} (-{len(base[1]-unt)} +{len(unt-base[1])}) "
          f"gaps {gaps} [{seconds:.0f}s]", flush=True)
    return base


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
