"""In a real browser (Debian's Chromium through Playwright): passage vectors and saved analyses on the Upload page.

A Parquet file of vectors made by the real local model is uploaded with a
question file and analysed; a saved analysis is opened from a zip and from
the server's folder of saved analyses. Each ends on the Results page with
the same verdict the command line wrote. Screenshots of failures go to
test-artifacts/.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coverage_core import cli
from coverage_core.saved.analysis import SAVED_ANALYSES_VARIABLE, load_analysis, zip_folder
from tests.helpers import embedded_chunks, open_page, streamlit_server, vector_table, write_knowledge_base

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The vectors as Parquet bytes, the question CSV, and an analysis of them saved under the allowed root."""
    folder = tmp_path_factory.mktemp("vectors-kb")
    cache = folder / "cache"
    docs, questions = write_knowledge_base(folder)
    chunks, vectors = embedded_chunks(docs, cache)
    buffer = io.BytesIO()
    pq.write_table(vector_table(chunks, vectors), buffer)
    (folder / "vectors.parquet").write_bytes(buffer.getvalue())
    root = folder / "saved"
    code = cli.main([
        "analyze", "--vectors", str(folder / "vectors.parquet"), "--questions", str(questions),
        "--out", str(folder / "report.json"), "--cache-dir", str(cache), "--quiet",
        "--save-analysis", str(root / "ants-vectors"),
    ])
    assert code == 0
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    n = report["summary"]["n_chunks"]
    tested = round(report["metrics"]["tested_share"] * n)
    return {
        "parquet": buffer.getvalue(), "questions": questions.read_bytes(), "root": root, "n_chunks": n,
        "zip": zip_folder(root / "ants-vectors"), "verdict": f"({tested} of {n} passages)",
        "wrong_size": _wrong_size_parquet(),
    }


def _wrong_size_parquet() -> bytes:
    rng = np.random.default_rng(0)
    buffer = io.BytesIO()
    pq.write_table(pa.table({"text": ["Ants live in colonies.", "Queens lay eggs."],
                             "embedding": pa.array(rng.normal(size=(2, 1536)).tolist()),
                             "source": ["ants.md", "ants.md"]}), buffer)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def server_log(tmp_path_factory):
    return tmp_path_factory.mktemp("vectors-server") / "streamlit.log"


@pytest.fixture(scope="module")
def server(tmp_path_factory, server_log, data):
    """`streamlit run app.py` with an empty embedding cache and the folder of saved analyses set."""
    cache = tmp_path_factory.mktemp("vectors-browser-cache")
    with streamlit_server(cache, server_log, **{SAVED_ANALYSES_VARIABLE: str(data["root"])}) as url:
        yield url


# The uploader each choice on the Upload page shows: waited for, so files go to it and not the one it replaced.
UPLOADER_LABELS = {"Vectors from your vector store": "Passage vectors (Parquet)",
                   "A saved analysis": "Saved analysis (zip of its folder)"}


def _choose(page, server: str, kind: str) -> None:
    page.goto(server)
    page.get_by_role("heading", name="Upload", exact=True).wait_for()
    page.get_by_test_id("stRadio").get_by_text(kind).click()
    page.get_by_text(UPLOADER_LABELS[kind]).wait_for()


def _verdict(page) -> str:
    page.get_by_role("heading", name="Results", exact=True).wait_for()
    headline = page.get_by_role("heading").filter(has_text="of the knowledge base is tested").first
    headline.wait_for()
    return headline.inner_text()


