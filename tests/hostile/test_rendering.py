"""No user text is ever rendered as Markdown or HTML (issue 22).

Column names, file names, questions, document text, model names and core messages that quote them carry
payloads: a Markdown image (a tracking beacon the browser would fetch), raw HTML, a script, a link, LaTeX and
Streamlit's own directives. Every element of the dashboard that reads Markdown must show them as written; the
Plotly figures must show them as text (Plotly reads a subset of HTML in labels and hovers); the HTML report
must escape them. Markdown is rendered with markdown-it (CommonMark, raw HTML on) to see what a browser would
get.
"""

from __future__ import annotations

import html
import io
import json
import re
from types import SimpleNamespace

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from coverage_core.embeddings import EmbeddingCache, make_embedder
from coverage_core.outputs import plots
from coverage_core.outputs.html_report import build_html_report
from coverage_core.types import Document
from tests.app_support import EXAMPLE, analysis_of, run_page, seed_session
from ui import formats, state, widgets
from ui.messages import shown_message, shown_messages

BEACON = "http://127.0.0.2:9/beacon.png"
IMAGE = f"![x]({BEACON})"
TAG = f'<img src="{BEACON}">'
PAYLOADS = (
    IMAGE,
    TAG,
    "<script>alert('owned')</script>",
    f"[click]({BEACON}) <{BEACON}> www.example.com a@b.example",
    "**bold** _em_ ~~gone~~ `code` $x^2$ $$y$$ :red[red] :material/home: &lt;b&gt;",
    "# heading\n- item\n> quote\n1. one\n\nText\n===\n| a | b |\n|---|---|\n| 1 | 2 |",
    "a\\*b \\ ends with a backslash \\",
)
# What a Markdown renderer makes of markup: any of these in the output means user text became markup.
MARKUP = re.compile(r"<(?!/?p>|br\s*/?>)[a-z/!]", re.IGNORECASE)
RENDER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def rendered(markdown: str) -> str:
    return RENDER.render(markdown)


# GitHub's autolink literals, as Streamlit's renderer finds them in the text after escapes are undone.
AUTOLINK = re.compile(r"(https?://|www(?=\.))[-.\w]+|[-.\w+]+@[-\w]+(?:\.[-\w]+)+", re.IGNORECASE)


def rendered_text(markdown: str) -> str:
    """The text nodes of the rendering, as the autolinker sees them (invisible word joiners kept)."""
    body = re.sub(r"<br\s*/?>", "\n", re.sub(r"</?p>", "", rendered(markdown))).strip()
    return html.unescape(body)


def shown_text(markdown: str) -> str:
    """The text a reader sees: rendered, paragraphs joined, entities decoded."""
    return rendered_text(markdown).replace(formats.WORD_JOINER, "")


def assert_no_markup(markdown: str, where: str) -> None:
    output = rendered(markdown)
    assert not MARKUP.search(output), f"{where}: {markdown!r} renders as {output!r}"
    assert not AUTOLINK.search(rendered_text(markdown)), f"{where}: {markdown!r} would be a link"


# ---------------------------------------------------------------- the escaping helpers


@pytest.mark.parametrize("payload", PAYLOADS)
def test_markdown_text_shows_each_payload_as_written(payload):
    escaped = formats.markdown_text(payload)
    assert_no_markup(escaped, "markdown_text")
    # Line breaks aside (a paragraph's lines are joined by the renderer), every character is shown.
    assert " ".join(shown_text(escaped).split()) == " ".join(payload.split())
    assert widgets.plain(payload) == escaped  # one helper, wherever the pages call it


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_raw_payloads_would_be_markup(payload):
    """The check above can fail: unescaped, each payload (but the backslash one) renders as markup or a link."""
    if "backslash" in payload:
        assert shown_text(payload) != payload
    else:
        assert MARKUP.search(rendered(payload)) or AUTOLINK.search(rendered_text(payload))


def test_core_messages_are_escaped_for_the_alerts_that_show_them():
    message = f"Could not read {IMAGE}.pdf (or --pdf-password on the command line): {TAG}"
    shown = shown_message(message)
    assert_no_markup(shown, "shown_message")
    assert "--" not in shown_text(shown) and IMAGE in shown_text(shown) and TAG in shown_text(shown)
    assert shown_messages([message, message]) == [shown]


