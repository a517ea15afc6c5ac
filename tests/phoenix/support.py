"""A real Arize Phoenix server for the Phoenix tests, and what they load into it.

The server is ``phoenix serve`` from ``.phoenix-venv`` (scripts/setup.sh installs requirements-phoenix-server.txt
there), on 127.0.0.1 and free ports, with its SQLite store in a fresh temporary folder and authentication on:
every request needs the key (Phoenix's admin secret, used as a bearer token). It makes no request of its own to
the internet (external resources, telemetry and sandboxes off).

Traces go in as an application sends them: OpenTelemetry spans with OpenInference attributes over OTLP/HTTP
(``/v1/traces``); datasets through Phoenix's own client.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.helpers import PROJECT, free_port, serving, wait_until_answering

PHOENIX = PROJECT / ".phoenix-venv" / "bin" / "phoenix"
START_SECONDS = 240  # two cores shared with other jobs; the first start runs every migration
ADMIN_KEY = "phoenix-tests-admin-0123456789-abcdefghij"
"""The key every request needs: the server's admin secret, which Phoenix takes as a bearer token."""
SIGNING_SECRET = "phoenix-tests-signing-0123456789-abcdefgh"
EXAMPLE = PROJECT / "examples" / "wiki-qa"


@dataclass(frozen=True)
class PhoenixServer:
    """A running server: ``url`` (``http://127.0.0.1:PORT``), the ``key`` it asks for, and its ``log``."""

    url: str
    key: str
    log: Path

    def address(self, kind: str, name: str) -> str:
        """A ``phoenix+`` address of this server (kind: ``projects`` or ``datasets``)."""
        return f"phoenix+{self.url}/{kind}/{quote(name, safe='')}"

    def client(self):
        """Phoenix's own client, with the key."""
        from phoenix.client import Client

        return Client(base_url=self.url, api_key=self.key)


def _log_tail(log: Path, chars: int = 4000) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-chars:] if log.exists() else "(no log)"


