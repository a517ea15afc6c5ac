"""The stage calls of the method, and the checks that run on a finished analysis.

:mod:`coverage_core.session` runs the stages in order and keeps what each
computed; the functions here are the stages themselves (chunk, embed,
calibrate, cluster, find gaps) and what runs on an :class:`Analysis`
afterwards (retrieval, answerability, sub-questions, traffic, accepting
suggested questions). The one-shot runs ``analyze`` and ``analyze_corpus``
are the session's; the configs are in :mod:`coverage_core.config`, the
result types in :mod:`coverage_core.results`, and :func:`measure` in
:mod:`coverage_core.measure`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import pandas as pd

from coverage_core.config import AnalysisConfig, EmbeddingConfig
from coverage_core.embeddings import Embedder, EmbeddingCache, approximate_token_count, embed_texts, make_embedder
from coverage_core.embeddings.base import UNLIMITED_TOKENS
from coverage_core.embeddings.cache import CacheKey, text_hash
from coverage_core.embeddings.registry import default_support_level, model_spec, sends_requests
from coverage_core.errors import CoverageError, InputError, ProviderError
from coverage_core.languages import detect_language
from coverage_core.measure import measure
from coverage_core.results import Analysis, Clustering, Corpus, EmbeddedTexts, TokenFit
from coverage_core.stages import calibration as calibration_module
from coverage_core.stages.calibration import Calibration
from coverage_core.stages.chunking import ChunkingConfig, SplitChunks, TokenLimit, split_documents
from coverage_core.stages.clustering import ChunkClusterer
from coverage_core.suggest.gaps import Gap, analyze_gaps
from coverage_core.suggest.llm import ChatClient
from coverage_core.suggest.local_model import shared_local_client
from coverage_core.suggest.progress import WritingProgress
from coverage_core.suggest.questions import Suggestion
from coverage_core.suggest.reply_cache import ReplyCache
from coverage_core.types import Chunk, Document, Question, QuestionSet
from coverage_core.validation import is_whole

if TYPE_CHECKING:  # imported where used: most runs need none of them
    from coverage_core.checks import answerability, answerability_labels, retrieval, subquestions, traffic
    from coverage_core.checks.query_log import TrafficLog

__all__ = [
    "Progress", "accept_questions", "add_questions", "build_embedder", "calibrate_corpus", "chunk_corpus",
    "cluster_chunks", "embed_corpus", "embed_questions", "find_gaps", "rescore", "run_answerability_check",
    "run_retrieval_check", "run_subquestion_check", "run_traffic_check", "token_limit", "with_gaps",
]

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): see :data:`coverage_core.session.STAGES`."""


def build_embedder(config: EmbeddingConfig, api_key: str | None = None, *, max_concurrency: int | None = None) -> Embedder:
    """The embedder ``config`` names; ``max_concurrency`` caps an API's requests in flight (None: the default)."""
    return make_embedder(
        config.provider,
        config.model,
        dimensions=config.dimensions,
        api_key=api_key,
        base_url=config.base_url,
        max_concurrency=max_concurrency,
    )


def token_limit(embedder: Embedder, cache: EmbeddingCache | None = None) -> TokenLimit | None:
    """The input limit chunks are fitted to, counted with ``embedder``'s tokenizer; None when it is not known.

    The limit is the registry's ``max_tokens`` for the embedder's model, else
    the embedder's own ``max_tokens`` (or sentence-transformers'
    ``max_seq_length``). A local model's counts are taken from ``cache``
    where it holds the text, so a run whose chunks are all cached never
    loads the model; an API embedder's count is an offline approximation,
    cheaper than a cache lookup.
    """
    entry = model_spec(embedder.provider, embedder.model)
    max_tokens = entry.max_tokens if entry is not None else (
        getattr(embedder, "max_tokens", None) or getattr(embedder, "max_seq_length", None))
    if not max_tokens or max_tokens >= UNLIMITED_TOKENS:
        return None
    if cache is None or sends_requests(embedder.provider):
        return TokenLimit(int(max_tokens), embedder.count_tokens)
    key = CacheKey.of(embedder)

    def count_tokens(texts: list[str]) -> list[int]:
        digests = [text_hash(text) for text in texts]
        known = cache.get_many(key, digests)
        missing = [text for text, digest in zip(texts, digests) if digest not in known]
        counted = iter(embedder.count_tokens(missing) if missing else [])
        return [known[digest][1] if digest in known else next(counted) for digest in digests]

    return TokenLimit(int(max_tokens), count_tokens)


