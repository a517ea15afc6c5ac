"""The one orchestrator: the stages of an analysis in order, each kept under a key of what it depends on.

::

    embed passages ──┐
    embed questions ─┼─▶ calibrate τ      (corpus, override, seed; against the automatic topics)
                     ├─▶ cluster          (corpus, K, seed)
                     ├─▶ fit the screener (inputs, seed, the questions' τ; against the automatic topics)
                     └─▶ measure          (everything)  ─▶ relabel gaps (gap settings only) ─▶ find gaps

An :class:`AnalysisSession` runs them and keeps the last few results of
each stage, so that asking again with other settings reruns only the stages
whose key changed, as BERTopic's ``update_topics`` reruns one late stage:
a new K clusters again but keeps τ and the screener, a new strictness or
override only measures again, a new gap threshold only relabels clusters.
The CLI runs one analysis on a throwaway session (:func:`analyze`); the
dashboard keeps one per browser session. Progress goes to one callback,
``progress(stage, done, total)``, for every stage in :data:`STAGES`.

The stages' calls: chunking and embedding in :mod:`coverage_core.embedding_steps`; τ and the clustering
here (:func:`calibrate_corpus`, :func:`cluster_chunks`); screening and measuring in
:mod:`coverage_core.measure`; the gaps in :mod:`coverage_core.gap_finding`.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from coverage_core import (
    embedding_steps,  # called through the module: tests stand in a fake embedder there
    gap_finding,
    measure as measure_stage,  # called through the module: tests spy on its stages
    verdicts,
)
from coverage_core.config import AnalysisConfig
from coverage_core.embedding_steps import Progress
from coverage_core.embeddings import Embedder, EmbeddingCache, embed_texts
from coverage_core.embeddings.choice import AUTO, ModelChoice, resolve
from coverage_core.embeddings.registry import default_support_level
from coverage_core.errors import CoverageError, InputError
from coverage_core.languages import LanguageProfile, profile_languages
from coverage_core.results import Analysis, Clustering, Corpus, EmbeddedTexts
from coverage_core.stages import calibration as calibration_module, similarity
from coverage_core.stages.calibration import Calibration
from coverage_core.stages.chunking import ChunkingConfig
from coverage_core.stages.clustering import ChunkClusterer
from coverage_core.suggest.progress import WritingProgress
from coverage_core.types import Document, QuestionSet

T = TypeVar("T")
MISSING = object()
STAGES = {
    "chunks": "Embedding passages",
    "questions": "Embedding questions",
    "calibration": "Calibrating the support level",
    "clustering": "Clustering the passages into topics",
    "screening": "Screening the questions for off-topic ones",
    "measuring": "Measuring coverage",
}
"""Each stage, in order, and what it does in a user's words. The embedding stages count texts (the
calibration its sample sentences: about 800 short texts, minutes with a slow model on a small corpus); the
others report 0 of 1, then 1 of 1."""
EMBEDDING_STAGES = ("chunks", "questions", "calibration")
KEEP = 4
"""Results kept per stage: the user moving K back and forth is instant."""


# ---------------------------------------------------------------- keys and slots
@dataclass(frozen=True)
class StageKey:
    """What a kept value depends on: the key of what it was computed from, and its settings by name.

    ``StageKey.of(inputs.key, method="tsne")``: ``source`` is the key of the
    data (a fingerprint, or the key of the embedded corpus, the inputs, the
    analysis …), ``params`` the settings the value depends on, sorted by name
    and read back as attributes (``key.method``). Each kind of value has its
    own slot, so two stages with the same source and settings never meet.
    """

    source: Any
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, source: Any, **params: Any) -> StageKey:
        return cls(source, tuple(sorted(params.items())))

    def replace(self, **changes: Any) -> StageKey:
        """The key with some settings changed."""
        return StageKey.of(self.source, **{**dict(self.params), **changes})

    def __getattr__(self, name: str) -> Any:
        for key, value in object.__getattribute__(self, "params"):
            if key == name:
                return value
        raise AttributeError(name)


class Slot(Protocol):
    """Where :func:`memo` keeps a value: :class:`Recent`, or the dashboard's session-state slot."""

    def get(self, key: Any, missing: Any = MISSING) -> Any: ...

    def put(self, key: Any, value: Any) -> None: ...