# ---------------------------------------------------------------- the pages (AppTest)
MARKDOWN_ELEMENTS = ("markdown", "caption", "success", "info", "warning", "error", "title", "header", "subheader")


def markdown_bodies(at) -> list[tuple[str, str]]:
    """(kind, Markdown) of every element of the page that Streamlit renders as Markdown: bodies, labels, options
    of radios, expander titles, metric labels and values, tooltips."""
    found = []
    for kind in MARKDOWN_ELEMENTS:
        found += [(kind, str(element.value)) for element in getattr(at, kind)]
    for metric in at.metric:
        found += [("metric", metric.label), ("metric", str(metric.value)), ("metric help", metric.proto.help or "")]
    for kind in ("button", "checkbox", "toggle", "selectbox", "multiselect", "slider", "text_input"):
        for widget in getattr(at, kind):
            found += [(kind, widget.label), (f"{kind} help", widget.help or "")]
    for radio in at.radio:
        found += [("radio", radio.label), *(("radio option", str(option)) for option in radio.options)]
    for expander in at.expander:
        found.append(("expander", expander.label))
    for tab in at.tabs:
        found.append(("tab", tab.label))
    return found


# What user text must never become on a page (the page's own bold, lists and code are fine): an image, a link,
# raw HTML (a renderer that passes it through would make any of these), or anything pointing at the beacon host.
DANGER = re.compile(r"<(?:img|a|script|iframe|object|embed|link|style|svg|video|audio|source|form|input)\b",
                    re.IGNORECASE)


def assert_page_shows_no_markup(at, where: str) -> list[str]:
    bodies = markdown_bodies(at)
    assert bodies, where
    for kind, body in bodies:
        output = rendered(body)
        assert not DANGER.search(output), f"{where} {kind}: {body!r} renders as {output!r}"
        assert not any("127.0.0.2" in tag for tag in re.findall(r"<[^>]*>", output)), f"{where} {kind}: {output!r}"
        assert not AUTOLINK.search(rendered_text(body)), f"{where} {kind}: {body!r} would be a link"
    return [shown_text(body) for _, body in bodies]


HEADER = f"{IMAGE} {TAG}"
QUESTIONS = (
    f"What does a drum {IMAGE} sound like?",
    f"What is a drum head {TAG} made of?",
    "Who plays a drum kit <script>alert('owned')</script> in a band?",
    "How is a drum tuned?",
)


def hostile_csv() -> bytes:
    frame = pd.DataFrame({"question": QUESTIONS, HEADER: [f"{q} (again)" for q in QUESTIONS]})
    out = io.StringIO()
    frame.to_csv(out, index=False)
    return out.getvalue().encode("utf-8")


def test_upload_shows_a_hostile_header_and_file_name_as_written():
    at = run_page(None)
    at.file_uploader(key=state.W_CSV_UPLOADER).set_value([(f"{TAG}.csv", hostile_csv(), "text/csv")]).run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key=state.W_QUESTION_COLUMN).set_value(HEADER).run()
    assert not at.exception, [e.value for e in at.exception]
    assert state.QUESTIONS in at.session_state and at.session_state[state.QUESTIONS].question_column == HEADER
    shown = assert_page_shows_no_markup(at, "upload")
    # The column and the file name are named in the success message and the sidebar, as written.
    assert any(HEADER in text and f"{TAG}.csv" in text for text in shown), shown
    assert any(f"Questions: {len(QUESTIONS)} in column “{HEADER}”" in text for text in shown), shown


@pytest.fixture(scope="module")
def cache_dir(module_cache_dir):
    return module_cache_dir


@pytest.fixture(scope="module")
def hostile_session(cache_dir):
    """A finished run whose document names, document text and questions carry the payloads (the real model)."""
    names = (f"Drum {IMAGE}.txt", f"Koala {TAG}.txt")
    texts = [
        (EXAMPLE / "docs" / "Drum.txt").read_text(encoding="utf-8") + f"\n\nA drum {IMAGE} and a {TAG} tag.",
        (EXAMPLE / "docs" / "Koala.txt").read_text(encoding="utf-8"),
    ]
    documents = SimpleNamespace(documents=[Document(n, t) for n, t in zip(names, texts)], warnings=[])
    settings = state.Settings(n_clusters=4, llm_model=f"gpt {IMAGE}")
    values, inputs = seed_session(
        documents, hostile_csv(), settings, make_embedder("local"), EmbeddingCache(cache_dir), names=names,
    )
    return values, analysis_of(values, inputs)


