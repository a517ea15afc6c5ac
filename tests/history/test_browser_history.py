"""The History page in a real browser (Debian's Chromium through Playwright), as issue 23 walks it.

Two runs are recorded with the core and the bundled model on three of the example's articles: Drum and
Flute, then the same with Koala and Lobster added and one question removed. The dashboard is started with
that history (``COVERAGE_HISTORY``); its History page must show both points, name the two new documents as
untested, let two points picked on the chart choose the runs compared, fetch nothing from another host and
show no traceback.

Needs /usr/bin/chromium (``apt-get install -y chromium``); Playwright never downloads a browser here.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime, timezone
from urllib.parse import urlsplit

import pytest

from coverage_core.history import open_history
from tests.helpers import check_figures, open_page, screenshot, streamlit_server
from tests.history.conftest import ADDED_DOCUMENTS, two_analysed_runs

pytestmark = pytest.mark.slow

WEB_SCHEMES = ("http", "https", "ws", "wss")


@pytest.fixture(scope="module")
def snapshots(module_cache_dir):
    """The two runs' snapshots (the second with two documents added and one question removed), and that question."""
    return two_analysed_runs(module_cache_dir)


@pytest.fixture(scope="module")
def history_file(tmp_path_factory, snapshots):
    path = tmp_path_factory.mktemp("history") / "runs.sqlite"
    with open_history(str(path)) as store:
        for snapshot in snapshots[0]:
            store.record(snapshot)
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory, history_file):
    """The app reading and recording into ``history_file``."""
    folder = tmp_path_factory.mktemp("history-server")
    with streamlit_server(folder / "cache", folder / "streamlit.log", COVERAGE_HISTORY=str(history_file)) as url:
        yield url


def offsite(requests: list[str], app: str) -> list[str]:
    own = urlsplit(app).netloc
    return [url for url in requests if urlsplit(url).scheme in WEB_SCHEMES and urlsplit(url).netloc != own]


def chart_points(page) -> list[str]:
    """The x values (run times) of the tested-share chart, the first figure of the page, as Plotly holds them."""
    return page.locator(".js-plotly-plot").first.evaluate("el => Array.from(el.data[0].x)")


def test_history_page_shows_both_runs_and_names_the_new_untested_documents(server, page, snapshots, history_file):
    requests: list[str] = []
    page.context.on("request", lambda request: requests.append(request.url))
    try:
        _walk(server, page, snapshots, history_file)
    except Exception:
        screenshot(page, "test_history_page_shows_both_runs_and_names_the_new_untested_documents")
        raise
    page.wait_for_timeout(1500)  # late loads
    assert offsite(requests, server) == [], "requests to other hosts"
    assert any(urlsplit(url).netloc == urlsplit(server).netloc for url in requests)  # the recorder saw the app


def _walk(server: str, page, snapshots, history_file) -> None:
    made, _ = snapshots
    page.goto(server)
    page.get_by_role("heading", name="Upload", exact=True).wait_for()
    open_page(page, "History", "History")
    page.get_by_role("heading", name="What changed").wait_for()
    page.get_by_text("From run 1 to run 2:").wait_for()
    figures = check_figures(page, "History", at_least=3)  # each reads at this width
    titles = [figure["titleText"] for figure in figures]
    assert any(title.startswith("Is the test set keeping up") for title in titles), titles
    assert len(chart_points(page)) == 2  # one point per run

    main = page.get_by_test_id("stMain").inner_text().replace("\u2060", "")
    assert "2 runs recorded" in main
    for name in ADDED_DOCUMENTS:
        assert f"{name}: added since run 1, untested" in main, main
    assert "2 documents added or changed since run 1 have no test" in main
    assert re.search(r"\+2 documents", main), main
    assert "Questions removed (1)" in main
    assert "Traceback" not in main and page.get_by_test_id("stException").count() == 0

    # A third run (the first inputs again): the page compares the last two; two points picked on the chart
    # choose the runs instead.
    with open_history(str(history_file)) as store:
        store.record(dataclasses.replace(made[0], recorded_at=datetime.now(timezone.utc)))
    page.reload()
    page.get_by_text("From run 2 to run 3:").wait_for()
    assert len(chart_points(page)) == 3
    points = page.locator(".js-plotly-plot").first.locator(".scatterlayer .trace").first.locator("path.point")
    for number in (0, 1):  # a click where the point is drawn (Plotly's drag layer above it takes the click)
        box = points.nth(number).bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_timeout(2000)  # the rerun after the selection
    page.get_by_text("From run 1 to run 2:").wait_for()
    main = page.get_by_test_id("stMain").inner_text().replace("\u2060", "")
    assert all(f"{name}: added since run 1, untested" in main for name in ADDED_DOCUMENTS)
    assert "Traceback" not in main and page.get_by_test_id("stException").count() == 0
