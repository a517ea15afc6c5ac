"""Production traffic on wiki-qa: does the traffic-weighted tested share recover the truth?

For each seed (10-19; seeds 0-9 tuned ``traffic.QUERY_MATCH_FRACTION``):

1. 30 of the 55 wiki-qa articles are "asked about"; every question of those
   articles is a traffic query. Articles get a Zipf weight (rank r of a random
   order: ``ceil(30 / r)``) and each query a Zipf count (``zipf(2)``, at most
   100) times its article's weight, so a few articles carry most traffic.
2. A biased test set: the questions of 10 of the 30 articles (drawn at random).
3. Truth: the traffic mass of those 10 articles. The product's
   ``tested_share_weighted`` must recover it within ±0.05.
4. The top 3 "most asked, least tested" topics must be about the heavy
   untested articles: each topic's main article is one of the 5 heaviest
   untested articles.

Unmet demand (the same seeds, same logs): off-domain queries the documents
cannot answer (account, billing, support, general knowledge; a third of them
masked with anonymisation placeholders such as ``<NAME>``, ``[REDACTED]``,
``{email}``, ``XXXX``, ``J***n``) join each log at 10-20% of its volume (drawn
per seed), and 3% of the genuine queries get a placeholder too. The queries
are embedded as logged, as ``checks.runner.run_traffic_check`` does. Truth: the
off-domain share; the product's ``unanswered_share_weighted`` must recover
it within ±0.05. The off-domain queries are in two halves: half A with seeds
0-9 tunes (``--half A``: the screener strictness grid), half B with seeds
10-19 reports (default).

Then the scale figure: 100,000 distinct traffic queries against 20,000 chunks
(synthetic unit vectors, 384 dimensions), analysed after embedding, with
time and peak RSS (target ≤ 15 s, ≤ 3 GB).

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/eval_traffic.py [--half A|B] [--scale-only] [--no-scale]
[--smoke]`` (needs ../shared/data; reuses the ``eval_untested`` embedding cache). ``--smoke``: the 5 shortest
articles, 3 asked about and 1 tested, 5 off-domain queries, one seed; the scale figure at 2,000 queries x
500 chunks x 100 tests.
"""

from __future__ import annotations

import io
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared_data import SMOKE_HELP  # noqa: E402

from coverage_core.checks.personal_data import mask_personal_data  # noqa: E402
from coverage_core.checks.query_log import MAX_QUERY_CHARS, read_traffic
from coverage_core.checks.traffic import TrafficConfig, analyze_traffic  # noqa: E402
from coverage_core.stages.calibration import calibrate  # noqa: E402

SEEDS = tuple(range(10, 20))  # seeds 0-9 tuned traffic.QUERY_MATCH_FRACTION
TUNING_SEEDS = tuple(range(10))
N_ASKED, N_TESTED = 30, 10
TOLERANCE = 0.05
OFF = "(off-domain)"
UNANSWERABLE_SHARE = (0.10, 0.20)
N_OFF_DOMAIN = 25  # off-domain queries per log
MASKED_GENUINE = 0.03
STRICTNESS_GRID = (0.3, 0.4, 0.5, 0.6, 0.7)