RESULTS_TABS = ("Clusters", "Documents", "Off-topic questions", "Near-duplicates")


@pytest.mark.slow
@pytest.mark.parametrize("tab", RESULTS_TABS)
def test_results_shows_hostile_documents_and_questions_as_written(hostile_session, tab):
    values, analysis = hostile_session
    at = run_page("pages/3_results.py", {**values, state.W_RESULTS_TABS: tab})
    shown = assert_page_shows_no_markup(at, f"results {tab}")
    # No question is about koalas: the verdict names that document, as written.
    assert any(f"Koala {TAG}.txt" in text for text in shown), shown


@pytest.mark.slow
@pytest.mark.parametrize("page", ["pages/4_gaps.py", "pages/5_fitness.py", "pages/7_retrieval.py"])
def test_other_pages_show_hostile_inputs_as_written(hostile_session, page):
    values, analysis = hostile_session
    at = run_page(page, values)
    shown = assert_page_shows_no_markup(at, page)
    if page.endswith("4_gaps.py"):
        # Some gap is a hostile document's topic; its suggestions name the document as written.
        documents = {chunk.document for chunk in analysis.corpus.chunks}
        assert any(name in text for text in shown for name in documents), shown


# ---------------------------------------------------------------- the figures (Plotly reads HTML in text)
FIGURE_MARKUP = re.compile(r"<(?!/?(?:br|b|i|extra)>)[a-z/!]", re.IGNORECASE)


def figure_strings(figure) -> list[str]:
    found: list[str] = []

    def walk(value):
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk(json.loads(figure.to_json()))
    return found


def assert_figure_escaped(figure, where: str) -> list[str]:
    """No string of ``figure`` (titles, ticks, legend names, hover templates and the data they print) holds user
    markup; Plotly's own tags (line breaks, bold) are allowed."""
    strings = figure_strings(figure)
    assert strings, where
    for text in strings:
        assert not FIGURE_MARKUP.search(text), f"{where}: {text[:200]!r}"
        assert "<b>topic" not in text and TAG not in text, f"{where}: {text[:200]!r}"
    return strings


@pytest.mark.slow
def test_figures_show_hostile_text_as_text(hostile_session):
    _, analysis = hostile_session
    clusters = analysis.clusters.assign(label=[f"{TAG} {IMAGE} <b>topic</b> {i}" for i in range(len(analysis.clusters))])
    documents = analysis.documents
    figures = {
        "topic bar": plots.topic_verdict_bar(clusters, analysis.config.gaps),
        "document bar": plots.document_verdict_bar(documents),
        "ranked": plots.similarity_ranked(analysis.question_table, 0.5, labels=clusters),
        "polar": plots.similarity_polar(analysis.question_table, 0.5, labels=clusters),
        "before/after": plots.before_after_clusters(clusters, clusters, (f"{TAG}.csv", f"{IMAGE}.csv")),
        "metrics": plots.metric_comparison_bar({f"{TAG}.csv": analysis.metrics, f"{IMAGE}.csv": analysis.metrics}),
    }
    strings = {where: assert_figure_escaped(figure, where) for where, figure in figures.items()}
    # Escaped, not dropped: the topic and document names are there, to be read as text.
    assert any("&lt;b&gt;topic&lt;/b&gt;" in text for text in strings["topic bar"])
    shown = html.unescape(" ".join(strings["document bar"]))
    assert any(document in shown for document in documents["document"])


# ---------------------------------------------------------------- the HTML report
@pytest.mark.slow
def test_html_report_escapes_every_payload(hostile_session):
    _, analysis = hostile_session
    report = build_html_report(analysis, inputs={"questions": f"{TAG}.csv", "documents": IMAGE})
    assert TAG not in report and "<script>alert" not in report
    assert html.escape(TAG) in report or html.escape(TAG, quote=False) in report
    assert IMAGE in report  # Markdown means nothing in HTML: shown as written
    tags = re.findall(r"<(?:img|a|iframe|object|embed|link|script)\b[^>]*>", report, re.IGNORECASE)
    assert not [tag for tag in tags if "127.0.0.2" in tag]
