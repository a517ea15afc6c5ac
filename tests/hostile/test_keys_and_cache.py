"""Issue 22, hostile inputs: a user's key sent where a file says, cache poisoning, provider garbage, a damaged
or locked cache.

Every server here is a fake on 127.0.0.1 (tests/fakes.py) spoken to by the real ``openai`` and ``voyageai``
client libraries; every hostile file is written in ``tmp_path``.
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from coverage_core.embeddings import Backoff, CacheKey, EmbeddingCache, embed_texts, make_embedder, text_hash
from coverage_core.embeddings.cache import CACHE_FILE_NAME
from coverage_core.embeddings.registry import model_spec
from coverage_core.errors import ProviderError
from tests.app_support import shown
from tests.fakes import DEFAULT, FakeAPIServer, FakeEmbedder, Reply, embeddings_reply
from ui import engine, state
from ui.settings import Settings

PATH = "/v1/embeddings"
KEY = "sk-hostile-test-key-0123456789"
TYPED_KEY = "typed-in-the-browser-7777"
NEW_KEY = "confirmed-after-notice-8888"
FAST = Backoff(initial=0.01, maximum=0.02)
TEXTS = [f"passage number {i} about rivers" for i in range(6)]
PROVIDERS = ["openai", "voyage"]


def remote(provider, server, **options):
    options.setdefault("api_key", KEY)
    options.setdefault("timeout", 5.0)
    embedder = make_embedder(provider, base_url=options.pop("base_url", server.url + "/v1"), **options)
    embedder.backoff = FAST
    return embedder


def negated_reply(body: dict) -> Reply:
    """What a hostile server answers: well-formed embeddings, but not the ones the real model gives."""
    reply = embeddings_reply(body)
    for item in reply.body["data"]:
        item["embedding"] = [-x for x in item["embedding"]]
    return reply


# ---------------------------------------------------------------- cache poisoning


@pytest.fixture
def two_servers():
    with FakeAPIServer() as honest, FakeAPIServer() as hostile:
        hostile.handle(PATH, negated_reply)
        yield honest, hostile


@pytest.mark.parametrize("provider", PROVIDERS)
def test_vectors_from_one_base_url_are_never_reused_for_another(provider, two_servers, cache_dir):
    honest, hostile = two_servers
    cache = EmbeddingCache(cache_dir)
    poisoned = embed_texts(TEXTS, remote(provider, hostile), cache)
    assert poisoned.n_embedded == len(TEXTS)

    run = embed_texts(TEXTS, remote(provider, honest), cache)
    assert (run.n_cached, run.n_embedded) == (0, len(TEXTS))
    assert len(honest.requests_to(PATH)) == 1
    np.testing.assert_allclose(run.vectors, -poisoned.vectors, atol=1e-6)  # the honest server's own vectors
    # Each server's vectors are kept apart, and neither is filed under the provider's own endpoint.
    own = CacheKey.of(make_embedder(provider, api_key=KEY))
    assert cache.count(own) == 0
    assert cache.count() == 2 * len(TEXTS)


def test_credentials_in_a_base_url_are_not_part_of_the_key_and_never_stored(two_servers, cache_dir):
    honest, _ = two_servers
    password = "hunter2PASSWORDinURL"
    host = honest.url.removeprefix("http://")
    cache = EmbeddingCache(cache_dir)
    embed_texts(TEXTS, remote("openai", honest, base_url=f"http://user:{password}@{host}/v1/"), cache)
    again = embed_texts(TEXTS, remote("openai", honest, base_url=f"HTTP://{host}/v1?token={password}"), cache)
    assert again.n_cached == len(TEXTS)  # one server, whatever credentials reach it
    stored = b"".join(path.read_bytes() for path in cache_dir.iterdir())
    assert password.encode() not in stored and KEY.encode() not in stored


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_providers_own_endpoint_keeps_reading_older_caches(provider, cache_dir, monkeypatch):
    """Entries written before endpoints were told apart (bare model name) stay valid for the provider itself."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    own = make_embedder(provider, api_key=KEY)
    old_key = CacheKey(provider, own.model, 0)
    assert CacheKey.of(own) == old_key
    cache = EmbeddingCache(cache_dir)
    size = model_spec(provider, own.model).dimensions
    cache.put_many(old_key, [(text_hash(text), np.ones(size), 3) for text in TEXTS])
    run = embed_texts(TEXTS, own, cache)  # nothing to send: the provider is never contacted
    assert (run.n_cached, run.n_embedded) == (len(TEXTS), 0)


