"""Shared page steps: load inputs, embed with progress, get the current analysis.

Pages stay thin: they read widgets and call these helpers, which call
:mod:`ui.engine` (the core calls) and keep results in session state through
:mod:`ui.state`. Every user-facing failure is a
:class:`~coverage_core.errors.CoverageError` shown with ``st.error``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from coverage_core.embeddings import EmbeddingCache, environment_key, key_variable, make_embedder
from coverage_core.errors import CoverageError
from coverage_core.inputs.ingest import read_documents, read_questions, read_uploaded_documents
from ui import engine, formats, state
from ui.messages import user_message, user_messages

PROJECT = Path(__file__).resolve().parents[1]
EXAMPLE = PROJECT / "examples" / "wiki-qa"

CONFIGURE_PAGE = "pages/2_configure.py"
RESULTS_PAGE = "pages/3_results.py"
GAPS_PAGE = "pages/4_gaps.py"


# ---------------------------------------------------------------- pages
def start_page(title: str, intro: str | None = None) -> None:
    """Every page's first lines: the shared sidebar (:func:`ui.sidebar.render`), the title, what the page does."""
    from ui import sidebar

    sidebar.render()
    st.title(title)
    if intro:
        st.write(intro)


# ---------------------------------------------------------------- resources
@st.cache_resource(show_spinner="Loading the local embedding model…")
def local_embedder(model: str):
    """The local model, loaded once per server process (it holds no user data)."""
    return make_embedder("local", model or None)


def embedder():
    """The embedder for the current settings."""
    return embedder_for(engine.embedding_config(state.settings()))


def embedder_for(source, dimensions: int | None = None):
    """The embedder of ``source``: embedded inputs (to embed new texts in their space) or an EmbeddingConfig.

    ``dimensions`` asks an API model for shorter vectors (the dimension
    sweep). The local model is loaded once per server; API embedders are
    never cached, since they hold the session's key.
    """
    config = source.embedding if isinstance(source, engine.EmbeddedInputs) else source
    if config.provider == "local":
        return local_embedder(config.model or "")
    return make_embedder(
        config.provider, config.model, dimensions=dimensions or config.dimensions,
        api_key=state.embed_api_key(), base_url=config.base_url,
    )


def embedding_cache() -> EmbeddingCache:
    """The on-disk cache (``$COVERAGE_CORE_CACHE_DIR`` or the user cache folder)."""
    return EmbeddingCache()


def embed_key_variable(settings: state.Settings) -> str:
    """The server environment variable an API embedder with these settings may take its key from.

    The core decides (:func:`coverage_core.embeddings.key_variable`): the
    provider's own variable for its own endpoint, EMBEDDING_API_KEY for a
    custom base URL, so the page and the embedder always agree.
    """
    return key_variable(settings.provider, settings.base_url or None)


def env_key_present(settings: state.Settings) -> bool:
    """Whether the server's environment holds the key these settings would use."""
    return environment_key(settings.provider, settings.base_url or None) is not None


# ---------------------------------------------------------------- inputs
def show_warnings(messages: Sequence[str]) -> None:
    """Core warnings, in the dashboard's words (:func:`ui.messages.user_message`)."""
    for message in user_messages(messages):
        st.warning(message, icon=":material/warning:")


def show_error(error: object) -> None:
    """A core error, in the dashboard's words."""
    st.error(user_message(error))


def set_documents(
    document_set, names: Sequence[str], source: str, *, passages=None, chunking=None, fingerprint: str | None = None
) -> state.LoadedDocuments:
    """Keep what was read; ``passages`` is the embedded corpus of a vector file or saved analysis (see LoadedDocuments)."""
    loaded = state.LoadedDocuments(
        fingerprint=fingerprint or engine.documents_fingerprint(document_set.documents),
        names=tuple(names),
        documents=tuple(document_set.documents),
        warnings=tuple(str(w) for w in document_set.warnings),
        source=source,
        passages=passages,
        chunking=chunking,
    )
    previous = state.documents()
    if previous is None or previous.fingerprint != loaded.fingerprint:
        state.clear_derived()
    state.put(state.DOCUMENTS, loaded)
    _inputs_changed()
    return loaded


def _inputs_changed() -> None:
    """Redraw the sidebar's inputs now (it was drawn before this page read them)."""
    from ui import sidebar

    sidebar.refresh()


def knowledge_base_kind() -> str:
    """What the loaded knowledge base is: "vectors", "saved", or "documents" (also before anything is loaded)."""
    documents = state.documents()
    return documents.source if documents is not None and documents.source in ("vectors", "saved") else "documents"


