"""How well the questions' languages are read (``coverage_core.languages.question_language``), per plausibility ratio.

Run from the project root::

    .venv/bin/python benchmarks/eval_question_languages.py

For the distinct questions of wiki-qa (English), fr-qa (French) and zh-qa
(Chinese) in ``../shared/data``: how many are misread against their own
corpus's languages (plus English), and how many keep their language when put
to another corpus's languages, for each ratio a candidate's probability must
reach of the unsure guess's (``PLAUSIBLE_CANDIDATE``; 0 lets any candidate
replace an unsure guess).

``--smoke``: the first 40 questions of each set, two ratios.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared_data import SHARED_DATA, SMOKE_HELP, require  # noqa: E402

from coverage_core import languages  # noqa: E402
from coverage_core.languages import question_language  # noqa: E402

SETS = (("wiki-qa", "question_answer_pairs.txt", "latin-1", "\t", "en"),
        ("fr-qa", "questions.csv", "utf-8", ",", "fr"),
        ("zh-qa", "questions.csv", "utf-8", ",", "zh"))
RATIOS = (0.0, 0.001, 0.01, 0.05)


def distinct_questions(name: str, file: str, encoding: str, delimiter: str) -> list[str]:
    with open(require(SHARED_DATA / name / file), encoding=encoding, newline="") as handle:
        return sorted({row["Question"] for row in csv.DictReader(handle, delimiter=delimiter) if row.get("Question")})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="40 questions per set, two ratios: " + SMOKE_HELP)
    args = parser.parse_args(argv)
    for name, file, encoding, delimiter, truth in SETS:
        questions = distinct_questions(name, file, encoding, delimiter)[:40 if args.smoke else None]
        own = [truth, "en"] if truth != "en" else ["en"]
        other = ["en"] if truth != "en" else ["fr", "en"]
        for ratio in RATIOS[::2] if args.smoke else RATIOS:
            languages.PLAUSIBLE_CANDIDATE = ratio
            misread = Counter(c for c in (question_language(q, own) for q in questions) if c != truth)
            kept = sum(question_language(q, other) == truth for q in questions)
            print(f"{name} ratio {ratio:<6} {len(questions)} questions: {sum(misread.values())} misread "
                  f"{dict(misread.most_common(3))}; against {other}: {kept} keep their language")


if __name__ == "__main__":
    main()
