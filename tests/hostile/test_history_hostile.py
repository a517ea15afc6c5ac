"""The run history against hostile or damaged files (``--history``, ``COVERAGE_HISTORY``): each case ends in
correct handling or in one plain sentence (exit 2), never exit 3 or a traceback; a damaged run is named alone
while the other runs still load; memory and time stay bounded.

Every hostile history is generated in ``tmp_path``: two healthy runs are recorded, then run 2 is pointed at
parts written by hand *with valid digests* (a hostile file can compute them), so each test reaches the defence
it is about rather than the digest check. No test loads the embedding model: a word-hashing embedder stands in
where an analysis runs. The numbered sections follow the reviewer's cases.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import sqlite3
import zlib
from dataclasses import replace

import pytest

from coverage_core.cli import EXIT_OK, EXIT_UNUSABLE, main
from coverage_core.errors import InputError
from coverage_core.history import HISTORY_ENV, RECORD_ENV, parts
from coverage_core.history.location import LABEL_MAX_CHARS, is_conninfo, redact_history_url
from coverage_core.history.parts import DamagedPart, TooLarge, digest_of
from coverage_core.history.store import HistoryStore, _target_url
from tests.fakes import FakeEmbedder
from tests.history.conftest import empty_history_at, make_snapshot

PASSWORD = "hunter2pw"
DOCUMENT_TEXT = {
    "drum.txt": "A drum is a percussion instrument. Drums are struck with sticks or hands to make rhythm. " * 8,
    "flute.txt": "A flute is a wind instrument. Flutes are played by blowing across a hole in the tube. " * 8,
}


# ---------------------------------------------------------------- hostile histories, made by hand


def _history(tmp_path, keep_text: bool = False):
    """A history of two healthy runs (``main``): run 2 is the one the tests damage."""
    path = tmp_path / "history.sqlite"
    with HistoryStore(path) as store:
        store.record(make_snapshot(label="main", keep_text=keep_text))
        store.record(make_snapshot(label="main", n_documents=7, seed=1, keep_text=keep_text))
    return path


def _put_part(path, kind: str, payload: bytes, data: bytes | None = None, digest: str | None = None) -> str:
    """Store a part by hand: its right digest unless ``digest`` is given, ``payload`` compressed unless ``data``."""
    digest = digest or digest_of(kind, payload)
    with sqlite3.connect(path) as connection:
        connection.execute("INSERT OR REPLACE INTO parts (digest, kind, data) VALUES (?, ?, ?)",
                           (digest, kind, zlib.compress(payload) if data is None else data))
    return digest


def _set(path, run: int, column: str, value) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (value, run))


def _column(path, run: int, column: str):
    with sqlite3.connect(path) as connection:
        return connection.execute(f"SELECT {column} FROM runs WHERE id = ?", (run,)).fetchone()[0]


def _bomb(n_bytes: int) -> bytes:
    """A zlib stream of ``n_bytes`` zero bytes, compressed a megabyte at a time (~1 KB per MB)."""
    packer, chunk, out = zlib.compressobj(9), b"\0" * 1024**2, []
    for start in range(0, n_bytes, len(chunk)):
        out.append(packer.compress(chunk[:n_bytes - start]))
    return b"".join(out) + packer.flush()


def _damaged_run_refused(path, run: int = 2, reason: str = "") -> str:
    """Loading ``run`` is one sentence naming it; the other run still loads. Returns the sentence."""
    with HistoryStore(path) as store:
        with pytest.raises(InputError) as raised:
            store.load(run)
        other = 1 if run == 2 else 2
        assert store.load(other).label == "main"
    message = str(raised.value)
    assert message.startswith(f"Run {run} in the history {path} is damaged and cannot be read"), message
    assert reason in message and "\n" not in message and message.endswith("."), message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    return message


# ---------------------------------------------------------------- the command line


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """``cli(*extra)``: ``analyze`` on two small documents with a word-hashing embedder, run in process; returns
    (exit code, stdout, stderr)."""
    from coverage_core import embedding_steps

    monkeypatch.setenv("COVERAGE_CORE_CACHE_DIR", str(tmp_path / "embedding-cache"))
    monkeypatch.delenv(HISTORY_ENV, raising=False)
    monkeypatch.delenv(RECORD_ENV, raising=False)
    monkeypatch.setattr(embedding_steps, "build_embedder", lambda config, api_key=None: FakeEmbedder(
        model="hash-64", vectors="words", width=64, max_tokens=256, batch_size=64))
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCUMENT_TEXT.items():
        (docs / name).write_text(text, encoding="utf-8")
    questions = tmp_path / "questions.csv"
    questions.write_text("question\nWhat is a drum?\nHow is a flute played?\n", encoding="utf-8")

    def run(*extra):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["analyze", "--docs", str(docs), "--questions", str(questions), "--out",
                         str(tmp_path / "r.json"), "--clusters", "2", "--suggest", "0", "--quiet", *extra])
        return code, out.getvalue(), err.getvalue()

    return run


def _one_sentence(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("coverage_core: ") and "Traceback" not in err, err
    assert "internal error" not in err, err
    return lines[0]


def _since_run_2_refused(cli, path) -> None:
    """``--since 2`` against ``path`` stops unusable, with one sentence naming run 2."""
    code, _, err = cli("--history", str(path), "--since", "2")
    assert code == EXIT_UNUSABLE and "Run 2 in the history" in _one_sentence(err)


def _timeline_passes_over_run_2(path) -> None:
    """The document timeline still reads, and names run 2 (only) as damaged."""
    with HistoryStore(path) as store:
        store.document_timeline()
        assert set(store.damaged_runs) == {2}


# ---------------------------------------------------------------- 1. zlib bombs


@pytest.mark.parametrize("kind, column, limit", [
    ("document_states", "document_states_digest", parts.MAX_PART_BYTES),
    ("topics", "topics_digest", parts.MAX_JSON_PART_BYTES),
])
def test_a_part_inflating_past_its_limit_is_refused_and_names_the_run(tmp_path, cli, kind, column, limit):
    path = _history(tmp_path)
    payload_size = limit + 4096  # a bit over the stated limit: the stream is read no further
    bomb = _bomb(payload_size)
    assert len(bomb) < payload_size // 500
    _set(path, 2, column, _put_part(path, kind, b"", data=bomb, digest=digest_of(kind, b"\0" * payload_size)))
    _damaged_run_refused(path, reason=f"a part inflates past {limit // 1024**2} MiB")
    _since_run_2_refused(cli, path)


def test_inflation_stops_at_the_limit_however_large_the_stream_says_it_is():
    with pytest.raises(TooLarge, match="inflates past 1,000 bytes"):
        parts.inflate(zlib.compress(b"\0" * 10**7), 1000)
    assert parts.inflate(zlib.compress(b"abc"), 3) == b"abc"
    for broken in (b"not zlib", zlib.compress(b"abc")[:-3], zlib.compress(b"abc") + b"tail", "text"):
        with pytest.raises(DamagedPart):
            parts.inflate(broken, 100)


def test_a_kept_text_that_inflates_past_the_limit_is_refused(tmp_path, monkeypatch):
    path = _history(tmp_path, keep_text=True)
    monkeypatch.setattr(parts, "MAX_PART_BYTES", 4096)  # the limit read at each use: a small bomb suffices
    with sqlite3.connect(path) as connection:
        (digest,) = connection.execute("SELECT digest FROM parts WHERE kind = 'text' LIMIT 1").fetchone()
    _put_part(path, "text", b"", data=_bomb(8192), digest=digest)
    with HistoryStore(path) as store, pytest.raises(InputError, match="is damaged and cannot be read"):
        store.load(2)


def test_a_run_too_large_to_read_back_is_refused_when_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(parts, "MAX_PART_BYTES", 1000)
    snapshot = make_snapshot(n_documents=3)
    large = replace(snapshot, documents=tuple(replace(d, text="x" * 2000) for d in snapshot.documents))
    with HistoryStore(tmp_path / "h.sqlite") as store:
        with pytest.raises(InputError, match=r"^This run is too large for the history \(its text part would take "
                                             r"more than 1,000 bytes\); record it without --keep-document-text"):
            store.record(large)
        assert store.runs() == []


def test_a_bomb_in_a_history_of_the_first_schema_does_not_stop_its_migration(tmp_path):
    """The 0002 migration reads every run's states: a bomb there leaves that run damaged, the others migrate."""
    head, old = _history(tmp_path), tmp_path / "old.sqlite"
    empty_history_at(old, "0001")
    bomb_digest = digest_of("document_states", b"\0" * (parts.MAX_PART_BYTES + 1))
    with sqlite3.connect(old) as connection:
        connection.execute("ATTACH DATABASE ? AS head", (str(head),))
        columns = [row[1] for row in connection.execute("PRAGMA table_info(runs)")]
        connection.execute("INSERT INTO parts SELECT * FROM head.parts WHERE kind != 'document_verdicts'")
        connection.execute(f"INSERT INTO runs ({', '.join(columns)}) SELECT {', '.join(columns)} FROM head.runs")
        connection.execute("INSERT INTO parts VALUES (?, 'document_states', ?)",
                           (bomb_digest, _bomb(parts.MAX_PART_BYTES + 1)))
        connection.execute("UPDATE runs SET document_states_digest = ? WHERE id = 2", (bomb_digest,))
    _damaged_run_refused(old, reason="a part inflates past")
    _timeline_passes_over_run_2(old)