def check_key(key: Any) -> Any:
    """``key`` if it is a frozen dataclass instance (hashable, with named fields); else TypeError."""
    if not (dataclasses.is_dataclass(key) and not isinstance(key, type) and key.__dataclass_params__.frozen):
        raise TypeError(f"memo keys are frozen dataclasses with named fields, not {type(key).__name__}")
    return key


def memo(slot: Slot, key: Any, compute: Callable[[], T]) -> T:
    """The value ``slot`` holds for ``key``, computed by ``compute()`` and stored when it holds none."""
    check_key(key)
    found = slot.get(key, MISSING)
    if found is MISSING:
        found = compute()
        slot.put(key, found)
    return found


@dataclass
class Recent:
    """The last ``keep`` values by key, most recently used last."""

    keep: int = KEEP
    entries: OrderedDict = field(default_factory=OrderedDict)

    def get(self, key: Any, missing: Any = MISSING) -> Any:
        if key not in self.entries:
            return missing
        self.entries.move_to_end(key)
        return self.entries[key]

    def put(self, key: Any, value: Any) -> None:
        self.entries[key] = value
        self.entries.move_to_end(key)
        while len(self.entries) > self.keep:
            self.entries.popitem(last=False)

    def __contains__(self, key: Any) -> bool:
        return key in self.entries

    def items(self):
        return self.entries.items()

    def values(self):
        return self.entries.values()

    def __len__(self) -> int:
        return len(self.entries)

    def last(self) -> tuple[Any, Any] | None:
        """The most recently stored (key, value), or None."""
        if not self.entries:
            return None
        key = next(reversed(self.entries))
        return key, self.entries[key]


# ---------------------------------------------------------------- inputs
def distinct_questions(questions: QuestionSet) -> QuestionSet:
    """``questions`` without its exact repeats (``questions.duplicates``): what the stages measure.

    A repeat adds nothing to coverage, yet every stage after embedding holds
    a row per question and the screener compares questions with each other,
    so 500,000 copies of one question would take hours and gigabytes. The
    file's table (``frame``) and the list of repeats are kept, so nothing the
    user wrote is lost from exports, and read_questions warns about them.
    """
    if not questions.duplicates:
        return questions
    repeats = questions.duplicates
    kept = [question for question in questions.questions if question.row not in repeats]
    return dataclasses.replace(questions, questions=kept)


def inputs_key(corpus: StageKey, questions: StageKey) -> StageKey:
    """The embedded corpus and questions together (maps, MDS, sub-questions are keyed by these only)."""
    return StageKey.of(corpus, questions=questions)


@dataclass(frozen=True)
class EmbeddedInputs:
    """The expensive part of an analysis: the embedded corpus and questions, with their keys.

    ``corpus_key`` names the documents, ``chunking`` and ``embedding`` the
    corpus was made with (and ``vectors=True`` for passages a vector store
    chunked); ``question_key`` the questions and ``embedding``. ``key``
    (:func:`inputs_key`), ``embedding`` and ``chunking`` are derived from them.
    """

    corpus: Corpus
    corpus_key: StageKey
    questions: QuestionSet
    question_embedding: EmbeddedTexts
    question_key: StageKey
    key: StageKey = field(init=False)
    embedding: Any = field(init=False)
    chunking: ChunkingConfig = field(init=False)

    def __post_init__(self) -> None:
        derived = {"key": inputs_key(self.corpus_key, self.question_key), "embedding": self.corpus_key.embedding,
                   "chunking": self.corpus_key.chunking}
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    @property
    def from_vector_store(self) -> bool:
        """Whether the passages were chunked and embedded by the user's vector store."""
        return bool(getattr(self.corpus_key, "vectors", False))


