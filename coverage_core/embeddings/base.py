"""What every embedder offers, and what the API embedders share (their retry loop is in :mod:`.retries`).

An embedder turns texts into unit-length float32 vectors. Each provider
(the bundled local model, OpenAI, Voyage) declares a :class:`ProviderSpec`
that :mod:`coverage_core.embeddings.registry` lists, and its embedders follow
the :class:`Embedder` protocol, so the rest of the project never cares which
one it has. Construction is cheap on purpose: nothing is loaded and no request
is sent until ``embed`` or ``count_tokens`` is first called, so a fully
cached run never pays for a model or a network round trip.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, ClassVar, Collection, Mapping, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

import numpy as np

from coverage_core.embeddings.retries import Backoff, Failure, RequestGate, call_with_retries
from coverage_core.errors import InputError, ProviderError
from coverage_core.validation import unit_rows

T = TypeVar("T")
E = TypeVar("E", bound="RemoteEmbedder")


@runtime_checkable
class Embedder(Protocol):
    """Anything that embeds texts.

    Attributes:
        provider: The name of its :class:`ProviderSpec` (``"local"``, ``"openai"``, ``"voyage"``).
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


def approximate_token_count(text: str) -> int:
    """Approximate token count: ``ceil(utf8_bytes(text) / 4)``, at least 1.

    OpenAI and Voyage tokenizers are not available offline (tiktoken and the
    Voyage tokenizer download their vocabularies), so API embedders and cost
    estimates use this rule of thumb. For English it is the documented "about
    4 characters per token"; counting UTF-8 bytes rather than characters keeps
    it from undercounting other scripts several times over (a Chinese
    character is 3 bytes and about 1 token, a Cyrillic one 2 bytes and about
    half a token), which matters for the cost shown before a run and for
    keeping requests under the providers' tokens-per-request caps.
    """
    return max(1, math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4))


def batches(items: list[T], size: int) -> list[list[T]]:
    """``items`` split into consecutive lists of at most ``size``."""
    size = max(1, int(size))
    return [items[i : i + size] for i in range(0, len(items), size)]


def plan_batches(tokens: list[int], size: int, max_tokens: int | None) -> list[list[int]]:
    """Positions ``0..len(tokens)-1`` split into consecutive batches for requests.

    A batch holds at most ``size`` texts and at most ``max_tokens`` tokens in
    total (None or 0: no token cap); a single text over ``max_tokens`` goes
    alone in its own batch.
    """
    size = max(1, int(size))
    plan: list[list[int]] = []
    current: list[int] = []
    total = 0
    for index, cost in enumerate(tokens):
        if current and (len(current) >= size or (max_tokens and total + cost > max_tokens)):
            plan.append(current)
            current, total = [], 0
        current.append(index)
        total += cost
    if current:
        plan.append(current)
    return plan


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")


def redact_url(url: str | None) -> str | None:
    """``url`` with any credentials in it replaced by ``***``; None and "" are returned as they are.

    Covers ``user:password@``, a bare ``token@`` and a query string (where
    some servers take ``?key=``). Everything up to the *last* ``@`` is treated
    as credentials, so a password holding ``/``, ``?`` or ``#`` cannot leak
    half-parsed; a URL that merely has ``@`` in its path loses more than it
    needs to, which is the safe way to be wrong.
    """
    if not url:
        return url
    text = str(url).strip()
    scheme = _SCHEME.match(text)
    head, rest = (text[: scheme.end()], text[scheme.end() :]) if scheme else ("", text)
    if "@" in rest:
        rest = "***@" + rest.rpartition("@")[2]
    rest = re.sub(r"[?#].*", "?***", rest, count=1, flags=re.DOTALL)
    return head + rest


def redact(text: str, secret: str | None) -> str:
    """``text`` without ``secret`` (replaced by ``***``) and without credentials in any URL in it.

    Provider error bodies sometimes echo the key (or a compatible server may
    echo it whole), and HTTP libraries quote the URL they failed to reach;
    nothing we show a user may contain either.
    """
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
    return _URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)


# --------------------------------------------------------------------------
# what a provider declares
# --------------------------------------------------------------------------


