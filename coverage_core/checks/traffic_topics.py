"""The production traffic's topics named as Results names the knowledge base's (:mod:`coverage_core.checks.traffic`).

The traffic's topics are found among the queries (K-means), so their own
names, read from the queries' words, mix subjects ("octopus · avogadro")
and never match the names the Results page gives the same subjects. Each
traffic topic here takes the name of the knowledge-base topic whose
passages answer its queries.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from coverage_core.stages.topics import topic_labels

__all__ = ["knowledge_base_names", "knowledge_base_topics"]


def knowledge_base_names(chunk_texts: Sequence[str], chunk_labels) -> list[str]:
    """The knowledge-base topics' names as the analysis makes them (``stages.measure.name_topics``)."""
    labels = np.asarray(chunk_labels, dtype=np.int64)
    if not len(chunk_texts) or len(chunk_texts) != len(labels) or not len(labels):
        return []
    return list(topic_labels(list(chunk_texts), labels, int(labels.max()) + 1))


def knowledge_base_topics(
    topic: np.ndarray, counts: np.ndarray, best_passage: np.ndarray, chunk_labels, kb_names: Sequence[str],
    majority: float = 0.5,
) -> tuple[np.ndarray, int, list[str]]:
    """The traffic topics named after the knowledge-base topics that answer them, as Results names those.

    ``topic`` (0…n−1), ``counts`` and ``best_passage`` (the answering chunk) describe the answerable queries;
    ``chunk_labels`` gives each chunk's knowledge-base topic, ``kb_names`` each of those topics' name.
    A traffic topic takes the name of the knowledge-base topic whose passages answer at least ``majority`` of
    its traffic (repeats counted), else the names of the two that answer most, joined by " + " (it spans two
    subjects and says so); an unnamed knowledge-base topic is "topic <n>". Traffic topics that come out with
    the same name are one topic, so a subject is never listed twice.

    Returns the new topic of each query (0…m−1, in order of first appearance), m, and the m names.
    """
    labels = np.asarray(chunk_labels, dtype=np.int64)
    topic = np.asarray(topic, dtype=np.int64)
    n = int(topic.max()) + 1 if len(topic) else 0

    def name(k: int) -> str:
        text = str(kb_names[k]).strip() if 0 <= k < len(kb_names) and kb_names[k] is not None else ""
        return text or f"topic {k}"

    named: list[str] = []
    for t in range(n):
        mine = topic == t
        passages = np.asarray(best_passage)[mine]
        known = (passages >= 0) & (passages < len(labels))
        if not known.any():
            named.append("")
            continue
        volume = pd.Series(np.asarray(counts)[mine][known]).groupby(labels[passages[known]]).sum()
        volume = volume.sort_values(ascending=False, kind="stable")
        first = int(volume.index[0])
        if volume.iloc[0] >= majority * volume.sum() or len(volume) == 1:
            named.append(name(first))
        else:
            named.append(f"{name(first)} + {name(int(volume.index[1]))}")
    names = list(dict.fromkeys(label for label in named if label))
    own = {label: position for position, label in enumerate(names)}
    remap = np.empty(n, dtype=np.int64)
    for t, label in enumerate(named):
        if not label:  # answered from no known passage: a topic of its own, named from its queries
            own[f"#{t}"] = len(names)
            names.append("")
            label = f"#{t}"
        remap[t] = own[label]
    return remap[topic] if len(topic) else topic, len(names), names