def run_keys(config: AnalysisConfig) -> tuple[StageKey, StageKey]:
    """Corpus and question keys for one run of a throwaway session (it only ever sees these inputs)."""
    return (StageKey.of("this run", chunking=config.chunking, embedding=config.embedding),
            StageKey.of("this run's questions", embedding=config.embedding))


def calibration_key(corpus: StageKey, config: AnalysisConfig) -> StageKey:
    """What τ depends on: the embedded corpus (documents, chunking, embedding model), the override, the seed."""
    return StageKey.of(corpus, override=config.support_threshold, seed=config.random_state)


def analysis_key(inputs: EmbeddedInputs, config: AnalysisConfig, include=(), exclude=()) -> StageKey:
    """Everything a measured analysis depends on: the inputs, the config and the overrides (τ follows)."""
    return StageKey.of(inputs.key, config=config, include=tuple(sorted(include)), exclude=tuple(sorted(exclude)))


class _NoEmbedder(Exception):
    """The inputs' embedder cannot be built here (no key): calibrate without it."""


# ---------------------------------------------------------------- the stages' calls
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
    """The passages clustered into ``n_clusters`` topics (None: the automatic K) by spherical K-means
    (:class:`~coverage_core.stages.clustering.ChunkClusterer`)."""
    clusterer = ChunkClusterer(n_clusters=n_clusters, random_state=random_state).fit(corpus.vectors)
    return Clustering(clusterer.labels_, clusterer.cluster_centers_, list(clusterer.warnings_))


