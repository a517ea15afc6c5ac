"""JSON from users and servers, parsed within bounds; text without lone surrogates.

A question file, a saved analysis or an LLM's reply may hold anything. Three
things in it would otherwise escape as a bug rather than a sentence:

* nesting: Python's parser recurses once per level, so ``[[[[…]]]]`` 100,000
  deep raises ``RecursionError``, and a value nested just under the limit
  breaks the next recursive step (``json.dumps``, a walk) instead;
* size: a value far larger than any real one costs time and memory before
  anything can check it;
* lone surrogates: the escape ``"\\ud800"`` is valid JSON but gives a string
  that cannot be encoded as UTF-8, so hashing, embedding or caching it fails
  much later, far from the input.

:func:`loads` parses with all three bounded and raises :class:`JSONError`
(an :class:`~coverage_core.errors.InputError`, so a ``ValueError`` too) with
one sentence naming what was read. :func:`clean_text` is the surrogate
repair for text read by other means (a Python literal, a server's reply).
"""

from __future__ import annotations

import json
import re
from typing import Any

from coverage_core.errors import InputError

__all__ = ["MAX_DEPTH", "JSONError", "clean_text", "clean_value", "depth_over", "loads"]

MAX_DEPTH = 64
"""Deepest nesting of lists and objects accepted by default: test sets nest 3 or 4 deep, a saved report about
5, an LLM's answer 3; far below the depth at which Python's own recursion gives out (about 1,000)."""

# A lone surrogate in text already decoded, and its JSON escape (\ud800-\udfff) in text still to parse.
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class JSONError(InputError):
    """The sentence of :func:`loads`; ``kind`` says why: ``"size"``, ``"encoding"``, ``"depth"`` or
    ``"syntax"``, and ``detail`` gives the parser's words for a syntax error ("" otherwise), so a caller
    may word its own sentence."""

    def __init__(self, message: str, kind: str, detail: str = ""):
        super().__init__(message)
        self.kind = kind
        self.detail = detail


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD; a high and low surrogate side by side become
    the one character they encode. Text without surrogates is returned as it is (one regex scan)."""
    if not _SURROGATE.search(text):
        return text
    # UTF-16 joins a valid pair into its character; "replace" turns each lone half into U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_value(value: Any) -> Any:
    """``value`` (parsed JSON, or a Python literal) with :func:`clean_text` applied to every string, dict keys
    included. Recursive: call it on values :func:`depth_over` has passed."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_value(key): clean_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(clean_value(item) for item in value)
    return value


def depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists, tuples or dicts more than ``limit`` deep; iterative, so any depth is safe."""
    # Level by level: one list per level and no tuple per item, about three times faster than a stack of
    # (item, depth) pairs on a large test set.
    level = [value] if isinstance(value, (dict, list, tuple)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, (dict, list, tuple)):
                    below.append(child)
        level = below
    return False


def loads(
    text: str | bytes | bytearray,
    *,
    what: str,
    advice: str = "check that it is the right file and save it again",
    max_chars: int | None = None,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """The JSON value of ``text``, its strings free of lone surrogates (:func:`clean_text`).

    ``what`` names the input and opens each sentence ("The question file
    q.json"); ``advice`` ends it (what to do). Bytes must be UTF-8 (a BOM is
    allowed). Raises :class:`JSONError` when ``text`` is longer than
    ``max_chars`` (None: any length; checked before parsing), not UTF-8,
    nested more than ``max_depth`` deep (however deep: the parser's
    ``RecursionError`` is caught), or not valid JSON (a number of more
    than 4,300 digits included). Never raises anything else but
    ``MemoryError``.
    """
    if max_chars is not None and len(text) > max_chars:
        raise JSONError(f"{what} is {len(text):,} {'bytes' if isinstance(text, (bytes, bytearray)) else 'characters'} "
                        f"long, more than the {max_chars:,} accepted; {advice}.", "size")
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise JSONError(f"{what} is not UTF-8 text; {advice}.", "encoding") from None
    text = clean_text(text)
    try:
        value = json.loads(text)
    except RecursionError:  # the C parser stops cleanly at Python's recursion limit
        raise _too_deep(what, advice, max_depth) from None
    except ValueError as error:  # JSONDecodeError, or an integer of more than 4,300 digits
        detail = _detail(error)
        raise JSONError(f"{what} is not valid JSON ({detail}); {advice}.", "syntax", detail) from None
    if depth_over(value, max_depth):
        raise _too_deep(what, advice, max_depth)
    # Escapes of surrogates are rare: only then is every string visited.
    return clean_value(value) if _ESCAPED_SURROGATE.search(text) else value


def _too_deep(what: str, advice: str, max_depth: int) -> JSONError:
    return JSONError(f"{what} nests lists or objects more than {max_depth} levels deep; {advice}.", "depth")


def _detail(error: ValueError) -> str:
    """The parser's complaint in a few words, without its own full stop."""
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} at line {error.lineno}, column {error.colno}"
    text = " ".join(str(error).split())
    if "digits" in text:
        return "a number has too many digits"
    return text[:80].rstrip(".") or type(error).__name__
