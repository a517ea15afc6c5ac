"""OpenAI and Voyage embedders through their real client libraries, against
the local fake API server (tests/fakes.py); the provider registry."""

import time

import numpy as np
import pytest

from coverage_core.embeddings import (
    DEFAULT_MODELS,
    Backoff,
    EmbeddingCache,
    ModelSpec,
    OpenAIEmbedder,
    ProviderSpec,
    VoyageEmbedder,
    embed_texts,
    key_variable,
    make_embedder,
    registry,
    trained_for_truncation,
)
from coverage_core.errors import InputError, ProviderError
from tests.fakes import DEFAULT, FakeEmbedder, Reply, error_reply, fake_embedding

PATH = "/v1/embeddings"  # both clients append /embeddings to the base URL
KEY = "sk-test-SECRET-key-0123456789"
FAST = Backoff(initial=0.01, maximum=0.05)


def make(provider, fake_api, **options):
    options.setdefault("api_key", KEY)
    options.setdefault("timeout", 2.0)
    embedder = make_embedder(provider, base_url=fake_api.url + "/v1", **options)
    embedder.backoff = FAST
    return embedder


def expected(texts, d):
    return np.array([fake_embedding(text, d) for text in texts], dtype=np.float32)


PROVIDERS = ["openai", "voyage"]


def error_of_one_request(provider, fake_api, status, message) -> ProviderError:
    """The ProviderError of embedding one text while the server answers ``status`` with ``message``;
    fails unless exactly one request was sent (no retry)."""
    fake_api.script(PATH, [error_reply(status, message)] * 3)
    with pytest.raises(ProviderError) as caught:
        make(provider, fake_api).embed(["x"])
    assert len(fake_api.requests_to(PATH)) == 1
    return caught.value


@pytest.mark.parametrize("provider", PROVIDERS)
def test_success_in_order_with_dimensions(provider, fake_api):
    embedder = make(provider, fake_api, dimensions=256, batch_size=3)
    texts = [f"chunk {i}" for i in range(7)]
    vectors = embedder.embed(texts)
    assert vectors.shape == (7, 256) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected(texts, 256), atol=1e-6)
    requests = fake_api.requests_to(PATH)
    assert [len(r.body["input"]) for r in requests] == [3, 3, 1]
    body = requests[0].body
    if provider == "openai":
        assert body["model"] == "text-embedding-3-small" and body["dimensions"] == 256
    else:
        assert body["model"] == "voyage-3.5" and body["output_dimension"] == 256
        assert body["input_type"] == "document"
    headers = {name.lower(): value for name, value in requests[0].headers.items()}
    assert headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_native_size_sends_no_dimensions(provider, fake_api):
    embedder = make(provider, fake_api)
    vectors = embedder.embed(["a", "b"])
    assert vectors.shape == (2, 16)  # the fake server's default size
    body = fake_api.requests_to(PATH)[0].body
    assert body.get("dimensions") is None and body.get("output_dimension") is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_construction_sends_nothing_and_hides_the_key(provider, fake_api):
    embedder = make(provider, fake_api)
    assert fake_api.requests == []
    assert KEY not in repr(embedder) and KEY not in str(embedder)
    assert embedder.count_tokens(["abcdefgh", "abcdefghi"]) == [2, 3]  # approximate, offline
    assert fake_api.requests == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_bad_key_fails_at_once_without_the_key(provider, fake_api):
    # The server echoes the key, as a careless compatible server might.
    error = error_of_one_request(provider, fake_api, 401, f"Incorrect API key provided: {KEY}")  # no retry storm
    assert error.kind == "auth"
    message = str(error)
    assert KEY not in message and "API key" in message
    assert "EMBEDDING_API_KEY" in message  # a custom base URL never takes OPENAI_API_KEY / VOYAGE_API_KEY
    assert error.__cause__ is None  # provider exceptions hold the request headers


