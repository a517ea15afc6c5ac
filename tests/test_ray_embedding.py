"""Embedding on Ray Data (coverage_core/embeddings/ray_embedding.py) with a real local Ray of 2 CPUs,
the real local model, and the real OpenAI client against the loopback fake server.

One Ray session serves the whole module (starting one costs seconds); its
teardown checks that no process it started is left behind.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import ray

from coverage_core.embeddings import CacheKey, EmbeddingCache, LocalEmbedder, embed_texts, make_embedder
from coverage_core.embeddings.ray_embedding import RAY_MISSING, EmbedderRecipe, embed_on_ray
from coverage_core.errors import InputError, ProviderError
from tests.fakes import embeddings_reply, fake_embedding
from tests.helpers import PROJECT, WIKI

# Ray Data reads its own deprecated settings when it copies its context.
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")]

EMBEDDINGS_PATH = "/v1/embeddings"
RAY_CPUS = 2
KEY_VARIABLES = ("EMBEDDING_API_KEY", "OPENAI_API_KEY", "VOYAGE_API_KEY")


def ant_sentences(n: int) -> list[str]:
    """The first ``n`` distinct sentences of the Ant article (at least 40 characters each)."""
    text = " ".join((WIKI / "articles" / "Ant.txt").read_text(encoding="utf-8").split())
    sentences = [piece.strip() for piece in re.split(r"(?<=[.!?])\s+", text)]
    distinct = list(dict.fromkeys(s for s in sentences if len(s) >= 40))
    assert len(distinct) >= n, "the fixture article has fewer sentences than the test needs"
    return distinct[:n]


def descendants(root: int) -> dict[int, str]:
    """PIDs (with their start time, so a reused PID is not mistaken) of every live descendant of ``root``."""
    parents: dict[int, int] = {}
    started: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
            started[int(entry.name)] = fields[19]
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                found[pid] = started[pid]
                frontier.append(pid)
    return found


def still_alive(processes: dict[int, str]) -> list[int]:
    alive = []
    for pid, start in processes.items():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and fields[19] == start:
            alive.append(pid)
    return alive


@pytest.fixture(scope="module")
def ray_session():
    """A local Ray with 2 CPUs for this module; yields its session folder.

    The workers inherit this process's environment when Ray starts: they
    get a fresh random ``EMBEDDING_API_KEY`` (for the fake server) and no
    OpenAI or Voyage key, so no test can reach a real provider.
    """
    saved = {name: os.environ.pop(name, None) for name in KEY_VARIABLES}
    os.environ["EMBEDDING_API_KEY"] = "sk-ray-" + secrets.token_hex(16)
    # Servers other fixtures of the session started (a Phoenix server) outlive this module: they are not Ray's.
    before_ray = descendants(os.getpid())
    ray.init(address="local", num_cpus=RAY_CPUS, include_dashboard=False,
             logging_level=logging.ERROR, log_to_driver=False)
    session_dir = Path(ray._private.worker._global_node.get_session_dir_path())
    try:
        yield session_dir
    finally:
        started = {pid: start for pid, start in descendants(os.getpid()).items() if before_ray.get(pid) != start}
        ray.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        deadline = time.monotonic() + 30
        while still_alive(started) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert started, "the Ray session started no process of its own"
        assert still_alive(started) == [], "Ray left processes behind after shutdown"


@pytest.fixture(scope="module")
def reference():
    """The single-process vectors and token counts of the 60-sentence corpus."""
    texts = ant_sentences(60)
    run = embed_texts(texts, make_embedder("local"), None)
    return texts, run


def assert_same_vectors(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape
    cosines = (actual * expected).sum(axis=1) / (
        np.linalg.norm(actual, axis=1) * np.linalg.norm(expected, axis=1)
    )
    assert cosines.min() >= 0.9999, f"lowest cosine {cosines.min():.6f}"


def test_two_workers_match_single_process_and_a_second_call_embeds_nothing(
    ray_session, reference, tmp_path, monkeypatch
):
    texts, single = reference
    repeated = texts + texts[:7]  # repeats are embedded once
    embedder = make_embedder("local", batch_size=8)
    cache = EmbeddingCache(tmp_path)
    calls = []

    run = embed_on_ray(repeated, embedder, cache, num_workers=2, progress=lambda done, total: calls.append((done, total)))

    assert_same_vectors(run.vectors, np.vstack([single.vectors, single.vectors[:7]]))
    assert run.token_counts.tolist() == single.token_counts.tolist() + single.token_counts[:7].tolist()
    assert (run.n_cached, run.n_embedded) == (0, len(repeated))
    assert run.new_tokens == int(single.token_counts.sum())
    assert run.n_over_limit == int((single.token_counts > embedder.max_tokens).sum())
    assert cache.count(CacheKey.of(embedder)) == len(texts)
    # After the lookup, once per batch of 8 distinct texts, ending at the total.
    assert calls[0] == (0, len(repeated)) and calls[-1] == (len(repeated), len(repeated))
    assert len(calls) == 1 + -(-len(texts) // 8)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)

    monkeypatch.setitem(sys.modules, "ray", None)  # a second call must not even need Ray
    again = embed_on_ray(repeated, embedder, cache, num_workers=2)
    assert (again.n_cached, again.n_embedded, again.new_tokens) == (len(repeated), 0, 0)
    assert cache.count(CacheKey.of(embedder)) == len(texts)
    np.testing.assert_array_equal(again.vectors, run.vectors)


class FailsAfterFirstBatch(LocalEmbedder):
    """The local model, but each copy (one per Ray actor) fails every batch after its first,
    as a provider that runs out of retries would."""

    def embed(self, texts):
        self.batches_seen = getattr(self, "batches_seen", 0) + 1
        if self.batches_seen > 1:
            raise ProviderError("The provider rate limit reached (429): too many requests.", "rate_limit")
        return super().embed(texts)


def test_interrupted_job_keeps_finished_batches_and_a_rerun_embeds_only_the_rest(ray_session, reference, tmp_path):
    texts, single = reference
    cache = EmbeddingCache(tmp_path)
    key = CacheKey.of(make_embedder("local"))

    with pytest.raises(ProviderError) as caught:
        embed_on_ray(texts, FailsAfterFirstBatch(batch_size=10), cache, num_workers=2)

    kept = cache.count(key)
    assert 0 < kept < len(texts) and kept % 10 == 0, kept  # whole batches, not all of them
    assert caught.value.kind == "rate_limit"
    assert f"({len(texts) - kept} of {len(texts)} texts were not embedded" in str(caught.value)

    rerun = embed_on_ray(texts, make_embedder("local", batch_size=10), cache, num_workers=2)
    assert (rerun.n_cached, rerun.n_embedded) == (kept, len(texts) - kept)
    assert cache.count(key) == len(texts)
    assert_same_vectors(rerun.vectors, single.vectors)


def test_paid_provider_runs_at_bounded_concurrency_and_its_key_stays_out_of_ray(ray_session, fake_api, tmp_path):
    in_flight, most = 0, 0
    lock = threading.Lock()

    def slow_embeddings(body):
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        time.sleep(0.3)
        with lock:
            in_flight -= 1
        return embeddings_reply(body)

    fake_api.handle(EMBEDDINGS_PATH, slow_embeddings)
    texts = [f"passage {i} about ant colonies" for i in range(24)]
    embedder = make_embedder("openai", model="fake-embedding", base_url=fake_api.url + "/v1", batch_size=4)
    cache = EmbeddingCache(tmp_path / "cache")

    run = embed_on_ray(texts, embedder, cache, num_workers=2)

    expected = np.array([fake_embedding(text, 16) for text in texts], dtype=np.float32)
    np.testing.assert_allclose(run.vectors, expected, atol=1e-6)
    requests = fake_api.requests_to(EMBEDDINGS_PATH)
    assert sorted(len(request.body["input"]) for request in requests) == [4] * 6
    assert 1 <= most <= 2, f"{most} requests were in flight at once with 2 workers"
    key = os.environ["EMBEDDING_API_KEY"]
    assert set(fake_api.authorizations()) == {f"Bearer {key}"}  # the workers used their environment's key
    leaks = [
        str(path) for folder in (ray_session, tmp_path) for path in folder.rglob("*")
        if path.is_file() and key.encode() in path.read_bytes()
    ]
    assert leaks == []


def test_the_recipe_an_actor_builds_from_has_no_key_and_one_request_at_a_time(fake_api, monkeypatch):
    key = "sk-env-" + secrets.token_hex(8)
    monkeypatch.setenv("EMBEDDING_API_KEY", key)
    embedder = make_embedder("openai", model="fake-embedding", base_url=fake_api.url + "/v1", batch_size=7)
    recipe = EmbedderRecipe.of(embedder)
    assert "api_key" not in dict(recipe.settings) and key not in repr(recipe)
    rebuilt = recipe.build()  # as an actor does, with the key of its own environment
    assert (type(rebuilt), rebuilt.base_url, rebuilt.batch_size, rebuilt.api_key) == (
        type(embedder), embedder.base_url, 7, key)
    assert embedder.max_concurrency > 1 and rebuilt.max_concurrency == 1


def test_an_actor_runs_the_precision_the_driver_runs(monkeypatch):
    # "auto" would let a worker on an AMX machine pick bf16 while the driver files its vectors as fp32.
    monkeypatch.setenv("COVERAGE_CORE_PRECISION", "bf16")
    driver = LocalEmbedder()
    monkeypatch.delenv("COVERAGE_CORE_PRECISION")
    settings = dict(EmbedderRecipe.of(driver).settings)
    assert driver.precision == "auto" and driver.precision_used == "bf16"
    assert settings["precision"] == "bf16"
    assert EmbedderRecipe.of(driver).build().precision_used == "bf16"


def test_a_key_entered_by_hand_is_refused_before_anything_is_sent(fake_api, tmp_path):
    typed = "sk-typed-" + secrets.token_hex(8)
    embedder = make_embedder("openai", model="fake-embedding", base_url=fake_api.url + "/v1", api_key=typed)
    with pytest.raises(InputError, match="set EMBEDDING_API_KEY where Ray runs"):
        embed_on_ray(["a text"], embedder, EmbeddingCache(tmp_path))
    assert fake_api.requests == []


def test_a_key_missing_on_the_workers_is_named(ray_session, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-driver-only-" + secrets.token_hex(8))  # set after Ray started
    embedder = make_embedder("openai")
    with pytest.raises(InputError) as caught:
        embed_on_ray(["first text", "second text"], embedder, EmbeddingCache(tmp_path), num_workers=1)
    message = str(caught.value)
    assert message.startswith("On a Ray worker: No OpenAI API key: set OPENAI_API_KEY")
    assert "(2 of 2 texts were not embedded" in message
    assert os.environ["OPENAI_API_KEY"] not in message


def test_worker_counts_the_cluster_cannot_hold_are_refused(ray_session, tmp_path):
    embedder = make_embedder("local")
    with pytest.raises(InputError, match="at least 1"):
        embed_on_ray(["a text"], embedder, EmbeddingCache(tmp_path), num_workers=0)
    with pytest.raises(InputError, match=f"has {RAY_CPUS} CPUs, too few for {RAY_CPUS + 1} embedding workers"):
        embed_on_ray(["a text"], embedder, EmbeddingCache(tmp_path), num_workers=RAY_CPUS + 1)


def test_without_ray_the_message_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # what an import sees when ray is not installed
    monkeypatch.setitem(sys.modules, "ray.data", None)
    embedder = make_embedder("local")
    with pytest.raises(InputError) as caught:
        embed_on_ray(["a text nobody cached"], embedder, EmbeddingCache(tmp_path))
    assert str(caught.value) == RAY_MISSING
    empty = embed_on_ray([], embedder, EmbeddingCache(tmp_path))  # nothing to embed needs no Ray
    assert empty.vectors.shape == (0, 0) and empty.n_embedded == 0

    # And the package imports without it.
    code = "import sys; sys.modules['ray'] = None; import coverage_core.embeddings.ray_embedding, coverage_core.cli"
    finished = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr


def test_auto_joins_the_running_cluster_and_leaves_it_running(ray_session, reference, tmp_path):
    texts, single = reference
    script = (
        "import json, sys\n"
        "from coverage_core.embeddings import EmbeddingCache, make_embedder\n"
        "from coverage_core.embeddings.ray_embedding import embed_on_ray\n"
        "texts = json.loads(sys.stdin.read())\n"
        "run = embed_on_ray(texts, make_embedder('local', batch_size=16), EmbeddingCache(sys.argv[1]),"
        " address='auto', num_workers=1)\n"
        "print(json.dumps([run.n_cached, run.n_embedded]))\n"
    )
    # "auto" takes the cluster from $RAY_ADDRESS when set: this module's, whatever else runs here.
    environment = {**os.environ, "RAY_ADDRESS": ray._private.worker._global_node.gcs_address}
    finished = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], input=json.dumps(texts[:20]), cwd=PROJECT,
        capture_output=True, text=True, timeout=300, env=environment,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert json.loads(finished.stdout.strip().splitlines()[-1]) == [0, 20]
    cached = embed_texts(texts[:20], make_embedder("local"), EmbeddingCache(tmp_path))
    assert cached.n_cached == 20  # the other process's workers filled this cache
    assert_same_vectors(cached.vectors, single.vectors[:20])
    assert ray.is_initialized() and ray.cluster_resources().get("CPU") == RAY_CPUS  # still up


def test_no_cluster_at_the_address_is_one_sentence(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"ray://127.0.0.1:{probe.getsockname()[1]}"
    script = (
        "import sys\n"
        "from coverage_core.embeddings import EmbeddingCache, make_embedder\n"
        "from coverage_core.embeddings.ray_embedding import embed_on_ray\n"
        "from coverage_core.errors import InputError\n"
        "try:\n"
        "    embed_on_ray(['a text'], make_embedder('local'), EmbeddingCache(sys.argv[1]), address=sys.argv[2])\n"
        "except InputError as error:\n"
        "    print(error)\n"
    )
    # A process of its own: this module's Ray session would be used whatever the address.
    finished = subprocess.run([sys.executable, "-c", script, str(tmp_path / "cache"), address], cwd=PROJECT,
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-2000:]
    message = finished.stdout.strip()
    assert message.startswith(f"Could not connect to the Ray cluster at {address!r} (")
    assert message.endswith("start it with ray start --head, or check the address (auto, ray://host:10001 or host:6379).")
    assert "\n" not in message
