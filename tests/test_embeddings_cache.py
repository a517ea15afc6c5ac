"""The on-disk cache and the cache-aware embed_texts driver."""

import threading

import numpy as np
import pytest

from coverage_core.embeddings import (
    CacheKey,
    Embedder,
    EmbeddingCache,
    LocalEmbedder,
    default_cache_dir,
    embed_texts,
    make_embedder,
    text_hash,
)
from coverage_core.embeddings.cache import CACHE_FILE_NAME
from coverage_core.errors import ProviderError
from tests.fakes import FakeEmbedder

TEXTS = [f"text number {i} " + "word " * (i % 7) for i in range(10)]


def errors_in_threads(worker, n_threads: int) -> list[Exception]:
    """Run ``worker(0 .. n_threads - 1)`` in as many threads at once; the exceptions they raised."""
    errors = []

    def guarded(n):
        try:
            worker(n)
        except Exception as exc:  # collected for the caller to assert on
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(n,)) for n in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_fake_follows_the_protocol():
    assert isinstance(FakeEmbedder(), Embedder)
    assert isinstance(make_embedder("local"), Embedder)


def test_first_run_embeds_second_run_is_fully_cached(cache_dir):
    cache = EmbeddingCache(cache_dir)
    first_embedder = FakeEmbedder()
    first = embed_texts(TEXTS, first_embedder, cache)
    assert (first.n_cached, first.n_embedded) == (0, 10)
    assert first_embedder.n_embedded == 10
    assert first.vectors.shape == (10, 8) and first.vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first.vectors, axis=1), 1.0, atol=1e-6)
    assert list(first.token_counts) == [len(t.split()) for t in TEXTS]
    assert first.n_over_limit == sum(len(t.split()) > 5 for t in TEXTS)

    second_embedder = FakeEmbedder()
    second = embed_texts(TEXTS, second_embedder, cache)
    assert (second.n_cached, second.n_embedded) == (10, 0)
    assert first.new_tokens == sum(first.token_counts) and second.new_tokens == 0
    # The model (here: the fake) is never touched, not even for token counts.
    assert second_embedder.embed_calls == [] and second_embedder.count_calls == []
    np.testing.assert_array_equal(second.vectors, first.vectors)
    np.testing.assert_array_equal(second.token_counts, first.token_counts)
    assert second.n_over_limit == first.n_over_limit


@pytest.mark.slow
def test_fully_cached_run_never_loads_the_local_model(cache_dir, forced_precision):
    cache = EmbeddingCache(cache_dir)
    texts = ["Volta built the first battery.", "Ants are social insects."]
    first = embed_texts(texts, make_embedder("local"), cache)
    fresh = make_embedder("local")
    again = embed_texts(texts, fresh, cache)
    assert not fresh.is_loaded
    assert again.n_cached == 2
    np.testing.assert_array_equal(again.vectors, first.vectors)  # exact: the cache returns the float32 bytes


def test_partial_cache_embeds_only_missing_and_keeps_input_order(cache_dir):
    cache = EmbeddingCache(cache_dir)
    embed_texts(TEXTS[:6], FakeEmbedder(), cache)
    embedder = FakeEmbedder()
    run = embed_texts(list(reversed(TEXTS)), embedder, cache)
    assert sorted(t for call in embedder.embed_calls for t in call) == sorted(TEXTS[6:])
    assert (run.n_cached, run.n_embedded) == (6, 4)
    assert run.new_tokens == sum(len(t.split()) for t in TEXTS[6:])  # what a paid provider bills
    reference = embed_texts(list(reversed(TEXTS)), FakeEmbedder(), None).vectors
    np.testing.assert_allclose(run.vectors, reference, atol=1e-7)


def test_duplicates_are_embedded_once(cache_dir):
    embedder = FakeEmbedder()
    texts = ["a b", "c", "a b", "c", "a b", "d"]
    run = embed_texts(texts, embedder, None)
    assert embedder.n_embedded == 3
    assert (run.n_cached, run.n_embedded) == (0, 6)
    assert run.new_tokens == 2 + 1 + 1  # each distinct text billed once
    np.testing.assert_array_equal(run.vectors[0], run.vectors[2])
    np.testing.assert_array_equal(run.vectors[1], run.vectors[3])
    assert not np.allclose(run.vectors[0], run.vectors[1])


