"""Every session-state key of the dashboard, and typed accessors for them.

Pages never spell a session-state key: they use the constants and functions
here, so what a session keeps is listed in one place.

What lives in a session (one browser tab; nothing is shared between sessions,
and nothing here is ever written to disk, exported or logged):

========================  =====================================================
key                       value
========================  =====================================================
``DOCUMENTS``             :class:`LoadedDocuments` — readable documents + warnings (or the
                          passages of a vector file or a saved analysis, with their vectors)
``QUESTION_FILE``         :class:`QuestionFile` — the uploaded CSV's name and bytes
``QUESTION_COLUMN``       the question column the user chose (None: detected)
``QUESTIONS``             :class:`~coverage_core.types.QuestionSet` read with it
``SETTINGS``              :class:`Settings` — every analysis parameter
``EMBED_API_KEY``         embedding provider key typed in this session (secret)
``LLM_API_KEY``           LLM key typed in this session (secret)
``PRICE_TABLE``           the price table the editor starts from (pandas)
``PRICE_TABLE_EDITED``    the price editor's latest output (``PRICE_TABLE`` is its base)
``CORPUS``                :class:`Stage` of the embedded corpus
``QUESTION_VECTORS``      :class:`Stage` of the embedded questions
``TUNING``                :class:`~coverage_core.session.AnalysisSession` — τ, clusterings,
                          screeners, index, last measured analysis
``OVERRIDES``             :class:`Overrides` — questions forced in or out
``GAPS``                  :class:`Stage` of the analysis with its gaps
``PROJECTION``            :class:`Stage` of the 2-D map (keyed by the vectors only)
``SUGGESTIONS_BASE``      suggestions table given to the editor
``SUGGESTIONS_EDITED``    the editor's latest output (survives page changes)
``SUGGESTIONS_FOR``       key of the gaps the suggestions were made from
``IMPROVED``              :class:`~ui.views.gaps.Improvement` — last "Apply" result, with the accepted rows
``COMPARISON``            :class:`~ui.views.compare.Comparison` — last comparison
``FITNESS_THRESHOLD``     similarity below which a question looks unanswerable
``DOCUMENT_UPLOAD``       signature of the uploaded files last read
``COLUMN_ERROR``          why the chosen question column could not be used
``CHUNK_COUNTS``          :class:`Stage` of chunks per document at the current chunk settings
``RETRIEVAL``             :class:`Stage` of the retrieval check (k, column)
``CHUNKING_GRID``         the chunking grid the editor starts from (pandas)
``CHUNKING_GRID_EDITED``  the grid editor's latest output (``CHUNKING_GRID`` is its base)
``CHUNKING_COMPARISON``   :class:`Stage` of the chunking comparison table
``DIMENSION_SWEEP``       :class:`Stage` of the dimension sweep table
``MDS``                   :class:`Stage` of the MDS map points
``SUBQUESTIONS``          :class:`Stage` of the sub-question coverage result
``TRAFFIC_LOG``           the production query log read on the traffic page (masked, repeats merged)
``TRAFFIC_LOG_FILE``      the upload that log was read from (so a rerun does not read it again)
``TRAFFIC``               :class:`Stage` of the production-traffic comparison
``VECTOR_UPLOAD``         (signature, error or None) of the vector file last read
``SAVED_OPENED``          signature of the saved analysis last opened (zip or folder)
``SAVED_GAPS``            :class:`Stage` of the gaps a saved analysis brought, keyed by the analysis it
                          was opened as (the Gap page shows them instead of writing new ones)
``SAVED_DECISIONS``       the suggestion decisions a saved analysis brought
                          (:class:`~coverage_core.decisions.SuggestionDecision`), until the Gap page
                          puts them back into its suggestions table
``LANGUAGES``             :class:`Stage` of the loaded documents' and questions' languages (Upload page)
``GAP_FOCUS``             key of the gap the Gap analysis page shows open (set by a Results link)
``PROVIDER_NOTICE``       the sentence naming embedding settings a saved analysis brought, until
                          the user confirms them on Configure (:func:`embed_api_key`)
``HISTORY_FILE``          the history file the user chose on the History page (None: the server's)
``HISTORY_URL``           the history database URL typed on the History page (secret: may hold a
                          password; shown only redacted)
``HISTORY_AUTO``          whether each finished analysis is recorded in the history (None: the server's
                          choice, on when it names a history)
``HISTORY_RECORDED``      {analysis key: run} of the analyses recorded automatically (each once)
``HISTORY_PICKS``         the runs last picked on the History page's chart (at most two, oldest pick first)
``HISTORY_STALE``         :class:`~coverage_core.history.stale.ReplacementTarget` of the History page's last
                          comparison: the changed documents its stale questions cite, with their passages
                          at the earlier run (the Gap page writes replacement questions for the new ones)
========================  =====================================================

A Results link to one gap opens the Gap analysis page with the query parameter
``GAP_PARAM`` (the gap's key: a topic gap's cluster); the page moves it into ``GAP_FOCUS``, shows
that gap open and scrolls to it once.

The secrets (the two keys, and a history database URL) are kept apart from
:class:`Settings` on purpose: settings go into reports, secrets never do. No
file, saved analysis or URL parameter chooses where a secret goes: a saved analysis that names other embedding
settings makes the session forget both typed keys, and until the user
confirms those settings on Configure (``PROVIDER_NOTICE``) no embedding key
is handed out at all, not even the server's own (:func:`embed_api_key`).

Widget keys (``W_*``) are the keys of widgets whose value must be read or
seeded from code. Streamlit deletes a widget's state when a page without it
runs, so values that must outlive a page change are copied into the keys
above.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import streamlit as st

from coverage_core.errors import CoverageError, InputError
from coverage_core.session import MISSING, AnalysisSession, EmbeddedInputs, StageKey, check_key, memo as keep_in
from ui import engine
from ui.settings import Settings

T = TypeVar("T")

# ---------------------------------------------------------------- data keys (described in the table above)
DOCUMENTS = "documents"
QUESTION_FILE = "question_file"
QUESTION_COLUMN = "question_column"
QUESTIONS = "questions"
SETTINGS = "settings"
EMBED_API_KEY = "embed_api_key"
LLM_API_KEY = "llm_api_key"
PRICE_TABLE = "price_table"
PRICE_TABLE_EDITED = "price_table_edited"
CORPUS = "corpus"
QUESTION_VECTORS = "question_vectors"
TUNING = "tuning"
OVERRIDES = "overrides"
GAPS = "gaps"
PROJECTION = "projection"
SUGGESTIONS_BASE = "suggestions_base"
SUGGESTIONS_EDITED = "suggestions_edited"
SUGGESTIONS_FOR = "suggestions_for"
IMPROVED = "improved"
COMPARISON = "comparison"
FITNESS_THRESHOLD = "fitness_threshold"
DOCUMENT_UPLOAD = "document_upload"
COLUMN_ERROR = "column_error"
CHUNK_COUNTS = "chunk_counts"
RETRIEVAL = "retrieval"
CHUNKING_GRID = "chunking_grid"
CHUNKING_GRID_EDITED = "chunking_grid_edited"
CHUNKING_COMPARISON = "chunking_comparison"
DIMENSION_SWEEP = "dimension_sweep"
MDS = "mds"
SUBQUESTIONS = "subquestions"
TRAFFIC_LOG = "traffic_log"
TRAFFIC_LOG_FILE = "traffic_log_file"
TRAFFIC = "traffic"
VECTOR_UPLOAD = "vector_upload"
SAVED_OPENED = "saved_opened"
SAVED_GAPS = "saved_gaps"
SAVED_DECISIONS = "saved_decisions"
LANGUAGES = "languages"
GAP_FOCUS = "gap_focus"
PROVIDER_NOTICE = "provider_notice"
HISTORY_FILE = "history_file"
HISTORY_URL = "history_url"
HISTORY_AUTO = "history_auto"
HISTORY_RECORDED = "history_recorded"
HISTORY_PICKS = "history_picks"
HISTORY_STALE = "history_stale"
GAP_PARAM = "gap"  # the query parameter of a Results link to one gap: its key (a topic gap's cluster)

# ------------------------------------------------------------- widget keys
W_DOC_UPLOADER = "w_doc_uploader"
W_CSV_UPLOADER = "w_csv_uploader"
W_PDF_PASSWORD = "w_pdf_password"
W_QUESTION_COLUMN = "w_question_column"
W_EXAMPLE = "w_example"
W_KNOWLEDGE_BASE = "w_knowledge_base"  # documents, a vector file, or a saved analysis
W_VECTOR_UPLOADER = "w_vector_uploader"
W_VECTOR_SOURCE = "w_vector_source"  # where the vectors are: an uploaded file, or a Qdrant or Chroma folder
W_STORE_FOLDER = "w_store_folder"
W_STORE_COLLECTION = "w_store_collection"
W_STORE_VECTOR = "w_store_vector"  # a Qdrant collection's named vector (blank: its only one)
W_READ_STORE = "w_read_store"
W_SAVED_UPLOADER = "w_saved_uploader"
W_SAVED_FOLDER = "w_saved_folder"
W_OPEN_SAVED = "w_open_saved"
W_PROVIDER = "w_provider"
W_MODEL = "w_model"
W_DIMENSIONS = "w_dimensions"
W_BASE_URL = "w_base_url"
W_EMBED_KEY = "w_embed_key"
W_CONFIRM_PROVIDER = "w_confirm_provider"
W_CHUNK_SIZE = "w_chunk_size"
W_CHUNK_OVERLAP = "w_chunk_overlap"
W_AUTO_K = "w_auto_k"
W_K = "w_k"
W_AUTO_STRICTNESS = "w_auto_strictness"
W_STRICTNESS = "w_strictness"
W_MULTI_THRESHOLD = "w_multi_threshold"
W_MULTI_N = "w_multi_n"
W_GAP_THRESHOLD = "w_gap_threshold"
W_AUTO_SUPPORT = "w_auto_support"
W_SUPPORT = "w_support"
W_GAP_RULE = "w_gap_rule"
W_TESTED_SHARE_CUT = "w_tested_share_cut"
W_LLM_ON = "w_llm_on"
W_LLM_MODEL = "w_llm_model"
W_LLM_BASE_URL = "w_llm_base_url"
W_LLM_KEY = "w_llm_key"
W_PRICE_EDITOR = "w_price_editor"
W_COST_OK = "w_cost_ok"
W_RUN = "w_run"
W_FORCE_INCLUDE = "w_force_include"
W_FORCE_EXCLUDE = "w_force_exclude"
W_SUGGESTIONS_EDITOR = "w_suggestions_editor"
W_APPLY = "w_apply"
W_LLM_GAPS = "w_llm_gaps"
W_WRITE_MORE_GAPS = "w_write_more_gaps"
W_WRITE_REPLACEMENTS = "w_write_replacements"  # Gap page: replacement questions for a stale question's passages
W_FITNESS_THRESHOLD = "w_fitness_threshold"
W_FITNESS_ONLY_WEAK = "w_fitness_only_weak"
W_COMPARE_SOURCE = "w_compare_source"
W_COMPARE_UPLOADER = "w_compare_uploader"
W_COMPARE_RUN = "w_compare_run"
W_COMPARE_COLUMN = "w_compare_column"
W_MAP_METHOD = "w_map_method"
W_RESULTS_TABS = "w_results_tabs"
W_REVIEW_OFF_TOPIC = "w_review_off_topic"
W_SHOW_ALL_QUESTIONS = "w_show_all_questions"
W_GAP_TABS = "w_gap_tabs"
W_GAP_CARD = "w_gap_card"  # prefix of each gap's expander on the Gap analysis page (gap_card_key)
W_RESET = "w_reset"
W_DOWNLOAD_CSV = "w_download_csv"
W_DOWNLOAD_JSON = "w_download_json"
W_DOWNLOAD_HTML = "w_download_html"
W_DOWNLOAD_SAVED = "w_download_saved"
W_DOWNLOAD_SUGGESTIONS = "w_download_suggestions"
# Gap page: sending the accepted questions to a Phoenix dataset (ui/phoenix_push.py). The key field's value is a
# secret: it stays in this session's memory, is sent to the server typed beside it only, and is never saved.
W_PHOENIX_SERVER = "w_phoenix_server"
W_PHOENIX_DATASET = "w_phoenix_dataset"
W_PHOENIX_KEY = "w_phoenix_key"
W_PHOENIX_SEND = "w_phoenix_send"
# Retrieval page
W_RETRIEVAL_K = "w_retrieval_k"
W_RELEVANT_COLUMN = "w_relevant_column"
W_GRID_EDITOR = "w_grid_editor"
W_COMPARE_CHUNKINGS = "w_compare_chunkings"
W_CHUNKING_COST_OK = "w_chunking_cost_ok"
# Knowledge-base fitness page
W_LABEL_COLUMN = "w_label_column"
W_USE_BEST_THRESHOLD = "w_use_best_threshold"
W_FITNESS_VIEW = "w_fitness_view"
W_RUN_SWEEP = "w_run_sweep"
W_SWEEP_API = "w_sweep_api"  # consent to re-embed the sweep sizes through the OpenAI API
# Sub-questions page
W_SUB_SELECTION = "w_sub_selection"
W_TRAFFIC_UPLOAD = "w_traffic_upload"
W_TRAFFIC_ADD = "w_traffic_add"
W_SUB_RUN = "w_sub_run"
W_SUB_CORE_WEIGHT = "w_sub_core_weight"
W_SUB_BACKGROUND_WEIGHT = "w_sub_background_weight"
W_SUB_FOLLOW_UP_WEIGHT = "w_sub_follow_up_weight"
W_SUB_THRESHOLD = "w_sub_threshold"
# History page, and Save to history on Results
W_HISTORY_FILE = "w_history_file"
W_HISTORY_URL = "w_history_url"
W_HISTORY_AUTO = "w_history_auto"
W_HISTORY_USE_FILE = "w_history_use_file"
W_HISTORY_LABEL = "w_history_label"  # which label's runs the page shows
W_HISTORY_CHART = "w_history_chart"
W_HISTORY_EARLIER = "w_history_earlier"
W_HISTORY_LATER = "w_history_later"
W_HISTORY_DECISIONS = "w_history_decisions"  # the run whose decisions on suggested questions are listed
W_SAVE_LABEL = "w_save_label"
W_SAVE_HISTORY = "w_save_history"

# Widgets of the analysis settings (Configure): forgotten when a saved analysis brings its own settings.
SETTINGS_WIDGETS = (
    W_PROVIDER, W_MODEL, W_DIMENSIONS, W_BASE_URL, W_EMBED_KEY, W_CHUNK_SIZE, W_CHUNK_OVERLAP, W_AUTO_K, W_K,
    W_AUTO_STRICTNESS, W_STRICTNESS, W_MULTI_THRESHOLD, W_MULTI_N, W_GAP_THRESHOLD, W_AUTO_SUPPORT, W_SUPPORT,
    W_GAP_RULE, W_TESTED_SHARE_CUT,
)

# Keys a new upload or a reset makes stale (everything computed from inputs).
DERIVED = (
    CORPUS, QUESTION_VECTORS, TUNING, OVERRIDES, GAPS, PROJECTION,
    SUGGESTIONS_BASE, SUGGESTIONS_EDITED, SUGGESTIONS_FOR, IMPROVED, COMPARISON,
    RETRIEVAL, CHUNKING_COMPARISON, DIMENSION_SWEEP, MDS, SUBQUESTIONS, TRAFFIC, GAP_FOCUS,
    SAVED_GAPS, SAVED_DECISIONS,
)
# Keys that refer to question rows: a different question set makes them stale.
QUESTION_DERIVED = (
    OVERRIDES, GAPS, SUGGESTIONS_BASE, SUGGESTIONS_EDITED, SUGGESTIONS_FOR, IMPROVED, COMPARISON,
    RETRIEVAL, CHUNKING_COMPARISON, DIMENSION_SWEEP, MDS, SUBQUESTIONS, TRAFFIC, SAVED_GAPS, SAVED_DECISIONS,
    W_FORCE_INCLUDE, W_FORCE_EXCLUDE, W_SUGGESTIONS_EDITOR, W_RELEVANT_COLUMN, W_LABEL_COLUMN, W_SUB_SELECTION,
)


# ------------------------------------------------------------------ values
@dataclass(frozen=True)
class LoadedDocuments:
    """The readable documents, the warnings about the rest, and what was read.

    ``source`` is "upload", "example", "vectors" (a vector file) or "saved"
    (a saved analysis). The last two bring their passages already embedded:
    ``passages`` is that :class:`~coverage_core.results.Corpus` (its
    documents are rebuilt from the passages), and ``chunking`` the chunking
    it was made with (None when unknown: a vector store chunked it).
    """

    fingerprint: str
    names: tuple[str, ...]
    documents: tuple = ()
    warnings: tuple[str, ...] = ()
    source: str = "upload"
    passages: Any = field(default=None, repr=False, compare=False)
    chunking: Any = None

    @property
    def embedded(self) -> bool:
        """Whether the passages came with their vectors (nothing to chunk or embed)."""
        return self.passages is not None


@dataclass(frozen=True)
class QuestionFile:
    name: str
    data: bytes = field(repr=False)
    source: str = "upload"


@dataclass(frozen=True)
class Overrides:
    """Question rows the user forced in (include) or out (exclude) of the inliers."""

    include: frozenset[int] = frozenset()
    exclude: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Stage:
    """A computed value and the key of the inputs it was computed from."""

    key: Any
    value: Any


# --------------------------------------------------------------- accessors
def get(key: str, default: Any = None) -> Any:
    return st.session_state.get(key, default)


def put(key: str, value: Any) -> None:
    st.session_state[key] = value


def drop(*keys: str) -> None:
    for key in keys:
        st.session_state.pop(key, None)


class SessionSlot:
    """A :func:`coverage_core.session.memo` slot holding one :class:`Stage` in the session key ``name``."""

    def __init__(self, name: str):
        self.name = name

    def get(self, key: Any, missing: Any = MISSING) -> Any:
        stored = st.session_state.get(self.name)
        return stored.value if isinstance(stored, Stage) and stored.key == key else missing

    def put(self, key: Any, value: Any) -> None:
        st.session_state[self.name] = Stage(check_key(key), value)


def memo(slot: str, key: Any, compute: Callable[[], T]) -> T:
    """The value of session slot ``slot`` computed from ``key`` (a frozen key dataclass), or ``compute()`` stored there."""
    return keep_in(SessionSlot(slot), key, compute)


def stage(slot: str, key: Any) -> Any:
    """The value in session slot ``slot`` if it was computed from ``key``, else None."""
    return SessionSlot(slot).get(key, None)


def put_stage(slot: str, key: Any, value: Any) -> Any:
    """Store ``value`` in session slot ``slot`` as computed from ``key``; returns ``value``."""
    SessionSlot(slot).put(key, value)
    return value


def stored_stage(slot: str) -> Stage | None:
    """Whatever session slot ``slot`` holds, with the key it was computed from (None if empty)."""
    stored = st.session_state.get(slot)
    return stored if isinstance(stored, Stage) else None


def _kept(key: str, kind: type[T]) -> T:
    """The ``kind`` session state holds at ``key``; a new ``kind()`` is stored there first when it holds none."""
    value = st.session_state.get(key)
    if not isinstance(value, kind):
        value = kind()
        st.session_state[key] = value
    return value


def settings() -> Settings:
    return _kept(SETTINGS, Settings)


def update_settings(**changes: Any) -> Settings:
    value = settings().replace(**changes)
    st.session_state[SETTINGS] = value
    return value


def documents() -> LoadedDocuments | None:
    return st.session_state.get(DOCUMENTS)


def question_file() -> QuestionFile | None:
    return st.session_state.get(QUESTION_FILE)


def questions():
    """The current :class:`~coverage_core.types.QuestionSet`, or None."""
    return st.session_state.get(QUESTIONS)


def overrides() -> Overrides:
    value = st.session_state.get(OVERRIDES)
    return value if isinstance(value, Overrides) else Overrides()


def set_overrides(include, exclude) -> Overrides:
    value = Overrides(frozenset(int(r) for r in include), frozenset(int(r) for r in exclude))
    st.session_state[OVERRIDES] = value
    return value


def analysis_session() -> AnalysisSession:
    """The session's :class:`~coverage_core.session.AnalysisSession` (created on first use)."""
    return _kept(TUNING, AnalysisSession)


