"""The ``subquestions`` section of the JSON report."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from coverage_core.checks.subquestions.config import SUPPORT_NOTIONS
from coverage_core.checks.subquestions.results import QuestionScore, SubQuestionResult, SupportSummary


def _plain(value: Any) -> Any:
    """JSON-safe Python values (numpy types, NaN → None, floats rounded to 6 decimals)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return None if not math.isfinite(value) else round(value, 6)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _summary_dict(summary: SupportSummary) -> dict:
    return {
        "core_supported_share": summary.core_supported_share,
        "weighted_score": summary.weighted_score,
        "unsupported_core": list(summary.unsupported_core),
    }


def subquestion_section(result: SubQuestionResult) -> dict:
    """The report section for sub-question coverage, in plain JSON types (NaN → None).

    Headline fields (``core_supported_share``, ``weighted_score``,
    ``unsupported_core``, ``overall.by_type[*].share``, ``overall.mean_*``)
    use ``headline_support``; ``by_support`` holds both notions.
    """
    config = result.config
    section = {
        "model": result.model,
        "headline_support": config.headline_support,
        "weights": config.weights,
        "support_threshold": config.support_threshold,
        "top_k": config.top_k,
        "max_sub_questions": config.max_sub_questions,
        "overall": _overall_section(result),
        "questions": [_question_entry(q) for q in result.questions],
        "warnings": list(result.warnings),
    }
    return _plain(section)


def _overall_section(result: SubQuestionResult) -> dict:
    """Counts by status, and the pooled and mean scores under the headline notion and under both."""
    by_support = {notion: _overall(result, notion) for notion in SUPPORT_NOTIONS}
    headline = by_support[result.config.headline_support]
    return {
        "n_questions": len(result.questions),
        "n_scored": result.count("ok"),
        "n_failed": result.count("failed"),
        "n_skipped": result.count("skipped"),
        "by_type": headline["by_type"],
        "mean_core_supported_share": headline["mean_core_supported_share"],
        "mean_weighted_score": headline["mean_weighted_score"],
        "by_support": by_support,
    }


def _overall(result: SubQuestionResult, notion: str) -> dict:
    """The overall scores under one notion of support (``"knowledge_base"`` or ``"retrieved"``)."""
    retrieved = notion == "retrieved"
    return {
        "by_type": {
            t.type: {
                "n": t.n,
                "n_supported": t.n_supported_by_retrieved if retrieved else t.n_supported,
                "share": t.share_by_retrieved if retrieved else t.share,
            }
            for t in result.by_type
        },
        "mean_core_supported_share": result.mean_core_supported_share(notion),
        "mean_weighted_score": result.mean_weighted_score(notion),
        "n_questions_with_unsupported_core": sum(
            bool(getattr(q, notion).unsupported_core) for q in result.questions if q.status == "ok"
        ),
    }


def _question_entry(question: QuestionScore) -> dict:
    """One question's entry: its sub-questions with their support, and its scores."""
    return {
        "row": question.row,
        "question": question.question,
        "status": question.status,
        "reason": question.reason,
        "sub_questions": [
            {
                "text": s.text,
                "type": s.type,
                "type_assumed": s.type_assumed,
                "best_similarity": s.best_similarity,
                "supported": s.supported,
                "retrieved_similarity": s.retrieved_similarity,
                "supported_by_retrieved": s.supported_by_retrieved,
            }
            for s in question.sub_questions
        ],
        **_summary_dict(question.headline),
        "by_support": {
            "knowledge_base": _summary_dict(question.knowledge_base),
            "retrieved": _summary_dict(question.retrieved),
        },
    }
