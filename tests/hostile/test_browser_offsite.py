"""Nothing leaves the server (issue 22), in a real browser: Debian's Chromium driven by Playwright.

A question file whose header and questions carry a Markdown image and an ``<img>`` tag pointing at a
beacon (a small HTTP server on another loopback address that records every request), and documents whose
names and text carry the same, go through Upload, Configure, Results (every tab) and Gap analysis. The test
fails on any request the page makes to a host other than the app's own, on any request the beacon sees, and
on any image or link of the page that points at the beacon host; the payloads must be shown as written.
"""

from __future__ import annotations

import contextlib
import http.server
import io
from urllib.parse import urlsplit

import pandas as pd
import pytest

from tests.helpers import PROJECT, open_every_expander, open_page, screenshot, serving

pytestmark = pytest.mark.slow

EXAMPLE = PROJECT / "examples" / "wiki-qa"
BEACON_HOST = "127.0.0.2"  # another loopback address: a host other than the app's, reachable with no network
WEB_SCHEMES = ("http", "https", "ws", "wss")


class _Beacon(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the http.server name)
        self.server.seen.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):  # the test reports what it saw, not stderr
        pass


@contextlib.contextmanager
def beacon_server():
    """A server on :data:`BEACON_HOST` that records the path of every request; yields it (``.seen``, ``.url``)."""
    server = http.server.ThreadingHTTPServer((BEACON_HOST, 0), _Beacon)
    server.seen = []
    server.url = f"http://{BEACON_HOST}:{server.server_address[1]}"
    with serving(server):
        yield server


def payloads(url: str, what: str) -> str:
    """A Markdown image and an HTML image, each fetching ``url``/``what``-… if any page renders it."""
    return f"![x]({url}/{what}-markdown.png) <img src=\"{url}/{what}-html.png\">"


def question_csv(header: str, marked: str) -> bytes:
    """Drum questions under "question" and, again with payloads, under the hostile ``header``."""
    questions = pd.read_csv(EXAMPLE / "questions.csv")
    texts = list(questions[questions["article"] == "Drum"]["question"][:8])
    frame = pd.DataFrame({"question": texts, header: [f"{text} {marked}" for text in texts]})
    out = io.StringIO()
    frame.to_csv(out, index=False)
    return out.getvalue().encode("utf-8")


def offsite(requests: list[str], app: str) -> list[str]:
    own = urlsplit(app).netloc
    return [url for url in requests if urlsplit(url).scheme in WEB_SCHEMES and urlsplit(url).netloc != own]


