"""Upload: documents (PDF, TXT, Markdown) and one question CSV, or the bundled example."""

import pandas as pd
import streamlit as st

from coverage_core.errors import CoverageError
from coverage_core.inputs.store_connectors import STORE_KINDS
from ui import engine, flow, formats, loading, state, widgets

PREVIEW_ROWS = 200
KNOWLEDGE_BASE = {
    "documents": "Documents",
    "vectors": "Vectors from your vector store",
    "saved": "A saved analysis",
}
flow.start_page(
    "Upload",
    "Add the documents of your knowledge base and the CSV of test questions you evaluate your RAG "
    "system with. The analysis tells you which parts of the knowledge base no question tests."
)

with st.container(border=True):
    st.markdown("**New here?** Load the bundled example — ten Wikipedia articles and 185 test questions — "
                "and see a full analysis with the local model (no key, nothing leaves this server).")
    if st.button("Try the example", key=state.W_EXAMPLE, type="primary"):
        try:
            loading.load_example()
        except CoverageError as error:
            flow.show_error(error)
        else:
            if flow.run_embedding() is not None:
                st.switch_page(flow.RESULTS_PAGE)

st.header("1. Knowledge base")
state.seed_widget(state.W_KNOWLEDGE_BASE, loading.knowledge_base_kind())
kind = st.radio(
    "What do you have?", list(KNOWLEDGE_BASE), format_func=KNOWLEDGE_BASE.get, horizontal=True,
    key=state.W_KNOWLEDGE_BASE,
)
if kind == "documents":
    uploads = st.file_uploader(
        "Documents (PDF, TXT or Markdown; several at once)",
        type=["pdf", "txt", "md"],
        accept_multiple_files=True,
        key=state.W_DOC_UPLOADER,
    )
    password = st.text_input(
        "PDF password (only if a PDF is encrypted)", type="password", key=state.W_PDF_PASSWORD,
        help="Tried on every encrypted PDF. Kept only while this page is open; never stored or exported.",
    )
    if uploads:
        files = [(upload.name, upload.getvalue()) for upload in uploads]
        signature = engine.digest(*[item for pair in files for item in pair], password or "")
        if state.get(state.DOCUMENT_UPLOAD) != signature:
            try:
                loading.load_uploaded_documents(files, password)
            except CoverageError as error:
                flow.show_error(error)
            state.put(state.DOCUMENT_UPLOAD, signature)
elif kind == "vectors":
    state.seed_widget(state.W_VECTOR_SOURCE, "file")
    source = st.radio(
        "Where are the vectors?", list(loading.VECTOR_SOURCES), format_func=loading.VECTOR_SOURCES.get,
        horizontal=True, key=state.W_VECTOR_SOURCE,
    )
    if source == "file":
        st.caption(
            "Passages your vector store already embedded, exported as Parquet: one row per passage with its text, "
            "its vector and its document (a page number is optional). Columns are found by their names (text, "
            "chunk, content or page_content; vector, embedding or values; document, source, doc_id or file; page). "
            "The questions are embedded with the model you choose on Configure: choose the model that made these "
            "vectors."
        )
        vector_upload = st.file_uploader("Passage vectors (Parquet)", type=["parquet"], key=state.W_VECTOR_UPLOADER)
        if vector_upload is not None:
            try:
                loading.load_vector_file(vector_upload.name, vector_upload.getvalue())
            except CoverageError as error:
                flow.show_error(error)
    else:
        store = STORE_KINDS[source]
        text_place = "its documents" if source == "chroma" else "a text, page_content or content entry"
        st.caption(
            f"Passages a {store} collection already holds with their vectors, read from a folder {store} saved it "
            "in on the machine running this dashboard; nothing is sent anywhere. Each passage's text is "
            f"{text_place}; its document is named by a source, document or file entry (a page entry is optional). "
            "The questions are embedded with the model you choose on Configure: choose the model that made these "
            "vectors."
        )
        offered = loading.vector_store_choices(source)
        if offered is None:
            st.info(f"This dashboard offers no {store} folders. The person who runs it can offer some by naming the "
                    "folder that holds them in the COVERAGE_CORE_VECTOR_STORES setting when starting it.")
        elif not offered:
            st.info(f"The folder of vector stores this dashboard offers holds no {store} folder.")
        else:
            state.seed_widget(state.W_STORE_COLLECTION, "")
            folder = st.selectbox(f"{store} folder", offered, index=None, key=state.W_STORE_FOLDER,
                                  placeholder=f"Choose a {store} folder")
            collection = st.text_input("Collection name", key=state.W_STORE_COLLECTION)
            vector = None
            if source == "qdrant":
                state.seed_widget(state.W_STORE_VECTOR, "")
                vector = st.text_input(
                    "Vector name (only if the collection keeps several vectors per passage)", key=state.W_STORE_VECTOR,
                )
            if st.button("Read the collection", key=state.W_READ_STORE, type="primary",
                         disabled=folder is None or not collection.strip()):
                try:
                    loading.load_vector_store(source, folder, collection, vector)
                except CoverageError as error:
                    flow.show_error(error)
