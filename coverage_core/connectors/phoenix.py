"""Arize Phoenix: production traces read as the query log, a dataset read as the test set, accepted questions
written back as a dataset version.

An address is the Phoenix server's URL with ``phoenix+`` before it, then what to read or write:

* ``phoenix+http://HOST:PORT/projects/NAME``: the project's traces as a query log
  (:func:`read_project_traffic`). Each ROOT span is one query: its words are the OpenInference ``input.value``
  (when it is JSON, the user's question inside it, found as the trace-export readers find it:
  :func:`~coverage_core.checks.trace_exports.user_text`; else the last user message of ``llm.input_messages``),
  its time the span's start. The documents the trace's RETRIEVER spans returned
  (``retrieval.documents.N.document.id``, named by a file-like ``document.metadata`` field when there is one,
  :data:`DOCUMENT_METADATA_KEYS`) come with it, so the traffic check can say which documents production
  retrieval actually hits (:mod:`~coverage_core.checks.traffic_documents`).
* ``phoenix+http://HOST:PORT/datasets/NAME``: a dataset, read as the test set (:func:`read_dataset_questions`:
  each example's input fields are the columns, then its output and metadata fields, and the question column is
  found as in a question file), or where accepted questions go (:func:`push_accepted`: a new version of the
  dataset, or a new dataset when none has that name).

``phoenix+https://`` works the same, and a path before ``/projects`` or ``/datasets`` (a server behind a root
path) is kept. Phoenix's own client (``arize-phoenix-client``) makes every request.

The key: when the server asks for one, it is the caller's ``api_key`` (the command line reads
:data:`API_KEY_VARIABLE`), sent as the Phoenix client sends it (``Authorization: Bearer``) and only to the host of
the address: redirects are not followed, proxy settings and Phoenix's own configuration variables and files are
not read, and a key in the address itself is refused. No message, report or file holds it.

Every failure (an address that is not one, a server that cannot be reached or refuses, a project or dataset that
does not exist, an answer that is not Phoenix's) is one :class:`~coverage_core.errors.InputError` sentence.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pandas as pd

from coverage_core import wording
from coverage_core.checks.trace_exports import user_text
from coverage_core.connectors.accepted import AcceptedQuestion
from coverage_core.errors import InputError
from coverage_core.validation import find_column, shorten

__all__ = [
    "API_KEY_VARIABLE", "DATASETS", "PROJECTS", "PhoenixAddress", "PushResult", "is_phoenix_address",
    "parse_address", "push_accepted", "read_dataset_questions", "read_project_traffic",
]

SCHEME = "phoenix+"
API_KEY_VARIABLE = "PHOENIX_API_KEY"
"""Where the command line takes the key from (the dashboard asks for it in a password field)."""
PROJECTS, DATASETS = "projects", "datasets"
"""The kinds of address: a project's traces, a dataset's examples."""
REQUEST_TIMEOUT = 30.0
"""Seconds one request may take (to connect, or between two parts of an answer)."""
MIN_SERVER_VERSION = "13.15"
"""The oldest Phoenix server whose span filters (root spans, span kind) the reader uses."""
DOCUMENT_METADATA_KEYS = ("source", "file_name", "filename", "file_path", "path", "document", "document_name",
                          "doc_name")
"""Fields of a retrieved document's ``document.metadata`` that name its file, in the order they are tried
(LangChain writes ``source``, LlamaIndex ``file_name``); without one, its ``document.id`` names it."""
QUESTION_KEY = "question"
"""The input field a pushed question goes in when the dataset is new (an existing one keeps its own)."""
PASSAGE_KEY = "source_passage"
"""The output field holding a pushed question's source passage."""
DATASET_DESCRIPTION = "Test questions accepted in RAG test-set coverage."


