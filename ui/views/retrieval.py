"""The Retrieval and chunking page: the relevant-source picker, retrieval tables, the chunking comparison and its cost."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from coverage_core.config import AnalysisConfig
from coverage_core.errors import InputError
from coverage_core.results import Analysis
from coverage_core.types import QuestionSet

DETECTED = ""  # the relevant-column option "use the detected column" (Settings.relevant_column "")


@dataclass(frozen=True)
class RelevantColumnChoice:
    """The relevant-source column picker: its options, the detected column, and the column in use."""

    options: tuple[str, ...]
    candidates: tuple[str, ...]
    detected: str | None
    column: str | None  # the chosen column, else the detected one

    def label(self, option: str) -> str:
        if option == DETECTED:
            return f"detected: {self.detected}" if self.detected else "none detected"
        return option if option in self.candidates else f"{option} (not a column of this file)"


def relevant_column_choice(questions: QuestionSet, chosen: str) -> RelevantColumnChoice:
    """The columns that may name each question's source; a remembered column of another file is kept (and refused later)."""
    from coverage_core.checks.retrieval_labels import find_relevant_column

    columns = [str(column) for column in questions.frame.columns]
    candidates = tuple(column for column in columns if column != questions.question_column)
    detected = find_relevant_column(columns)
    detected = None if detected == questions.question_column else detected
    options = (DETECTED, *candidates) + ((chosen,) if chosen and chosen not in candidates else ())
    return RelevantColumnChoice(options, candidates, detected, chosen or detected)


def all_labels_unknown(result) -> bool:
    """True when no label of any labelled question names a document (or page) of the knowledge base."""
    unknown = {label.casefold() for label in result.unknown_sources}
    return result.n_labelled > 0 and all(
        all(label.casefold() in unknown for label in labels) for labels in result.per_question["relevant"]
    )


def _retrieved_list(names, pages) -> str:
    return " | ".join(name if page is None or pd.isna(page) else f"{name} p.{int(page)}" for name, page in zip(names, pages))


def retrieval_question_table(result) -> pd.DataFrame:
    """Every labelled question: its sources, hit, first relevant rank, precision, recall and what it retrieved."""
    frame = result.per_question
    return pd.DataFrame(
        {
            "row": frame["row"].astype(int),
            "question": frame["question"],
            "relevant": [" | ".join(labels) for labels in frame["relevant"]],
            "hit": frame["hit_at_k"].astype(bool),
            "first relevant rank": frame["first_relevant_rank"],
            "precision": frame["precision_at_k"].astype(float),
            "recall": frame["recall_at_k"].astype(float),
            "reciprocal rank": frame["reciprocal_rank"].astype(float),
            "retrieved (rank order)": [_retrieved_list(n, p) for n, p in zip(frame["retrieved"], frame["retrieved_pages"])],
        }
    )


def retrieval_failure_table(result) -> pd.DataFrame:
    """The questions that retrieved none of their sources, with what they retrieved and whether a source exists."""
    frame = result.failures.drop(columns=["chunk"])
    unknown = {label.casefold() for label in result.unknown_sources}
    known = {
        int(row): any(label.casefold() not in unknown for label in labels)
        for row, labels in zip(result.per_question["row"], result.per_question["relevant"])
    }
    frame["expected is in the knowledge base"] = [known.get(int(row), False) for row in frame["row"]]
    if frame["page"].isna().all():  # text files: no pages
        frame = frame.drop(columns=["page"])
    return frame


@dataclass(frozen=True)
class ChunkingCost:
    """What a chunking comparison through a paid API would send, before anything is sent."""

    plans: pd.DataFrame  # one row per configuration
    estimate: Any  # costs.CostEstimate
    n_send: int
    n_calibration: int


def chunking_cost(inputs, config: AnalysisConfig, grid, embedder, cache, prices) -> ChunkingCost:
    """The texts and tokens each configuration would embed, and the estimated cost (raises CoverageError)."""
    from coverage_core import chunking_comparison, costs

    plans = chunking_comparison.plan_chunkings(inputs.corpus.documents, grid, embedder, cache, config=config)
    estimate = costs.estimate_embedding_cost(
        sum(p.total_tokens for p in plans), inputs.embedding.provider, embedder.model, prices
    )
    frame = pd.DataFrame(
        {
            "chunk size": [p.config.chunk_size for p in plans],
            "overlap": [p.config.chunk_overlap for p in plans],
            "chunks": [p.n_chunks for p in plans],
            "texts to embed": [p.n_to_embed for p in plans],
            "support-level texts": [p.n_calibration for p in plans],
            "tokens (approx.)": [p.total_tokens for p in plans],
        }
    )
    if config.support_threshold is not None:  # the user's level: nothing is calibrated
        frame = frame.drop(columns=["support-level texts"])
    return ChunkingCost(frame, estimate, sum(p.n_to_embed for p in plans), sum(p.n_calibration for p in plans))


@dataclass(frozen=True)
class ChunkingComparison:
    """A chunking comparison as computed: the core's table, its notes, k, and whether it was paid for."""

    table: pd.DataFrame
    messages: tuple[str, ...]
    k: int
    paid: bool

    def shown(self) -> pd.DataFrame:
        """The table as the page shows it: columns that say nothing here left out, support sources in words."""
        from coverage_core.chunking_comparison import support_source

        table = self.table
        hidden = [] if self.paid else ["new_tokens", "cost_usd"]
        if not self.paid or not table["calibration_embedded"].fillna(0).any():
            hidden.append("calibration_embedded")
        if table["error"].isna().all():
            hidden.append("error")
        retrieval_columns = ["precision_at_k", "recall_at_k", "hit_at_k", "mrr"]
        if table[retrieval_columns].isna().all().all():
            hidden += retrieval_columns
        shown = table.drop(columns=hidden)
        if "support_method" in shown:  # plain words, not the core's method names
            shown["support_method"] = shown["support_method"].map(support_source)
        return shown


def compare_chunkings(
    inputs, analysis: Analysis, grid, k: int, relevant_column, embedder, cache, prices,
    progress=None,
) -> ChunkingComparison:
    """The same questions against the documents chunked each way of ``grid`` (the analysis's screening held fixed)."""
    from coverage_core import chunking_comparison
    from coverage_core.checks import retrieval_labels

    if inputs.from_vector_store:
        raise InputError(
            "The chunking comparison chunks the documents again, but these passages came from your vector store "
            "with their vectors; upload the documents themselves to compare chunkings."
        )
    questions = analysis.questions
    relevant = retrieval_labels.relevant_from_questions(questions, relevant_column) if relevant_column else None
    table, messages = chunking_comparison.compare_chunkings(
        inputs.corpus.documents, questions, inputs.question_embedding, grid, embedder, cache,
        config=analysis.config, is_outlier=analysis.is_outlier, relevant=relevant, k=k, price_table=prices,
        progress=progress,
    )
    return ChunkingComparison(table, tuple(messages), k, prices is not None)