def test_upload_passage_vectors_and_questions_then_run(server, page, data):
    _choose(page, server, "Vectors from your vector store")
    uploaders = page.get_by_test_id("stFileUploaderDropzoneInput")
    # A file made by another model: read, then refused at the run in the dashboard's words.
    uploaders.nth(0).set_input_files({"name": "openai.parquet", "mimeType": "application/octet-stream",
                                      "buffer": data["wrong_size"]})
    page.get_by_text("2 passages with their vectors (1,536 dimensions) in 1 document, from openai.parquet.").wait_for()
    uploaders.nth(1).set_input_files({"name": "ants.csv", "mimeType": "text/csv", "buffer": data["questions"]})
    page.get_by_text("24 questions in column “question” of ants.csv").wait_for()
    open_page(page, "Configure", "Configure")
    page.get_by_role("button", name="Run analysis").click()
    page.get_by_text(
        "The vectors have 1536 dimensions but all-MiniLM-L6-v2 makes 384; choose the model that made them on the "
        "Configure page."
    ).wait_for()

    # The vectors of the bundled model: the analysis runs and says what the command line said.
    open_page(page, "Upload", "Upload")  # the page remembers what kind of knowledge base is loaded
    page.get_by_text(UPLOADER_LABELS["Vectors from your vector store"]).wait_for()
    page.get_by_test_id("stFileUploaderDropzoneInput").nth(0).set_input_files(
        {"name": "vectors.parquet", "mimeType": "application/octet-stream", "buffer": data["parquet"]}
    )
    page.get_by_text(
        f"{data['n_chunks']} passages with their vectors (384 dimensions) in 3 documents, from vectors.parquet."
    ).wait_for()
    assert "Documents: 3 readable (passages with vectors)" in page.get_by_test_id("stSidebar").inner_text()
    open_page(page, "Configure", "Configure")
    page.get_by_role("button", name="Run analysis").click()
    assert data["verdict"] in _verdict(page)
    assert "inputs changed" not in page.get_by_test_id("stSidebar").inner_text()


def test_open_a_saved_analysis_from_a_zip(server, page, data):
    _choose(page, server, "A saved analysis")
    page.get_by_test_id("stFileUploaderDropzoneInput").nth(0).set_input_files(
        {"name": "ants-vectors.zip", "mimeType": "application/zip", "buffer": data["zip"]}
    )
    page.get_by_role("button", name="Open the saved analysis").click()
    assert data["verdict"] in _verdict(page)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Documents: 3 readable (saved analysis)").first.wait_for()
    assert "inputs changed" not in sidebar.inner_text()
    # Moving to other pages recomputes from the stored vectors: the gaps page shows its verdict too.
    open_page(page, "Gap analysis", "Gap analysis")
    page.get_by_role("heading").filter(has_text="of the knowledge base is tested").first.wait_for()

    # The dashboard saves the whole analysis too, and that zip opens again as the same analysis.
    with page.expect_download() as download:
        page.get_by_role("button", name="The whole analysis (zip)").click()
    assert download.value.suggested_filename == "coverage-analysis.zip"
    saved = load_analysis(download.value.path(), "coverage-analysis.zip")
    original = load_analysis(data["zip"], "ants-vectors.zip")
    assert saved.from_vectors and saved.corpus.vectors.shape == original.corpus.vectors.shape
    assert saved.clustering.labels.tolist() == original.clustering.labels.tolist()
    assert saved.report["metrics"] == original.report["metrics"]
    _choose(page, server, "A saved analysis")
    page.get_by_test_id("stFileUploaderDropzoneInput").nth(0).set_input_files(
        {"name": download.value.suggested_filename, "mimeType": "application/zip",
         "buffer": download.value.path().read_bytes()}
    )
    page.get_by_role("button", name="Open the saved analysis").click()
    assert data["verdict"] in _verdict(page)


def test_open_a_saved_analysis_from_the_servers_folder(server, page, data):
    _choose(page, server, "A saved analysis")
    page.get_by_test_id("stSelectbox").filter(has_text="Or one saved on this server").locator("input").click()
    page.get_by_role("option", name="ants-vectors").click()
    page.get_by_role("button", name="Open the saved analysis").click()
    assert data["verdict"] in _verdict(page)


def test_server_log_stays_quiet(server, server_log):
    """Runs last: no tracebacks in the server log after the sessions above."""
    text = server_log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in text, text[-3000:]
