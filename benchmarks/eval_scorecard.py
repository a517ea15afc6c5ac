"""The test-set scorecard on the real wiki-qa data: does it rank a skewed, repetitive set below a balanced one?

Run from the project root::

    .venv/bin/python benchmarks/eval_scorecard.py [--cache-dir DIR] [--per-article 3] [--seed 0]
    .venv/bin/python benchmarks/eval_scorecard.py --write-fixtures tests/fixtures/testsets

The knowledge base is the 55 articles of ``../shared/data/wiki-qa``; the
questions are the human ones of ``question_answer_pairs.txt`` (distinct,
``NULL`` dropped), each with its answer and, as its reference passage, the
paragraph of its article that shares most words with the question and the
answer. Three sets of the same size are written in the generators' own
formats (RAGAS JSON lines, DeepEval JSON, Giskard JSON lines) and read back
with ``read_questions``, no column named:

* **balanced**: ``--per-article`` questions from every article;
* **skewed + duplicated**: questions from 4 articles only, each asked four
  times in slightly different spellings (case, punctuation, "please");
* **skewed**: the same number of distinct questions from 4 articles.

The balanced set is analysed with the bundled local model (the first run
embeds about 2,500 chunks: a few minutes on 2 cores); the others are scored
on the same chunks and clusters (``editing.rescore``: only their questions
are embedded). The script prints each scorecard, the ranking by score and the
verdict of each pair, and the retrieval check the balanced RAGAS set gets from
its reference passages alone (hit@k, MRR, passages found in the chunks).

``--write-fixtures DIR`` writes the small test fixtures instead, from the
bundled example (``examples/wiki-qa``: its 10 articles and their questions),
so the tests need nothing beside the project.

``--smoke``: the 4 shortest articles, 2 questions each, no gap questions written; and the fixtures written to
a temporary folder.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import sys
import uuid
from collections import Counter
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from benchmarks.shared_data import SMOKE_HELP, WIKI_QA, require, shortest_files  # noqa: E402

EXAMPLE = PROJECT / "examples" / "wiki-qa"
_WORD = re.compile(r"[a-z0-9]+")


def paragraphs(text: str) -> list[str]:
    """The article's paragraphs of at least 20 words (headings and short lines dropped)."""
    parts = [" ".join(p.split()) for p in re.split(r"\n\s*\n|\n", text)]
    return [p for p in parts if len(p.split()) >= 20]


def best_paragraph(paras: list[str], question: str, answer: str) -> str:
    """The paragraph sharing most distinct words (of 4 letters or more) with the question and answer."""
    wanted = {w for w in _WORD.findall(f"{question} {answer}".lower()) if len(w) >= 4}
    return max(paras, key=lambda p: (len(wanted & set(_WORD.findall(p.lower()))), -len(p)))


def qa_items(pairs: list[tuple[str, str, str]], articles_dir: Path) -> list[dict]:
    """(article, question, answer) rows as items with their reference paragraph and source file; one per question."""
    texts: dict[str, list[str]] = {}
    items, seen = [], set()
    for article, question, answer in pairs:
        question, answer = " ".join(question.split()), " ".join(answer.split())
        path = articles_dir / f"{article}.txt"
        if not question or question == "NULL" or question in seen or not path.exists():
            continue
        if article not in texts:
            texts[article] = paragraphs(path.read_text(encoding="utf-8", errors="replace"))
        if not texts[article]:
            continue
        seen.add(question)
        items.append({"article": article, "file": path.name, "question": question, "answer": answer or "",
                      "context": best_paragraph(texts[article], question, answer)})
    return items


def wiki_pairs() -> list[tuple[str, str, str]]:
    path = require(WIKI_QA / "question_answer_pairs.txt")
    rows = csv.reader(path.read_text(encoding="latin-1").splitlines()[1:], delimiter="\t", quoting=csv.QUOTE_NONE)
    return [(r[0], r[1], r[2] if len(r) > 2 else "") for r in rows if len(r) >= 2]


def example_pairs() -> list[tuple[str, str, str]]:
    with (EXAMPLE / "questions.csv").open(encoding="utf-8", newline="") as f:
        return [(row["source"].removesuffix(".txt"), row["question"], row["answer"]) for row in csv.DictReader(f)]


# ---------------------------------------------------------------- the generators' formats


def ragas_jsonl(items: list[dict]) -> str:
    """RAGAS ``Testset.to_jsonl``: one JSON object per sample (``user_input``, ``reference_contexts``, …)."""
    return "".join(json.dumps({"user_input": i["question"], "reference_contexts": [i["context"]],
                               "reference": i["answer"], "synthesizer_name": "single_hop_specifc_query_synthesizer"},
                              ensure_ascii=False) + "\n" for i in items)