# ---------------------------------------------------------------- the session
@dataclass
class AnalysisSession:
    """The stages of an analysis and what each computed last, by :class:`StageKey`.

    ``corpora`` and ``question_sets`` keep the embedded inputs (unless
    :meth:`embed` is given other slots), ``clusterings`` by corpus, K
    and seed, ``calibrations`` by :func:`calibration_key`, ``screeners`` by
    inputs, seed and the questions' τ, ``indexes`` (each chunk's nearest
    questions) by inputs, ``language_profiles`` (the languages of the
    documents and questions) by inputs, ``analyses`` the last measured analysis by
    :func:`analysis_key`. ``rerunnable``: later stages will be asked again
    (the dashboard), so the chunks' nearest questions are indexed once for
    every rerun; a one-shot run takes them from the screener's own pass.
    """

    keep: int = KEEP
    rerunnable: bool = True
    corpora: Slot = field(default_factory=lambda: Recent(1))
    question_sets: Slot = field(default_factory=lambda: Recent(1))
    clusterings: Recent = field(init=False)
    screeners: Recent = field(init=False)
    indexes: Recent = field(init=False)
    calibrations: Recent = field(init=False)
    language_profiles: Recent = field(init=False)
    analyses: Recent = field(default_factory=lambda: Recent(1))

    def __post_init__(self) -> None:
        for name in ("clusterings", "screeners", "indexes", "calibrations", "language_profiles"):
            setattr(self, name, Recent(self.keep))

    @classmethod
    def one_shot(cls) -> AnalysisSession:
        """A throwaway session for one run (the CLI): keeps the chosen-K and automatic clusterings, no index."""
        return cls(keep=2, rerunnable=False)

    @property
    def analysis(self) -> tuple[StageKey, Analysis] | None:
        """The last measured analysis and its key."""
        return self.analyses.last()

    # ------------------------------------------------------------ stages
    def embed(self, corpus_key: StageKey, question_key: StageKey, questions: QuestionSet, embedder, cache, *,
              documents: Sequence[Document] = (), passages: Corpus | None = None,
              keep_in: tuple[Slot, Slot] | None = None, progress: Progress | None = None) -> EmbeddedInputs:
        """The embedded inputs: ``passages`` (vectors made elsewhere) or ``documents`` chunked and embedded.

        ``keep_in`` are the slots of the embedded corpus and questions (the
        dashboard keeps them in its session state); None: the session's own.
        """
        corpora, question_sets = keep_in or (self.corpora, self.question_sets)
        questions = distinct_questions(questions)
        corpus = memo(corpora, corpus_key, lambda: passages if passages is not None else embedding_steps.embed_corpus(
            documents, corpus_key.chunking, embedder, cache, progress))
        _, embedded = memo(question_sets, question_key,
                           lambda: (questions, embedding_steps.embed_questions(questions, embedder, cache, progress)))
        return EmbeddedInputs(corpus, corpus_key, questions, embedded, question_key)

    def clustering(self, inputs: EmbeddedInputs, n_clusters: int | None, seed: int,
                   progress: Progress | None = None) -> Clustering:
        """The passages clustered into ``n_clusters`` topics (None: the automatic K)."""
        return memo(self.clusterings, StageKey.of(inputs.corpus_key, n_clusters=n_clusters, seed=seed),
                    _reported(progress, "clustering", lambda: cluster_chunks(inputs.corpus, n_clusters, seed)))

    def has_calibration(self, inputs: EmbeddedInputs, config: AnalysisConfig) -> bool:
        """Whether :meth:`calibration` would return at once (no embedding needed)."""
        return config.support_threshold is not None or calibration_key(inputs.corpus_key, config) in self.calibrations

    def calibration(self, inputs: EmbeddedInputs, config: AnalysisConfig, embedder=None, embed_cache=None,
                    progress: Progress | None = None) -> Calibration:
        """The corpus's support level τ (:func:`calibrate_corpus`), against the automatic topics.

        ``embedder`` made the inputs (or a zero-argument function returning
        it, called only when τ must be computed); None builds it from the
        inputs' embedding settings, and when that fails (an API model
        without a key) τ is the documented default, not remembered.
        """
        def compute() -> Calibration:
            if config.support_threshold is not None:
                return calibrate_corpus(config, inputs.corpus)
            model = embedder() if callable(embedder) and not hasattr(embedder, "embed") else embedder
            if model is None:
                try:
                    model = embedding_steps.build_embedder(inputs.embedding)
                except CoverageError as error:
                    raise _NoEmbedder from error
            topics = self.clustering(inputs, None, config.random_state, progress).labels
            return _counted(progress, "calibration", lambda counted: calibrate_corpus(
                config, inputs.corpus, model, embed_cache, topic_labels=topics, progress=counted))

        try:
            return memo(self.calibrations, calibration_key(inputs.corpus_key, config), compute)
        except _NoEmbedder:
            return calibrate_corpus(config, inputs.corpus)

    def screener(self, inputs: EmbeddedInputs, config: AnalysisConfig, calibration: Calibration,
                 progress: Progress | None = None):
        """The off-topic screener, fitted against the automatic topics: a new K reuses it.

        Fitted at the default strictness, so that "default" always means the
        screener's own default (other values re-decide from its scores); a
        refit for another seed or τ reuses the lexical evidence of the texts.
        """
        question_support_threshold = calibration.question_support_threshold
        topics = self.clustering(inputs, None, config.random_state, progress)
        return memo(self.screeners, StageKey.of(inputs.key, seed=config.random_state,
                                                 question_support_threshold=question_support_threshold),
                    _reported(progress, "screening", lambda: measure_stage.fit_screener(
                        dataclasses.replace(config, strictness=None), inputs.corpus, inputs.questions,
                        inputs.question_embedding, topics, lexical=self._lexical_evidence(inputs),
                        question_support_threshold=question_support_threshold)))

    def index(self, inputs: EmbeddedInputs) -> similarity.NearestQuestions | None:
        """Each chunk's nearest questions, built once per inputs (None for a one-shot run or no questions)."""
        if not self.rerunnable or len(inputs.questions.questions) == 0:
            return None
        return memo(self.indexes, inputs.key, lambda: similarity.nearest_questions(
            inputs.corpus.vectors, inputs.question_embedding.vectors))

    def language_profile(self, inputs: EmbeddedInputs) -> LanguageProfile:
        """The languages of the inputs' documents and questions, read once per inputs (a new K or τ reuses them)."""
        return memo(self.language_profiles, inputs.key,
                    lambda: profile_languages(inputs.corpus.documents, inputs.questions))

    def analysis_for(self, inputs: EmbeddedInputs, config: AnalysisConfig, include: Sequence[int] = (),
                     exclude: Sequence[int] = (), *, embedder=None, embed_cache=None,
                     progress: Progress | None = None) -> Analysis:
        """The measured analysis for ``config`` and the overrides, rerunning only the stages whose key changed.

        ``include`` / ``exclude`` are question rows forced in or out of the
        inliers; ``embedder`` and ``embed_cache`` only calibrate τ.
        """
        key = analysis_key(inputs, config, include, exclude)
        calibration = self.calibration(inputs, config, embedder, embed_cache, progress)
        last = self.analysis
        if last is not None and last[0] != key and _same_but_gaps(last[0], key):
            return memo(self.analyses, key, lambda: regap(last[1], config))
        return memo(self.analyses, key, lambda: self._measure(inputs, key, calibration, progress))

    def run(self, inputs: EmbeddedInputs, config: AnalysisConfig, *, embedder=None, embed_cache=None, llm=None,
            progress: Progress | None = None, writing_progress: WritingProgress | None = None) -> Analysis:
        """The analysis with its gaps found (LLM suggestions with ``llm``), as the CLI reports it.

        ``writing_progress(done, total, seconds_left)`` hears of each gap a model wrote for
        (:mod:`coverage_core.suggest.progress`)."""
        measured = self.analysis_for(inputs, config, embedder=embedder, embed_cache=embed_cache, progress=progress)
        return gap_finding.with_gaps(measured, llm, embedder, embed_cache, progress=writing_progress)

    def _measure(self, inputs: EmbeddedInputs, key: StageKey, calibration: Calibration,
                 progress: Progress | None) -> Analysis:
        config = key.config
        clustering = self.clustering(inputs, config.n_clusters, config.random_state, progress)
        topics = self.clustering(inputs, None, config.random_state, progress)
        screener = self.screener(inputs, config, calibration, progress)
        index = self.index(inputs)
        return _reported(progress, "measuring", lambda: measure_stage.measure(
            config, inputs.corpus, inputs.questions, inputs.question_embedding, clustering,
            force_include=key.include, force_exclude=key.exclude, screener=screener, index=index,
            calibration=calibration, topics=topics.labels, languages=self.language_profile(inputs)))()

    def _lexical_evidence(self, inputs: EmbeddedInputs) -> tuple | None:
        """The lexical evidence of a screener already fitted on these texts (any seed or τ), if there is one."""
        for key, screener in self.screeners.items():
            if key.source == inputs.key:
                return screener.lexical_coverage_, screener.lexical_chunk_, screener.absent_words_
        return None

    def remember(self, corpus_key: StageKey, config: AnalysisConfig, clustering: Clustering,
                 calibration: Calibration, topics: Clustering | None = None) -> None:
        """Keep what a saved analysis already computed (its clustering, automatic topics and τ)."""
        self.clusterings.put(StageKey.of(corpus_key, n_clusters=config.n_clusters, seed=config.random_state),
                             clustering)
        if config.n_clusters is not None and topics is not None:
            self.clusterings.put(StageKey.of(corpus_key, n_clusters=None, seed=config.random_state), topics)
        self.calibrations.put(calibration_key(corpus_key, config), calibration)