def test_recording_again_rewrites_a_damaged_shared_part_and_heals_the_runs_using_it(tmp_path):
    """Parts are shared between runs: one damaged under its digest is written anew by the next run needing it."""
    path = _history(tmp_path)
    shared = _column(path, 1, "topics_digest")
    assert _column(path, 2, "topics_digest") == shared
    _put_part(path, "topics", b"", data=_bomb(parts.MAX_JSON_PART_BYTES + 1), digest=shared)
    with HistoryStore(path) as store:
        for run in (1, 2):
            with pytest.raises(InputError, match=rf"^Run {run} in the history .* \(a part inflates past"):
                store.load(run)
    with HistoryStore(path) as store:
        again = store.record(make_snapshot(label="main"))
        assert [store.load(run).label for run in (1, 2, again.run)] == ["main"] * 3


def test_the_document_timeline_reads_within_a_stated_total(tmp_path, monkeypatch):
    import coverage_core.history.store as store_module

    path = _history(tmp_path)
    monkeypatch.setattr(store_module, "MAX_TIMELINE_READ_BYTES", 100)
    with HistoryStore(path) as store, pytest.raises(InputError, match=r"^The document timeline of the history "
                                                                     r".* would read more than"):
        store.document_timeline()


# ---------------------------------------------------------------- 2. JSON nested 100,000 deep


