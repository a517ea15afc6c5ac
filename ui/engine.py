"""The dashboard's calls into coverage_core, without Streamlit.

Pages and ``benchmarks/bench_dashboard.py`` call the same functions, so the
benchmark measures what a user waits for. Nothing here touches session state:
callers pass in what was computed before (a :class:`TuningCache`, the stored
corpus) and store what comes back.

Cost model (why the stages are split this way):

* embedding — minutes; done once per (text, model), cached on disk by the
  core and kept in the session;
* clustering — about a second at 20,000 chunks; redone only when K changes
  (the last few clusterings are kept, so toggling K back is free);
* screening fit — redone only when the clustering or the questions change;
  strictness and overrides reuse the fitted screener, and a refit after a
  new K reuses the lexical evidence (it does not depend on the clustering);
* chunk x question similarities — one pass per data set builds each chunk's
  nearest questions (``metrics.nearest_questions``);
* measure — fast, read from that index; redone on every threshold,
  strictness or override change;
* support level τ (``pipeline.calibrate_corpus``) — a few seconds, once per
  embedded corpus, embedding model and user override: it depends on neither
  the clustering nor the questions, so K and thresholds reuse it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from coverage_core import metrics, pipeline
from coverage_core.calibration import Calibration
from coverage_core.chunking import ChunkingConfig
from coverage_core.errors import CoverageError
from coverage_core.gaps import GapConfig, is_unfinished_draft
from coverage_core.pipeline import AnalysisConfig, EmbeddingConfig
from coverage_core.report import build_report, to_safe_csv
from coverage_core.types import QuestionSet

SUGGESTION_COLUMNS = ("accept", "question", "cluster", "origin", "document", "passage")
USER_ORIGIN = "you"
MARKER_COLUMN = "suggested"
# Clusterings kept per session: the user moving K back and forth is instant.
KEEP_CLUSTERINGS = 4


# ---------------------------------------------------------------- keys
def digest(*parts: Any) -> str:
    """A short content hash of strings, bytes and simple values."""
    hasher = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else repr(part).encode("utf-8", "surrogatepass")
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.hexdigest()[:32]


def documents_fingerprint(documents: Sequence) -> str:
    return digest(*[(d.name, d.text) for d in documents])


def questions_fingerprint(questions: QuestionSet) -> str:
    return digest(questions.question_column, tuple(questions.rows), tuple(questions.texts))


def embedding_config(settings) -> EmbeddingConfig:
    return EmbeddingConfig(
        provider=settings.provider,
        model=settings.model or None,
        dimensions=settings.dimensions,
        base_url=settings.base_url or None,
    )


def chunking_config(settings) -> ChunkingConfig:
    return ChunkingConfig(int(settings.chunk_size), int(settings.chunk_overlap))


def analysis_config(
    settings, embedding: EmbeddingConfig | None = None, chunking: ChunkingConfig | None = None
) -> AnalysisConfig:
    """The core's config from the user's settings (validated by the core: may raise InputError)."""
    return AnalysisConfig(
        embedding=embedding or embedding_config(settings),
        chunking=chunking or chunking_config(settings),
        n_clusters=settings.n_clusters,
        random_state=settings.seed,
        strictness=settings.strictness,
        multi_threshold=float(settings.multi_threshold),
        multi_n=int(settings.multi_n),
        support_threshold=None if settings.support_threshold is None else float(settings.support_threshold),
        gaps=GapConfig(
            gap_threshold=float(settings.gap_threshold),
            rule=settings.gap_rule,
            tested_share_threshold=float(settings.tested_share_cut),
        ),
    )


def corpus_key(documents_fp: str, settings) -> tuple:
    return (documents_fp, chunking_config(settings), embedding_config(settings))


def question_key(questions_fp: str, settings) -> tuple:
    return (questions_fp, embedding_config(settings))


# ---------------------------------------------------------------- tuning
@dataclass
class TuningCache:
    """What the cheap stages reuse between reruns of one session.

    ``clusterings`` maps (corpus key, K, seed) to a clustering and
    ``screeners`` the same keys plus the questions to a fitted screener (the
    last few of each, so moving K back is instant; the screener key holds
    the support level τ it was fitted with); ``indexes`` maps (corpus key,
    questions key) to the chunks' nearest questions; ``calibrations`` maps
    (corpus key, the user's override, seed) to the corpus's support level τ;
    ``analysis`` is the last measured analysis with its full key.
    """

    clusterings: OrderedDict = field(default_factory=OrderedDict)
    screeners: OrderedDict = field(default_factory=OrderedDict)
    indexes: OrderedDict = field(default_factory=OrderedDict)
    calibrations: OrderedDict = field(default_factory=OrderedDict)
    analysis: tuple[Any, Any] | None = None


@dataclass(frozen=True)
class EmbeddedInputs:
    """The expensive part of an analysis, as stored in the session."""

    corpus: pipeline.Corpus
    corpus_key: tuple
    questions: QuestionSet
    question_embedding: pipeline.EmbeddedTexts
    question_key: tuple

    @property
    def embedding(self) -> EmbeddingConfig:
        return self.corpus_key[2]

    @property
    def chunking(self) -> ChunkingConfig:
        return self.corpus_key[1]


def _remember(store: OrderedDict, key, value) -> None:
    store[key] = value
    store.move_to_end(key)
    while len(store) > KEEP_CLUSTERINGS:
        store.popitem(last=False)


def clustering_for(inputs: EmbeddedInputs, n_clusters: int | None, seed: int, cache: TuningCache) -> pipeline.Clustering:
    key = (inputs.corpus_key, n_clusters, seed)
    found = cache.clusterings.get(key)
    if found is None:
        found = pipeline.cluster_chunks(inputs.corpus, n_clusters, seed)
    _remember(cache.clusterings, key, found)
    return found


def calibration_key(inputs: EmbeddedInputs, config: AnalysisConfig) -> tuple:
    """What τ depends on: the embedded corpus (documents, chunking, embedding model), the override, the seed."""
    return (inputs.corpus_key, config.support_threshold, config.random_state)


def has_calibration(inputs: EmbeddedInputs, settings, cache: TuningCache) -> bool:
    """Whether :func:`calibration_for` would return at once (no embedding needed)."""
    config = analysis_config(settings, inputs.embedding, inputs.chunking)
    return config.support_threshold is not None or calibration_key(inputs, config) in cache.calibrations


def calibration_for(
    inputs: EmbeddedInputs, config: AnalysisConfig, cache: TuningCache, embedder=None, embed_cache=None
) -> Calibration:
    """The corpus's support level τ (``pipeline.calibrate_corpus``), computed once and kept in ``cache``.

    ``embedder`` is the one that embedded ``inputs`` (a zero-argument
    function returning it is accepted too, called only when τ must be
    computed); without one it is built from the inputs' embedding settings,
    as ``pipeline.analyze`` does.
    """
    key = calibration_key(inputs, config)
    found = cache.calibrations.get(key)
    if found is None:
        if config.support_threshold is not None:
            found = pipeline.calibrate_corpus(config, inputs.corpus)
        else:
            if callable(embedder) and not hasattr(embedder, "embed"):
                embedder = embedder()
            if embedder is None:
                try:
                    embedder = pipeline.build_embedder(inputs.embedding)
                except CoverageError:  # e.g. an API model without a key here: the default τ, not remembered
                    return pipeline.calibrate_corpus(config, inputs.corpus)
            found = pipeline.calibrate_corpus(config, inputs.corpus, embedder, embed_cache)
    _remember(cache.calibrations, key, found)
    return found


def tune(
    inputs: EmbeddedInputs, settings, overrides, cache: TuningCache, embedder=None, embed_cache=None
) -> pipeline.Analysis:
    """The analysis for the current K, thresholds, strictness and overrides.

    Reuses the support level τ (same corpus and override), the clustering
    (same K), the fitted screener (same clustering, questions and τ) and the
    whole analysis (nothing changed) from ``cache``. ``embedder`` and
    ``embed_cache`` are used only to calibrate τ (:func:`calibration_for`).
    Raises InputError for settings the core rejects.
    """
    config = analysis_config(settings, inputs.embedding, inputs.chunking)
    calibration = calibration_for(inputs, config, cache, embedder, embed_cache)
    tau = calibration.support_threshold
    include = tuple(sorted(overrides.include))
    exclude = tuple(sorted(overrides.exclude))
    full_key = (inputs.corpus_key, inputs.question_key, config, include, exclude, tau)
    if cache.analysis is not None and cache.analysis[0] == full_key:
        return cache.analysis[1]
    if cache.analysis is not None and _same_but_gap_threshold(cache.analysis[0], full_key):
        # The gap threshold only labels clusters: no similarity needs recomputing.
        analysis = regap(cache.analysis[1], config)
        cache.analysis = (full_key, analysis)
        return analysis
    clustering = clustering_for(inputs, config.n_clusters, config.random_state, cache)
    screener_key = (inputs.corpus_key, inputs.question_key, config.n_clusters, config.random_state, tau)
    screener = cache.screeners.get(screener_key)
    if screener is None:
        # Fitted at the default strictness, so that "default" always means the
        # screener's own default; other strictness values re-decide from its scores.
        screener = pipeline.fit_screener(
            dataclasses.replace(config, strictness=None),
            inputs.corpus,
            inputs.questions,
            inputs.question_embedding,
            clustering,
            lexical=_lexical_evidence(inputs, cache),
            support_threshold=tau,  # as measure() fits it when given a calibration
        )
    analysis = pipeline.measure(
        config,
        inputs.corpus,
        inputs.questions,
        inputs.question_embedding,
        clustering,
        force_include=include,
        force_exclude=exclude,
        screener=screener,
        index=similarity_index(inputs, cache),
        calibration=calibration,
    )
    _remember(cache.screeners, screener_key, analysis.screener)
    cache.analysis = (full_key, analysis)
    return analysis


def similarity_index(inputs: EmbeddedInputs, cache: TuningCache):
    """Each chunk's nearest questions for these inputs, built once and kept in ``cache``."""
    if len(inputs.questions.questions) == 0:
        return None
    key = (inputs.corpus_key, inputs.question_key)
    index = cache.indexes.get(key)
    if index is None:
        index = metrics.nearest_questions(inputs.corpus.vectors, inputs.question_embedding.vectors)
    _remember(cache.indexes, key, index)
    return index


def _lexical_evidence(inputs: EmbeddedInputs, cache: TuningCache) -> tuple | None:
    """The lexical evidence of a screener already fitted on these texts (any K), if there is one."""
    for (corpus, questions, *_), screener in cache.screeners.items():
        if (corpus, questions) == (inputs.corpus_key, inputs.question_key):
            return screener.lexical_coverage_, screener.lexical_chunk_, screener.absent_words_
    return None


def _same_but_gap_threshold(old_key: tuple, new_key: tuple) -> bool:
    old_config, new_config = old_key[2], new_key[2]
    return (
        old_key[:2] == new_key[:2]
        and old_key[3:] == new_key[3:]
        and dataclasses.replace(old_config, gaps=new_config.gaps) == new_config
    )


def regap(analysis: pipeline.Analysis, config: AnalysisConfig) -> pipeline.Analysis:
    """``analysis`` with other gap settings: clusters relabelled by ``config.gaps.rule``, nothing recomputed."""
    clusters = analysis.clusters.copy()
    clusters["is_gap"] = is_gap(clusters, config.gaps)
    return dataclasses.replace(analysis, config=config, clusters=clusters, warnings=list(analysis.warnings), gaps=[])


def is_gap(clusters: pd.DataFrame, gaps: GapConfig) -> np.ndarray:
    """Which clusters are gaps under ``gaps.rule``, as ``pipeline.measure`` decides it."""
    if gaps.rule == "coverage":
        return (clusters["coverage"] < gaps.gap_threshold).to_numpy(dtype=bool)
    return (clusters["tested_share"] < gaps.tested_share_threshold).to_numpy(dtype=bool)


def with_gaps(analysis: pipeline.Analysis, llm=None, embedder=None, embed_cache=None) -> pipeline.Analysis:
    """A copy of ``analysis`` with its gaps found (the original is left as it is).

    With an ``llm`` and the ``embedder`` of the chunks, each LLM question is
    kept only if it reaches its passage at the analysis's support level τ.
    """
    copy = dataclasses.replace(analysis, warnings=list(analysis.warnings), gaps=[])
    return pipeline.find_gaps(
        copy, llm, embedder, embed_cache, support_threshold=analysis.calibration.support_threshold
    )


def default_k(n_chunks: int) -> int:
    from coverage_core.clustering import default_n_clusters

    return int(default_n_clusters(n_chunks))


# ---------------------------------------------------------------- tables
def metric_table(metrics: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"metric": list(metrics), "value": [float(v) for v in metrics.values()]})