def _reported(progress: Progress | None, stage: str, compute: Callable[[], T]) -> Callable[[], T]:
    """``compute`` telling ``progress`` that ``stage`` started (0 of 1) and finished (1 of 1)."""
    if progress is None:
        return compute

    def run() -> T:
        progress(stage, 0, 1)
        value = compute()
        progress(stage, 1, 1)
        return value

    return run


def _counted(progress: Progress | None, stage: str, compute: Callable[[Callable[[int, int], None] | None], T]) -> T:
    """``compute(counted)``, where ``counted(done, total)`` tells ``progress`` how many texts of ``stage``
    are embedded; a stage that embedded nothing (everything cached, or nothing to embed) reports 1 of 1."""
    if progress is None:
        return compute(None)
    heard = False

    def counted(done: int, total: int) -> None:
        nonlocal heard
        heard = True
        progress(stage, done, total)

    value = compute(counted)
    if not heard:
        progress(stage, 1, 1)
    return value


def _same_but_gaps(old: StageKey, new: StageKey) -> bool:
    return old.replace(config=dataclasses.replace(old.config, gaps=new.config.gaps)) == new


def regap(analysis: Analysis, config: AnalysisConfig) -> Analysis:
    """``analysis`` with other gap settings: clusters relabelled by ``config.gaps.rule`` (and the documents that
    are gaps of their own with them), nothing recomputed."""
    clusters = analysis.clusters.copy()
    clusters["is_gap"] = verdicts.is_gap(clusters["coverage"], clusters["tested_share"], config.gaps)
    documents = analysis.documents
    if "cluster" in documents:
        documents = documents.copy()
        documents["is_gap"] = measure_stage.document_gaps(documents, clusters)
    return dataclasses.replace(analysis, config=config, clusters=clusters, documents=documents,
                               warnings=list(analysis.warnings), gaps=[])


