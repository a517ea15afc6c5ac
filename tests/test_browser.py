"""End to end in a real browser: Debian's Chromium driven by Playwright against `streamlit run app.py`.

Uploads two documents and a question CSV (with formula-looking questions, one
behind a carriage return), runs the analysis, checks the metric cards,
downloads the per-question table, edits and accepts a suggested
question, applies it and checks coverage rose, then downloads the improved
CSV and checks its rows and formula neutralisation. Screenshots of failures
go to test-artifacts/.

Needs /usr/bin/chromium (``apt-get install -y chromium``); Playwright never
downloads a browser here.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
from pathlib import Path

import pytest

from coverage_core.outputs.report import SCHEMA_VERSION
from tests.helpers import (
    ARTIFACTS,
    PROJECT,
    check_figures,
    laptop_page,
    open_example_results,
    open_page,
    screenshot,
)
from ui import engine, state

pytestmark = pytest.mark.slow

EXAMPLE = PROJECT / "examples" / "wiki-qa"
FORMULA = '=HYPERLINK("http://example.com","click me")'
# A lone carriage return inside a cell: left unquoted, every CSV reader starts a new row at it.
CR_QUESTION = "What is a drum?\r=cmd|' /C calc'!A0"
NEW_QUESTION = "How long do koalas sleep each day?"


def example_passages() -> int:
    """The example's passages as the run makes them: 1,000-character chunks fitted to the local model's 256 tokens."""
    from coverage_core.embedding_steps import chunk_corpus, token_limit
    from coverage_core.embeddings import make_embedder
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.stages.chunking import ChunkingConfig

    documents = read_documents([EXAMPLE / "docs"]).documents
    return len(chunk_corpus(documents, ChunkingConfig(), token_limit(make_embedder("local"))))


def _question_csv() -> bytes:
    with (EXAMPLE / "questions.csv").open(encoding="utf-8", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["article"] == "Drum"][:12]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["question", "owner"])
    for row in rows:
        writer.writerow([row["question"], "qa-team"])
    writer.writerow([FORMULA, "=1+1"])
    writer.writerow([CR_QUESTION, "\r=1+1"])
    return out.getvalue().encode("utf-8")


def test_upload_analyze_improve_and_export(server, page):
    try:
        _run_the_whole_flow(server, page)
    except Exception:
        screenshot(page, "test_upload_analyze_improve_and_export-step")
        raise


def _run_the_whole_flow(server: str, page) -> None:
    page.goto(server)
    page.get_by_role("heading", name="Upload", exact=True).wait_for()

    # ---- upload two documents and the CSV
    inputs = page.get_by_test_id("stFileUploaderDropzoneInput")
    inputs.nth(0).set_input_files(
        [
            {"name": "Drum.txt", "mimeType": "text/plain", "buffer": (EXAMPLE / "docs" / "Drum.txt").read_bytes()},
            {"name": "Koala.txt", "mimeType": "text/plain", "buffer": (EXAMPLE / "docs" / "Koala.txt").read_bytes()},
        ]
    )
    page.get_by_text("2 readable documents from your upload").wait_for()
    inputs.nth(1).set_input_files({"name": "drum-questions.csv", "mimeType": "text/csv", "buffer": _question_csv()})
    page.get_by_text("14 questions in column “question” of drum-questions.csv").wait_for()

    # ---- configure and run
    open_page(page, "Configure", "Configure")
    page.get_by_role("button", name="Run analysis").click()
    page.get_by_role("heading", name="Results", exact=True).wait_for()
    # The relative scores sit in the one expander for method experts below the verdict, one sentence each;
    # weighted (which equals basic) is not listed.
    page.get_by_text(engine.EXPERTS).first.click()
    scores = page.get_by_test_id("stExpander").filter(has_text=engine.EXPERTS).first
    scores.get_by_text("Balanced").first.wait_for()
    text = scores.inner_text()
    numbers = dict(re.findall(r"(Basic|Balanced|Weighted)\S* (\d\.\d+)", text))
    assert set(numbers) >= {"Basic", "Balanced"}, text
    assert all(0 < float(n) < 1 for n in numbers.values())
    assert page.get_by_test_id("stMetricLabel").filter(has_text="Weighted").count() == 0
    # The page leads with the headline; the untested topic is named (Koala has no questions).
    page.get_by_role("heading").filter(has_text="of the knowledge base is tested").first.wait_for()
    page.get_by_test_id("stMarkdown").filter(has_text="Top gaps: topics and untested documents").first.wait_for()
    assert "koala" in page.get_by_test_id("stMain").inner_text().lower()

    # ---- a table's own download (built on click): the carriage-return question stays in its row, neutralised
    page.get_by_role("tab", name="Off-topic questions").click()
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Download every question (CSV)").click()
    exported = Path(download_info.value.path()).read_bytes().decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(exported, newline="")))
    assert len(rows) == 1 + 14
    assert "What is a drum?\r'=cmd|' /C calc'!A0" in [row[rows[0].index("Question")] for row in rows[1:]]

    # ---- edit and accept a suggestion, apply
    open_page(page, "Gap analysis", "Gap analysis")
    page.get_by_role("heading").filter(has_text="of the knowledge base is tested").first.wait_for()
    page.get_by_role("heading", name="Improve the test set").wait_for()
    assert "koala" in page.get_by_test_id("stMain").inner_text().lower()  # the gaps by topic name
    editor = page.get_by_test_id("stDataFrame").filter(has=page.locator("#glide-cell-2-0")).last
    editor.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    grid = _Grid(page, editor)
    grid.select(2, 0)
    page.wait_for_timeout(300)
    page.keyboard.press("Enter")  # opens the cell editor: a textarea over the grid
    overlay = page.locator("textarea").last
    overlay.wait_for(state="visible", timeout=10_000)
    overlay.fill(NEW_QUESTION)
    overlay.press("Enter")
    _wait_for(lambda: grid.text(2, 0) == NEW_QUESTION, "the edited question")
    for _ in range(3):  # one click on the checkbox toggles it; retry if a rerun swallowed it
        grid.click(1, 0)
        try:
            _wait_for(lambda: grid.text(1, 0) == "true", "the accept tick", seconds=5)
            break
        except AssertionError:
            continue
    page.get_by_text("1 accepted question.").wait_for()

    # ---- the edit survives a visit to another page
    open_page(page, "Results", "Results")
    open_page(page, "Gap analysis", "Gap analysis")
    page.get_by_text("1 accepted question.").wait_for()
    editor = page.get_by_test_id("stDataFrame").filter(has=page.locator("#glide-cell-2-0")).last
    accepted = _Grid(page, editor)
    _wait_for(lambda: accepted.text(2, 0) == NEW_QUESTION and accepted.text(1, 0) == "true", "the kept edit")
    page.get_by_role("button", name="Apply").click()
    page.get_by_role("heading", name="Before → after").wait_for()
    # The heading renders before the metric cards below it; the relative scores' cards and the per-topic
    # chart are in the experts' expander.
    page.get_by_test_id("stMetricDelta").first.wait_for()
    experts = page.get_by_test_id("stExpander").filter(has_text=engine.EXPERTS).last
    experts.locator("summary").first.click()
    experts.get_by_test_id("stMetricDelta").first.wait_for()
    deltas = page.get_by_test_id("stMetricDelta").all_inner_texts()
    check_figures(page, "Gap analysis, before → after")  # the per-topic change reads too
    changes = [float(re.sub(r"[^0-9.+-]", "", d)) for d in deltas if re.search(r"\d", d)]
    assert changes and max(changes) > 0 and not any(d.strip() in ("-0.000", "-0.0", "-0") for d in deltas), deltas

    # ---- download the improved CSV
    with page.expect_download() as download_info:
        page.get_by_role("button", name=re.compile(r"Improved test set \(CSV, \+1 row\)")).click()
    download = download_info.value
    assert download.suggested_filename == "drum-questions-improved.csv"
    exported = Path(download.path()).read_bytes().decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(exported, newline="")))
    # The file has no source column: the accepted question names its source in new ones.
    assert rows[0] == ["question", "owner", "suggested", "source_document", "source_passage"]
    assert len(rows) == 1 + 14 + 1
    assert rows[-1][:3] == [NEW_QUESTION, "", "yes"]
    assert rows[-1][3] in ("Drum.txt", "Koala.txt") and len(rows[-1][4]) > 20, rows[-1]
    assert all(row[3:] == ["", ""] for row in rows[1:-1])
    original = list(csv.reader(io.StringIO(_question_csv().decode("utf-8"), newline="")))
    assert [r[:2] for r in rows[1:13]] == original[1:13]
    assert rows[13][:2] == ["'" + FORMULA, "'=1+1"]  # neutralised, not a live formula
    assert rows[14][:2] == ["What is a drum?\r'=cmd|' /C calc'!A0", "'\r'=1+1"]  # each line neutralised
    for line in re.split(r"\r\n|\r|\n", exported):  # even read line by line, ignoring quotes
        assert not line.lstrip().startswith(("=", "+", "-", "@")), repr(line)

    # ---- the JSON and the standalone HTML reports
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Report (JSON)").click()
    report = json.loads(Path(download_info.value.path()).read_text(encoding="utf-8"))
    assert report["schema_version"] == SCHEMA_VERSION and report["summary"]["n_documents"] == 2
    assert report["config"]["inputs"] == {"documents": ["Drum.txt", "Koala.txt"], "questions": "drum-questions.csv"}
    after = report["after_apply"]  # the before and after figures and the accepted question travel with it
    assert after["after"]["basic"] > after["before"]["basic"]
    assert [q["text"] for q in after["accepted_questions"]] == [NEW_QUESTION]
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Report with charts (HTML)").click()
    html = Path(download_info.value.path()).read_text(encoding="utf-8")
    assert "<h2>Gaps</h2>" in html and html.count("Plotly.newPlot(") >= 4
    assert "<h2>Improved test set</h2>" in html and NEW_QUESTION in html
    assert not re.search(r"<script[^>]+src=", html)  # plotly.js inline: opens offline


def test_example_retrieval_and_answerability_checks(server, page):
    """One click on the example, then the two label-driven checks, read from the rendered cards."""
    try:
        page.goto(server)
        page.get_by_role("button", name="Try the example").click()
        # Not a blind wait: the sidebar names the inputs at once, and the passages (only two of
        # the ten files were embedded before, by the test above) show their progress with a rate.
        page.get_by_test_id("stSidebar").get_by_text("Documents: 10 readable").first.wait_for(timeout=60_000)
        page.get_by_text(re.compile(rf"Embedding passages: [\d,]+ of {example_passages()}")).first.wait_for(
            timeout=120_000)
        page.get_by_role("heading", name="Results", exact=True).wait_for()
        page.get_by_role("heading").filter(has_text="of the knowledge base is tested").first.wait_for()

        open_page(page, "Retrieval and chunking", "Retrieval and chunking")
        page.get_by_text("Precision@5").first.wait_for()
        cards = dict(zip(
            [t.strip() for t in page.get_by_test_id("stMetricLabel").all_inner_texts()],
            page.get_by_test_id("stMetricValue").all_inner_texts(),
        ))
        assert float(cards["Hit@5"]) > 0.9 and float(cards["First-hit rank score (MRR)"]) > 0.8, cards
        page.get_by_role("heading", name="Failures").wait_for()

        open_page(page, "Knowledge-base fitness", "Knowledge-base fitness")
        # The statistics are named in the label analysis only, each with its meaning.
        analysis = page.get_by_test_id("stExpander").filter(has_text="Label analysis").first
        analysis.locator("summary").first.click()
        analysis.get_by_text("AUROC").first.wait_for()
        statistics = dict(re.findall(r"^(.+?) (\S+): ", analysis.inner_text(), flags=re.M))
        assert float(statistics["AUROC"]) > 0.9, statistics
        threshold = statistics["Best dividing line"]
        page.get_by_role("button", name=f"Use {threshold} as the threshold").click()
        page.get_by_test_id("stSliderThumbValue").filter(has_text=threshold).wait_for()
    except Exception:
        screenshot(page, "test_example_retrieval_and_answerability_checks-step")
        raise


class _Grid:
    """Cells of a Streamlit data editor (a canvas grid), found through its accessibility table."""

    HEADER, ROW = 36, 35

    def __init__(self, page, editor):
        self.page, self.editor = page, editor

    def cell(self, column: int, row: int):
        return self.editor.locator(f"#glide-cell-{column}-{row}")

    def text(self, column: int, row: int) -> str:
        return self.cell(column, row).inner_text()

    def selected(self) -> tuple[int, int] | None:
        found = self.editor.locator("td[id^=glide-cell-][aria-selected=true]")
        if found.count() == 0:
            return None
        _, _, column, row = found.first.get_attribute("id").split("-")
        return int(column), int(row)

    def point(self, column: int, row: int) -> tuple[float, float]:
        """Screen position of a cell: columns from the editor's column widths, rows from its row height."""
        box = self.editor.bounding_box()
        widths = {1: 75}  # "small" accept column; the row-marker column before it is about 40 px
        x = box["x"] + 40 + sum(widths.get(c, 0) for c in range(1, column)) + (37 if column == 1 else 80)
        return x, box["y"] + self.HEADER + self.ROW * row + self.ROW / 2

    def click(self, column: int, row: int) -> None:
        self.page.mouse.click(*self.point(column, row))

    def select(self, column: int, row: int) -> None:
        """Select a cell: click near it, then walk there with the arrow keys. The click is
        retried: a rerun that moves or redraws the grid can swallow it."""
        for attempt in range(4):
            self.editor.scroll_into_view_if_needed()
            self.click(column, row)
            try:
                _wait_for(lambda: self.selected() is not None, "a selected cell", seconds=5)
                break
            except AssertionError:
                if attempt == 3:
                    raise
        current = self.selected()
        for _ in range(20):
            if current == (column, row):
                return
            key = (
                "ArrowDown" if current[1] < row else "ArrowUp" if current[1] > row
                else "ArrowRight" if current[0] < column else "ArrowLeft"
            )
            self.page.keyboard.press(key)
            current = self.selected()
        raise AssertionError(f"could not select cell {column},{row} (at {current})")


