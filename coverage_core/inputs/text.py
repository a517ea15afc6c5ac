"""Text decoding shared by the document and question readers, and why a document is skipped."""

from __future__ import annotations

import codecs

from coverage_core.types import IngestWarning


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