def documents_sentence(documents: state.LoadedDocuments, n_passages: int, settings: state.Settings) -> str:
    """What was loaded, in one sentence for the Upload page."""
    if documents.source == "vectors":
        return (
            f"{n_passages:,} passages with their vectors ({documents.passages.vectors.shape[1]} dimensions) in "
            f"{len(documents.documents)} document(s), from {documents.names[0]}."
        )
    if documents.source == "saved":
        return f"A saved analysis: {n_passages:,} passages with their vectors in {len(documents.documents)} document(s)."
    origin = "the bundled example" if documents.source == "example" else "your upload"
    return (
        f"{len(documents.documents)} readable document(s) from {origin}, "
        f"{n_passages:,} chunks at {settings.chunk_size:,} characters with {settings.chunk_overlap:,} overlap."
    )


def load_uploaded_documents(files: Sequence[tuple[str, bytes]], password: str | None) -> state.LoadedDocuments:
    """Read uploads (raises InputError when none is readable)."""
    document_set = read_uploaded_documents(list(files), pdf_password=password or None)
    return set_documents(document_set, [name for name, _ in files], "upload")


def load_vector_file(name: str, data: bytes) -> state.LoadedDocuments | None:
    """Read an uploaded Parquet file of passage vectors once per content (raises InputError when nothing is usable).

    The questions are embedded later with the model chosen on Configure,
    which must be the one that made the vectors (checked when the analysis runs).
    """
    from coverage_core.types import DocumentSet
    from coverage_core.inputs.vector_store import read_vectors_bytes

    from coverage_core.errors import InputError

    signature = engine.digest(name, data)
    last = state.get(state.VECTOR_UPLOAD)
    if last is not None and last[0] == signature:  # read already: say the same again, without reading it again
        if last[1] is not None:
            raise InputError(last[1])
        return state.documents()
    try:
        found = read_vectors_bytes(data, name)
    except CoverageError as error:
        state.put(state.VECTOR_UPLOAD, (signature, str(error)))
        raise
    state.put(state.VECTOR_UPLOAD, (signature, None))
    corpus = found.corpus
    document_set = DocumentSet(list(corpus.documents), list(found.warnings))
    return set_documents(
        document_set, [name], "vectors", passages=corpus, fingerprint=engine.corpus_fingerprint(corpus)
    )


def saved_analysis_root():
    """The folder the operator allows saved analyses to be opened from (``$COVERAGE_CORE_SAVED_ANALYSES``), or None."""
    from coverage_core.inputs.saved_analysis import allowed_root

    return allowed_root()


def saved_analysis_choices() -> list[str]:
    """The saved analyses in the allowed folder, by folder name (empty without one)."""
    from coverage_core.inputs.saved_analysis import saved_folders

    root = saved_analysis_root()
    return saved_folders(root) if root is not None else []


def open_saved_analysis(data: bytes | None = None, name: str | None = None, folder: str | None = None) -> None:
    """Open a saved analysis: an uploaded zip (``data``, ``name``) or a sub-folder of the allowed folder.

    Its passages, questions, vectors, clusters, support level and settings
    go into the session as if the analysis had just run, so nothing is
    embedded again. Raises InputError for a folder or zip that is not a
    complete saved analysis.
    """
    from coverage_core.inputs import saved_analysis
    from coverage_core.errors import InputError
    from coverage_core.types import DocumentSet

    if data is not None:
        saved = saved_analysis.load_analysis(data, name or "the zip file")
        signature = engine.digest("zip", name, data)
    else:
        root = saved_analysis_root()
        if root is None or folder is None:
            raise InputError("No folder of saved analyses is set up on this server.")
        saved = saved_analysis.load_analysis(saved_analysis.saved_folder(root, folder), folder)
        signature = engine.digest("folder", folder, saved.manifest.get("created"))
    corpus = saved.corpus
    fingerprint = engine.corpus_fingerprint(corpus)
    state.clear_derived()
    state.drop(state.DOCUMENTS, *state.SETTINGS_WIDGETS, state.W_QUESTION_COLUMN, state.COLUMN_ERROR,
               state.VECTOR_UPLOAD)
    settings = engine.saved_settings(saved, state.settings())
    state.put(state.SETTINGS, settings)
    set_documents(
        DocumentSet(list(corpus.documents), []), [d.name for d in corpus.documents], "saved",
        passages=corpus, chunking=saved.chunking, fingerprint=fingerprint,
    )
    questions = saved.questions
    file_name = (saved.manifest.get("question_file") or {}).get("name") or "questions.csv"
    table = questions.frame.to_csv(index=False, sep=questions.delimiter).encode("utf-8")
    state.put(state.QUESTION_FILE, state.QuestionFile(file_name, table, "saved"))
    state.put(state.QUESTIONS, questions)
    state.put(state.QUESTION_COLUMN, questions.question_column)
    corpus_key = engine.embedded_corpus_key(fingerprint, settings, saved.chunking)
    question_key = engine.question_key(engine.questions_fingerprint(questions), settings)
    state.put_stage(state.CORPUS, corpus_key, corpus)
    state.put_stage(state.QUESTION_VECTORS, question_key, (questions, saved.question_embedding))
    state.put(state.TUNING, engine.saved_tuning(saved, corpus_key, settings))
    state.put(state.SAVED_OPENED, signature)
    _inputs_changed()