@pytest.mark.parametrize("provider", PROVIDERS)
def test_forbidden_is_auth(provider, fake_api):
    assert error_of_one_request(provider, fake_api, 403, "Project does not have access").kind == "auth"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rate_limit_then_success(provider, fake_api):
    fake_api.script(PATH, [error_reply(429, "Rate limit reached", **{"Retry-After": "0.05"}), DEFAULT])
    slept = []
    embedder = make(provider, fake_api)
    embedder.sleep = lambda seconds: (slept.append(seconds), time.sleep(seconds))
    vectors = embedder.embed(["hello", "world"])
    np.testing.assert_allclose(vectors, expected(["hello", "world"], 16), atol=1e-6)
    assert len(fake_api.requests_to(PATH)) == 2
    # Retry-After respected (within the backoff cap), slept out as the shared pause
    assert slept == [pytest.approx(0.05, abs=0.01)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_persistent_rate_limit_gives_up(provider, fake_api):
    fake_api.script(PATH, [error_reply(429, "Rate limit reached")] * 10)
    embedder = make(provider, fake_api, max_retries=2)
    with pytest.raises(ProviderError) as caught:
        embedder.embed(["x"])
    assert caught.value.kind == "rate_limit"
    assert "rate limit" in str(caught.value).lower()
    assert len(fake_api.requests_to(PATH)) == 3  # first try + 2 retries


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout_retries_then_succeeds(provider, fake_api):
    fake_api.script(PATH, [Reply(delay=2.0), DEFAULT])
    embedder = make(provider, fake_api, timeout=0.5)
    vectors = embedder.embed(["slow"])
    assert vectors.shape == (1, 16)
    assert len(fake_api.requests_to(PATH)) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_persistent_timeout_gives_up(provider, fake_api):
    fake_api.script(PATH, [Reply(delay=2.0)] * 5)
    embedder = make(provider, fake_api, timeout=0.4, max_retries=1)
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        embedder.embed(["slow"])
    assert caught.value.kind == "timeout"
    assert len(fake_api.requests_to(PATH)) == 2
    assert time.monotonic() - started < 1.9  # gave up without waiting for the slow replies


@pytest.mark.parametrize("provider", PROVIDERS)
def test_bad_request_shows_provider_message(provider, fake_api):
    error = error_of_one_request(provider, fake_api, 400, "Input is too long for this model")
    assert error.kind == "bad_request"
    assert "Input is too long for this model" in str(error)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_connection_refused(provider, fake_api):
    embedder = make_embedder(provider, api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=1, timeout=1)
    embedder.backoff = FAST
    with pytest.raises(ProviderError) as caught:
        embedder.embed(["x"])
    assert caught.value.kind in ("connection", "timeout")
    assert KEY not in str(caught.value)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_failed_run_keeps_finished_batches_in_cache(provider, fake_api, cache_dir):
    texts = [f"chunk {i}" for i in range(5)]
    fake_api.script(PATH, [DEFAULT, error_reply(401, "bad key")])
    # One request at a time, so the third batch is never sent (concurrent runs: test_providers_volume.py).
    embedder = make(provider, fake_api, batch_size=2, max_concurrency=1)
    cache = EmbeddingCache(cache_dir)
    with pytest.raises(ProviderError):
        embed_texts(texts, embedder, cache)
    run = embed_texts(texts, embedder, cache)
    assert (run.n_cached, run.n_embedded) == (2, 3)
    np.testing.assert_allclose(run.vectors, expected(texts, 16), atol=1e-6)
    assert [len(r.body["input"]) for r in fake_api.requests_to(PATH)] == [2, 2, 2, 1]
    assert KEY.encode() not in b"".join(p.read_bytes() for p in cache_dir.iterdir())


def test_ada_rejects_dimensions():
    with pytest.raises(InputError, match="text-embedding-3"):
        make_embedder("openai", "text-embedding-ada-002", dimensions=256, api_key=KEY)
    assert make_embedder("openai", "text-embedding-ada-002", api_key=KEY).dimensions is None


def test_dimension_limits():
    with pytest.raises(InputError, match="between 1 and 1536"):
        make_embedder("openai", dimensions=4096, api_key=KEY)
    assert make_embedder("openai", "text-embedding-3-large", dimensions=3072, api_key=KEY).dimensions == 3072
    with pytest.raises(InputError, match="256, 512, 1024, 2048"):
        make_embedder("voyage", "voyage-3.5", dimensions=300, api_key=KEY)
    with pytest.raises(InputError, match="always returns 512"):
        make_embedder("voyage", "voyage-3-lite", dimensions=256, api_key=KEY)


@pytest.mark.parametrize(("provider", "variable"), [("openai", "OPENAI_API_KEY"), ("voyage", "VOYAGE_API_KEY")])
def test_missing_key(provider, variable, monkeypatch):
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(InputError, match=f"set {variable} \\(or enter a key on the Configure page\\)"):
        make_embedder(provider)
    monkeypatch.setenv(variable, KEY)
    embedder = make_embedder(provider)
    assert KEY not in repr(embedder)


def test_unknown_provider_and_models_list_choices():
    with pytest.raises(InputError, match="local, use, e5, openai, voyage"):
        make_embedder("cohere")
    with pytest.raises(InputError, match="text-embedding-3-small"):
        make_embedder("openai", "gpt-4o", api_key=KEY)
    with pytest.raises(InputError, match="voyage-3.5"):
        make_embedder("voyage", "voyage-9", api_key=KEY)
    # A compatible server may serve any model name.
    assert make_embedder("openai", "nomic-embed-text", api_key=KEY, base_url="http://localhost:1/v1").model == (
        "nomic-embed-text"
    )


def test_defaults_and_limits():
    openai_embedder = make_embedder("openai", api_key=KEY)
    voyage_embedder = make_embedder("voyage", api_key=KEY)
    assert isinstance(openai_embedder, OpenAIEmbedder) and isinstance(voyage_embedder, VoyageEmbedder)
    assert (openai_embedder.provider, openai_embedder.model, openai_embedder.max_tokens) == (
        "openai",
        "text-embedding-3-small",
        8191,
    )
    assert (voyage_embedder.provider, voyage_embedder.model, voyage_embedder.max_tokens) == (
        "voyage",
        "voyage-3.5",
        32000,
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_far_over_the_input_limit_is_cut_before_it_is_sent(provider, fake_api, cache_dir):
    huge = "word " * 200_000  # a 1 MB question cell
    embedder = make(provider, fake_api)
    run = embed_texts(["short question", huge], embedder, EmbeddingCache(cache_dir))
    # Two requests (the huge text fills one alone), sent concurrently: in either order.
    sent = sorted((text for request in fake_api.requests_to(PATH) for text in request.body["input"]), key=len)
    assert sent[0] == "short question"
    assert huge.startswith(sent[1]) and 0 < len(sent[1]) <= embedder.max_tokens * 4 < len(huge)
    assert run.n_over_limit == 1  # so the pipeline warns that it was truncated
    n_requests = len(fake_api.requests_to(PATH))
    again = embed_texts([huge], embedder, EmbeddingCache(cache_dir))  # cached under the full text
    assert again.n_cached == 1 and len(fake_api.requests_to(PATH)) == n_requests
    np.testing.assert_allclose(again.vectors[0], run.vectors[1])


# ---------------------------------------------------------------- the registry


def acme_spec(built: list) -> ProviderSpec:
    """A paid API provider that exists only in this test, declared the way a provider module declares its SPEC."""

    def factory(model, options):
        built.append((model, options))
        return FakeEmbedder("acme", model, options.dimensions)

    return ProviderSpec(
        name="acme", label="Acme", description="Acme embeddings (a test provider)", default_model="acme-embed-1",
        models={"acme-embed-1": ModelSpec(256, 512, 100_000, (64, 128), usd_per_1m_tokens=0.05)},
        factory=factory, trained_for_truncation=lambda model: True if model == "acme-embed-1" else None,
        key_variable="ACME_API_KEY", hosts=("api.acme.example",), paid=True, remote=True, max_inputs_per_request=100,
    )


def test_a_provider_registered_as_one_spec_reaches_make_embedder_the_cli_and_the_price_table(monkeypatch, capsys):
    from coverage_core import cli, costs

    built = []
    monkeypatch.setitem(registry.PROVIDERS, "acme", acme_spec(built))

    embedder = make_embedder("Acme", dimensions=64, batch_size=10)
    assert (embedder.provider, embedder.model, embedder.dimensions) == ("acme", "acme-embed-1", 64)
    assert built[-1][1].batch_size == 10 and built[-1][1].max_retries == 5

    assert cli.main(["analyze", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "local,use,e5,openai,voyage,acme}" in help_text and "acme-embed-1 for acme" in help_text
    assert "ACME_API_KEY" in help_text and "OpenAI/Voyage/Acme: requests in flight" in help_text

    table = costs.default_price_table()
    assert table[table["provider"] == "acme"].values.tolist() == [["acme", "acme-embed-1", "embedding", 0.05, 0.0]]
    assert costs.estimate_embedding_cost(2_000_000, "acme", "acme-embed-1", table).usd == pytest.approx(0.1)

    assert DEFAULT_MODELS["acme"] == "acme-embed-1" and trained_for_truncation("acme") is True
    # Its key goes to its own host only, as every provider's does.
    assert key_variable("acme", None) == key_variable("acme", "https://api.acme.example/v1") == "ACME_API_KEY"
    assert key_variable("acme", "http://127.0.0.1:9/v1") == "EMBEDDING_API_KEY"


def test_every_registered_spec_is_consistent():
    assert list(registry.PROVIDERS) == ["auto", "local", "use", "e5", "openai", "voyage"]
    for name, spec in registry.PROVIDERS.items():
        assert spec.name == name and spec.default_model in spec.models
        assert DEFAULT_MODELS[name] == spec.default_model
        assert not spec.paid or (spec.key_variable and spec.hosts)  # a paid endpoint takes its own key
        assert spec.remote == (spec.max_inputs_per_request is not None)
    assert registry.provider_spec(" OpenAI ") is registry.PROVIDERS["openai"]
    with pytest.raises(InputError, match="local, use, e5, openai, voyage"):
        registry.provider_spec("cohere")
