"""Paid providers at volume: request limits, concurrency, shared backoff,
interrupted runs and row order, through the real ``openai`` and ``voyageai``
clients against the loopback fake API (tests/fakes.py).

The fake server counts every text it embedded successfully (``embedded``),
which is what a provider bills, so "nothing is paid for twice" is checked on
the server's side. Waits: the server sleeps a few hundredths of a second per
request so requests overlap; backoff waits go to a recording fake ``sleep``.
"""

from __future__ import annotations

import collections
import threading
import time

import numpy as np
import pytest

from coverage_core.embeddings import (
    Backoff,
    CacheKey,
    EmbeddingCache,
    RequestGate,
    approximate_token_count,
    embed_texts,
    make_embedder,
)
from coverage_core.embeddings.base import REQUEST_TOKEN_HEADROOM
from coverage_core.embeddings.openai_provider import OPENAI_MAX_INPUTS_PER_REQUEST, OPENAI_MAX_TOKENS_PER_REQUEST
from coverage_core.embeddings.voyage_provider import VOYAGE_MAX_INPUTS_PER_REQUEST, VOYAGE_MODELS
from coverage_core.errors import InputError, ProviderError
from tests.fakes import Limits, error_reply, fake_embedding

PATH = "/v1/embeddings"
KEY = "sk-test-VOLUME-key-0123456789"
PROVIDERS = ["openai", "voyage"]
# The real APIs' caps (texts, tokens) per request, for the default models.
REAL_LIMITS = {
    "openai": Limits(OPENAI_MAX_INPUTS_PER_REQUEST, OPENAI_MAX_TOKENS_PER_REQUEST),
    "voyage": Limits(VOYAGE_MAX_INPUTS_PER_REQUEST, VOYAGE_MODELS["voyage-3.5"].request_tokens),
}


class RecordingSleep:
    """A fake ``time.sleep``: records each wait (and its thread) and returns at once."""

    def __init__(self):
        self.calls: list[tuple[str, float]] = []
        self._lock = threading.Lock()

    def __call__(self, seconds: float) -> None:
        with self._lock:
            self.calls.append((threading.current_thread().name, seconds))

    @property
    def seconds(self) -> list[float]:
        return [seconds for _, seconds in self.calls]


def make(provider, fake_api, **options):
    options.setdefault("api_key", KEY)
    options.setdefault("timeout", 5.0)
    embedder = make_embedder(provider, base_url=fake_api.url + "/v1", **options)
    embedder.backoff = Backoff(initial=0.01, maximum=30.0)
    embedder.sleep = RecordingSleep()
    return embedder


def texts_of(n, prefix="passage"):
    return [f"{prefix} {i}: the {i % 13}th topic, item {i}" for i in range(n)]


def expected(texts, d=16):
    return np.array([fake_embedding(text, d) for text in texts], dtype=np.float32)


def sent_texts(requests):
    return [text for request in requests for text in request.body["input"]]


class ProgressLog:
    def __init__(self):
        self.calls: list[tuple[int, int]] = []

    def __call__(self, done, total):
        self.calls.append((done, total))

    def assert_monotonic_to(self, total):
        done = [d for d, _ in self.calls]
        assert done == sorted(done) and all(t == total for _, t in self.calls)
        assert done[-1] == total


