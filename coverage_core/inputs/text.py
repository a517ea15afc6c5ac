"""Text decoding shared by the document and question readers, and why a document is skipped."""

from __future__ import annotations

import codecs
import re
import unicodedata

from coverage_core.types import IngestWarning

# Latin typographic ligatures (U+FB00-FB06: ff, fi, fl, ffi, ffl, long st, st).
_LIGATURES = re.compile("[\ufb00-\ufb06]")


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
    """Decode text and name the encoding used.

    UTF-8 (with or without BOM) first; then cp1252, which is what Excel and
    Windows editors write in Western Europe; latin-1 last since it accepts any
    byte. UTF-16 with BOM (Excel's "Unicode text") is recognised too.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            pass
    try:
        text = data.decode("utf-8-sig")
        return text, "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"
