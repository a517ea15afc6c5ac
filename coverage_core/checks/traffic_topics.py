"""The production traffic's topics named as Results names the knowledge base's (:mod:`coverage_core.checks.traffic`).

The traffic's topics are found among the queries (K-means), so their own
names, read from the queries' words, mix subjects ("octopus · avogadro")
and never match the names the Results page gives the same subjects. Each
traffic topic here takes the name of the knowledge-base topic whose
passages answer its queries; the topics themselves stay as found.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from coverage_core.stages.topics import topic_labels

__all__ = ["distinct_names", "knowledge_base_names", "knowledge_base_topics"]


def knowledge_base_names(chunk_texts: Sequence[str], chunk_labels) -> list[str]:
    """The knowledge-base topics' names as the analysis makes them (``measure.name_topics``)."""
    labels = np.asarray(chunk_labels, dtype=np.int64)
    if not len(chunk_texts) or len(chunk_texts) != len(labels) or not len(labels):
        return []
    return list(topic_labels(list(chunk_texts), labels, int(labels.max()) + 1))


def knowledge_base_topics(
    topic: np.ndarray, counts: np.ndarray, best_passage: np.ndarray, chunk_labels, kb_names: Sequence[str],
    majority: float = 0.5,
) -> list[str]:
    """The name of each traffic topic after the knowledge-base topics that answer it, as Results names those.

    ``topic`` (0…n−1), ``counts`` and ``best_passage`` (the answering chunk) describe the answerable queries;
    ``chunk_labels`` gives each chunk's knowledge-base topic, ``kb_names`` each of those topics' name.
    A traffic topic takes the name of the knowledge-base topic whose passages answer at least ``majority`` of
    its traffic (repeats counted), else the names of the two that answer most, joined by " + " (it spans two
    subjects and says so); an unnamed knowledge-base topic is "topic <n>"; "" when no known passage answers it
    (it keeps the name its queries give it). Two traffic topics may get one name: :func:`distinct_names` tells
    them apart.
    """
    labels = np.asarray(chunk_labels, dtype=np.int64)
    topic = np.asarray(topic, dtype=np.int64)
    passages_of = np.asarray(best_passage, dtype=np.int64)
    weights = np.asarray(counts)
    n = int(topic.max()) + 1 if len(topic) else 0

    def name(k: int) -> str:
        text = str(kb_names[k]).strip() if 0 <= k < len(kb_names) and kb_names[k] is not None else ""
        return text or f"topic {k}"

    named: list[str] = []
    for t in range(n):
        mine = topic == t
        passages = passages_of[mine]
        known = (passages >= 0) & (passages < len(labels))
        if not known.any():
            named.append("")
            continue
        volume = pd.Series(weights[mine][known]).groupby(labels[passages[known]]).sum()
        volume = volume.sort_values(ascending=False, kind="stable")
        first = int(volume.index[0])
        if len(volume) == 1 or volume.iloc[0] >= majority * volume.sum():
            named.append(name(first))
        else:
            named.append(f"{name(first)} + {name(int(volume.index[1]))}")
    return named


def distinct_names(given: Sequence[str], own: Sequence[str]) -> list[str]:
    """Each topic's name: ``given`` (:func:`knowledge_base_topics`), or its ``own`` (read from its queries) where
    ``given`` is ""; a name two topics share is followed by each one's own words in brackets, so a subject the
    traffic splits in two reads as two parts of it ("koala · species (eat · leaves)")."""
    names = [g or o for g, o in zip(given, own)]
    shared = {name for name in names if names.count(name) > 1}
    names = [f"{name} ({o})" if name in shared and o and o != name else name for name, o in zip(names, own)]
    seen: dict[str, int] = {}
    distinct = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        distinct.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return distinct
