"""Words that agree with their numbers, for every sentence the core and the dashboard write."""

from __future__ import annotations

__all__ = ["MINUS", "count", "plural", "points_words"]

MINUS = "\N{MINUS SIGN}"


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


def points_words(change: float) -> str:
    """A tested-share change in percentage points as every history sentence writes it: "−4.1 points",
    "+0.0 points" (rounded to a tenth; a true minus sign)."""
    shown = round(change, 1)
    sign = MINUS if shown < 0 else "+"
    return f"{sign}{abs(shown):.1f} points"