def set_question_file(name: str, data: bytes, source: str = "upload", column: str | None = None):
    """Remember the CSV and read it with ``column`` (None: detect). Raises InputError."""
    previous = state.question_file()
    if previous is None or previous.data != data or previous.name != name:
        state.put(state.QUESTION_FILE, state.QuestionFile(name, data, source))
        state.drop(state.QUESTIONS, state.W_QUESTION_COLUMN, state.COLUMN_ERROR, *state.QUESTION_DERIVED)
    return read_question_file(column)


def question_table(file: state.QuestionFile):
    """The rows of a question table whose question column was not detected (for the preview). Raises InputError."""
    from coverage_core.inputs.ingest import read_table

    return read_table(file.data, file.name)


def table_columns(file: state.QuestionFile) -> list[str]:
    """The columns of a question table whose question column was not detected."""
    return [str(column) for column in question_table(file).columns]


def chunks() -> list:
    """Chunks at the current settings (for cost estimates; nothing is embedded); the passages as they came with vectors."""
    documents = state.documents()
    if documents is None:
        return []
    if documents.embedded:
        return list(documents.passages.chunks)
    return engine.pipeline.chunk_corpus(documents.documents, engine.chunking_config(state.settings()))


def chunk_texts() -> list[str]:
    """Chunk texts at the current settings (for cost estimates; nothing is embedded); none for passages with vectors."""
    documents = state.documents()
    if documents is not None and documents.embedded:
        return []
    return [chunk.text for chunk in chunks()]


def calibration_cost(model: str, table, chunk_list: Sequence | None = None, counted: Sequence[str] = ()):
    """What running with the current settings would send to calibrate the support level.

    A :class:`coverage_core.costs.CalibrationCost` of the texts not in the
    embedding cache, or None when nothing would be calibrated: the user set
    the support level, or it is already known for these documents, chunking,
    model and seed. ``chunk_list`` is :func:`chunks` when the caller has it
    already; ``counted`` are texts the caller's estimate already counts (a
    probe sentence that is also a passage is not charged twice). Raises
    CoverageError for settings the core rejects.
    """
    from coverage_core import costs

    wanted = wanted_keys()
    settings = state.settings()
    if wanted is None or not engine.calibration_pending(wanted[0], settings, tuning_cache()):
        return None
    return costs.estimate_calibration_cost(
        chunks() if chunk_list is None else chunk_list, settings.provider, model, table,
        random_state=settings.seed, uncached=uncached_texts, counted=counted,
    )


def uncached_texts(texts: Sequence[str]) -> list[str]:
    """The distinct texts the current embedder would really send (not in the disk cache)."""
    from coverage_core.embeddings.cache import uncached_texts as not_in_cache

    documents = state.documents()
    if documents is not None and documents.embedded:  # passages that came with vectors are never sent
        passages = {chunk.text for chunk in documents.passages.chunks}
        texts = [text for text in texts if text not in passages]
    try:
        model = embedder()
    except CoverageError:
        return list(dict.fromkeys(texts))  # no key yet: assume nothing is cached
    return not_in_cache(texts, model, embedding_cache())


def choose_question_column() -> None:
    """on_change of the column selectbox: re-read the CSV with the chosen column."""
    column = st.session_state.get(state.W_QUESTION_COLUMN)
    state.drop(state.COLUMN_ERROR)
    if column is None:
        return
    try:
        read_question_file(column)
    except CoverageError as error:
        state.put(state.COLUMN_ERROR, user_message(error))


def chunk_counts() -> dict[str, int]:
    """Chunks per document at the current chunk settings (cheap; no embedding)."""
    documents = state.documents()
    if documents is None:
        return {}
    if documents.embedded:
        key = engine.StageKey.of(documents.fingerprint, chunking=None)
        return state.memo(state.CHUNK_COUNTS, key, lambda: _passage_counts(documents.passages.chunks))
    key = engine.StageKey.of(documents.fingerprint, chunking=engine.chunking_config(state.settings()))
    return state.memo(state.CHUNK_COUNTS, key, lambda: engine.chunk_counts(documents.documents, key.chunking))


def _passage_counts(passages) -> dict[str, int]:
    counts: dict[str, int] = {}
    for chunk in passages:
        counts[chunk.document] = counts.get(chunk.document, 0) + 1
    return counts


def read_question_file(column: str | None):
    """(Re)read the stored CSV with ``column``; keeps the last good reading on error."""
    file = state.question_file()
    if file is None:
        return None
    questions = read_questions(file.data, question_column=column, name=file.name)
    current = state.questions()
    if current is None or engine.questions_fingerprint(current) != engine.questions_fingerprint(questions):
        state.drop(*state.QUESTION_DERIVED)
    state.put(state.QUESTIONS, questions)
    state.put(state.QUESTION_COLUMN, column)
    _inputs_changed()
    return questions