def input_slots() -> tuple[SessionSlot, SessionSlot]:
    """Where the session's embedded corpus and questions are kept (``AnalysisSession.embed``'s ``keep_in``)."""
    return SessionSlot(CORPUS), SessionSlot(QUESTION_VECTORS)


def stored_inputs() -> EmbeddedInputs | None:
    """The embedded corpus and questions of the last run, whatever the settings now."""
    corpus, vectors = stored_stage(CORPUS), stored_stage(QUESTION_VECTORS)
    if corpus is None or vectors is None:
        return None
    if corpus.key.embedding != vectors.key.embedding:  # embedded with different models
        return None
    questions_, embedding = vectors.value
    return EmbeddedInputs(corpus.value, corpus.key, questions_, embedding, vectors.key)


def wanted_keys() -> tuple[StageKey, StageKey] | None:
    """The corpus and question keys the current inputs and settings would be embedded under."""
    docs, asked = documents(), questions()
    if docs is None or asked is None:
        return None
    try:
        if docs.embedded:
            corpus = engine.embedded_corpus_key(docs.fingerprint, settings(), docs.chunking)
        else:
            corpus = engine.corpus_key(docs.fingerprint, settings())
        return corpus, engine.question_key(engine.questions_fingerprint(asked), settings())
    except CoverageError:  # settings the core rejects (the Configure page says why)
        return None


