"""The Sub-questions page: the LLM client it watches, merging runs, and its tables."""

from __future__ import annotations

import pandas as pd

from coverage_core.results import Analysis


class WatchedLLM:
    """A chat client that remembers the error that made the core stop asking (bad key, server down)."""

    def __init__(self, client):
        self.client, self.config, self.fatal = client, client.config, None

    def complete_json(self, system: str, user: str):
        from coverage_core.errors import ProviderError
        from coverage_core.suggest.llm import FATAL_KINDS

        try:
            return self.client.complete_json(system, user)
        except ProviderError as error:
            if error.kind in FATAL_KINDS:
                self.fatal = error
            raise


def merge_subquestions(old, new, config):
    """``old`` with ``new``'s questions added or replacing the same rows, rescored together (no LLM call)."""
    from coverage_core.checks.subquestions import SubQuestionResult, rescore_subquestions

    by_row = {q.row: q for q in old.questions} if old is not None else {}
    by_row.update({q.row: q for q in new.questions})
    questions = tuple(sorted(by_row.values(), key=lambda q: q.row))
    return rescore_subquestions(SubQuestionResult(config, questions, (), new.model, new.warnings), config)


def least_supported(analysis: Analysis) -> list[int]:
    """Question positions, lowest best similarity to any chunk first."""
    return [int(i) for i in analysis.question_table["max_similarity"].to_numpy().argsort(kind="stable")]


SUBQUESTION_STATUS = {"failed": "failed", "skipped": "not sent"}


def subquestion_type_table(result) -> pd.DataFrame:
    """Per sub-question type: how many, how many supported (in the knowledge base and by retrieval)."""
    return pd.DataFrame(
        {
            "type": [c.type for c in result.by_type],
            "sub-questions": [c.n for c in result.by_type],
            "supported": [c.n_supported for c in result.by_type],
            "share supported": [c.share for c in result.by_type],
            "supported by retrieval": [c.n_supported_by_retrieved for c in result.by_type],
            "share by retrieval": [c.share_by_retrieved for c in result.by_type],
        }
    )


def subquestion_rows(result, chunks) -> pd.DataFrame:
    """Every sub-question of the questions broken down, with its support and nearest document."""
    columns = [
        "row", "question", "type", "sub-question", "best similarity", "supported", "retrieved similarity",
        "supported by retrieved", "nearest document", "unsupported core",
    ]
    rows = [
        (q.row, q.question, s.type + (" (assumed)" if s.type_assumed else ""), s.text, s.best_similarity,
         s.supported, s.retrieved_similarity, s.supported_by_retrieved, chunks[s.best_chunk].document,
         s.type == "core" and s.text in q.unsupported_core)
        for q in result.questions if q.status == "ok"
        for s in q.sub_questions
    ]
    return pd.DataFrame(rows, columns=columns)


def unsupported_core_table(every: pd.DataFrame) -> pd.DataFrame:
    """The core sub-questions no chunk supports (the gaps), from :func:`subquestion_rows`."""
    gaps = every.loc[every["unsupported core"].astype(bool), ["row", "question", "sub-question", "best similarity",
                                                              "nearest document"]]
    return gaps.rename(
        columns={"sub-question": "unsupported core sub-question"}
    ).reset_index(drop=True)


def subquestion_question_table(result) -> pd.DataFrame:
    """One row per question sent: its status, shares supported and counts."""
    return pd.DataFrame(
        [
            {
                "row": q.row,
                "question": q.question,
                "status": SUBQUESTION_STATUS.get(q.status, q.status),
                "core supported": q.core_supported_share,
                "weighted score": q.weighted_score,
                "core supported by retrieval": q.retrieved.core_supported_share,
                "sub-questions": len(q.sub_questions),
                "unsupported core": len(q.unsupported_core),
            }
            for q in result.questions
        ]
    )


def subquestion_failures(result) -> pd.DataFrame:
    """The questions that could not be broken down (failed or not sent), with the reason."""
    failed = [q for q in result.questions if q.status != "ok"]
    return pd.DataFrame(
        {
            "row": [q.row for q in failed],
            "question": [q.question for q in failed],
            "status": [SUBQUESTION_STATUS.get(q.status, q.status) for q in failed],
            "reason": [q.reason for q in failed],
        }
    )
