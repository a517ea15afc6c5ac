"""Reading the LLM's reply: typed sub-questions from whatever JSON shape the model chose."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from coverage_core.checks.subquestions.config import DEFAULT_TYPE, SUB_QUESTION_CHARS, SUBQUESTION_TYPES
from coverage_core.checks.subquestions.results import SubQuestion
from coverage_core.suggest.llm import parse_json_loose
from coverage_core.validation import shorten

_TYPE_SYNONYMS = {
    **dict.fromkeys(
        ("core", "essential", "central", "main", "key", "primary", "required", "necessary", "critical",
         "crucial", "direct", "fundamental", "must"),
        "core",
    ),
    **dict.fromkeys(
        ("background", "context", "contextual", "supporting", "supplementary", "supplemental", "optional",
         "helpful", "secondary", "definition", "definitional", "bg"),
        "background",
    ),
    **dict.fromkeys(
        ("followup", "follow", "related", "further", "furtherreading", "extension", "tangential",
         "additional", "extra", "next", "exploratory", "nextstep"),
        "follow-up",
    ),
}
_TYPE_SUFFIXES = ("subquestions", "subquestion", "questions", "question", "type")
_LIST_KEYS = ("subquestions", "subquestion", "questions", "items", "decomposition", "results", "result", "data")
_TEXT_KEYS = ("text", "subquestion", "question", "q", "query", "content", "value")
_TYPE_KEYS = ("type", "category", "kind", "label", "role", "class", "subquestiontype", "importance", "tag")


def _key(text: str) -> str:
    """Lowercase letters only: "Sub-Questions" and "sub_questions" both become "subquestions"."""
    return re.sub(r"[^a-z]", "", text.lower())


def normalize_type(raw: Any) -> str | None:
    """The type in :data:`SUBQUESTION_TYPES` that ``raw`` names, or None.

    Case, spaces, hyphens and underscores are ignored, a trailing
    "sub-question"/"question"/"type" is dropped, and synonyms are mapped:
    "Core", "essential" → core; "Context", "optional" → background;
    "followup", "follow_up", "Follow-up question", "related" → follow-up.
    """
    if not isinstance(raw, str):
        return None
    key = _key(raw)
    for suffix in _TYPE_SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            key = key[: -len(suffix)]
            break
    return _TYPE_SYNONYMS.get(key)


def _pick(item: dict, keys: Sequence[str]) -> Any:
    by_key = {_key(str(k)): v for k, v in item.items()}
    for key in keys:
        if key in by_key:
            return by_key[key]
    return None


def _raw_items(value: Any) -> list[tuple[Any, str | None]]:
    """(item, type from a grouping key or None) from the reply's JSON, whatever its shape."""
    if isinstance(value, list):
        return [(item, None) for item in value]
    if not isinstance(value, dict):
        raise ValueError("the reply is neither a JSON object nor a list")
    by_key = {_key(str(k)): v for k, v in value.items()}
    for key in _LIST_KEYS:
        if isinstance(by_key.get(key), list):
            return [(item, None) for item in by_key[key]]
    # {"core": [...], "background": [...], "follow-up": [...]}
    grouped = [
        (item, normalize_type(k))
        for k, v in value.items()
        if normalize_type(k) and isinstance(v, list)
        for item in v
    ]
    if grouped:
        return grouped
    # a single sub-question object
    if isinstance(_pick(value, _TEXT_KEYS), str):
        return [(value, None)]
    # any list, or the same one level down ({"result": {"sub_questions": [...]}})
    for inner in value.values():
        if isinstance(inner, list):
            return [(item, None) for item in inner]
    for inner in value.values():
        if isinstance(inner, dict):
            try:
                return _raw_items(inner)
            except ValueError:
                continue
    raise ValueError("the reply holds no list of sub-questions")


def _text_and_type(item: Any) -> tuple[Any, Any]:
    if isinstance(item, str):
        return item, None
    if isinstance(item, dict):
        text, kind = _pick(item, _TEXT_KEYS), _pick(item, _TYPE_KEYS)
        if text is None and len(item) == 1:  # {"core": "What ...?"}
            ((key, only),) = item.items()
            if normalize_type(str(key)):
                return only, key
        return text, kind
    if isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(x, str) for x in item):
        first, second = item  # ["What ...?", "core"] or ["core", "What ...?"]
        return (second, first) if normalize_type(first) and not normalize_type(second) else (first, second)
    return None, None


def _normalize_text(text: str) -> str:
    """Lowercase, punctuation and whitespace runs collapsed: for duplicate checks."""
    return " ".join(re.sub(r"[\W_]+", " ", text.lower()).split())


def parse_decomposition(reply: Any, question: str, max_sub_questions: int = 8) -> tuple[SubQuestion, ...]:
    """Typed sub-questions from the model's reply, tolerating the usual deviations.

    Accepts the JSON value (or the raw reply text, parsed with
    :func:`~coverage_core.suggest.llm.parse_json_loose`: code fences, prose, trailing
    commas). The list may be under ``sub_questions`` (any spelling), another
    list-valued key, grouped by type (``{"core": [...], ...}``), or be the
    reply itself; items may be objects (text under ``text``/``question``/...,
    type under ``type``/``category``/..., extra keys ignored), plain strings
    or ``[text, type]`` pairs. Types are mapped by :func:`normalize_type`;
    a missing or unknown type becomes :data:`DEFAULT_TYPE` with
    ``type_assumed=True``. Empty texts, repeats (ignoring case and
    punctuation; the first is kept) and the question itself are dropped.
    Beyond ``max_sub_questions``, core ones are kept first, then background,
    then follow-up, in the model's order.

    Raises
    ------
    ValueError
        In plain words, when the reply holds no usable sub-question.
    """
    if isinstance(reply, str):
        reply = parse_json_loose(reply)
    seen = {_normalize_text(question)}
    found: list[SubQuestion] = []
    for item, group_type in _raw_items(reply):
        text, raw_type = _text_and_type(item)
        if not isinstance(text, str) or not text.strip():
            continue
        text = shorten(text, SUB_QUESTION_CHARS, at_word=True)
        key = _normalize_text(text)
        if not key or key in seen:
            continue
        seen.add(key)
        kind = normalize_type(raw_type) or group_type
        found.append(SubQuestion(text, kind or DEFAULT_TYPE, type_assumed=kind is None))
    if not found:
        raise ValueError("the reply holds no sub-questions")
    if len(found) > max_sub_questions:
        rank = {kind: i for i, kind in enumerate(SUBQUESTION_TYPES)}
        keep = sorted(range(len(found)), key=lambda i: (rank[found[i].type], i))[:max_sub_questions]
        found = [found[i] for i in sorted(keep)]
    return tuple(found)