@dataclass(frozen=True)
class PhoenixAddress:
    """A parsed Phoenix address: ``server`` (``http://host:port`` and any root path, no trailing slash), ``kind``
    (:data:`PROJECTS` or :data:`DATASETS`) and the project's or dataset's ``name``."""

    server: str
    kind: str
    name: str

    @property
    def what(self) -> str:
        """``"project"`` or ``"dataset"``."""
        return self.kind[:-1]

    @property
    def label(self) -> str:
        """How sentences name it: "the Phoenix project 'prod' at http://localhost:6006"."""
        return f"the Phoenix {self.what} '{self.name}' at {self.server}"

    def __str__(self) -> str:
        return f"{SCHEME}{self.server}/{self.kind}/{quote(self.name, safe='')}"


def is_phoenix_address(value: object) -> bool:
    """Whether ``value`` is meant as a Phoenix address (text starting ``phoenix+``, case ignored): then it is
    parsed (:func:`parse_address`), never read as a file."""
    return isinstance(value, str) and value[:len(SCHEME)].casefold() == SCHEME


def parse_address(text: str, kind: str | None = None, *, key_words: str = API_KEY_VARIABLE) -> PhoenixAddress:
    """The :class:`PhoenixAddress` ``text`` writes (module docstring); with ``kind``, it must be of that kind.
    ``key_words`` says where a key goes instead of the address (a user name or password in it is refused).

    Raises
    ------
    InputError
        In one sentence, for anything else: another scheme, no host, a port that is no number, a user name or
        password in it, a query or fragment, a path not ending in ``/projects/NAME`` or ``/datasets/NAME``, or
        the other kind than ``kind``. The sentence never repeats a user name, password, query or fragment: any
        of them may hold the key.
    """
    example = f"{SCHEME}http://HOST:PORT/{kind or PROJECTS}/NAME"
    if not is_phoenix_address(text):
        raise InputError(f"{shorten(str(text), 120)} is not a Phoenix address; write it as {example}.")
    rest = text[len(SCHEME):].strip()
    if "@" in rest.partition("://")[2].split("/", 1)[0]:
        raise InputError(f"The Phoenix address holds a user name or password, which is never sent; give the key "
                         f"in {key_words} and write the address as {example}.")
    try:
        parts = urlsplit(rest)
        shown = shorten(f"{SCHEME}{parts.scheme}://{parts.netloc}{parts.path}", 120)
        parts.port  # reading it checks it: a port that is no number from 0 to 65535 raises ValueError
    except ValueError:
        raise InputError(f"The Phoenix address has a host or port that cannot be read (a port is a number up to "
                         f"65535); write it as {example}.") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InputError(f"{shown} is not a Phoenix address (it needs http:// or https:// and a host after "
                         f"{SCHEME}); write it as {example}.")
    if parts.query or parts.fragment:
        raise InputError(f"The Phoenix address {shown} has a query or fragment (not repeated here), which it has "
                         f"no use for; write it as {example}.")
    segments = parts.path.rstrip("/").split("/")
    if len(segments) < 3 or segments[-2] not in (PROJECTS, DATASETS) or not unquote(segments[-1]).strip():
        raise InputError(f"{shown} names no Phoenix project or dataset; end it with /{PROJECTS}/NAME (traces) or "
                         f"/{DATASETS}/NAME (a dataset), as in {example}.")
    found = PhoenixAddress(f"{parts.scheme.lower()}://{parts.netloc}{'/'.join(segments[:-2])}", segments[-2],
                           unquote(segments[-1]).strip())
    if kind is not None and found.kind != kind:
        use = "traces are read from a project" if kind == PROJECTS else "questions are read from and sent to a dataset"
        raise InputError(f"{shown} names a {found.what}, but {use}: {example}.")
    return found


# ------------------------------------------------------------------------------------------------ the client


