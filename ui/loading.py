"""Reading the user's inputs into the session: documents, vector files, saved analyses, question files.

Each loader keeps what it read in session state (:mod:`ui.state`), forgets
what the new input makes stale, and redraws the sidebar's list of inputs.
The pages reach these through :mod:`ui.flow`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from coverage_core.config import EmbeddingConfig
from coverage_core.errors import CoverageError, InputError
from coverage_core.inputs.ingest import read_documents, read_uploaded_documents
from coverage_core.inputs.questions import read_questions
from ui import engine, formats, sidebar, state
from ui.messages import user_message

PROJECT = Path(__file__).resolve().parents[1]
EXAMPLE = PROJECT / "examples" / "wiki-qa"


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
    sidebar.refresh()


def knowledge_base_kind() -> str:
    """What the loaded knowledge base is: "vectors", "saved", or "documents" (also before anything is loaded)."""
    documents = state.documents()
    return documents.source if documents is not None and documents.source in ("vectors", "saved") else "documents"


def documents_sentence(documents: state.LoadedDocuments, n_passages: int, settings: state.Settings) -> str:
    """What was loaded, in one sentence for the Upload page."""
    if documents.source == "vectors":
        return (
            f"{formats.count(n_passages, 'passage')} with their vectors "
            f"({formats.count(documents.passages.vectors.shape[1], 'dimension')}) in "
            f"{formats.count(len(documents.documents), 'document')}, from {documents.names[0]}."
        )
    if documents.source == "saved":
        return (
            f"A saved analysis: {formats.count(n_passages, 'passage')} with their vectors in "
            f"{formats.count(len(documents.documents), 'document')}."
        )
    origin = "the bundled example" if documents.source == "example" else "your upload"
    return (
        f"{formats.count(len(documents.documents), 'readable document')} from {origin}, "
        f"{formats.count(n_passages, 'chunk')} at {formats.count(settings.chunk_size, 'character')} with "
        f"{settings.chunk_overlap:,} overlap."
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
    from coverage_core.errors import InputError
    from coverage_core.inputs.vector_store import read_vectors_bytes
    from coverage_core.types import DocumentSet

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


VECTOR_SOURCES = {
    "file": "A Parquet file (upload)",
    "qdrant": "Qdrant (local folder)",
    "chroma": "Chroma (local folder)",
}
"""Where passage vectors can come from on the Upload page, in the words it shows; the stores' keys are
:data:`coverage_core.inputs.store_connectors.STORE_KINDS`."""


def vector_store_choices(kind: str) -> list[str] | None:
    """The ``kind`` (Qdrant or Chroma) store folders the operator offers (``$COVERAGE_CORE_VECTOR_STORES``), by
    name; None when the operator offers no folder of stores."""
    from coverage_core.inputs.store_connectors import allowed_store_root, store_folders

    root = allowed_store_root()
    return store_folders(root, kind) if root is not None else None


def load_vector_store(kind: str, folder: str, collection: str, vector: str | None = None) -> state.LoadedDocuments:
    """Read a Qdrant or Chroma collection (``kind``) saved in ``folder``, one of :func:`vector_store_choices`.

    As :func:`load_vector_file`, the questions are embedded later with the
    model chosen on Configure. Read again at each call: the store may have
    changed since. Raises InputError (one sentence) when the folder or
    collection cannot be read or holds no usable passage.
    """
    from coverage_core.inputs.store_connectors import allowed_store_root, read_store, store_address, store_folder
    from coverage_core.types import DocumentSet

    root = allowed_store_root()
    if root is None:
        raise InputError("This dashboard offers no vector store folders; ask the person who runs it to name one.")
    path = store_folder(root, kind, folder)
    found = read_store(store_address(kind, path, collection, vector if kind == "qdrant" else None))
    state.drop(state.VECTOR_UPLOAD)  # an uploaded file read before is no longer what is loaded
    corpus = found.corpus
    document_set = DocumentSet(list(corpus.documents), list(found.warnings))
    return set_documents(
        document_set, [found.source], "vectors", passages=corpus, fingerprint=engine.corpus_fingerprint(corpus)
    )


def saved_analysis_root():
    """The folder the operator allows saved analyses to be opened from (``$COVERAGE_CORE_SAVED_ANALYSES``), or None."""
    from coverage_core.saved.analysis import allowed_root

    return allowed_root()


def saved_analysis_choices() -> list[str]:
    """The saved analyses in the allowed folder, by folder name (empty without one)."""
    from coverage_core.saved.analysis import saved_folders

    root = saved_analysis_root()
    return saved_folders(root) if root is not None else []


def open_saved_analysis(data: bytes | None = None, name: str | None = None, folder: str | None = None) -> None:
    """Open a saved analysis: an uploaded zip (``data``, ``name``) or a sub-folder of the allowed folder.

    Its passages, questions, vectors, clusters, support level and settings
    go into the session as if the analysis had just run, so nothing is
    embedded again. Embedding settings other than the session's are held
    (:func:`ui.state.hold_provider_settings`): typed keys are forgotten and
    nothing is sent until the user confirms them on Configure. Raises
    InputError for a folder or zip that is not a complete saved analysis.
    """
    from coverage_core.errors import InputError
    from coverage_core.saved import analysis as saved_analysis
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
    keys_typed = bool(state.typed_embed_key() or state.llm_api_key())
    notice = engine.provider_notice(state.settings(), settings, keys_typed)
    if notice is not None:  # the file, not the user, chose these: no key goes there unconfirmed
        state.hold_provider_settings(notice)
        st.toast(formats.markdown_text(notice), icon=":material/key_off:")
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
    _keep_saved_suggestions(saved, settings)
    _inputs_changed()


def _keep_saved_suggestions(saved, settings) -> None:
    """Keep the gaps and suggestion decisions of ``saved`` for the Gap page: its gaps are shown as saved (not
    written again) while the analysis is the one saved, and its suggestions table comes back with every
    accepted, edited and rejected question (:mod:`ui.views.decisions`)."""
    from coverage_core.errors import InputError

    # Gaps found with other gap settings (the command line's --suggest 0) are found again with the dashboard's.
    if saved.gaps is not None and saved.config.gaps == settings.gap_config():
        try:
            key = engine.analysis_key(state.stored_inputs(), settings, state.overrides())
        except InputError:  # settings the core rejects: the gaps are found again once they are fixed
            key = None
        if key is not None:
            state.put_stage(state.SAVED_GAPS, key, list(saved.gaps))
    if saved.decisions:
        state.put(state.SAVED_DECISIONS, list(saved.decisions))


def set_question_file(name: str, data: bytes, source: str = "upload", column: str | None = None):
    """Remember the CSV and read it with ``column`` (None: detect). Raises InputError."""
    previous = state.question_file()
    if previous is None or previous.data != data or previous.name != name:
        state.put(state.QUESTION_FILE, state.QuestionFile(name, data, source))
        state.drop(state.QUESTIONS, state.W_QUESTION_COLUMN, state.COLUMN_ERROR, *state.QUESTION_DERIVED)
    return read_question_file(column)


def question_table(file: state.QuestionFile):
    """The rows of a question table whose question column was not detected (for the preview). Raises InputError."""
    from coverage_core.inputs.questions import read_table

    return read_table(file.data, file.name)


def table_columns(file: state.QuestionFile) -> list[str]:
    """The columns of a question table whose question column was not detected."""
    return [str(column) for column in question_table(file).columns]


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
    """The bundled wiki-qa slice, with the default (local) embedding model and default settings."""
    document_set = read_documents([EXAMPLE / "docs"])
    set_documents(document_set, [d.name for d in document_set.documents], "example")
    data = (EXAMPLE / "questions.csv").read_bytes()
    set_question_file("wiki-qa questions.csv", data, source="example")
    state.update_settings(provider=EmbeddingConfig().provider, model="", dimensions=None, base_url="")
    state.confirm_provider_settings()  # the app's defaults replaced whatever a saved analysis named