def cluster_table(analysis: pipeline.Analysis) -> pd.DataFrame:
    frame = analysis.clusters.drop(columns=["representative_chunks"]).copy()
    if "label" in frame:  # the topic's name right after its number
        frame.insert(1, "topic", frame.pop("label"))
    frame["example passage"] = [chunks[0] if len(chunks) else "" for chunks in analysis.clusters["representative_chunks"]]
    return frame


def document_table(analysis: pipeline.Analysis) -> pd.DataFrame:
    frame = analysis.documents.copy()
    untested = frame["is_untested"] if "is_untested" in frame else np.zeros(len(frame), dtype=bool)
    frame["flag"] = np.where(untested, "untested", np.where(frame["is_low"], "covered far less than the others", ""))
    return frame.sort_values(["coverage", "document"]).reset_index(drop=True)


def off_topic_table(analysis: pipeline.Analysis, overrides) -> pd.DataFrame:
    """Every question with its off-topic score, decision, any override and its support (best similarity
    to any chunk), highest score first."""
    table = analysis.question_table
    frame = pd.DataFrame(
        {
            "row": table["row"].astype(int),
            "question": table["text"],
            "outlier score": table["outlier_score"].astype(float),
            "off-topic": table["is_outlier"].astype(bool),
            "override": [
                "included by you" if int(r) in overrides.include else "excluded by you" if int(r) in overrides.exclude else ""
                for r in table["row"]
            ],
            "nearest document": table["nearest_document"],
            "best similarity": table["max_similarity"].astype(float),
        }
    )
    return frame.sort_values(["outlier score", "row"], ascending=[False, True]).reset_index(drop=True)


