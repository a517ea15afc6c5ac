"""Stand-ins for what the tests must not reach: an embedding model and a provider's API.

:class:`FakeEmbedder` is the one fake Embedder: deterministic vectors
computed from the text, no model and no network. It records what it was
asked and can fail as a rate-limited provider does.

:class:`FakeAPIServer` is a small HTTP server on 127.0.0.1 that speaks enough
of the OpenAI and Voyage APIs for the real client libraries to talk to it.

Both providers use ``POST {base_url}/embeddings`` with the same response
shape, and OpenAI chat uses ``POST {base_url}/chat/completions``. Tests script
responses per path; every request is recorded so a test can check what the
client sent (and that no API key leaked anywhere else).

Usage::

    with FakeAPIServer() as server:
        server.script("/v1/embeddings", [Reply(429, {"error": {...}}), DEFAULT])
        client = openai.OpenAI(api_key="k", base_url=server.url + "/v1")

For volume tests the server also behaves like a provider at scale: it refuses
requests over ``limits`` (inputs and tokens per request) as the real APIs do,
sleeps ``embedding_delay`` before each embeddings reply (so requests overlap
and finish out of order), can fail every request after some successes
(``fail_after``), and counts what it did: ``embedded`` (how often each text
was embedded successfully, i.e. paid for), ``peak_in_flight`` and
``completion_order``.
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import numpy as np

from coverage_core.errors import ProviderError

RATE_LIMITED = "The provider rate-limited the requests; wait a minute and run again."


def _text_seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


class FakeEmbedder:
    """A deterministic Embedder without a model; records every call and can fail on cue.

    Args:
        provider, model, dimensions: What the cache key is made of.
        vectors: ``"random"``: a normal vector seeded by the text's hash, times
            3 (not unit length on purpose: the pipeline must normalise it);
            ``"words"``: a bag of the text's words of four letters or more,
            hashed into ``width`` columns, so similarity follows shared words.
        width: Length of each vector.
        max_tokens: The longest text it reads, in tokens (one token per
            whitespace-separated word); ``"words"`` vectors ignore the rest.
        batch_size: Texts per ``embed`` call from ``embed_texts``.
        fail_from_batch: The first ``embed`` call (1-based) that raises a
            rate-limit :class:`ProviderError`, as does every later one; None
            never fails.

    Attributes:
        embed_calls: The texts of every ``embed`` call, in order.
        count_calls: The texts of every ``count_tokens`` call, in order.
        lock: Held while recording, for embedders that run batches in threads.
    """

    def __init__(self, provider="fake", model="m", dimensions=None, *, vectors="random", width=8,
                 max_tokens=5, batch_size=4, fail_from_batch=None):
        if vectors not in ("random", "words"):
            raise ValueError(f"vectors must be 'random' or 'words', not {vectors!r}")
        self.provider, self.model, self.dimensions = provider, model, dimensions
        self.vectors, self.width = vectors, width
        self.max_tokens, self.batch_size = max_tokens, batch_size
        self.fail_from_batch = fail_from_batch
        self.embed_calls: list[list[str]] = []
        self.count_calls: list[list[str]] = []
        self.lock = threading.Lock()

    def embed(self, texts):
        with self.lock:
            self.embed_calls.append(list(texts))
            if self.fail_from_batch is not None and len(self.embed_calls) >= self.fail_from_batch:
                raise ProviderError(RATE_LIMITED, "rate_limit")
        vector = self._random_vector if self.vectors == "random" else self._word_vector
        return np.array([vector(text) for text in texts], dtype=np.float64).reshape(-1, self.width)

    def count_tokens(self, texts):
        with self.lock:
            self.count_calls.append(list(texts))
        return [len(text.split()) for text in texts]

    @property
    def sent(self) -> list[str]:
        """Every text given to ``embed``, in order."""
        return [text for call in self.embed_calls for text in call]

    @property
    def calls(self) -> int:
        """How many times ``embed`` was called."""
        return len(self.embed_calls)

    @property
    def n_embedded(self) -> int:
        return sum(len(call) for call in self.embed_calls)

    def _random_vector(self, text: str) -> np.ndarray:
        return np.random.default_rng(_text_seed(text)).standard_normal(self.width) * 3

    def _word_vector(self, text: str) -> np.ndarray:
        row = np.full(self.width, 1e-3)  # never all zero, so every text has a direction
        read = " ".join(text.lower().split()[: self.max_tokens])
        for word in re.findall(r"[a-z]{4,}", read):
            row[int.from_bytes(hashlib.sha256(word.encode()).digest()[:2], "little") % self.width] += 1
        return row


@dataclass
class Reply:
    """One scripted HTTP response. ``delay`` seconds are slept first (timeouts)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


# Sentinel in a script: answer with the path's default behaviour.
DEFAULT = Reply(status=-1)


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any
    target: str = ""  # the path as sent, with any query string
    number: int = 0  # 0-based order of arrival


def server_token_count(text: str) -> int:
    """How many tokens the fake server bills for ``text``: one per 4 UTF-8 bytes, rounded up."""
    return max(1, math.ceil(len(text.encode("utf-8")) / 4))


@dataclass(frozen=True)
class Limits:
    """A provider's per-request caps; a request over either gets a 400, as from the real API."""

    max_inputs: int
    max_tokens: int
    count: Callable[[str], int] = server_token_count


def fake_embedding(text: str, dimensions: int) -> list[float]:
    """A deterministic unit vector derived from the text's hash."""
    vector = np.random.default_rng(_text_seed(text)).standard_normal(dimensions)
    return (vector / np.linalg.norm(vector)).tolist()