def offline_token_limit(embedding: EmbeddingConfig) -> TokenLimit | None:
    """:func:`token_limit` of an API model without its embedder (no key needed): the registry's
    ``max_tokens``, counted with the same offline approximation its embedder uses."""
    entry = model_spec(embedding.provider, embedding.model)
    if entry is None or entry.max_tokens >= UNLIMITED_TOKENS:
        return None
    return TokenLimit(int(entry.max_tokens), lambda texts: [approximate_token_count(text) for text in texts])


def chunk_corpus(
    documents: Sequence[Document], chunking: ChunkingConfig, limit: TokenLimit | None = None
) -> list[Chunk]:
    """The documents' chunks, fitted to ``limit`` when given (:func:`token_limit`); InputError when there are none."""
    return _split_corpus(documents, chunking, limit).chunks


def _split_corpus(documents: Sequence[Document], chunking: ChunkingConfig, limit: TokenLimit | None) -> SplitChunks:
    split = split_documents(documents, chunking, limit)
    if not split.chunks:
        raise InputError("The documents contain no text to chunk; add documents with text.")
    return split


def _token_fit(split: SplitChunks, limit: TokenLimit | None) -> TokenFit | None:
    """What fitting the chunks to ``limit`` did; languages are detected on the chunks split again only."""
    if limit is None:
        return None
    by_language = Counter(detect_language(text) for text in split.resplit_texts)
    return TokenFit(limit.max_tokens, len(split.chunks), split.n_resplit, split.n_truncated,
                    dict(by_language.most_common()))


def _embed(
    texts: Sequence[str],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    stage: str,
    progress: Progress | None,
) -> EmbeddedTexts:
    callback = (lambda done, total: progress(stage, done, total)) if progress else None
    run = embed_texts(list(texts), embedder, cache, progress=callback)
    # Take what the cache had to say (e.g. it was rebuilt), so it is told once, with these vectors.
    notes = cache.warnings if cache is not None else []
    cache_warnings = list(notes)
    notes.clear()
    return EmbeddedTexts(
        run.vectors, run.n_cached, run.n_embedded, run.n_over_limit, embedder.max_tokens, run.new_tokens,
        token_counts=run.token_counts, cache_warnings=cache_warnings,
    )


def embed_corpus(
    documents: Sequence[Document],
    chunking: ChunkingConfig,
    embedder: Embedder,
    cache: EmbeddingCache | None,
    progress: Progress | None = None,
) -> Corpus:
    """The documents chunked, fitted to ``embedder``'s input limit (:func:`token_limit`), and embedded."""
    limit = token_limit(embedder, cache)
    split = _split_corpus(documents, chunking, limit)
    embedded = _embed([chunk.text for chunk in split.chunks], embedder, cache, "chunks", progress)
    return Corpus(list(documents), split.chunks, embedded, _token_fit(split, limit))


def embed_questions(
    questions: QuestionSet,
    embedder: Embedder,
    cache: EmbeddingCache | None,
    progress: Progress | None = None,
) -> EmbeddedTexts:
    return _embed(questions.texts, embedder, cache, "questions", progress)


