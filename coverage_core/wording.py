"""Words that agree with their numbers, for every sentence the core and the dashboard write."""

from __future__ import annotations

__all__ = ["count", "plural"]


def plural(n: int, noun: str, plural_form: str | None = None) -> str:
    """``noun`` or its plural, as agrees with ``n``: ``plural(1, "question")`` -> "question", else "questions".

    ``plural_form`` gives an irregular plural (``plural(2, "query", "queries")``) or the verb or pronoun that
    agrees (``plural(n, "is", "are")``).
    """
    return noun if n == 1 else plural_form or f"{noun}s"


def count(n: int, noun: str, plural_form: str | None = None) -> str:
    """A count with its noun in agreement: ``count(1, "question")`` -> "1 question", ``count(1200, "passage")`` ->
    "1,200 passages"; ``plural_form`` for an irregular plural (``count(2, "query", "queries")``)."""
    return f"{int(n):,} {plural(int(n), noun, plural_form)}"