def ragas_csv(items: list[dict]) -> str:
    """RAGAS ``to_csv`` (csv.DictWriter): the list of passages written as a Python list literal."""
    out = _StringWriter()
    writer = csv.DictWriter(out, fieldnames=["user_input", "reference_contexts", "reference", "synthesizer_name"])
    writer.writeheader()
    for i in items:
        writer.writerow({"user_input": i["question"], "reference_contexts": [i["context"]], "reference": i["answer"],
                         "synthesizer_name": "single_hop_specifc_query_synthesizer"})
    return out.text


def ragas_v01_csv(items: list[dict]) -> str:
    """RAGAS 0.1 ``testset.to_pandas().to_csv()``: ``question``, ``contexts``, ``ground_truth``, ``evolution_type``."""
    out = _StringWriter()
    writer = csv.writer(out)
    writer.writerow(["", "question", "contexts", "ground_truth", "evolution_type", "metadata", "episode_done"])
    for n, i in enumerate(items):
        writer.writerow([n, i["question"], str([i["context"]]), i["answer"], "simple",
                         str([{"source": f"articles/{i['file']}"}]), True])
    return out.text


def deepeval_json(items: list[dict]) -> str:
    """DeepEval ``EvaluationDataset.save_as("json", …)``: an array of goldens."""
    return json.dumps([{"input": i["question"], "actual_output": None, "expected_output": i["answer"],
                        "context": [i["context"]], "source_file": f"articles/{i['file']}"} for i in items],
                      indent=4, ensure_ascii=False)


def deepeval_csv(items: list[dict]) -> str:
    """DeepEval ``save_as("csv", …)``: the context passages joined with ``|``."""
    out = _StringWriter()
    writer = csv.writer(out)
    writer.writerow(["input", "actual_output", "expected_output", "context", "source_file"])
    for i in items:
        writer.writerow([i["question"], "", i["answer"], "|".join([i["context"]]), f"articles/{i['file']}"])
    return out.text


def giskard_jsonl(items: list[dict], seed: int = 0) -> str:
    """Giskard ``QATestset.save``: JSON lines; the reference context as ``Document <id>: <text>``."""
    rng = random.Random(seed)
    lines = []
    for n, i in enumerate(items):
        lines.append(json.dumps({
            "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)), "question": i["question"],
            "reference_answer": i["answer"], "reference_context": f"Document {n}: {i['context']}",
            "conversation_history": [], "metadata": {"question_type": "simple", "seed_document_id": n},
        }, ensure_ascii=False))
    return "\n".join(lines) + "\n"


class _StringWriter:
    def __init__(self):
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)


# ---------------------------------------------------------------- the sets