def calibrate_corpus(
    config: AnalysisConfig,
    corpus: Corpus,
    embedder: Embedder | None = None,
    cache: EmbeddingCache | None = None,
    *,
    topic_labels: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Calibration:
    """The support threshold τ of this corpus and model, computed once per corpus.

    ``config.support_threshold`` set: that value (``method="override"``),
    nothing embedded. Otherwise calibrated without labels from sentences of
    the corpus (:func:`coverage_core.stages.calibration.calibrate`), embedding about
    800 short texts with ``embedder`` through ``cache``; without an embedder
    the documented default. ``topic_labels`` are the corpus's automatic
    topics (``cluster_chunks(corpus, None, config.random_state).labels``)
    when the caller has them; None clusters them here. ``progress(done, total)``
    counts the short texts as they are embedded (:func:`embed_texts`): with a
    slow model they take minutes on a small corpus. When τ cannot be
    calibrated (or trusted), it is ``config.embedding``'s model default from
    the provider registry, else the generic default.
    """
    if config.support_threshold is not None:
        return calibration_module.override(config.support_threshold)
    fallback = support_fallback(config)
    if embedder is None:
        return calibration_module.default(fallback)

    def embed(texts):
        return embed_texts(list(texts), embedder, cache, progress).vectors

    if topic_labels is None:
        topic_labels = cluster_chunks(corpus, None, config.random_state).labels
    return calibration_module.calibrate(
        corpus.chunks, corpus.vectors, embed, config.random_state, topic_labels=topic_labels, fallback=fallback
    )


def support_fallback(config: AnalysisConfig) -> calibration_module.Fallback:
    """The level τ falls back to when it cannot be calibrated: ``config.embedding``'s model default from the
    provider registry, else the generic default."""
    level, _ = default_support_level(config.embedding.provider, config.embedding.model)
    return calibration_module.model_fallback(level)


def cluster_chunks(corpus: Corpus, n_clusters: int | None, random_state: int) -> Clustering:
    clusterer = ChunkClusterer(n_clusters=n_clusters, random_state=random_state).fit(corpus.vectors)
    return Clustering(clusterer.labels_, clusterer.cluster_centers_, list(clusterer.warnings_))


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
        support_threshold=support_threshold, question_vectors=analysis.question_vectors)
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


def run_retrieval_check(
    analysis: Analysis, relevant_column: str | None = None, k: int | None = None
) -> "retrieval.RetrievalResult | None":
    """Retrieval metrics for the questions that name their relevant sources.

    The column is ``relevant_column`` or one detected by name
    (``retrieval_labels.RELEVANT_COLUMN_NAMES``); None when the questions name no
    sources. Every labelled question counts, off-topic or not: a question
    labelled with a source is a retrieval test whatever its topic. ``k``
    None is the analysis's ``config.retrieval_k``, the k of *tested*.
    """
    from coverage_core.checks import retrieval, retrieval_labels

    if k is None:
        k = analysis.config.retrieval_k

    questions = analysis.questions
    column = retrieval_labels.find_relevant_column([str(c) for c in questions.frame.columns], relevant_column)
    if column is None or column == questions.question_column:
        return None
    # The screener's pass kept each question's best chunks: no second pass when k fits.
    ranked = None
    kept = analysis.screener.question_top_chunks_
    wanted = min(k, len(analysis.corpus.chunks)) if is_whole(k) else None
    if wanted is not None and kept.shape == (len(analysis.question_vectors), kept.shape[1]) and (
        kept.shape[1] >= wanted
    ):
        ranked = (kept, analysis.screener.question_top_similarities_)
    return retrieval.evaluate_retrieval(
        analysis.question_vectors,
        analysis.corpus.vectors,
        analysis.corpus.chunks,
        retrieval_labels.relevant_from_questions(questions, column),
        k,
        rows=questions.rows,
        question_texts=questions.texts,
        relevant_column=column,
        documents=analysis.corpus.documents,
        ranked=ranked,
    )


def run_answerability_check(analysis: Analysis, label_column: str | None = None):
    """Answerability labels of the questions and how well the best similarity predicts them.

    Returns ``(labels, result)``: ``answerability_labels.QuestionLabels`` (column
    None when the questions carry no labels) and the
    ``answerability.AnswerabilityResult``, or None without labels.
    """
    from coverage_core.checks import answerability, answerability_labels

    labels = answerability_labels.question_labels(analysis.questions, label_column)
    if labels.column is None:
        return labels, None
    similarity = analysis.question_table["max_similarity"].to_numpy(dtype=float)
    return labels, answerability.answerability(similarity, labels.labels)