# Queries no wiki-qa article answers, written for this benchmark (none names a subject of the 55 articles).
OFF_DOMAIN_A = (
    "How do I reset my password?", "I forgot my username, how can I recover it?",
    "How do I cancel my subscription?", "Why was I charged twice this month?",
    "Where can I download my invoice?", "How do I update my credit card details?",
    "Can I get a refund for my last order?", "How do I change the email address on my account?",
    "Is there a student discount on the premium plan?", "How do I enable two-factor authentication?",
    "My order has not arrived yet, where is it?", "How do I talk to a human agent?",
    "What are your customer service opening hours?", "How do I delete my account permanently?",
    "Who won the 2018 FIFA World Cup?", "How many teaspoons are in a tablespoon?",
    "What is the boiling point of water in Fahrenheit?", "Who wrote Pride and Prejudice?",
    "How do I convert miles to kilometres?", "What is the square root of 144?",
    "Recommend a good lasagna recipe", "How do I fix a flat bicycle tyre?",
    "What time zone is Tokyo in?", "How do I install Python on Windows?",
    "What is the best mortgage rate right now?", "Why does my phone battery drain so fast?",
    "Hi <NAME>, I cannot log in to my account", "[REDACTED] was charged twice for the annual plan",
    "Please send the invoice to {email}", "My card XXXX-XXXX-XXXX-4821 was declined at checkout",
    "J***n here: how do I cancel my order?", "Order #XXXXXX still says processing, any update?",
    "<PERSON_1> wants to change the billing address", "Reset the password for user [USER_ID] please",
    "Can {name} get a refund on the subscription?", "Account *** is locked after too many attempts",
)
OFF_DOMAIN_B = (
    "How do I change my password?", "I cannot sign in to the app, what should I do?",
    "How do I stop automatic renewal of my plan?", "Why is there an extra fee on my bill?",
    "Where do I find my receipts?", "How do I switch to annual billing?",
    "How long does a refund take to arrive?", "Can I transfer my account to someone else?",
    "Do you offer a free trial?", "How do I turn off email notifications?",
    "How do I track my parcel?", "Is there a phone number for support?",
    "Are you open on public holidays?", "How do I export all my data?",
    "Who won the last Super Bowl?", "How many grams are in an ounce?",
    "What is the freezing point of water in Kelvin?", "Who painted the Girl with a Pearl Earring?",
    "How do I convert Celsius to Fahrenheit?", "What is 15 percent of 80?",
    "What is a good recipe for banana bread?", "How do I unclog a kitchen sink?",
    "What is the population of Canada?", "How do I update my graphics card drivers?",
    "Should I invest in index funds?", "Why is my laptop fan so loud?",
    "Hello <NAME>, my login link has expired", "[REDACTED] asks why the payment failed",
    "Send the receipt to {email} please", "Card ending XXXX was charged after I cancelled",
    "M***a here: where is my refund?", "Ticket #XXXXX has had no reply for a week",
    "<PERSON> would like a copy of the contract", "Please close account [ACCOUNT_ID]",
    "Can {user} upgrade to the business plan?", "My account *** shows the wrong plan",
)
PLACEHOLDERS = ("<NAME>", "[REDACTED]", "{name}", "XXXX", "***")


def _log_csv(texts, counts) -> bytes:
    buffer = io.StringIO()
    pd.DataFrame({"query": texts, "count": counts}).to_csv(buffer, index=False)
    return buffer.getvalue().encode()


def _with_unanswerable(rng, texts, counts, pool):
    """The log with :data:`N_OFF_DOMAIN` queries of ``pool`` added at a share of the volume drawn in
    :data:`UNANSWERABLE_SHARE`, and 3% of the genuine queries given a placeholder; (texts, counts, true share)."""
    texts = [f"{rng.choice(PLACEHOLDERS)} {t}" if rng.random() < MASKED_GENUINE else t for t in texts]
    off = list(rng.choice(pool, N_OFF_DOMAIN, replace=False))
    target = rng.uniform(*UNANSWERABLE_SHARE)
    raw = np.minimum(rng.zipf(2.0, N_OFF_DOMAIN), 100).astype(float)
    wanted = target / (1 - target) * counts.sum()
    off_counts = np.maximum(1, np.round(raw / raw.sum() * wanted)).astype(np.int64)
    truth = off_counts.sum() / (counts.sum() + off_counts.sum())
    return texts + off, np.concatenate([counts, off_counts]), float(truth)


def _logged_key(query: str) -> str:
    """A query as ``read_traffic`` keys it: masked, case-folded, spaces collapsed."""
    return " ".join(mask_personal_data(query[:MAX_QUERY_CHARS]).casefold().split())