def test_progress_counts_cached_and_duplicate_texts(cache_dir):
    cache = EmbeddingCache(cache_dir)
    embed_texts(TEXTS[:3], FakeEmbedder(), cache)
    calls = []
    texts = TEXTS + TEXTS[:2]  # 12 inputs, 10 distinct, 3 distinct cached
    embed_texts(texts, FakeEmbedder(batch_size=4), cache, progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (5, 12)  # 3 cached texts, two of them twice
    assert calls[-1] == (12, 12)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert len(calls) == 1 + 2  # lookup, then 7 missing texts in batches of 4


def test_failure_half_way_keeps_finished_batches(cache_dir):
    cache = EmbeddingCache(cache_dir)
    failing = FakeEmbedder(batch_size=3, fail_from_batch=3)
    with pytest.raises(ProviderError):
        embed_texts(TEXTS, failing, cache)
    assert cache.count(CacheKey.of(failing)) == 6  # batches 1 and 2 were written

    retry = FakeEmbedder(batch_size=3)
    run = embed_texts(TEXTS, retry, cache)
    assert retry.n_embedded == 4
    assert (run.n_cached, run.n_embedded) == (6, 4)
    np.testing.assert_allclose(run.vectors, embed_texts(TEXTS, FakeEmbedder(), None).vectors, atol=1e-7)


def test_keys_differ_by_provider_model_and_dimensions(cache_dir):
    cache = EmbeddingCache(cache_dir)
    base = FakeEmbedder()
    embed_texts(TEXTS, base, cache)
    for other in (
        FakeEmbedder(provider="other"),
        FakeEmbedder(model="m2"),
        FakeEmbedder(dimensions=8),
    ):
        run = embed_texts(TEXTS, other, cache)
        assert run.n_cached == 0, (other.provider, other.model, other.dimensions)
        assert other.n_embedded == 10
    assert cache.count() == 40
    assert CacheKey.of(FakeEmbedder(dimensions=None)) == CacheKey("fake", "m", 0)


@pytest.mark.slow
def test_bf16_and_fp32_vectors_of_one_text_are_stored_under_different_keys(cache_dir):
    cache = EmbeddingCache(cache_dir)
    text = ["Volta built the first battery."]
    fp32, bf16 = LocalEmbedder(precision="fp32"), LocalEmbedder(precision="bf16")
    # fp32 keeps the key every cache was written with before precisions were told apart.
    assert CacheKey.of(fp32) == CacheKey("local", "all-MiniLM-L6-v2", 0)
    assert CacheKey.of(bf16) == CacheKey("local", "all-MiniLM-L6-v2@bf16", 0)
    first = embed_texts(text, fp32, cache)
    other = embed_texts(text, bf16, cache)
    assert (other.n_cached, other.n_embedded, cache.count()) == (0, 1, 2)  # not served the fp32 vector
    assert not np.array_equal(first.vectors, other.vectors)
    for precision, run in (("fp32", first), ("bf16", other)):
        again = embed_texts(text, LocalEmbedder(precision=precision), cache)
        assert again.n_cached == 1
        np.testing.assert_array_equal(again.vectors, run.vectors)  # exact: the cache returns the float32 bytes


def test_batches_respect_the_token_cap(cache_dir):
    embedder = FakeEmbedder(batch_size=100)
    embedder.max_batch_tokens = 10
    texts = ["one two three four"] + [f"w{i} x y z" for i in range(5)]  # 4 tokens each
    embed_texts(texts, embedder, None)
    assert [len(call) for call in embedder.embed_calls] == [2, 2, 2]


def test_concurrent_threads_share_one_cache(cache_dir):
    cache = EmbeddingCache(cache_dir)
    results = {}
    texts = [f"shared text {i}" for i in range(60)]

    def worker(n):
        results[n] = embed_texts(texts[n % 3 :: 2], FakeEmbedder(batch_size=5), cache).vectors

    assert errors_in_threads(worker, 8) == []
    assert cache.count() == 60
    # A fresh cache object (as another process or session would have) sees everything.
    again = FakeEmbedder()
    run = embed_texts(texts, again, EmbeddingCache(cache_dir))
    assert run.n_cached == 60 and again.embed_calls == []
    np.testing.assert_array_equal(run.vectors[0::2], results[0])


def test_database_holds_no_plaintext(cache_dir):
    cache = EmbeddingCache(cache_dir)
    secret_text = "Unique-Plaintext-Marker-4711 about the Antwerp diamond district"
    embed_texts([secret_text], FakeEmbedder(), cache)
    files = list(cache_dir.iterdir())
    assert cache.path in files
    blob = b"".join(path.read_bytes() for path in files)
    assert b"Unique-Plaintext-Marker-4711" not in blob
    assert text_hash(secret_text) in blob


def test_default_directory_from_environment(cache_dir, monkeypatch, tmp_path):
    assert default_cache_dir() == cache_dir
    assert EmbeddingCache().path == cache_dir / CACHE_FILE_NAME
    monkeypatch.delenv("COVERAGE_CORE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "coverage_core"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "coverage_core"


def test_cache_is_created_lazily_and_can_be_cleared(cache_dir):
    cache = EmbeddingCache(cache_dir)
    assert not cache_dir.exists()
    embed_texts(TEXTS, FakeEmbedder(), cache)
    embed_texts(TEXTS, FakeEmbedder(model="m2"), cache)
    cache.clear(CacheKey("fake", "m", 0))
    assert cache.count() == 10
    cache.clear()
    assert cache.count() == 0


def test_empty_input(cache_dir):
    embedder = FakeEmbedder()
    run = embed_texts([], embedder, EmbeddingCache(cache_dir))
    assert run.vectors.shape[0] == 0 and run.token_counts.shape == (0,)
    assert embedder.embed_calls == [] and embedder.count_calls == []


def test_importing_the_package_loads_no_heavy_library():
    import subprocess
    import sys

    code = (
        "import sys, coverage_core.embeddings as e; e.make_embedder('local'); "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'openai', 'voyageai') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert result.stdout.strip() == "[]"


def test_unusable_cache_file_is_a_clear_input_error(cache_dir):
    from coverage_core.errors import InputError

    cache_dir.mkdir(parents=True)
    (cache_dir / CACHE_FILE_NAME).write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError, match="delete the file"):
        embed_texts(["x"], FakeEmbedder(), EmbeddingCache(cache_dir))


def test_uncached_texts_names_what_a_run_would_send(cache_dir):
    from coverage_core.embeddings.cache import uncached_texts

    cache = EmbeddingCache(cache_dir)
    embedder = FakeEmbedder()
    assert uncached_texts(TEXTS[:3] + TEXTS[:1], embedder, None) == TEXTS[:3]
    embed_texts(TEXTS[:4], embedder, cache)
    wanted = TEXTS[2:8] + [TEXTS[6]]
    assert uncached_texts(wanted, embedder, cache) == TEXTS[4:8]
    assert uncached_texts(wanted, FakeEmbedder(model="other"), cache) == TEXTS[2:8]
    run = embed_texts(wanted, FakeEmbedder(), cache)
    assert run.n_embedded == 5 and len(uncached_texts(wanted, embedder, cache)) == 0


def _filled_cache(cache_dir, n=300):
    """A cache holding ``n`` vectors (several SQLite pages), all connections closed."""
    cache = EmbeddingCache(cache_dir)
    key = CacheKey("fake", "m", 0)
    rng = np.random.default_rng(0)
    items = [(text_hash(f"text {i}"), rng.standard_normal(8), 3) for i in range(n)]
    cache.put_many(key, items)
    return key, [digest for digest, _, _ in items]


def test_damaged_pages_make_every_cache_operation_a_clear_input_error(cache_dir):
    """Garbage over the middle of the file (as `dd` would write it): one sentence, from every operation."""
    from coverage_core.errors import InputError

    key, digests = _filled_cache(cache_dir)
    path = cache_dir / CACHE_FILE_NAME
    data = bytearray(path.read_bytes())
    assert len(data) > 12288 and not (cache_dir / (CACHE_FILE_NAME + "-wal")).exists()
    data[4096:12288] = np.random.default_rng(1).integers(0, 256, 8192, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))

    cache = EmbeddingCache(cache_dir)
    operations = {
        "lookup": lambda: cache.get_many(key, digests),
        "has": lambda: cache.has_many(key, digests),
        "write": lambda: cache.put_many(key, [(text_hash("new"), np.ones(8), 1)]),
        "count": lambda: cache.count(),
        "count one model": lambda: cache.count(key),
        "clear": lambda: cache.clear(key),
        "embed_texts": lambda: embed_texts(["text 1", "new text"], FakeEmbedder(model="m"), cache),
    }
    for name, operation in operations.items():
        with pytest.raises(InputError) as raised:
            operation()
        message = str(raised.value)
        assert message == (
            f"Cannot use the embedding cache {path} (database disk image is malformed); delete the file "
            "or set COVERAGE_CORE_CACHE_DIR to another folder."
        ), name