UNLIMITED_TOKENS = 2**31 - 1
"""``ModelSpec.max_tokens`` of a model that reads a text of any length (nothing to fit chunks to)."""


@dataclass(frozen=True)
class ModelSpec:
    """What we need to know about one model a provider lists.

    Attributes:
        dimensions: Native output size.
        max_tokens: Input limit of one text, in tokens.
        request_tokens: Cap on the tokens of all texts in one request, summed (0: none).
        output_dimensions: The values accepted as ``dimensions`` (a shorter
            output); empty = the model always returns its native size.
        usd_per_1m_tokens: List price per million input tokens when this was
            written; None = not known (no row in the default price table).
        default_support_threshold: The support level τ a calibration falls
            back to when it cannot be trusted on a corpus (measured on public
            data for this model); None = not measured, the generic default applies.
        default_support_source: Where that level was measured, or why there is none.
        languages: The ISO 639-1 codes of the languages the model was trained for; None = not
            listed (many, or unknown), so no language is known to be unread.
        near_duplicate_similarity: The cosine from which two test questions are near-duplicates on
            this model: the level that groups as many question pairs as all-MiniLM-L6-v2 does at
            0.95 (measured on public questions); None = not measured, the generic level applies.
    """

    dimensions: int
    max_tokens: int
    request_tokens: int = 0
    output_dimensions: Collection[int] = ()
    usd_per_1m_tokens: float | None = None
    default_support_threshold: float | None = None
    default_support_source: str = "not measured for this model; the generic default applies"
    languages: frozenset[str] | None = None
    near_duplicate_similarity: float | None = None


@dataclass(frozen=True)
class EmbedderOptions:
    """What :func:`~coverage_core.embeddings.make_embedder` hands a provider's factory, the shared checks done.

    Each factory refuses what its provider cannot use and ignores what does
    not concern it (``precision`` is the local model's).
    """

    dimensions: int | None = None
    api_key: str | None = None
    base_url: str | None = None
    batch_size: int | None = None
    timeout: float | None = None
    max_retries: int = 5
    precision: str = "auto"
    max_concurrency: int | None = None


@dataclass(frozen=True)
class ProviderSpec:
    """Everything outside its own module that the project knows about one embedding provider.

    Each provider module declares one as ``SPEC`` and
    :mod:`coverage_core.embeddings.registry` lists them; ``make_embedder``,
    the key routing below, the CLI's ``--embedder``, the default price table
    and the dashboard's Configure page all read it, so a new provider is one
    module and one registry line.

    Attributes:
        name: The provider's id: ``--embedder`` value, settings, cache key, price table.
        label: Its name in messages ("OpenAI").
        description: The Configure page's choice, one line.
        default_model: The model used when none is named.
        models: The models it lists, by name (the Configure page's choices).
        factory: ``factory(model, options)`` -> the embedder; loads and sends nothing.
        trained_for_truncation: ``f(model)``: True when the model's first
            dimensions are a smaller embedding (Matryoshka), False when known
            not to be, None when unknown.
        key_variable: The environment variable holding its key; sent only to
            ``hosts`` (None: it needs no key).
        base_url_variable: The environment variable its client library reads a base URL
            from when none is given (the operator's choice); None: it reads none.
        hosts: Its own API hosts, the only ones its key variable is sent to.
        paid: Its own endpoint charges per token (the cost is shown before a run).
        remote: Texts are sent to a server: ``max_concurrency`` applies and a
            Ray worker mostly waits on the network.
        max_inputs_per_request: The API's cap on texts per request (None: no API).
        compatible_servers: ``base_url`` may name another server speaking its API.
        typed_model: Any model name is accepted, typed in rather than chosen from ``models``.
        model_help: What a typed model name may be, for the Configure page.
        model_name: ``f(model)``: the model as messages name it (a local
            model's folder shortened to its last part); None: as given.
    """

    name: str
    label: str
    description: str
    default_model: str
    models: Mapping[str, ModelSpec]
    factory: Callable[[str, EmbedderOptions], "Embedder"]
    trained_for_truncation: Callable[[str], "bool | None"]
    key_variable: str | None = None
    base_url_variable: str | None = None
    hosts: tuple[str, ...] = ()
    paid: bool = False
    remote: bool = False
    max_inputs_per_request: int | None = None
    compatible_servers: bool = False
    typed_model: bool = False
    model_help: str = ""
    model_name: Callable[[str], str] | None = None

    @property
    def shortens_output(self) -> bool:
        """Whether any of its models accepts ``dimensions`` (a shorter output)."""
        return any(model.output_dimensions for model in self.models.values())


