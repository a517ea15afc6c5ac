"""Peak memory of each hostile input of issue 46, and of the dashboard server with a hostile history open.

Each case is built in a temporary folder and run in a fresh process, as a user would meet it: the command
line (``python -m coverage_core analyze`` with the bundled model) or, for a saved analysis, the loader the
dashboard calls. The peak resident memory of that one process is read from the kernel (``wait4``), so the
model, Python and the libraries are in it. Target: at most 1 GB for every case, each ending in exit 0
(handled) or exit 2 (one sentence), never exit 3.

The dashboard: Streamlit serves the app with ``COVERAGE_HISTORY`` naming a history whose index part lists
itself; a real browser (Debian's chromium) opens the History page and waits for its warning; the server's
peak (``VmHWM`` in ``/proc``) must stay under 1 GB.

    .venv/bin/python benchmarks/bench_hostile_memory.py [--smoke] [--no-dashboard]

``--smoke``: two cases, no dashboard; the exit code then ignores the target.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # a script, not a page: run from anywhere
sys.path.insert(0, str(PROJECT / "benchmarks"))

from bench_history_changes import synthetic_snapshot  # noqa: E402
from shared_data import SMOKE_HELP  # noqa: E402

from coverage_core.history import HISTORY_ENV, RECORD_ENV  # noqa: E402
from coverage_core.history.parts import digest_of  # noqa: E402
from coverage_core.history.store import HistoryStore  # noqa: E402

TARGET_BYTES = 1024**3
DOCUMENTS = {
    "drum.txt": "A drum is a percussion instrument. Drums are struck with sticks or hands to make rhythm. " * 8,
    "flute.txt": "A flute is a wind instrument. Flutes are played by blowing across a hole in the tube. " * 8,
}
QUESTIONS = "question\nWhat is a drum?\nHow is a flute played?\n"


@dataclass(frozen=True)
class Outcome:
    name: str
    exit_code: int
    peak_bytes: int
    seconds: float
    said: str

    @property
    def ok(self) -> bool:
        return self.exit_code in (0, 2) and self.peak_bytes <= TARGET_BYTES


def peak_of(command: list[str], env: dict[str, str], cwd: Path) -> tuple[int, int, str]:
    """Run ``command``; its exit code, its own peak resident bytes (``wait4``) and its last stderr line."""
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = process.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    lines = stderr.strip().splitlines()
    return process.returncode, usage.ru_maxrss * 1024, lines[-1][:160] if lines else ""


# ---------------------------------------------------------------- hostile histories


def healthy_history(path: Path, label: str = "main") -> Path:
    """Two healthy runs; run 2 is the one each case damages."""
    with HistoryStore(path) as store:
        for seed in range(2):
            store.record(synthetic_snapshot(6, 4, 3, seed=seed, label=label))
    return path


def put_part(path: Path, kind: str, payload: bytes | None = None, *, data: bytes | None = None,
             digest: str | None = None) -> str:
    """Store a part by hand, under its right digest unless ``digest`` is given (a hostile file can compute it)."""
    digest = digest or digest_of(kind, payload or b"")
    with sqlite3.connect(path) as connection:
        connection.execute("INSERT OR REPLACE INTO parts (digest, kind, data) VALUES (?, ?, ?)",
                           (digest, kind, zlib.compress(payload) if data is None else data))
    return digest


def set_run(path: Path, run: int, column: str, value) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (value, run))


def zeros_stream(n_bytes: int) -> bytes:
    """A zlib stream of ``n_bytes`` zero bytes, a megabyte at a time (about 1 KB per MB)."""
    packer, chunk, out = zlib.compressobj(9), b"\0" * 1024**2, []
    for start in range(0, n_bytes, len(chunk)):
        out.append(packer.compress(chunk[:n_bytes - start]))
    return b"".join(out) + packer.flush()


def bomb_history(folder: Path) -> Path:
    """Run 2's document states: a 3 MB stream that inflates to 3 GB."""
    path = healthy_history(folder / "bomb.sqlite")
    set_run(path, 2, "document_states_digest",
            put_part(path, "document_states", b"[]", data=zeros_stream(3 * 1024**3), digest="ee" * 32))
    return path


def self_listing_history(folder: Path) -> Path:
    """Run 2's corpus index lists itself a thousand times."""
    path = healthy_history(folder / "self-listing.sqlite")
    itself = "ab" * 32
    put_part(path, "corpus_index", json.dumps([itself] * 1000).encode(), digest=itself)
    set_run(path, 2, "corpus_digest",
            put_part(path, "corpus", json.dumps({"depth": 5, "parts": [itself]}).encode()))
    return path


