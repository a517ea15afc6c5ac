"""What the dashboard tests share: a seeded session of a small real slice, and running a page.

Each test module embeds the slice once, with the real bundled model, into
its own temporary cache (``module_cache_dir`` in conftest.py), so one
module's embeddings never change what another module sees as cached.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from streamlit.testing.v1 import AppTest

from coverage_core import embedding_steps
from coverage_core.embeddings import EmbeddingCache, make_embedder
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from coverage_core.session import AnalysisSession
from tests.helpers import PROJECT
from ui import engine, state
from ui.formats import WORD_JOINER

EXAMPLE = PROJECT / "examples" / "wiki-qa"
DOCS = ["Drum.txt", "Flute.txt", "Koala.txt"]
APP = str(PROJECT / "app.py")
TIMEOUT = 300  # two cores shared with other jobs: be patient


def subset_csv(articles: Sequence[str] = ("Drum", "Flute", "Zebra"), drop: Sequence[str] = ()) -> bytes:
    """The example's questions about ``articles``, as CSV, without the columns in ``drop``."""
    frame = read_questions(EXAMPLE / "questions.csv").frame
    frame = frame[frame["article"].isin(list(articles))].drop(columns=list(drop))
    return frame.reset_index(drop=True).to_csv(index=False).encode("utf-8")


def seed_session(document_set, data: bytes, settings: state.Settings, embedder, cache, names=DOCS):
    """Session-state values of a finished run, and the embedded inputs they hold.

    Returns ``(values, inputs)``: ``values`` maps session keys to what the
    pages store after a run; ``engine.tune(inputs, settings, ...)`` gives its
    analysis.
    """
    questions = read_questions(data, name="subset.csv")
    corpus = embedding_steps.embed_corpus(document_set.documents, engine.chunking_config(settings), embedder, cache)
    embedding = embedding_steps.embed_questions(questions, embedder, cache)
    fingerprint = engine.documents_fingerprint(document_set.documents)
    corpus_key = engine.corpus_key(fingerprint, settings)
    question_key = engine.question_key(engine.questions_fingerprint(questions), settings)
    values = {
        state.SETTINGS: settings,
        state.DOCUMENTS: state.LoadedDocuments(
            fingerprint, tuple(names), tuple(document_set.documents), tuple(str(w) for w in document_set.warnings)
        ),
        state.QUESTION_FILE: state.QuestionFile("subset.csv", data),
        state.QUESTIONS: questions,
        state.CORPUS: state.Stage(corpus_key, corpus),
        state.QUESTION_VECTORS: state.Stage(question_key, (questions, embedding)),
    }
    return values, engine.EmbeddedInputs(corpus, corpus_key, questions, embedding, question_key)


def analysis_of(values: dict, inputs: engine.EmbeddedInputs):
    """The analysis the seeded session shows (default overrides, a fresh analysis session)."""
    return engine.tune(inputs, values[state.SETTINGS], state.Overrides(), AnalysisSession())


def example_run(settings: state.Settings, cache_dir):
    """A finished run of the example's ``DOCS`` with :func:`subset_csv`'s questions, embedded by the real local
    model into the cache in ``cache_dir``.

    Returns ``(values, analysis, inputs, embedder, cache)``: the session values (:func:`seed_session`), the
    analysis they show (:func:`analysis_of`), the embedded inputs, and the embedder and cache for later embedding.
    """
    embedder, cache = make_embedder("local"), EmbeddingCache(cache_dir)
    documents = read_documents([EXAMPLE / "docs" / name for name in DOCS])
    values, inputs = seed_session(documents, subset_csv(), settings, embedder, cache)
    return values, analysis_of(values, inputs), inputs, embedder, cache


def run_page(page: str | None, values: dict | None = None) -> AppTest:
    """The app with ``values`` in session state, switched to ``page``; fails on any exception."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in (values or {}).items():
        at.session_state[key] = value
    at.run()
    if page is not None:
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def show_results_tab(at: AppTest, tab: str) -> None:
    """Switch the Results page to its tab labelled ``tab`` and run the page again."""
    at.session_state[state.W_RESULTS_TABS] = tab
    at.run()


_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def shown(markdown: str) -> str:
    """Text as the page shows it: the Markdown escapes and invisible word joiners put around user text removed."""
    return _ESCAPED.sub(r"\1", markdown).replace(WORD_JOINER, "")


def texts(elements) -> list[str]:
    return [shown(element.value) for element in elements]


def every_text(at: AppTest) -> str:
    """Everything the page sends to the browser: every element's fields (labels, values, help, bodies)."""
    found: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            found.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(found)


def metric(at: AppTest, label: str) -> str:
    found = [m for m in at.metric if shown(m.label) == label]
    assert found, f"no metric {label!r} among {[m.label for m in at.metric]}"
    return found[0].value


def secondary_score(at: AppTest, label: str) -> str:
    """A relative score as the Results page's "Secondary scores" expander shows it ("**Basic 0.406** — …")."""
    for text in texts(at.markdown):
        if text.startswith(f"**{label} "):
            return text[len(label) + 3:].split("**", 1)[0]
    raise AssertionError(f"no secondary score {label!r}")
