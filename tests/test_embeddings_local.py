"""The local embedder with the real bundled all-MiniLM-L6-v2 (offline)."""

import numpy as np
import pytest

from coverage_core.embeddings import DEFAULT_LOCAL_MODEL, LocalEmbedder, choose_precision, make_embedder
from coverage_core.embeddings.local import read_cpu_flags
from coverage_core.errors import InputError


@pytest.fixture(scope="module")
def embedder():
    return make_embedder("local")


def test_construction_is_lazy():
    embedder = make_embedder("local")
    assert isinstance(embedder, LocalEmbedder)
    assert not embedder.is_loaded
    # The limit is read from the model's config file, still without loading it.
    assert embedder.max_tokens == 256
    assert not embedder.is_loaded
    assert embedder.provider == "local"
    assert embedder.model == DEFAULT_LOCAL_MODEL == "all-MiniLM-L6-v2"
    assert embedder.dimensions is None


def test_vectors_are_unit_rows_of_384(embedder):
    vectors = embedder.embed(["Berlin is the capital of Germany.", "Ants live in colonies.", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_similar_texts_are_closer_than_unrelated(embedder):
    cat, kitten, markets = embedder.embed(
        ["The cat sat on the mat.", "A kitten is resting on a rug.", "Stock markets fell sharply on Monday."]
    )
    assert cat @ kitten > cat @ markets + 0.3
    assert cat @ kitten > kitten @ markets + 0.3


def test_deterministic_and_independent_of_batching(embedder):
    texts = [f"Sentence number {i} about {'physics' if i % 2 else 'music'}." for i in range(20)]
    first = embedder.embed(texts)
    again = embedder.embed(texts)
    one_by_one = np.vstack([embedder.embed([text]) for text in texts[:3]])
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(one_by_one, first[:3], atol=1e-5)


def test_count_tokens_untruncated(embedder):
    short, long = embedder.count_tokens(["Hello world", "anthropology " * 300])
    assert short == 4  # [CLS] hello world [SEP]
    assert long > 256
    assert embedder.count_tokens([]) == []


def test_model_loaded_once_per_process():
    a, b = make_embedder("local"), make_embedder("local")
    a.count_tokens(["x"])
    b.count_tokens(["x"])
    assert a._model is b._model


def test_auto_precision_follows_this_cpu():
    # The project's machines are AVX2-only AMD EPYCs: auto must pick fp32 there.
    embedder = make_embedder("local")
    expected = "bf16" if "amx_bf16" in read_cpu_flags() else "fp32"
    assert embedder.precision_used == expected
    assert "AMX" in embedder.precision_reason


@pytest.mark.parametrize(
    ("flags", "capability", "expected"),
    [
        ({"avx2", "fma"}, "AVX2", "fp32"),
        ({"avx512f", "avx512_bf16"}, "AVX512", "fp32"),
        ({"avx512f", "avx512_bf16", "amx_tile", "amx_bf16"}, "AVX512", "bf16"),
        (set(), "AMX", "bf16"),
        (set(), None, "fp32"),
    ],
)
def test_choose_precision_from_injected_capability(flags, capability, expected):
    used, reason = choose_precision("auto", cpu_flags=flags, capability=capability)
    assert used == expected
    assert reason


def test_explicit_precision_is_obeyed_and_bad_values_rejected():
    assert choose_precision("bf16", cpu_flags={"avx2"})[0] == "bf16"
    assert choose_precision("fp32", cpu_flags={"amx_bf16"})[0] == "fp32"
    with pytest.raises(InputError, match="auto, fp32, bf16"):
        make_embedder("local", precision="fp16")


def test_bf16_path_runs_and_stays_close_to_fp32(embedder):
    texts = ["The cat sat on the mat.", "Volta invented the electric battery."]
    bf16 = LocalEmbedder(precision="bf16")
    assert bf16.precision_used == "bf16"
    cosines = (bf16.embed(texts) * embedder.embed(texts)).sum(axis=1)
    assert cosines.min() > 0.99


def test_read_cpu_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 amx_bf16\n")
    assert read_cpu_flags(info) == {"fpu", "avx2", "amx_bf16"}
    assert read_cpu_flags(tmp_path / "missing") == set()


def test_bad_local_choices():
    with pytest.raises(InputError, match="dimensions"):
        make_embedder("local", dimensions=128)
    missing = make_embedder("local", "/nonexistent/model-folder")
    with pytest.raises(InputError, match="without a network"):
        missing.embed(["x"])


def test_parallel_workers_match_single_thread_path(embedder):
    texts = [f"Paragraph {i}: " + "Antwerp is a port city in Belgium. " * (1 + i % 9) for i in range(24)]
    parallel = LocalEmbedder(workers=2).embed(texts)
    serial = LocalEmbedder(workers=1).embed(texts)
    np.testing.assert_allclose(parallel, serial, atol=1e-5)


def test_torch_thread_settings_are_left_as_found(embedder):
    import threading

    import torch

    before = torch.get_num_threads()
    LocalEmbedder(workers=2).embed([f"text {i}" for i in range(40)])
    assert torch.get_num_threads() == before
    seen = []
    thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    assert seen == [before]  # threads created later (e.g. Streamlit reruns) keep the default


def test_concurrent_embed_calls_from_threads(embedder):
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"Question {i} about the history of Berlin?" for i in range(30)]
    expected = embedder.embed(texts)
    expected_tokens = embedder.count_tokens(texts)

    def session(_):
        # Like two dashboard sessions: token counting and embedding interleave.
        local = make_embedder("local")
        return local.count_tokens(texts), local.embed(texts), local.count_tokens(texts)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(session, range(8)))
    for tokens, vectors, tokens_again in results:
        assert tokens == tokens_again == expected_tokens
        np.testing.assert_allclose(vectors, expected, atol=1e-5)