def test_a_base_url_set_by_the_operator_is_an_endpoint_of_its_own(monkeypatch, fake_api):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_api.url + "/v1")
    operator = make_embedder("openai", api_key=KEY)
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert CacheKey.of(operator) != CacheKey.of(make_embedder("openai", api_key=KEY))
    assert CacheKey.of(operator) == CacheKey.of(remote("openai", fake_api))


def test_voyage_query_vectors_are_not_document_vectors(fake_api):
    documents, queries = remote("voyage", fake_api), remote("voyage", fake_api)
    queries.input_type = "query"
    assert CacheKey.of(documents) != CacheKey.of(queries)


# ---------------------------------------------------------------- provider garbage


def good_body(n: int, width: int = 16) -> dict:
    return embeddings_reply({"input": [f"t{i}" for i in range(n)]}, width).body


def garbage(kind: str):
    """A 200 reply to a request of two texts that holds no usable embeddings."""
    body = good_body(2)
    if kind == "not JSON":
        return "<html><body>Welcome to nginx!</body></html>"
    if kind == "no embeddings":
        body.pop("data")
    elif kind == "wrong count":
        body["data"] = body["data"][:1]
    elif kind == "wrong length":
        body["data"][1]["embedding"] = body["data"][1]["embedding"][:5]
    elif kind == "not numbers":
        body["data"][0]["embedding"] = ["a"] * 16
    elif kind == "empty vectors":
        for item in body["data"]:
            item["embedding"] = []
    return body