def _wait_for(condition, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:  # the grid re-renders while Streamlit reruns
            pass
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def _shot(page, name: str) -> None:
    """The page as seen, then each figure on it on its own (Streamlit scrolls inside its own
    container, so a full-page screenshot shows only the first screen)."""
    folder = ARTIFACTS / "walk-1280"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))
    figures = page.locator(".js-plotly-plot")
    for i in range(figures.count()):
        if figures.nth(i).is_visible():
            figures.nth(i).screenshot(path=str(folder / f"{name}-figure-{i + 1}.png"))


def test_walk_the_example_at_1280_px_through_the_verdict_the_gaps_and_the_exports(server, browser):
    """A product team member on a laptop: one click on the example, then the verdict,
    the gaps and the exports, with every figure legible at 1280 px. Screenshots of each
    stop go to test-artifacts/walk-1280/ for a person to look at."""
    with laptop_page(browser, failure_shot="test_walk_the_example_at_1280_px-step", accept_downloads=True) as page:
        open_example_results(page, server)

        # ---- the verdict first: tested share, the untested documents, the gaps by topic, the next step
        headline = page.get_by_role("heading").filter(has_text="of the knowledge base is tested").first
        headline.wait_for()
        assert re.search(rf"\d+% of the knowledge base is tested \(\d+ of {example_passages()} passages\)",
                         headline.inner_text())
        main = page.get_by_test_id("stMain")
        untested = main.get_by_text("Koala.txt").first
        untested.wait_for()
        assert main.get_by_text("Lobster.txt").count() >= 1
        links = page.get_by_test_id("stPageLink")
        links.first.wait_for()
        assert links.count() >= 2 and "koala" in " ".join(links.all_inner_texts()).lower()
        # The verdict comes before the secondary scores and the tables.
        assert headline.bounding_box()["y"] < untested.bounding_box()["y"] < links.first.bounding_box()["y"]
        _shot(page, "1-results-verdict")
        check_figures(page, "Results, clusters")
        _shot(page, "2-results-clusters")
        for tab, name in (("Documents", "3-results-documents"), ("Map", "4-results-map")):
            page.get_by_role("tab", name=tab).click()
            page.wait_for_timeout(500)
            check_figures(page, f"Results, {tab.lower()}")
            _shot(page, name)

        # ---- the next step: a gap's link opens the Gap analysis with its suggestions
        links.first.click()
        page.get_by_role("heading", name="Gap analysis", exact=True).wait_for()
        page.get_by_role("heading").filter(has_text="of the knowledge base is tested").first.wait_for()
        page.get_by_role("heading", name="Improve the test set").wait_for()
        _shot(page, "5-gaps")

        # ---- the exports carry the verdict
        with page.expect_download() as download_info:
            page.get_by_role("button", name="Report (JSON)").click()
        report = json.loads(Path(download_info.value.path()).read_text(encoding="utf-8"))
        untested_names = {d["name"] for d in report["documents"] if d["is_untested"]}
        assert untested_names == {"Koala.txt", "Lobster.txt"}
        gaps = [c for c in report["clusters"] if c["is_gap"]]
        assert 0 < len(gaps) < len(report["clusters"]) / 2
        assert 0 < report["metrics"]["tested_share"] < 1
        with page.expect_download() as download_info:
            page.get_by_role("button", name="Report with charts (HTML)").click()
        html = Path(download_info.value.path()).read_text(encoding="utf-8")
        assert "of the knowledge base is tested" in html and gaps[0]["label"] in html

        # ---- the reverse view: ranked and polar charts side by side must still read
        open_page(page, "Knowledge-base fitness", "Knowledge-base fitness")
        figures = check_figures(page, "Fitness", at_least=2)
        assert any("support" in f["titleText"].lower() for f in figures)
        _shot(page, "6-fitness")
        page.get_by_role("button", name="Run the dimension sweep").click()
        page.get_by_text("Download the sweep (CSV)").first.wait_for()
        figures = check_figures(page, "Fitness with the dimension sweep", at_least=3)
        assert any("dimension" in f["titleText"].lower() for f in figures), [f["titleText"] for f in figures]
        _shot(page, "7-fitness-sweep")


