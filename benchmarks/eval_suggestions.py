"""How well the bundled local model closes gaps: keep rate, passages served, before → after.

For the bundled example and for each development set (wiki-qa in English,
fr-qa, zh-qa; the articles of one half, with the questions of a few
articles removed so that gaps exist), the analysis runs with its default
settings; the bundled model (:mod:`coverage_core.suggest.local_model`)
writes a question per least covered passage of each gap, and the keep rule
(:mod:`coverage_core.suggest.writing`) keeps or drops it. Reported:

* **served**: per gap, the share of its least covered passages with a kept
  written question (target: at least 0.8 for every gap);
* **keep rate**: kept questions / questions written (tries included);
* seconds per written question; every kept question's rank of its source
  passage (must be ≤ 5) and its highest similarity to an existing
  question (must stay below the near-duplicate level);
* for the example: the tested share of each gap before → after accepting
  its kept questions, and whether each gap turns to tested.

Half A of the development sets was used to choose the prompt; report half B::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python benchmarks/eval_suggestions.py --sets example en fr zh --half B

``--smoke``: wiki-qa's half B, its 4 shortest articles (one without questions), the bundled model writing
a question for the most urgent gap, two tries (embeddings in the default embedding cache).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import verdict_scenarios as scenarios  # noqa: E402
from eval_languages import load_set  # noqa: E402
from shared_data import SMOKE_HELP, shortest  # noqa: E402

from coverage_core.config import AnalysisConfig  # noqa: E402
from coverage_core.editing import accept_questions  # noqa: E402
from coverage_core.embedding_steps import build_embedder  # noqa: E402
from coverage_core.gap_finding import with_gaps  # noqa: E402
from coverage_core.session import choose_embedding  # noqa: E402
from coverage_core.suggest.writing import WritingConfig  # noqa: E402
from coverage_core.types import Document, Question, QuestionSet  # noqa: E402
from coverage_core.validation import unit_rows  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "wiki-qa"
N_ARTICLES = 12
N_WITHOUT_QUESTIONS = 3
SMOKE = False
"""``--smoke``: :func:`set_inputs` takes the half's 4 shortest articles, one without questions, and
:func:`evaluate` lets the bundled model write one question for one gap."""


def example_inputs():
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.inputs.questions import read_questions

    documents = read_documents([EXAMPLE / "docs"]).documents
    return documents, read_questions(EXAMPLE / "questions.csv")


def set_inputs(name: str, half: str):
    """The half's first articles with questions; the questions of the last few removed, so gaps exist."""
    data = load_set(name)
    if SMOKE:
        titles = shortest(scenarios.corpus_titles(data, scenarios.halves(data)[half], len(data.articles)),
                          data.articles, 4)
        asked = titles[:-1]
    else:
        titles = scenarios.corpus_titles(data, scenarios.halves(data)[half], N_ARTICLES)
        asked = titles[:-N_WITHOUT_QUESTIONS]
    documents = [Document(name=scenarios.file_name(t), text=data.articles[t]) for t in titles]
    texts = [q for t in asked for q in data.of(t)]
    return documents, question_set(texts)


def question_set(texts: list[str]) -> QuestionSet:
    import pandas as pd

    frame = pd.DataFrame({"question": texts})
    return QuestionSet(frame=frame, question_column="question",
                       questions=[Question(text=t, row=i) for i, t in enumerate(texts)])


