"""Text decoding shared by the document and question readers, and why a document is skipped.

:func:`decode_text` reads UTF-8 and UTF-16 first, then cp1252, then what charset-normalizer detects
(Shift-JIS, GB18030, cp1251...), and refuses bytes none of them reads with confidence rather than passing
on Latin-1 garble; invisible format characters (:func:`strip_invisible`) are removed from what it returns.
"""

from __future__ import annotations

import codecs
import re
import unicodedata

from coverage_core.invisible import strip_invisible
from coverage_core.types import IngestWarning

# Latin typographic ligatures (U+FB00-FB06: ff, fi, fl, ffi, ffl, long st, st).
_LIGATURES = re.compile("[\ufb00-\ufb06]")

# A Latin reading (cp1252 or latin-1) whose charset-normalizer "mess" (symbols among letters, accented
# capitals inside words, control characters...) is at most this is text, not garble; the library's own
# default cut-off for a plausible decoding.
MAX_MESS = 0.2
# A detected encoding other than cp1252 is trusted only on this many letters of a script other than Latin
# standing in words (two or more together): 4 letters are one short Japanese or Russian question, while a
# Western file misread as Cyrillic or Greek scatters its letters one by one between Latin ones.
MIN_SCRIPT_LETTERS = 4
# ...and they must be nearly all its non-ASCII letters: Polish misread as Cyrillic keeps Latin ones ("Kraków").
MIN_SCRIPT_SHARE = 0.8
LATIN_CODE_PAGES = frozenset({"cp1250", "cp1257"})
"""Windows code pages of Central European and Baltic languages, trusted when detected on a file whose
cp1252 reading is garbled ("£ódŸ" for "Łódź"); their letters are Latin, so no script tells them apart."""
_TOO_SHORT_TO_TELL = 3
"""A file whose non-ASCII characters are at most this many, each alone between ASCII characters, is read as
cp1252 (latin-1 for bytes cp1252 leaves undefined) even when nothing confirms it: a stray byte or two in an
English note loses a character at worst, never the text."""


class Unreadable(Exception):
    """Why one input was skipped: a short ``reason`` and what to do about it."""

    def __init__(self, reason: str, advice: str):
        super().__init__(reason)
        self.reason = reason
        self.advice = advice

    def warning(self, source: str) -> IngestWarning:
        return IngestWarning(source, f"It {self.reason}, so it was skipped; {self.advice}.")

    def sentence(self, source: str) -> str:
        return f"{source} {self.reason}; {self.advice}."


UNKNOWN_ENCODING = (
    "is not UTF-8 (byte {offset:,} is the first that is not), and its encoding could not be recognised with "
    "confidence",
    "save it as UTF-8 and use that file",
)
"""The reason (``offset`` to fill in) and advice of the ``Unreadable`` :func:`decode_text` raises when no
encoding reads the bytes as text with confidence."""