# --------------------------------------------------------------------------
# which key may go where
# --------------------------------------------------------------------------

CUSTOM_KEY_VARIABLE = "EMBEDDING_API_KEY"
"""Where the key for any other embeddings server (a custom base URL) comes from."""


def endpoint_is_own(spec: ProviderSpec | None, base_url: str | None) -> bool:
    """Whether ``base_url`` is the API of ``spec``'s provider: no URL, or https on one of its hosts.

    ``spec`` None (an unregistered provider) owns no host. The whole authority
    must equal the host (``:443`` allowed): comparing the parsed host name
    alone would accept ``https://x@api.openai.com`` or backslash forms that
    HTTP clients and ``urlsplit`` read differently.
    """
    if not (base_url or "").strip():
        return True
    if spec is None:
        return False
    try:
        parts = urlsplit(base_url.strip())
    except ValueError:
        return False
    allowed = {form for host in spec.hosts for form in (host, f"{host}:443")}
    return parts.scheme.lower() == "https" and parts.netloc.lower() in allowed


def key_variable_for(spec: ProviderSpec | None, base_url: str | None) -> str:
    """The environment variable whose key may be sent to ``base_url`` for ``spec``'s provider.

    The provider's own variable (``OPENAI_API_KEY``, ``VOYAGE_API_KEY``) only
    for the provider's own endpoint; :data:`CUSTOM_KEY_VARIABLE` for any other
    server, so an operator's key never reaches a URL a user typed.
    """
    if spec is not None and spec.key_variable and endpoint_is_own(spec, base_url):
        return spec.key_variable
    return CUSTOM_KEY_VARIABLE


def endpoint_identity(spec: ProviderSpec | None, base_url: str | None) -> str:
    """The server that answers for ``spec``'s provider at ``base_url`` (None: the operator's
    ``spec.base_url_variable``, as the client library reads it), as the embedding cache keys it.

    "" for the provider's own API (:func:`endpoint_is_own`), so older caches stay valid for it; any other
    server is its URL without credentials, query or fragment, so no secret is written to the cache.
    """
    url = (base_url or "").strip()
    if not url and spec is not None and spec.base_url_variable:
        url = os.environ.get(spec.base_url_variable, "").strip()
    if endpoint_is_own(spec, url):
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_url(url) or ""
    host = parts.netloc.rpartition("@")[2].lower()
    return f"{parts.scheme.lower()}://{host}{parts.path.rstrip('/')}"


def environment_key_for(spec: ProviderSpec | None, base_url: str | None) -> str | None:
    """The key the environment holds for ``spec``'s provider at ``base_url`` under :func:`key_variable_for`, or None."""
    return os.environ.get(key_variable_for(spec, base_url), "").strip() or None


def resolve_key(spec: ProviderSpec | None, api_key: str | None, base_url: str | None, *, name: str = "") -> str:
    """``api_key`` if given, else the environment's key for this endpoint.

    ``name`` stands for the provider in the message when ``spec`` is None.

    Raises:
        InputError: neither exists; the message names the variable to set.
    """
    key = (api_key or "").strip() or environment_key_for(spec, base_url)
    if key:
        return key
    label, own_variable = (spec.label, spec.key_variable) if spec is not None else (name, None)
    if key_variable_for(spec, base_url) == CUSTOM_KEY_VARIABLE and own_variable:
        raise InputError(
            f"No API key for the server at {redact_url(base_url)}: {own_variable} is sent only to "
            f"{label} itself, so set {CUSTOM_KEY_VARIABLE} (or enter a key on the Configure page)."
        )
    raise InputError(
        f"No {label} API key: set {own_variable or CUSTOM_KEY_VARIABLE} (or enter a key on the Configure page)."
    )


