#!/usr/bin/env python3
"""Rebuild fin-qa/articles/*.txt and fin-qa/questions.csv from source/tatqa_dataset_dev.json (TAT-QA dev).

Each document is one TAT-QA "hybrid context": a table and the paragraphs around it, taken
from one page of a company's annual report. Its title is the context's first paragraph
when that paragraph is a short heading; the remaining paragraphs and the table follow.

Standard library only and deterministic (the same source gives byte-identical files); run as
``devset_files.build_main`` says.
"""
import json
import re
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from devset_files import build_main, questions_csv  # noqa: E402

SOURCE = HERE / "source" / "tatqa_dataset_dev.json"
N_DOCUMENTS = 60     # the largest contexts (in characters) that have a usable, unique heading
MAX_TITLE = 80


def clean(text):
    """NFC, whitespace runs (the source has line breaks and double spaces inside cells and paragraphs) to one space."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", str(text))).strip()


def file_stem(title):
    """Title -> file name without .txt: spaces to '_', characters unsafe in file names to '_'."""
    return re.sub(r'[\s/\\:*?"<>|]+', "_", title).strip("_")


def heading(paragraph):
    """The context's first paragraph as a title, or None when it reads as a sentence, not a heading."""
    text = clean(paragraph)
    if not 3 <= len(text) <= MAX_TITLE or text.endswith(".") or re.search(r"following|as follows", text, re.I):
        return None
    return text.rstrip(":").strip()


def render_table(rows):
    """One block, one line per non-empty row: '| cell | cell | ... |' (empty cells kept, so columns line up)."""
    lines = []
    for row in rows:
        cells = [clean(c) for c in row]
        if any(cells):
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def answer_text(qa):
    """Spans joined with '; ', numbers as the source gives them; the scale appended ('million', '%')."""
    answer = qa["answer"]
    text = "; ".join(clean(a) for a in answer) if isinstance(answer, list) else clean(answer)
    scale = qa["scale"]
    if scale == "percent":
        return text if text.endswith("%") else text + "%"
    return f"{text} {scale}" if scale else text


def layout(context):
    """(title, blocks, paragraph order -> block index, table block index) for one context, or None without a heading."""
    paragraphs = sorted(context["paragraphs"], key=lambda p: p["order"])
    title = heading(paragraphs[0]["text"])
    if title is None:
        return None
    body = [(p["order"], clean(p["text"])) for p in paragraphs[1:] if clean(p["text"])]
    # The table goes after the first paragraph that introduces it (ends with ':'), else right after the heading.
    at = next((i + 1 for i, (_, text) in enumerate(body) if text.endswith(":")), 0)
    blocks = [text for _, text in body]
    blocks.insert(at, render_table(context["table"]["table"]))
    where = {order: (i if i < at else i + 1) for i, (order, _) in enumerate(body)}
    return title, blocks, where, at


def build():
    data = json.loads(SOURCE.read_text(encoding="utf-8"))
    candidates = []
    for index, context in enumerate(data):
        laid = layout(context)
        if laid is not None:
            title, blocks = laid[0], laid[1]
            candidates.append((-len(title + "".join(blocks)), index, laid))
    candidates.sort()  # largest first; ties: source order
    files, rows, taken = {}, [], set()
    for _, index, (title, blocks, where, table_at) in candidates:
        stem = file_stem(title)
        if stem.lower() in taken:  # one document per heading ("Revenue", "Income Taxes" recur across companies)
            continue
        if len(files) == N_DOCUMENTS:
            break
        taken.add(stem.lower())
        name = f"articles/{stem}.txt"
        files[name] = title + "\n\n" + "\n\n".join(blocks) + "\n"
        for qa in sorted(data[index]["questions"], key=lambda q: q["order"]):
            rel = [int(r) for r in qa["rel_paragraphs"]]
            if qa["answer_from"] == "table":
                paragraph = table_at
            elif qa["answer_from"] == "text" and len(rel) == 1 and rel[0] in where:
                paragraph = where[rel[0]]
            else:
                paragraph = ""
            rows.append([stem, clean(qa["question"]), answer_text(qa), "", "", name, qa["uid"], paragraph])
    rows.sort(key=lambda r: r[0].lower())  # by document (stable: TAT-QA's question order)
    files["questions.csv"] = questions_csv(rows)
    return files


if __name__ == "__main__":
    sys.exit(build_main(HERE, build, "documents"))