def load_example() -> None:
    """The bundled wiki-qa slice, with the local model and default settings."""
    document_set = read_documents([EXAMPLE / "docs"])
    set_documents(document_set, [d.name for d in document_set.documents], "example")
    data = (EXAMPLE / "questions.csv").read_bytes()
    set_question_file("wiki-qa questions.csv", data, source="example")
    state.update_settings(provider="local", model="", dimensions=None, base_url="")


# ---------------------------------------------------------------- analysis
def stored_inputs() -> engine.EmbeddedInputs | None:
    """The embedded corpus and questions of the last run, whatever the settings now."""
    corpus = state.stored_stage(state.CORPUS)
    vectors = state.stored_stage(state.QUESTION_VECTORS)
    if corpus is None or vectors is None:
        return None
    if corpus.key.embedding != vectors.key.embedding:  # embedded with different models
        return None
    questions, embedding = vectors.value
    return engine.EmbeddedInputs(corpus.value, corpus.key, questions, embedding, vectors.key)


def wanted_keys() -> tuple[engine.StageKey, engine.StageKey] | None:
    """The corpus and question keys the current inputs and settings would be embedded under."""
    docs, questions = state.documents(), state.questions()
    if docs is None or questions is None:
        return None
    settings = state.settings()
    try:
        if docs.embedded:
            corpus = engine.embedded_corpus_key(docs.fingerprint, settings, docs.chunking)
        else:
            corpus = engine.corpus_key(docs.fingerprint, settings)
        return corpus, engine.question_key(engine.questions_fingerprint(questions), settings)
    except CoverageError:  # settings the core rejects (the Configure page says why)
        return None


def is_stale(inputs: engine.EmbeddedInputs) -> bool:
    """True when the inputs or the embedding settings differ from those of ``inputs``."""
    if state.documents() is None or state.questions() is None:
        return False
    wanted = wanted_keys()
    return wanted is None or (inputs.corpus_key, inputs.question_key) != wanted


def run_embedding() -> engine.EmbeddedInputs | None:
    """Run the whole analysis for the current inputs and settings, showing each stage as it goes.

    Reading (chunking), embedding the passages and then the questions (done
    of total, rate, time left), calibrating the support level, clustering,
    screening. What finished is kept even if a later step fails (and the
    core's disk cache means a retry embeds only the rest). Errors are shown;
    None then.
    """
    docs, questions = state.documents(), state.questions()
    if docs is None or questions is None:
        st.error("Add documents and a question file on the Upload page first.")
        return None
    settings = state.settings()
    try:
        engine.analysis_config(settings)  # settings the core rejects stop here, before any work
        corpus_key, question_key = wanted_keys()
        with st.status("Reading the documents…", expanded=True) as status:
            n_chunks = sum(chunk_counts().values())
            st.write(f"Read {len(docs.documents):,} documents: {n_chunks:,} passages; {len(questions.questions):,} questions.")
            bar = st.progress(0.0, text="Loading the embedding model…")
            model, cache = embedder(), embedding_cache()
            progress = engine.ProgressClock()

            def report(stage: str, done: int, total: int) -> None:
                text = progress.text(stage, done, total)
                bar.progress(done / total if total else 1.0, text=text)
                status.update(label=text)

            def embed_corpus():
                if docs.embedded:  # the vectors came with the passages: check they are this model's
                    status.update(label="Checking the vectors against the embedding model…")
                    engine.check_passage_vectors(docs.passages, corpus_key.embedding, model, questions, cache)
                    return docs.passages
                status.update(label="Embedding the passages…")
                return engine.pipeline.embed_corpus(docs.documents, corpus_key.chunking, model, cache, report)

            corpus = state.memo(state.CORPUS, corpus_key, embed_corpus)
            if docs.embedded:
                st.write(f"Took the {len(corpus.chunks):,} passages with their vectors ({corpus.vectors.shape[1]} dimensions).")
            else:
                st.write(engine.embedded_sentence("passages", corpus.embedded))

            def embed_questions():
                status.update(label="Embedding the questions…")
                return questions, engine.pipeline.embed_questions(questions, model, cache, report)

            stored = state.memo(state.QUESTION_VECTORS, question_key, embed_questions)
            st.write(engine.embedded_sentence("questions", stored[1]))
            inputs = stored_inputs()
            cache_tuning = tuning_cache()
            config = engine.analysis_config(settings, inputs.embedding, inputs.chunking)
            if not engine.has_calibration(inputs, settings, cache_tuning):
                status.update(label="Calibrating the support level on your documents…")
            calibration = engine.calibration_for(inputs, config, cache_tuning, model, cache)
            st.write(f"Support level: {formats.similarity(calibration.support_threshold)} ({engine.support_origin(calibration)}).")
            status.update(label="Clustering the passages into topics…")
            clustering = engine.clustering_for(inputs, config.n_clusters, config.random_state, cache_tuning)
            st.write(f"Clustered the passages into {clustering.n_clusters} topics.")
            status.update(label="Screening the questions for off-topic ones and measuring coverage…")
            analysis = engine.tune(inputs, settings, state.overrides(), cache_tuning)
            st.write(
                f"Screened {len(analysis.questions.questions):,} questions: {int(analysis.is_outlier.sum())} off-topic."
            )
            bar.progress(1.0, text="Done.")
            status.update(label="Analysis done.", state="complete", expanded=False)
    except CoverageError as error:
        show_error(error)
        return None
    return stored_inputs()