def duplicate_table(analysis: pipeline.Analysis) -> pd.DataFrame:
    """The groups of near-duplicate questions, largest first (``Analysis.duplicate_table``), other rows as text."""
    table = analysis.duplicate_table()
    table["other_rows"] = [", ".join(map(str, rows)) for rows in table["other_rows"]]
    return table.rename(
        columns={"n_questions": "questions", "other_rows": "other rows", "min_similarity": "lowest similarity"}
    )


def duplicate_members(analysis: pipeline.Analysis, row: int) -> pd.DataFrame:
    """The questions of the near-duplicate group whose representative is file row ``row``, in file order."""
    groups = analysis.duplicate_groups
    rows = np.asarray(analysis.questions.rows)
    members = np.flatnonzero(groups.representative == int(np.flatnonzero(rows == row)[0]))
    return pd.DataFrame(
        {
            "row": rows[members],
            "question": [analysis.questions.questions[i].text for i in members],
            "similarity to the representative": groups.similarity[members],
        }
    )


def fitness_table(analysis: pipeline.Analysis, threshold: float) -> pd.DataFrame:
    """Per question: best similarity to any chunk, nearest document and passage, ranked."""
    table = analysis.question_table
    frame = pd.DataFrame(
        {
            "row": table["row"].astype(int),
            "question": table["text"],
            "best similarity": table["max_similarity"].astype(float),
            "nearest document": table["nearest_document"],
            "nearest passage": table["nearest_passage"],
            "cluster": table["cluster"].astype(int),
        }
    )
    frame["verdict"] = np.where(
        frame["best similarity"] < threshold, "the knowledge base may not answer this", ""
    )
    return frame.sort_values(["best similarity", "row"], ascending=[False, True]).reset_index(drop=True)