def deep_history(folder: Path) -> Path:
    """Run 2's document states: JSON nested 100,000 deep."""
    path = healthy_history(folder / "deep.sqlite")
    set_run(path, 2, "document_states_digest", put_part(path, "document_states", b"[" * 100_000 + b"]" * 100_000))
    return path


def huge_depth_history(folder: Path) -> Path:
    """Run 2's corpus manifest says ``depth: 1e9``."""
    path = healthy_history(folder / "depth.sqlite")
    set_run(path, 2, "corpus_digest", put_part(path, "corpus", json.dumps({"depth": 1e9, "parts": []}).encode()))
    return path


def long_label_history(folder: Path) -> Path:
    """Run 1's label edited by hand to 10 MB."""
    path = healthy_history(folder / "label.sqlite")
    set_run(path, 1, "label", "L" * 10_000_000)
    return path


# ---------------------------------------------------------------- hostile question files and saved analyses


def deep_questions(folder: Path) -> Path:
    path = folder / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    return path


def nested_contexts(folder: Path) -> Path:
    """A RAGAS JSONL whose ``reference_contexts`` cell is 1.9 MB of nested brackets."""
    path = folder / "contexts.jsonl"
    row = {"user_input": "What is a drum?", "reference": "A percussion instrument.",
           "reference_contexts": "[" * 950_000 + "]" * 950_000}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


def surrogate_questions(folder: Path) -> Path:
    path = folder / "surrogate.jsonl"
    path.write_text('{"user_input": "What is a drum \\ud800?", "reference": "x"}\n', encoding="utf-8")
    return path


def shift_jis_questions(folder: Path) -> Path:
    path = folder / "shift-jis.csv"
    path.write_bytes("question\nドラムとは何ですか？\nフルートはどう演奏しますか？\n".encode("shift_jis"))
    return path


