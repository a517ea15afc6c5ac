"""Voyage AI embeddings through the official ``voyageai`` client.

As for OpenAI, the client's own retries are off (its backoff starts at 1 s
and ignores ``Retry-After``); :func:`call_with_retries` does it instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coverage_core.embeddings.base import UNREADABLE_REPLY, ModelSpec, RemoteEmbedder, api_provider
from coverage_core.embeddings.retries import Failure, parse_retry_after
from coverage_core.errors import InputError

VOYAGE_MAX_INPUTS_PER_REQUEST = 1000
"""Texts one embeddings request may hold ("The maximum length of the list is
1,000": docs.voyageai.com/reference/embeddings-api)."""


_FLEXIBLE = (256, 512, 1024, 2048)
# From Voyage's model table (docs.voyageai.com/docs/embeddings) and the
# per-request token caps of its API reference (docs.voyageai.com/reference/
# embeddings-api: 1M for the -lite models, 320K for voyage-4, voyage-3.5 and
# voyage-3, 120K for the -large and code models; voyage-3 and voyage-3-lite
# are from the earlier edition of that page). The client library itself
# carries no list of hosted models. Prices: US dollars per million input
# tokens, the list prices when this table was written (None: not recorded).
# No default_support_threshold: not measurable without the API and no published figure, so a
# calibration that cannot be trusted falls back to the generic default (ModelSpec's source says so).
VOYAGE_MODELS: dict[str, ModelSpec] = {
    "voyage-3.5": ModelSpec(1024, 32_000, 320_000, _FLEXIBLE, usd_per_1m_tokens=0.06),
    "voyage-3.5-lite": ModelSpec(1024, 32_000, 1_000_000, _FLEXIBLE, usd_per_1m_tokens=0.02),
    "voyage-3-large": ModelSpec(1024, 32_000, 120_000, _FLEXIBLE, usd_per_1m_tokens=0.18),
    "voyage-3": ModelSpec(1024, 32_000, 320_000, usd_per_1m_tokens=0.06),
    "voyage-3-lite": ModelSpec(512, 32_000, 1_000_000, usd_per_1m_tokens=0.02),
    "voyage-code-3": ModelSpec(1024, 32_000, 120_000, _FLEXIBLE),
    "voyage-4": ModelSpec(1024, 32_000, 320_000, _FLEXIBLE),
    "voyage-4-lite": ModelSpec(1024, 32_000, 1_000_000, _FLEXIBLE),
    "voyage-4-large": ModelSpec(1024, 32_000, 120_000, _FLEXIBLE),
}
VOYAGE_DEFAULT_MODEL = "voyage-3.5"


# The models that accept ``output_dimension`` were trained for it: api_provider's default says so.
@api_provider(
    name="voyage",
    label="Voyage",
    description="Voyage AI",
    models=VOYAGE_MODELS,
    key_variable="VOYAGE_API_KEY",
    # With no base URL the voyageai client itself sends MongoDB-issued keys
    # ("al-…") to ai.mongodb.com; nobody needs to type that host.
    hosts=("api.voyageai.com",),
    max_inputs_per_request=VOYAGE_MAX_INPUTS_PER_REQUEST,
)
@dataclass(eq=False, repr=False)  # RemoteEmbedder.__repr__ hides the key and URL credentials
class VoyageEmbedder(RemoteEmbedder):
    """Embeds with Voyage AI's hosted models.

    Settings as for :class:`~coverage_core.embeddings.base.RemoteEmbedder`, where:
        model: One of :data:`VOYAGE_MODELS`.
        dimensions: ``output_dimension`` for models that support it (None = native).
        base_url: Another endpoint (e.g. a proxy); None = Voyage's default.

    and:
        input_type: ``"document"`` (default; fine for chunks and questions
            alike in a coverage comparison), ``"query"`` or None.
    """

    model: str = VOYAGE_DEFAULT_MODEL
    input_type: str | None = "document"
    max_tokens: int = field(default=32_000, init=False)

    def _check_settings(self) -> None:
        spec = VOYAGE_MODELS.get(self.model)
        if spec is None:
            choices = ", ".join(VOYAGE_MODELS)
            raise InputError(f"Unknown Voyage embedding model {self.model!r}; choose one of: {choices}.")
        self.max_tokens = spec.max_tokens
        if self.dimensions is not None:
            if not spec.output_dimensions:
                raise InputError(
                    f"{self.model} always returns {spec.dimensions} dimensions; leave dimensions empty "
                    "or choose a model such as voyage-3.5 that supports 256, 512, 1024 or 2048."
                )
            if int(self.dimensions) not in spec.output_dimensions:
                allowed = ", ".join(map(str, spec.output_dimensions))
                raise InputError(f"dimensions for {self.model} must be one of {allowed}, not {self.dimensions}.")
            self.dimensions = int(self.dimensions)

    def _request_token_cap(self) -> int:
        return VOYAGE_MODELS[self.model].request_tokens

    def _new_client(self, **settings: Any):
        import voyageai

        return voyageai.Client(**settings)

    def _output_dimensions(self) -> int:
        return self.dimensions or VOYAGE_MODELS[self.model].dimensions

    def _send(self, client: Any, texts: list[str]) -> Any:
        return client.embed(texts, model=self.model, input_type=self.input_type, output_dimension=self.dimensions)

    def _embeddings_in(self, reply: Any) -> Any:
        return reply.embeddings

    @property
    def cache_tag(self) -> str:
        """The endpoint, and ``input_type`` unless it is ``"document"`` (what every earlier cache holds):
        Voyage embeds a text differently as a query."""
        tags = [super().cache_tag] + ([] if self.input_type == "document" else [f"input_type={self.input_type}"])
        return "; ".join(tag for tag in tags if tag)

    def _classify(self, exc: Exception) -> Failure | None:
        """Translate a ``voyageai.error`` exception into a :class:`Failure`."""
        from voyageai import error

        if not isinstance(exc, error.VoyageError):
            # Raised while the client read a 200 reply (fields missing); the request callable does nothing else.
            return self._bad_response_failure(exc) if isinstance(exc, UNREADABLE_REPLY) else None
        status = exc.http_status
        if status is not None and 200 <= status < 300:  # the client could not read a successful reply
            return Failure("bad_response", str(self._bad_response("not JSON")), retryable=False)
        detail = self._quoted(exc.user_message or type(exc).__name__)
        if isinstance(exc, error.Timeout):
            return self._timeout_failure()
        if isinstance(exc, error.APIConnectionError):
            return self._connection_failure()
        if isinstance(exc, error.AuthenticationError) or status in (401, 403):
            return self._auth_failure(status)
        if isinstance(exc, error.RateLimitError) or status == 429:
            headers = exc.headers or {}
            retry_after = parse_retry_after(headers.get("retry-after") or headers.get("Retry-After"))
            return self._rate_limit_failure(detail, retry_after)
        if isinstance(exc, (error.ServiceUnavailableError, error.ServerError)) or (status or 0) >= 500:
            return self._server_failure(status, detail)
        if status is not None and 400 <= status < 500:
            # Voyage's APIError for other 4xx appends the raw body and headers;
            # keep just the message part.
            if isinstance(exc, error.APIError) and isinstance(exc.json_body, dict):
                detail = self._quoted(exc.json_body.get("detail") or detail)
            return self._refused_failure(status, detail)
        return Failure("other", f"Voyage request failed: {detail}.", retryable=False)


SPEC = VoyageEmbedder.spec
"""The provider as :mod:`coverage_core.embeddings.registry` lists it (declared on :class:`VoyageEmbedder`)."""