@contextmanager
def _client(address: PhoenixAddress, api_key: str | None, key_words: str, doing: str) -> Iterator[Any]:
    """Phoenix's client for ``address`` alone; every failure inside becomes one InputError sentence.

    ``key_words`` names where the key comes from ("PHOENIX_API_KEY", "the API key field"); ``doing`` says what
    was being done ("reading its spans") in a refusal's sentence.
    """
    import httpx
    from phoenix.client import Client
    from phoenix.client.exceptions import PhoenixException
    from phoenix.client.resources.datasets import DatasetUploadError

    key = (api_key or "").strip()
    # Only this host gets the key: no redirect is followed (the server would choose where the next request, and
    # the key with it, goes), and no proxy named in the environment sees a request.
    http = httpx.Client(base_url=address.server + "/", headers={"Authorization": f"Bearer {key}"} if key else {},
                        timeout=REQUEST_TIMEOUT, follow_redirects=False, trust_env=False)
    server = address.server
    try:
        # Given its own HTTP client, Phoenix's client adds no header from PHOENIX_CLIENT_HEADERS or .env.phoenix.
        yield Client(http_client=http)
    except InputError:
        raise
    except DatasetUploadError as error:
        cause = error.__cause__
        if isinstance(cause, httpx.HTTPStatusError):
            raise _refusal(server, cause.response.status_code, bool(key), key_words, doing) from None
        raise InputError(f"Phoenix at {server} refused the questions while {doing}; see the server's log.") from None
    except httpx.HTTPStatusError as error:
        raise _refusal(server, error.response.status_code, bool(key), key_words, doing) from None
    except httpx.TimeoutException:
        raise InputError(f"Phoenix at {server} did not answer within {REQUEST_TIMEOUT:.0f} seconds while {doing}; "
                         "check that the server is running, then try again.") from None
    except httpx.HTTPError:
        raise InputError(f"Phoenix at {server} cannot be reached; check the address and that the server is "
                         "running.") from None
    except PhoenixException:
        raise InputError(f"Phoenix at {server} is too old for this; upgrade it to version {MIN_SERVER_VERSION} or "
                         "later.") from None
    except (ValueError, KeyError, TypeError):  # an answer that is not Phoenix's JSON
        raise InputError(f"{server} did not answer as a Phoenix server does while {doing}; check the address.") \
            from None
    finally:
        http.close()


def _refusal(server: str, status: int, has_key: bool, key_words: str, doing: str) -> InputError:
    """The sentence for an HTTP error ``status`` Phoenix answered while ``doing``."""
    if 300 <= status < 400:
        return InputError(f"{server} answered with a redirect (HTTP {status}) while {doing}, which is not followed "
                          "so that the key goes to the address given only; give the address it leads to.")
    if status == 401:
        if has_key:
            return InputError(f"Phoenix at {server} did not accept the key in {key_words}; set it to an API key "
                              "of that server.")
        return InputError(f"Phoenix at {server} asks for an API key; set {key_words} to an API key of that server.")
    if status == 403:
        return InputError(f"Phoenix at {server} refused {doing} with this key (HTTP 403); use the key of a user "
                          "allowed to do so.")
    if status == 404:
        return InputError(f"{server} has no Phoenix API (HTTP 404 while {doing}); check the address.")
    if status >= 500:
        return InputError(f"Phoenix at {server} failed while {doing} (HTTP {status}); see the server's log, then "
                          "try again.")
    return InputError(f"Phoenix at {server} refused {doing} (HTTP {status}); see the server's log.")


def _is_missing(error: Exception) -> bool:
    """Whether ``error`` is Phoenix's HTTP 404 (the project or dataset asked for does not exist)."""
    import httpx

    return isinstance(error, httpx.HTTPStatusError) and error.response.status_code == 404


def _missing(address: PhoenixAddress) -> InputError:
    place = "send the application's traces to it first" if address.kind == PROJECTS else "check its name"
    return InputError(f"{address.label[0].upper()}{address.label[1:]} does not exist; {place}.")


# ------------------------------------------------------------------------------------------------ traffic


