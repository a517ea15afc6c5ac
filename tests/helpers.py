"""Plain helpers shared by several test modules (fixtures live in conftest.py, fakes in fakes.py).

Sections: paths; the LLM client; the lexical-coverage reference;
command-line checks before any work; three topics for gap tests; the synthetic analysis's optional results; a
hand-made report; a small knowledge base with real vectors; the browser.
"""

from __future__ import annotations

import contextlib
import csv
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

# Only the standard library, numpy and pytest at the top: conftest.py imports this module, and a
# half-edited core module must fail the tests that use it, not every test's collection.
if TYPE_CHECKING:
    from coverage_core.suggest.llm import ChatClient

PROJECT = Path(__file__).resolve().parents[1]
FIXTURES = PROJECT / "tests" / "fixtures"
# Copies of real files from the shared data (see tests/fixtures/README.md), so a
# plain clone with nothing beside it runs every test.
PDFS = FIXTURES / "pdfs"
WIKI = FIXTURES / "wiki-qa"


def chat_client(server, api_key: str, **overrides) -> ChatClient:
    """A ChatClient for the fake API ``server`` (tests/fakes.py): model ``fake-chat``,
    no retries, a 5 s timeout; ``overrides`` replace any of these settings."""
    from coverage_core.suggest.llm import ChatClient, LLMConfig

    settings = dict(model="fake-chat", base_url=server.url + "/v1", api_key=api_key, max_retries=0, timeout=5)
    settings.update(overrides)
    return ChatClient(LLMConfig(**settings))


def plain_lexical_coverage(question_texts, chunk_texts):
    """The documented rule with sets and a dense chunk x word matrix: every
    chunk's stems, the misspelt words' edits looked up one by one."""
    from coverage_core.stages import lexical

    chunk_stems = [{lexical.normalize_word(w) for w in lexical.words_of(t)} for t in chunk_texts]
    terms = [lexical._question_terms(t) for t in lexical.Reading.questions(question_texts)]
    stems = list(dict.fromkeys(t for ts in terms for t in ts))
    df = {t: sum(t in c for c in chunk_stems) for t in stems}
    fixable = [t for t in stems if df[t] == 0 and len(t) >= lexical.MIN_FIXABLE_LENGTH and t.isalpha()]
    fixes = {}
    for t in fixable[: lexical.MAX_SPELLING_FIXES]:
        edits = {lexical.normalize_word(e) for e in lexical._one_edit(t)}
        counted = [(sum(e in c for c in chunk_stems), e) for e in edits if len(e) >= 3]
        counted = [c for c in counted if c[0]]
        if counted:
            fixes[t] = max(counted)[1]  # the most frequent; of equals, the greatest
    holds = {t: np.array([fixes.get(t, t) in c for c in chunk_stems], dtype=bool) for t in stems}
    n = len(chunk_texts)
    coverage, best, absent = [], [], []
    for ts in terms:
        if not ts:
            coverage.append(np.nan)
            best.append(-1)
            absent.append([])
            continue
        idf = np.array([np.log((1 + n) / (1 + holds[t].sum())) + 1 for t in ts])
        shares = np.stack([holds[t] for t in ts], axis=1).astype(float) @ (idf / idf.sum())
        top = int(np.argmax(shares)) if n else 0
        value = shares[top] if n else 0.0
        coverage.append(min(value, 1.0))
        best.append(top if value > 0 else -1)
        absent.append([t.decode() for t in ts if not holds[t].any()])
    return np.array(coverage, dtype=float), np.array(best), absent


# ---------------------------------------------------------------- command-line checks before any work


def refuse_work(monkeypatch, reason: str, *, embedder: bool = True) -> None:
    """From now on, reading a document or question file (and, with ``embedder``, building an embedder)
    fails the test with AssertionError(``reason``): for checks that must come before any work."""
    from coverage_core import embedding_steps
    from coverage_core.inputs import ingest, questions

    def refuse(*args, **kwargs):
        raise AssertionError(reason)

    monkeypatch.setattr(ingest, "read_documents", refuse)
    monkeypatch.setattr(questions, "read_questions", refuse)
    if embedder:
        monkeypatch.setattr(embedding_steps, "build_embedder", refuse)


# ---------------------------------------------------------------- three topics for gap tests
# Four passages each, on topics that share no words, so each is its own cluster and its own gap.