@dataclasses.dataclass(frozen=True)
class LabelChecks:
    """The checks the question file's own columns drive, as :func:`run_label_checks` leaves them.

    ``retrieval`` (``checks.retrieval.RetrievalResult``) is None when no
    column names the questions' sources; ``labels`` and ``answerability`` are
    :func:`run_answerability_check`'s. A check whose column is unusable is
    None with the reason in its ``*_error`` (a :class:`CoverageError`); the
    other check still ran.
    """

    retrieval: "retrieval.RetrievalResult | None" = None
    labels: "answerability_labels.QuestionLabels | None" = None
    answerability: "answerability.AnswerabilityResult | None" = None
    retrieval_error: CoverageError | None = None
    answerability_error: CoverageError | None = None

    @property
    def notes(self) -> list[str]:
        """What the checks that ran have to say about their columns (rows left out, labels read as …)."""
        notes = [*(self.retrieval.notes if self.retrieval is not None else ())]
        notes += [*(self.labels.notes if self.labels is not None else ())]
        if self.answerability is not None and self.answerability.note:
            notes.append(self.answerability.note)
        return notes

    def raise_first_error(self) -> None:
        """Raise the first check's error, if any: where a named column must be usable (the command line)."""
        for error in (self.retrieval_error, self.answerability_error):
            if error is not None:
                raise error


def run_label_checks(analysis: Analysis, relevant_column: str | None = None, k: int | None = None,
                     label_column: str | None = None) -> LabelChecks:
    """The retrieval check (:func:`run_retrieval_check`) then the answerability check
    (:func:`run_answerability_check`): the one sequence the command line and the dashboard both run."""
    found = LabelChecks()
    try:
        found = dataclasses.replace(found, retrieval=run_retrieval_check(analysis, relevant_column, k))
    except CoverageError as error:
        found = dataclasses.replace(found, retrieval_error=error)
    try:
        labels, result = run_answerability_check(analysis, label_column)
        found = dataclasses.replace(found, labels=labels, answerability=result)
    except CoverageError as error:
        found = dataclasses.replace(found, answerability_error=error)
    return found


def run_subquestion_check(
    analysis: Analysis,
    positions: Sequence[int] | int,
    llm: ChatClient | None,
    embedder: Embedder,
    cache: EmbeddingCache | None = None,
    *,
    config: "subquestions.SubQuestionConfig | None" = None,
    progress: Callable[[int, int], None] | None = None,
) -> "subquestions.SubQuestionResult":
    """Sub-question coverage of some of the analysis's questions (one LLM request each).

    ``positions`` are indices into ``analysis.questions.questions`` (not
    file rows), in the order to send them; an int ``n`` means the first
    ``n`` questions (all of them when there are fewer). Sub-questions are
    embedded with ``embedder`` through ``cache``, the ones that embedded the
    analysis, so nothing is embedded twice; ``progress(done, total)`` is
    called after each question. The result's ``warnings`` are not added to
    ``analysis.warnings``: the caller shows or reports them.

    Raises InputError when no LLM is given (``subquestions.UNAVAILABLE_REASON``),
    when no question is chosen or a position is out of range; LLM failures
    never raise (see ``subquestions.decompose_questions``).
    """
    from coverage_core.checks import subquestions

    questions = analysis.questions.questions
    if is_whole(positions):
        positions = range(min(max(int(positions), 0), len(questions)))
    chosen = []
    for position in positions:
        if not is_whole(position) or not 0 <= position < len(questions):
            raise InputError(
                f"Question position {position!r} is not one of the {len(questions)} questions "
                f"(0 to {len(questions) - 1})."
            )
        chosen.append(int(position))
    return subquestions.analyze_subquestions(
        [questions[i] for i in chosen],
        analysis.question_vectors[chosen],
        analysis.corpus.vectors,
        lambda texts: embed_texts(list(texts), embedder, cache).vectors,
        llm,
        config,
        progress,
    )


def add_questions(questions: QuestionSet, texts: Sequence[str], marker_column: str = "suggested") -> QuestionSet:
    """The question set with ``texts`` appended as new rows.

    Original rows and columns are untouched; new rows fill the question column,
    leave the user's other columns empty, and are marked ``yes`` in
    ``marker_column`` (added if the file had no such column).
    """
    new_texts = [" ".join(str(t).split()) for t in texts if str(t).strip()]
    frame = questions.frame.copy()
    if marker_column not in frame.columns:
        frame[marker_column] = ""
    start = len(frame)
    additions = pd.DataFrame({column: [""] * len(new_texts) for column in frame.columns}, dtype=str)
    additions[questions.question_column] = new_texts
    additions[marker_column] = "yes"
    frame = pd.concat([frame, additions], ignore_index=True)
    added = [Question(start + i, text) for i, text in enumerate(new_texts)]
    return dataclasses.replace(questions, frame=frame, questions=list(questions.questions) + added)


