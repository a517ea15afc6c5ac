"""Production traffic: does the test set test what users actually ask?

A query log (the questions a RAG application received) is the third input,
beside the knowledge base and the test set. Read, masked and merged by
:mod:`coverage_core.checks.query_log`, it is measured here, weighted by how
often each query was asked:

* **tested**: some (on-topic) test question matches the query: cosine
  similarity ≥ τ + (1 − τ) / 4 (:func:`query_match_threshold`). Two
  questions share their form ("What is …?", "Was … born in …?"), so their
  similarity runs higher than a question's to a passage; at τ itself a test
  about the piano "covered" queries about the violin and the tested share
  came out up to 0.15 above the truth on wiki-qa (``benchmarks/eval_traffic.py``).
  A query is matched to questions, not to the passages they test
  (:func:`coverage_core.metrics.retrieved_tested_chunks`): "its top passage
  at ≥ τ is a tested passage" erred by up to 0.087 (mean −0.048) on that
  benchmark's seeds 10-19, this rule by up to 0.036, as a passage tested by
  one question does not test every query it answers;
* **answerable**: the off-topic screener does not flag it, the rule the
  test questions are judged by (at the questions' support level
  ``Calibration.question_support_threshold``, with the word and subject
  checks; :mod:`coverage_core.checks.traffic_answers`). Queries without an
  answer are **no answer in the documents**: one group of their own
  (:class:`UnansweredDemand`, volume, share, most asked), whatever they are
  about, never spread over the answerable topics (a gap in the documents,
  not in the tests; unmet demand when frequent, :func:`is_unmet_demand`);
* **topics** of the answerable traffic (K-means weighted by count), ranked by
  ``volume × (1 − tested share)``: most asked, least tested first; named
  as Results names the knowledge-base topic that answers at least half of
  a topic's traffic (two names joined by " + " when none does; two topics of
  one name are told apart by their own words:
  :func:`~coverage_core.checks.traffic_topics.knowledge_base_topics`), or,
  without the knowledge base's topics, from the queries without their
  anonymisation placeholders (:func:`~coverage_core.checks.traffic_answers.strip_masks`);
* **tests nobody needs**: test questions no query comes near (a drift signal);
* **suggestions**: untested real queries, as candidate test questions with
  origin ``"traffic"``, in the knowledge-base topic of the passage that
  answers them; the most asked unanswered queries too, with no topic and the
  note :data:`NO_ANSWER`;
* **by week**, when the log has timestamps.

Nothing here embeds: the caller passes the vectors (:func:`coverage_core.checks.runner.run_traffic_check`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from coverage_core import wording
from coverage_core.checks import traffic_documents
from coverage_core.checks.query_log import TrafficLog
from coverage_core.checks.traffic_answers import NO_ANSWER, query_answers, strip_masks
from coverage_core.checks.traffic_topics import distinct_names, knowledge_base_names, knowledge_base_topics
from coverage_core.errors import InputError
from coverage_core.languages import LanguageProfile, LanguageShare
from coverage_core.stages.clustering import default_n_clusters
from coverage_core.stages.topics import topic_labels
from coverage_core.suggest.questions import Suggestion
from coverage_core.validation import shorten, unit_rows
from coverage_core.verdicts import cross_language_problem, is_unmet_demand, is_untested_topic

QUERY_MATCH_FRACTION = 0.25
"""How far from τ towards identical (1.0) a test question must be to match a query. Tuned on seeds 0-9 of
``benchmarks/eval_traffic.py`` (worst error of the tested share 0.017; 0 gives 0.146), reported on seeds 10-19."""

N_EXAMPLES = 3
"""Representative queries shown per topic (the most asked)."""

MAX_TOPICS = 30
"""Traffic topics at most: the default K rule (``clustering.default_n_clusters``) capped here, since query
topics are read as a ranked list."""

SUGGESTIONS_PER_TOPIC = 3

UNANSWERED_TOPIC = -1
"""The ``topic`` of a query no passage answers: it joins no topic of the traffic."""

TOPIC_STARTS = 4
"""K-means starts for the traffic topics; the best (lowest weighted inertia) wins."""

TOPIC_SAMPLE = 6000
"""Queries the topic K-means is fitted on at most (drawn with probability ∝ count); the rest are assigned
to the nearest centre."""

_BLOCK_ROWS = 2048
"""Queries scored at a time: a (2,048 × 20,000) float32 block is 160 MB."""

def query_match_threshold(support_threshold: float) -> float:
    """The similarity at which a test question matches a traffic query: ``τ + QUERY_MATCH_FRACTION · (1 − τ)``."""
    return float(support_threshold + QUERY_MATCH_FRACTION * (1.0 - support_threshold))


@dataclass(frozen=True)
class TrafficConfig:
    """Settings of :func:`analyze_traffic`; each default is documented at its constant."""

    n_topics: int | None = None
    random_state: int = 0
    strictness: float | None = None
    """The off-topic screener's strictness deciding which queries the documents answer (None: its default;
    an analysis without a strictness uses the same)."""
    n_examples: int = N_EXAMPLES
    suggestions_per_topic: int = SUGGESTIONS_PER_TOPIC


@dataclass(frozen=True)
class UnansweredDemand:
    """The queries no passage answers, as one group: ``volume`` (counting repeats), ``n_distinct``,
    ``share`` of all traffic, ``examples`` (the most asked, shortened) and ``is_unmet`` (frequent enough to
    be unmet demand, :func:`coverage_core.verdicts.is_unmet_demand`)."""

    volume: int
    n_distinct: int
    share: float
    examples: tuple[str, ...]
    is_unmet: bool
    label: str = NO_ANSWER

    def to_dict(self) -> dict:
        return {"label": self.label, "volume": self.volume, "n_distinct": self.n_distinct,
                "share": round(self.share, 6), "is_unmet": self.is_unmet, "examples": list(self.examples)}


@dataclass
class TrafficResult:
    """What :func:`analyze_traffic` found.

    ``queries`` has one row per distinct query: ``text`` (masked), ``count``,
    ``topic`` (:data:`UNANSWERED_TOPIC` when no passage answers it),
    ``best_test_similarity``, ``nearest_test`` (index into the test
    questions), ``is_tested``, ``best_passage_similarity``, ``best_passage``
    (chunk index) and ``is_answerable``. ``topics`` has one row per topic of
    the answerable traffic, most asked least tested first: ``topic``,
    ``label``, ``volume``, ``share``, ``tested_share``, ``answerable_share``
    (1 by construction, kept for older readers), ``priority``
    (``volume × (1 − tested_share)``), ``is_unmet`` (False: unmet demand is
    :attr:`unanswered`) and ``examples``. ``unanswered`` gathers the queries
    no passage answers. ``languages`` are the queries' languages by share of volume (when the
    documents' were given), ``language_problem`` the sentence saying the queries are in another language
    than the documents (:func:`~coverage_core.verdicts.cross_language_problem`; "" otherwise).
    ``unneeded_tests`` lists test questions whose best similarity to any
    query is below τ; ``weekly`` the tested share per week (None without
    timestamps); ``documents`` what production retrieval returned beside what the tests target
    (:func:`~coverage_core.checks.traffic_documents.document_table`; None when the log records no retrieval).
    """

    log: TrafficLog
    support_threshold: float
    question_support_threshold: float
    queries: pd.DataFrame
    topics: pd.DataFrame
    unneeded_tests: pd.DataFrame
    weekly: pd.DataFrame | None
    suggestions: list[Suggestion]
    unanswered: UnansweredDemand | None = None
    languages: tuple[LanguageShare, ...] = ()
    language_problem: str = ""
    documents: pd.DataFrame | None = None

    @property
    def tested_share_weighted(self) -> float:
        return _weighted(self.queries["is_tested"], self.queries["count"])

    @property
    def answerable_share_weighted(self) -> float:
        return _weighted(self.queries["is_answerable"], self.queries["count"])

    @property
    def unanswered_share_weighted(self) -> float:
        """The share of traffic, counting repeats, that no passage answers."""
        return 0.0 if self.unanswered is None else self.unanswered.share

    def headline(self) -> str:
        """One sentence: how much real traffic is tested and answerable, what has no answer in the documents,
        and the topic to test first; then, when the log records retrieval, which documents it returns
        (:func:`~coverage_core.checks.traffic_documents.documents_sentence`)."""
        sentence = (
            f"Production traffic: {self.tested_share_weighted:.0%} of {self.log.n_queries:,} queries "
            f"({self.log.n_distinct:,} distinct) are tested, {self.answerable_share_weighted:.0%} answerable"
        )
        if self.unanswered is not None and self.unanswered.volume:
            volume = self.unanswered.volume
            sentence += (f"; {wording.count(volume, 'query', 'queries')} {wording.plural(volume, 'has', 'have')} {NO_ANSWER} "
                         f"({self.unanswered.share:.0%})")
        untested = self.topics[is_untested_topic(self.topics["tested_share"])]
        if len(untested):
            top = untested.iloc[0]
            sentence += f"; most asked, least tested: {top['label']} ({wording.count(int(top['volume']), 'query', 'queries')})"
        retrieval = ("" if self.documents is None else
                     f" {traffic_documents.documents_sentence(self.documents, self.log.retrieved.volume)}")
        return sentence + "." + retrieval + (f" {self.language_problem}" if self.language_problem else "")

    @property
    def unmet_demand(self) -> pd.DataFrame:
        """The queries no passage answers as one row (``label``, ``volume``, ``share``, ``answerable_share``
        0, ``examples``) when they are frequent enough to be unmet demand; no row otherwise."""
        group = self.unanswered
        columns = ["label", "volume", "share", "answerable_share", "examples"]
        if group is None or not group.is_unmet:
            return pd.DataFrame(columns=columns)
        return pd.DataFrame([[group.label, group.volume, group.share, 0.0, list(group.examples)]], columns=columns)

    def to_dict(self) -> dict:
        """The report's ``traffic`` section."""
        topics = [
            {
                "label": row.label,
                "volume": int(row.volume),
                "tested_share": round(float(row.tested_share), 6),
                "answerable_share": round(float(row.answerable_share), 6),
                "priority": round(float(row.priority), 3),
                "is_unmet": bool(row.is_unmet),
                "examples": list(row.examples),
            }
            for row in self.topics.itertuples()
        ]
        section = {
            "n_queries": self.log.n_queries,
            "n_distinct": self.log.n_distinct,
            "tested_share_weighted": round(self.tested_share_weighted, 6),
            "answerable_share_weighted": round(self.answerable_share_weighted, 6),
            "unanswered_share_weighted": round(self.unanswered_share_weighted, 6),
            "support_threshold": round(self.support_threshold, 6),
            "match_threshold": round(query_match_threshold(self.support_threshold), 6),
            "question_support_threshold": round(self.question_support_threshold, 6),
            "topics": topics,
            "unanswered": self.unanswered.to_dict() if self.unanswered is not None else None,
            "languages": [{"code": share.code, "name": share.name, "share": round(share.share, 6),
                           "n_distinct": share.n_texts} for share in self.languages],
            "language_problem": self.language_problem,
            "unneeded_tests": [
                {"question": row.question, "best_similarity": round(float(row.best_similarity), 6)}
                for row in self.unneeded_tests.itertuples()
            ],
        }
        if self.weekly is not None:
            section["weekly"] = [
                {"week": str(row.week), "volume": int(row.volume), "tested_share": round(float(row.tested_share), 6)}
                for row in self.weekly.itertuples()
            ]
        if self.documents is not None:
            section["retrieved_documents"] = traffic_documents.documents_section(self.documents,
                                                                                 self.log.retrieved.volume)
        return section


