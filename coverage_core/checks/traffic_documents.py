"""Which documents production retrieval returns, beside the documents the test set targets.

A query log from a tracing tool may record what the RAG application's retriever returned for each query
(Phoenix: the ``retrieval.documents`` of a trace's RETRIEVER spans, :mod:`coverage_core.connectors.phoenix`).
:func:`retrieved_documents` gathers them per merged query as :func:`coverage_core.checks.query_log.traffic_log`
merges the queries; :func:`document_table` sets each retrieved document beside the on-topic test questions
that target it (the analysis's document table, ``n_questions``), so a document production retrieves often and
no test targets stands out, and so does a document the tests target that production never retrieves.

A retrieved document is named as production names it (a file name, a path, an id); it is the knowledge base's
document when its last path part, without a ``#fragment`` or ``?query``, is a document's name, or that name
without its extension (case ignored) (:func:`knowledge_base_name`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath

import numpy as np
import pandas as pd

from coverage_core import wording

__all__ = [
    "MAX_REPORTED_DOCUMENTS",
    "RetrievedDocuments",
    "document_table",
    "documents_section",
    "documents_sentence",
    "knowledge_base_name",
    "retrieved_documents",
]

MAX_REPORTED_DOCUMENTS = 1000
"""Rows of the report's list of retrieved documents at most (most retrieved first); a retriever that names
each chunk by its own id could otherwise list one row per chunk ever returned."""

N_NAMED = 3
"""Documents named in the terminal's sentence about production retrieval."""

TABLE_COLUMNS = ("document", "in_knowledge_base", "production_queries", "production_share", "test_questions")


@dataclass(frozen=True)
class RetrievedDocuments:
    """What production retrieval returned, per merged query of a :class:`~coverage_core.checks.query_log.TrafficLog`.

    ``hits`` has one row per (query, document): ``query`` (index into the log's queries), ``document`` (as
    production names it) and ``count`` (how many times the query was asked with that document retrieved).
    ``volume`` is how many queries, counting repeats, carry retrieval results at all.
    """

    hits: pd.DataFrame
    volume: int


def retrieved_documents(cells: pd.Series, codes: np.ndarray, counts: pd.Series) -> RetrievedDocuments | None:
    """The retrieved documents of a log's kept rows, gathered per merged query.

    Parameters
    ----------
    cells : the kept rows' documents, each a sequence of names (blank names and repeats within a row are
        dropped; anything that is not a list or tuple counts as no documents)
    codes : each kept row's merged query (its index into the log's queries), aligned with ``cells``
    counts : each kept row's count, aligned with ``cells``

    Returns
    -------
    :class:`RetrievedDocuments`, or None when no row carries a document (the log records no retrieval).
    """
    queries, documents, weights, volume = [], [], [], 0
    for code, cell, count in zip(codes, cells.tolist(), counts.to_numpy(dtype=np.int64)):
        names = list(dict.fromkeys(str(name).strip() for name in cell if str(name).strip())) \
            if isinstance(cell, (list, tuple)) else []
        if names:
            volume += int(count)
        for name in names:
            queries.append(int(code))
            documents.append(name)
            weights.append(int(count))
    if not documents:
        return None
    hits = (pd.DataFrame({"query": queries, "document": documents, "count": np.asarray(weights, dtype=np.int64)})
            .groupby(["query", "document"], as_index=False, sort=False)["count"].sum())
    return RetrievedDocuments(hits, volume)


def _key(name: str) -> str:
    """A document name's last path part, without a ``#fragment`` or ``?query``, case folded."""
    last = str(name).replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return last.split("#", 1)[0].split("?", 1)[0].strip().casefold()


def knowledge_base_name(name: str, documents: Iterable[str]) -> str | None:
    """The knowledge-base document ``name`` (as production retrieval names it) is, or None (module docstring)."""
    return _matcher(documents)(name)


def _matcher(documents: Iterable[str]):
    """A function from a production name to its knowledge-base document (or None); by name first, then stem."""
    by_name: dict[str, str] = {}
    by_stem: dict[str, str] = {}
    for document in documents:
        key = _key(document)
        by_name.setdefault(key, document)
        by_stem.setdefault(PurePath(key).stem if "." in key else key, document)

    def match(name: str) -> str | None:
        key = _key(name)
        if not key:
            return None
        return by_name.get(key) or by_stem.get(key) or by_stem.get(PurePath(key).stem if "." in key else key)

    return match