@pytest.mark.parametrize("kind, column", [("topics", "topics_digest"), ("question_states", "question_states_digest"),
                                          ("corpus", "corpus_digest")])
def test_json_nested_100000_deep_is_a_damaged_run_not_a_crash(tmp_path, cli, kind, column):
    path = _history(tmp_path)
    deep = b"[" * 100_000 + b"]" * 100_000
    _set(path, 2, column, _put_part(path, kind, deep))
    _damaged_run_refused(path, reason="nested too deep")
    _since_run_2_refused(cli, path)


def test_json_nested_deep_in_the_headline_leaves_that_run_out_of_the_list(tmp_path):
    path = _history(tmp_path)
    _set(path, 2, "headline", '{"a":' * 2000 + "1" + "}" * 2000)  # within the headline's length limit
    with HistoryStore(path) as store:
        assert [run.run for run in store.runs()] == [1]
        assert "nested too deep" in store.damaged_runs[2]


# ---------------------------------------------------------------- 3. absurd numbers


@pytest.mark.parametrize("slices", ["kept", "none"])  # none: each level is empty, so a loop of 1e9 levels spins
@pytest.mark.parametrize("depth", ["1e9", "1000000000", "-1", "0", "13", '"2"', "true", "null", "1.5"])
def test_an_absurd_depth_in_a_corpus_manifest_is_refused_at_once(tmp_path, cli, depth, slices):
    path = _history(tmp_path)
    manifest = json.loads(parts.inflate(_part_data(path, _column(path, 2, "corpus_digest")), 10**6))
    text = '{"depth":%s,"parts":%s}' % (depth, json.dumps(manifest["parts"] if slices == "kept" else []))
    _set(path, 2, "corpus_digest", _put_part(path, "corpus", text.encode()))
    _damaged_run_refused(path)
    _timeline_passes_over_run_2(path)
    _since_run_2_refused(cli, path)


def _part_data(path, digest: str) -> bytes:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT data FROM parts WHERE digest = ?", (digest,)).fetchone()[0]