def current_analysis(show_notes: bool = True):
    """The analysis for the current settings, recomputing only the cheap stages.

    None when nothing has been embedded yet. If inputs or embedding settings
    changed since the last run, the last embedded data is used and a note
    says to run again.
    """
    inputs = stored_inputs()
    if inputs is None:
        return None
    if show_notes and is_stale(inputs):
        st.warning(
            "The inputs or the embedding settings changed since the last run; these results are from the "
            "last run. Run the analysis again on Configure to update them."
        )
    cache = tuning_cache()
    settings = state.settings()
    try:
        if engine.has_calibration(inputs, settings, cache):
            return engine.tune(inputs, settings, state.overrides(), cache)
        with st.spinner("Calibrating the support level on your documents (once per corpus)…"):
            return engine.tune(
                inputs, settings, state.overrides(), cache,
                embedder=lambda: embedder_for(inputs), embed_cache=embedding_cache(),
            )
    except CoverageError as error:
        show_error(error)
        return None


def tuning_cache() -> engine.TuningCache:
    """The session's :class:`~ui.engine.TuningCache` (created on first use)."""
    cache = state.get(state.TUNING)
    if not isinstance(cache, engine.TuningCache):
        cache = engine.TuningCache()
        state.put(state.TUNING, cache)
    return cache


def calibrated_level() -> float | None:
    """The automatic (calibrated) support level of the stored corpus, if it was computed already."""
    inputs = stored_inputs()
    cache = state.get(state.TUNING)
    if inputs is None or not isinstance(cache, engine.TuningCache):
        return None
    settings = state.settings().replace(support_threshold=None)
    try:
        config = engine.analysis_config(settings, inputs.embedding, inputs.chunking)
    except CoverageError:
        return None
    found = cache.calibrations.get(engine.calibration_key(inputs.corpus_key, config), None)
    return None if found is None else float(found.support_threshold)


def require_analysis():
    """The current analysis, or an info box and a stop."""
    analysis = current_analysis()
    if analysis is None:
        if stored_inputs() is None:
            st.info(
                "No analysis yet. Upload documents and questions (or click **Try the example** on Upload), "
                "then run the analysis on Configure."
            )
        st.stop()
    return analysis


def llm_client():
    """The chat client of the current settings, or None when the LLM is off. Raises ProviderError."""
    settings = state.settings()
    if not settings.llm_enabled:
        return None
    from coverage_core.suggest.llm import ChatClient, LLMConfig

    return ChatClient(
        LLMConfig(model=settings.llm_model, base_url=settings.llm_base_url or None, api_key=state.llm_api_key())
    )


def llm_key() -> engine.StageKey:
    return engine.llm_key(state.settings())


def gaps_for(analysis, use_llm: bool = False):
    """The analysis with gaps: offline drafts computed once per analysis; LLM only when asked."""
    key = engine.StageKey.of(analysis_key(), llm=llm_key() if use_llm else None)  # None: offline drafts
    previous = state.stored_stage(state.GAPS)
    if not use_llm and previous is not None and previous.key.source == key.source:
        return previous.value  # LLM suggestions for this analysis are kept

    def compute():
        llm = llm_client() if use_llm else None
        model = model_cache = None
        inputs = stored_inputs()
        if llm is not None and inputs is not None:  # LLM questions are checked against τ with the chunks' model
            model, model_cache = embedder_for(inputs), embedding_cache()
        with st.spinner("Finding gaps and writing suggestions…"):
            return engine.with_gaps(analysis, llm, model, model_cache)

    return state.memo(state.GAPS, key, compute)


def suggestions_table(gapped) -> None:
    """Give the suggestions editor the suggestions of ``gapped``'s gaps when they changed, keeping the user's rows."""
    from ui import widgets

    key = engine.suggestions_key(analysis_key(), gapped)
    if state.get(state.SUGGESTIONS_FOR) != key:
        merged = engine.merge_suggestions(state.get(state.SUGGESTIONS_EDITED), engine.suggestions_frame(gapped))
        widgets.reset_editor(state.SUGGESTIONS_BASE, state.SUGGESTIONS_EDITED, state.W_SUGGESTIONS_EDITOR, merged)
        state.put(state.SUGGESTIONS_FOR, key)


def analysis_key() -> engine.StageKey | None:
    """The key of the session's current analysis (None before a run or for settings the core rejects)."""
    inputs = stored_inputs()
    if inputs is None:
        return None
    try:
        return engine.analysis_key(inputs, state.settings(), state.overrides())
    except CoverageError:
        return None


