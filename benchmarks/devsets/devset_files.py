"""What every development set's ``build.py`` shares: the questions.csv layout, and writing or checking the files.

Standard library only, like the build scripts; each imports it from its parent folder. A script that
runs :func:`build_main` is used as

    python3 build.py           # (re)write articles/ and questions.csv
    python3 build.py --check   # rebuild in memory, compare with the files on disk, exit 1 on a difference
"""
import csv
import io
import sys
from pathlib import Path
from typing import Callable

COLUMNS = ["ArticleTitle", "Question", "Answer", "DifficultyFromQuestioner",
           "DifficultyFromAnswerer", "ArticleFile", "QuestionId", "Paragraph"]


def questions_csv(rows) -> str:
    """``rows`` (lists in :data:`COLUMNS` order) as questions.csv text, header first, ``\\n`` line ends."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(rows)
    return out.getvalue()


def write_or_check(here: Path, files: dict, summary: str, check: bool) -> int:
    """Write ``files`` (path under ``here`` -> text) and drop stale articles, or with ``check`` compare them
    with the files on disk and print what differs. Returns the exit status: 1 on a difference, else 0."""
    on_disk = {f"articles/{p.name}" for p in (here / "articles").glob("*.txt")}
    stale = sorted(on_disk - set(files))
    if check:
        differ = [n for n, text in files.items()
                  if not (here / n).is_file() or (here / n).read_bytes() != text.encode("utf-8")]
        for n in differ + stale:
            print("differs" if n in differ else "not built", n)
        print(summary + ":", "OK" if not differ and not stale else "MISMATCH")
        return 1 if differ or stale else 0
    (here / "articles").mkdir(exist_ok=True)
    for n in stale:
        (here / n).unlink()
    for n, text in files.items():
        (here / n).write_bytes(text.encode("utf-8"))
    print("wrote " + summary)
    return 0


def n_questions(files: dict) -> int:
    """Rows of ``files["questions.csv"]`` (a quoted field may hold a line break)."""
    return len(list(csv.reader(io.StringIO(files["questions.csv"])))) - 1


def build_main(here: Path, build: Callable[[], dict], unit: str) -> int:
    """A build script's command line: the files ``build()`` gives (path under ``here`` -> text, questions.csv
    included) written, or compared with ``--check``, under a summary counting them as ``unit`` ("articles",
    "documents") and their questions. Returns the exit status of :func:`write_or_check`."""
    files = build()
    summary = f"{len(files) - 1} {unit}, {n_questions(files)} questions"
    return write_or_check(here, files, summary, "--check" in sys.argv[1:])
