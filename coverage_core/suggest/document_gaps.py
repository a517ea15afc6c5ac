"""Untested documents in the gaps: each is carried by its topic's gap, or is a gap of its own.

A document is *untested* (:func:`coverage_core.verdicts.is_untested`) when
too few on-topic questions target it. Its topic may still be mostly tested
through other documents, so no topic gap would name it. Every untested
document is therefore in one ranked gap:

* its **main topic** (:func:`main_topics`: the cluster holding most of its
  passages, ties to the lower number) is a gap: that gap *carries* it. The
  gap's passages start with the document's least covered passage in that
  topic that holds a sentence, so its suggestions include one from the
  document (:func:`coverage_core.suggest.gaps.analyze_gaps`; with several
  carried documents the gap gets as many suggestions as it carries
  documents, at least ``GapConfig.n_suggestions``);
* otherwise it is a **document gap** (:func:`coverage_core.verdicts.is_document_gap`),
  named by the document and its topic (:func:`document_gap_name`), whose
  passages are the document's least covered representative passages and
  whose suggestions are written as for a topic gap (the bundled model, the
  user's LLM or drafts).

Either way a gap that holds an untested document has a suggestion from it
whenever suggestions are on and one of its passages holds a sentence.

**Ranking** (:func:`merge_ranked`). A document gap ranks as a topic of the
document's size that nothing tests, coverage 0::

    priority_d = (1 - size_weight) * 1 + size_weight * share_d

against a topic gap's ``(1 - size_weight) * (1 - coverage_k) + size_weight * share_k``.
An untested document is the most direct thing to fix (a whole file no test
asks about), so it comes before a topic gap unless that topic's coverage is
below ``size_weight / (1 - size_weight) * (share_k - share_d)`` (0.43 times
the difference of shares at the default weight: a large topic nothing comes
near); among themselves larger documents come first. Ties: document gaps
first, then by cluster and name.

This module reads plain arrays and tables; the decision is the verdict's,
the writing is :mod:`coverage_core.suggest.gaps`'.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = [
    "RankedGap",
    "document_gap_name",
    "document_rows",
    "gap_key",
    "gap_name",
    "gap_targets",
    "main_topics",
    "merge_ranked",
    "ranked_from_tables",
]


class RankedGap(NamedTuple):
    """One gap in the ranking: a topic gap (``document`` "") or a document gap (``cluster`` its main topic).

    ``untested`` are the untested documents the gap holds: a document gap's
    own document, or the documents a topic gap carries (by name).
    """

    cluster: int
    priority: float
    document: str = ""
    untested: tuple[str, ...] = ()


def main_topics(chunk_documents: Sequence[str], labels) -> dict[str, int]:
    """Each document's main topic: the cluster holding most of its passages (ties: the lower cluster).

    chunk_documents : sequence of n str; labels : array-like of shape (n,), int.
    Returns document name -> cluster.
    """
    labels = np.asarray(labels, dtype=np.intp)
    if len(chunk_documents) != labels.shape[0]:
        raise ValueError(f"chunk_documents has {len(chunk_documents)} entries but labels {labels.shape[0]}.")
    if not len(labels):
        return {}
    counts = pd.DataFrame({"d": list(chunk_documents), "k": labels}).value_counts().reset_index(name="n")
    first = counts.sort_values(["d", "n", "k"], ascending=[True, False, True]).drop_duplicates("d")
    return {str(d): int(k) for d, k in zip(first["d"], first["k"])}


def document_rows(chunk_documents: Sequence[str], wanted: Sequence[str]) -> dict[str, np.ndarray]:
    """The chunk indices of each document in ``wanted`` (in chunk order), in one pass over the chunks."""
    wanted = set(wanted)
    if not wanted:
        return {}
    codes, names = pd.factorize(pd.Series(list(chunk_documents), dtype=object))
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    return {str(name): order[bounds[i]:bounds[i + 1]].astype(np.intp)
            for i, name in enumerate(names) if name in wanted}


def document_gap_name(document: str, topic_label: object = "") -> str:
    """A document gap's name: ``"Koala.txt (untested document; topic: koala · species · australia)"``."""
    label = "" if topic_label is None or (isinstance(topic_label, float) and np.isnan(topic_label)) else (
        str(topic_label).strip())
    return f"{document} (untested document; topic: {label})" if label else f"{document} (untested document)"