else:
    st.caption(
        "An analysis saved earlier (the Gap analysis page's \"whole analysis\" download, or the command line's save "
        "option): its passages, questions, vectors, "
        "topics and support level open as they were, with nothing embedded again."
    )
    saved_zip = st.file_uploader("Saved analysis (zip of its folder)", type=["zip"], key=state.W_SAVED_UPLOADER)
    folders = loading.saved_analysis_choices()
    folder = None
    if folders:
        folder = st.selectbox("Or one saved on this server", folders, index=None, key=state.W_SAVED_FOLDER,
                              placeholder="Choose a saved analysis")
    if st.button("Open the saved analysis", key=state.W_OPEN_SAVED, type="primary",
                 disabled=saved_zip is None and folder is None):
        try:
            if saved_zip is not None:
                loading.open_saved_analysis(saved_zip.getvalue(), saved_zip.name)
            else:
                loading.open_saved_analysis(folder=folder)
        except CoverageError as error:
            flow.show_error(error)
        else:
            st.switch_page(flow.RESULTS_PAGE)

documents = state.documents()
if documents is not None:
    settings = state.settings()
    try:
        counts = flow.chunk_counts()
    except CoverageError as error:
        flow.show_error(error)
        counts = {}
    st.success(widgets.plain(loading.documents_sentence(documents, sum(counts.values()), settings)))  # a file name
    st.dataframe(
        pd.DataFrame(
            {
                "document": [d.name for d in documents.documents],
                "characters": [len(d.text) for d in documents.documents],
                "pages": [str(len(d.pages)) if d.pages else "" for d in documents.documents],  # blank for text files
                "chunks": [counts.get(d.name, 0) for d in documents.documents],
            }
        ),
        hide_index=True,
    )
    if documents.warnings:
        st.markdown(f"**{formats.count(len(documents.warnings), 'problem')} while reading the documents** — the rest was used:")
        flow.show_warnings(documents.warnings)

st.header("2. Test questions")
csv_upload = st.file_uploader(
    "Question file (CSV or TSV; or a RAGAS, DeepEval or Giskard test set in JSON)",
    type=["csv", "tsv", "txt", "json", "jsonl"],
    key=state.W_CSV_UPLOADER,
)
if csv_upload is not None:
    data = csv_upload.getvalue()
    known = state.question_file()
    if known is None or known.data != data or known.name != csv_upload.name:
        try:
            loading.set_question_file(csv_upload.name, data)
        except CoverageError as error:
            flow.show_error(error)

question_file = state.question_file()
if question_file is not None:
    questions = state.questions()
    # The file first, so the column is chosen with the rows in view.
    try:
        preview = questions.frame if questions is not None else loading.question_table(question_file)
    except CoverageError as error:
        flow.show_error(error)
        preview = None
    if preview is not None:
        column_config = {}
        if questions is not None:
            column_config[questions.question_column] = st.column_config.TextColumn(
                f"{questions.question_column} (questions)", width="large"
            )
        st.dataframe(preview.head(PREVIEW_ROWS), hide_index=True, column_config=column_config)
        if len(preview) > PREVIEW_ROWS:
            st.caption(f"Showing the first {PREVIEW_ROWS} of {len(preview):,} rows.")
        state.seed_widget(state.W_QUESTION_COLUMN, questions.question_column if questions is not None else None)
        st.selectbox(
            "Column with the questions",
            [str(column) for column in preview.columns],
            key=state.W_QUESTION_COLUMN,
            on_change=loading.choose_question_column,
            placeholder="Choose the column that holds the questions",
            help="Detected from its name (question, query, prompt, …). Choose another if it is wrong.",
        )
        if state.get(state.COLUMN_ERROR):
            st.error(widgets.plain(state.get(state.COLUMN_ERROR)))
    questions = state.questions()
    if questions is not None:
        st.success(
            f"{formats.count(len(questions.questions), 'question')} in column “{widgets.plain(questions.question_column)}” "
            f"of {widgets.plain(question_file.name)} ({formats.count(len(questions.frame), 'row')}, "
            f"{formats.count(len(questions.frame.columns), 'column')})."
        )
        flow.show_warnings([str(w) for w in questions.warnings])

languages = flow.language_profile()
if languages is not None:
    widgets.show_languages(languages)

if documents is None or state.questions() is None:
    st.info("Add documents and a question file (or try the example) to continue.")
    st.stop()

st.page_link(flow.CONFIGURE_PAGE, label="Next: configure and run the analysis", icon=":material/arrow_forward:")