VIOLIN = [
    "The violin is a wooden string instrument played with a bow. Violin makers in Cremona built famous violins.",
    "Antonio Stradivari crafted violins whose varnish and spruce tops are still studied by violin makers.",
    "A violin bow is strung with horsehair; rosin helps the bow grip the strings of the violin.",
    "Violin concertos by Vivaldi and Bach remain popular, and every orchestra seats many violin players.",
]
JAKARTA = [
    "Jakarta is the capital of Indonesia, on the northwest coast of Java, with heavy traffic and flooding.",
    "The Jakarta metropolitan area is among the largest urban areas; Jakarta suffers land subsidence.",
    "Indonesia plans to move its capital from Jakarta to Nusantara in East Kalimantan because Jakarta is sinking.",
    "The city of Jakarta hosts many museums, and the old town of Jakarta was called Batavia.",
]
BREAD = [
    "Sourdough bread rises with a starter of wild yeast and lactic acid bacteria.",
    "Bakers knead bread dough to develop gluten, then let the dough proof before baking.",
    "A hot oven and steam give bread a crisp crust and an open crumb.",
    "Whole wheat bread uses flour milled from the entire grain, including bran and germ.",
]


# ---------------------------------------------------------------- the synthetic analysis's optional results
# The synthetic ``analysis`` fixture (conftest.py) with an applied question set and each optional check,
# read by the HTML report tests and the JSON report tests alike.

EVIL = "<script>alert('owned')</script>"
LONG_PASSAGE = "The comet's tail points away from the sun. " * 30


def improved_analysis(analysis, texts=("Where do comets orbit?",)):
    """``analysis`` rescored with ``texts`` appended (the third topic's chunks stand in for their vectors)."""
    from coverage_core.editing import add_questions
    from coverage_core.measure import measure
    from coverage_core.results import EmbeddedTexts

    questions = add_questions(analysis.questions, list(texts))
    vectors = np.vstack([analysis.question_vectors, analysis.corpus.vectors[50:50 + len(texts)]])
    return measure(
        analysis.config, analysis.corpus, questions, EmbeddedTexts(vectors, 0, len(vectors), 0), analysis.clustering,
    )


def accepted_questions():
    """One LLM suggestion whose text is a script, one draft worded by the user (a table row), one user row."""
    from coverage_core.suggest.questions import Suggestion

    return [
        Suggestion(cluster=2, text=EVIL, origin="llm", document="<b>gamma</b>.md", passage=LONG_PASSAGE),
        {"accept": True, "question": "Where do comets orbit?", "cluster": 2, "origin": "draft",
         "document": "<b>gamma</b>.md", "passage": "comet orbit ice tail."},
        {"question": "My own question?", "cluster": None, "origin": "you", "document": "", "passage": ""},
    ]


def retrieval_result(analysis):
    from coverage_core.checks.retrieval import evaluate_retrieval

    relevant = ["alpha.txt", "alpha.txt", "beta.txt", "beta.txt", None, "alpha.txt", "<b>gamma</b>.md|missing.pdf"]
    return evaluate_retrieval(
        analysis.question_vectors, analysis.corpus.vectors, analysis.corpus.chunks, relevant, 3,
        rows=analysis.questions.rows, question_texts=analysis.questions.texts, relevant_column="<i>source</i>",
        documents=analysis.corpus.documents,
    )


def answerability_result(analysis):
    from coverage_core.checks.answerability import answerability
    from coverage_core.checks.answerability_labels import QuestionLabels

    labels = QuestionLabels("<i>answerable</i>", np.array([1, 1, 1, 1, 0, 1, 0], dtype=float))
    similarity = analysis.question_table["max_similarity"].to_numpy(dtype=float)
    return labels, answerability(similarity, labels.labels)


def subquestion_result(analysis):
    from coverage_core.checks.subquestions import Decomposition, SubQuestion, SubQuestionConfig, score_subquestions

    decompositions = [
        Decomposition(6, EVIL, (SubQuestion(EVIL, "core"), SubQuestion("What is a comet?", "background"))),
        Decomposition(0, "Where does the river flow?", status="failed", reason="<b>bad</b> reply"),
    ]
    chunks = analysis.corpus.vectors
    return score_subquestions(
        decompositions, analysis.question_vectors[[6, 0]], chunks, lambda texts: chunks[: len(texts)],
        SubQuestionConfig(top_k=3), model="<fake-model>",
    )