@pytest.mark.parametrize("column, value", [
    ("support_threshold", 1e300), ("support_threshold", -5.0), ("threshold_reliable", 7),
    ("support_threshold", "high"), ("recorded_at", "yesterday"), ("recorded_at", 12345),
    ("tool_version", b"\x00\x01"), ("model", b"\xff"),
])
def test_every_number_and_text_of_a_run_row_is_checked(tmp_path, column, value):
    path = _history(tmp_path)
    _set(path, 2, column, value)
    with HistoryStore(path) as store:
        assert [run.run for run in store.runs()] == [1] and set(store.damaged_runs) == {2}
        with pytest.raises(InputError, match="^Run 2 in the history .* is damaged and cannot be read"):
            store.resolve("2")
        assert store.load(1).label == "main"


@pytest.mark.parametrize("payload, reason", [
    (lambda n: b"\x01" + (n + 5).to_bytes(4, "little") + b"\0" * (n + 99), "do not match"),  # more than listed
    (lambda n: b"\x01" + n.to_bytes(4, "little") + b"\x09" * n + b"\0\0\0\0\0" + b"\0" * 8 * n, "unknown flags"),
    (lambda n: b"\x01" + n.to_bytes(4, "little") + b"\0" * n + b"\x01" + (300).to_bytes(4, "little"),
     "wrong length"),
    (lambda n: b"\x01" + n.to_bytes(4, "little") + b"\0" * n + b"\0\0\0\0\0" + b"\0\0\0\0\0\0\xf8\x7f" * n,
     "from 0 to 1"),                                                              # NaN shares
])
def test_document_states_are_checked_byte_by_byte(tmp_path, payload, reason):
    path = _history(tmp_path)
    _set(path, 2, "document_states_digest", _put_part(path, "document_states", payload(7)))
    _damaged_run_refused(path, reason=reason)


@pytest.mark.parametrize("topics", [
    '[["rivers", -3, 0, 0.5, false, []]]', '[["rivers", 3, 0, "high", false, []]]',
    '[["rivers", 3, 0, 0.5, false, [[99, 1]]]]', '[["rivers", 3, 0, 0.5, "no", []]]', '[{"label": "rivers"}]',
    '[["rivers", 3, 0, 0.5, false, [[0, 1e999]]]]',
])
def test_topics_of_the_wrong_shape_or_range_are_a_damaged_run(tmp_path, topics):
    path = _history(tmp_path)
    _set(path, 2, "topics_digest", _put_part(path, "topics", topics.encode()))
    _damaged_run_refused(path)


# ---------------------------------------------------------------- 4. an index that lists itself


def test_an_index_part_that_lists_itself_is_refused(tmp_path, cli):
    path = _history(tmp_path)
    itself = "ab" * 32  # its content cannot hash to itself: stored under that digest by hand
    _put_part(path, "corpus_index", json.dumps([itself] * 1000).encode(), digest=itself)
    _set(path, 2, "corpus_digest", _put_part(path, "corpus", json.dumps({"depth": 5, "parts": [itself]}).encode()))
    _damaged_run_refused(path)
    _timeline_passes_over_run_2(path)
    _since_run_2_refused(cli, path)


def test_a_cycle_is_caught_by_the_walk_itself_whatever_the_digests_say():
    """The walk refuses a part met again at a deeper level before reading it (digest check or not)."""
    itself = "cd" * 32
    stored = {"m" * 64: json.dumps({"depth": 4, "parts": [itself]}).encode(),
              itself: json.dumps([itself, itself]).encode()}
    reads = []

    def fetch(digests, kind):
        reads.append(len(digests))
        return [stored["m" * 64 if kind == "corpus" else digest] for digest in digests]

    with pytest.raises(DamagedPart, match="holds itself"):
        parts.read_sliced(fetch, "m" * 64, "corpus")
    assert reads == [1, 1]


def test_a_part_listed_a_million_times_is_refused_by_the_read_budget(tmp_path):
    """Valid digests, no cycle, but exponential: each level lists the next part many times."""
    path = _history(tmp_path)
    row = ["x" * 1000, "", 1, None]
    slice_digest = _put_part(path, "corpus_slice", json.dumps([row] * 8000).encode())  # ~8 MB
    index = _put_part(path, "corpus_index", json.dumps([slice_digest] * 100).encode())  # ~800 MB in all
    _set(path, 2, "corpus_digest", _put_part(path, "corpus", json.dumps({"depth": 2, "parts": [index]}).encode()))
    _damaged_run_refused(path, reason=f"inflate past {parts.MAX_READ_BYTES // 1024**2} MiB in all")