# ---------------------------------------------------------------- (a) limits


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_large_run_fills_requests_up_to_the_providers_input_and_token_caps(provider, fake_api, cache_dir):
    limits = REAL_LIMITS[provider]
    fake_api.limits = limits  # the server refuses (400) any request over the real caps
    short = texts_of(2_600, "question")
    long = [f"section {i} " + "lorem ipsum dolor sit amet " * 150 for i in range(260)]  # ~1,000 tokens each
    texts = short + long
    # What the provider's own endpoint gets by default (the fake is a custom base URL: 128 by default).
    embedder = make(provider, fake_api, batch_size=limits.max_inputs)
    assert embedder.max_batch_tokens == int(limits.max_tokens * REQUEST_TOKEN_HEADROOM)

    run = embed_texts(texts, embedder, EmbeddingCache(cache_dir))

    requests = fake_api.requests_to(PATH)
    inputs = [len(request.body["input"]) for request in requests]
    tokens = [sum(approximate_token_count(t) for t in request.body["input"]) for request in requests]
    assert max(inputs) == limits.max_inputs  # short texts: the input cap binds, and is used in full
    assert all(n <= limits.max_inputs for n in inputs)
    assert all(t <= embedder.max_batch_tokens for t in tokens)  # long texts: the token budget binds
    assert max(tokens) > embedder.max_batch_tokens - 1_100  # ... and is filled up to one text short of it
    total_tokens = sum(approximate_token_count(t) for t in texts)
    assert len(requests) <= -(-len(texts) // limits.max_inputs) + -(-total_tokens // (embedder.max_batch_tokens - 1_100))
    assert sorted(sent_texts(requests)) == sorted(texts)  # nothing refused, nothing sent twice
    assert set(fake_api.embedded.values()) == {1} and len(fake_api.embedded) == len(texts)
    np.testing.assert_allclose(run.vectors, expected(texts), atol=1e-6)


@pytest.mark.parametrize(("provider", "size"), [("openai", OPENAI_MAX_INPUTS_PER_REQUEST + 1), ("voyage", 1_001)])
def test_batch_size_over_the_providers_cap_is_refused_with_one_sentence(provider, size):
    with pytest.raises(InputError, match=r"batch_size for .* must be between 1 and [0-9,]+ .*not"):
        make_embedder(provider, api_key=KEY, batch_size=size)
    with pytest.raises(InputError, match="max_concurrency must be at least 1"):
        make_embedder(provider, api_key=KEY, max_concurrency=0)


def test_request_caps_follow_the_voyage_model_and_a_custom_server_gets_modest_batches():
    caps = {model: make_embedder("voyage", model, api_key=KEY).max_batch_tokens for model in VOYAGE_MODELS}
    assert caps["voyage-3-large"] < caps["voyage-3.5"] < caps["voyage-3.5-lite"]
    assert caps["voyage-3.5"] == int(320_000 * REQUEST_TOKEN_HEADROOM)
    custom = make_embedder("openai", "nomic-embed-text", api_key=KEY, base_url="http://127.0.0.1:9/v1")
    assert custom.batch_size == 128  # a compatible server's own limits are unknown
    assert make_embedder("openai", api_key=KEY).batch_size == OPENAI_MAX_INPUTS_PER_REQUEST
    assert make_embedder("voyage", api_key=KEY).batch_size == VOYAGE_MAX_INPUTS_PER_REQUEST


# ---------------------------------------------------- (b) 429s, paid once


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rate_limits_are_retried_and_every_text_is_paid_for_once_also_across_a_rerun(provider, fake_api, cache_dir):
    texts = texts_of(600)
    inputs = texts + texts[::7]  # repeated texts are sent once
    fake_api.embedding_delay = 0.02
    fake_api.script(
        PATH,
        [
            error_reply(429, "Rate limit reached", **{"Retry-After": "2"}),
            error_reply(429, "Rate limit reached"),  # no Retry-After: exponential backoff
            error_reply(429, "Rate limit reached", **{"Retry-After": "1"}),
        ],
    )
    embedder = make(provider, fake_api, batch_size=50, max_concurrency=4)
    progress = ProgressLog()

    run = embed_texts(inputs, embedder, EmbeddingCache(cache_dir), progress=progress)

    assert len(fake_api.requests_to(PATH)) == 12 + 3  # each 429 cost one extra request, nothing more
    assert fake_api.embedded == collections.Counter(texts)  # every distinct text paid for exactly once
    assert (run.n_cached, run.n_embedded) == (0, len(inputs))
    np.testing.assert_allclose(run.vectors, expected(inputs), atol=1e-6)
    assert any(seconds == pytest.approx(2.0, abs=0.3) for seconds in embedder.sleep.seconds)  # Retry-After
    assert max(embedder.sleep.seconds) <= 2.0 + 1e-6  # no wait longer than asked
    progress.assert_monotonic_to(len(inputs))

    again = embed_texts(inputs, make(provider, fake_api, batch_size=50), EmbeddingCache(cache_dir))
    assert len(fake_api.requests_to(PATH)) == 15  # the re-run sends nothing
    assert (again.n_cached, again.n_embedded) == (len(inputs), 0)
    np.testing.assert_array_equal(again.vectors, run.vectors)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_rate_limit_pauses_every_request_not_only_the_one_that_got_it(provider, fake_api, cache_dir):
    texts = texts_of(400)
    # The first request is refused at once; the others take a while, so more start after the 429.
    fake_api.script(PATH, [error_reply(429, "Too many requests", **{"Retry-After": "5"})])
    fake_api.embedding_delay = 0.03
    embedder = make(provider, fake_api, batch_size=25, max_concurrency=4)

    embed_texts(texts, embedder, EmbeddingCache(cache_dir))

    paused = [(thread, seconds) for thread, seconds in embedder.sleep.calls if seconds > 3]
    assert len({thread for thread, _ in paused}) >= 2  # other threads sat out the same pause
    assert all(seconds <= 5.0 + 1e-6 for _, seconds in paused)
    assert fake_api.embedded == collections.Counter(texts)
    assert fake_api.peak_in_flight <= 4


def test_the_gate_halves_the_cap_on_a_rate_limit_and_raises_it_one_by_one():
    now = [100.0]
    gate = RequestGate(4, clock=lambda: now[0])
    slept = []
    with gate.slot(slept.append) as before:
        pass
    gate.rate_limited(3.0)
    assert gate.limit == 2
    gate.succeeded(before)  # a request sent before the 429 proves nothing
    assert gate.limit == 2
    with gate.slot(slept.append) as ticket:
        pass
    assert slept == [3.0]  # the pause is slept once, by the clock
    limits = []
    for _ in range(5):
        gate.succeeded(ticket)
        limits.append(gate.limit)
    assert limits == [2, 3, 3, 3, 4]  # one more after each run of `limit` successes
    for _ in range(10):
        gate.succeeded(ticket)
    assert gate.limit == 4  # never above max_concurrency
    gate.rate_limited(1.0)
    gate.rate_limited(1.0)
    gate.rate_limited(1.0)
    assert gate.limit == 1  # but never below one


# -------------------------------------------------------- (c) concurrency


@pytest.mark.parametrize("provider", PROVIDERS)
def test_requests_run_concurrently_but_never_more_than_max_concurrency(provider, fake_api, cache_dir):
    fake_api.embedding_delay = 0.05
    embedder = make(provider, fake_api, batch_size=20, max_concurrency=3)
    embed_texts(texts_of(240), embedder, EmbeddingCache(cache_dir))
    assert len(fake_api.requests_to(PATH)) == 12
    assert 1 < fake_api.peak_in_flight <= 3


def test_one_at_a_time_when_max_concurrency_is_one(fake_api, cache_dir):
    fake_api.embedding_delay = 0.02
    embedder = make("openai", fake_api, batch_size=20, max_concurrency=1)
    embed_texts(texts_of(100), embedder, EmbeddingCache(cache_dir))
    assert len(fake_api.requests_to(PATH)) == 5 and fake_api.peak_in_flight == 1


def test_the_local_model_stays_sequential():
    local = make_embedder("local")
    assert getattr(local, "max_concurrency", 1) == 1
    assert make_embedder("local", max_concurrency=1).model == local.model
    with pytest.raises(InputError, match="local model embeds one batch at a time"):
        make_embedder("local", max_concurrency=4)


# ---------------------------------------------------- (d) interrupted run


@pytest.mark.parametrize(
    ("provider", "status", "kind"), [("openai", 401, "auth"), ("voyage", 401, "auth"), ("openai", 400, "bad_request")]
)
def test_an_interrupted_run_keeps_finished_batches_and_the_rerun_sends_only_the_rest(
    provider, status, kind, fake_api, cache_dir
):
    texts = texts_of(600)
    # Successes take a while and the failure comes at once, so requests are still in flight when it does.
    fake_api.embedding_delay = 0.05
    fake_api.fail_after(7, error_reply(status, "The provider gave up on us"))
    embedder = make(provider, fake_api, batch_size=40, max_concurrency=4)
    cache = EmbeddingCache(cache_dir)
    progress = ProgressLog()

    with pytest.raises(ProviderError) as caught:
        embed_texts(texts, embedder, cache, progress=progress)

    assert caught.value.kind == kind
    first_run = len(fake_api.requests_to(PATH))
    assert first_run <= 7 + 4  # no new request after the failure, no retry of a refusal
    paid = set(fake_api.embedded)
    assert len(paid) == 7 * 40 and set(fake_api.embedded.values()) == {1}
    assert cache.count(CacheKey.of(embedder)) == len(paid)  # every finished batch is in the cache
    assert progress.calls[-1][0] == len(paid)

    fake_api.never_fail()
    run = embed_texts(texts, make(provider, fake_api, batch_size=40), EmbeddingCache(cache_dir))

    resent = sent_texts(fake_api.requests_to(PATH)[first_run:])
    assert set(resent) == set(texts) - paid and len(resent) == len(texts) - len(paid)
    assert fake_api.embedded == collections.Counter(texts)  # in all, each text paid for once
    assert (run.n_cached, run.n_embedded) == (len(paid), len(texts) - len(paid))
    np.testing.assert_allclose(run.vectors, expected(texts), atol=1e-6)


# -------------------------------------------------------------- (e) order


@pytest.mark.parametrize("provider", PROVIDERS)
def test_vectors_come_back_row_for_row_when_requests_finish_out_of_order(provider, fake_api, cache_dir):
    texts = texts_of(300)[::-1] + ["shared text"] * 3
    # The first request is the slowest, so it finishes after later ones.
    fake_api.embedding_delay = lambda request: 0.3 if request.number == 0 else 0.01
    embedder = make(provider, fake_api, batch_size=30, max_concurrency=4)
    progress = ProgressLog()

    run = embed_texts(texts, embedder, EmbeddingCache(cache_dir), progress=progress)

    assert fake_api.completion_order[0] != 0 and 0 in fake_api.completion_order
    np.testing.assert_allclose(run.vectors, expected(texts), atol=1e-6)
    assert len(progress.calls) == 1 + len(fake_api.requests_to(PATH))  # the cache lookup, then each batch
    progress.assert_monotonic_to(len(texts))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_used_embedder_can_be_pickled_for_a_worker_process(provider, fake_api, cache_dir):
    import pickle

    embedder = make(provider, fake_api, batch_size=10, max_concurrency=2)
    embedder.sleep = time.sleep  # as in real runs (the recording fake holds a lock); nothing waits here
    embed_texts(texts_of(30), embedder, EmbeddingCache(cache_dir))  # the client and the gate now exist
    copy = pickle.loads(pickle.dumps(embedder))
    assert (copy.model, copy.batch_size, copy.max_concurrency, copy.max_batch_tokens) == (
        embedder.model, 10, 2, embedder.max_batch_tokens,
    )
    np.testing.assert_allclose(copy.embed(["after the trip"]), expected(["after the trip"]), atol=1e-6)


# ------------------------------------------------------------ the command line


def test_the_command_lines_max_concurrency_reaches_the_real_client(tmp_path, fake_api, cache_dir, monkeypatch):
    from coverage_core import cli, embedding_steps
    from tests.helpers import PROJECT

    monkeypatch.setenv("EMBEDDING_API_KEY", KEY)
    built = []
    real = embedding_steps.build_embedder

    def recording(config, api_key=None, **options):
        embedder = real(config, api_key, **options)
        built.append(embedder)
        return embedder

    monkeypatch.setattr(embedding_steps, "build_embedder", recording)
    questions = tmp_path / "q.csv"
    questions.write_text("question\nWhat is a drum?\nHow is a flute played?\n", encoding="utf-8")
    docs = [str(PROJECT / "examples" / "wiki-qa" / "docs" / name) for name in ("Drum.txt", "Flute.txt")]
    args = ["analyze", "--docs", *docs, "--questions", str(questions), "--out", str(tmp_path / "r.json"),
            "--embedder", "openai", "--model", "fake-embed", "--base-url", f"{fake_api.url}/v1",
            "--cache-dir", str(cache_dir), "--quiet"]
    assert cli.main([*args, "--max-concurrency", "1"]) == 0
    assert built and all(embedder.max_concurrency == 1 for embedder in built)
    assert fake_api.peak_in_flight == 1 and fake_api.requests_to(PATH)


@pytest.mark.parametrize("extra, expected", [
    (["--max-concurrency", "0"], "--max-concurrency must be at least 1 (got 0)."),
    (["--max-concurrency", "2"], "--max-concurrency limits requests to OpenAI or Voyage; the automatic choice sends none"),
])
def test_a_max_concurrency_that_cannot_apply_is_one_sentence(tmp_path, capsys, extra, expected):
    from coverage_core import cli

    questions = tmp_path / "q.csv"
    questions.write_text("question\nWhat is a drum?\n", encoding="utf-8")
    code = cli.main(["analyze", "--docs", str(tmp_path), "--questions", str(questions), "--out", str(tmp_path / "r.json"),
                     *extra])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