def optional_check_results(analysis) -> dict:
    """The three optional checks on ``analysis``, as keyword arguments of both report builders.

    Returns ``retrieval`` (:func:`retrieval_result`), ``answerability`` and ``labels``
    (:func:`answerability_result`) and ``subquestions`` (:func:`subquestion_result`): the JSON and the HTML
    report are checked on the same results.
    """
    labels, answerability = answerability_result(analysis)
    return {"retrieval": retrieval_result(analysis), "answerability": answerability, "labels": labels,
            "subquestions": subquestion_result(analysis)}


# ---------------------------------------------------------------- a hand-made report
# A schema-1 JSON report as dicts, for the CI outputs (JUnit, diff) without running an analysis.

REPORT_METRICS = {"basic": 0.72, "weighted": 0.72, "balanced": 0.65, "multi_threshold": 0.5, "multi_n": 0.55}


def report_question(row, text, document="Drum.txt", outlier=False):
    return {
        "row": row, "text": text, "max_similarity": 0.6, "nearest_document": document, "cluster": 0,
        "outlier_score": 0.1, "lof_score": 1.0, "is_outlier": outlier, "duplicate_of": None,
    }


def report_cluster(ident, coverage, size=10, gap_rank=None, themes=(), passages=("A passage.",), suggestions=()):
    return {
        "id": ident, "size": size, "share": size / 40, "coverage": coverage,
        "multi_threshold_coverage": coverage, "multi_n_coverage": coverage, "n_questions": 3,
        "is_gap": gap_rank is not None, "gap_rank": gap_rank, "themes": list(themes),
        "suggested_questions": [{"text": s, "origin": "draft", "document": "Koala.txt", "passage": "p"} for s in suggestions],
        "representative_chunks": list(passages),
    }


def make_report(**changes):
    """A minimal valid schema-1 report: 3 clusters (1 gap), 3 documents (1 below 0.7), 3 questions."""
    report = {
        "schema_version": 1,
        "config": {
            "embedding": {"provider": "local", "model": None, "dimensions": None, "base_url": None},
            "chunking": {"chunk_size": 1000, "chunk_overlap": 200},
            "n_clusters": None, "random_state": 0, "strictness": None, "multi_threshold": 0.5, "multi_n": 2,
            "redundancy_threshold": 0.95, "gaps": {"gap_threshold": 0.7, "size_weight": 0.3},
            "n_clusters_used": 3, "screening_threshold": 1.2,
            "inputs": {"documents": ["Drum.txt", "Flute.txt", "Koala.txt"], "questions_file": "q.csv"},
        },
        "metrics": dict(REPORT_METRICS),
        "summary": {"n_documents": 3, "n_chunks": 40, "n_questions": 3, "n_outliers": 1,
                    "n_blank_questions": 0, "n_chunks_over_token_limit": 0, "embedded": 0, "from_cache": 43},
        "clusters": [
            report_cluster(0, 0.81, size=15),
            report_cluster(1, 0.42, size=10, gap_rank=1, themes=("koala", "eucalyptus", "marsupial"),
                     passages=("The koala is an arboreal herbivorous marsupial.",),
                     suggestions=("What do koalas eat?",)),
            report_cluster(2, 0.77, size=15),
        ],
        "documents": [
            {"name": "Koala.txt", "n_chunks": 10, "coverage": 0.41, "is_low": True},
            {"name": "Drum.txt", "n_chunks": 15, "coverage": 0.8, "is_low": False},
            {"name": "Flute.txt", "n_chunks": 15, "coverage": 0.78, "is_low": False},
        ],
        "questions": [
            report_question(0, "What is a drum?"),
            report_question(1, "How is a flute  played?", "Flute.txt"),
            report_question(2, "Where do zebras live?", outlier=True),
        ],
        "redundant_pairs": [],
        "warnings": [],
    }
    report.update(changes)
    return report


# ---------------------------------------------------------------- a small knowledge base with real vectors
# Three documents cut from the Ant article and their chunks' vectors from the real local model, as the
# user's own vector store would hold them (Parquet), for the vector-store, saved-analysis and browser tests.