def zip_bomb(folder: Path, env: dict[str, str]) -> Path:
    """A saved analysis of the two documents whose ``chunks.parquet`` is 3.9 GB of zeros, zipped to about 4 MB."""
    saved = folder / "saved"
    docs, questions = inputs(folder)
    subprocess.run([sys.executable, "-m", "coverage_core", "analyze", "--docs", str(docs), "--questions",
                    str(questions), "--out", str(folder / "saved.json"), "--clusters", "2", "--suggest", "0",
                    "--quiet", "--save-analysis", str(saved)], env=env, cwd=PROJECT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = folder / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for member in sorted(saved.iterdir()):
            if member.name != "chunks.parquet":
                archive.write(member, member.name)
        with archive.open("chunks.parquet", "w", force_zip64=True) as out:
            block = b"\0" * (16 * 1024**2)
            for _ in range(3_900 * 1024**2 // len(block)):
                out.write(block)
    return path


def inputs(folder: Path) -> tuple[Path, Path]:
    docs = folder / "docs"
    if not docs.exists():
        docs.mkdir()
        for name, text in DOCUMENTS.items():
            (docs / name).write_text(text, encoding="utf-8")
        (folder / "questions.csv").write_text(QUESTIONS, encoding="utf-8")
    return docs, folder / "questions.csv"


# ---------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path], Path] | None  # None for "saved": built by zip_bomb, which runs an analysis first
    how: str  # "history", "questions" or "saved"


CASES = (
    Case("history part inflating to 3 GB", bomb_history, "history"),
    Case("history index that lists itself", self_listing_history, "history"),
    Case("history part nested 100,000 deep", deep_history, "history"),
    Case("history manifest with depth 1e9", huge_depth_history, "history"),
    Case("history label of 10 MB", long_label_history, "history"),
    Case("question JSON nested 100,000 deep", deep_questions, "questions"),
    Case("RAGAS contexts of 1.9 MB nested brackets", nested_contexts, "questions"),
    Case("RAGAS JSONL with a lone surrogate", surrogate_questions, "questions"),
    Case("question CSV in Shift-JIS", shift_jis_questions, "questions"),
    Case("saved analysis zip holding 3.9 GB", None, "saved"),
)
SMOKE_CASES = ("history index that lists itself", "question JSON nested 100,000 deep")


def command_for(case: Case, hostile: Path, folder: Path) -> list[str]:
    docs, questions = inputs(folder)
    if case.how == "saved":
        loader = ("import sys; from coverage_core.errors import CoverageError; "
                  "from coverage_core.saved.analysis import load_analysis\n"
                  "try:\n    load_analysis(open(sys.argv[1], 'rb').read(), 'bomb.zip')\n"
                  "except CoverageError as error:\n    print(f'coverage_core: {error}', file=sys.stderr); sys.exit(2)")
        return [sys.executable, "-c", loader, str(hostile)]
    command = [sys.executable, "-m", "coverage_core", "analyze", "--docs", str(docs), "--out",
               str(folder / "r.json"), "--clusters", "2", "--suggest", "0", "--quiet"]
    if case.how == "history":
        return [*command, "--questions", str(questions), "--history", str(hostile), "--since", "2"
                if "label" not in case.name else "1"]
    return [*command, "--questions", str(hostile)]


def run_case(case: Case, root: Path, env: dict[str, str]) -> Outcome:
    folder = root / case.name.replace(" ", "-").replace(",", "")
    folder.mkdir()
    hostile = zip_bomb(folder, env) if case.how == "saved" else case.build(folder)
    started = time.perf_counter()
    code, peak, said = peak_of(command_for(case, hostile, folder), env, PROJECT)
    return Outcome(case.name, code, peak, time.perf_counter() - started, said)


# ---------------------------------------------------------------- the dashboard


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def peak_of_process(pid: int) -> int:
    """The peak resident bytes (``VmHWM``) of the running process ``pid``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def dashboard_peak(root: Path, env: dict[str, str]) -> Outcome:
    """The server's peak while a browser opens the History page on a self-listing history."""
    from playwright.sync_api import sync_playwright

    (root / "dashboard").mkdir()
    history = self_listing_history(root / "dashboard")
    port = free_port()
    server_env = dict(env, **{HISTORY_ENV: str(history)})
    server_env.pop(RECORD_ENV, None)
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port",
         str(port), "--browser.gatherUsageStats", "false"],
        cwd=PROJECT, env=server_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    started = time.perf_counter()
    said, code = "", 0
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page()
            page.set_default_timeout(120_000)
            for _ in range(120):
                try:
                    page.goto(f"http://127.0.0.1:{port}/history")
                    break
                except Exception:  # the server is still starting
                    time.sleep(1)
            warning = page.get_by_test_id("stAlertContentWarning").first
            warning.wait_for()
            said = warning.inner_text().strip().splitlines()[0][:160]
            page.wait_for_timeout(3_000)  # let the page finish its run
            browser.close()
        peak = peak_of_process(server.pid)
    except Exception as error:  # noqa: BLE001 - a benchmark reports, it does not stop
        peak, code, said = peak_of_process(server.pid), 1, f"{type(error).__name__}: {error}"[:160]
    finally:
        server.terminate()
        server.wait(30)
    return Outcome("dashboard server, History on a self-listing history", code, peak,
                   time.perf_counter() - started, said)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    parser.add_argument("--no-dashboard", action="store_true", help="leave out the dashboard server's measure")
    args = parser.parse_args(argv)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    cases = [case for case in CASES if not args.smoke or case.name in SMOKE_CASES]
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="hostile-memory-") as temporary:
        root = Path(temporary)
        env.setdefault("COVERAGE_CORE_CACHE_DIR", str(root / "embedding-cache"))
        for case in cases:
            outcomes.append(run_case(case, root, env))
            print(line(outcomes[-1]), flush=True)
        if not (args.smoke or args.no_dashboard):
            outcomes.append(dashboard_peak(root, env))
            print(line(outcomes[-1]), flush=True)
    worst = max(outcomes, key=lambda outcome: outcome.peak_bytes)
    print(f"\nworst peak: {worst.peak_bytes / 1024**2:.0f} MiB ({worst.name}); target ≤ {TARGET_BYTES / 1024**2:.0f} MiB"
          f"; {sum(not o.ok for o in outcomes)} of {len(outcomes)} cases miss it or end in exit 3")
    return 0 if args.smoke or all(outcome.ok for outcome in outcomes) else 1


def line(outcome: Outcome) -> str:
    mark = "ok  " if outcome.ok else "MISS"
    return (f"{mark} {outcome.peak_bytes / 1024**2:6.0f} MiB  exit {outcome.exit_code}  {outcome.seconds:5.1f} s  "
            f"{outcome.name}: {outcome.said}")


if __name__ == "__main__":
    sys.exit(main())