def _topic(analysis: pipeline.Analysis, cluster: int) -> str:
    """The cluster's topic label ("koala · marsupial · eucalyptus"), or "" before labels existed."""
    if "label" not in analysis.clusters:
        return ""
    labels = dict(zip(analysis.clusters["cluster"], analysis.clusters["label"]))
    return str(labels.get(cluster, "") or "")


def _tested_share(analysis: pipeline.Analysis, cluster: int) -> float:
    if "tested_share" not in analysis.clusters:
        return float("nan")
    return float(dict(zip(analysis.clusters["cluster"], analysis.clusters["tested_share"])).get(cluster, float("nan")))


def gap_table(analysis: pipeline.Analysis) -> pd.DataFrame:
    """The method's gap table: one row per gap, most urgent first."""
    rows = []
    for rank, gap in enumerate(analysis.gaps, start=1):
        rows.append(
            {
                "rank": rank,
                "cluster": gap.cluster,
                "topic": _topic(analysis, gap.cluster),
                "tested share": _tested_share(analysis, gap.cluster),
                "coverage": gap.coverage,
                "size": gap.size,
                "corpus share": gap.share,
                "themes": ", ".join(gap.themes),
                "suggested questions": "\n".join(s.text for s in gap.suggestions),
            }
        )
    columns = ["rank", "cluster", "topic", "tested share", "coverage", "size", "corpus share", "themes", "suggested questions"]
    return pd.DataFrame(rows, columns=columns)


