"""Finding an analysis's gaps and writing questions for them, with the model at hand.

The gaps themselves (ranking, themes, drafts, the keep rule) are :mod:`coverage_core.suggest`'s; here an
:class:`~coverage_core.results.Analysis` is read for what they need, and the writer is chosen: the user's
LLM, else the bundled local model (:mod:`coverage_core.suggest.local_model`, its replies kept beside the
embedding cache), else drafts. :func:`find_gaps` fills an analysis's gaps, :func:`with_gaps` a copy's (the
session's last step), and :func:`replacement_suggestions` writes replacements for stale questions.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from coverage_core.embeddings import Embedder, EmbeddingCache, embed_texts
from coverage_core.errors import ProviderError
from coverage_core.results import Analysis
from coverage_core.suggest.gaps import Gap, analyze_gaps
from coverage_core.suggest.llm import ChatClient
from coverage_core.suggest.local_model import shared_local_client
from coverage_core.suggest.progress import WritingProgress
from coverage_core.suggest.questions import Suggestion
from coverage_core.suggest.reply_cache import ReplyCache

__all__ = ["find_gaps", "replacement_suggestions", "with_gaps"]


def find_gaps(
    analysis: Analysis,
    llm: ChatClient | None = None,
    embedder: Embedder | None = None,
    cache: EmbeddingCache | None = None,
    support_threshold: float | None = None,
    written: Sequence[Gap] = (),
    progress: WritingProgress | None = None,
) -> Analysis:
    """Rank the least-covered clusters and the untested documents and suggest questions for them.

    With an ``embedder`` (the one that embedded the chunks), questions are
    written by a model and kept only by the keep rule of
    :mod:`coverage_core.suggest.writing`, at ``support_threshold``, by
    default the analysis's calibrated ``analysis.calibration.support_threshold``:
    by the ``llm`` when one is given, else by the bundled local model
    (:mod:`coverage_core.suggest.local_model`) when ``config.gaps.local_model``
    is on. Without an embedder, or without a model, suggestions are drafts.
    ``written`` (gaps of an earlier call) are kept where a model wrote for them.
    The bundled model's replies are kept in the folder of ``cache`` (none
    kept without it), so a re-run writes nothing again
    (:mod:`coverage_core.suggest.reply_cache`). ``progress(done, total,
    seconds_left)`` hears of each gap a model wrote for
    (:mod:`coverage_core.suggest.progress`).
    """
    if support_threshold is None:
        support_threshold = analysis.calibration.support_threshold
    embed = None
    if embedder is not None and support_threshold is not None:
        def embed(texts):
            return embed_texts(list(texts), embedder, cache).vectors
    writer = None
    gap_config = analysis.config.gaps
    if llm is None and embed is not None and gap_config.local_model and gap_config.n_suggestions:
        try:
            writer = shared_local_client(ReplyCache(cache.directory) if cache is not None else None)
        except ProviderError as error:
            analysis.warnings.append(str(error))
    corpus = analysis.corpus
    gaps, gap_warnings = analyze_gaps(
        [chunk.text for chunk in corpus.chunks],
        corpus.chunk_documents,
        corpus.vectors,
        analysis.clustering.labels,
        analysis.clustering.centroids,
        analysis.min_distances,
        analysis.clusters["coverage"].to_numpy(),
        analysis.questions.texts,
        gap_config,
        llm=llm,
        embed=embed,
        support_threshold=support_threshold,
        is_gap=analysis.clusters["is_gap"].to_numpy(dtype=bool),
        writer=writer,
        question_vectors=analysis.question_vectors,
        question_languages=analysis.languages.question_languages if analysis.languages is not None else None,
        written=written,
        untested_documents=_documents_where(analysis.documents, "is_untested"),
        document_gaps=_documents_where(analysis.documents, "is_gap"),
        progress=progress,
        near_duplicate_level=analysis.duplicate_groups.threshold,
    )
    analysis.gaps = gaps
    analysis.warnings.extend(gap_warnings)
    if writer is not None and getattr(writer, "replies", None) is not None:
        analysis.warnings.extend(writer.replies.warnings)
    return analysis


def replacement_suggestions(analysis: Analysis, passages: Sequence[int], embedder: Embedder | None = None,
                            cache: EmbeddingCache | None = None) -> tuple[list[Suggestion], list[str]]:
    """Replacement questions for stale ones (:func:`coverage_core.suggest.replacements.replacement_questions`),
    one per chunk of ``passages``, written as :func:`find_gaps` writes a gap's: by the bundled model with the
    chunks' ``embedder`` at the calibrated support level when the gap settings use it, else drafts. Returns the
    suggestions and the warnings (one sentence each)."""
    from coverage_core.suggest.replacements import replacement_questions

    support_threshold = analysis.calibration.support_threshold
    embed, writer, warnings = None, None, []
    if embedder is not None and support_threshold is not None:
        def embed(texts):
            return embed_texts(list(texts), embedder, cache).vectors
    if embed is not None and analysis.config.gaps.local_model and passages:
        try:
            writer = shared_local_client(ReplyCache(cache.directory) if cache is not None else None)
        except ProviderError as error:
            warnings.append(str(error))
    corpus = analysis.corpus
    suggestions, failure = replacement_questions(
        passages, [chunk.text for chunk in corpus.chunks], corpus.chunk_documents, corpus.vectors,
        analysis.clustering.labels, analysis.questions.texts, writer=writer, embed=embed,
        support_threshold=support_threshold, question_vectors=analysis.question_vectors,
        near_duplicate_level=analysis.duplicate_groups.threshold)
    if failure:
        warnings.append(f"The built-in question writer stopped, so drafts are shown instead: {failure}")
    return suggestions, warnings


def _documents_where(documents, column: str) -> list[str]:
    """The documents of the analysis's document table marked ``column`` (none when a table lacks it)."""
    if column not in documents:
        return []
    return [str(name) for name in documents.loc[documents[column].astype(bool), "document"]]


def with_gaps(analysis: Analysis, llm: ChatClient | None = None, embedder: Embedder | None = None,
              cache: EmbeddingCache | None = None, written: Sequence[Gap] = (),
              progress: WritingProgress | None = None) -> Analysis:
    """A copy of ``analysis`` with its gaps found (the original, perhaps kept by a session, is left as it is).

    ``written``: the gaps of an earlier copy; those a model wrote for are kept and the bundled model
    writes for the next ones (:func:`~coverage_core.suggest.gaps.analyze_gaps`). ``progress(done, total,
    seconds_left)``: see :func:`find_gaps`."""
    copy = dataclasses.replace(analysis, warnings=list(analysis.warnings), gaps=[])
    return find_gaps(copy, llm, embedder, cache, written=written, progress=progress)
