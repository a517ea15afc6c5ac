"""Compound words read by their parts, for languages that write compounds as one word.

German writes "Nationalmannschaft" where a passage may write "die
Mannschaft der Nation" or "Nationalspieler … Mannschaft": a question's
compound found in no passage is then matched by its parts. Only where the
corpus's language writes compounds as one word (``Reading.joins_compounds``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

__all__ = ["MIN_PART_LENGTH", "compound_postings", "compound_splits"]

MIN_PART_LENGTH = 4
"""Each part of a split compound has at least this many letters: shorter ones match by chance."""

LINKING_ELEMENTS = (b"", b"s", b"es", b"n", b"en", b"e", b"er")
"""What may join the parts of a German compound ("Arbeit-s-markt", "Sonne-n-schein", "Kind-er-garten")."""


def compound_splits(stem: bytes, normalize: Callable[[bytes], bytes]) -> list[tuple[bytes, bytes]]:
    """Every way to read ``stem`` as a modifier and a head of :data:`MIN_PART_LENGTH` letters or more, a linking
    element between them dropped; the modifier as the word index reads words (``normalize``)."""
    if not stem.isalpha() or len(stem) < 2 * MIN_PART_LENGTH:
        return []
    splits = []
    for i in range(MIN_PART_LENGTH, len(stem) - MIN_PART_LENGTH + 1):
        left, head = stem[:i], stem[i:]
        for link in LINKING_ELEMENTS:
            if link and not left.endswith(link):
                continue
            modifier = left[: len(left) - len(link)]
            if len(modifier) >= MIN_PART_LENGTH:
                splits.append((normalize(modifier), head))
    return list(dict.fromkeys(splits))


def compound_postings(absent: Iterable[bytes], chunk_texts: Sequence[str], normalize: Callable[[bytes], bytes],
                      holding_of: Callable[[Sequence[str], list[bytes]], dict[bytes, np.ndarray]]
                      ) -> dict[bytes, np.ndarray]:
    """Each absent compound stem that splits into two corpus words -> the chunks holding both parts (the head's
    chunks when no chunk holds both), for the split whose head is longest. ``holding_of(chunk_texts, stems)``
    is the word index's lookup."""
    splits = {stem: compound_splits(stem, normalize) for stem in absent}
    wanted = list(dict.fromkeys(part for found in splits.values() for pair in found for part in pair))
    if not wanted:
        return {}
    holding = holding_of(chunk_texts, wanted)
    matched = {}
    for stem, found in splits.items():
        known = [(modifier, head) for modifier, head in found if len(holding[modifier]) and len(holding[head])]
        if not known:
            continue
        modifier, head = max(known, key=lambda pair: len(pair[1]))
        both = np.intersect1d(holding[modifier], holding[head])
        matched[stem] = both if len(both) else holding[head]
    return matched