def projection_for(analysis, method: str = "tsne"):
    """The 2-D map of the analysed vectors, computed once per data set and method.

    Keyed by the embedded inputs only, so moving K, a threshold or an
    override never recomputes it (cluster colours come from the current
    labels when it is drawn).
    """
    from coverage_core.outputs.projection import project_2d

    def compute():
        with st.spinner(f"Drawing the map of {len(analysis.corpus.chunks):,} chunks (once per data set)…"):
            return project_2d(
                analysis.corpus.vectors, analysis.question_vectors, analysis.clustering.labels,
                method=method, random_state=analysis.config.random_state,
            )

    return state.memo(state.PROJECTION, engine.StageKey.of(stored_inputs().key, method=method), compute)


def mds_for(analysis):
    """The MDS points of the fitness page, computed once per embedded inputs (never on a threshold or K change)."""
    from coverage_core.checks import answerability

    def compute():
        n = len(analysis.corpus.chunks) + len(analysis.questions.questions)
        with st.spinner(f"Placing {min(n, answerability.DEFAULT_MDS_POINTS):,} points with MDS (once per data set)…"):
            return answerability.mds_points(
                analysis.question_vectors, analysis.corpus.vectors, chunk_labels=analysis.clustering.labels,
                random_state=analysis.config.random_state,
            )

    return state.memo(state.MDS, engine.StageKey.of(stored_inputs().key), compute)


DEFAULT_FITNESS_THRESHOLD = engine.DEFAULT_FITNESS_THRESHOLD


# ---------------------------------------------------------------- dimension sweep
def sweep_embedder(config, model: str):
    """``embedder_at(d)``: the API embedder of ``config`` with ``model``, returning ``d`` dimensions."""
    config = dataclasses.replace(config, model=model)
    return lambda d: embedder_for(config, dimensions=d)


def sweep_estimate(config, model: str, texts: Sequence[str], dims: Sequence[int]):
    """What embedding ``texts`` once per size in ``dims`` through the API would cost (cached texts are not sent)."""
    return engine.sweep_estimate(texts, dims, model, sweep_embedder(config, model), embedding_cache(), price_table())


def dimension_sweep_for(labels, use_api: bool):
    """The dimension sweep already run on the current inputs with these labels and API choice, else None."""
    return state.stage(state.DIMENSION_SWEEP, engine.sweep_key(stored_inputs(), labels, use_api))


def run_dimension_sweep(analysis, labels, use_api: bool):
    """Run the dimension sweep with a progress display and keep it; None after an error, which is shown.

    ``labels``: the answerability labels to score at each size, or None.
    ``use_api``: embed every text again at each smaller size through the
    OpenAI API (the model's own shorter embeddings); else the stored vectors
    are cut.
    """
    inputs = stored_inputs()
    config = inputs.embedding
    smaller = engine.sweep_sizes(int(analysis.question_vectors.shape[1]))

    def compute():
        if not use_api:
            with st.spinner(f"Recomputing the best similarities at {len(smaller) + 1} sizes…"):
                return engine.dimension_sweep(analysis, labels)
        with st.status(f"Embedding at {len(smaller)} smaller sizes…", expanded=True) as status:
            bar = st.progress(0.0, text="Starting…")
            embed_at = engine.sweep_embed_at(
                [c.text for c in analysis.corpus.chunks], list(analysis.questions.texts),
                sweep_embedder(config, engine.sweep_model(config)), embedding_cache(),
                lambda text, fraction: bar.progress(fraction, text=text),
            )
            sweep = engine.dimension_sweep(analysis, labels, embed_at)
            status.update(label="Sweep done.", state="complete", expanded=False)
        return sweep

    try:
        return state.memo(state.DIMENSION_SWEEP, engine.sweep_key(inputs, labels, use_api), compute)
    except CoverageError as error:
        show_error(error)
        return None


def price_table():
    """The price table as last edited on Configure (the default table before any edit)."""
    from coverage_core.costs import default_price_table

    for key in (state.PRICE_TABLE_EDITED, state.PRICE_TABLE):
        table = state.get(key)
        if table is not None:
            return table
    return default_price_table()


def checks_for(analysis) -> engine.Checks:
    """Retrieval and answerability of the current analysis, plus any sub-question result computed for it.

    Each check is computed once per analysis and its settings (k, the
    columns). A check whose column the user named is unusable is left out
    with its reason (``retrieval_error``, ``answerability_error``), for the
    page that owns the setting to show; the other check still runs.
    """
    settings = state.settings()
    key = engine.StageKey.of(
        analysis_key(), k=int(settings.retrieval_k), relevant_column=settings.relevant_column,
        label_column=settings.label_column,
    )
    found = state.memo(state.RETRIEVAL, key, lambda: engine.checks(analysis, settings))
    return dataclasses.replace(found, subquestions=subquestions_for_inputs())