def test_a_list_longer_than_the_item_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(parts, "MAX_LIST_ITEMS", 50)
    path = _history(tmp_path)
    slice_digest = _put_part(path, "question_set_slice", json.dumps([["h", "q"]] * 10).encode())
    manifest = {"depth": 1, "parts": [slice_digest] * 6}
    _set(path, 2, "question_set_digest", _put_part(path, "question_set", json.dumps(manifest).encode()))
    _damaged_run_refused(path, reason="longer than 50 entries")


# ---------------------------------------------------------------- 5. a damaged headline


@pytest.mark.parametrize("headline", ["{not json", "[1, 2]", '{"tested_share": "high", "n_documents": "six"}',
                                      '{"tested_share": NaN}', '{"tested_share": Infinity}', '{"n_chunks": 1e999}',
                                      '{"n_chunks": ' + "9" * 5000 + "}", '"text"', "null", "x" * 100_000])
def test_a_damaged_headline_names_its_run_and_the_others_still_load(tmp_path, cli, headline):
    path = _history(tmp_path)
    _set(path, 2, "headline", headline)
    with HistoryStore(path) as store:
        assert [run.run for run in store.runs()] == [1]
        assert store.damaged_sentence().startswith(f"Run 2 in the history {path} is damaged")
        assert store.resolve("1").run == 1 and store.load(1).label == "main"
    for since in ("2", "main"):  # by number, and as the label's latest run
        code, _, err = cli("--history", str(path), "--since", since)
        assert code == EXIT_UNUSABLE and "Run 2 in the history" in _one_sentence(err)


def test_figures_that_cannot_be_read_back_are_never_recorded(tmp_path):
    snapshot = make_snapshot()
    with HistoryStore(tmp_path / "h.sqlite") as store:
        nan = store.record(replace(snapshot, headline={"tested_share": float("nan")}))
        assert store.load(nan.run).headline == {"tested_share": None}  # not a number: not defined
        with pytest.raises(InputError, match=r"^This run cannot be recorded in the history \(a figure is not"):
            store.record(replace(snapshot, headline={"tested_share": "high"}))
        assert [run.run for run in store.runs()] == [nan.run]


# ---------------------------------------------------------------- 6. a 10 MB label


def test_a_hand_edited_10_mb_label_is_cut_for_display(tmp_path, cli):
    path = _history(tmp_path)
    _set(path, 1, "label", "L" * 10_000_000)
    with HistoryStore(path) as store:
        label = store.runs()[0].label
        assert len(label) == LABEL_MAX_CHARS and label.endswith("\N{HORIZONTAL ELLIPSIS}")
        assert store.load(1).label == label
    code, out, err = cli("--history", str(path), "--since", "1")
    assert code == EXIT_OK, err
    assert len(out) + len(err) < 20_000 and "L" * (LABEL_MAX_CHARS - 1) in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["since"]["run"] == 1 and len(report["since"]["label"]) == LABEL_MAX_CHARS


def test_a_label_past_the_limit_is_refused_when_recorded(tmp_path, cli):
    code, _, err = cli("--history", str(tmp_path / "h.sqlite"), "--record", "L" * (LABEL_MAX_CHARS + 1))
    assert code == EXIT_UNUSABLE and "--record must be one line of at most" in _one_sentence(err)
    assert not (tmp_path / "h.sqlite").exists()


# ---------------------------------------------------------------- 7. the dashboard


def test_the_history_page_on_a_self_listing_file_shows_one_sentence(tmp_path, monkeypatch):
    from tests.app_support import run_page, texts

    path = _history(tmp_path)
    itself = "ab" * 32
    _put_part(path, "corpus_index", json.dumps([itself] * 1000).encode(), digest=itself)
    _set(path, 2, "corpus_digest", _put_part(path, "corpus", json.dumps({"depth": 5, "parts": [itself]}).encode()))
    monkeypatch.setenv(HISTORY_ENV, str(path))
    monkeypatch.delenv(RECORD_ENV, raising=False)
    at = run_page("pages/10_history.py")
    assert not at.exception
    (warning,) = texts(at.warning)
    assert warning.startswith("Run 2 in the history") and "is damaged" in warning and "\n" not in warning.strip()
    assert not texts(at.error)
    assert "One run so far" in " ".join(texts(at.info))  # run 1 is shown; run 2 is left out


