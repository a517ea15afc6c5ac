"""What every embedder offers, and the retry loop the API embedders share.

An embedder turns texts into unit-length float32 vectors. Three kinds exist:
the bundled local model (``local``), OpenAI and Voyage. They all follow the
:class:`Embedder` protocol so the rest of the package never cares which one
it has. Construction is cheap on purpose: nothing is loaded and no request
is sent until ``embed`` or ``count_tokens`` is first called, so a fully
cached run never pays for a model or a network round trip.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import Callable, Protocol, TypeVar, runtime_checkable

import numpy as np

from coverage_core.errors import ProviderError

T = TypeVar("T")


@runtime_checkable
class Embedder(Protocol):
    """Anything that embeds texts.

    Attributes:
        provider: ``"local"``, ``"openai"`` or ``"voyage"``.
        model: The model name, as recorded in the cache key.
        dimensions: Requested output size, or None for the model's native size.
        max_tokens: The model's input limit in tokens; longer texts are
            truncated by the model, which callers report to users.
    """

    provider: str
    model: str
    dimensions: int | None
    max_tokens: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Float32 array of shape (len(texts), d) with L2-normalised rows."""
        ...

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Token count of each text (approximate for API providers)."""
        ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Float32 copy of ``vectors`` with every non-zero row scaled to length 1."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        vectors = vectors.reshape(len(vectors), -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # A zero row cannot be normalised; leave it as zeros rather than NaN.
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)


def approximate_token_count(text: str) -> int:
    """Approximate token count: ``ceil(len(text) / 4)``, at least 1.

    OpenAI and Voyage tokenizers are not available offline (tiktoken and the
    Voyage tokenizer download their vocabularies), so API embedders use this
    rule of thumb for English text. It is used only to flag texts that may be
    over the model's limit and to keep request sizes reasonable.
    """
    return max(1, math.ceil(len(text) / 4))


def batches(items: list[T], size: int) -> list[list[T]]:
    """``items`` split into consecutive lists of at most ``size``."""
    size = max(1, int(size))
    return [items[i : i + size] for i in range(0, len(items), size)]


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***``.

    Provider error bodies sometimes echo the key (or a compatible server may
    echo it whole); nothing we show a user may contain it.
    """
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
    return text


class RemoteEmbedder:
    """What the API providers share: approximate token counts and batching.

    A provider sets ``batch_size`` and implements ``_embed_batch(texts)`` (one
    request, with retries) and ``_output_dimensions()``.
    """

    batch_size: int

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Approximate token counts (``ceil(chars / 4)``): exact tokenizers need a download."""
        return [approximate_token_count(text) for text in texts]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit float32 vectors for ``texts``, in order, ``batch_size`` per request."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._output_dimensions()), dtype=np.float32)
        parts = [self._embed_batch(part) for part in batches(texts, self.batch_size)]
        return np.concatenate(parts, axis=0)

    def _output_dimensions(self) -> int:
        raise NotImplementedError

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff between retries.

    Delay before retry ``attempt`` (0-based) is ``initial * 2**attempt`` with
    up to 25% jitter, capped at ``maximum``. A server's ``Retry-After`` value
    is used instead when given (also capped, so a bad header cannot stall a
    run for minutes). Tests pass a tiny ``initial`` to stay fast.
    """

    initial: float = 1.0
    maximum: float = 30.0
    jitter: float = 0.25

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(float(retry_after), self.maximum)
        base = self.initial * (2**attempt)
        return min(base * (1.0 + self.jitter * random.random()), self.maximum)


@dataclass(frozen=True)
class Failure:
    """A provider exception translated for the retry loop and for users."""

    kind: str
    message: str
    retryable: bool
    retry_after: float | None = None


def parse_retry_after(value: object) -> float | None:
    """Seconds from a ``Retry-After`` header value, or None if absent/unparseable."""
    if value is None:
        return None
    try:
        seconds = float(str(value).strip())
    except ValueError:
        return None  # an HTTP date; rare for these APIs, fall back to backoff
    return seconds if seconds >= 0 else None


def call_with_retries(
    request: Callable[[], T],
    classify: Callable[[Exception], Failure | None],
    *,
    max_retries: int,
    backoff: Backoff,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``request``; retry retryable failures up to ``max_retries`` times.

    ``classify`` maps a provider exception to a :class:`Failure`, or returns
    None for exceptions it does not know (those propagate unchanged).
    Non-retryable failures (auth, bad request) raise at once so a wrong key
    never causes a storm of requests. The original exception is not chained:
    provider exceptions carry the HTTP request, whose headers hold the key.
    """
    attempt = 0
    while True:
        try:
            return request()
        except Exception as exc:  # noqa: BLE001 - narrowed by classify below
            failure = classify(exc)
            if failure is None:
                raise
        if not failure.retryable or attempt >= max_retries:
            if failure.retryable and attempt > 0:
                message = f"{failure.message} (gave up after {attempt + 1} attempts)"
            else:
                message = failure.message
            raise ProviderError(message, failure.kind) from None
        sleep(backoff.delay(attempt, failure.retry_after))
        attempt += 1
