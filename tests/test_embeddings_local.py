"""The local embedder with the real bundled all-MiniLM-L6-v2 (offline)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from coverage_core.embeddings import DEFAULT_LOCAL_MODEL, LocalEmbedder, choose_precision, make_embedder
from coverage_core.embeddings.local import PRECISION_VARIABLE, read_cpu_flags
from coverage_core.errors import InputError

pytestmark = pytest.mark.slow  # every test runs the real model

# Max |difference| allowed between two computations of one vector that differ
# only in batching or threads (padding and blocking change the summation order).
# Measured, one text alone vs in a batch: fp32 9e-8, bf16 7.5e-4 on an AVX2 EPYC
# (no AMX); bf16 5e-4 on an AMX CPU. Workers or threads alone: 0 in both.
BATCHING_ATOL = {
    "fp32": 1e-5,  # fp32 has 24 mantissa bits: reordered sums agree to ~1e-7; 1e-5 leaves 100x margin
    "bf16": 3e-3,  # bf16 has 8 mantissa bits: up to ~7.5e-4 after normalisation; 3e-3 leaves 4x margin
}


@pytest.fixture
def embedder(forced_precision):
    """The bundled model as ``make_embedder("local")`` builds it, once in fp32 and once in bf16 (see conftest)."""
    local = make_embedder("local")
    assert local.precision_used == forced_precision
    return local


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
    # Normalised in float32 after the forward pass in either precision: 1 within a few ulp (~1e-7).
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_similar_texts_are_closer_than_unrelated(embedder):
    cat, kitten, markets = embedder.embed(
        ["The cat sat on the mat.", "A kitten is resting on a rug.", "Stock markets fell sharply on Monday."]
    )
    # A semantic margin: bf16 moves a cosine by < 1e-3, far below 0.3.
    assert cat @ kitten > cat @ markets + 0.3
    assert cat @ kitten > kitten @ markets + 0.3


def test_deterministic_and_independent_of_batching(embedder, forced_precision):
    # Lengths differ, so a text is padded in a batch and not alone: the case where bf16 drifts.
    texts = [f"Sentence {i} about {'physics' if i % 2 else 'music'}" + " and its history" * (i % 4) for i in range(10)]
    first = embedder.embed(texts)
    again = embedder.embed(texts)
    one_by_one = np.vstack([embedder.embed([text]) for text in texts[:3]])
    np.testing.assert_array_equal(first, again)  # exact: same batches, same kernels, same order of sums
    np.testing.assert_allclose(one_by_one, first[:3], atol=BATCHING_ATOL[forced_precision])


def test_count_tokens_untruncated():
    embedder = make_embedder("local")
    short, long = embedder.count_tokens(["Hello world", "anthropology " * 300])
    assert short == 4  # [CLS] hello world [SEP]
    assert long > 256
    assert embedder.count_tokens([]) == []


def test_model_loaded_once_per_process():
    a, b = make_embedder("local"), make_embedder("local")
    a.embed(["x"])
    b.embed(["x"])
    assert a._model is b._model


# Texts where a tokenizer set up differently would count otherwise: case, accents, CJK (split per character),
# scripts the vocabulary lacks ([UNK]), emoji, control and zero-width characters, and texts far over 256 and
# 512 tokens (the tokenizer file itself truncates at 128).
TOKENIZER_TEXTS = [
    "", "   ", "Hello world", "HELLO World", "Ångström, café, naïve façade; Œuvre — “quoted” ‘text’…",
    "La Révolution française est une période de bouleversements politiques et sociaux en France.",
    "Die Wiedervereinigung der beiden deutschen Teilstaaten erfolgte am dritten Oktober.",
    "小提琴是一种弦乐器，用弓拉奏。北京是中华人民共和国的首都。", "東京は日本の首都です。カタカナ、ひらがな。",
    "Москва — столица России.", "القاهرة هي عاصمة مصر.", "नमस्ते दुनिया", "🎻🎺 koalas 🐨 and octopuses 🐙",
    "tab\there\nnew line\r\nand\x00nul\u200bzero-width\u00adsoft hyphen",
    "anthropology " * 300,
    open("tests/fixtures/wiki-qa/articles/Ant.txt", encoding="utf-8").read(),
]


def test_token_counts_from_the_tokenizer_file_equal_the_models():
    counted = make_embedder("local")
    counts = counted.count_tokens(TOKENIZER_TEXTS)
    assert not counted.is_loaded  # the tokenizer file alone
    tokenizer = make_embedder("local")._get_model().tokenizer
    expected = [len(ids) for ids in tokenizer(TOKENIZER_TEXTS, add_special_tokens=True, truncation=False)["input_ids"]]
    assert counts == expected
    assert max(counts) > 512 and counts[0] == 2  # [CLS] [SEP]
    assert counted.count_tokens(TOKENIZER_TEXTS[2:3]) == [4]


def test_counting_tokens_loads_neither_torch_nor_the_model():
    probe = (
        "import sys\n"
        "from coverage_core.embeddings import make_embedder\n"
        "embedder = make_embedder('local')\n"
        "assert embedder.count_tokens(['Hello world', 'anthropology ' * 300])[0] == 4\n"
        "heavy = sorted({'torch', 'transformers', 'sentence_transformers'} & set(sys.modules))\n"
        "assert not heavy and not embedder.is_loaded, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"))
    assert done.returncode == 0, done.stderr


def test_a_missing_or_damaged_tokenizer_file_falls_back_to_the_model(tmp_path, monkeypatch):
    from coverage_core.embeddings import local

    assert local._bundled_tokenizer(str(tmp_path / "absent")) is None
    (tmp_path / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "broken', encoding="utf-8")
    assert local._bundled_tokenizer(str(tmp_path)) is None
    expected = make_embedder("local").count_tokens(TOKENIZER_TEXTS)
    monkeypatch.setattr(local, "_bundled_tokenizer", lambda path: None)
    embedder = make_embedder("local")
    assert embedder.count_tokens(TOKENIZER_TEXTS) == expected
    assert embedder.is_loaded


def test_auto_precision_follows_this_cpu(monkeypatch):
    # The project's machines are AVX2-only AMD EPYCs: auto must pick fp32 there.
    monkeypatch.delenv(PRECISION_VARIABLE, raising=False)
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


def test_precision_variable_forces_auto_but_not_an_explicit_choice(monkeypatch):
    monkeypatch.setenv(PRECISION_VARIABLE, " BF16 ")
    forced = make_embedder("local")
    assert (forced.precision, forced.precision_used) == ("auto", "bf16")
    assert PRECISION_VARIABLE in forced.precision_reason
    assert LocalEmbedder(precision="fp32").precision_used == "fp32"
    monkeypatch.setenv(PRECISION_VARIABLE, "")
    assert make_embedder("local").precision_used == choose_precision("auto")[0]
    monkeypatch.setenv(PRECISION_VARIABLE, "fp16")
    with pytest.raises(InputError, match=f"{PRECISION_VARIABLE} is set to 'fp16'.*auto, fp32, bf16"):
        make_embedder("local")


def test_bf16_path_runs_in_process_and_stays_close_to_fp32():
    texts = ["The cat sat on the mat.", "Volta invented the electric battery in 1800."]
    fp32, bf16 = LocalEmbedder(precision="fp32"), LocalEmbedder(precision="bf16")
    assert bf16.precision_used == "bf16"
    fp32_vectors, bf16_vectors = fp32.embed(texts), bf16.embed(texts)
    assert bf16._model is fp32._model  # one model in memory; bf16 is an autocast per forward pass
    # Not equal: forcing bf16 took effect although the model was already loaded (in fp32).
    assert not np.array_equal(bf16_vectors, fp32_vectors)
    # bf16 vs fp32 measured: max |difference| 1e-3, cosine >= 0.99998; 1e-2 and 0.999 hold with margin.
    np.testing.assert_allclose(bf16_vectors, fp32_vectors, atol=1e-2)
    assert (bf16_vectors * fp32_vectors).sum(axis=1).min() > 0.999


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


def test_parallel_workers_match_single_thread_path(forced_precision):
    texts = [f"Paragraph {i}: " + "Antwerp is a port city in Belgium. " * (1 + i % 5) for i in range(12)]
    parallel = LocalEmbedder(workers=2).embed(texts)
    serial = LocalEmbedder(workers=1).embed(texts)
    np.testing.assert_allclose(parallel, serial, atol=BATCHING_ATOL[forced_precision])


def test_torch_thread_settings_are_left_as_found():
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


def test_concurrent_embed_calls_from_threads(embedder, forced_precision):
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"Question {i} about the history of Berlin?" for i in range(16)]
    expected = embedder.embed(texts)
    expected_tokens = embedder.count_tokens(texts)

    def session(_):
        # Like two dashboard sessions: token counting and embedding interleave.
        local = make_embedder("local")
        return local.count_tokens(texts), local.embed(texts), local.count_tokens(texts)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(session, range(6)))
    for tokens, vectors, tokens_again in results:
        assert tokens == tokens_again == expected_tokens
        np.testing.assert_allclose(vectors, expected, atol=BATCHING_ATOL[forced_precision])