def test_a_damaged_vector_is_a_clear_input_error(cache_dir):
    """A row SQLite reads without complaint but whose vector is not whole float32s."""
    import sqlite3

    from coverage_core.errors import InputError

    key, digests = _filled_cache(cache_dir, n=3)
    with sqlite3.connect(cache_dir / CACHE_FILE_NAME) as connection:
        connection.execute("UPDATE embeddings SET vector = ? WHERE text_hash = ?", (b"\x00" * 7, digests[0]))
    connection.close()
    with pytest.raises(InputError, match="delete the file"):
        EmbeddingCache(cache_dir).get_many(key, digests)


def test_an_empty_cache_file_is_rebuilt_with_a_warning(cache_dir):
    cache_dir.mkdir(parents=True)
    (cache_dir / CACHE_FILE_NAME).write_bytes(b"")
    cache = EmbeddingCache(cache_dir)
    assert cache.warnings == []
    first = embed_texts(TEXTS, FakeEmbedder(), cache)
    assert first.n_embedded == len(TEXTS)
    assert cache.warnings == [
        f"The embedding cache {cache_dir / CACHE_FILE_NAME} was an empty file, so it was started afresh and "
        "earlier embeddings will be computed again; if this happens again, check the free space on that disk."
    ]
    assert cache.count() == len(TEXTS)
    embed_texts(TEXTS, FakeEmbedder(), cache)
    assert len(cache.warnings) == 1  # said once
    # The rebuilt file is a working cache: a new instance finds everything and warns of nothing.
    again = EmbeddingCache(cache_dir)
    assert embed_texts(TEXTS, FakeEmbedder(), again).n_cached == len(TEXTS)
    assert again.warnings == []


