#!/usr/bin/env python3
"""Rebuild docs-qa/articles/*.txt and docs-qa/questions.csv from doc2dial_rc_val.csv.zip.

Standard library only. Deterministic: the same source gives byte-identical files.

    python3 build.py [ZIP]           # (re)write articles/ and questions.csv
    python3 build.py [ZIP] --check   # rebuild in memory, compare with the files on disk, exit 1 on a difference

ZIP is the untouched source (README: where to get it; default source/doc2dial_rc_val.csv.zip, not
kept in git).

The source is doc2dial v1.0.1's validation split in the reading-comprehension layout
(one row per user turn: id, question, context, answers, spans, domain, title). Despite
its name the zip's single member, `doc2dial_rc_val.csv.zip`, is a plain CSV file.
"""
import ast
import csv
import io
import re
import sys
import unicodedata
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from devset_files import build_main, questions_csv  # noqa: E402

SOURCE = Path(next((a for a in sys.argv[1:] if not a.startswith("--")),
                   HERE / "source" / "doc2dial_rc_val.csv.zip"))
MEMBER = "doc2dial_rc_val.csv.zip"   # the CSV inside the zip (it keeps the .zip suffix)
MIN_QUESTIONS = 5                    # keep documents with at least this many questions (after the drops below)

# First user turns that name no subject at all, so nothing in them says which page they are
# about (each is listed with its text; every other first turn is kept as written).
NO_SUBJECT = {
    "2d0c786c044cd0120452b1295d3de94f_1": "hello I have some questions",
    "04248e482dee5b3c8a4cdd6ef14bc968_1": "Where should I begin?",
    "af2b3a5ae0986d8fcf575aad6e863988_1": "what do I need to do?",
    "449d336e6918d6e628e14b316e8c1900_1": "is there any other information i need to know?",
    "00d26832b3d37e1bef3f48c5a4a26e56_1": "who is eligible?",
    "c92b79a31ab2574b7f7410ac0c3ade38_1": "I need help with your site",
    "3eb005a44fe8679176481c29e61adc1e_1": "Why are they delayed?",
}


def clean_title(doc_id):
    """'Federal REAL ID#3_0' -> 'Federal REAL ID' (doc2dial's doc_id is the page title plus '#<n>_<m>')."""
    return unicodedata.normalize("NFC", re.sub(r"#\d+_\d+$", "", doc_id)).strip()


def file_stem(title):
    """Title -> file name without .txt: spaces to '_', characters unsafe in file names to '_'."""
    return re.sub(r'[\s/\\:*?"<>|]+', "_", title)


def paragraphs_of(context):
    """The document's non-empty lines as (start offset, text): doc2dial separates sections with
    blank lines and puts each section heading on its own line, so headings become paragraphs."""
    return [(m.start(), m.group().strip()) for m in re.finditer(r"[^\n]+", context) if m.group().strip()]


def read_source():
    with zipfile.ZipFile(SOURCE) as z:
        text = z.read(MEMBER).decode("utf-8")
    csv.field_size_limit(sys.maxsize)
    return list(csv.DictReader(io.StringIO(text, newline="")))


def build():
    docs = {}  # doc_id -> {"context", "questions": [(id, question, answer, paragraph)]}
    for row in read_source():
        dial_id, turn = row["id"].rsplit("_", 1)
        if turn != "1" or row["id"] in NO_SUBJECT:   # only the opening user turn is a standalone question
            continue
        raw = row["question"].strip()
        assert raw.startswith("user:") and "agent:" not in raw, row["id"]
        question = raw[len("user:"):].strip()
        context = row["context"]
        answers = ast.literal_eval(row["answers"])
        answer, start = answers["text"][0], answers["answer_start"][0]
        assert context[start:start + len(answer)] == answer, row["id"]
        start += len(answer) - len(answer.lstrip())   # first non-blank character of the answer
        paras = paragraphs_of(context)
        p_index = max(i for i, (offset, _) in enumerate(paras) if offset <= start)
        doc = docs.setdefault(row["title"], {"context": context, "questions": []})
        assert doc["context"] == context, row["title"]
        doc["questions"].append((row["id"], question, answer.strip(), p_index))

    # The same question twice (same text after stripping): keep its first row only, first within each
    # document, then across the documents that still have MIN_QUESTIONS, in file-name order.
    candidates = {}
    for doc_id, doc in docs.items():
        unique, texts = [], set()
        for q in doc["questions"]:
            if q[1] and q[1] not in texts:
                texts.add(q[1])
                unique.append(q)
        if len(unique) >= MIN_QUESTIONS:
            title = clean_title(doc_id)
            stem = file_stem(title)
            assert stem not in candidates, stem   # doc2dial reuses a few titles, but not among these
            candidates[stem] = (title, doc, unique)
    seen, files, rows = set(), {}, []
    for stem in sorted(candidates):
        title, doc, questions = candidates[stem]
        questions = [q for q in questions if q[1] not in seen]
        seen.update(q[1] for q in questions)
        if len(questions) < MIN_QUESTIONS:
            continue
        name = f"articles/{stem}.txt"
        files[name] = title + "\n\n" + "\n\n".join(p for _, p in paragraphs_of(doc["context"])) + "\n"
        for qid, question, answer, p_index in questions:
            rows.append([stem, question, answer, "", "", name, qid, p_index])
    files["questions.csv"] = questions_csv(rows)
    return files


if __name__ == "__main__":
    sys.exit(build_main(HERE, build, "articles"))