# ---------------------------------------------------------------- one run
def analyze(config: AnalysisConfig, documents: Sequence[Document], questions: QuestionSet, *, embedder=None,
            cache=None, api_key: str | None = None, llm=None, progress: Progress | None = None,
            writing_progress: WritingProgress | None = None) -> Analysis:
    """Run the whole method: chunk, embed, calibrate, cluster, screen, measure, find gaps.

    ``writing_progress``: see :meth:`AnalysisSession.run`."""
    if not documents:
        raise InputError("There are no readable documents; add PDF, TXT or Markdown files with text.")
    _require_questions(questions)
    choice = None
    if embedder is None:  # a given embedder is the caller's choice
        config, choice = choose_embedding(config, documents, questions)
        embedder = embedding_steps.build_embedder(config.embedding, api_key)
    session = AnalysisSession.one_shot()
    inputs = session.embed(*run_keys(config), questions, embedder, cache, documents=documents, progress=progress)
    analysis = session.run(inputs, config, embedder=embedder, embed_cache=cache, llm=llm, progress=progress,
                           writing_progress=writing_progress)
    return analysis if choice is None else dataclasses.replace(analysis, model_choice=choice)


def choose_embedding(config: AnalysisConfig, documents: Sequence[Document], questions) -> tuple[AnalysisConfig, ModelChoice | None]:
    """``config`` with an automatic model choice (``provider="auto"``) made concrete from the languages of
    ``documents`` and ``questions`` (:func:`coverage_core.embeddings.choice.choose_model`), and the choice;
    any other config unchanged, with None."""
    if config.embedding.provider != AUTO:
        return config, None
    profile = profile_languages(documents, distinct_questions(questions))
    embedding, choice = resolve(config.embedding, profile.document_shares, profile.question_shares,
                                sum(len(document.text) for document in documents))
    return dataclasses.replace(config, embedding=embedding), choice


def analyze_corpus(config: AnalysisConfig, corpus: Corpus, questions: QuestionSet, *, embedder, cache=None,
                   llm=None, progress: Progress | None = None,
                   writing_progress: WritingProgress | None = None) -> Analysis:
    """The method from an embedded corpus on (vectors made elsewhere, e.g. a vector store).

    ``embedder`` must be the model that made the corpus's vectors: it embeds
    the questions and the calibration probes. ``writing_progress``: see :meth:`AnalysisSession.run`.
    """
    _require_questions(questions)
    session = AnalysisSession.one_shot()
    inputs = session.embed(*run_keys(config), questions, embedder, cache, passages=corpus, progress=progress)
    return session.run(inputs, config, embedder=embedder, embed_cache=cache, llm=llm, progress=progress,
                       writing_progress=writing_progress)


def _require_questions(questions: QuestionSet) -> None:
    if not questions.questions:
        raise InputError("The question file has no questions; add at least one question.")