def embeddings_reply(body: dict, default_dimensions: int = 16) -> Reply:
    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    dimensions = body.get("dimensions") or body.get("output_dimension") or default_dimensions
    data = [
        {"object": "embedding", "index": i, "embedding": fake_embedding(t, int(dimensions))}
        for i, t in enumerate(texts)
    ]
    tokens = sum(len(t.split()) for t in texts)
    return Reply(
        200,
        {
            "object": "list",
            "data": data,
            "model": body.get("model", "fake"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        },
    )


def chat_reply(content: str, model: str = "fake-chat") -> Reply:
    """A chat.completions response whose single choice says ``content``."""
    return Reply(
        200,
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        },
    )


def error_reply(status: int, message: str, code: str | None = None, **headers: str) -> Reply:
    kind = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return Reply(
        status,
        {"error": {"message": message, "type": kind, "code": code, "param": None}, "detail": message},
        headers=dict(headers),
    )


class FakeAPIServer:
    """Threaded HTTP server; use as a context manager."""

    def __init__(self, default_dimensions: int = 16):
        self.default_dimensions = default_dimensions
        self.requests: list[RecordedRequest] = []
        # Volume settings (see the module docstring); set them before the requests come.
        self.limits: Limits | None = None
        self.embedding_delay: float | Callable[[RecordedRequest], float] = 0.0
        # What the server did, for assertions.
        self.embedded: collections.Counter[str] = collections.Counter()
        self.in_flight = 0
        self.peak_in_flight = 0
        self.completion_order: list[int] = []  # request numbers, in the order their replies were sent
        self._fail_after: tuple[int, Reply] | None = None
        self._successes = 0
        self._scripts: dict[str, list[Reply]] = {}
        self._handlers: dict[str, Callable[[dict], Reply]] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._make_handler())
        self._server.daemon_threads = True
        # A short poll interval makes shutdown (once per test) quick.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, path: str, replies: list[Reply]) -> None:
        """Answer the next requests to ``path`` with ``replies`` in order."""
        with self._lock:
            self._scripts.setdefault(path, []).extend(replies)

    def fail_after(self, successes: int, reply: Reply) -> None:
        """Answer every embeddings request with ``reply`` once ``successes`` embeddings requests succeeded."""
        with self._lock:
            self._fail_after = (successes, reply)

    def never_fail(self) -> None:
        """Undo :meth:`fail_after` (the provider is back)."""
        with self._lock:
            self._fail_after = None

    def handle(self, path: str, handler: Callable[[dict], Reply]) -> None:
        """Answer every unscripted request to ``path`` with ``handler(body)``."""
        self._handlers[path] = handler

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    def received(self, secret: str) -> bool:
        """Whether ``secret`` reached the server anywhere: a path, a header or a body."""
        return any(
            secret in text
            for request in self.requests
            for text in (request.target, json.dumps(request.headers), json.dumps(request.body))
        )

    def authorizations(self) -> list[str]:
        """The ``Authorization`` header of every request, in order ("" when absent)."""
        return [
            next((value for key, value in r.headers.items() if key.lower() == "authorization"), "")
            for r in self.requests
        ]

    def _default(self, path: str, body: dict) -> Reply:
        if path in self._handlers:
            return self._handlers[path](body)
        if path.endswith("/embeddings"):
            return embeddings_reply(body, self.default_dimensions)
        if path.endswith("/chat/completions"):
            return chat_reply("{}")
        return error_reply(404, f"no such path {path}")

    def _over_limits(self, body: dict) -> Reply | None:
        """The 400 a real provider gives a request over its caps, or None."""
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        if self.limits is None:
            return None
        if len(texts) > self.limits.max_inputs:
            return error_reply(400, f"{len(texts)} inputs; at most {self.limits.max_inputs} per request")
        tokens = sum(self.limits.count(text) for text in texts)
        if tokens > self.limits.max_tokens:
            return error_reply(400, f"{tokens} tokens; at most {self.limits.max_tokens} per request")
        return None

    def _next_reply(self, request: RecordedRequest) -> Reply:
        path, body = request.path, request.body
        embeddings = path.endswith("/embeddings")
        with self._lock:
            queue = self._scripts.get(path)
            reply = queue.pop(0) if queue else None
            if embeddings and self._fail_after is not None and self._successes >= self._fail_after[0]:
                reply = self._fail_after[1]
            scripted = reply is not None and reply.status != -1
            refused = None if scripted or not embeddings else self._over_limits(body)
            if embeddings and not scripted and refused is None:
                self._successes += 1
        if scripted:
            return reply
        if refused is not None:
            return refused
        reply = self._default(path, body)
        if embeddings and reply.status == 200:
            texts = body.get("input")
            with self._lock:
                self.embedded.update([texts] if isinstance(texts, str) else texts)
            delay = self.embedding_delay(request) if callable(self.embedding_delay) else self.embedding_delay
            reply = Reply(reply.status, reply.body, reply.headers, max(reply.delay, float(delay)))
        return reply

    def _make_handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                path = self.path.split("?")[0]
                with server._lock:
                    request = RecordedRequest(path, dict(self.headers), body, self.path, len(server.requests))
                    server.requests.append(request)
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                try:
                    self._answer(server._next_reply(request))
                finally:
                    with server._lock:
                        server.in_flight -= 1
                        server.completion_order.append(request.number)

            def _answer(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body if isinstance(reply.body, (bytes, str)) else json.dumps(reply.body)
                if isinstance(payload, str):
                    payload = payload.encode("utf-8")
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        return Handler

    def __enter__(self) -> "FakeAPIServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