# Characters kept per token of a model's input when a text is cut to fit it.
# English runs about 4 characters per token, German and code about 3: cutting
# at 3 keeps nearly all a model can read while staying under its limit.
INPUT_CHARS_PER_TOKEN = 3

DEFAULT_MAX_CONCURRENCY = 4
"""Requests an API embedder keeps in flight at most (``max_concurrency``).

Most of a request's time is the provider computing the batch, so a few
requests at once embed a large corpus several times faster than one after the
other, while staying well inside the request-per-minute limits of even the
lowest paid tiers; a rate limit lowers it for a while (:class:`RequestGate`).
The local model always runs one batch at a time: it already uses every core."""

REQUEST_TOKEN_HEADROOM = 0.5
"""Share of a provider's tokens-per-request cap a batch fills at most, by
:func:`approximate_token_count`. The real count of a text can be higher than
the approximation (code, numbers and rare words split into more tokens), and
a request over the cap is refused whole, so batches keep half the cap free."""

COMPATIBLE_SERVER_BATCH_SIZE = 128
"""Texts per request to an OpenAI-compatible server at a custom base URL, whose
limits we cannot know (text-embeddings-inference, vLLM, Ollama, proxies); the
providers' own endpoints get their documented maximum instead."""


_GATE_CREATION = threading.Lock()  # so concurrent first requests share one gate

UNREADABLE_REPLY = (ValueError, TypeError, AttributeError, KeyError)
"""What the provider clients raise while reading a 200 reply that is not what they expect (JSONDecodeError is a
ValueError); ``_classify`` turns them into :meth:`RemoteEmbedder._bad_response_failure`."""