def read_project_traffic(address: PhoenixAddress | str, *, api_key: str | None = None,
                         key_words: str = API_KEY_VARIABLE):
    """The query log of a Phoenix project's traces (module docstring) as a
    :class:`~coverage_core.checks.query_log.TrafficLog`, with the documents retrieval returned.

    Parameters
    ----------
    address : a project address, parsed or as text
    api_key : the key to send (None: none)
    key_words : where the key comes from, as a refusal's sentence names it

    Raises
    ------
    InputError
        One sentence: the address, the server, the project (it does not exist, or holds no root span with a
        question, or more than :data:`~coverage_core.checks.query_log.MAX_LOG_ROWS` root spans).
    """
    from coverage_core.checks.query_log import MAX_LOG_ROWS, traffic_log

    address = parse_address(address, PROJECTS) if isinstance(address, str) else address
    with _client(address, api_key, key_words, "reading its spans") as client:
        try:
            project = client.projects.get(project_name=address.name)
        except Exception as error:
            if _is_missing(error):
                raise _missing(address) from None
            raise
        roots = _spans(client, project["id"], address, MAX_LOG_ROWS, parent_id="null")
        retrievers = _spans(client, project["id"], address, MAX_LOG_ROWS, span_kind="RETRIEVER")
    documents = _retrieved_by_trace(retrievers)
    rows, n_without_text = [], 0
    for span in sorted(roots, key=_start):  # oldest first, as a log is written
        attributes = span.get("attributes") or {}
        text = _question(attributes)
        if not text:
            n_without_text += 1
            continue
        trace = (span.get("context") or {}).get("trace_id")
        rows.append({"query": text, "timestamp": str(span.get("start_time") or ""),
                     "documents": documents.get(trace, [])})
    if not rows:
        raise InputError(f"{address.label[0].upper()}{address.label[1:]} has no root span holding a user's question "
                         "in its input.value; send the traces of the application's entry point to it.")
    warnings = [_read_sentence(address, rows, n_without_text)]
    frame = pd.DataFrame(rows, columns=["query", "timestamp", "documents"])
    return traffic_log(frame, f"Phoenix project '{address.name}'", warnings, documents_column="documents")


def _spans(client, project_id: str, address: PhoenixAddress, most: int, **filters) -> list[dict]:
    """The project's spans that ``filters`` select (Phoenix's span filters), at most ``most``; InputError for more."""
    spans = client.spans.get_spans(project_identifier=project_id, limit=most + 1, timeout=REQUEST_TIMEOUT, **filters)
    if len(spans) > most:
        raise InputError(f"{address.label[0].upper()}{address.label[1:]} holds more than {most:,} such spans, more "
                         "than one query log may; copy a shorter period into a project of its own.")
    return [span for span in spans if isinstance(span, Mapping)]


def _start(span: Mapping) -> str:
    """A span's start time as Phoenix writes it: ISO 8601 in UTC, so the text sorts as the time does."""
    return str(span.get("start_time") or "")


def _question(attributes: Mapping[str, Any]) -> str | None:
    """The user's words in a root span's attributes: its ``input.value``, else its LLM input messages."""
    text = user_text(attributes.get("input.value"))
    if text:
        return text
    messages = [{key.removeprefix("message."): value for key, value in fields.items()}
                for _, fields in sorted(_numbered(attributes, "llm.input_messages.").items())]
    return user_text({"messages": messages}) if messages else None


