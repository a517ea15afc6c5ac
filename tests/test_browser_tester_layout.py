"""Issue 47 in a real browser at 1280 px: what a tester clicks stays where it is, and a 0% bar shows.

Debian's Chromium driven by Playwright against `streamlit run app.py` (see tests/test_browser.py). The
example runs once; then:

* Results: every bar of the per-topic chart is drawn, those at 0% too (a sliver in the gap colour);
* Gap analysis: ticking a draft in the suggestions table makes the page say the draft is left out, and
  neither the table nor the Apply button moves (the note goes under the Apply button: placed between the
  table and the button, it pushed the button down and shifted the rows under the pointer).
"""

from __future__ import annotations

import time

import pytest

from tests.helpers import laptop_page, open_example_results, open_page
from ui import state

pytestmark = pytest.mark.slow

DRAFT = "Write a question answered by"
# Each bar of a Plotly bar chart: its width on screen.
BARS = """el => [...el.querySelectorAll('.barlayer .point path')].map(path => ({width: path.getBoundingClientRect().width}))"""


def _wait_for(condition, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _box(locator) -> tuple[float, float, float, float]:
    box = locator.bounding_box()
    return round(box["x"]), round(box["y"]), round(box["width"]), round(box["height"])


def test_zero_bars_show_and_ticking_a_draft_moves_nothing(server, browser):
    with laptop_page(browser, failure_shot="test_zero_bars_show_and_ticking_a_draft_moves_nothing") as page:
        open_example_results(page, server)

        # ---- the per-topic chart: the untested topics (Koala, Lobster) have a visible bar too
        chart = page.locator(".js-plotly-plot").first
        chart.wait_for()
        page.wait_for_timeout(1500)  # Plotly lays out after the element appears
        bars = chart.evaluate(BARS)
        assert bars and all(bar["width"] >= 3 for bar in bars), bars
        assert "0%" in chart.text_content()

        # ---- the suggestions table: tick a draft
        open_page(page, "Gap analysis", "Gap analysis")
        page.get_by_role("heading", name="Improve the test set").wait_for()
        editor = page.locator(f".st-key-{state.W_SUGGESTIONS_EDITOR}")
        editor.wait_for()
        _wait_for(lambda: editor.locator("[id^=glide-cell-2-]").count() > 0, "the suggestions in the table")
        texts = [cell.inner_text() for cell in editor.locator("[id^=glide-cell-2-]").all()]
        # A draft, whose tick adds the note that it is left out; any row when the writer left no draft.
        row = next((i for i, text in enumerate(texts) if text.startswith(DRAFT)), 0)
        draft = texts[row].startswith(DRAFT)
        assert row < 9, texts  # visible without scrolling the table
        apply = page.get_by_role("button", name="Apply", exact=True)
        editor.scroll_into_view_if_needed()
        page.wait_for_timeout(1000)
        table_before, apply_before = _box(editor), _box(apply)
        note = page.get_by_text(f"still begins “{DRAFT}”").first
        counted = page.get_by_text("accepted question").first
        assert not note.is_visible() and counted.inner_text().startswith("0 ")

        box = editor.bounding_box()
        point = (box["x"] + 40 + 37, box["y"] + 36 + 35 * row + 17)  # the accept box of that row
        ticked = (lambda: note.is_visible()) if draft else (lambda: counted.inner_text().startswith("1 "))
        for _ in range(4):  # the first click may only give the grid the focus
            page.mouse.click(*point)
            try:
                _wait_for(ticked, "the tick taken", seconds=15)
                break
            except AssertionError:
                continue
        _wait_for(ticked, "the tick taken", seconds=30)
        page.wait_for_timeout(1000)
        assert _box(editor) == table_before  # the rows stay under the pointer
        assert _box(apply) == apply_before  # and so does the button
        if draft:
            assert note.bounding_box()["y"] > apply.bounding_box()["y"]  # the note is under the button