def evaluate(label: str, documents, questions) -> dict:
    from coverage_core.session import analyze

    config, _ = choose_embedding(AnalysisConfig(), documents, questions)
    if SMOKE:
        config = dataclasses.replace(config, gaps=dataclasses.replace(
            config.gaps, n_written_gaps=1, n_suggestions=1, n_passages=1))
    embedder = build_embedder(config.embedding)
    drafts_only = dataclasses.replace(config, gaps=dataclasses.replace(config.gaps, local_model=False))
    cache = None
    if SMOKE:
        from coverage_core.embeddings import EmbeddingCache

        cache = EmbeddingCache()
    measured = analyze(drafts_only, documents, questions, embedder=embedder, cache=cache)
    started = time.perf_counter()
    gapped = with_gaps(dataclasses.replace(measured, config=config), None, embedder, None)
    seconds = time.perf_counter() - started
    vectors = unit_rows(np.asarray(gapped.corpus.vectors, dtype=np.float32))
    existing = unit_rows(np.asarray(gapped.question_vectors, dtype=np.float32))
    served, written, kept_total, ranks, nearest = [], 0, 0, [], []
    kept_questions = []
    for gap in gapped.gaps:
        kept = [s for s in gap.suggestions if s.origin == "local"]
        written += len(kept) + len(gap.dropped)
        kept_total += len(kept)
        served.append(len({s.chunk for s in kept}) / max(1, len(gap.passages)))
        if kept:
            kept_vectors = unit_rows(np.asarray(embedder.embed([s.text for s in kept]), dtype=np.float32))
            for vector, suggestion in zip(kept_vectors, kept):
                similarities = vectors @ vector
                ranks.append(int(np.count_nonzero(similarities > similarities[suggestion.chunk])) + 1)
                nearest.append(float(np.max(existing @ vector)) if len(existing) else 0.0)
        kept_questions += [(gap.cluster, s.text, s.document) for s in kept]
    result = {
        "set": label, "embedding": config.embedding.model, "tau": gapped.calibration.support_threshold,
        "gaps": len(gapped.gaps), "served_per_gap": [round(s, 2) for s in served],
        "gaps_served_80": sum(s >= 0.8 for s in served), "written": written, "kept": kept_total,
        "keep_rate": round(kept_total / written, 3) if written else None,
        "seconds_gaps": round(seconds, 1),
        "seconds_per_written": round(seconds / written, 2) if written else None, "max_rank": max(ranks, default=None),
        "max_similarity_to_existing": round(max(nearest, default=0.0), 3),
        "near_duplicate_level": WritingConfig().duplicate_similarity,
        "kept_questions": kept_questions,
    }
    if label == "example":
        result["before_after"] = before_after(gapped, embedder)
    return result


def before_after(gapped, embedder) -> list[dict]:
    """Each gap's tested share before → after accepting all kept written questions of all gaps."""
    texts = [s.text for gap in gapped.gaps for s in gap.suggestions if s.origin == "local"]
    _, after = accept_questions(gapped, texts, embedder, None)
    rows = []
    for gap in gapped.gaps:
        before_row = gapped.clusters.loc[gapped.clusters["cluster"] == gap.cluster].iloc[0]
        after_row = after.clusters.loc[after.clusters["cluster"] == gap.cluster].iloc[0]
        rows.append({"cluster": gap.cluster, "themes": list(gap.themes[:3]),
                     "tested_share_before": round(float(before_row["tested_share"]), 3),
                     "tested_share_after": round(float(after_row["tested_share"]), 3),
                     "still_a_gap": bool(after_row["is_gap"])})
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=["example", "en", "fr", "zh"])
    parser.add_argument("--half", default="B", choices=["A", "B"])
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--smoke", action="store_true", help="4 articles of wiki-qa, one question written: "
                        + SMOKE_HELP)
    args = parser.parse_args(argv)
    global SMOKE
    if args.smoke:
        import functools

        from coverage_core.suggest import gaps, writing

        SMOKE, args.sets, args.half = True, ["en"], "B"
        # Two tries per passage instead of eight: the writer's path, not its keep rate.
        gaps.write_questions = functools.partial(gaps.write_questions, config=writing.WritingConfig(attempts=2))
    results = []
    for name in args.sets:
        documents, questions = example_inputs() if name == "example" else set_inputs(name, args.half)
        result = evaluate(name if name == "example" else f"{name} half {args.half}", documents, questions)
        shown = {k: v for k, v in result.items() if k != "kept_questions"}
        print(json.dumps(shown, ensure_ascii=False), flush=True)
        results.append(result)
    if args.out:
        args.out.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