def is_stale(inputs: EmbeddedInputs) -> bool:
    """True when the inputs or the embedding settings differ from those of ``inputs``."""
    if documents() is None or questions() is None:
        return False
    wanted = wanted_keys()
    return wanted is None or (inputs.corpus_key, inputs.question_key) != wanted


def typed_embed_key() -> str | None:
    """The embedding key typed in this session, for the Configure page to say one is set (never sent from here)."""
    return st.session_state.get(EMBED_API_KEY) or None


def embed_api_key() -> str | None:
    """The typed embedding key for a request about to be sent (None: the server's environment decides).

    Raises InputError while settings a saved analysis brought wait for the
    user's confirmation (:func:`provider_notice`): the embedder is made
    through here, so neither a typed key nor the server's own reaches a
    server the file named.
    """
    notice = provider_notice()
    if notice is not None:  # said where it may be shown: on Configure too, so it names no page
        raise InputError(engine.notice_here(notice))
    return typed_embed_key()


def provider_notice() -> str | None:
    """The sentence naming embedding settings a saved analysis brought and the user has not confirmed, or None."""
    return st.session_state.get(PROVIDER_NOTICE) or None


def hold_provider_settings(notice: str) -> None:
    """Settings from a file replaced the user's: forget every typed key and hold them until confirmed."""
    drop(EMBED_API_KEY, LLM_API_KEY, W_EMBED_KEY, W_LLM_KEY)
    put(PROVIDER_NOTICE, notice)


