"""Off-topic question screening, referenced to the knowledge base.

A test question is off-topic when the knowledge base has nothing about it.
The method this product follows suggests LocalOutlierFactor on the question
embeddings alone; that measures whether a question is *unusual among the
questions*, not whether the *documents* support it, and it fails exactly
where it matters: questions about one missing topic arrive in a group, form
a dense cluster of their own and look perfectly normal to LOF. On the
wiki-qa data with four articles removed, LOF-on-questions ranks the
orphaned questions at chance (AUROC about 0.5; see
``benchmarks/eval_screening.py``). So the score here is built from the
question-to-chunk similarities and, when the texts are available, on
whether the question's distinctive words occur together in some chunk; the
LOF score is still reported as ``lof_score_`` for users who know the method,
but no decision rests on it. The word check lives in
:mod:`coverage_core.stages.lexical`; the measurements behind each step of the
method are in ``docs/screening.md``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from coverage_core import wording
from coverage_core.errors import InputError
from coverage_core.languages import foreign_to
from coverage_core.offtopic import (
    OFFTOPIC_REASONS,  # noqa: F401  (read from here by reports and pages)
    STRICTNESS_RANGE,  # noqa: F401
    Evidence,
    RuleSet,
    check_strictness,
    margin_cut,
    strictness_to_z,  # noqa: F401
)
from coverage_core.offtopic.like_questions import MIN_SHORT_NEIGHBOURS
from coverage_core.offtopic.no_support import MIN_QUESTIONS_FOR_DECISION, relative_cut
from coverage_core.stages.lexical import LIKELY_CHUNKS_PER_QUESTION, WordIndex, corpus_reading, lexical_coverage
from coverage_core.stages.neighbourhoods import chunk_density, lof_scores, neighbour_median, question_neighbours
from coverage_core.stages.similarity import best_matches
from coverage_core.stages.subjects import (
    document_names_and_titles,
    is_closed_question,
    stems_to_read,
    subject_lists,
    subject_presence,
)
from coverage_core.validation import all_finite, check_scalar, unit_rows

# Chunks kept per question from the screener's pass over the question x chunk
# similarities, so that the retrieval check (k = 5 by default) needs no second pass.
TOP_CHUNKS_KEPT = 10

# Question-side smoothing: average with the QUESTION_NEIGHBORS most similar
# questions.
QUESTION_NEIGHBORS = 10

# Score spreads below this are float rounding (scores are cosine differences
# of order 0.1), i.e. the scores are all the same.
TIED_SCALE = 1e-6

# Weight of the lexical component in the relative rule's combined score (the
# embedding component has 1 - LEXICAL_WEIGHT).
LEXICAL_WEIGHT = 0.5

# The constants of support_margin(): EMBEDDING_UNIT (cosine) and LEXICAL_UNIT (coverage) are one unit of
# evidence each; LEXICAL_CUT (70% of the question's idf-weighted content words together in one chunk) is
# the lexical counterpart of the level. MARGIN_LEXICAL_WEIGHT is the words' weight where the word index
# folds the corpus's word forms, INFLECTED_LEXICAL_WEIGHT where it leaves them apart (French "enrôlés" /
# "enrôlement"). How they were chosen: docs/offtopic-rules.md.
MARGIN_LEXICAL_WEIGHT = 0.6
INFLECTED_LEXICAL_WEIGHT = 0.4
EMBEDDING_UNIT = 0.1
LEXICAL_CUT = 0.7
LEXICAL_UNIT = 0.25


def _robust_center_scale(x: np.ndarray) -> tuple[float, float]:
    """Median and robust spread (1.4826 * MAD; 1.2533 * mean absolute
    deviation when more than half the values tie). Spread 0 = all equal."""
    if not len(x):
        return 0.0, 0.0
    center = float(np.median(x))
    scale = 1.4826 * float(np.median(np.abs(x - center)))
    if scale < TIED_SCALE:
        scale = 1.2533 * float(np.mean(np.abs(x - center)))
    if scale < TIED_SCALE:
        scale = 0.0
    return center, scale


def support_margin(
    max_similarity: np.ndarray, lexical_coverage: np.ndarray, question_support_threshold: float,
    lexical_weight: float = MARGIN_LEXICAL_WEIGHT,
) -> np.ndarray:
    """How far each question is above the documents' support level (> 0 = supported).

    ``(1 - lexical_weight) * (max_similarity - question_support_threshold) / EMBEDDING_UNIT +
    lexical_weight * (coverage - LEXICAL_CUT) / LEXICAL_UNIT``, ``lexical_weight`` being
    :data:`MARGIN_LEXICAL_WEIGHT`, or :data:`INFLECTED_LEXICAL_WEIGHT` where the word index leaves the
    language's inflections apart (``Reading.folds_word_forms``). A question
    without lexical evidence (no texts, or no content words: NaN coverage)
    is judged on its similarity alone, ``(max_similarity - question_support_threshold) /
    EMBEDDING_UNIT``. Each question's margin depends only on that question
    and the chunks, never on the other questions.
    """
    emb = (np.asarray(max_similarity, dtype=np.float64) - question_support_threshold) / EMBEDDING_UNIT
    lex = (np.asarray(lexical_coverage, dtype=np.float64) - LEXICAL_CUT) / LEXICAL_UNIT
    known = np.isfinite(lex)
    return np.where(
        known,
        (1.0 - lexical_weight) * emb + lexical_weight * np.where(known, lex, 0.0),
        emb,
    )


def _as_matrix(X, name: str) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] < 1:
        raise InputError(f"{name} must be a 2-D array (n, n_features), got shape {X.shape}.")
    if not np.issubdtype(X.dtype, np.floating):
        X = X.astype(np.float32)
    if not all_finite(X):
        raise InputError(f"{name} contains NaN or infinite values; check the embeddings.")
    return unit_rows(np.ascontiguousarray(X, dtype=np.float32), copy=False)


class QuestionScreener:
    """Score every question for being off-topic, judged against the documents.

    A question is off-topic when the knowledge base has nothing about it.
    :meth:`fit` gathers the evidence about each question once
    (:class:`~coverage_core.offtopic.evidence.Evidence`); the off-topic rules
    of :mod:`coverage_core.offtopic` decide from it, one module each.

    1. **Support from the documents**: ``support(q) = max_c [cos(q, c) -
       density_weight * density(c)]``, ``density(c)`` the mean cosine of
       chunk ``c`` to its 20 nearest chunks (within its cluster). The
       embedding score is ``-support(q)``.
    2. **Lexical evidence** (with the texts): the largest idf-weighted share
       of the question's content words found together in one chunk
       (:func:`~coverage_core.stages.lexical.lexical_coverage`). Its score
       ``1 - coverage`` and the embedding score become robust z-scores
       (median and 1.4826 * MAD) and are averaged.
    3. **Smoothing**: each score is averaged with that of the 10 most
       similar questions, ``(1 - w) * own + w * neighbours`` with ``w =
       neighbor_weight`` (their median with the texts, their mean without).
    4. **Support margin** (with ``question_support_threshold``): the
       question's :func:`support_margin` (best cosine above that level plus
       lexical coverage above ``LEXICAL_CUT``, in units of evidence) and the
       median margin of the questions most like it.
    5. **Named subjects** (with the texts): each question's subjects and
       content words and their presence in the passages
       (:func:`~coverage_core.stages.subjects.subject_presence`).
    6. **The rules** (:data:`coverage_core.offtopic.RULES`, those that apply
       to the corpus, ``rules_``) flag the questions; the first that fires
       explains the flag (:meth:`explain`, :meth:`flagging_rules`) and
       :meth:`offtopic_score` gives the score a user reads.

    LocalOutlierFactor on the question embeddings (the method's literal
    recipe) is reported as ``lof_score_`` for information; no decision rests
    on it, as a group of questions about one missing topic looks normal to it.

    Parameters
    ----------
    strictness : float, default=0.5
        In ``[0, 1]``; higher flags more. Maps to the robust z-score cut
        ``3.5 - 2.5 * strictness`` (0 -> 3.5, 0.5 -> 2.25, 1 -> 1.0).
    n_neighbors : int, default=20
        Neighbours for the informational LOF on question embeddings.
        Lowered to ``n_questions - 1`` when there are fewer questions.
    random_state : int or None, default=0
        Seed for the chunk sample used by the density estimate on large
        clusters.
    density_weight : float, default=0.5
        Weight of the chunk-side density in step 1 (0 = plain best cosine).
    neighbor_weight : float, default=0.5
        Weight ``w`` of the neighbouring questions in step 3, in ``[0, 1)``.
    question_support_threshold : float or None, default=None
        Calibrated question support level, a cosine in ``(0, 1]``
        (``coverage_core.stages.calibration.calibrate(...).question_support_threshold``).
        Given, ``is_outlier_`` is decided per question against the
        documents (step 5; a question a little short of the level with its like questions' margins),
        never on how many questions are off-topic;
        None keeps the relative rule of step 4.

    Attributes
    ----------
    outlier_score_ : ndarray of shape (n_questions,)
        Higher = more likely off-topic. Embeddings only: ``-support``
        smoothed (step 3). With texts: the averaged z-scores, smoothed.
    is_outlier_ : ndarray of shape (n_questions,), bool
        Decision at ``strictness``.
    threshold_ : float
        Relative rule: score above which a question is flagged (``inf``
        when no decision is possible). With ``question_support_threshold``: the
        support margin below which a question is flagged.
    support_margin_ : ndarray of shape (n_questions,) or None
        Step 5's margin (> 0 = supported by the documents); None without
        ``question_support_threshold``.
    neighbour_margin_ : ndarray of shape (n_questions,) or None
        The median margin of the questions most like each one (NaN when too few are near it;
        :func:`~coverage_core.verdicts.is_off_topic`); None without ``question_support_threshold``.
    lexical_weight_ : float
        Weight of the words in that margin (:func:`support_margin`): lower where the word index leaves
        the corpus's inflections apart.
    embedding_score_ : ndarray of shape (n_questions,)
        ``-support(q)`` of step 1, before combining and smoothing.
    lexical_coverage_ : ndarray of shape (n_questions,)
        Step 2's coverage in [0, 1] (1 = one chunk holds all the question's
        distinctive words); NaN without texts or for a question without
        content words (such questions get the median lexical score).
    lexical_chunk_ : ndarray of shape (n_questions,), int
        Chunk reaching that coverage; -1 when none (no texts, no content
        words, or no word found).
    absent_words_ : list of list of str
        Each question's content words (stemmed) found in no chunk; empty
        lists without texts. Useful to explain a flag.
    subject_evidence_ : list of list of SubjectEvidence
        Step 6: each question's named subjects and their presence; empty
        lists without texts.
    subject_, subject_kind_, subject_passages_, subject_retrieved_ : ndarray of shape (n_questions,)
        Each question's least present subject ("" and -1 when it names
        none), its kind (:class:`~coverage_core.stages.subjects.Subject`;
        ``"word"``: a common content word, counted only when in no passage),
        the passages mentioning it, and whether one it retrieves does.
    subject_company_ : ndarray of shape (n_questions,)
        For a question flagged because no passage says what it asks beside
        its name, that share (``SubjectEvidence.company``); NaN otherwise.
    absent_subject_ : ndarray of shape (n_questions,), bool
        Step 6's decision (never True without texts).
    lof_score_ : ndarray of shape (n_questions,)
        LocalOutlierFactor on question embeddings alone (about 1 = inlier,
        larger = more outlying); NaN with fewer than 2 questions.
        Informational only.
    max_similarity_ : ndarray of shape (n_questions,)
        Best cosine similarity of each question to any chunk.
    nearest_chunk_ : ndarray of shape (n_questions,), int
        Index of that chunk.
    question_top_chunks_, question_top_similarities_ : ndarray of shape (n_questions, TOP_CHUNKS_KEPT)
        Each question's most similar chunks, most similar first (ties: lower
        chunk index first), from the same pass: the retrieval check at k up
        to ``TOP_CHUNKS_KEPT`` reads them (``checks.runner.run_retrieval_check``).
    chunk_nearest_question_, chunk_max_similarity_ : ndarray of shape (n_chunks,)
        Each chunk's most similar question (any question, off-topic or not)
        and that similarity, from the same pass: ``measure.measure`` starts
        the coverage figures from them instead of a second pass.
    center_, scale_ : float
        Median and robust spread (1.4826 * MAD) of ``outlier_score_``.
    warnings_ : list of str
        Plain-language notes about degenerate inputs.

    Examples
    --------
    >>> import numpy as np
    >>> from coverage_core.offtopic.screener import QuestionScreener
    >>> rng = np.random.default_rng(0)
    >>> chunks = rng.normal(size=(40, 16))
    >>> on_topic = chunks[:20] + 0.1 * rng.normal(size=(20, 16))
    >>> off_topic = rng.normal(size=(3, 16))
    >>> screener = QuestionScreener().fit(np.vstack([on_topic, off_topic]), chunks)
    >>> screener.is_outlier_[20:].tolist(), int(screener.is_outlier_[:20].sum())
    ([True, True, True], 0)
    """

    def __init__(
        self,
        strictness: float = 0.5,
        n_neighbors: int = 20,
        random_state: int | None = 0,
        density_weight: float = 0.5,
        neighbor_weight: float = 0.5,
        question_support_threshold: float | None = None,
    ):
        self.strictness = strictness
        self.n_neighbors = n_neighbors
        self.random_state = random_state
        self.density_weight = density_weight
        self.neighbor_weight = neighbor_weight
        self.question_support_threshold = question_support_threshold

    def fit(
        self,
        question_vectors,
        chunk_vectors,
        chunk_labels=None,
        *,
        question_texts: Sequence[str] | None = None,
        chunk_texts: Sequence[str] | None = None,
        lexical: tuple[np.ndarray, np.ndarray, list[list[str]]] | None = None,
        chunk_documents: Sequence[str] | None = None,
    ) -> "QuestionScreener":
        """Score and screen the questions.

        Parameters
        ----------
        question_vectors : array-like of shape (n_questions, n_features)
        chunk_vectors : array-like of shape (n_chunks, n_features)
            Embeddings from the same model; rows need not be normalised.
        chunk_labels : array-like of shape (n_chunks,), optional
            Topic cluster of each chunk (``ChunkClusterer.labels_``). Only
            used to make the density estimate fast; None is fine for small
            corpora.
        question_texts : sequence of str, length n_questions, optional
        chunk_texts : sequence of str, length n_chunks, optional
            The texts behind the vectors. Pass both whenever available: they
            add the lexical evidence of step 2 of the method, which catches
            missing topics with a close cousin in the documents and spares
            context-free questions, and on wiki-qa raises the F1 of the
            default decision from 0.62 to about 0.86. Without them the
            screening uses the embeddings alone. Entries that are not
            strings count as empty texts.
        lexical : tuple, optional
            ``lexical_coverage(question_texts, chunk_texts)`` computed before
            for these same texts. It does not depend on the clustering, so
            a refit after re-clustering can skip its cost (most of the fit).
        chunk_documents : sequence of str, length n_chunks, optional
            The document of each chunk: a question naming a document (the
            plan it is about) is not flagged for that name's absence from
            the passages' text.

        Returns
        -------
        self : QuestionScreener
        """
        self._check_parameters()
        Q, C, chunk_labels, question_texts, chunk_texts = self._check_inputs(
            question_vectors, chunk_vectors, chunk_labels, question_texts, chunk_texts
        )
        notes: list[str] = []
        max_sim, nearest, own = self._document_support(Q, C, chunk_labels)
        # The words of the corpus's languages, read once for the word check and the subjects, and one word
        # index for both: the subjects' stems are read in the word check's pass over the texts.
        reading = corpus_reading(chunk_texts, question_texts) if question_texts is not None else None
        index = subjects = None
        if reading is not None:
            index = WordIndex(reading.texts(chunk_texts))
            subjects = subject_lists(question_texts, reading, content_words=True)
        self.foreign_ = np.asarray(foreign_to(question_texts, reading.languages) if reading is not None
                                   else np.zeros(Q.shape[0], dtype=bool), dtype=bool)
        own, lexical_used = self._add_lexical_evidence(own, question_texts, chunk_texts, lexical, notes, reading,
                                                       index, subjects)
        self.lexical_weight_ = (MARGIN_LEXICAL_WEIGHT if reading is None or reading.folds_word_forms
                                else INFLECTED_LEXICAL_WEIGHT)
        score, neighbours = self._smooth_over_neighbours(Q, own, lexical_used, notes)
        self._prepare_decision(score, max_sim, neighbours, notes)
        self.outlier_score_ = score
        self.max_similarity_ = max_sim
        self.nearest_chunk_ = nearest
        self.n_questions_ = Q.shape[0]
        self.warnings_ = notes
        self._check_subjects(question_texts, chunk_texts, chunk_documents, Q, C, reading, index, subjects)
        self.rules_ = RuleSet.for_reading(reading)
        self.evidence_ = Evidence(
            max_similarity=max_sim, level=self.question_support_threshold, support_margin=self.support_margin_,
            neighbour_margin=self.neighbour_margin_, outlier_score=score, center=self.center_, scale=self.scale_,
            lexical_coverage=self.lexical_coverage_, absent_words=self.absent_words_,
            subjects=self.subject_evidence_, closed=self.closed_, foreign=self.foreign_, reading=reading,
            nearest_document=None if chunk_documents is None else np.asarray(
                [str(chunk_documents[c]) for c in nearest], dtype=object),
        )
        self._show_subjects()
        self.is_outlier_ = self.decide(self.strictness)
        self.threshold_ = self._threshold(self.strictness)
        return self

    def _check_parameters(self) -> None:
        check_strictness(self.strictness)
        check_scalar(self.n_neighbors, "n_neighbors", int, min_val=1, hint="the default is 20")
        check_scalar(self.density_weight, "density_weight", float, min_val=0, max_val=1,
                     hint="0 is the plain best cosine; the default is 0.5")
        check_scalar(self.neighbor_weight, "neighbor_weight", float, min_val=0, max_val=1, include_boundaries="left",
                     hint="0 is no smoothing; the default is 0.5")
        if self.question_support_threshold is not None:
            check_scalar(self.question_support_threshold, "question_support_threshold", float, min_val=0, max_val=1,
                         include_boundaries="right",
                         hint="pass the calibrated level (coverage_core.stages.calibration), or None to decide "
                              "by the questions' robust z-scores")

    @staticmethod
    def _check_inputs(question_vectors, chunk_vectors, chunk_labels, question_texts, chunk_texts):
        """Unit-row float32 matrices, the labels as an array and the texts as
        lists of str (None stays None); InputError if they do not fit together."""
        Q = _as_matrix(question_vectors, "question_vectors")
        C = _as_matrix(chunk_vectors, "chunk_vectors")
        if Q.shape[1] != C.shape[1]:
            raise InputError(
                f"Questions have {Q.shape[1]} features but chunks have {C.shape[1]}; "
                "embed both with the same model."
            )
        if C.shape[0] < 1:
            raise InputError("chunk_vectors is empty; at least one chunk is needed.")
        if chunk_labels is not None:
            chunk_labels = np.asarray(chunk_labels)
            if chunk_labels.shape != (C.shape[0],):
                raise InputError(
                    f"chunk_labels must have one label per chunk ({C.shape[0]}), "
                    f"got shape {chunk_labels.shape}."
                )
        if (question_texts is None) != (chunk_texts is None):
            raise InputError(
                "Pass both question_texts and chunk_texts (for the lexical evidence) "
                "or neither (embeddings only); got only "
                f"{'question_texts' if chunk_texts is None else 'chunk_texts'}."
            )
        if question_texts is not None:
            question_texts = [t if isinstance(t, str) else "" for t in question_texts]
            chunk_texts = [t if isinstance(t, str) else "" for t in chunk_texts]
            if len(question_texts) != Q.shape[0] or len(chunk_texts) != C.shape[0]:
                raise InputError(
                    "question_texts and chunk_texts must have one text per vector: got "
                    f"{len(question_texts)} question texts for {Q.shape[0]} question "
                    f"vectors and {len(chunk_texts)} chunk texts for {C.shape[0]} chunk "
                    "vectors."
                )
        return Q, C, chunk_labels, question_texts, chunk_texts

    def _document_support(self, Q: np.ndarray, C: np.ndarray, chunk_labels):
        """Step 1, in one pass over the chunk x question similarities (:func:`similarity.best_matches`):
        each question's best cosine, its chunk, and the embedding score (sets
        ``embedding_score_``, and each chunk's best question in
        ``chunk_nearest_question_`` and ``chunk_max_similarity_``)."""
        if self.density_weight > 0:
            density = chunk_density(C, chunk_labels, random_state=self.random_state)
            penalty = self.density_weight * density
        else:
            penalty = None
        found = best_matches(C, Q, chunk_penalty=penalty, top_k=TOP_CHUNKS_KEPT)
        max_sim = found.question_similarity.astype(np.float32)
        support = found.question_support if penalty is not None else max_sim
        self.chunk_nearest_question_ = found.nearest_question
        self.chunk_max_similarity_ = found.chunk_similarity
        self.question_top_chunks_ = found.top_chunks
        self.question_top_similarities_ = found.top_similarities
        own = -support.astype(np.float64)
        self.embedding_score_ = own
        return max_sim, found.nearest_chunk.astype(np.int64), own

    def _add_lexical_evidence(self, own, question_texts, chunk_texts, lexical, notes, reading=None, index=None,
                              subjects=None):
        """Step 2: the score combined with the lexical evidence when there are
        texts, and whether it was used (sets ``lexical_coverage_``,
        ``lexical_chunk_`` and ``absent_words_``)."""
        n = len(own)
        self.lexical_coverage_ = np.full(n, np.nan)
        self.lexical_chunk_ = np.full(n, -1, dtype=np.int64)
        self.absent_words_ = [[] for _ in range(n)]
        if question_texts is None or not n:
            return own, False
        if lexical is None:
            likely = self.question_top_chunks_[:, :LIKELY_CHUNKS_PER_QUESTION]
            lexical = lexical_coverage(question_texts, chunk_texts, likely_chunks=likely, reading=reading, index=index,
                                       also=stems_to_read(subjects) if subjects is not None else ())
        elif len(lexical[0]) != n:
            raise InputError(
                f"lexical holds evidence for {len(lexical[0])} questions, not {n}; "
                "compute it with lexical_coverage() for these question texts."
            )
        coverage, best_chunk, absent = lexical
        foreign = self.foreign_
        if foreign.any():  # a question in another language than the documents' shares no words with them
            coverage = np.where(foreign, np.nan, coverage)
            absent = [[] if is_foreign else words for is_foreign, words in zip(foreign, absent)]
        self.lexical_coverage_ = coverage
        self.lexical_chunk_ = best_chunk
        self.absent_words_ = absent
        if foreign.all():
            notes.append("Every question is in another language than the documents, so their words are not "
                         "compared with the passages' words; only their meaning is.")
            return own, False
        return self._combine(own, 1.0 - coverage, notes)

    def _check_subjects(self, question_texts, chunk_texts, chunk_documents, Q, C, reading=None, index=None,
                        subjects=None) -> None:
        """Each question's named subjects and their presence in the passages (sets ``subject_evidence_`` and
        ``closed_``; see :func:`~coverage_core.stages.subjects.subject_presence`).

        A passage naming the subject that the question reaches at the question support level counts
        as retrieved too: a question that says "he" retrieves other people's passages first."""
        n = len(self.lexical_coverage_)
        self.subject_evidence_ = [[] for _ in range(n)]
        self.closed_ = np.zeros(n, dtype=bool)
        if question_texts is not None and n:
            # The passages the question retrieves by its gist; not the best chunk by words, which
            # for a subject named in one passage is that passage whatever it says of it.
            self.subject_evidence_ = subject_presence(
                question_texts, chunk_texts, self.question_top_chunks_,
                document_names=document_names_and_titles(chunk_texts, chunk_documents),
                content_words=True, reaches=self._reaches(Q, C), reading=reading, subjects=subjects, index=index,
            )
            # Yes-or-no questions are read in English only: elsewhere they open otherwise ("Est-ce que …").
            if reading is None or reading.english:
                self.closed_ = np.array([is_closed_question(t) for t in question_texts], dtype=bool)

    def _show_subjects(self) -> None:
        """The subject each question is shown with (sets ``subject_``, ``subject_kind_``, ``subject_passages_``,
        ``subject_retrieved_``, ``subject_company_`` and ``absent_subject_``): that of the first subject rule
        flagging it, else its least present named subject."""
        n = self.evidence_.n_questions
        self.subject_ = np.full(n, "", dtype=object)
        self.subject_kind_ = np.full(n, "", dtype=object)
        self.subject_passages_ = np.full(n, -1, dtype=np.int64)
        self.subject_retrieved_ = np.zeros(n, dtype=bool)
        self.subject_company_ = np.full(n, np.nan)
        subject_rules = [rule for rule in self.rules_.rules if not rule.needs_strictness]
        masks = self.rules_.masks(self.evidence_, self.strictness)
        self.absent_subject_ = np.zeros(n, dtype=bool)
        for rule in subject_rules:
            self.absent_subject_ |= masks[rule.name]
        weakest = next((rule for rule in subject_rules if rule.name == "absent_subject"), None)
        for q in range(n):
            shown = next((rule for rule in subject_rules if masks[rule.name][q]), weakest)
            found = None if shown is None else shown.subject(self.evidence_, q)
            if found is None:
                continue
            self.subject_[q] = found.subject.text
            self.subject_kind_[q] = found.subject.kind
            self.subject_passages_[q] = found.n_passages
            self.subject_retrieved_[q] = found.retrieved
            if shown.name == "name_in_passing" and masks[shown.name][q]:
                self.subject_company_[q] = found.company

    def _reaches(self, Q, C):
        """``reaches(q, passages)``: whether question ``q`` reaches one of ``passages``, by similarity at
        the question support level or by words (the passage holding most of its distinctive words,
        at least ``LEXICAL_CUT`` of them, is one of them); None without a support level."""
        level = self.question_support_threshold
        if level is None:
            return None
        by_words = np.where(np.nan_to_num(self.lexical_coverage_, nan=0.0) >= LEXICAL_CUT, self.lexical_chunk_, -1)

        def reaches(q: int, passages: np.ndarray) -> bool:
            if not len(passages):
                return False
            return by_words[q] in passages or float((C[passages] @ Q[q]).max()) >= level

        return reaches

    def _smooth_over_neighbours(self, Q, own, lexical_used, notes):
        """Step 3: each score averaged with those of the most similar
        questions (sets ``lof_score_``, from the same neighbour search), and those
        neighbours and their similarities (None with fewer than 2 questions)."""
        n = len(own)
        if n < 2:
            self.lof_score_ = np.full(n, np.nan)
            notes.append(
                f"LOF needs at least 2 questions, got {n}; lof_score_ is NaN."
            )
            return own, None
        k_lof = self.n_neighbors
        if k_lof >= n:
            notes.append(
                f"With only {n} questions, the local outlier score (lof_score) uses {n - 1} neighbours "
                f"instead of {k_lof}; it is reported only and decides nothing."
            )
            k_lof = n - 1
        k = min(QUESTION_NEIGHBORS, n - 1)
        with threadpool_limits(limits=1, user_api="blas"):
            neighbours, similarity = question_neighbours(Q, max(k, k_lof))
        # With fewer neighbours than usual their average is trusted less
        # (two questions would otherwise end up with the same score).
        weight = self.neighbor_weight * k / QUESTION_NEIGHBORS
        # With the lexical evidence the neighbours' median: a missing
        # word gives a large z, and a mean would pass part of it on to
        # every on-topic question that has the off-topic one among its
        # neighbours.
        smooth = np.median if lexical_used else np.mean
        score = (1 - weight) * own + weight * smooth(own[neighbours[:, :k]], axis=1)
        self.lof_score_ = lof_scores(neighbours, similarity, k_lof, notes)
        return score, (neighbours[:, :k], similarity[:, :k])

    def _prepare_decision(self, score, max_sim, neighbours, notes) -> None:
        """Steps 4 and 5: what the decision reads (sets ``center_``,
        ``scale_``, ``support_margin_`` and ``neighbour_margin_``), with a note when the relative
        rule can flag nothing."""
        n = len(score)
        question_support_threshold = self.question_support_threshold
        self.center_, scale = _robust_center_scale(score)
        self.scale_ = scale
        if question_support_threshold is not None:
            # The absolute rule needs no bulk of questions.
            self.support_margin_ = support_margin(
                max_sim, self.lexical_coverage_, float(question_support_threshold), self.lexical_weight_
            )
            self.neighbour_margin_ = (np.full(n, np.nan) if neighbours is None else neighbour_median(
                self.support_margin_, *neighbours, question_support_threshold, MIN_SHORT_NEIGHBOURS))
            return
        self.support_margin_ = self.neighbour_margin_ = None
        if n < MIN_QUESTIONS_FOR_DECISION:
            notes.append(
                f"Only {wording.count(n, 'question')}: too few to tell what is usual, so none is "
                "flagged automatically; exclude off-topic questions by hand."
            )
        elif scale == 0.0:
            notes.append("All questions score the same; none is flagged as off-topic.")

    @staticmethod
    def _combine(
        embedding: np.ndarray, lexical: np.ndarray, notes: list[str]
    ) -> tuple[np.ndarray, bool]:
        """Average of the two components' robust z-scores (weights
        ``1 - LEXICAL_WEIGHT`` and ``LEXICAL_WEIGHT``), and whether the
        lexical component was used.

        Questions without content words (NaN) take the lexical median (z 0).
        A component that does not vary carries no information and is left out.
        """
        known = np.isfinite(lexical)
        if not known.any():
            notes.append(
                "No question has a content word (all are stop or question words), so "
                "the lexical evidence is not used."
            )
            return embedding, False
        e_center, e_scale = _robust_center_scale(embedding)
        l_center, l_scale = _robust_center_scale(lexical[known])
        if l_scale == 0.0:
            return embedding, False
        z_lex = np.where(known, (np.where(known, lexical, l_center) - l_center) / l_scale, 0.0)
        if e_scale == 0.0:
            return z_lex, True
        z_emb = (embedding - e_center) / e_scale
        return (1.0 - LEXICAL_WEIGHT) * z_emb + LEXICAL_WEIGHT * z_lex, True

    def _threshold(self, strictness: float) -> float:
        if self.support_margin_ is not None:
            return margin_cut(strictness)
        return relative_cut(self.evidence_, strictness)

    def decide(self, strictness: float, without: Sequence[str] = ()) -> np.ndarray:
        """Decision for another strictness from the stored evidence, with no refit (so a slider costs little).

        Parameters
        ----------
        strictness : float in [0, 1]
        without : sequence of str, rules to leave out (:data:`coverage_core.offtopic.RULE_NAMES`)

        Returns
        -------
        is_outlier : ndarray of shape (n_questions,), bool; a higher strictness flags a superset
        """
        return self.rules_.decide(self.evidence_, strictness, without)

    def flagging_rules(self, strictness: float, without: Sequence[str] = ()) -> np.ndarray:
        """The name of the rule that explains each question's flag at ``strictness`` ("" when on-topic)."""
        return self.rules_.first_rules(self.evidence_, strictness, without)

    _SUPPORT_RULES = ("no_support", "missing_words", "like_questions")

    def _short_of_support(self, strictness: float, neighbours: bool = True) -> np.ndarray:
        """The support rules' decision alone, without the subjects; with ``neighbours`` False, without the
        questions flagged for their like questions' support."""
        kept = [name for name in self._SUPPORT_RULES if neighbours or name != "like_questions"]
        left_out = [name for name in self.rules_.names if name not in kept]
        return self.rules_.decide(self.evidence_, strictness, without=left_out)

    def offtopic_score(self, strictness: float) -> np.ndarray:
        """The off-topic score a user reads: > 0 exactly for the questions :meth:`decide` flags.

        With the support level, the shortfall below the cut in units of
        evidence, ``margin_cut(strictness) - support_margin``; without it, the
        robust z-score's excess over its cut, ``(outlier_score - threshold) /
        scale`` (NaN when no decision is possible). A flagged question scores
        the largest of its flagging rules' scores (at least 1 for a subject rule).
        """
        check_strictness(strictness)
        if self.support_margin_ is not None:
            base = margin_cut(strictness) - np.asarray(self.support_margin_, dtype=np.float64)
        elif np.isfinite(self._threshold(strictness)):
            base = (self.outlier_score_ - self._threshold(strictness)) / self.scale_
        else:
            base = np.full(self.n_questions_, np.nan)
        return self.rules_.scores(self.evidence_, strictness, base)

    def explain(self, strictness: float) -> tuple[np.ndarray, list[str]]:
        """Why each question is or is not off-topic at ``strictness``: a code of
        :data:`OFFTOPIC_REASONS` ("" when on-topic) and one plain sentence
        with the numbers behind it ("" when on-topic), from the first rule that flags it
        (:meth:`flagging_rules`)."""
        codes, details, _ = self.rules_.explain(self.evidence_, strictness)
        return codes, details
