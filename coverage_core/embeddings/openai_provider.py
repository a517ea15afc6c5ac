"""OpenAI embeddings through the official ``openai`` client.

Retries are ours, not the client's (``max_retries=0`` on the client): that way
rate limits and timeouts are handled the same way for every provider, the
backoff is injectable (fast tests), and a wrong key fails after one request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from coverage_core.embeddings.base import (
    RemoteEmbedder,
    Backoff,
    Failure,
    call_with_retries,
    key_variable,
    normalize_rows,
    parse_retry_after,
    redact,
    redact_url,
    resolve_api_key,
)
from coverage_core.errors import InputError, ProviderError

# Native output size of each model; text-embedding-3 models accept any
# smaller ``dimensions`` (Matryoshka-style shortening done by the API).
OPENAI_MODELS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
OPENAI_DEFAULT_MODEL = "text-embedding-3-small"
OPENAI_MAX_TOKENS = 8191


def _supports_dimensions(model: str) -> bool:
    return model != "text-embedding-ada-002"


@dataclass(eq=False, repr=False)  # RemoteEmbedder.__repr__ hides the key and URL credentials
class OpenAIEmbedder(RemoteEmbedder):
    """Embeds with an OpenAI (or OpenAI-compatible) embeddings endpoint.

    Args:
        model: One of :data:`OPENAI_MODELS`; with ``base_url`` set (a
            compatible server) any name the server knows is accepted.
        dimensions: Output size for text-embedding-3 models (None = native).
        api_key: The key; None reads ``OPENAI_API_KEY`` for OpenAI itself and
            ``EMBEDDING_API_KEY`` for any other ``base_url`` (see
            :func:`~coverage_core.embeddings.base.key_variable`). Never shown
            in ``repr``, messages or the cache.
        base_url: A compatible server's URL, e.g. ``http://host:8000/v1``;
            None (or ``https://api.openai.com/v1``) is OpenAI itself.
        batch_size: Texts per request.
        timeout: Seconds to wait for one request.
        max_retries: Retries after rate limits, timeouts and connection errors.
        backoff: Wait policy between retries.
    """

    model: str = OPENAI_DEFAULT_MODEL
    dimensions: int | None = None
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    batch_size: int = 128
    timeout: float = 60.0
    max_retries: int = 5
    backoff: Backoff = field(default_factory=Backoff)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    provider: str = field(default="openai", init=False)
    max_tokens: int = field(default=OPENAI_MAX_TOKENS, init=False)
    # OpenAI allows 300k tokens per request; our counts are approximate, so
    # stay far below it.
    max_batch_tokens: int = field(default=100_000, init=False)
    _client: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.base_url = (self.base_url or "").strip() or None
        if self.model not in OPENAI_MODELS and not self.base_url:
            choices = ", ".join(OPENAI_MODELS)
            raise InputError(f"Unknown OpenAI embedding model {self.model!r}; choose one of: {choices}.")
        if self.dimensions is not None:
            if not _supports_dimensions(self.model):
                raise InputError(
                    f"{self.model} always returns 1536 dimensions; leave dimensions empty "
                    "or choose text-embedding-3-small or text-embedding-3-large."
                )
            native = OPENAI_MODELS.get(self.model)
            if int(self.dimensions) < 1 or (native is not None and int(self.dimensions) > native):
                raise InputError(f"dimensions for {self.model} must be between 1 and {native}, not {self.dimensions}.")
            self.dimensions = int(self.dimensions)
        # Resolve the key now (cheap, no network) so a missing key is reported
        # before any work starts.
        self.api_key = resolve_api_key(self.provider, self.api_key, self.base_url)

    def _get_client(self):
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                api_key=self.api_key,
                base_url=self.base_url or None,
                timeout=self.timeout,
                max_retries=0,  # we retry ourselves, see module docstring
            )
        return self._client

    def _output_dimensions(self) -> int:
        return self.dimensions or OPENAI_MODELS.get(self.model, 0)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        client = self._get_client()
        extra: dict[str, Any] = {}
        if self.dimensions is not None:
            extra["dimensions"] = self.dimensions

        def request():
            return client.embeddings.create(input=texts, model=self.model, **extra)

        response = call_with_retries(
            request, self._classify, max_retries=self.max_retries, backoff=self.backoff, sleep=self.sleep
        )
        # The API documents ``index``; sort by it rather than trusting order.
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise ProviderError(
                f"OpenAI returned {len(data)} embeddings for {len(texts)} texts; try again.", "other"
            )
        return normalize_rows(np.array([item.embedding for item in data], dtype=np.float32))

    def _classify(self, exc: Exception) -> Failure | None:
        """Translate an ``openai`` exception into a :class:`Failure`."""
        import openai

        if isinstance(exc, openai.APITimeoutError):  # subclass of APIConnectionError: test first
            return Failure("timeout", f"OpenAI did not answer within {self.timeout:g} s.", retryable=True)
        if isinstance(exc, openai.APIConnectionError):
            where = redact_url(self.base_url) or "api.openai.com"
            return Failure(
                "connection", f"Could not connect to OpenAI at {where}; check the network or base URL.", retryable=True
            )
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return Failure(
                "auth",
                f"OpenAI rejected the API key ({exc.status_code}); check "
                f"{key_variable(self.provider, self.base_url)} or the key you entered.",
                retryable=False,
            )
        if isinstance(exc, openai.RateLimitError):
            retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
            detail = self._detail(exc)
            return Failure(
                "rate_limit",
                f"OpenAI rate limit reached (429): {detail}. Wait a minute or lower the batch size.",
                retryable=True,
                retry_after=retry_after,
            )
        if isinstance(exc, openai.InternalServerError):  # 5xx: usually transient
            return Failure("other", f"OpenAI server error ({exc.status_code}): {self._detail(exc)}.", retryable=True)
        if isinstance(exc, openai.APIStatusError):
            return Failure(
                "bad_request", f"OpenAI refused the request ({exc.status_code}): {self._detail(exc)}.", retryable=False
            )
        return None

    def _detail(self, exc: Any) -> str:
        """The provider's own error message, without the key."""
        body = getattr(exc, "body", None)
        message = None
        if isinstance(body, dict):
            inner = body.get("error") if isinstance(body.get("error"), dict) else body
            message = inner.get("message")
        text = str(message or getattr(exc, "message", "") or type(exc).__name__).strip().rstrip(".")
        return redact(text, self.api_key)