def assert_nothing_points_away(page, where: str, beacon=None) -> None:
    """No image, link, frame or icon of the page points at the beacon host (a rendered payload would), and the
    beacon has seen no request so far."""
    if beacon is not None:
        assert beacon.seen == [], f"{where}: the beacon was fetched: {beacon.seen}"
    pointing = page.locator(
        f"img[src*='{BEACON_HOST}'], a[href*='{BEACON_HOST}'], iframe[src*='{BEACON_HOST}'], "
        f"source[src*='{BEACON_HOST}'], link[href*='{BEACON_HOST}']"
    )
    assert pointing.count() == 0, f"{where}: {pointing.first.evaluate('e => e.outerHTML')}"


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox ``label``; a rerun may close its list, so open it again if need be."""
    box = page.get_by_test_id("stSelectbox").filter(has_text=label)
    wanted = page.get_by_role("option", name=option, exact=True)
    for _ in range(5):
        page.wait_for_timeout(500)
        box.locator("input").click()
        try:
            wanted.wait_for(timeout=10_000)
        except Exception:  # noqa: BLE001 (Playwright's timeout): the list closed; try again
            continue
        wanted.click()
        return
    raise AssertionError(f"no option {option!r} in {label!r}")


def test_hostile_inputs_make_no_request_off_the_server(server, page):
    with beacon_server() as beacon:
        requests: list[str] = []
        page.context.on("request", lambda request: requests.append(request.url))
        try:
            _walk_the_pages(server, page, beacon)
        except Exception:
            screenshot(page, "test_hostile_inputs_make_no_request_off_the_server-step")
            raise
        page.wait_for_timeout(2000)  # late image loads and chart renders
        assert offsite(requests, server) == [], "requests to other hosts"
        assert beacon.seen == [], f"the beacon was fetched: {beacon.seen}"
    assert any(urlsplit(url).netloc == urlsplit(server).netloc for url in requests)  # the recorder saw the app


def _walk_the_pages(server: str, page, beacon_at) -> None:
    beacon = beacon_at.url
    header = f"Question {payloads(beacon, 'header')}"
    page.goto(server)
    page.get_by_role("heading", name="Upload", exact=True).wait_for()
    # The page icon is drawn in the page (an emoji), not fetched from a font host.
    icons = page.locator("link[rel~='icon']").evaluate_all("links => links.map(l => l.href)")
    assert icons and all(href.startswith("data:") or href.startswith(server) for href in icons), icons

    # ---- documents whose names and text carry payloads
    drum = (EXAMPLE / "docs" / "Drum.txt").read_text(encoding="utf-8")
    documents = [
        {"name": f"Drum {payloads(beacon, 'name')}.txt", "mimeType": "text/plain",
         "buffer": f"{drum}\n\nDrum skins {payloads(beacon, 'text')} are tuned.".encode()},
        # Untested (no question is about koalas), so the warnings name it too.
        {"name": f"Koala {payloads(beacon, 'untested')}.txt", "mimeType": "text/plain",
         "buffer": (EXAMPLE / "docs" / "Koala.txt").read_bytes()},
    ]
    inputs = page.get_by_test_id("stFileUploaderDropzoneInput")
    inputs.nth(0).set_input_files(documents)
    page.get_by_text("2 readable documents from your upload").wait_for()

    # ---- a question file whose header and questions carry payloads; its header chosen as the question column
    csv_name = f"questions {payloads(beacon, 'file')}.csv"
    inputs.nth(1).set_input_files({"name": csv_name, "mimeType": "text/csv",
                                   "buffer": question_csv(header, payloads(beacon, 'question'))})
    page.get_by_text("8 questions in column “question” of").wait_for()
    choose(page, "Column with the questions", header)
    page.get_by_test_id("stSidebar").get_by_text("Questions: 8 in column “Question").wait_for()
    page.wait_for_timeout(1500)  # time for a rendered image to be fetched
    assert_nothing_points_away(page, "Upload", beacon_at)
    main = page.get_by_test_id("stMain").inner_text().replace("\u2060", "")
    # Shown as written, not drawn (the browser itself turns a file name's quotes into %22).
    assert header in main and f"![x]({beacon}/file-markdown.png)" in main

    # ---- run, then every tab of Results, then Gap analysis
    open_page(page, "Configure", "Configure")
    page.get_by_role("button", name="Run analysis").click()
    page.get_by_role("heading", name="Results", exact=True).wait_for()
    page.get_by_role("heading").filter(has_text="of the knowledge base is tested").first.wait_for()
    assert_nothing_points_away(page, "Results", beacon_at)
    for tab in ("Documents", "Off-topic questions", "Near-duplicates", "Map", "Clusters"):
        page.get_by_role("tab", name=tab).click()
        page.wait_for_timeout(1500)
        assert_nothing_points_away(page, f"Results, {tab}", beacon_at)
    page.get_by_role("tab", name="Off-topic questions").click()
    page.get_by_text("Show every question, not only the off-topic ones").click()
    page.wait_for_timeout(1500)
    assert_nothing_points_away(page, "Results, every question", beacon_at)

    open_page(page, "Gap analysis", "Gap analysis")
    page.get_by_role("heading", name="Improve the test set").wait_for()
    assert open_every_expander(page) >= 2, "the gaps' expanders were not opened"
    page.wait_for_timeout(1500)
    assert_nothing_points_away(page, "Gap analysis", beacon_at)