KINDS = ["not JSON", "no embeddings", "wrong count", "wrong length", "not numbers", "empty vectors"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("kind", KINDS)
def test_garbage_replies_are_one_plain_bad_response_sentence_and_paid_batches_stay(provider, kind, fake_api,
                                                                                   cache_dir):
    fake_api.script(PATH, [DEFAULT, Reply(200, garbage(kind))])
    embedder = remote(provider, fake_api, batch_size=2, max_concurrency=1)
    cache = EmbeddingCache(cache_dir)
    texts = TEXTS[:4]
    with pytest.raises(ProviderError) as caught:
        embed_texts(texts, embedder, cache)
    error = caught.value
    message = str(error)
    assert error.kind == "bad_response"
    assert "no usable embeddings" in message and message.endswith(".") and "\n" not in message
    assert KEY not in message and "Traceback" not in message
    assert len(fake_api.requests_to(PATH)) == 2  # garbage is not retried: each attempt may be billed
    assert cache.count(CacheKey.of(embedder)) == 2  # the first batch was paid for and kept

    run = embed_texts(texts, embedder, cache)
    assert (run.n_cached, run.n_embedded) == (2, 2)


def test_a_later_batch_of_another_length_is_a_bad_response_and_earlier_batches_stay(fake_api, cache_dir):
    fake_api.script(PATH, [DEFAULT, Reply(200, embeddings_reply({"input": ["a", "b"]}, 8).body)])
    embedder = remote("openai", fake_api, batch_size=2, max_concurrency=1)
    cache = EmbeddingCache(cache_dir)
    with pytest.raises(ProviderError) as caught:
        embed_texts(TEXTS[:4], embedder, cache)
    assert caught.value.kind == "bad_response"
    assert cache.count(CacheKey.of(embedder)) == 2


def test_vectors_shorter_than_the_dimensions_asked_for_are_a_bad_response(fake_api):
    fake_api.script(PATH, [Reply(200, good_body(2, width=8))])
    with pytest.raises(ProviderError) as caught:
        remote("openai", fake_api, dimensions=16).embed(["a", "b"])
    assert caught.value.kind == "bad_response" and "16" in str(caught.value)


# ---------------------------------------------------------------- a damaged cache


def damage(cache_dir, text: str, vector) -> None:
    with sqlite3.connect(cache_dir / CACHE_FILE_NAME) as connection:
        connection.execute("UPDATE embeddings SET vector = ? WHERE text_hash = ?",
                           (np.asarray(vector, dtype="<f4").tobytes(), text_hash(text)))
    connection.close()


@pytest.mark.parametrize("bad", [np.ones(5), np.full(8, np.nan), np.array([np.inf] * 8)], ids=["short", "nan", "inf"])
def test_a_damaged_cached_vector_is_embedded_again_and_reported(bad, cache_dir):
    cache = EmbeddingCache(cache_dir)
    first = embed_texts(TEXTS, FakeEmbedder(width=8), cache)
    damage(cache_dir, TEXTS[2], bad)

    embedder = FakeEmbedder(width=8)
    cache = EmbeddingCache(cache_dir)
    run = embed_texts(TEXTS, embedder, cache)
    assert embedder.sent == [TEXTS[2]]
    assert (run.n_cached, run.n_embedded) == (len(TEXTS) - 1, 1)
    np.testing.assert_allclose(run.vectors, first.vectors, atol=1e-6)
    assert len(cache.warnings) == 1 and "damaged" in cache.warnings[0] and str(cache.path) in cache.warnings[0]

    repaired = EmbeddingCache(cache_dir)
    assert embed_texts(TEXTS, FakeEmbedder(width=8), repaired).n_embedded == 0 and repaired.warnings == []


def test_cached_vectors_of_another_size_than_the_model_makes_now_are_embedded_again(cache_dir):
    """Every cached vector is of one wrong size: the vectors embedded in this run show the model's real size."""
    cache = EmbeddingCache(cache_dir)
    embed_texts(TEXTS[:3], FakeEmbedder(width=8), cache)
    for text in TEXTS[:3]:
        damage(cache_dir, text, np.ones(5))
    embedder = FakeEmbedder(width=8)
    cache = EmbeddingCache(cache_dir)
    progress = []
    run = embed_texts(TEXTS[:4], embedder, cache, progress=lambda done, total: progress.append(done))
    assert run.vectors.shape == (4, 8)
    assert sorted(embedder.sent) == sorted(TEXTS[:4])
    assert (run.n_cached, run.n_embedded) == (0, 4)
    assert progress == sorted(progress) and progress[-1] == 4
    assert any("3 vectors" in warning and "damaged" in warning for warning in cache.warnings)


def test_an_api_models_cached_vector_of_the_wrong_length_is_damaged_even_when_all_agree(cache_dir, monkeypatch):
    """At the provider's own endpoint the registry knows the size: a cache of 5-number vectors is not used."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    own = make_embedder("openai", api_key=KEY, dimensions=256)
    cache = EmbeddingCache(cache_dir)
    cache.put_many(CacheKey.of(own), [(text_hash(text), np.ones(5), 2) for text in TEXTS[:2]])

    def refuse(texts):  # the provider itself is never contacted in a test
        raise ProviderError("offline", "connection")

    monkeypatch.setattr(own, "embed", refuse)
    with pytest.raises(ProviderError):
        embed_texts(TEXTS[:2], own, cache)
    assert any("damaged" in warning for warning in cache.warnings)


# ---------------------------------------------------------------- a locked cache


def test_a_locked_cache_keeps_the_new_embeddings_and_says_they_were_not_saved(cache_dir):
    cache = EmbeddingCache(cache_dir)
    embed_texts(TEXTS[:2], FakeEmbedder(width=8), cache)  # the file exists, in WAL mode
    cache.lock_timeout = 0.2
    writes = []
    put_many = cache.put_many

    def counted_put_many(key, items):
        writes.append(len(items))
        return put_many(key, items)

    cache.put_many = counted_put_many
    blocker = sqlite3.connect(cache_dir / CACHE_FILE_NAME, timeout=0.2, isolation_level=None)
    try:
        blocker.execute("BEGIN EXCLUSIVE")  # another program writing, for longer than the timeout
        embedder = FakeEmbedder(width=8, batch_size=2)
        run = embed_texts(TEXTS, embedder, cache)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert run.vectors.shape == (len(TEXTS), 8) and (run.n_cached, run.n_embedded) == (2, 4)
    assert embedder.n_embedded == 4  # paid once, used at once
    assert writes == [2]  # after the first refusal no batch waits out the lock again
    assert len(cache.warnings) == 1 and "could not be written" in cache.warnings[0]
    assert "database is locked" in cache.warnings[0]
    assert EmbeddingCache(cache_dir).count() == 2  # nothing half-written


# ---------------------------------------------------------------- a shared saved analysis picks the server


def test_the_notice_names_the_settings_without_credentials():
    before = Settings(provider="openai")
    after = before.replace(base_url="http://user:SECRETPASS@evil.example/v1", model="text-embedding-3-large")
    notice = engine.provider_notice(before, after)
    assert "http://***@evil.example/v1" in notice and "SECRETPASS" not in notice
    assert "text-embedding-3-large" in notice and "Configure" in notice
    assert engine.provider_notice(before, before.replace(n_clusters=7, chunk_size=500)) is None


@pytest.fixture
def hostile_saved(analysis, tmp_path, monkeypatch, fake_api):
    """A saved analysis in the server's allowed folder whose manifest names the fake server as its base URL."""
    from coverage_core.saved.analysis import MANIFEST, SAVED_ANALYSES_VARIABLE, save_analysis

    root = tmp_path / "saved"
    folder = save_analysis(analysis, root / "from_a_colleague")
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    manifest["config"]["embedding"].update(provider="openai", model="text-embedding-3-small",
                                           base_url=fake_api.url + "/v1", dimensions=None)
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.setenv(SAVED_ANALYSES_VARIABLE, str(root))
    monkeypatch.delenv("EMBEDDING_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return fake_api


def run_upload_and_open(at):
    at.switch_page("pages/1_upload.py").run()
    at.radio(key=state.W_KNOWLEDGE_BASE).set_value("saved").run()
    at.selectbox(key=state.W_SAVED_FOLDER).set_value("from_a_colleague").run()
    at.button(key=state.W_OPEN_SAVED).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert state.SAVED_OPENED in at.session_state  # opened (the Results page shows it now)
    return at


def test_a_shared_saved_analysis_never_sends_the_typed_key_to_the_server_it_names(hostile_saved, cache_dir):
    from streamlit.testing.v1 import AppTest

    from tests.app_support import APP, TIMEOUT, texts

    server = hostile_saved
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[state.SETTINGS] = Settings(provider="openai")  # OpenAI itself
    at.session_state[state.EMBED_API_KEY] = TYPED_KEY
    at.run()
    run_upload_and_open(at)
    assert any(server.url in shown(toast.value) and "forgotten" in toast.value for toast in at.toast)  # said at once
    assert at.session_state[state.SETTINGS].base_url == server.url + "/v1"  # shown, not hidden
    assert state.EMBED_API_KEY not in at.session_state

    at.switch_page("pages/2_configure.py").run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = " ".join(texts(at.warning))
    assert server.url in warnings and "forgotten" in warnings
    assert not any("set for this session" in s for s in texts(at.success))

    # A run now (its embedded questions forgotten, so there is something to send) is refused in one sentence.
    del at.session_state[state.QUESTION_VECTORS]
    at.run()
    at.checkbox(key=state.W_COST_OK).check().run()
    at.button(key=state.W_RUN).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("confirm these settings" in s for s in texts(at.error))
    assert server.requests == []

    # Confirmed: the server gets only the key typed for it afterwards, never the earlier one.
    at.button(key=state.W_CONFIRM_PROVIDER).click().run()
    assert state.PROVIDER_NOTICE not in at.session_state
    at.text_input(key=state.W_EMBED_KEY).input(NEW_KEY).run()
    at.checkbox(key=state.W_COST_OK).check().run()
    at.button(key=state.W_RUN).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert server.requests_to(PATH)
    assert set(server.authorizations()) == {f"Bearer {NEW_KEY}"}
    assert not server.received(TYPED_KEY) and not server.received(KEY)


def test_a_saved_analysis_with_the_users_own_settings_keeps_the_typed_key(hostile_saved):
    from streamlit.testing.v1 import AppTest

    from tests.app_support import APP, TIMEOUT

    server = hostile_saved
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[state.SETTINGS] = Settings(provider="openai", model="text-embedding-3-small",
                                                base_url=server.url + "/v1")
    at.session_state[state.EMBED_API_KEY] = TYPED_KEY
    at.run()
    run_upload_and_open(at)
    assert at.session_state[state.EMBED_API_KEY] == TYPED_KEY
    assert state.PROVIDER_NOTICE not in at.session_state


def test_the_embedder_gets_no_key_at_all_while_settings_are_held():
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from coverage_core.errors import InputError
        from ui import state

        st.session_state[state.EMBED_API_KEY] = "still-here"
        state.hold_provider_settings("Held.")
        try:
            state.embed_api_key()
        except InputError as error:
            st.write(f"refused: {error}")
        st.write(f"typed: {state.typed_embed_key()}")
        state.confirm_provider_settings()
        st.write(f"after: {state.embed_api_key()}")

    at = AppTest.from_function(script).run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["refused: Held.", "typed: None", "after: None"]

