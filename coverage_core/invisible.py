"""Invisible format characters: removed from text that is read, and from names that are shown on one line.

A zero-width space or a bidi override is invisible on screen but splits a word for every word match, and
in a file name it can fake a line of the terminal summary. The lowest layer of the package: it imports
nothing of it.
"""

from __future__ import annotations

import re

# Invisible format characters: Unicode category Cf (zero-width space and joiners, soft hyphen, bidi marks and
# overrides, BOM, interlinear annotation, tag characters; tests/hostile/test_encodings_languages.py checks the
# list against the running Python's Unicode data), plus the combining grapheme joiner U+034F.
INVISIBLE_CHARACTERS = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
_JOINERS = "\u200c\u200d"

_NAME_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def one_line_name(name: str) -> str:
    """A file ``name`` as it can be shown on one line: line breaks, tabs and other control characters become
    one space, invisible format characters (:data:`INVISIBLE_CHARACTERS`, bidi overrides among them) go.

    A document named ``"a.txt\\nUntested documents (0)"`` would otherwise print
    as a line of its own in the terminal summary and the reports.
    """
    return INVISIBLE_CHARACTERS.sub("", _NAME_BREAKS.sub(" ", name)).strip() or "unnamed"


def strip_invisible(text: str) -> str:
    """``text`` without its invisible format characters (:data:`INVISIBLE_CHARACTERS`), except a zero-width
    joiner or non-joiner between two non-ASCII letters or symbols.

    A zero-width space between the letters of an English word reads, byte by
    byte, as Khmer (which separates words with it) and hides the word from
    every word match; a soft hyphen or a bidi mark splits a word the same way.
    The joiners are kept where they shape a script (Persian, Indic scripts)
    or an emoji sequence; between Latin letters they split nothing visible.
    """
    if text.isascii() or not INVISIBLE_CHARACTERS.search(text):
        return text
    return INVISIBLE_CHARACTERS.sub(lambda match: match.group() if _kept_joiner(match) else "", text)


def _kept_joiner(match: re.Match) -> bool:
    text, at = match.string, match.start()
    if match.group() not in _JOINERS or at == 0 or at + 1 >= len(text):
        return False
    before, after = text[at - 1], text[at + 1]
    return not before.isascii() and not after.isascii() and (before.isalpha() or ord(before) > 0x2000) \
        and (after.isalpha() or ord(after) > 0x2000)