def test_a_new_cache_file_is_no_warning(cache_dir):
    cache = EmbeddingCache(cache_dir)
    embed_texts(TEXTS, FakeEmbedder(), cache)
    assert cache.warnings == []


def test_cache_warnings_reach_the_analysis_warnings(cache_dir):
    """Embedding copies the cache's sentences into the analysis warnings (CLI stderr, report, dashboard)."""
    import pandas as pd

    from coverage_core import embedding_steps
    from coverage_core.types import Question, QuestionSet

    cache_dir.mkdir(parents=True)
    (cache_dir / CACHE_FILE_NAME).write_bytes(b"")
    cache = EmbeddingCache(cache_dir)
    texts = ["What is a drum?", "How is a flute played?", "Who plays the violin?"]
    questions = QuestionSet(
        frame=pd.DataFrame({"question": texts}), question_column="question",
        questions=[Question(row, text) for row, text in enumerate(texts)],
    )
    embedded = embedding_steps.embed_questions(questions, FakeEmbedder(), cache)
    assert len(embedded.cache_warnings) == 1 and "was an empty file" in embedded.cache_warnings[0]
    assert cache.warnings == []  # taken: told once, with the vectors embedded after the rebuild
    assert embedding_steps.embed_questions(questions, FakeEmbedder(), cache).cache_warnings == []


def test_plan_batches_caps_texts_and_tokens_and_sends_an_oversized_text_alone():
    from coverage_core.embeddings.base import plan_batches

    assert plan_batches([1] * 5, 2, None) == [[0, 1], [2, 3], [4]]
    assert plan_batches([4, 4, 30, 4, 4, 4], 100, 10) == [[0, 1], [2], [3, 4], [5]]
    assert plan_batches([], 3, 10) == []


def test_an_embedder_without_max_concurrency_runs_in_the_calling_thread(cache_dir):
    threads = []

    class Sequential(FakeEmbedder):  # like the local model: no max_concurrency attribute
        def embed(self, texts):
            threads.append(threading.current_thread())
            return super().embed(texts)

    embed_texts(TEXTS, Sequential(batch_size=3), EmbeddingCache(cache_dir))
    assert len(threads) == 4 and set(threads) == {threading.current_thread()}


def test_concurrent_batches_in_flight_at_a_failure_are_kept(cache_dir):
    # Batch 2 fails at once while batches 1, 3 and 4 are still being computed: the three are
    # paid for, so they must reach the cache; batch 5 never starts.
    release = threading.Event()

    class Concurrent(FakeEmbedder):
        max_concurrency = 4

        def embed(self, texts):
            with self.lock:
                self.embed_calls.append(list(texts))
                number = len(self.embed_calls)
            if number == 2:
                release.set()
                raise ProviderError("scripted refusal", "bad_request")
            release.wait(5)
            return np.array([[len(text), 1.0, 2.0] for text in texts])

    embedder = Concurrent(batch_size=2)
    cache = EmbeddingCache(cache_dir)
    progress = []
    with pytest.raises(ProviderError, match="scripted refusal"):
        embed_texts(TEXTS, embedder, cache, progress=lambda done, total: progress.append(done))
    assert len(embedder.embed_calls) == 4  # no batch started after the failure
    assert cache.count(CacheKey.of(embedder)) == 6
    assert progress == [0, 2, 4, 6]


def test_threads_starting_on_a_new_cache_file_at_once_get_no_false_empty_file_warning(cache_dir):
    cache = EmbeddingCache(cache_dir)
    start = threading.Barrier(8)

    def worker(n):
        start.wait()
        cache.put_many(CacheKey("p", "m", 0), [(text_hash(f"text {n}"), np.ones(4, np.float32), 1)])

    assert errors_in_threads(worker, 8) == [] and cache.count() == 8
    assert cache.warnings == []  # the file was new, not an empty leftover
