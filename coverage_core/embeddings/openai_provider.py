"""OpenAI embeddings through the official ``openai`` client.

Retries are ours, not the client's (``max_retries=0`` on the client): that way
rate limits and timeouts are handled the same way for every provider, the
backoff is injectable (fast tests), and a wrong key fails after one request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coverage_core.embeddings.base import UNREADABLE_REPLY, ModelSpec, RemoteEmbedder, api_provider
from coverage_core.embeddings.retries import Failure, parse_retry_after
from coverage_core.errors import InputError

OPENAI_MAX_TOKENS = 8191

OPENAI_MAX_INPUTS_PER_REQUEST = 2048
"""Texts one embeddings request may hold (the API reference of
``POST /v1/embeddings``: the input array "must be 2048 dimensions or less")."""

OPENAI_MAX_TOKENS_PER_REQUEST = 300_000
"""Tokens one embeddings request may hold, summed over its texts (the same API
reference: "all embedding models enforce a maximum of 300,000 tokens summed
across all inputs in a single request")."""

# text-embedding-3 models accept any smaller ``dimensions`` (Matryoshka-style
# shortening done by the API). Prices: US dollars per million input tokens,
# the list prices when this table was written.
# No default_support_threshold: not measurable without the API and no published figure, so a
# calibration that cannot be trusted falls back to the generic default (ModelSpec's source says so).
OPENAI_MODELS: dict[str, ModelSpec] = {
    "text-embedding-3-small": ModelSpec(
        1536, OPENAI_MAX_TOKENS, OPENAI_MAX_TOKENS_PER_REQUEST, range(1, 1537), usd_per_1m_tokens=0.02
    ),
    "text-embedding-3-large": ModelSpec(
        3072, OPENAI_MAX_TOKENS, OPENAI_MAX_TOKENS_PER_REQUEST, range(1, 3073), usd_per_1m_tokens=0.13
    ),
    "text-embedding-ada-002": ModelSpec(1536, OPENAI_MAX_TOKENS, OPENAI_MAX_TOKENS_PER_REQUEST, usd_per_1m_tokens=0.10),
}
OPENAI_DEFAULT_MODEL = "text-embedding-3-small"


# Models trained for shortened output (Matryoshka): the API's ``dimensions``
# parameter works for them, and their first dimensions are a smaller embedding.
TRUNCATION_TRAINED_PREFIX = "text-embedding-3-"


def trained_for_truncation(model: str) -> bool | None:
    """True for text-embedding-3 models, False for the other models we list (ada-002), None for unknown names."""
    if model.startswith(TRUNCATION_TRAINED_PREFIX):
        return True
    return False if model in OPENAI_MODELS else None


def _supports_dimensions(model: str) -> bool:
    # Unknown names (a compatible server's models) are passed on to the server.
    return trained_for_truncation(model) is not False


@api_provider(
    name="openai",
    label="OpenAI",
    description="OpenAI (or an OpenAI-compatible server)",
    models=OPENAI_MODELS,
    trained_for_truncation=trained_for_truncation,
    key_variable="OPENAI_API_KEY",
    base_url_variable="OPENAI_BASE_URL",  # the openai client reads it when no base_url is given
    hosts=("api.openai.com",),
    max_inputs_per_request=OPENAI_MAX_INPUTS_PER_REQUEST,
    compatible_servers=True,
)
@dataclass(eq=False, repr=False)  # RemoteEmbedder.__repr__ hides the key and URL credentials
class OpenAIEmbedder(RemoteEmbedder):
    """Embeds with an OpenAI (or OpenAI-compatible) embeddings endpoint.

    Settings as for :class:`~coverage_core.embeddings.base.RemoteEmbedder`, where:
        model: One of :data:`OPENAI_MODELS`; with ``base_url`` set (a
            compatible server) any name the server knows is accepted.
        dimensions: Output size for text-embedding-3 models (None = native).
        base_url: A compatible server's URL, e.g. ``http://host:8000/v1``;
            None (or ``https://api.openai.com/v1``) is OpenAI itself.
    """

    model: str = OPENAI_DEFAULT_MODEL
    max_tokens: int = field(default=OPENAI_MAX_TOKENS, init=False)

    def _check_settings(self) -> None:
        if self.model not in OPENAI_MODELS and not self.base_url:
            choices = ", ".join(OPENAI_MODELS)
            raise InputError(f"Unknown OpenAI embedding model {self.model!r}; choose one of: {choices}.")
        if self.dimensions is not None:
            if not _supports_dimensions(self.model):
                raise InputError(
                    f"{self.model} always returns 1536 dimensions; leave dimensions empty "
                    "or choose text-embedding-3-small or text-embedding-3-large."
                )
            native = OPENAI_MODELS[self.model].dimensions if self.model in OPENAI_MODELS else None
            if int(self.dimensions) < 1 or (native is not None and int(self.dimensions) > native):
                raise InputError(f"dimensions for {self.model} must be between 1 and {native}, not {self.dimensions}.")
            self.dimensions = int(self.dimensions)

    def _request_token_cap(self) -> int:
        return OPENAI_MAX_TOKENS_PER_REQUEST

    def _new_client(self, **settings: Any):
        import openai

        return openai.OpenAI(**settings)

    def _output_dimensions(self) -> int:
        return self.dimensions or (OPENAI_MODELS[self.model].dimensions if self.model in OPENAI_MODELS else 0)

    def _send(self, client: Any, texts: list[str]) -> Any:
        extra = {} if self.dimensions is None else {"dimensions": self.dimensions}
        return client.embeddings.create(input=texts, model=self.model, **extra)

    def _embeddings_in(self, reply: Any) -> list:
        # The API documents ``index``; sort by it rather than trusting order.
        data = sorted(reply.data, key=lambda item: item.index)
        embeddings = [item.embedding for item in data]
        if sorted(item.index for item in data) != list(range(len(data))):
            raise self._bad_response("the embeddings' positions are not 0 to n-1")
        return embeddings

    def _classify(self, exc: Exception) -> Failure | None:
        """Translate an ``openai`` exception into a :class:`Failure`."""
        import openai

        if isinstance(exc, openai.APITimeoutError):  # subclass of APIConnectionError: test first
            return self._timeout_failure()
        if isinstance(exc, openai.APIConnectionError):
            return self._connection_failure()
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return self._auth_failure(exc.status_code)
        if isinstance(exc, openai.RateLimitError):
            retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
            return self._rate_limit_failure(self._detail(exc), retry_after)
        if isinstance(exc, openai.InternalServerError):  # 5xx: usually transient
            return self._server_failure(exc.status_code, self._detail(exc))
        if isinstance(exc, openai.APIStatusError):
            return self._refused_failure(exc.status_code, self._detail(exc))
        if isinstance(exc, (openai.APIResponseValidationError, *UNREADABLE_REPLY)):
            # Raised while the client read a 200 reply (JSONDecodeError is a ValueError); the request
            # callable does nothing else.
            return self._bad_response_failure(exc)
        return None

    def _detail(self, exc: Any) -> str:
        """The provider's own error message, without the key."""
        body = getattr(exc, "body", None)
        message = None
        if isinstance(body, dict):
            inner = body.get("error") if isinstance(body.get("error"), dict) else body
            message = inner.get("message")
        return self._quoted(message or getattr(exc, "message", "") or type(exc).__name__)


SPEC = OpenAIEmbedder.spec
"""The provider as :mod:`coverage_core.embeddings.registry` lists it (declared on :class:`OpenAIEmbedder`)."""