def rescore(
    analysis: Analysis,
    questions: QuestionSet,
    embedder: Embedder,
    cache: EmbeddingCache | None,
    *,
    force_include: Sequence[int] = (),
    force_exclude: Sequence[int] = (),
) -> Analysis:
    """Score a changed question set on the same chunks and clusters.

    Keeping the clustering fixed makes before/after comparable per cluster;
    the cache means only new question texts are embedded.
    """
    question_embedding = embed_questions(questions, embedder, cache)
    return measure(
        analysis.config,
        analysis.corpus,
        questions,
        question_embedding,
        analysis.clustering,
        force_include=force_include,
        force_exclude=force_exclude,
        calibration=analysis.calibration,
        topics=analysis.topics,
        languages=analysis.languages.with_questions(questions) if analysis.languages is not None else None,
    )


def accept_questions(
    analysis: Analysis,
    texts: Sequence[str],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    *,
    marker_column: str = "suggested",
    force_include: Sequence[int] = (),
    force_exclude: Sequence[int] = (),
) -> tuple[QuestionSet, Analysis]:
    """Append accepted questions to the test set and rescore on the same clusters.

    Accepted questions count as inliers: the user vetted each one, and the
    suggestions are drawn from the corpus. Screening them would let a lone
    new topic (which the screener's question-neighbour smoothing ties to
    whatever questions lie nearest) undo the user's decision.
    """
    improved = add_questions(analysis.questions, texts, marker_column)
    new_rows = [question.row for question in improved.questions[len(analysis.questions.questions):]]
    after = rescore(
        analysis,
        improved,
        embedder,
        cache,
        force_include=[*force_include, *new_rows],
        force_exclude=force_exclude,
    )
    return improved, after


def _topic_names(analysis: Analysis) -> list[str] | None:
    """The knowledge-base topics' names by cluster, as the Results page and the reports show them (None without)."""
    clusters = analysis.clusters
    if "label" not in clusters:
        return None
    names = dict(zip(clusters["cluster"].astype(int), clusters["label"].astype(str)))
    return [names.get(k, "") for k in range(analysis.clustering.n_clusters)]


def run_traffic_check(
    analysis: Analysis,
    log: "TrafficLog",
    embedder: Embedder,
    cache: EmbeddingCache | None = None,
    *,
    config: "traffic.TrafficConfig | None" = None,
    progress: Progress | None = None,
) -> "traffic.TrafficResult":
    """Production traffic against this analysis: the log's distinct (masked) queries are embedded with
    ``embedder`` (the model of the analysis) through ``cache``, then compared with the on-topic test
    questions at τ and with the passages at the questions' support level (:mod:`coverage_core.checks.traffic`)."""
    from coverage_core.checks import traffic as traffic_check  # the module named in the annotations
    from coverage_core.checks.traffic_answers import strip_masks

    # An anonymisation placeholder ("[REDACTED]") would pull a query's embedding away from its subject.
    embedded = _embed([strip_masks(query) for query in log.queries], embedder, cache, "traffic queries", progress)
    inliers = ~np.asarray(analysis.is_outlier, dtype=bool)
    return traffic_check.analyze_traffic(
        log,
        embedded.vectors,
        analysis.question_vectors[inliers],
        [q.text for q, keep in zip(analysis.questions.questions, inliers) if keep],
        analysis.corpus.vectors,
        support_threshold=analysis.calibration.support_threshold,
        question_support_threshold=analysis.calibration.question_support_threshold,
        chunk_texts=[chunk.text for chunk in analysis.corpus.chunks],
        chunk_documents=analysis.corpus.chunk_documents,
        chunk_labels=analysis.clustering.labels,
        topic_names=_topic_names(analysis),
        languages=analysis.languages,
        # Beside what production retrieval returns (when the log records it): the questions targeting each document.
        test_documents=(dict(zip(analysis.documents["document"], analysis.documents["n_questions"]))
                        if "n_questions" in analysis.documents else None),
        config=config or traffic_check.TrafficConfig(
            random_state=analysis.config.random_state, strictness=analysis.config.strictness
        ),
    )