# Each metric card's label, value and change, and how many of their elements are cut (text wider than its box).
CARD_CUTS = """() => [...document.querySelectorAll('[data-testid=stMetric]')].map(card => {
    const parts = [...card.querySelectorAll(
        '[data-testid=stMetricLabel], [data-testid=stMetricValue], [data-testid=stMetricDelta]')];
    const cut = parts.flatMap(part => [part, ...part.querySelectorAll('*')])
        .filter(element => element.scrollWidth > element.clientWidth + 1);
    const text = id => (card.querySelector(`[data-testid=${id}]`) || {innerText: ''}).innerText.trim();
    return {label: text('stMetricLabel'), value: text('stMetricValue'), cut: cut.length};
})"""


def test_a_gap_link_lands_on_its_gap_and_the_before_after_cards_read_in_full_at_1280_px(server, browser):
    """The second gap's link on Results opens the Gap analysis at that gap (open, scrolled to); after Apply,
    every before → after card shows its whole label and value at 1280 px, the tested share first.
    Screenshots go to test-artifacts/walk-1280/."""
    height = 800
    shot = "test_a_gap_link_lands_on_its_gap-step"
    with laptop_page(browser, height, failure_shot=shot, accept_downloads=True) as page:
        open_example_results(page, server)
        links = page.get_by_test_id("stPageLink")
        links.first.wait_for()
        assert links.count() >= 2
        link = links.nth(1)  # not the first gap: the page must open the one asked for, lower down
        cluster = int(re.search(r"[?&]gap=(\d+)", link.locator("a").get_attribute("href")).group(1))
        topic = re.search(r"“(.+)”", link.inner_text()).group(1)
        link.click()
        page.get_by_role("heading", name="Improve the test set").wait_for()
        card = page.locator(f".st-key-{state.gap_card_key(cluster)}")
        card.wait_for()
        _wait_for(lambda: 0 <= card.bounding_box()["y"] < height / 2, "the linked gap scrolled to the top of the view")
        opened = page.evaluate(
            "() => [...document.querySelectorAll(\"[class*='st-key-w_gap_card_']\")]"
            ".filter(card => card.querySelector('details').open).map(card => card.className)"
        )
        assert len(opened) == 1 and f"st-key-{state.gap_card_key(cluster)}" in opened[0], opened  # that one only
        assert topic in card.inner_text()
        _shot(page, "8-gap-from-a-link")

        # ---- accept one question (edited from a draft), Apply
        editor = page.get_by_test_id("stDataFrame").filter(has=page.locator("#glide-cell-2-0")).last
        editor.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        grid = _Grid(page, editor)
        grid.select(2, 0)
        page.keyboard.press("Enter")
        overlay = page.locator("textarea").last
        overlay.wait_for(state="visible", timeout=10_000)
        overlay.fill(NEW_QUESTION)
        overlay.press("Enter")
        _wait_for(lambda: grid.text(2, 0) == NEW_QUESTION, "the edited question")
        if overlay.is_visible():  # the edit is in the grid; the editor box may still hold the keyboard
            overlay.press("Escape")
            _wait_for(lambda: not overlay.is_visible(), "the edit box closed", seconds=10)
            assert grid.text(2, 0) == NEW_QUESTION
        # To the tick box by keyboard (clicking it might toggle it; clicking the selected question opens its editor).
        for _ in range(10):
            current = grid.selected()
            if current in (None, (1, 0)):
                break
            page.keyboard.press("ArrowUp" if current[1] > 0 else "ArrowLeft")
            page.wait_for_timeout(150)
        _wait_for(lambda: grid.selected() == (1, 0), "the accept cell selected", seconds=10)
        page.keyboard.press(" ")  # ticks it
        page.get_by_text("1 accepted question.").wait_for()
        page.get_by_role("button", name="Apply").click()
        heading = page.get_by_role("heading", name="Before → after")
        heading.wait_for()
        page.get_by_test_id("stMetricDelta").first.wait_for()
        page.wait_for_timeout(500)

        # The relative scores' cards are in the experts' expander: opened, every card reads whole.
        experts = page.get_by_test_id("stExpander").filter(has_text=engine.EXPERTS).last
        experts.locator("summary").first.click()
        experts.get_by_test_id("stMetric").first.wait_for()
        page.wait_for_timeout(500)
        cards = page.evaluate(CARD_CUTS)
        assert [c["label"] for c in cards] == [
            "Tested share", "Basic", "Balanced", "Nearby-topic score", "Nearest-topics score",
        ], cards
        assert re.fullmatch(r"\d{1,3}%", cards[0]["value"]), cards
        assert all(re.fullmatch(r"-?\d\.\d{3}", c["value"]) for c in cards[1:]), cards
        assert not [c for c in cards if c["cut"]], f"cut labels or values at 1280 px: {cards}"
        heading.scroll_into_view_if_needed()
        _shot(page, "9-before-after")


def test_server_log_stays_quiet(server, server_log):
    """Runs last: after the sessions above, the server log has no tracebacks and no
    file-watcher noise (Streamlit would otherwise watch all of .venv)."""
    text = server_log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in text
    assert "Inotify" not in text and "inotify" not in text