def confirm_provider_settings() -> None:
    """The user confirmed (or chose) the embedding settings on Configure: requests may be sent again."""
    drop(PROVIDER_NOTICE)


def llm_api_key() -> str | None:
    return st.session_state.get(LLM_API_KEY) or None


def suggestion_decisions(analysis_key: Any) -> list | None:
    """The user's decisions about the suggested questions of the analysis of ``analysis_key``
    (:func:`ui.views.decisions.decisions_of`): from the suggestions table when it was made from that analysis's
    gaps, else those a saved analysis brought that the Gap page has not shown yet; None when neither."""
    from ui.views.decisions import decisions_of

    table = st.session_state.get(SUGGESTIONS_EDITED)
    if table is None:
        table = st.session_state.get(SUGGESTIONS_BASE)
    made_for, gaps = st.session_state.get(SUGGESTIONS_FOR), stored_stage(GAPS)
    if (table is not None and made_for is not None and gaps is not None and analysis_key is not None
            and getattr(made_for, "source", None) == analysis_key and gaps.key.source == analysis_key):
        inputs = stored_inputs()
        chunk_texts = [chunk.text for chunk in inputs.corpus.chunks] if inputs is not None else []
        return decisions_of(table, gaps.value.gaps, chunk_texts)
    pending = st.session_state.get(SAVED_DECISIONS)
    return list(pending) if pending is not None else None


def clear_derived() -> None:
    """Forget everything computed from the inputs (new upload, reset)."""
    drop(*DERIVED)


def gap_card_key(key: int | str) -> str:
    """The key of a gap's expander on the Gap analysis page (its CSS class is ``st-key-`` + the key); ``key`` is
    the gap's (``suggest.document_gaps.gap_key``: its cluster for a topic gap)."""
    return f"{W_GAP_CARD}_{key}"


def seed_widget(widget_key: str, value: Any) -> None:
    """Give a widget its remembered value when it is (re)created on a page: ``value`` the first time, else the
    value it last had, on this page or on another one with a widget of the same key.

    The value is written back even when present: a value that a widget of another page set belongs to that
    widget, and this page's widget of the same key would start from its own default instead (Results' tuning
    controls then showed K = 1 and strictness 0 on Configure, ready to be applied by the next change).
    """
    st.session_state[widget_key] = st.session_state[widget_key] if widget_key in st.session_state else value