def document_table(retrieved: RetrievedDocuments, knowledge_base: Sequence[str],
                   test_questions: Mapping[str, int]) -> pd.DataFrame:
    """Each document production retrieved, and each knowledge-base document a test question targets.

    Parameters
    ----------
    retrieved : what production retrieval returned (:func:`retrieved_documents`)
    knowledge_base : the knowledge base's document names
    test_questions : document name -> the on-topic test questions that target it (absent: none)

    Returns
    -------
    One row per document: ``document`` (the knowledge base's name when production's names one of its
    documents, else production's), ``in_knowledge_base``, ``production_queries`` (queries, counting repeats,
    whose retrieval returned it), ``production_share`` (of the queries with retrieval results),
    ``test_questions``; most retrieved first, then most tested, then by name.
    """
    match = _matcher(knowledge_base)
    names = {name: match(name) for name in retrieved.hits["document"].unique()}
    shown = retrieved.hits["document"].map(lambda name: names[name] or name)
    # A query counts once per document, even when production names it twice (a path and a bare name).
    per_query = (retrieved.hits.assign(document=shown)
                 .groupby(["query", "document"], as_index=False, sort=False)["count"].max())
    volume = per_query.groupby("document", sort=False)["count"].sum()
    known = set(knowledge_base)
    rows = {name: int(n) for name, n in volume.items()}
    for document, n in test_questions.items():
        if int(n) > 0 and document in known:
            rows.setdefault(document, 0)
    table = pd.DataFrame({
        "document": list(rows),
        "in_knowledge_base": [name in known for name in rows],
        "production_queries": np.asarray(list(rows.values()), dtype=np.int64),
        "production_share": [n / retrieved.volume if retrieved.volume else 0.0 for n in rows.values()],
        "test_questions": np.asarray([int(test_questions.get(name, 0)) if name in known else 0 for name in rows],
                                     dtype=np.int64),
    }, columns=list(TABLE_COLUMNS))
    return table.sort_values(["production_queries", "test_questions", "document"], ascending=[False, False, True],
                             kind="stable").reset_index(drop=True)


def documents_section(table: pd.DataFrame, volume: int) -> dict:
    """The report's ``traffic.retrieved_documents``: ``n_queries_with_retrieval``, ``n_documents`` and
    ``documents`` (the first :data:`MAX_REPORTED_DOCUMENTS` rows of :func:`document_table`)."""
    return {
        "n_queries_with_retrieval": int(volume),
        "n_documents": len(table),
        "documents": [
            {"document": str(row.document), "in_knowledge_base": bool(row.in_knowledge_base),
             "production_queries": int(row.production_queries),
             "production_share": round(float(row.production_share), 6), "test_questions": int(row.test_questions)}
            for row in table.head(MAX_REPORTED_DOCUMENTS).itertuples(index=False)
        ],
    }


def documents_sentence(table: pd.DataFrame, volume: int) -> str:
    """One or two sentences: how many documents production retrieval returned, which of them no test question
    targets (most retrieved first, :data:`N_NAMED` named), and how many tested documents it never returned."""
    retrieved = table[table["production_queries"] > 0]
    untested = retrieved[retrieved["test_questions"] == 0]
    sentence = (f"Production retrieval returned {wording.count(len(retrieved), 'document')} for "
                f"{wording.count(volume, 'query', 'queries')}")
    if len(untested):
        named = ", ".join(f"{row.document} ({wording.count(int(row.production_queries), 'query', 'queries')})"
                          for row in untested.head(N_NAMED).itertuples(index=False))
        sentence += (f"; no test question targets {wording.count(len(untested), 'of them', 'of them')}, most "
                     f"retrieved first: {named}")
    never = int(((table["production_queries"] == 0) & (table["test_questions"] > 0)).sum())
    sentence += "."
    if never:
        sentence += (f" {wording.count(never, 'document')} the test questions target "
                     f"{wording.plural(never, 'was', 'were')} never retrieved.")
    return sentence