def gap_name(cluster: int, document: str = "", topic_label: object = "") -> str:
    """A gap's name in the reports: ``"cluster 6: koala · species"`` for a topic gap, else :func:`document_gap_name`."""
    from coverage_core.stages.topics import cluster_name

    return document_gap_name(document, topic_label) if document else cluster_name(cluster, topic_label)


def gap_key(cluster: int, document: str = "") -> str:
    """A gap's key, for links and widget keys: the cluster number of a topic gap (``"6"``), ``"d"`` and 12 hex
    digits of the document's name for a document gap (letters and digits only, so it fits a CSS class)."""
    if not document:
        return str(int(cluster))
    return "d" + hashlib.sha1(str(document).encode("utf-8")).hexdigest()[:12]


def merge_ranked(topic_ranked: Sequence[tuple[int, float]], document_gaps: Sequence[tuple[str, int, int]],
                 n_passages: int, size_weight: float, carried: Mapping[int, Sequence[str]] | None = None,
                 ) -> list[RankedGap]:
    """Topic gaps and document gaps in one list, most urgent first (the module's ranking).

    ``topic_ranked``: ``suggest.gaps.rank_gaps``' (cluster, priority);
    ``document_gaps``: (document, main topic, passages) of each document gap;
    ``n_passages``: all passages of the corpus; ``carried``: cluster -> the
    untested documents that topic gap carries.
    """
    carried = carried or {}
    gaps = [RankedGap(int(k), float(p), "", tuple(sorted(carried.get(int(k), ())))) for k, p in topic_ranked]
    for document, cluster, size in document_gaps:
        share = size / n_passages if n_passages else 0.0
        gaps.append(RankedGap(int(cluster), (1 - size_weight) + size_weight * share, str(document), (str(document),)))
    return sorted(gaps, key=lambda g: (-round(g.priority, 12), not g.document, g.cluster, g.document))


def gap_targets(topic_ranked: Sequence[tuple[int, float]], chunk_documents: Sequence[str], labels,
                untested_documents: Sequence[str], document_gaps: Sequence[str], size_weight: float,
                ) -> list[RankedGap]:
    """Every gap :func:`~coverage_core.suggest.gaps.analyze_gaps` writes for, most urgent first.

    ``document_gaps`` (the documents table's ``is_gap``) are gaps of their
    own; every other untested document is carried by its main topic's gap,
    or, when that topic is no gap (inputs that disagree), becomes a gap of
    its own too, so that no untested document is left out.
    """
    if not len(untested_documents) and not len(document_gaps):
        return merge_ranked(topic_ranked, [], len(chunk_documents), size_weight)
    topics = main_topics(chunk_documents, labels)
    in_gaps = {int(k) for k, _ in topic_ranked}
    own = [d for d in dict.fromkeys(map(str, document_gaps)) if d in topics]
    carried: dict[int, list[str]] = {}
    for document in dict.fromkeys(map(str, untested_documents)):
        if document in own or document not in topics:
            continue
        if topics[document] in in_gaps:
            carried.setdefault(topics[document], []).append(document)
        else:
            own.append(document)
    sizes = pd.Series(list(chunk_documents), dtype=object).value_counts()
    return merge_ranked(topic_ranked, [(d, topics[d], int(sizes[d])) for d in own], len(chunk_documents),
                        size_weight, carried)


def ranked_from_tables(topic_ranked: Sequence[tuple[int, float]], documents: pd.DataFrame,
                       size_weight: float) -> list[RankedGap]:
    """:func:`merge_ranked` from an analysis's document table (its ``is_gap``, ``cluster``, ``n_chunks`` and
    ``is_untested``); a table without ``is_gap`` (built before document gaps) has none."""
    if not {"is_gap", "cluster", "n_chunks"} <= set(documents.columns):
        return merge_ranked(topic_ranked, [], 0, size_weight)
    own = documents[documents["is_gap"].astype(bool)]
    untested = documents["is_untested"].astype(bool) if "is_untested" in documents else False
    carried: dict[int, list[str]] = {}
    for row in documents[untested & ~documents["is_gap"].astype(bool)].itertuples(index=False):
        carried.setdefault(int(row.cluster), []).append(str(row.document))
    return merge_ranked(topic_ranked, [(str(r.document), int(r.cluster), int(r.n_chunks)) for r in own.itertuples()],
                        int(documents["n_chunks"].sum()), size_weight, carried)
