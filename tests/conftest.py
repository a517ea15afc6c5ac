"""Fixtures shared by every test module; plain helpers are in helpers.py, fakes in fakes.py.

Sections: embedding caches; the fake API server; the synthetic analysis
(no model); the bundled example analysed once per session (real model);
the browser.
"""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import (
    BROWSER_TIMEOUT_MS,
    CHROMIUM,
    CHROMIUM_ARGS,
    EVIL,
    PROJECT,
    screenshot,
    streamlit_server,
)

# The bundled model is loaded from site-packages; nothing may reach a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty embedding cache for one test, also exported to the environment."""
    directory = tmp_path / "embedding-cache"
    monkeypatch.setenv("COVERAGE_CORE_CACHE_DIR", str(directory))
    return directory


@pytest.fixture
def fake_api():
    from tests.fakes import FakeAPIServer

    with FakeAPIServer() as server:
        yield server


@pytest.fixture(scope="module")
def module_cache_dir(tmp_path_factory):
    """An embedding cache for one test module, exported to the environment while it runs."""
    directory = tmp_path_factory.mktemp("embedding-cache")
    previous = os.environ.get("COVERAGE_CORE_CACHE_DIR")
    os.environ["COVERAGE_CORE_CACHE_DIR"] = str(directory)
    yield directory
    if previous is None:
        os.environ.pop("COVERAGE_CORE_CACHE_DIR", None)
    else:
        os.environ["COVERAGE_CORE_CACHE_DIR"] = previous



# ---------------------------------------------------------------- the synthetic analysis (no model)


@pytest.fixture(scope="module")
def analysis():
    """A synthetic analysis (no model): three topics, questions on two of them."""
    from coverage_core.config import AnalysisConfig
    from coverage_core.gap_finding import find_gaps
    from coverage_core.measure import measure
    from coverage_core.results import Corpus, EmbeddedTexts
    from coverage_core.session import cluster_chunks
    from coverage_core.stages.chunking import ChunkingConfig
    from coverage_core.types import Chunk, Document, Question, QuestionSet

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((3, 16)).astype(np.float32)
    topic = np.repeat([0, 1, 2], 20)
    chunk_vectors = centres[topic] + 0.3 * rng.standard_normal((60, 16)).astype(np.float32)
    chunk_vectors /= np.linalg.norm(chunk_vectors, axis=1, keepdims=True)
    names = ["alpha.txt", "beta.txt", "<b>gamma</b>.md"]
    words = ["river delta water flow.", "violin string bow music.", "comet orbit ice tail."]
    chunks = [Chunk(names[t], f"{words[t]} Passage {i} about {words[t]}", 0, 10) for i, t in enumerate(topic)]
    corpus = Corpus([Document(n, "") for n in names], chunks, EmbeddedTexts(chunk_vectors, 0, 60, 0))
    question_vectors = centres[[0, 0, 1, 1, 0, 1]] + 0.3 * rng.standard_normal((6, 16)).astype(np.float32)
    question_vectors = np.vstack([question_vectors, -centres[2:3] + rng.standard_normal((1, 16)).astype(np.float32)])
    question_vectors /= np.linalg.norm(question_vectors, axis=1, keepdims=True)
    texts = ["Where does the river flow?", "How deep is the delta?", "How is a violin tuned?",
             "What is a bow made of?", "=HYPERLINK(\"x\")", "Who plays violin?", EVIL]
    frame = pd.DataFrame({"question": texts})
    questions = QuestionSet(frame, "question", [Question(i, t) for i, t in enumerate(texts)])
    embedded = EmbeddedTexts(question_vectors.astype(np.float32), 0, 7, 0)
    config = AnalysisConfig(chunking=ChunkingConfig(), n_clusters=3)
    clustering = cluster_chunks(corpus, 3, 0)
    return find_gaps(measure(config, corpus, questions, embedded, clustering))


# ---------------------------------------------------------------- the bundled example (real model)


@pytest.fixture(scope="session")
def example_cache(tmp_path_factory):
    """One embedding cache for the analyses of the bundled example: its passages are embedded once."""
    from coverage_core.embeddings import EmbeddingCache

    return EmbeddingCache(tmp_path_factory.mktemp("example-cache"))


@pytest.fixture(scope="session")
def example_analysis(example_cache):
    """The whole bundled example (examples/wiki-qa) analysed once per session with the bundled model.

    τ is set to 0.5, so the figures do not move with calibration. Read it, never change it.
    """
    from coverage_core.config import AnalysisConfig
    from coverage_core.embeddings import make_embedder
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.inputs.questions import read_questions
    from coverage_core.session import analyze

    example = PROJECT / "examples" / "wiki-qa"
    cache = example_cache
    documents = read_documents([example / "docs"]).documents
    questions = read_questions(example / "questions.csv")
    config = AnalysisConfig(support_threshold=0.5)
    return analyze(config, documents, questions, embedder=make_embedder("local"), cache=cache)


# ---------------------------------------------------------------- the browser (tests/test_browser*.py)


@pytest.fixture(scope="module")
def server_log(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("server") / "streamlit.log"


@pytest.fixture(scope="module")
def server(tmp_path_factory, server_log):
    """The app with an empty embedding cache."""
    with streamlit_server(tmp_path_factory.mktemp("browser-cache"), server_log) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing: apt-get update && apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, request):
    """A fresh browser page; a screenshot of it goes to test-artifacts/ when its test fails."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(BROWSER_TIMEOUT_MS)
    failed_before = request.session.testsfailed
    yield page
    if request.session.testsfailed > failed_before:
        screenshot(page, request.node.name)
    context.close()


# ---- Embedding precision (tests/test_embeddings_local.py, tests/test_embeddings_cache.py) ----
@pytest.fixture(params=["fp32", "bf16"])
def forced_precision(request, monkeypatch):
    """Runs a test once per precision, with ``COVERAGE_CORE_PRECISION`` set to it.

    bf16 runs on any CPU (only slower without AMX units), so both paths are
    tested on every machine, not only the one this CPU's "auto" picks.
    """
    from coverage_core.embeddings.local import PRECISION_VARIABLE

    monkeypatch.setenv(PRECISION_VARIABLE, request.param)
    return request.param
# ---- end of embedding precision ----