@dataclass(eq=False, repr=False)
class RemoteEmbedder:
    """What the API providers share: settings, approximate token counts,
    batching, one request with its retries, and the checks on a reply.

    A provider sets its ``model`` default, gets its ``spec`` from :func:`api_provider` (its module's
    ``SPEC``: its name, its label in messages, the API's cap on texts per
    request and where its key may go), and implements ``_check_settings()``
    (model and dimensions), ``_request_token_cap()`` (the API's cap on tokens
    per request), ``_new_client(**settings)``, ``_send(client, texts)`` and
    ``_embeddings_in(reply)`` (one request and what it answered, for
    :meth:`_embed_batch`), ``_classify(exc)`` (with the ``_*_failure``
    messages below) and ``_output_dimensions()``.

    ``max_batch_tokens`` is :data:`REQUEST_TOKEN_HEADROOM` of the token cap:
    :func:`~coverage_core.embeddings.cache.embed_texts` plans requests with it
    and ``batch_size`` and keeps up to ``max_concurrency`` of them in flight.
    One :class:`RequestGate` per embedder is shared by all its requests, so a
    rate limit slows every one of them.

    Args:
        model: The provider's model (each provider says which it accepts).
        dimensions: A shorter output, for models that support it (None = native).
        api_key: The key; None reads the spec's key variable for the
            provider's own endpoint and ``EMBEDDING_API_KEY`` for any other
            ``base_url`` (see :func:`key_variable_for`). Never shown in
            ``repr``, messages or the cache.
        base_url: Another endpoint speaking the provider's API; None = the provider's own.
        batch_size: Texts per request, at most the spec's ``max_inputs_per_request``;
            None = that maximum for the provider's own endpoint,
            :data:`COMPATIBLE_SERVER_BATCH_SIZE` for another base URL.
        timeout: Seconds to wait for one request.
        max_retries: Retries after rate limits, timeouts and connection errors.
        max_concurrency: Requests in flight at most (see :class:`RequestGate`).
        backoff: Wait policy between retries.
    """

    model: str = ""
    dimensions: int | None = None
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    batch_size: int | None = None
    timeout: float = 60.0
    max_retries: int = 5
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    backoff: "Backoff" = field(default_factory=lambda: Backoff())
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    max_batch_tokens: int = field(default=0, init=False)
    _client: Any = field(default=None, init=False, repr=False)
    _gate: "RequestGate | None" = field(default=None, init=False, repr=False)
    _endpoint: str = field(default="", init=False, repr=False)  # see cache_tag

    spec: ClassVar[ProviderSpec]  # each provider's class gets it from @api_provider

    @property
    def provider(self) -> str:
        """The provider's id: its spec's ``name``."""
        return self.spec.name

    @classmethod
    def from_options(cls, model: str, options: EmbedderOptions) -> "RemoteEmbedder":
        """The embedder of ``model`` with ``options``: the factory of every API provider's spec.

        Options left unset keep this class's defaults; ``precision`` is the local model's and ignored.
        """
        settings: dict[str, Any] = {
            "dimensions": options.dimensions, "api_key": options.api_key, "base_url": options.base_url,
            "max_retries": int(options.max_retries),
        }
        if options.batch_size:
            settings["batch_size"] = int(options.batch_size)
        if options.timeout is not None:
            settings["timeout"] = float(options.timeout)
        if options.max_concurrency is not None:
            settings["max_concurrency"] = int(options.max_concurrency)
        return cls(model, **settings)

    def __post_init__(self) -> None:
        self.base_url = (self.base_url or "").strip() or None
        self._endpoint = endpoint_identity(self.spec, self.base_url)  # once, as the client reads its variable
        self._check_settings()
        self._check_request_settings()
        # Resolve the key now (cheap, no network) so a missing key is reported
        # before any work starts.
        self.api_key = resolve_key(self.spec, self.api_key, self.base_url, name=self.provider)

    def _check_request_settings(self) -> None:
        """InputError unless ``batch_size`` and ``max_concurrency`` are usable; fills in the defaults."""
        cap = int(self.spec.max_inputs_per_request)
        if self.batch_size is None:
            own_endpoint = endpoint_is_own(self.spec, self.base_url)
            self.batch_size = cap if own_endpoint else min(cap, COMPATIBLE_SERVER_BATCH_SIZE)
        if not 1 <= int(self.batch_size) <= cap:
            raise InputError(
                f"batch_size for {self.spec.label} must be between 1 and {cap:,} (the most texts one request "
                f"may hold), not {self.batch_size}."
            )
        self.batch_size = int(self.batch_size)
        if int(self.max_concurrency) < 1:
            raise InputError(f"max_concurrency must be at least 1, not {self.max_concurrency}.")
        self.max_concurrency = int(self.max_concurrency)
        self.max_batch_tokens = int(self._request_token_cap() * REQUEST_TOKEN_HEADROOM)

    def __repr__(self) -> str:
        # Written here, not generated by dataclass: the key stays out and the
        # base URL is shown without credentials.
        return (
            f"{type(self).__name__}(model={self.model!r}, dimensions={self.dimensions!r}, "
            f"base_url={redact_url(self.base_url)!r}, batch_size={self.batch_size!r}, "
            f"max_concurrency={self.max_concurrency!r})"
        )

    def __getstate__(self) -> dict:
        # The client (open connections) and the gate (locks) cannot be pickled,
        # e.g. to send the embedder to a worker process; each copy makes its own.
        state = dict(self.__dict__)
        state["_client"] = None
        state["_gate"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Approximate token counts (``ceil(chars / 4)``): exact tokenizers need a download."""
        return [approximate_token_count(text) for text in texts]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit float32 vectors for ``texts``, in order, one request after the other.

        Requests hold at most ``batch_size`` texts and ``max_batch_tokens``
        tokens (:func:`~coverage_core.embeddings.cache.embed_texts` plans the
        same way and sends its batches concurrently). A text far over the
        model's input is cut to its first ``max_tokens * INPUT_CHARS_PER_TOKEN``
        characters before it is sent: OpenAI refuses (400) a whole batch when
        one input is over its limit, where the local model and Voyage simply
        read the beginning. The cut is deterministic, so the cache (keyed by
        the full text) stays right, and callers already warn about texts over
        ``max_tokens``.
        """
        limit = int(self.max_tokens) * INPUT_CHARS_PER_TOKEN
        texts = [text if len(text) <= limit else text[:limit] for text in texts]
        if not texts:
            return np.zeros((0, self._output_dimensions()), dtype=np.float32)
        plan = plan_batches(self.count_tokens(texts), self.batch_size, self.max_batch_tokens)
        parts = [self._embed_batch([texts[i] for i in batch]) for batch in plan]
        return np.concatenate(parts, axis=0)

    def _check_settings(self) -> None:
        """InputError unless ``model`` and ``dimensions`` are valid; may normalise them."""
        raise NotImplementedError

    def _request_token_cap(self) -> int:
        """The API's cap on the tokens of all texts in one request."""
        raise NotImplementedError

    def _new_client(self, **settings: Any) -> Any:
        """The provider library's client, made with ``settings`` (see :meth:`_get_client`)."""
        raise NotImplementedError

    def _get_client(self) -> Any:
        """The client, made on first use: the client's own retries are off (``max_retries=0``),
        :meth:`_request` retries instead, the same way for every provider."""
        if self._client is None:
            self._client = self._new_client(
                api_key=self.api_key, base_url=self.base_url or None, timeout=self.timeout, max_retries=0
            )
        return self._client

    def _output_dimensions(self) -> int:
        raise NotImplementedError

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        """One request for ``texts``, sent with :meth:`_request`; its embeddings as :meth:`_unit_vectors`."""
        client = self._get_client()
        reply = self._request(lambda: self._send(client, texts))
        try:
            embeddings = self._embeddings_in(reply)
        except (AttributeError, KeyError, TypeError):  # the clients build replies without checking their fields
            raise self._bad_response("fields missing or of the wrong type") from None
        return self._unit_vectors(embeddings, len(texts))

    def _send(self, client: Any, texts: list[str]) -> Any:
        """The client's reply to one embeddings request for ``texts``."""
        raise NotImplementedError

    def _embeddings_in(self, reply: Any) -> Any:
        """The embeddings ``reply`` holds, one per text in order; AttributeError, KeyError or TypeError
        when the client left a field missing or of the wrong type."""
        raise NotImplementedError

    def _classify(self, exc: Exception) -> "Failure | None":
        raise NotImplementedError

    # The failures ``_classify`` reports, worded the same for every provider.

    def _timeout_failure(self) -> "Failure":
        return Failure("timeout", f"{self.spec.label} did not answer within {self.timeout:g} s.", retryable=True)

    def _connection_failure(self) -> "Failure":
        where = redact_url(self.base_url) or self.spec.hosts[0]
        return Failure(
            "connection", f"Could not connect to {self.spec.label} at {where}; check the network or base URL.",
            retryable=True,
        )

    def _auth_failure(self, status: int | None) -> "Failure":
        code = f" ({status})" if status else ""
        return Failure(
            "auth",
            f"{self.spec.label} rejected the API key{code}; check {key_variable_for(self.spec, self.base_url)} "
            "or the key you entered.",
            retryable=False,
        )

    def _rate_limit_failure(self, detail: str, retry_after: float | None) -> "Failure":
        return Failure(
            "rate_limit",
            f"{self.spec.label} rate limit reached (429): {detail}. Wait a minute or lower the batch size.",
            retryable=True,
            retry_after=retry_after,
        )

    def _server_failure(self, status: int | None, detail: str) -> "Failure":
        """A 5xx: usually transient, so retried."""
        return Failure("other", f"{self.spec.label} server error ({status}): {detail}.", retryable=True)

    def _refused_failure(self, status: int | None, detail: str) -> "Failure":
        return Failure("bad_request", f"{self.spec.label} refused the request ({status}): {detail}.", retryable=False)

    def _quoted(self, message: Any) -> str:
        """``message`` (a provider's error message) as the failures above quote it: text without surrounding
        blanks, a final period or the key."""
        return redact(str(message).strip().rstrip("."), self.api_key)

    def _request(self, request: Callable[[], T]) -> T:
        """``request()`` through :func:`call_with_retries` with this embedder's retry settings and gate."""
        return call_with_retries(
            request, self._classify, max_retries=self.max_retries, backoff=self.backoff, sleep=self.sleep,
            gate=self._get_gate(),
        )

    def _get_gate(self) -> "RequestGate":
        """The gate all requests of this embedder share, made on first use with ``max_concurrency``."""
        with _GATE_CREATION:
            if self._gate is None:
                self._gate = RequestGate(self.max_concurrency)
            return self._gate

    @property
    def cache_tag(self) -> str:
        """What besides provider, model and dimensions decides its vectors: the server that answers
        (:func:`endpoint_identity`; "" for the provider's own API)."""
        return f"endpoint={self._endpoint}" if self._endpoint else ""

    def _bad_response(self, problem: str) -> ProviderError:
        """The one sentence for a reply that holds no usable embeddings (kind ``bad_response``)."""
        where = f"{self.spec.label} at {redact_url(self.base_url)}" if self.base_url else self.spec.label
        return ProviderError(f"{where} sent a reply that holds no usable embeddings ({problem}); check the base "
                             "URL, or try again later.", "bad_response")

    def _bad_response_failure(self, exc: Exception) -> "Failure":
        """A reply the client library could not read (it raised one of :data:`UNREADABLE_REPLY`). Not retried
        (a server answering garbage answers it again, and each attempt may be billed); not quoted (it may be a
        whole page, or echo the key)."""
        problem = "not JSON" if isinstance(exc, json.JSONDecodeError) else "fields missing or of the wrong type"
        return Failure("bad_response", str(self._bad_response(problem)), retryable=False)

    def _unit_vectors(self, embeddings, n_texts: int) -> np.ndarray:
        """The reply's embeddings as unit float32 rows; ProviderError (``bad_response``) unless they are one list
        of finite numbers per text, all of one length (``dimensions`` when asked): garbage stops here."""
        try:
            array = np.array(embeddings)
        except (ValueError, TypeError):  # lists of different lengths
            raise self._bad_response("embeddings of different lengths") from None
        if array.ndim == 0 or len(array) != n_texts:
            raise self._bad_response(f"{len(array) if array.ndim else 'no'} embeddings for {n_texts} texts")
        if array.ndim != 2 or not array.shape[1] or array.dtype.kind not in "iuf":
            raise self._bad_response("embeddings that are not lists of numbers of one length")
        if self.dimensions is not None and array.shape[1] != int(self.dimensions):
            raise self._bad_response(f"embeddings of {array.shape[1]} numbers where {self.dimensions} were asked for")
        with np.errstate(over="ignore"):  # a number past float32's range becomes inf, refused next
            array = array.astype(np.float32)
        if not np.isfinite(array).all():
            raise self._bad_response("embeddings holding NaN or infinite numbers")
        return unit_rows(array)


def _trained_if_shortened(models: Mapping[str, ModelSpec], model: str) -> bool | None:
    """Whether ``model`` of ``models`` accepts ``dimensions`` (a shorter output, which it was trained for); None
    when ``models`` does not list it."""
    spec = models.get(model)
    return None if spec is None else bool(spec.output_dimensions)


def api_provider(**fields: Any) -> Callable[[type[E]], type[E]]:
    """A class decorator declaring a :class:`RemoteEmbedder` subclass the embedder of an API provider.

    Args:
        fields: The provider's :class:`ProviderSpec` fields (``name``, ``label``, ``models``, ``hosts``, ...),
            besides those every API provider shares: the class's ``from_options`` is the ``factory`` and its
            ``model`` default the ``default_model``; ``paid`` and ``remote`` are True unless given; without
            ``trained_for_truncation`` a listed model is trained for truncation when it accepts ``dimensions``
            (None for a model not listed).

    Returns:
        The decorator: it sets the class's ``spec`` and returns the class (the module's ``SPEC`` is that spec).

    What the API providers share is then said once, and a spec cannot name another class's factory or default.
    """

    def declare(embedder: type[E]) -> type[E]:
        shared = {
            "default_model": embedder.model, "factory": embedder.from_options, "paid": True, "remote": True,
            "trained_for_truncation": partial(_trained_if_shortened, fields["models"]),
        }
        embedder.spec = ProviderSpec(**{**shared, **fields})
        return embedder

    return declare