def subquestions_key() -> engine.StageKey:
    """What a decomposition depends on: the embedded inputs, the LLM, the number of sub-questions and k.

    Keyed by the embedded inputs first (:func:`subquestions_for_inputs` relies on that). Weights and the
    support threshold only rescore, so they are not in it.
    """
    from coverage_core.checks.subquestions import SubQuestionConfig

    return engine.StageKey.of(
        stored_inputs().key, llm=llm_key(), max_sub_questions=SubQuestionConfig().max_sub_questions,
        k=int(state.settings().retrieval_k),
    )


def subquestions_result():
    """The sub-question result for the current inputs, LLM and k, if there is one."""
    return state.stage(state.SUBQUESTIONS, subquestions_key())


def break_into_subquestions(analysis, positions: Sequence[int], llm, previous):
    """Ask the LLM to break the questions at ``positions`` into sub-questions, showing progress.

    Calls :func:`coverage_core.pipeline.check_subquestions`; the new questions
    are merged into ``previous`` (rescored together) and stored. Returns the
    result to show (``previous`` when the run failed). An error that made the
    core stop asking (a rejected key, a server down) is shown after the run.
    """
    from coverage_core.checks.subquestions import SubQuestionConfig

    key = subquestions_key()
    run_config = SubQuestionConfig(top_k=int(state.settings().retrieval_k))
    watched = engine.WatchedLLM(llm)
    result = previous
    with st.status(f"Breaking {len(positions)} questions into sub-questions…", expanded=True) as status:
        bar = st.progress(0.0, text="Starting…")

        def progress(done: int, total: int) -> None:
            bar.progress(done / total, text=f"Question {done} of {total}")

        try:
            new = engine.pipeline.check_subquestions(
                analysis, list(positions), watched, embedder_for(stored_inputs()), embedding_cache(),
                config=run_config, progress=progress,
            )
        except CoverageError as error:
            status.update(label="Stopped.", state="error")
            show_error(error)
        else:
            config = previous.config if previous is not None else run_config
            result = state.put_stage(state.SUBQUESTIONS, key, engine.merge_subquestions(previous, new, config))
            ok = new.count("ok")
            status.update(
                label=f"{ok} of {len(positions)} questions broken into sub-questions.",
                state="complete" if ok == len(positions) else "error", expanded=False,
            )
    if watched.fatal is not None:
        show_error(watched.fatal)
        st.caption("The questions finished before it are kept; fix the problem and run again for the rest.")
    return result


def rescore_subquestions(result, config):
    """``result`` scored with ``config`` (weights, threshold; no LLM call), stored when it changed."""
    from coverage_core.checks.subquestions import rescore_subquestions as rescore

    if config == result.config:
        return result
    return state.put_stage(state.SUBQUESTIONS, subquestions_key(), rescore(result, config))


# ---------------------------------------------------------------- chunking comparison
def chunking_comparison_for(analysis, grid, k: int, relevant_column) -> tuple[engine.ChunkingComparison | None, bool]:
    """The last chunking comparison and whether it was made with these inputs, grid, k, column and screening."""
    stored = state.stored_stage(state.CHUNKING_COMPARISON)
    if stored is None:
        return None, False
    key = engine.chunking_comparison_key(stored_inputs(), analysis, grid, k, relevant_column)
    return stored.value, stored.key == key


def compare_chunkings(analysis, grid, k: int, relevant_column, model, prices) -> engine.ChunkingComparison | None:
    """Run the chunking comparison with a progress display and keep it (None after an error, which is shown).

    ``model`` is the inputs' embedder when the caller built it already (None: built here); ``prices`` the
    price table for a paid provider, None for the local model.
    """
    inputs = stored_inputs()
    own_level = analysis.config.support_threshold is not None
    try:
        model = model or embedder_for(inputs)
        with st.status(f"Comparing {len(grid)} chunk configuration(s)…", expanded=True) as status:
            bar = st.progress(0.0, text="Starting…")

            def progress(done: int, total: int, chunking, step: str) -> None:
                name = f"{chunking.chunk_size}/{chunking.chunk_overlap}"
                if step == "embedding":
                    text = (
                        f"Configuration {done + 1} of {total}: {name} (chunking, embedding, "
                        f"{'measuring' if own_level else 'calibrating the support level, measuring'})…"
                    )
                    status.update(label=text)
                else:
                    text = f"Configuration {done} of {total} done: {name}."
                    st.write(text)
                bar.progress(done / total if total else 1.0, text=text)

            result = engine.compare_chunkings(
                inputs, analysis, grid, k, relevant_column, model, embedding_cache(), prices, progress
            )
            status.update(label=f"Compared {len(result.table)} configuration(s).", state="complete", expanded=False)
    except CoverageError as error:
        show_error(error)
        return None
    key = engine.chunking_comparison_key(inputs, analysis, grid, k, relevant_column)
    return state.put_stage(state.CHUNKING_COMPARISON, key, result)


def subquestions_for_inputs():
    """The last sub-question result, if it was computed on the current embedded inputs."""
    inputs = stored_inputs()
    stored = state.stored_stage(state.SUBQUESTIONS)
    if inputs is None or stored is None:
        return None
    return stored.value if stored.key.source == inputs.key else None


