"""Chat client for OpenAI or any OpenAI-compatible server (Ollama, vLLM, ...).

Only one operation is needed: send a prompt, get JSON back. Compatible
servers differ in what they support and local models often wrap JSON in
prose or code fences, so the reply is parsed leniently and a malformed reply
is retried once. Every failure becomes a :class:`ProviderError` with a
one-sentence message that never contains the API key.

A server is not trusted more than a file: a reply longer than
:data:`MAX_REPLY_CHARS` or nested deeper than
:data:`~coverage_core.bounded_json.MAX_DEPTH` is a ``bad_response``,
and lone surrogates (``"\\ud800"``) in a reply become U+FFFD before anything
hashes or embeds the text.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coverage_core import bounded_json
from coverage_core.embeddings.base import redact, redact_url
from coverage_core.embeddings.registry import is_provider_endpoint
from coverage_core.errors import ProviderError

if TYPE_CHECKING:  # imported where used: only the LLM checks need it
    import openai

__all__ = ["ChatClient", "DEFAULT_LLM_MODEL", "LLMConfig", "MAX_REPLY_CHARS", "llm_key_variable", "parse_json_loose"]

# Local servers (Ollama, vLLM) ignore the key, but the openai client insists
# on having one.
# LLM failures (ProviderError.kind) after which asking again, for the next
# gap or the next question (checks.subquestions), is pointless.
FATAL_KINDS = frozenset({"auth", "connection", "timeout", "rate_limit"})


_PLACEHOLDER_KEY = "not-needed"

_NUDGE = (
    "Your previous reply was not valid JSON. Reply again with only the JSON value, "
    "no explanation and no code fences."
)


MAX_REPLY_CHARS = 200_000
"""Longest JSON reply read: one asking for a gap's few questions is about 1,200 characters
(``costs._LLM_REPLY_CHARS``), so a reply 150 times that long is a broken or hostile server, refused before
it is parsed (the lenient parser's search for JSON in prose grows with the reply)."""
CHARS_PER_REPLY_TOKEN = 16
"""A text reply asked for ``max_tokens`` tokens is cut after this many characters per token: a token is
about 4 characters, so only a server that ignores ``max_tokens`` is cut."""
_ECHO_CHARS = 8_000  # of a bad reply shown back to the model with the nudge: enough to see what went wrong


DEFAULT_LLM_MODEL = "gpt-4o-mini"
"""The chat model used when none is named: the one home of this default
(the CLI, the dashboard's settings and the price table read it from here)."""


@dataclass(frozen=True)
class LLMConfig:
    """How to reach the chat model.

    ``base_url`` points at an OpenAI-compatible server (for Ollama:
    ``http://localhost:11434/v1``); None means OpenAI itself. ``api_key``
    falls back to the environment: ``OPENAI_API_KEY`` for OpenAI itself (no
    base URL, or https on api.openai.com), but ``LLM_API_KEY`` for any other
    ``base_url``, so an OpenAI key is never sent to a third-party server by
    accident. ``max_tokens`` caps a reply (None: the server's own limit; a
    small local model can otherwise ramble until the timeout). The key is
    left out of ``repr`` and of :meth:`public_dict`
    (which also drops credentials written into the base URL), so it never
    reaches logs or saved results.
    """

    model: str = DEFAULT_LLM_MODEL
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.2
    timeout: float = 60
    max_retries: int = 3
    max_tokens: int | None = None

    def public_dict(self) -> dict[str, Any]:
        """The settings safe to save or show: everything except the key."""
        return {
            "model": self.model,
            "base_url": redact_url(self.base_url),
            "temperature": self.temperature,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "max_tokens": self.max_tokens,
        }

    def __repr__(self) -> str:  # a repr can end up in a traceback or a log
        return "LLMConfig(" + ", ".join(f"{name}={value!r}" for name, value in self.public_dict().items()) + ")"


def llm_key_variable(base_url: str | None) -> str:
    """The environment variable whose key may be sent to the chat server at ``base_url``.

    ``OPENAI_API_KEY`` only for OpenAI itself (the rule embedders follow,
    :func:`~coverage_core.embeddings.registry.is_provider_endpoint`), ``LLM_API_KEY`` for any other server.
    """
    return "OPENAI_API_KEY" if is_provider_endpoint("openai", base_url) else "LLM_API_KEY"


class ChatClient:
    """Sends chat prompts and returns the model's JSON reply.

    Uses the real ``openai.OpenAI`` client, which already retries rate
    limits, timeouts and server errors ``max_retries`` times with backoff.
    """

    writes_languages: frozenset[str] | None = None
    """Languages (ISO 639-1 codes) the model is known to write questions in; None: any, as a hosted model
    does. :func:`~coverage_core.suggest.writing.write_questions` asks nothing of a passage in another."""

    def __init__(self, config: LLMConfig | None = None):
        self.config = config or LLMConfig()
        base_url = (self.config.base_url or "").strip() or None
        # For messages and repr: the server without any credentials written into its URL.
        self.host = redact_url(base_url) or "api.openai.com"
        self._key_variable = llm_key_variable(base_url)
        key = (self.config.api_key or "").strip() or os.environ.get(self._key_variable, "").strip()
        if not key:
            if self._key_variable == "OPENAI_API_KEY":
                raise ProviderError(
                    "No OpenAI API key: set OPENAI_API_KEY, or give the base URL of a local "
                    "OpenAI-compatible server such as Ollama.",
                    kind="auth",
                )
            key = _PLACEHOLDER_KEY
        self._secret = key  # only to scrub it from server messages
        import openai  # here, not at module level: it costs ~1 s and most runs use no LLM

        self._client = openai.OpenAI(
            api_key=key,
            base_url=base_url,
            timeout=self.config.timeout,
            max_retries=self.config.max_retries,
        )
        # JSON mode helps where supported; a server that rejects it gets
        # plain requests from then on.
        self._json_mode = True

    def __repr__(self) -> str:
        return f"ChatClient(model={self.config.model!r}, host={self.host!r})"

    def complete_json(self, system: str, user: str) -> Any:
        """Send one chat prompt and return the JSON value in the reply.

        A reply without usable JSON (none, or nested more than
        :data:`~coverage_core.bounded_json.MAX_DEPTH` deep) is retried
        once with a reminder; a second failure, or a reply longer than
        :data:`MAX_REPLY_CHARS`, raises ``ProviderError(kind="bad_response")``.
        """
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        reply = self._json_reply(messages)
        try:
            return parse_json_loose(reply)
        except ValueError:
            pass
        messages += [{"role": "assistant", "content": reply[:_ECHO_CHARS]}, {"role": "user", "content": _NUDGE}]
        reply = self._json_reply(messages)
        try:
            return parse_json_loose(reply)
        except ValueError as error:
            raise ProviderError(
                f"The model {self.config.model!r} at {self.host} did not return valid JSON twice in a row "
                f"({error}); try again or use a stronger model.",
                kind="bad_response",
            ) from None

    def _json_reply(self, messages: list[dict]) -> str:
        """The reply to ``messages`` asked as JSON; ``bad_response`` when it is longer than :data:`MAX_REPLY_CHARS`
        (asking again would cost as much, for a model that rambles)."""
        reply = self._chat(messages)
        if len(reply) > MAX_REPLY_CHARS:
            raise ProviderError(
                f"The model {self.config.model!r} at {self.host} replied with {len(reply):,} characters, more than "
                f"the {MAX_REPLY_CHARS:,} a reply may have; try again or set a lower max_tokens.",
                kind="bad_response",
            )
        return reply

    def complete_text(
        self, system: str, user: str, *, max_tokens: int = 64, temperature: float | None = None,
        seed: int | None = None, examples: Sequence[tuple[str, str]] = (),
    ) -> str:
        """Send one chat prompt and return the reply as text (no JSON asked for).

        ``temperature`` None is the configured one; ``seed`` makes a retry
        differ from the first try on servers that honour it. ``examples``
        (prompt, reply) pairs go before the prompt as earlier turns of the
        chat: a small model follows a shown reply better than a described one.
        The reply is cut after :data:`CHARS_PER_REPLY_TOKEN` characters per
        token of ``max_tokens``, for a server that ignores the limit.
        """
        messages = [{"role": "system", "content": system}]
        for prompt, reply in examples:
            messages += [{"role": "user", "content": prompt}, {"role": "assistant", "content": reply}]
        messages.append({"role": "user", "content": user})
        extra = {"max_tokens": max_tokens}
        if temperature is not None:
            extra["temperature"] = temperature
        if seed is not None:
            extra["seed"] = seed
        return self._chat(messages, json_reply=False, **extra)[: max(1, max_tokens) * CHARS_PER_REPLY_TOKEN]

    def _chat(self, messages: list[dict], json_reply: bool = True, **extra) -> str:
        import openai

        request = {
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
            **({"max_tokens": self.config.max_tokens} if self.config.max_tokens else {}),
            **extra,
        }
        try:
            if not json_reply:
                response = self._client.chat.completions.create(**request)
            elif self._json_mode:
                try:
                    response = self._client.chat.completions.create(
                        **request, response_format={"type": "json_object"}
                    )
                except openai.BadRequestError:
                    # Many compatible servers (and some models) reject JSON
                    # mode; the prompt asks for JSON anyway.
                    self._json_mode = False
                    response = self._client.chat.completions.create(**request)
            else:
                response = self._client.chat.completions.create(**request)
        except openai.OpenAIError as error:
            raise self._provider_error(error) from None
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices and choices[0].message else None
        # The JSON escape "\ud800" gives a lone surrogate, which no later encode to UTF-8 survives.
        return bounded_json.clean_text(content) if isinstance(content, str) else ""

    def _provider_error(self, error: "openai.OpenAIError") -> ProviderError:
        """One plain sentence per failure; the key and raw server text about it stay out."""
        import openai

        host, model = self.host, self.config.model
        if isinstance(error, (openai.AuthenticationError, openai.PermissionDeniedError)):
            # The server's own message can echo part of the key: not shown.
            return ProviderError(
                f"The LLM server at {host} rejected the API key; check {self._key_variable} or the key you gave.",
                kind="auth",
            )
        if isinstance(error, openai.RateLimitError):
            if "quota" in str(error).lower():
                return ProviderError(
                    f"The LLM account at {host} has no quota left; check its billing.", kind="rate_limit"
                )
            return ProviderError(
                f"The LLM server at {host} is still rate-limiting after {self.config.max_retries} retries; "
                "wait a minute and try again.",
                kind="rate_limit",
            )
        if isinstance(error, openai.APITimeoutError):  # before APIConnectionError: it is a subclass
            return ProviderError(
                f"The LLM server at {host} did not answer within {self.config.timeout:g} seconds; "
                "try again or raise the timeout.",
                kind="timeout",
            )
        if isinstance(error, openai.APIConnectionError):
            return ProviderError(
                f"Could not connect to the LLM server at {host}; check that it is running and the base URL is right.",
                kind="connection",
            )
        if isinstance(error, openai.NotFoundError):
            return ProviderError(
                f"The LLM server at {host} does not know the model {model!r} (or the base URL is wrong).",
                kind="bad_request",
            )
        if isinstance(error, openai.BadRequestError):
            return ProviderError(
                f"The LLM server at {host} refused the request: {self._scrub(error)}", kind="bad_request"
            )
        if isinstance(error, openai.APIStatusError):
            return ProviderError(
                f"The LLM server at {host} failed with HTTP {error.status_code}: {self._scrub(error)}",
                kind="other",
            )
        return ProviderError(f"The LLM request to {host} failed: {self._scrub(error)}", kind="other")

    def _scrub(self, error: Exception) -> str:
        """The server's message, shortened, without the key or URL credentials, just in case."""
        text = getattr(error, "message", None) or str(error)
        text = " ".join(str(text).split())
        text = redact(text, self._secret if self._secret != _PLACEHOLDER_KEY else None)
        return text[:200].rstrip(".") + "."


# --------------------------------------------------------------------------
# lenient JSON parsing
# --------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_DECODER = json.JSONDecoder()
# Brackets tried as the start of the JSON in a reply with prose: each try scans on from there, so trying every
# bracket of a long reply would take quadratic time.
_MAX_STARTS = 16


class _TooDeep(ValueError):
    """The reply's JSON nests more than bounded_json.MAX_DEPTH deep: no other bracket of it is tried."""


def _balanced_span(text: str, start: int) -> str | None:
    """The text from the bracket at ``start`` to its matching close, minding strings."""
    closing = {"{": "}", "[": "]"}
    stack = []
    in_string = escaped = False
    depth_limit = bounded_json.MAX_DEPTH
    for position in range(start, len(text)):
        char = text[position]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in closing:
            stack.append(closing[char])
            if len(stack) > depth_limit:
                raise _TooDeep(_DEEP)
        elif char in "}]":
            if not stack or stack.pop() != char:
                return None
            if not stack:
                return text[start : position + 1]
    return None


_DEEP = f"its JSON nests lists or objects more than {bounded_json.MAX_DEPTH} levels deep"


def _checked(value: Any) -> Any:
    """``value`` parsed from a reply, refused when nested too deep, its strings free of lone surrogates."""
    if bounded_json.depth_over(value, bounded_json.MAX_DEPTH):
        raise _TooDeep(_DEEP)
    return bounded_json.clean_value(value)


def _first_json(text: str) -> Any:
    """The first JSON object or array in ``text`` (among its first :data:`_MAX_STARTS` brackets),
    tolerating trailing commas."""
    for number, match in enumerate(re.finditer(r"[{\[]", text)):
        if number == _MAX_STARTS:
            break
        start = match.start()
        try:
            return _checked(_DECODER.raw_decode(text, start)[0])
        except RecursionError:  # deeper than Python recurses: deeper than any answer
            raise _TooDeep(_DEEP) from None
        except _TooDeep:
            raise
        except ValueError:  # JSONDecodeError, or a number of more than 4,300 digits
            pass
        span = _balanced_span(text, start)  # raises _TooDeep past MAX_DEPTH open brackets
        if span is None:
            continue
        try:
            value = json.loads(_TRAILING_COMMA.sub(r"\1", span))
        except (RecursionError, ValueError):
            continue
        return _checked(value)
    raise ValueError("no JSON object or array found")


def parse_json_loose(text: str) -> Any:
    """Parse the JSON object or array in a model's reply.

    Accepts a bare JSON value, JSON inside ```` ``` ```` / ```` ```json ````
    fences, JSON after or before prose, and trailing commas. Returns the
    first JSON object or array found (fenced blocks first), its strings
    free of lone surrogates.

    Raises
    ------
    ValueError
        In a few plain words, if there is none, if the reply is longer than
        :data:`MAX_REPLY_CHARS`, or if its JSON nests more than
        :data:`~coverage_core.bounded_json.MAX_DEPTH` deep (however
        deep: no ``RecursionError`` escapes).
    """
    if not isinstance(text, str):
        raise ValueError("the reply is not text")
    stripped = text.strip().lstrip("\ufeff")
    if not stripped:
        raise ValueError("the reply is empty")
    if len(stripped) > MAX_REPLY_CHARS:
        raise ValueError(f"the reply is longer than {MAX_REPLY_CHARS:,} characters")
    try:
        value = bounded_json.loads(stripped, what="The reply")
        if isinstance(value, (dict, list)):
            return value
    except bounded_json.JSONError as error:
        if error.kind == "depth":
            raise ValueError(_DEEP) from None
    try:
        for fenced in _FENCE.findall(stripped):
            try:
                return _first_json(fenced)
            except _TooDeep:
                raise
            except ValueError:
                continue
        return _first_json(stripped)
    except _TooDeep:
        raise ValueError(_DEEP) from None