# ---------------------------------------------------------------- 8. devices


@pytest.mark.parametrize("where", ["/dev/null", "/dev/zero", "fifo", "link to /dev/null", "wal beside it"])
def test_a_device_or_pipe_as_the_history_is_refused_and_nothing_is_created(tmp_path, cli, where):
    target = {"/dev/null": "/dev/null", "/dev/zero": "/dev/zero"}.get(where, str(tmp_path / "h.sqlite"))
    if where == "fifo":
        os.mkfifo(target)
    elif where == "link to /dev/null":
        os.symlink("/dev/null", target)
    elif where == "wal beside it":
        os.symlink("/dev/null", target + "-wal")
    journals_before = {suffix: os.path.lexists(target + suffix) for suffix in ("-journal", "-wal", "-shm")}
    with pytest.raises(InputError, match="is not a regular file"):
        HistoryStore(target)
    code, _, err = cli("--history", target, "--record", "main")
    assert code == EXIT_UNUSABLE
    sentence = _one_sentence(err)
    assert "is not a regular file" in sentence and "damaged" not in sentence
    assert {suffix: os.path.lexists(target + suffix) for suffix in journals_before} == journals_before


# ---------------------------------------------------------------- 9. a libpq keyword string


def test_a_libpq_keyword_string_is_refused_without_showing_its_password(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path / "docs")
    conninfo = f"host=127.0.0.1 port=5432 user=u password={PASSWORD} dbname=x"
    code, out, err = cli("--history", conninfo, "--record", "main")
    assert code == EXIT_UNUSABLE
    assert "--history is a PostgreSQL keyword string" in _one_sentence(err)
    assert PASSWORD not in out + err
    assert sorted(os.listdir(tmp_path / "docs")) == sorted(DOCUMENT_TEXT)  # no SQLite file of that name
    monkeypatch.setenv(HISTORY_ENV, conninfo)
    code, out, err = cli("--record", "main")
    assert code == EXIT_UNUSABLE and f"{HISTORY_ENV} is a PostgreSQL" in _one_sentence(err)
    assert PASSWORD not in out + err
    with pytest.raises(InputError) as raised:
        HistoryStore(conninfo)
    assert PASSWORD not in str(raised.value) and "keyword string" in str(raised.value)


def test_a_keyword_string_typed_on_the_history_page_is_one_sentence_and_never_shown(tmp_path, monkeypatch):
    from tests.app_support import every_text, run_page, texts
    from ui import state

    monkeypatch.setenv(HISTORY_ENV, str(tmp_path / "h.sqlite"))
    monkeypatch.chdir(tmp_path)
    at = run_page("pages/10_history.py")
    at.text_input(key=state.W_HISTORY_FILE).input(f"host=127.0.0.1 user=u password={PASSWORD} dbname=x").run()
    assert not at.exception
    (error,) = texts(at.error)
    assert "PostgreSQL keyword string" in error and "\n" not in error.strip()
    assert "records into: host" in every_text(at)  # where the page reads: shown, its password masked
    assert PASSWORD not in every_text(at) and os.listdir(tmp_path) == []


@pytest.mark.parametrize("conninfo, shown", [
    (f"host=db password={PASSWORD} dbname=x", "host=db password=*** dbname=x"),
    (f"dbname = x password = '{PASSWORD} with \\' quote' host=db", "dbname = x password = *** host=db"),
    (f"password='{PASSWORD} unclosed", "password=***"),
    (f"service=ci sslpassword={PASSWORD}", "service=ci sslpassword=***"),
])
def test_keyword_strings_are_recognised_and_redacted_by_position(conninfo, shown):
    assert is_conninfo(conninfo) and redact_history_url(conninfo) == shown
    assert not is_conninfo("results/history.sqlite") and not is_conninfo("postgresql://u:p@db/x?password=y")