def least_covered_passages(analysis: pipeline.Analysis) -> pd.DataFrame:
    chunks = analysis.corpus.chunks
    rows = []
    for gap in analysis.gaps:
        for index in gap.passages:
            chunk = chunks[index]
            rows.append(
                {
                    "cluster": gap.cluster,
                    "document": chunk.document,
                    "page": chunk.page,
                    "distance to nearest question": float(analysis.min_distances[index]),
                    "passage": " ".join(chunk.text.split()),
                }
            )
    columns = ["cluster", "document", "page", "distance to nearest question", "passage"]
    return pd.DataFrame(rows, columns=columns)


# ---------------------------------------------------------------- suggestions
def suggestions_frame(analysis: pipeline.Analysis) -> pd.DataFrame:
    rows = [
        {
            "accept": False,
            "question": s.text,
            "cluster": int(gap.cluster),
            "origin": s.origin,
            "document": s.document,
            "passage": s.passage,
        }
        for gap in analysis.gaps
        for s in gap.suggestions
    ]
    return normalise_suggestions(pd.DataFrame(rows, columns=list(SUGGESTION_COLUMNS)))


def normalise_suggestions(frame: pd.DataFrame) -> pd.DataFrame:
    """Column types the editor needs; rows the user added get origin "you"."""
    frame = frame.reindex(columns=list(SUGGESTION_COLUMNS)).copy()
    frame["accept"] = frame["accept"].map(lambda v: bool(v) if v is not None and not pd.isna(v) else False).astype(bool)
    frame["question"] = frame["question"].map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    frame["cluster"] = pd.to_numeric(frame["cluster"], errors="coerce").astype("Int64")
    for column in ("origin", "document", "passage"):
        frame[column] = frame[column].map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    frame.loc[frame["origin"] == "", "origin"] = USER_ORIGIN
    return frame.reset_index(drop=True)


def merge_suggestions(previous: pd.DataFrame | None, fresh: pd.DataFrame) -> pd.DataFrame:
    """New suggestions, keeping every row the user accepted or wrote before.

    Used when the gaps change (a threshold moved): rows the user accepted or
    added are kept first; the other suggestions are replaced by the new ones.
    """
    if previous is None or previous.empty:
        return normalise_suggestions(fresh)
    previous = normalise_suggestions(previous)
    fresh = normalise_suggestions(fresh)
    keep = previous[previous["accept"] | (previous["origin"] == USER_ORIGIN)]
    extra = fresh[~fresh["question"].isin(set(keep["question"]))]
    return normalise_suggestions(pd.concat([keep, extra], ignore_index=True))


def accepted_texts(frame: pd.DataFrame | None) -> list[str]:
    """The accepted, non-blank question texts, in table order, without repeats.

    Offline drafts the user has not yet worded as questions are left out: a
    test set must not gain "Write a question answered by: …" rows.
    """
    return [text for text in _accepted(frame) if not is_unfinished_draft(text)]


def unfinished_drafts(frame: pd.DataFrame | None) -> int:
    """How many accepted rows are still offline drafts (left out of Apply and the export)."""
    return sum(is_unfinished_draft(text) for text in _accepted(frame))


def _accepted(frame: pd.DataFrame | None) -> list[str]:
    if frame is None or frame.empty:
        return []
    frame = normalise_suggestions(frame)
    texts: list[str] = []
    for text in frame.loc[frame["accept"], "question"]:
        text = " ".join(str(text).split())
        if text and text not in texts:
            texts.append(text)
    return texts


@dataclass(frozen=True)
class Improvement:
    """The test set with accepted suggestions, scored on the same clusters."""

    texts: tuple[str, ...]
    questions: QuestionSet
    before: pipeline.Analysis
    after: pipeline.Analysis


def improve(analysis: pipeline.Analysis, texts: Sequence[str], embedder, cache, overrides) -> Improvement:
    """Add ``texts`` to the questions and rescore (same clusters; only new texts are embedded)."""
    improved, after = pipeline.accept_questions(
        analysis, list(texts), embedder, cache, marker_column=MARKER_COLUMN,
        force_include=sorted(overrides.include), force_exclude=sorted(overrides.exclude),
    )
    return Improvement(tuple(texts), improved, analysis, after)