def balanced(items: list[dict], per_article: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    by_article: dict[str, list[dict]] = {}
    for item in items:
        by_article.setdefault(item["article"], []).append(item)
    chosen = [x for group in by_article.values() for x in rng.sample(group, min(per_article, len(group)))]
    rng.shuffle(chosen)
    return chosen


def skewed(items: list[dict], size: int, seed: int, articles: int = 4, repeats: int = 1) -> list[dict]:
    """``size`` questions from the ``articles`` articles with most questions; each distinct one asked ``repeats`` times."""
    rng = random.Random(seed)
    top = [name for name, _ in Counter(i["article"] for i in items).most_common(articles)]
    pool = [i for i in items if i["article"] in top]
    distinct = rng.sample(pool, min(len(pool), max(1, size // repeats)))
    spellings = (lambda q: q, lambda q: q.lower(), lambda q: q.rstrip("?") + " ?", lambda q: "Please tell me: " + q)
    chosen = [dict(i, question=spellings[r % len(spellings)](i["question"])) for i in distinct for r in range(repeats)]
    rng.shuffle(chosen)
    return chosen[:size]


def write_fixtures(folder: Path, per_article: int = 2, seed: int = 0) -> None:
    """Small fixtures in every format, from the bundled example's 10 articles."""
    items = qa_items(example_pairs(), EXAMPLE / "docs")
    good = balanced(items, per_article, seed)
    bad = skewed(items, len(good), seed, articles=2, repeats=4)
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "ragas_testset.jsonl": ragas_jsonl(good), "ragas_testset.csv": ragas_csv(good),
        "ragas_v01_testset.csv": ragas_v01_csv(good), "deepeval_goldens.json": deepeval_json(good),
        "deepeval_goldens.csv": deepeval_csv(good), "giskard_testset.jsonl": giskard_jsonl(good, seed),
        "ragas_skewed_duplicated.jsonl": ragas_jsonl(bad),
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
        print(f"wrote {folder / name}")


# ---------------------------------------------------------------- the evaluation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(os.environ.get("COVERAGE_CORE_CACHE_DIR", "/tmp/eval_scorecard_cache")))
    parser.add_argument("--per-article", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write-fixtures", type=Path)
    parser.add_argument("--smoke", action="store_true", help="4 articles, 2 questions each, and the fixtures: "
                        + SMOKE_HELP)
    args = parser.parse_args()
    if args.write_fixtures:
        write_fixtures(args.write_fixtures, seed=args.seed)
        return
    if args.smoke:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="eval-scorecard-smoke-") as scratch:
            write_fixtures(Path(scratch) / "fixtures", seed=args.seed)
            articles = Path(scratch) / "articles"
            articles.mkdir()
            for path in shortest_files(WIKI_QA / "articles", 4):
                (articles / path.name).write_bytes(path.read_bytes())
            evaluate(args, articles, smoke=True)
        return
    evaluate(args, require(WIKI_QA / "articles"))


def evaluate(args: argparse.Namespace, articles: Path, smoke: bool = False) -> None:
    """The three sets built from ``articles`` (a folder of wiki-qa articles) scored and compared."""
    import dataclasses

    from coverage_core import editing
    from coverage_core.checks.runner import run_retrieval_check
    from coverage_core.checks.scorecard import compare_scorecards, scorecard
    from coverage_core.config import AnalysisConfig
    from coverage_core.embeddings import EmbeddingCache, make_embedder
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.inputs.questions import read_questions
    from coverage_core.session import analyze

    items = qa_items(wiki_pairs(), articles)
    good = balanced(items, 2 if smoke else args.per_article, args.seed)
    sets = {
        "balanced (RAGAS)": ("balanced.jsonl", ragas_jsonl(good)),
        "skewed + duplicated (DeepEval)": ("skewed_dup.json",
                                           deepeval_json(skewed(items, len(good), args.seed, repeats=4))),
        "skewed (Giskard)": ("skewed.jsonl", giskard_jsonl(skewed(items, len(good), args.seed))),
    }
    questions = {}
    for label, (name, text) in sets.items():
        questions[label] = read_questions(text.encode("utf-8"), name=name)
        print(f"{label}: {questions[label].warnings[0].message}")

    embedder, cache = make_embedder("local"), EmbeddingCache(args.cache_dir)
    documents = read_documents([articles]).documents
    first = next(iter(sets))
    config = AnalysisConfig()
    if smoke:  # nothing here reads the questions the bundled model writes for the gaps
        config = dataclasses.replace(config, gaps=dataclasses.replace(config.gaps, local_model=False))
    base = analyze(config, documents, questions[first], embedder=embedder, cache=cache)
    analyses = {first: base}
    for label in list(sets)[1:]:
        analyses[label] = editing.rescore(base, questions[label], embedder, cache)
    cards = {label: scorecard(analysis) for label, analysis in analyses.items()}

    print(f"\n{len(documents)} documents, {len(base.corpus.chunks):,} chunks; "
          f"{len(items)} distinct questions with a paragraph, sets of {len(good)}.\n")
    header = f"{'set':34} {'tested':>7} {'balance':>8} {'gini':>6} {'dup':>6} {'off':>6} {'answ':>6} {'score':>6}"
    print(header)
    for label, c in sorted(cards.items(), key=lambda kv: -kv[1].score):
        print(f"{label:34} {c.tested_share:7.1%} {c.balance:8.3f} {c.gini:6.3f} {c.duplicate_share:6.1%} "
              f"{c.off_topic_share:6.1%} {c.answerable_share:6.1%} {c.score:6.3f}")
    labels = list(cards)
    for other in labels[1:]:
        result = compare_scorecards(cards[labels[0]], cards[other], (labels[0], other))
        print(f"\n{result.verdict}")
    for label, c in cards.items():
        print(f"\n{label}:")
        for line in c.table()["reading"]:
            print(f"  {line}")

    retrieval = run_retrieval_check(base)
    if retrieval is not None:
        print(f"\nRetrieval of the balanced RAGAS set from its reference passages alone (column "
              f"'{retrieval.relevant_column}'): {retrieval.n_labelled} labelled, hit@{retrieval.k} "
              f"{retrieval.hit_at_k:.3f}, MRR {retrieval.mrr:.3f}, precision@{retrieval.k} "
              f"{retrieval.precision_at_k:.3f}, passages not found {len(retrieval.unknown_sources)}.")


if __name__ == "__main__":
    main()