# ---------------------------------------------------------------- 10. passwords holding @ and /


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("password", ["p@ss/w0rd", "p", "s", "@/@"])
def test_only_the_password_is_masked_and_the_store_connects_where_the_message_says(tmp_path, cli, password):
    port = _closed_port()
    url = f"postgresql://user:{password}@127.0.0.1:{port}/db"
    shown = f"postgresql://user:***@127.0.0.1:{port}/db"
    assert redact_history_url(url) == shown
    parsed = _target_url(url, shown)
    assert (parsed.username, parsed.password, parsed.host, parsed.port, parsed.database) == (
        "user", password, "127.0.0.1", port, "db")
    code, out, err = cli("--history", url, "--record", "main")
    assert code == EXIT_UNUSABLE
    sentence = _one_sentence(err)
    assert shown in sentence and "***ostgresql" not in sentence and "history" in sentence, sentence
    if len(password) > 1:
        assert password not in out + err


# ---------------------------------------------------------------- 11. --since


@pytest.mark.parametrize("since, expected", [
    ("99999999999999999999999", "No run numbered or labelled '99999999999999999999999'"),
    ("9" * 5000, "--since (a run number or a label) must be one line of at most"),
    ("\N{SUPERSCRIPT TWO}", "No run numbered or labelled '\N{SUPERSCRIPT TWO}'"),
    ("\N{ARABIC-INDIC DIGIT ONE}", "No run numbered or labelled"),
    ("0", "No run numbered or labelled '0'"),
    ("1\n2", "--since (a run number or a label) must be one line"),
])
def test_since_is_a_plain_run_number_or_a_label(tmp_path, cli, since, expected):
    path = _history(tmp_path)
    code, _, err = cli("--history", str(path), "--since", since)
    assert code == EXIT_UNUSABLE
    sentence = _one_sentence(err)
    assert expected in sentence and "damaged" not in sentence and len(sentence) < 400, sentence
    with HistoryStore(path) as store:
        assert [run.run for run in store.runs()] == [1, 2] and not store.damaged_runs


# ---------------------------------------------------------------- 12. a damaged decisions part


def _decisions_history(tmp_path):
    """Two healthy runs (``main``): run 1 holds decisions about suggested questions, run 2 none known (NULL)."""
    from tests.history.conftest import make_decisions

    path = tmp_path / "history.sqlite"
    with HistoryStore(path) as store:
        store.record(make_snapshot(label="main", decisions=make_decisions(5)))
        store.record(make_snapshot(label="main", n_documents=7, seed=1))
    return path


def _decisions_part(path, rows: str) -> str:
    """A decisions list of one slice holding ``rows`` (JSON text), stored by hand with valid digests."""
    slice_digest = _put_part(path, "decisions_slice", rows.encode())
    return _put_part(path, "decisions", json.dumps({"depth": 1, "parts": [slice_digest]}).encode())


def _damaged_decisions_refused(path, reason: str = "") -> None:
    """Run 2 is one sentence wherever it is read, its decisions alone too; run 1 and its decisions still load."""
    _damaged_run_refused(path, reason=reason)
    with HistoryStore(path) as store:
        with pytest.raises(InputError) as raised:
            store.decisions(2)
        assert len(store.decisions(1)) == 5 and store.load(1).decisions == store.decisions(1)
        assert [run.run for run in store.runs()] == [1, 2]  # the rows are sound: listed, named when read
    message = str(raised.value)
    assert message.startswith(f"Run 2 in the history {path} is damaged and cannot be read"), message
    assert reason in message and "\n" not in message and raised.value.__cause__ is None


@pytest.mark.parametrize("rows, reason", [
    ('[["maybe", "q", "q", "local", 1, "a.txt"]]', "not accepted, open or rejected"),
    ('[[["accepted"], "q", "q", "local", 1, "a.txt"]]', "not accepted, open or rejected"),  # unhashable: no crash
    ('[["accepted", 12, "q", "local", 1, "a.txt"]]', "not text"),
    ('[["accepted", "q", "q", "local", -1, "a.txt"]]', "not a whole number in range"),
    ('[["accepted", "q", "q", "local", 1.5, "a.txt"]]', "not a whole number in range"),
    ('[["accepted", "q", "q", "local", true, "a.txt"]]', "not a whole number in range"),
    ('[["accepted", "q", "q", "local", 1e999, "a.txt"]]', "not a whole number in range"),
    ('[["accepted", "q", "q", "local", 1]]', "a decision entry is not"),
    ('[{"decision": "accepted", "question": "q"}]', "a decision entry is not"),
    ('{"decision": "accepted"}', "a slice of the run is not a list"),
    ('[["accepted", "q", "q", "local", NaN, "a.txt"]]', "NaN or Infinity"),
])
def test_decisions_of_the_wrong_shape_or_type_are_a_damaged_run(tmp_path, rows, reason):
    path = _decisions_history(tmp_path)
    _set(path, 2, "decisions_digest", _decisions_part(path, rows))
    _damaged_decisions_refused(path, reason=reason)