def wiki_qa(half: str = "B", smoke: bool = False) -> int:
    import eval_untested as data

    from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder

    global N_ASKED, N_TESTED, N_OFF_DOMAIN
    if smoke:
        N_ASKED, N_TESTED, N_OFF_DOMAIN = 3, 1, 5
    chunks, questions, question_article, articles = data.load(n_articles=5 if smoke else None)
    embedder, cache = make_embedder("local"), EmbeddingCache(data.CACHE)

    def embed(texts):
        return embed_texts(list(texts), embedder, cache).vectors

    chunk_vectors = embed([c.text for c in chunks])
    chunk_texts, chunk_documents = [c.text for c in chunks], [c.document for c in chunks]
    question_vectors = embed(questions)
    calibration = calibrate(chunks, chunk_vectors, embed, random_state=0)
    tau, level = calibration.support_threshold, calibration.question_support_threshold
    vector_of = dict(zip(questions, question_vectors))
    print(f"wiki-qa: {len(articles)} articles, {len(chunks)} chunks, {len(questions)} questions; "
          f"τ {tau:.3f}, answerable from {level:.3f}")
    seeds, pool = (TUNING_SEEDS, OFF_DOMAIN_A) if half == "A" else (SEEDS, OFF_DOMAIN_B)
    seeds = seeds[:1] if smoke else seeds
    print(f"half {half}: seeds {seeds[0]}-{seeds[-1]}, {len(pool)} off-domain queries")
    print(f"{'seed':>4} {'queries':>8} {'asked':>7} {'truth':>6} {'measured':>8} {'error':>6} "
          f"{'unmet':>6} {'found':>6} {'error':>6}  top-3 most asked least tested: main article (heavy untested?)")
    errors, hits, unmet_errors = [], [], {s: [] for s in STRICTNESS_GRID} if half == "A" else {None: []}
    for seed in seeds:
        rng = np.random.default_rng(seed)
        asked = rng.choice(articles, N_ASKED, replace=False)
        weight = {a: int(np.ceil(N_ASKED / (rank + 1))) for rank, a in enumerate(asked)}
        tested_articles = set(rng.choice(asked, N_TESTED, replace=False))
        picked = np.flatnonzero(np.isin(question_article, asked))
        texts = [questions[i] for i in picked]
        counts = np.minimum(rng.zipf(2.0, len(picked)), 100) * np.array([weight[question_article[i]] for i in picked])
        tests = [questions[i] for i in picked if question_article[i] in tested_articles]
        logged, counts, unmet_truth = _with_unanswerable(rng, texts, counts, pool)
        log = read_traffic(_log_csv(logged, counts), "traffic.csv")
        # The log is read as the product reads it: names and addresses masked ("Was [NAME] an English …").
        article_of = {_logged_key(q): question_article[i] for q, i in zip(logged, picked)}
        article_of.update({_logged_key(q): OFF for q in logged[len(picked):]})
        missing = [q for q in log.queries if q not in vector_of]
        if missing:
            vector_of.update(zip(missing, embed(missing)))
        args = (log, np.stack([vector_of[q] for q in log.queries]), np.stack([vector_of[q] for q in tests]), tests,
                chunk_vectors)
        kwargs = {"support_threshold": tau, "question_support_threshold": level, "chunk_texts": chunk_texts,
                  "chunk_documents": chunk_documents}
        for strictness in unmet_errors:
            if strictness is not None:
                tried = analyze_traffic(*args, **kwargs, config=TrafficConfig(strictness=strictness))
                unmet_errors[strictness].append(abs(tried.unanswered_share_weighted - unmet_truth))
        result = analyze_traffic(*args, **kwargs)
        if None in unmet_errors:
            unmet_errors[None].append(abs(result.unanswered_share_weighted - unmet_truth))
        mass = pd.Series(log.counts, index=[article_of[_logged_key(q)] for q in log.queries]).groupby(level=0).sum()
        truth = mass[mass.index.isin(tested_articles)].sum() / mass.sum()
        measured = result.tested_share_weighted
        errors.append(abs(measured - truth))
        heavy_untested = set(mass[~mass.index.isin([*tested_articles, OFF])].sort_values(ascending=False).index[:5])
        queries = result.queries.assign(article=[article_of[_logged_key(q)] for q in result.queries["text"]])
        tops = []
        for topic in result.topics["topic"].head(3):
            rows = queries[queries["topic"] == topic]
            main = rows.groupby("article")["count"].sum().idxmax()
            tops.append((main, main in heavy_untested))
        hits.extend(ok for _, ok in tops)
        shown = ", ".join(f"{main} ({'yes' if ok else 'no'})" for main, ok in tops)
        found = result.unanswered_share_weighted
        print(f"{seed:>4} {log.n_distinct:>8} {log.n_queries:>7} {truth:>6.3f} {measured:>8.3f} "
              f"{measured - truth:>+6.3f} {unmet_truth:>6.3f} {found:>6.3f} {found - unmet_truth:>+6.3f}  {shown}")
    print(f"tested share: worst error {max(errors):.3f} (target ≤ {TOLERANCE}); top-3 topics on heavy untested "
          f"articles: {sum(hits)} of {len(hits)}")
    for strictness, found_errors in unmet_errors.items():
        which = "default strictness" if strictness is None else f"strictness {strictness}"
        print(f"no answer in the documents, {which}: mean error {np.mean(found_errors):.3f}, worst "
              f"{max(found_errors):.3f} (target ≤ {TOLERANCE})")
    return 0