@contextmanager
def running_phoenix() -> Iterator[PhoenixServer]:
    """``phoenix serve`` while the block runs (module docstring); pytest.fail with the server's log when it does
    not answer its health check within :data:`START_SECONDS`."""
    if not PHOENIX.exists():
        pytest.fail(f"The Phoenix server is not installed ({PHOENIX} is missing): run scripts/setup.sh "
                    "requirements-dev.txt (./test.sh does), which installs requirements-phoenix-server.txt there.")
    folder = Path(tempfile.mkdtemp(prefix="phoenix-tests-"))
    log = folder / "server.log"
    port, grpc_port = free_port(), free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PHOENIX_", "OTEL_"))}
    env.update(
        PHOENIX_WORKING_DIR=str(folder / "working"), PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT=str(grpc_port), PHOENIX_ENABLE_AUTH="true", PHOENIX_SECRET=SIGNING_SECRET,
        PHOENIX_ADMIN_SECRET=ADMIN_KEY, PHOENIX_TELEMETRY_ENABLED="false", PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
        PHOENIX_ALLOWED_SANDBOX_PROVIDERS="NONE", PHOENIX_DISABLE_AGENT_ASSISTANT="true",
    )
    with log.open("w") as output:
        process = subprocess.Popen([str(PHOENIX), "serve"], cwd=folder, env=env, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        failure = wait_until_answering(f"{url}/healthz", process, START_SECONDS)
        if failure is not None:
            pytest.fail(f"phoenix serve {failure}; its log:\n{_log_tail(log)}")
        yield PhoenixServer(url, ADMIN_KEY, log)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- the traffic


@dataclass(frozen=True)
class Asked:
    """One query as production saw it: its words, when, how the application wrote its input (``plain``, an
    object ``{"question": …}`` or a ``chat``), and the documents its retriever returned (file names)."""

    text: str
    when: datetime
    form: str = "plain"
    documents: tuple[str, ...] = ()


START = datetime(2026, 11, 2, 8, 0, tzinfo=timezone.utc)  # a Monday
NOT_IN_THE_DOCUMENTS = (("How do I reset my password?", 3), ("Where is my invoice for October?", 2))
KOALA = (("What do koalas eat?", 6), ("Where do wild koalas live?", 4), ("How long do koalas sleep each day?", 3))


def example_traffic() -> list[Asked]:
    """The example's production traffic, oldest first, over three weeks: every fourth answerable question of
    examples/wiki-qa asked once to three times, queries about Koala.txt (which no test question targets), two
    questions the documents do not answer, and one query holding an e-mail address; each with the documents
    its retrieval returned."""
    with open(EXAMPLE / "questions.csv", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["answerable"] == "yes"][::4]
    asked: list[tuple[str, tuple[str, ...]]] = []
    for i, row in enumerate(rows):
        asked += [(row["question"], (row["source"], "Trumpet.txt"))] * (1 + i % 3)
    for text, times in KOALA:
        asked += [(text, ("Koala.txt", "Octopus.txt"))] * times
    for text, times in NOT_IN_THE_DOCUMENTS:
        asked += [(text, ("faq/account.md",))] * times
    asked.append(("What do koalas eat? Mail me at ann@example.org", ("Koala.txt",)))
    forms = ("plain", "object", "chat")
    return [Asked(text, START + timedelta(days=i % 19, minutes=7 * i), forms[i % 3], documents)
            for i, (text, documents) in enumerate(asked)]


def traffic_csv(traffic: Sequence[Asked]) -> bytes:
    """The same traffic as a plain query log: one row per query asked, with its time."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["query", "timestamp"])
    for query in sorted(traffic, key=lambda q: q.when):
        writer.writerow([query.text, query.when.isoformat()])
    return out.getvalue().encode("utf-8")


def _input_value(query: Asked) -> tuple[str, str]:
    """(input.value, input.mime_type) as the application wrote its input."""
    if query.form == "object":
        return json.dumps({"question": query.text, "top_k": 5}), "application/json"
    if query.form == "chat":
        return json.dumps({"messages": [{"role": "system", "content": "Answer from the documents."},
                                        {"role": "user", "content": query.text}]}), "application/json"
    return query.text, "text/plain"


def send_traces(server: PhoenixServer, project: str, traffic: Sequence[Asked]) -> None:
    """One trace per query into ``project`` over OTLP/HTTP: a root CHAIN span holding the query, a RETRIEVER
    child span holding the documents returned (OpenInference attributes; the document named by its ``source``
    metadata and an id of its own, as LangChain writes them), then waits until Phoenix has stored them all."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource({"openinference.project.name": project}))
    exporter = OTLPSpanExporter(endpoint=f"{server.url}/v1/traces", headers={"authorization": f"Bearer {server.key}"})
    provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=256))
    tracer = provider.get_tracer("tests.phoenix")
    for query in traffic:
        start = int(query.when.timestamp() * 1e9)
        value, mime = _input_value(query)
        root = tracer.start_span("rag-answer", start_time=start, attributes={
            "openinference.span.kind": "CHAIN", "input.value": value, "input.mime_type": mime,
            "output.value": "An answer."})
        attributes = {"openinference.span.kind": "RETRIEVER", "input.value": query.text}
        for position, document in enumerate(query.documents):
            attributes[f"retrieval.documents.{position}.document.id"] = hashlib.sha1(
                f"{document}:{query.when}:{position}".encode()).hexdigest()[:16]  # a chunk id, no file name
            attributes[f"retrieval.documents.{position}.document.score"] = 0.9 - position / 10
            attributes[f"retrieval.documents.{position}.document.content"] = "A passage."
            attributes[f"retrieval.documents.{position}.document.metadata"] = json.dumps(
                {"source": f"kb/{document}", "page": 1})
        child = tracer.start_span("retrieve", context=trace.set_span_in_context(root), start_time=start + 1000,
                                  attributes=attributes)
        child.end(end_time=start + 2000)
        root.end(end_time=start + 5000)
    provider.force_flush()
    provider.shutdown()
    wait_for_spans(server, project, 2 * len(traffic))


def wait_for_spans(server: PhoenixServer, project: str, expected: int, seconds: float = 120) -> None:
    """Until ``project`` holds ``expected`` spans (Phoenix stores what it receives from a queue)."""
    client = server.client()
    deadline = time.monotonic() + seconds
    while True:
        try:
            found = len(client.spans.get_spans(project_identifier=project, limit=expected + 1))
        except Exception:  # the project appears with its first stored span
            found = 0
        if found >= expected:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"Phoenix stored {found} of the {expected} spans sent to {project}; its log:\n"
                        f"{_log_tail(server.log)}")
        time.sleep(0.5)


# ---------------------------------------------------------------------------------------------- other hosts


@dataclass
class Recorder:
    """A local HTTP server that records every request (method, path, headers) and answers ``status``, with
    ``location`` as a redirect's target."""

    url: str
    requests: list
    status: int = 404
    location: str | None = None

    @property
    def authorizations(self) -> list[str]:
        return [headers.get("authorization", "") for _, _, headers in self.requests
                if headers.get("authorization")]


@contextmanager
def recording_server(status: int = 404, location: str | None = None) -> Iterator[Recorder]:
    """A :class:`Recorder` on 127.0.0.1 and a free port while the block runs."""
    recorder = Recorder("", [], status, location)

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            recorder.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            self.send_response(recorder.status)
            if recorder.location:
                self.send_header("Location", recorder.location + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

        def log_message(self, *args) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    recorder.url = f"http://127.0.0.1:{server.server_address[1]}"
    with serving(server):
        yield recorder