def test_decisions_nested_100000_deep_are_a_damaged_run_not_a_crash(tmp_path, cli):
    path = _decisions_history(tmp_path)
    _set(path, 2, "decisions_digest", _decisions_part(path, "[" * 100_000 + "]" * 100_000))
    _damaged_decisions_refused(path, reason="nested too deep")
    deep_manifest = _put_part(path, "decisions", b'{"depth": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    _set(path, 2, "decisions_digest", deep_manifest)
    _damaged_decisions_refused(path, reason="nested too deep")
    _since_run_2_refused(cli, path)


def test_more_decisions_than_the_item_limit_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(parts, "MAX_LIST_ITEMS", 50)
    path = _decisions_history(tmp_path)
    slice_digest = _put_part(path, "decisions_slice",
                             json.dumps([["rejected", "q", "q", "local", None, ""]] * 10).encode())
    manifest = _put_part(path, "decisions", json.dumps({"depth": 1, "parts": [slice_digest] * 6}).encode())
    _set(path, 2, "decisions_digest", manifest)
    _damaged_decisions_refused(path, reason="longer than 50 entries")
    one_slice = _decisions_part(path, json.dumps([["rejected", "q", "q", "local", None, ""]] * 51))
    _set(path, 2, "decisions_digest", one_slice)
    _damaged_decisions_refused(path, reason="longer than 50 entries")


@pytest.mark.parametrize("damage", ["not a digest", "missing part", "another kind's part", "bomb", "self-listing",
                                    "no manifest"])
def test_a_decisions_part_that_is_not_one_is_a_damaged_run(tmp_path, damage):
    path = _decisions_history(tmp_path)
    if damage == "not a digest":
        digest = "not-a-digest"
    elif damage == "missing part":
        digest = "ab" * 32
    elif damage == "another kind's part":  # a valid question list: its digest binds its kind, so not decisions
        digest = _column(path, 1, "question_set_digest")
    elif damage == "bomb":
        digest = _put_part(path, "decisions", b"", data=_bomb(parts.MAX_JSON_PART_BYTES + 1),
                           digest=digest_of("decisions", b"\0" * (parts.MAX_JSON_PART_BYTES + 1)))
    elif damage == "self-listing":
        itself = "cd" * 32
        _put_part(path, "decisions_index", json.dumps([itself] * 100).encode(), digest=itself)
        digest = _put_part(path, "decisions", json.dumps({"depth": 3, "parts": [itself]}).encode())
    else:
        digest = _put_part(path, "decisions", b'[["accepted", "q", "q", "local", 1, "a.txt"]]')
    _set(path, 2, "decisions_digest", digest)
    _damaged_decisions_refused(path)


def test_the_history_page_names_a_run_with_damaged_decisions_and_shows_the_others(tmp_path, monkeypatch):
    from tests.app_support import run_page, texts
    from ui import state

    path = _decisions_history(tmp_path)
    _set(path, 2, "decisions_digest", _decisions_part(path, '[["maybe", "q", "q", "local", 1, "a.txt"]]'))
    monkeypatch.setenv(HISTORY_ENV, str(path))
    monkeypatch.delenv(RECORD_ENV, raising=False)
    at = run_page("pages/10_history.py")
    assert not at.exception
    errors = texts(at.error)
    assert errors and all(e.startswith("Run 2 in the history") and "is damaged" in e and "\n" not in e.strip()
                          for e in errors)
    at.selectbox(key=state.W_HISTORY_DECISIONS).set_value(1).run()
    assert not at.exception
    assert "At run 1: 3 suggested questions accepted, 2 edited, 1 rejected." in texts(at.caption)
