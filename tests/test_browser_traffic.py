"""In a real browser (Debian's Chromium through Playwright): the Production traffic page on the bundled example.

A query log (JSON Lines, with dates and a personal e-mail address) is uploaded after the one-click example;
the page leads with the traffic sentence, draws its charts, masks the address, and sends the most asked
untested queries to the Gap page's suggestions; a support query the documents cannot answer is counted apart.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import check_figures, open_page, screenshot

pytestmark = pytest.mark.slow

LOG = [
    {"query": "What do koalas eat?", "count": 60, "date": "2026-11-02"},
    {"query": "Where do koalas live in the wild?", "count": 30, "date": "2026-11-09"},
    {"query": "How long do koalas sleep? mail me at jo@example.com", "count": 5, "date": "2026-11-09"},
    {"query": "Does the octopus have two eyes?", "count": 10, "date": "2026-11-02"},
    {"query": "Is the flute a woodwind instrument?", "count": 8, "date": "2026-11-09"},
    {"query": "How do I reset my password?", "count": 12, "date": "2026-11-09"},
]


def test_traffic_page_on_the_example(server, page):
    try:
        page.goto(server)
        page.get_by_role("button", name="Try the example").click()
        page.get_by_role("heading").filter(has_text="of the knowledge base is tested").first.wait_for()

        open_page(page, "Production traffic", "Production traffic")
        page.get_by_text("Upload a query log").first.wait_for()
        data = "\n".join(json.dumps(line) for line in LOG).encode("utf-8")
        page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(
            {"name": "traffic.jsonl", "mimeType": "application/json", "buffer": data}
        )
        headline = page.get_by_role("heading").filter(has_text="Production traffic:").first
        headline.wait_for()
        assert re.search(r"\d+% of 125 queries \(6 distinct\) are tested, \d+% answerable", headline.inner_text())
        assert re.search(r"\d+ queries have no answer in the documents", headline.inner_text())
        assert "koala" in headline.inner_text().lower()  # the most asked, least tested topic is named
        page.get_by_role("heading", name="Over time").wait_for()
        figures = check_figures(page, "Production traffic", at_least=2)
        assert len(figures) >= 2
        body = page.get_by_test_id("stMain").inner_text()
        assert "jo@example.com" not in body
        assert "Every query of the traffic has an answer" not in body
        assert "have no answer in the documents" in body and "a gap in the documents" in body

        page.get_by_role("button", name="Add them to the suggestions").click()
        page.get_by_text(re.compile(r"\d+ questions? added to the suggestions table")).wait_for()
        page.get_by_role("link", name="Open the Gap analysis").click()
        page.get_by_role("heading", name="Improve the test set").wait_for()
    except Exception:
        screenshot(page, "test_traffic_page_on_the_example")
        raise