def looks_binary(data: bytes) -> bool:
    """True for data that is not text: NUL bytes or many control characters."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    if b"\x00" in data:
        return True
    sample = data[:8192]
    controls = sum(1 for byte in sample if byte < 32 and byte not in b"\t\n\r\f")
    return controls > 0.05 * len(sample)


def unfold_ligatures(text: str) -> str:
    """``text`` with its typographic ligatures written as letters ("Deﬁnition" -> "Definition").

    PDFs typeset with TeX and many word processors draw "fi", "ff", "ffi" as
    one glyph, and the text layer keeps that one character: a question
    typed "offen" or "official" then shares no word with a passage reading
    "oﬀen" or "Oﬃcial", and the word check, the subject rule and topic
    names miss it. Only these letters change (their NFKC form); the rest of
    the text keeps its exact characters.
    """
    if text.isascii():
        return text
    return _LIGATURES.sub(lambda match: unicodedata.normalize("NFKC", match.group()), text)


def decode_text(data: bytes) -> tuple[str, str]:
    """The text of ``data`` and the name of the encoding used; ``Unreadable`` (:data:`UNKNOWN_ENCODING`)
    when none can be told with confidence. Invisible format characters are removed (:func:`strip_invisible`).

    Tried in order: UTF-16 with a BOM, UTF-8; cp1252 (latin-1 for a byte undefined in cp1252) when its reading
    is clean (:data:`MAX_MESS`); the encoding charset-normalizer detects when its reading is clean and in
    another script (:data:`MIN_SCRIPT_LETTERS`, :data:`MIN_SCRIPT_SHARE`) or a :data:`LATIN_CODE_PAGES` page;
    cp1252 when at most :data:`_TOO_SHORT_TO_TELL` non-ASCII characters stand alone. Anything else is refused.
    Why: garble would be counted as English; each step in full: docs/developing.md, *Reading text files*.
    """
    text, encoding = _decoded(data)
    return strip_invisible(text), encoding


def _decoded(data: bytes) -> tuple[str, str]:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            pass
    try:
        text = data.decode("utf-8-sig")
        return text, "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"
    except UnicodeDecodeError as error:
        offset = error.start + 1  # counted from 1, as editors and hex viewers show it
    try:
        latin, latin_encoding = data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        latin, latin_encoding = data.decode("latin-1"), "latin-1"
    from charset_normalizer import from_bytes  # about 30 ms to import: only for files that are not UTF-8

    evidence = _non_ascii_lines(data)
    if from_bytes(evidence, cp_isolation=[latin_encoding], threshold=MAX_MESS, enable_fallback=False).best():
        return latin, latin_encoding
    detected = _detected(data, from_bytes(evidence, threshold=MAX_MESS, enable_fallback=False))
    if detected is not None:
        return detected
    if _stray_bytes(latin):
        return latin, latin_encoding
    reason, advice = UNKNOWN_ENCODING
    raise Unreadable(reason.format(offset=offset), advice)


def _non_ascii_lines(data: bytes, budget: int = 256 * 1024) -> bytes:
    """The lines of ``data`` holding a non-ASCII byte, up to ``budget`` bytes of them.

    They are the evidence: charset-normalizer reads a few samples of what it
    is given, and in 2,000 English questions with five Japanese ones those
    samples would all be English. No multi-byte encoding detected here puts
    a newline byte inside a character, so splitting at newlines cuts none.
    """
    lines, size = [], 0
    for found in _NON_ASCII_LINE.finditer(data):
        lines.append(found.group())
        size += len(lines[-1]) + 1
        if size >= budget:
            break
    return b"\n".join(lines)


def _detected(data: bytes, matches) -> tuple[str, str] | None:
    """The reading of ``data`` in the first of charset-normalizer's ``matches`` (clean readings of its
    non-ASCII lines, best first) that holds words of a script other than Latin, else in the first that is a
    Windows code page of other Latin-script languages (:data:`LATIN_CODE_PAGES`); None when there is none."""
    latin_pages = []
    for match in matches:
        # Without a BOM and with no NUL byte (looks_binary), UTF-16/32 readings are pairs of bytes taken
        # for one CJK character: never what such a file holds.
        if match.encoding.startswith(("utf_16", "utf_32", "utf_7")):
            continue
        if _script_words(str(match)):
            whole = _whole(data, match.encoding)
            if whole is not None:
                return whole
        elif match.encoding in LATIN_CODE_PAGES:
            latin_pages.append(match.encoding)
    return next(filter(None, (_whole(data, encoding) for encoding in latin_pages)), None)


def _whole(data: bytes, encoding: str) -> tuple[str, str] | None:
    try:
        return data.decode(encoding), encoding
    except (UnicodeDecodeError, LookupError):  # the lines read as evidence decode, some other line does not
        return None


def _script_words(text: str) -> bool:
    """Whether ``text`` holds :data:`MIN_SCRIPT_LETTERS` letters of a script other than Latin standing in words
    and such letters are :data:`MIN_SCRIPT_SHARE` of its non-ASCII letters."""
    letters = other = in_words = 0
    previous_other = False
    text = _sample(text)
    for index, char in enumerate(text):
        if char.isascii() or not char.isalpha():
            previous_other = False
            continue
        letters += 1
        is_other = not unicodedata.name(char, "LATIN").startswith("LATIN")
        if is_other:
            other += 1
            following = text[index + 1:index + 2]
            following_other = following.isalpha() and not following.isascii() \
                and not unicodedata.name(following, "LATIN").startswith("LATIN")
            in_words += previous_other or following_other
        previous_other = is_other
    return in_words >= MIN_SCRIPT_LETTERS and other >= MIN_SCRIPT_SHARE * letters


def _sample(text: str, pieces: int = 8, piece_chars: int = 8192) -> str:
    """``text`` whole when short, else ``pieces`` evenly spaced slices of it, so a 200 MB file is judged by a
    Python loop over 64K characters, not 200 million."""
    if len(text) <= pieces * piece_chars:
        return text
    step = (len(text) - piece_chars) // (pieces - 1)
    return "\n".join(text[i * step:i * step + piece_chars] for i in range(pieces))


_NON_ASCII = re.compile("[^\x00-\x7f]")
_NON_ASCII_LINE = re.compile(rb"[^\n]*[\x80-\xff][^\n]*")


def _stray_bytes(latin: str) -> bool:
    """Whether ``latin`` (a Latin reading) has at most :data:`_TOO_SHORT_TO_TELL` non-ASCII characters, each
    between ASCII characters."""
    positions = []
    for found in _NON_ASCII.finditer(latin):
        positions.append(found.start())
        if len(positions) > _TOO_SHORT_TO_TELL:
            return False
    return all(b - a > 1 for a, b in zip(positions, positions[1:]))