def improvement_for(analysis) -> tuple[engine.Improvement | None, bool]:
    """The last "Apply" result and whether it was made from the current analysis."""
    stored = state.stored_stage(state.IMPROVED)
    if stored is None:
        return None, False
    return stored.value, stored.key == analysis_key()


def current_improvement(analysis) -> engine.Improvement | None:
    """The last "Apply" result if it was made from the current analysis (what the exports may report), else None."""
    improvement, current = improvement_for(analysis)
    return improvement if current else None


def improve(analysis, accepted, rows=()) -> engine.Improvement:
    """Rescore with the accepted questions (embedded with the analysis's model) and keep the result.

    ``rows`` are the suggestion-table rows of the accepted questions (:func:`ui.engine.accepted_rows`),
    kept with the result for the reports.
    """
    improvement = engine.improve(
        analysis, accepted, embedder_for(stored_inputs()), embedding_cache(), state.overrides(), rows
    )
    return state.put_stage(state.IMPROVED, analysis_key(), improvement)


def compare(analysis, other, names: tuple[str, str]) -> engine.Comparison:
    """Score ``other`` on the analysis's chunks and clusters, and keep the result."""
    result = engine.compare(analysis, other, embedder_for(stored_inputs()), embedding_cache(), names)
    key = engine.StageKey.of(analysis_key(), other=engine.questions_fingerprint(other), name=names[1])
    return state.put_stage(state.COMPARISON, key, result)


def comparison_for() -> tuple[engine.Comparison | None, bool]:
    """The last comparison and whether it was made from the current analysis."""
    stored = state.stored_stage(state.COMPARISON)
    if stored is None:
        return None, False
    return stored.value, stored.key.source == analysis_key()


def html_report_builder(analysis, inputs_record: dict):
    """A function that builds the HTML report (run only when the user downloads it).

    Everything it needs is read from the session now, so the function itself
    touches no session state: the map if it was drawn for these inputs, the
    Apply result if it belongs to this analysis (with the accepted questions),
    the fitness threshold, and the checks that ran (retrieval, answerability,
    sub-questions).
    """
    from coverage_core.outputs.html_report import build_html_report

    inputs = stored_inputs()
    projection = None
    stored = state.stored_stage(state.PROJECTION)
    if inputs is not None and stored is not None and stored.key.source == inputs.key:
        projection = stored.value
    improvement = current_improvement(analysis)
    threshold = float(state.get(state.FITNESS_THRESHOLD, DEFAULT_FITNESS_THRESHOLD))
    found = checks_for(analysis)

    def build() -> bytes:
        return build_html_report(
            analysis, inputs=inputs_record, projection=projection,
            improved=improvement.after if improvement is not None else None,
            accepted=(list(improvement.accepted_rows) or None) if improvement is not None else None,
            fitness_threshold=threshold, retrieval=found.retrieval, answerability=found.answerability,
            labels=found.labels, subquestions=found.subquestions,
        ).encode("utf-8")

    return build


def saved_analysis_builder(analysis, report: bytes):
    """A function that zips ``analysis`` as a saved analysis with ``report`` (run only when the user downloads it);
    what it needs from the session is read now."""
    inputs = stored_inputs()
    from_vectors = bool(inputs is not None and inputs.from_vector_store)
    question_file = state.question_file()
    name = question_file.name if question_file is not None else None

    def build() -> bytes:
        return engine.saved_analysis_zip(analysis, report, from_vectors=from_vectors, question_file_name=name)

    return build


def traffic_for(analysis, log):
    """The production-traffic comparison of ``log`` against the current analysis, computed once per
    (analysis, log): the queries are embedded with the analysis's model through the disk cache."""
    key = engine.StageKey.of(analysis_key(), log=engine.digest(tuple(log.queries), log.counts.tobytes()))

    def compute():
        inputs = stored_inputs()
        with st.spinner(f"Embedding {log.n_distinct:,} distinct queries and comparing them…"):
            return engine.pipeline.check_traffic(analysis, log, embedder_for(inputs), embedding_cache())

    return state.memo(state.TRAFFIC, key, compute)


def add_traffic_suggestions(result) -> int:
    """Put the traffic's suggestions into the Gap page's suggestions editor; returns how many were new."""
    from ui import widgets

    before = state.get(state.SUGGESTIONS_EDITED, state.get(state.SUGGESTIONS_BASE))
    merged = engine.append_suggestions(before, engine.traffic_suggestions_frame(result))
    widgets.reset_editor(state.SUGGESTIONS_BASE, state.SUGGESTIONS_EDITED, state.W_SUGGESTIONS_EDITOR, merged)
    # Also the editor's latest output: the Gap page merges its fresh gap suggestions into it.
    state.put(state.SUGGESTIONS_EDITED, merged)
    return len(merged) - (0 if before is None else len(before))
