"""The tested share's ceiling: how much of the knowledge base a number of questions can test at all.

Apart from :mod:`coverage_core.metrics`, which measures it into an analysis, because the verdicts state it
too and the metrics read the verdicts' cuts (a module of its own keeps the imports flowing one way).
"""

from __future__ import annotations

from coverage_core.validation import check_scalar

__all__ = ["testable_share_max"]


def testable_share_max(n_questions: int, k: int, n_chunks: int) -> float:
    """The ceiling of the tested share: the most of the knowledge base ``n_questions`` questions can test.

    ``testable_share_max = min(1, m × k / n)``

    with ``m`` the questions that take part in the tested share (the inlier
    questions :func:`coverage_core.metrics.retrieved_tested_chunks` reads: off-topic ones are left
    out, near-duplicates count as they do there), ``k`` the passages each
    retrieves (``AnalysisConfig.tested_k``) and ``n`` the chunks. Each
    question tests at most its top k, so 50 questions at k = 5 test at most
    250 of 812 passages (31%) whatever τ is.

    No questions: 0.0. No chunks: 1.0, as no passage is out of reach (and a
    ceiling of 1 is never stated). Raises SettingError on a negative count or
    ``k < 1``.
    """
    m = check_scalar(n_questions, "n_questions", int, min_val=0, hint="it counts the questions that test passages")
    k = check_scalar(k, "k", int, min_val=1, hint="it is the number of passages retrieved per question")
    n = check_scalar(n_chunks, "n_chunks", int, min_val=0, hint="it counts the passages of the knowledge base")
    if n == 0:
        return 1.0
    return min(1.0, int(m) * int(k) / int(n))
