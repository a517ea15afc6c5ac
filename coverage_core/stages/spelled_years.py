"""Years a question spells out, read as the digits passages write ("nineteen fifty seven" is "1957")."""

from __future__ import annotations

import re

__all__ = ["SPELLED_YEARS", "spelled_years_as_digits"]

# Years a question spells out where the passages write digits: spoken-style test sets (and voice-typed
# traffic) write "What happened in nineteen fifty seven?" for "in 1957", whose only content word then is in
# no passage. Only years are read ("nineteen fifty seven", "nineteen oh five", "twenty twenty-one",
# "fifteen hundred", "two thousand and five"): passages write other numbers in words as often as in digits,
# and their digits for large counts are grouped ("2,000"), which the word index reads as two words anyway.
SPELLED_YEARS = range(1000, 2100)
_UNITS = "one two three four five six seven eight nine".split()
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_NUMBER_VALUES = {
    **{w: i + 1 for i, w in enumerate(_UNITS)}, **{w: i + 10 for i, w in enumerate(_TEENS)},
    **{w: 10 * (i + 2) for i, w in enumerate(_TENS)}, "hundred": 100, "thousand": 1000, "oh": 0, "and": -1,
}
_NUMBER_WORD = "|".join(sorted(_NUMBER_VALUES, key=len, reverse=True))
_SPELLED_NUMBER = re.compile(rf"\b(?:{_NUMBER_WORD})(?:[ -]+(?:{_NUMBER_WORD}))+\b", re.IGNORECASE)


def _below_hundred(words: list[str]) -> int | None:
    """The value of "fifty seven", "twelve", "seven" (1-99), None for anything else."""
    values = [_NUMBER_VALUES[w] for w in words]
    if len(values) == 1 and 1 <= values[0] < 100:
        return values[0]
    if len(values) == 2 and values[0] in range(20, 100, 10) and 1 <= values[1] <= 9:
        return values[0] + values[1]
    return None


def _spelled_value(words: list[str]) -> int | None:
    """The number a run of number words spells as years are spoken (pairs, hundreds, thousands); None otherwise."""
    if words[0] in ("and", "oh") or words[-1] in ("and", "oh"):
        return None
    if "thousand" in words:
        i = words.index("thousand")
        if i != 1 or not 1 <= _NUMBER_VALUES[words[0]] <= 9:
            return None
        rest = _spelled_value(words[2:]) if "hundred" in words[2:] else None
        tail = words[2:] if rest is None else []
        if tail[:1] == ["and"]:
            tail = tail[1:]
        low = rest if rest is not None else (_below_hundred(tail) if tail else 0)
        return None if low is None else _NUMBER_VALUES[words[0]] * 1000 + low
    head = _NUMBER_VALUES[words[0]]
    if "hundred" in words:
        if words.index("hundred") != 1 or not 1 <= head <= 19:
            return None
        tail = words[2:][1:] if words[2:3] == ["and"] else words[2:]
        low = _below_hundred(tail) if tail else 0
        return None if low is None else head * 100 + low
    # From thirteen: "ten thirty", "eleven fifteen", "twelve thirty" are times of day more often than years.
    if not (13 <= head <= 20) or len(words) < 2:
        return None
    if words[1] == "oh":
        low = _below_hundred(words[2:]) if len(words) == 3 else None
        return None if low is None or low > 9 else head * 100 + low
    low = _below_hundred(words[1:])
    return None if low is None or low < 10 else head * 100 + low


def _digits(match: re.Match) -> str:
    """A run of number words with each longest part that spells a year (:func:`_spelled_value`) in digits."""
    words = re.split(r"[ -]+", match.group(0))
    out, i = [], 0
    while i < len(words):
        for j in range(len(words), i + 1, -1):
            value = _spelled_value([w.lower() for w in words[i:j]])
            if value is not None and value in SPELLED_YEARS:
                out.append(str(value))
                i = j
                break
        else:
            out.append(words[i])
            i += 1
    return " ".join(out)


def spelled_years_as_digits(text: str) -> str:
    """``text`` with the years it spells out in digits ("nineteen fifty seven" -> "1957", "two thousand and
    five" -> "2005"; :data:`SPELLED_YEARS`); other number words unchanged."""
    return _SPELLED_NUMBER.sub(_digits, text)