def write_knowledge_base(folder):
    """Three documents cut from the Ant article, and 20 questions about ants plus 4 about Jakarta."""
    docs = folder / "docs"
    docs.mkdir()
    text = (WIKI / "articles" / "Ant.txt").read_text(encoding="utf-8")
    groups, size = [[], [], []], 0
    for paragraph in (p for p in text.split("\n\n") if p.strip()):
        if size > 18_000:
            break
        groups[min(size // 6000, 2)].append(paragraph)
        size += len(paragraph)
    for number, group in enumerate(groups, start=1):
        (docs / f"ant-{number}.txt").write_text("\n\n".join(group), encoding="utf-8")
    pairs = (WIKI / "question_answer_pairs.txt").read_text(encoding="latin-1").splitlines()[1:]
    rows = [line.split("\t") for line in pairs]
    ants = list(dict.fromkeys(r[1] for r in rows if r[0] == "Ant"))[:20]
    jakarta = list(dict.fromkeys(r[1] for r in rows if r[0] == "Jakarta"))[:4]
    questions = folder / "questions.csv"
    with questions.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "owner"])
        writer.writerows([question, "qa"] for question in ants + jakarta)
    return docs, questions


def embedded_chunks(docs, cache_dir):
    """The chunks ``--docs`` would make of ``docs`` and their vectors from the real local model."""
    from coverage_core.embedding_steps import chunk_corpus
    from coverage_core.embeddings import EmbeddingCache, embed_texts, make_embedder
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.stages.chunking import ChunkingConfig

    chunks = chunk_corpus(read_documents([docs]).documents, ChunkingConfig())
    vectors = embed_texts([c.text for c in chunks], make_embedder("local"), EmbeddingCache(cache_dir)).vectors
    return chunks, vectors


def vector_table(chunks, vectors, names=("chunk", "embedding", "source", "page_number"), fixed=False):
    """The chunks and their vectors as a pyarrow table with the column ``names`` (text, vector, document, page)."""
    import pyarrow as pa

    matrix = np.asarray(vectors, dtype=np.float32)
    if fixed:
        column = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])
    else:
        column = pa.array([row.tolist() for row in matrix], type=pa.list_(pa.float64()))
    text, vector, document, page = names
    return pa.table({
        text: [c.text for c in chunks], vector: column, document: [c.document for c in chunks],
        page: pa.array([c.page for c in chunks], type=pa.int64()),
    })


# ---------------------------------------------------------------- the browser
# Debian's Chromium driven by Playwright against `streamlit run app.py` (the browser fixtures are in conftest.py).

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
ARTIFACTS = PROJECT / "test-artifacts"
BROWSER_TIMEOUT_MS = 240_000  # two cores, a model to load, other jobs running


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(server):
    """Run ``server`` (a ``socketserver`` server, already bound) on a daemon thread while the block runs.

    Yields ``server``; afterwards it is shut down and its socket closed, so the test servers here all start and
    stop one way.
    """
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def wait_until_answering(url: str, process: subprocess.Popen, seconds: float) -> str | None:
    """Poll ``url`` every half second until it answers 200 (None), or say why it never did: the server process
    stopped, or ``seconds`` passed."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return None
        except OSError:
            pass
        if process.poll() is not None:
            return f"stopped (exit {process.returncode}) before answering"
        if time.monotonic() > deadline:
            return f"did not answer {url} within {seconds:g} s"
        time.sleep(0.5)


@contextlib.contextmanager
def streamlit_server(cache_dir: Path, log_path: Path, **extra_env: str):
    """`streamlit run app.py` on a free local port with the embedding cache ``cache_dir``; yields its URL.

    It runs with the project's own .streamlit/config.toml, as run.sh does.
    """
    port = free_port()
    env = dict(os.environ)
    env.update(COVERAGE_CORE_CACHE_DIR=str(cache_dir), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra_env)
    log = log_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", f"--server.port={port}",
         "--server.address=127.0.0.1", "--server.headless=true", "--browser.gatherUsageStats=false"],
        cwd=PROJECT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    if wait_until_answering(f"{url}/_stcore/health", process, 120) is not None:
        process.kill()
        pytest.fail(f"streamlit did not start; see {log.name}")
    try:
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@contextlib.contextmanager
def laptop_page(browser, height: int = 800, failure_shot: str | None = None, **context_options):
    """A page 1280 px wide (a laptop's screen), ``height`` px high, in a browser context of its own that is
    closed afterwards; ``context_options`` go to ``browser.new_context``. When the block raises, the page is
    first saved as screenshot ``failure_shot`` (when named), to show where it stopped."""
    context = browser.new_context(viewport={"width": 1280, "height": height}, **context_options)
    page = context.new_page()
    page.set_default_timeout(BROWSER_TIMEOUT_MS)
    try:
        yield page
    except Exception:
        if failure_shot:
            screenshot(page, failure_shot)
        raise
    finally:
        context.close()


def open_example_results(page, server: str) -> None:
    """Open the app at ``server``, click "Try the example" and wait for the Results page's heading."""
    page.goto(server)
    page.get_by_role("button", name="Try the example").click()
    page.get_by_role("heading", name="Results", exact=True).wait_for()


def open_page(page, name: str, heading: str) -> None:
    """Click ``name`` in the sidebar and wait for the page's ``heading``."""
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=name).click()
    page.get_by_role("heading", name=heading, exact=True).wait_for()


