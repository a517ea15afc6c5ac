#!/usr/bin/env python3
"""Rebuild de-qa/articles/*.txt and de-qa/questions.csv from the GermanQuAD excerpts in source/.

Standard library only. Deterministic: the same excerpts give byte-identical files.

    python3 build.py           # (re)write articles/ and questions.csv
    python3 build.py --check   # rebuild in memory, compare with the files on disk, exit 1 on a difference
    python3 build.py --table   # also print the per-article table and the excerpts' SHA-256 sums

source/ holds verbatim excerpts of three files of the GitHub repository butburg/dense-retrieval-germanquad
(commit bdd4c15b3ae2fba0310b2753abed14c722a71292, folder code/output/), which hold GermanQuAD's test split
in compact form (no answers):
  docs.excerpt.jsonl        whole lines of germanquad/docs.normalized.jsonl (one passage a line)
  queries.excerpt.jsonl     whole lines of germanquad/queries.normalized.jsonl (one question a line)
  per_query_germanquad.csv  analysis/per_query_germanquad.csv, whole (question -> passage, all 2,204 questions)
"""
import csv
import hashlib
import io
import json
import re
import statistics
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from devset_files import questions_csv, write_or_check  # noqa: E402

SOURCE = HERE / "source"
DOCS = SOURCE / "docs.excerpt.jsonl"
QUERIES = SOURCE / "queries.excerpt.jsonl"
MAPPING = SOURCE / "per_query_germanquad.csv"
MIN_QUESTIONS = 8    # a passage is kept when the mapping gives it at least this many questions
HEADING = re.compile(r"(=+)\s*(.*?)\s*\1")
DISAMBIGUATION = re.compile(r"(.+?)__(.+)_")   # GermanQuAD writes "Victoria (Vereinigtes Königreich)" as
                                               # "Victoria__Vereinigtes_Königreich_"


def nfc(text):
    return unicodedata.normalize("NFC", text)


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def clean_title(raw):
    """'Victoria__Vereinigtes_K\u00f6nigreich_' -> 'Victoria (Vereinigtes K\u00f6nigreich)'; '_' -> ' '."""
    raw = raw.strip()
    match = DISAMBIGUATION.fullmatch(raw)
    if match:
        raw = f"{match.group(1)} ({match.group(2)})"
    return nfc(raw.replace("_", " "))


def file_stem(title):
    """Title -> file name without .txt: spaces to '_', characters unsafe in file names to '_' (umlauts kept)."""
    return re.sub(r'[\s/\\:*?"<>|]+', "_", title)


def blocks_of(text):
    """The passage's paragraphs: one per non-empty line after the title line. A '=== heading ===' line becomes
    a block holding the heading's text."""
    out = []
    for line in text.split("\n")[1:]:
        line = line.strip()
        match = HEADING.fullmatch(line)
        if match:
            line = match.group(2)
        if line:
            out.append(nfc(line))
    return out


def build():
    mapping = list(csv.DictReader(io.StringIO(MAPPING.read_text(encoding="utf-8"))))
    assert len(mapping) == 2204, f"{MAPPING.name}: {len(mapping)} rows; GermanQuAD's test split has 2,204 questions"
    per_doc = {}
    for row in mapping:
        per_doc.setdefault(row["gold_doc_id"], []).append(row["query_id"])
    docs = read_jsonl(DOCS)
    queries = {q["query_id"]: q["query_text"] for q in read_jsonl(QUERIES)}

    # every passage of the excerpt meets the rule, and the excerpt holds every question of those passages
    for doc in docs:
        ids = per_doc.get(doc["doc_id"], [])
        assert len(ids) >= MIN_QUESTIONS, f"{doc['doc_id']}: {len(ids)} questions (< {MIN_QUESTIONS})"
        missing = [q for q in ids if q not in queries]
        assert not missing, f"{doc['doc_id']}: questions missing from {QUERIES.name}: {missing}"
    kept = {q for doc in docs for q in per_doc[doc["doc_id"]]}
    assert set(queries) == kept, f"{QUERIES.name} holds questions of passages not kept"

    articles = {}  # stem -> [title, [passages in file order]]
    for doc in docs:
        title = clean_title(doc["text"].split("\n", 1)[0])
        articles.setdefault(file_stem(title), [title, []])[1].append(doc)

    files, rows, table, seen = {}, [], [], set()
    for stem, (title, passages) in articles.items():
        blocks = [b for doc in passages for b in blocks_of(doc["text"])]
        text = title + "\n\n" + "\n\n".join(blocks) + "\n"
        name = f"articles/{stem}.txt"
        files[name] = text
        n_rows = 0
        for doc in passages:
            for qid in per_doc[doc["doc_id"]]:
                question = nfc(" ".join(queries[qid].split()))  # trim; line breaks and runs of spaces to one space
                if not question or question in seen:            # drop exact duplicate questions
                    continue
                seen.add(question)
                rows.append([stem, question, "", "", "", name, qid, ""])
                n_rows += 1
        table.append((stem, ", ".join(d["doc_id"] for d in passages), len(blocks), len(text), n_rows))
    rows.sort(key=lambda r: r[0])  # by article (stable: passage order, then the mapping's question order)
    files["questions.csv"] = questions_csv(rows)
    return files, sorted(table), len(docs)


def main():
    files, table, n_passages = build()
    n_rows = files["questions.csv"].count("\n") - 1
    if "--table" in sys.argv[1:]:
        for path in (DOCS, QUERIES, MAPPING):
            print(f"{path.relative_to(HERE)}: sha256 {hashlib.sha256(path.read_bytes()).hexdigest()}")
        print("| article (`articles/<name>.txt`) | passage(s) | paragraphs | characters | questions |")
        print("| --- | --- | ---: | ---: | ---: |")
        for stem, ids, n_blocks, n_chars, n_q in table:
            print(f"| `{stem}` | {ids} | {n_blocks} | {n_chars:,} | {n_q} |")
        qs = [t[4] for t in table]
        chars = [t[3] for t in table]
        print(f"questions per article: min {min(qs)}, median {statistics.median(qs)}, max {max(qs)}; "
              f"characters per article: min {min(chars):,}, median {statistics.median(chars):,}, "
              f"max {max(chars):,}, total {sum(chars):,}")
    summary = f"{len(files) - 1} articles ({n_passages} passages), {n_rows} questions"
    return write_or_check(HERE, files, summary, "--check" in sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