def improved_questions(questions: QuestionSet, texts: Sequence[str]) -> QuestionSet:
    return pipeline.add_questions(questions, list(texts), marker_column=MARKER_COLUMN)


def metric_deltas(before: dict[str, float], after: dict[str, float], names=("before", "after")) -> pd.DataFrame:
    keys = [k for k in before if k in after]
    return pd.DataFrame(
        {
            "metric": keys,
            names[0]: [float(before[k]) for k in keys],
            names[1]: [float(after[k]) for k in keys],
            "change": [float(after[k]) - float(before[k]) for k in keys],
        }
    )


def cluster_deltas(before: pipeline.Analysis, after: pipeline.Analysis, names=("before", "after")) -> pd.DataFrame:
    """Per cluster: coverage under both question sets, the change, and questions near it; biggest gain first."""
    a = before.clusters[["cluster", "size", "coverage", "n_questions"]]
    b = after.clusters[["cluster", "coverage", "n_questions"]]
    merged = a.merge(b, on="cluster", suffixes=("_a", "_b"))
    frame = pd.DataFrame(
        {
            "cluster": merged["cluster"],
            "topic": [_topic(before, c) for c in merged["cluster"]],
            "size": merged["size"],
            names[0]: merged["coverage_a"],
            names[1]: merged["coverage_b"],
            "change": merged["coverage_b"] - merged["coverage_a"],
            f"questions near it ({names[0]})": merged["n_questions_a"],
            f"questions near it ({names[1]})": merged["n_questions_b"],
        }
    )
    return frame.sort_values(["change", "cluster"], ascending=[False, True]).reset_index(drop=True)


@dataclass(frozen=True)
class Comparison:
    name_a: str
    name_b: str
    a: pipeline.Analysis
    b: pipeline.Analysis


def compare(analysis: pipeline.Analysis, other: QuestionSet, embedder, cache, names: tuple[str, str]) -> Comparison:
    """Score a second question set on the same chunks and clusters as ``analysis``."""
    other_analysis = pipeline.rescore(analysis, other, embedder, cache)
    return Comparison(names[0], names[1], analysis, other_analysis)


# ---------------------------------------------------------------- exports
def inputs_record(documents, question_file) -> dict:
    """File names for the report's config (never contents, never a key)."""
    record: dict[str, Any] = {}
    if documents is not None:
        record["documents"] = list(documents.names)
    if question_file is not None:
        record["questions"] = question_file.name
    return record


@dataclass(frozen=True)
class Checks:
    """The label-driven checks of an analysis: retrieval and answerability (None when the CSV has no such column)."""

    retrieval: Any = None
    labels: Any = None
    answerability: Any = None
    subquestions: Any = None
    retrieval_error: str | None = None
    answerability_error: str | None = None


def checks(analysis: pipeline.Analysis, settings) -> Checks:
    """Retrieval and answerability for the user's columns and k (fast: one top-k pass).

    A check whose column is unusable is None, with the reason in its
    ``*_error``; the other check is still computed.
    """
    found = Checks()
    try:
        retrieval = pipeline.check_retrieval(analysis, settings.relevant_column or None, int(settings.retrieval_k))
        found = dataclasses.replace(found, retrieval=retrieval)
    except CoverageError as error:
        found = dataclasses.replace(found, retrieval_error=str(error))
    try:
        labels, answerability = pipeline.check_answerability(analysis, settings.label_column or None)
        found = dataclasses.replace(found, labels=labels, answerability=answerability)
    except CoverageError as error:
        found = dataclasses.replace(found, answerability_error=str(error))
    return found


def report_json(analysis: pipeline.Analysis, inputs: dict | None = None, found: Checks | None = None) -> bytes:
    found = found or Checks()
    report = build_report(
        analysis, inputs, retrieval=found.retrieval, answerability=found.answerability, labels=found.labels,
        subquestions=found.subquestions,
    )
    return json.dumps(report, indent=2, ensure_ascii=False).encode("utf-8")


def improved_csv(questions: QuestionSet, texts: Sequence[str]) -> bytes:
    """The user's own table, in its own delimiter, with accepted suggestions appended and marked, formula-safe."""
    return to_safe_csv(improved_questions(questions, texts).frame, delimiter=questions.delimiter)