def open_every_expander(page, passes: int = 5) -> int:
    """Open every expander on the page, outer ones first, so nested ones become visible; return how many it
    opened. A closed expander is clicked only while its summary is visible; one already open is left alone (a
    click would close it)."""
    opened = 0
    for _ in range(passes):
        closed = [details for details in page.get_by_test_id("stExpander").locator("details").all()
                  if details.get_attribute("open") is None and details.locator("summary").first.is_visible()]
        if not closed:
            break
        for details in closed:
            details.locator("summary").first.click(timeout=30_000)
        opened += len(closed)
        page.wait_for_timeout(500)
    return opened


def screenshot(page, name: str):
    """A full-page screenshot in test-artifacts/, for a failure a test catches itself."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


# Geometry of every Plotly figure on screen, read from the DOM: the figure's box,
# its plotting area (cartesian or polar), its legend and its title.
FIGURE_GEOMETRY = """
els => els.filter(el => el.offsetParent !== null && el._fullLayout).map(el => {
  const box = el.getBoundingClientRect();
  const rect = node => { if (!node) return null; const b = node.getBoundingClientRect();
                         return {left: b.left, right: b.right, top: b.top, bottom: b.bottom, width: b.width}; };
  const size = el._fullLayout._size;  // the plotting area inside the margins, in px
  const legend = el.querySelector('.legend');
  const title = el.querySelector('.gtitle');
  return {
    left: box.left, right: box.right, width: box.width,
    area: {left: box.left + size.l, right: box.left + size.l + size.w, bottom: box.top + size.t + size.h,
           width: size.w},
    legend: rect(legend), legendText: legend ? legend.textContent : '',
    title: rect(title), titleText: title ? title.textContent : '',
  };
})
"""


def check_figures(page, where: str, at_least: int = 1) -> list[dict]:
    """Every figure in view reads at this width: the title fits, the legend leaves the plot
    most of the width (or sits below it), and no cluster is called by its number."""
    page.locator(".js-plotly-plot").first.wait_for()
    page.wait_for_timeout(1500)  # Plotly lays out after the element appears
    figures = page.locator(".js-plotly-plot").evaluate_all(FIGURE_GEOMETRY)
    assert len(figures) >= at_least, f"{where}: {len(figures)} figure(s)"
    for figure in figures:
        name = f"{where}: {figure['titleText']!r}"
        assert figure["titleText"].strip(), f"{where}: a figure without a title"
        assert figure["title"]["right"] <= figure["right"] + 1, f"{name}: the title is cut off"
        if figure["legend"] and figure["legend"]["width"] > 0 and figure["area"]:
            below = figure["legend"]["top"] >= figure["area"]["bottom"] - 1
            assert below or figure["legend"]["width"] <= 0.35 * figure["width"], (
                f"{name}: the legend takes {figure['legend']['width']:.0f} of {figure['width']:.0f} px"
            )
            assert figure["legend"]["right"] <= figure["right"] + 1, f"{name}: the legend is cut off"
        if figure["area"]:
            assert figure["area"]["width"] >= 0.5 * figure["width"], f"{name}: the plot is squeezed"
        assert not re.search(r"\bcluster \d+\b|\bC\d+\b", figure["legendText"]), (
            f"{name}: clusters are named by number in the legend: {figure['legendText'][:200]!r}"
        )
    return figures


def measured_analysis(documents, questions, embedder):
    """The measured analysis with the default settings (chunks, clusters, screening, figures), without gap
    suggestions: the tests that use it need no model writing questions."""
    from coverage_core import embedding_steps, session
    from coverage_core.config import AnalysisConfig
    from coverage_core.measure import measure

    config = AnalysisConfig()
    corpus = embedding_steps.embed_corpus(documents, config.chunking, embedder, None)
    embedding = embedding_steps.embed_questions(questions, embedder, None)
    calibration = session.calibrate_corpus(config, corpus, embedder, None)
    clustering = session.cluster_chunks(corpus, config.n_clusters, config.random_state)
    return measure(config, corpus, questions, embedding, clustering, calibration=calibration)