def _weighted(flags: pd.Series, counts: pd.Series) -> float:
    total = float(counts.sum())
    return float((flags.to_numpy(dtype=float) * counts.to_numpy(dtype=float)).sum() / total) if total else 0.0


def best_matches(rows: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best cosine similarity to any column vector, and which column, in blocks of rows.

    Both inputs are unit rows; the (rows × columns) matrix is never held whole.
    Empty ``columns`` give similarity −1 and index −1.
    """
    n = rows.shape[0]
    best = np.full(n, -1.0, dtype=np.float32)
    which = np.full(n, -1, dtype=np.int64)
    if columns.shape[0] == 0 or n == 0:
        return best, which
    for start in range(0, n, _BLOCK_ROWS):
        block = rows[start:start + _BLOCK_ROWS] @ columns.T
        which[start:start + len(block)] = block.argmax(axis=1)
        best[start:start + len(block)] = block[np.arange(len(block)), which[start:start + len(block)]]
    return best, which


def analyze_traffic(
    log: TrafficLog,
    query_vectors,
    test_vectors,
    test_texts: Sequence[str],
    chunk_vectors,
    *,
    support_threshold: float,
    question_support_threshold: float,
    chunk_texts: Sequence[str] = (),
    chunk_documents: Sequence[str] = (),
    chunk_labels=None,
    topic_names: Sequence[str] | None = None,
    languages: LanguageProfile | None = None,
    test_documents: Mapping[str, int] | None = None,
    config: TrafficConfig = TrafficConfig(),
) -> TrafficResult:
    """Compare real traffic with the test set and the knowledge base (see the module docstring).

    ``query_vectors`` row ``i`` embeds ``log.queries[i]``; ``test_vectors``
    are the on-topic test questions (``test_texts``); ``chunk_vectors`` the
    passages. A query is tested when its best similarity to a test question
    is ≥ :func:`query_match_threshold` of ``support_threshold`` (τ), answerable when the off-topic
    screener does not flag it at ``question_support_threshold``
    (:func:`~coverage_core.checks.traffic_answers.query_answers`; with ``chunk_texts`` its word and subject
    checks too, read on the queries without their masks). With ``chunk_texts``,
    ``chunk_documents`` and ``chunk_labels`` the suggestions name the passage
    that answers them and the knowledge-base topic they belong to. With ``chunk_labels``, the traffic topics
    take the names of the knowledge-base topics that answer them (:func:`knowledge_base_topics`):
    ``topic_names`` are those names by cluster, as Results shows them (None: read from ``chunk_texts`` the
    way the analysis names its topics). With ``languages`` (the analysis's
    profile) the queries' languages are read and compared with the documents'. When ``log`` records retrieval,
    its documents are set beside ``test_documents`` (document name -> on-topic test questions targeting it).
    """
    queries = unit_rows(np.asarray(query_vectors, dtype=np.float32))
    if queries.shape[0] != log.n_distinct:
        raise InputError(f"There are {log.n_distinct} distinct queries but {queries.shape[0]} query vectors.")
    tests = unit_rows(np.asarray(test_vectors, dtype=np.float32).reshape(-1, queries.shape[1]))
    chunks = unit_rows(np.asarray(chunk_vectors, dtype=np.float32).reshape(-1, queries.shape[1]))
    counts = np.asarray(log.counts, dtype=np.int64)

    best_test, nearest_test = best_matches(queries, tests)
    words = [strip_masks(text) for text in log.queries]
    answers = query_answers(words, queries, chunks, question_support_threshold=question_support_threshold,
                            chunk_texts=chunk_texts, chunk_documents=chunk_documents,
                            strictness=config.strictness, random_state=config.random_state)
    answerable = answers.is_answerable
    topic = np.full(log.n_distinct, UNANSWERED_TOPIC, dtype=np.int64)
    topic[answerable], n_topics = _topics(queries[answerable], counts[answerable], config)
    names = None
    if chunk_labels is not None and n_topics:
        kb_names = list(topic_names) if topic_names is not None else knowledge_base_names(chunk_texts, chunk_labels)
        names = knowledge_base_topics(topic[answerable], counts[answerable], answers.best_passage[answerable],
                                      chunk_labels, kb_names)
    table = pd.DataFrame({
        "text": log.queries,
        "count": counts,
        "topic": topic,
        "best_test_similarity": best_test,
        "nearest_test": nearest_test,
        "is_tested": best_test >= query_match_threshold(support_threshold),
        "best_passage_similarity": answers.best_similarity,
        "best_passage": answers.best_passage,
        "is_answerable": answerable,
    })
    topics = _topic_table(table, words, n_topics, config, names)
    unanswered = _unanswered(table, config.n_examples)
    unneeded = _unneeded_tests(tests, test_texts, queries, support_threshold)
    weekly = _weekly(log, table)
    suggestions = _suggestions(table, topics, config, chunk_texts, chunk_documents, chunk_labels)
    query_languages = languages.query_shares(words, counts) if languages is not None else ()
    problem = cross_language_problem(
        [(share.code, share.name, share.share) for share in languages.document_shares],
        [(share.code, share.name, share.share) for share in query_languages], traffic=True,
    ) if languages is not None else ""
    documents = None if log.retrieved is None else traffic_documents.document_table(
        log.retrieved, list(dict.fromkeys(chunk_documents)), test_documents or {})
    return TrafficResult(log, float(support_threshold), float(question_support_threshold), table, topics,
                         unneeded, weekly, suggestions, unanswered, query_languages, problem, documents)


def _topics(queries: np.ndarray, counts: np.ndarray, config: TrafficConfig) -> tuple[np.ndarray, int]:
    """Traffic topics: K-means on up to :data:`TOPIC_SAMPLE` queries drawn with probability ∝ count
    (so topics follow volume, and 100,000 queries cost what 6,000 do), then every query to its nearest centre."""
    n = queries.shape[0]
    if n == 0:  # no answerable query: no topic
        return np.zeros(0, dtype=np.int64), 0
    k = config.n_topics if config.n_topics is not None else min(default_n_clusters(n), MAX_TOPICS)
    k = max(1, min(k, n))
    if k == 1:
        return np.zeros(n, dtype=np.int64), 1
    rng = np.random.default_rng(config.random_state)
    weights = counts.astype(np.float64)
    sample = np.arange(n) if n <= TOPIC_SAMPLE else np.sort(
        rng.choice(n, TOPIC_SAMPLE, replace=False, p=weights / weights.sum()))
    k = min(k, len(np.unique(queries[sample].round(5), axis=0)))
    if k <= 1:
        return np.zeros(n, dtype=np.int64), 1
    # K-means++ makes many small BLAS calls; threaded BLAS spins on them (see clustering.py).
    with threadpool_limits(limits=1, user_api="blas"):
        # A few starts: one heavy query can trap a single start in a poor split (and the sample is small).
        model = KMeans(n_clusters=k, n_init=TOPIC_STARTS, max_iter=100, random_state=config.random_state)
        model.fit(queries[sample], sample_weight=weights[sample] if n <= TOPIC_SAMPLE else None)
    labels = np.empty(n, dtype=np.int64)
    centres = model.cluster_centers_.astype(np.float32)
    for start in range(0, n, _BLOCK_ROWS * 8):
        labels[start:start + _BLOCK_ROWS * 8] = (queries[start:start + _BLOCK_ROWS * 8] @ centres.T).argmax(axis=1)
    used, labels = np.unique(labels, return_inverse=True)
    return labels.astype(np.int64), len(used)


def _topic_table(table: pd.DataFrame, words: list[str], n_topics: int, config: TrafficConfig,
                 names: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per topic of the answerable queries (see :class:`TrafficResult`), named ``names`` where given
    (:func:`knowledge_base_topics`), else from ``words`` (the queries without their masks); shares are of all
    traffic."""
    total = float(table["count"].sum())
    answered = table["topic"].to_numpy() != UNANSWERED_TOPIC
    words = [w for w, keep in zip(words, answered) if keep]
    table = table[answered]
    weighted = table.assign(tested=table["is_tested"] * table["count"], answerable=table["is_answerable"] * table["count"])
    grouped = weighted.groupby("topic").agg(volume=("count", "sum"), tested=("tested", "sum"),
                                            answerable=("answerable", "sum"))
    grouped = grouped.reindex(range(n_topics), fill_value=0)
    from_words = topic_labels(words, table["topic"].to_numpy(), n_topics) if n_topics else []
    names = distinct_names(names, from_words) if names is not None else from_words
    examples = [
        [shorten(t, 160, at_word=True) for t in
         table[table["topic"] == k].sort_values("count", ascending=False, kind="stable")["text"].head(config.n_examples)]
        for k in range(n_topics)
    ]
    volume = grouped["volume"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        tested_share = np.where(volume > 0, grouped["tested"].to_numpy(dtype=float) / volume, 0.0)
        answerable_share = np.where(volume > 0, grouped["answerable"].to_numpy(dtype=float) / volume, 0.0)
    frame = pd.DataFrame({
        "topic": np.arange(n_topics),
        "label": [name or f"queries {k}" for k, name in enumerate(names)],
        "volume": volume.astype(np.int64),
        "share": volume / total if total else 0.0,
        "tested_share": tested_share,
        "answerable_share": answerable_share,
        "priority": volume * (1.0 - tested_share),
        "examples": pd.Series(examples, dtype=object),
    })
    frame["is_unmet"] = is_unmet_demand(frame["share"], frame["answerable_share"])
    return frame.sort_values(["priority", "volume"], ascending=False, kind="stable").reset_index(drop=True)


def _unanswered(table: pd.DataFrame, n_examples: int) -> UnansweredDemand:
    """The queries no passage answers, as one group (its verdict: :func:`is_unmet_demand` with nothing
    answerable)."""
    rows = table[~table["is_answerable"]]
    total = float(table["count"].sum())
    volume = int(rows["count"].sum())
    share = volume / total if total else 0.0
    examples = rows.sort_values("count", ascending=False, kind="stable")["text"].head(n_examples)
    return UnansweredDemand(
        volume=volume, n_distinct=len(rows), share=share,
        examples=tuple(shorten(t, 160, at_word=True) for t in examples),
        is_unmet=bool(volume) and bool(is_unmet_demand([share], [0.0])[0]),
    )


def _unneeded_tests(
    tests: np.ndarray, texts: Sequence[str], queries: np.ndarray, support_threshold: float
) -> pd.DataFrame:
    best, _ = best_matches(tests, queries)
    far = np.flatnonzero(best < support_threshold)
    order = far[np.argsort(best[far], kind="stable")]
    return pd.DataFrame({"question": [texts[i] for i in order], "best_similarity": best[order]})


def _weekly(log: TrafficLog, table: pd.DataFrame) -> pd.DataFrame | None:
    if log.weekly is None or log.weekly.empty:
        return None
    rows = log.weekly.assign(tested=table["is_tested"].to_numpy()[log.weekly["query"].to_numpy()])
    rows["tested_count"] = rows["tested"] * rows["count"]
    weeks = rows.groupby("week", as_index=False).agg(volume=("count", "sum"), tested=("tested_count", "sum"))
    weeks["tested_share"] = weeks["tested"] / weeks["volume"]
    return weeks[["week", "volume", "tested_share"]]


def _suggestions(table, topics, config, chunk_texts, chunk_documents, chunk_labels) -> list[Suggestion]:
    """The most asked untested queries of the least tested topics, then the most asked unanswered ones, as
    candidate test questions: an answered one in the knowledge-base topic (cluster) of the passage that
    answers it, an unanswered one in none, with the note :data:`NO_ANSWER`."""
    untested = topics[is_untested_topic(topics["tested_share"])]["topic"].tolist()
    groups = [table[(table["topic"] == topic) & ~table["is_tested"]] for topic in untested]
    groups.append(table[~table["is_answerable"] & ~table["is_tested"]])
    labels = None if chunk_labels is None else np.asarray(chunk_labels)
    suggestions: list[Suggestion] = []
    for rows in groups:
        for query in rows.sort_values("count", ascending=False, kind="stable").head(config.suggestions_per_topic).itertuples():
            suggestions.append(_suggestion(query, chunk_texts, chunk_documents, labels))
    return suggestions


def _suggestion(query, chunk_texts, chunk_documents, labels) -> Suggestion:
    passage = int(query.best_passage)
    if not query.is_answerable or passage < 0:
        return Suggestion(cluster=-1, text=query.text, origin="traffic", document="", passage="", note=NO_ANSWER)
    known = passage < len(chunk_texts)
    return Suggestion(
        cluster=int(labels[passage]) if labels is not None and passage < len(labels) else -1,
        text=query.text,
        origin="traffic",
        document=str(chunk_documents[passage]) if passage < len(chunk_documents) else "",
        passage=shorten(chunk_texts[passage], 200, at_word=True) if known else "",
        chunk=passage,
    )