def scale(n_queries: int = 100_000, n_chunks: int = 20_000, n_tests: int = 2_000, dim: int = 384) -> None:
    """Time and peak RSS of the analysis after embedding (run in a fresh process for a clean peak)."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(200, dim)).astype(np.float32)

    def around(n):
        rows = centres[rng.integers(0, len(centres), n)] + rng.normal(scale=1.2, size=(n, dim)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    chunks, tests, queries = around(n_chunks), around(n_tests), around(n_queries)
    texts = [f"query {i} about topic {i % 200} word{i % 997} term{i % 89}" for i in range(n_queries)]
    counts = np.minimum(rng.zipf(1.8, n_queries), 10_000)
    log = read_traffic(_log_csv(texts, counts), "traffic.csv")
    assert log.n_distinct == n_queries
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    result = analyze_traffic(log, queries, tests, [f"test {i}" for i in range(n_tests)], chunks,
                             support_threshold=0.5, question_support_threshold=0.45)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"scale: {n_queries:,} queries × {n_chunks:,} chunks × {n_tests:,} tests: {seconds:.1f} s, "
          f"peak RSS {peak:,.0f} MB (inputs {before:,.0f} MB); targets ≤ 15 s, ≤ 3,072 MB; "
          f"{len(result.topics)} topics, tested {result.tested_share_weighted:.2f}")


def main() -> int:
    smoke = "--smoke" in sys.argv
    if "--help" in sys.argv or "-h" in sys.argv:
        print("usage: eval_traffic.py [--half A|B] [--scale-only] [--no-scale] [--smoke]\n\n"
              f"{__doc__.splitlines()[0]}\n\n--smoke  5 articles, one seed, a small scale figure: {SMOKE_HELP}")
        return 0
    if "--scale" in sys.argv:
        scale()
        return 0
    half = sys.argv[sys.argv.index("--half") + 1].upper() if "--half" in sys.argv else "B"
    if "--scale-only" not in sys.argv:
        wiki_qa(half, smoke)
    if "--no-scale" not in sys.argv and smoke:
        scale(2_000, 500, 100)  # in this process: its peak memory means nothing here
    elif "--no-scale" not in sys.argv:
        subprocess.run([sys.executable, __file__, "--scale"], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