def _numbered(attributes: Mapping[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """The flattened list ``prefix`` of OpenInference attributes (``prefix0.document.id`` …) as {position: fields}."""
    items: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        position, _, field = key[len(prefix):].partition(".")
        if position.isdigit() and field:
            items.setdefault(int(position), {})[field] = value
    return items


def _document_name(fields: Mapping[str, Any]) -> str | None:
    """How production names one retrieved document: a file-like metadata field, else its id (module docstring)."""
    metadata = {key.removeprefix("document.metadata."): value for key, value in fields.items()
                if key.startswith("document.metadata.")}
    whole = fields.get("document.metadata")
    if isinstance(whole, str):  # metadata kept as JSON text
        try:
            whole = json.loads(whole)
        except (ValueError, RecursionError):
            whole = None
    if isinstance(whole, Mapping):
        metadata = {**whole, **metadata}
    for key in DOCUMENT_METADATA_KEYS:
        value = metadata.get(key)
        if isinstance(value, (str, int)) and str(value).strip():
            return str(value).strip()
    identifier = fields.get("document.id")
    return str(identifier).strip() or None if identifier is not None else None


def _retrieved_by_trace(spans: Iterable[Mapping]) -> dict[str, list[str]]:
    """Trace id -> the documents its RETRIEVER spans returned, in the order retrieved (earliest span first)."""
    by_trace: dict[str, list[str]] = {}
    for span in sorted(spans, key=_start):
        trace = (span.get("context") or {}).get("trace_id")
        found = [_document_name(fields) for _, fields in sorted(_numbered(span.get("attributes") or {},
                                                                           "retrieval.documents.").items())]
        if trace and any(found):
            by_trace.setdefault(trace, []).extend(name for name in found if name)
    return by_trace


def _read_sentence(address: PhoenixAddress, rows: Sequence[Mapping], n_without_text: int) -> str:
    """What reading the project found: queries, root spans left out, queries with retrieval results."""
    sentence = f"Read {address.label}: {wording.count(len(rows), 'query', 'queries')} from its root spans"
    if n_without_text:
        sentence += f"; left out {wording.count(n_without_text, 'root span')} without a question in its input"
    with_documents = sum(bool(row["documents"]) for row in rows)
    if with_documents:
        sentence += f"; {wording.count(with_documents, 'query', 'queries')} with the documents retrieval returned"
    return sentence + "."


# ------------------------------------------------------------------------------------------------ datasets


def _find_dataset(client, address: PhoenixAddress) -> Mapping | None:
    """The dataset named as in ``address`` (its listing entry), or None when none is."""
    return next((entry for entry in client.datasets.list(timeout=REQUEST_TIMEOUT)
                 if isinstance(entry, Mapping) and entry.get("name") == address.name), None)


def _question_key(inputs: Sequence[Mapping[str, Any]]) -> str | None:
    """The input field holding the question, found by name as a question file's column is; the only field when
    there is one; None otherwise."""
    from coverage_core.inputs.questions import QUESTION_COLUMN_NAMES

    keys = list(dict.fromkeys(str(key) for fields in inputs for key in fields))
    return find_column(keys, QUESTION_COLUMN_NAMES) or (keys[0] if len(keys) == 1 else None)


def read_dataset_questions(address: PhoenixAddress | str, question_column: str | None = None, *,
                           api_key: str | None = None, key_words: str = API_KEY_VARIABLE):
    """A Phoenix dataset's examples (its latest version) as the test set: a
    :class:`~coverage_core.types.QuestionSet` read by :func:`~coverage_core.inputs.questions.read_questions`.

    Each example is one row: its input fields, then its output and metadata fields that the input lacks (lists
    and objects as JSON text). The question column is ``question_column``, else the input field found by name
    (:func:`_question_key`); an input with none (a chat, ``{"messages": …}``) gives a ``question`` column of the
    user's words (:func:`~coverage_core.checks.trace_exports.user_text`). A RAGAS, DeepEval or Giskard test set
    uploaded as a dataset is recognised by its fields, as in a file.

    Raises
    ------
    InputError
        One sentence: the address, the server, the dataset (it does not exist or has no example), or no usable
        question column.
    """
    from coverage_core.inputs.questions import read_questions

    address = parse_address(address, DATASETS) if isinstance(address, str) else address
    with _client(address, api_key, key_words, "reading the dataset") as client:
        found = _find_dataset(client, address)
        if found is None:
            raise _missing(address)
        examples = client.datasets.get_dataset(dataset={"id": found["id"], "name": address.name},
                                               timeout=REQUEST_TIMEOUT).examples
    inputs = [dict(example.get("input") or {}) for example in examples]
    if not inputs:
        raise InputError(f"{address.label[0].upper()}{address.label[1:]} has no examples; add the test questions "
                         "to it first.")
    column = question_column or _question_key(inputs)
    if column is None:
        inputs = [{QUESTION_KEY: user_text(fields) or "", **fields} for fields in inputs]
        column = QUESTION_KEY
    records = []
    for fields, example in zip(inputs, examples):
        record = dict(fields)
        for extra in (example.get("output"), example.get("metadata")):
            for key, value in (extra or {}).items():
                record.setdefault(str(key), value)
        records.append(record)
    data = json.dumps(records, ensure_ascii=False, default=str).encode("utf-8")
    return read_questions(data, question_column=column, name=f"Phoenix dataset '{address.name}'")


@dataclass(frozen=True)
class PushResult:
    """What :func:`push_accepted` did: the dataset's ``label``, the questions sent (``n_sent``), those left out as
    the dataset holds them already (``n_present``), and whether the dataset was ``created``."""

    label: str
    n_sent: int
    n_present: int
    created: bool

    def sentence(self) -> str:
        """One sentence saying what was sent where."""
        present = (f"; {wording.count(self.n_present, 'question')} {wording.plural(self.n_present, 'was', 'were')} "
                   "in it already" if self.n_present else "")
        if not self.n_sent:
            return f"Nothing was sent to {self.label}: it holds every accepted question already."
        version = "as a new dataset" if self.created else "as a new version of the dataset"
        return f"Sent {wording.count(self.n_sent, 'accepted question')} to {self.label} {version}{present}."


def _same(text: Any) -> str:
    return " ".join(str(text or "").split()).casefold()


def push_accepted(address: PhoenixAddress | str, questions: Sequence[AcceptedQuestion], *,
                  api_key: str | None = None, key_words: str = API_KEY_VARIABLE) -> PushResult:
    """Write ``questions`` to a Phoenix dataset: a new version of it (its examples so far, plus those it lacks,
    text compared whitespace and case aside), or a new dataset when none has the address's name.

    Each example's input holds the question (under the dataset's own question field, else
    :data:`QUESTION_KEY`), its output the source passage (:data:`PASSAGE_KEY`), its metadata ``origin`` (who
    wrote it: :mod:`coverage_core.decisions`) and ``source_document``.

    Raises
    ------
    InputError
        One sentence: no question to send, the address, the server, or the write refused.
    """
    address = parse_address(address, DATASETS) if isinstance(address, str) else address
    unique = list({_same(q.text): q for q in reversed(questions) if _same(q.text)}.values())[::-1]
    if not unique:
        raise InputError("There is no accepted question to send to Phoenix; accept at least one first.")
    with _client(address, api_key, key_words, "writing the questions") as client:
        found = _find_dataset(client, address)
        key, present = QUESTION_KEY, set()
        if found is not None:
            examples = client.datasets.get_dataset(dataset={"id": found["id"], "name": address.name},
                                                   timeout=REQUEST_TIMEOUT).examples
            inputs = [dict(example.get("input") or {}) for example in examples]
            key = _question_key(inputs) or QUESTION_KEY
            present = {_same(user_text(fields.get(key)) or "") for fields in inputs}
        new = [q for q in unique if _same(q.text) not in present]
        if new:
            payload = dict(inputs=[{key: q.text} for q in new], outputs=[{PASSAGE_KEY: q.passage} for q in new],
                           metadata=[{"origin": q.origin, "source_document": q.document} for q in new],
                           timeout=REQUEST_TIMEOUT)
            if found is None:
                client.datasets.create_dataset(name=address.name, dataset_description=DATASET_DESCRIPTION, **payload)
            else:
                client.datasets.add_examples_to_dataset(dataset={"id": found["id"], "name": address.name}, **payload)
    return PushResult(address.label, len(new), len(unique) - len(new), found is None and bool(new))
