"""Serialise an :class:`~coverage_core.results.Analysis`: JSON report, CSV export, text summary.

The JSON schema is versioned (``SCHEMA_VERSION``) and documented in the
README. Nothing here ever writes an API key: configs carry none.

Version 2 adds ``calibration`` (the support threshold τ and how it was
found; ``topic_threshold`` is the level the off-topic rule reads, None when
it is τ; ``labelled_threshold`` is the answerability labels' Youden
threshold when ``answerability`` is given), ``metrics.tested_share``,
``n_tested``/``tested_share`` per cluster and document, and
``documents[].is_untested``; ``clusters[].is_gap`` follows
``config.gaps.rule`` (tested share by default). Every ``is_*`` decision is
one rule of :mod:`coverage_core.verdicts`.

Additions within schema version 2 (no field renamed, so the version stays):

* ``after_apply`` — present only when suggested questions were accepted and
  the test set rescored on the same clusters (the Gap page's Apply,
  ``editing.accept_questions``)::

      "after_apply": {"before": {metric: value, ...}, "after": {metric: value, ...},
                      "change": {metric: after - before, ...},
                      "n_questions_before", "n_questions_after", "n_accepted",
                      "accepted_questions": [{"text", "origin": "llm"|"draft"|"you"|null,
                                              "cluster", "document", "passage"}]}

  The metric names are those of ``metrics``. ``origin`` ``"draft"`` is an
  offline draft the user worded as a question; ``"you"`` a row the user
  wrote; ``"edited:<origin>"`` a suggestion the user rewrote
  (``"edited:local"``: :mod:`coverage_core.decisions`); ``passage`` is the source passage shortened to
  ``ACCEPTED_PASSAGE_CHARS``. See :func:`after_apply_section`.

Version 3 renames the question level, one name for one concept:
``calibration.topic_threshold`` and the traffic section's
``answer_threshold`` are both ``question_support_threshold`` (the level a
question needs to have support; τ itself unless calibration found one of its
own, so no longer None). :func:`upgrade_report` maps older reports onto
these names.

Version 4 changes what *tested* means and adds the fields that explain each
verdict:

* a passage is tested when an on-topic question retrieves it among its top
  ``config.tested_k`` passages with similarity ≥ τ (any similarity when
  ``calibration.reliable`` is false, see ``summary.headline`` below): the passages a
  retriever would hand the model for that question (``config.retrieval_k``,
  default 5, counts passages of the default 1,000 characters; ``tested_k``
  scales it so a question tests as much text at any chunk size);
* ``documents[].is_untested`` now means *no on-topic question targets the
  document*; ``documents[].is_undertested`` (new) that questions target it
  but too small a share of its passages is tested; ``documents[].n_questions``
  (new) counts the on-topic questions that target it;
* ``calibration.reliable`` and ``calibration.reason``: False, with the reason
  in one sentence, when τ could not be calibrated on the documents and is the
  embedding model's default level; every verdict then rests on that default;
* ``questions[].offtopic_reason`` (``""`` on-topic, ``"no_support"``,
  ``"missing_words"``, ``"absent_subject"``, ``"excluded"`` by the user;
  :data:`OFFTOPIC_REASON_WORDS` words them), ``offtopic_rule`` (the name of
  the rule that flagged it, ``coverage_core.offtopic.RULE_NAMES``; ``""``
  when on-topic or decided by the user), ``offtopic_detail`` (one
  sentence with the numbers) and ``offtopic_score`` (above 0 exactly when the
  screening flags the question; null when the user's override decided).

:func:`upgrade_report` gives an older report these keys: ``reliable`` from
its ``method`` (a ``default`` level is not reliable), ``is_undertested``
False (its ``is_untested`` already held the thinly tested documents),
``n_questions``, ``offtopic_detail`` and ``offtopic_score`` null (not
recorded), ``offtopic_reason`` ``""`` for an on-topic question and null for
a flagged one.

Version 5 adds ``chunking.token_fit``, how the chunks were fitted to the
model's input limit (:class:`~coverage_core.results.TokenFit`; null for
vectors from a store or an unknown limit), ``config.model_choice`` (the
automatic choice's reason and languages, or null), and the languages the texts are written in
(:mod:`coverage_core.languages`): ``documents[].language`` and
``questions[].language`` (ISO 639-1 codes, ``"und"`` when a text is too
short or bare to tell), and ``languages``::

    "languages": {"documents": [{"code", "name", "share", "n_documents"}],
                  "questions": [{"code", "name", "share", "n_questions"}]}

largest first; a document language's ``share`` is of the documents'
characters, a question language's of the questions (undetermined texts left
out of both). :func:`upgrade_report` gives an older report ``"und"`` for
every text and empty lists.

Version 6 adds ``gaps`` (:mod:`coverage_core.outputs.gap_report`), every gap
most urgent first with all the questions written for it, kept and dropped::

    "gaps": [{"rank", "cluster", "label", "tested_share", "coverage", "size", "themes",
              "least_covered_passages": [{"chunk", "document", "text"}], "note",
              "suggestions": [{"question", "origin": "local"|"llm"|"draft", "document",
                               "passage", "chunk", "kept", "reason"}]}]

``note`` says why a gap has no suggestion ("" when it has one); kept
suggestions come first, and a dropped one's ``reason`` says why ("" when
kept). ``clusters[].suggested_questions`` stays as it was (the offered
questions). :func:`upgrade_report` gives an older report ``gaps`` built from
its clusters (no passages, every suggestion kept, ``chunk`` null).

Additions within schema version 6 (no field renamed, so the version stays):

* ``since`` — present only when the run was compared with an earlier run of
  the history (``analyze --record``/``--since``/``--history``, see
  :mod:`coverage_core.history`) and the history held one: what changed
  since that run, exactly :meth:`coverage_core.history.changes.Changes.to_dict`::

      "since": {"run", "label", "recorded_at" (ISO 8601, UTC),
                "tested_share_change" (percentage points, after − before; null when undefined),
                "documents_added": [{"name", "is_untested", "tested_share"}],
                "documents_removed": [name, ...],
                "documents_changed": [{"name", "is_untested", "tested_share"}],
                "questions_added": [text, ...], "questions_removed": [text, ...],
                "topics_lost": [{"label", "tested_share_before", "tested_share_after"}],
                "topics_gained": [{"label", "tested_share_before", "tested_share_after"}],
                "settings_changed": [{"name", "before", "after", "text"}],
                "verdicts_changed": [{"name", "before", "after", "text"}],
                "questions_stale": [{"question", "row", "source", "source_from" ("column" | "retrieved"),
                                     "reason" ("removed" | "changed"), "passages_changed"}] or null,
                "reason"}

  ``run``, ``label`` and ``recorded_at`` are the earlier run's; a document
  is "changed" when its content hash differs under the same name;
  ``settings_changed`` are the settings that differ (model, chunk size and
  overlap, strictness, topics K, level τ, retrieval k) and
  ``verdicts_changed`` the verdict counts (off-topic questions, gaps,
  untested and under-tested documents), each ``before`` and ``after`` as
  shown and its ``text`` ("strictness 0.5 → 1.0");
  ``questions_stale`` are the questions whose source document was removed or changed
  (:mod:`coverage_core.history.stale`; null when the earlier run did not record the questions' sources);
  ``reason`` is one sentence ("+3 documents, none tested: −4.1 points";
  "Strictness 0.5 → 1.0; topics (K) 6 → 8; off-topic questions 14 → 19: +0.0 points").
  :mod:`coverage_core.outputs.since_report` words it for the terminal, the
  HTML report and JUnit. Readers of older reports need nothing: the section
  is optional.
* untested documents in the gaps (:mod:`coverage_core.suggest.document_gaps`):
  ``documents[].cluster`` (main topic), ``documents[].is_gap`` (a gap of its
  own, :func:`coverage_core.verdicts.is_document_gap`), ``gaps[].document``
  (null for a topic gap; a document gap's figures are its document's) and
  ``gaps[].untested_documents`` (the untested documents a gap holds).
* ``summary.headline``: :attr:`coverage_core.verdicts.Verdicts.headline`, the
  sentence the terminal, the HTML report and the dashboard lead with (when
  ``calibration.reliable`` is false it says that tested passages and
  untested documents then read the ranking alone, whatever the similarity:
  :func:`coverage_core.measure.tested_level`). An older report has
  none.
* ``metrics.testable_share_max``: the tested share's ceiling,
  :func:`coverage_core.metrics.testable_share_max` of the on-topic questions
  at ``config.tested_k`` (1.0 when they can reach every passage); the
  headline states it when it is below 100%. Not a metric ``--metric`` can
  gate on. An older report has none.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from coverage_core import wording
from coverage_core.checks.answerability import MEASURE_NAMES
from coverage_core.embeddings.registry import configured_model_name
from coverage_core.languages import UNDETERMINED, LanguageProfile, LanguageShare, profile_languages
from coverage_core.outputs.gap_report import gaps_section, largest_gaps_lines
from coverage_core.outputs.report_upgrade import (  # re-exported: older reports are read through this module too
    RENAMED_FIELDS as RENAMED_FIELDS,
    upgrade_report as upgrade_report,
)
from coverage_core.results import Analysis
from coverage_core.suggest.questions import Suggestion
from coverage_core.validation import shorten
from coverage_core.verdicts import Verdicts, fallback_level_words, ranking_only_sentence

SCHEMA_VERSION = 6

OFFTOPIC_REASON_WORDS = {
    "no_support": "no passage supports it",
    "missing_words": "its key words are in no passage together",
    "absent_subject": "its subject is not in the documents",
    "excluded": "left out by you",
}
"""Each ``offtopic_reason`` code (``offtopic.screener.OFFTOPIC_REASONS``) in plain words, for every output
that shows it (:func:`offtopic_reason_words`)."""

METRIC_NAMES = ("tested_share", "basic", "weighted", "balanced", "multi_threshold", "multi_n")
# The relative scores, listed after the tested share (an absolute figure) in the summary.
RELATIVE_METRIC_NAMES = METRIC_NAMES[1:]

# Longest source passage written for an accepted question (after_apply.accepted_questions[].passage).
ACCEPTED_PASSAGE_CHARS = 300

def _plain(value: Any) -> Any:
    """JSON-safe Python scalars (numpy types, NaN → None)."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return None if math.isnan(value) else round(value, 6)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def build_report(
    analysis: Analysis,
    inputs: dict | None = None,
    *,
    retrieval=None,
    answerability=None,
    labels=None,
    subquestions=None,
    chunking=None,
    improved: Analysis | None = None,
    before: Analysis | Mapping[str, float] | None = None,
    accepted: Sequence[Suggestion | Mapping[str, Any]] | None = None,
) -> dict:
    """The report as a JSON-ready dict (schema version :data:`SCHEMA_VERSION`, see the module docstring).

    ``duplicate_groups`` lists the groups of :func:`coverage_core.duplicates.duplicate_groups`
    (largest first) by file row, representative first in ``rows``; it grows
    with the number of questions, never with the number of near-duplicate pairs.

    Optional sections, present only when computed: ``retrieval`` (a
    ``retrieval.RetrievalResult``), ``answerability`` (an
    ``answerability.AnswerabilityResult``, with the ``labels`` it was
    computed from: each labelled question then carries its ``label``, 1 =
    answerable), ``subquestions`` (a ``subquestions.SubQuestionResult``)
    and ``chunking_comparison`` (the table of
    ``chunking_comparison.compare_chunkings``).

    ``after_apply`` (an addition within version 2; nothing was renamed) is
    present when suggested questions were accepted and the test set
    rescored (``editing.accept_questions``). Give either ``improved``, the
    analysis after Apply (``analysis`` is then the one before, with its
    gaps), or ``before``, the analysis or its metrics before Apply
    (``analysis`` is then the one after); and ``accepted``, the accepted
    questions (:class:`~coverage_core.suggest.questions.Suggestion` objects, or mappings
    with ``text`` or ``question``, ``origin``, ``cluster``, ``document``,
    ``passage``, such as the rows of the dashboard's suggestions table).
    See :func:`after_apply_section` for its fields. Without ``accepted``, the
    questions the after-analysis added are listed with ``origin`` null.
    """
    sections = _optional_sections(retrieval, answerability, labels, subquestions, chunking)
    after_apply = _after_apply(analysis, improved, before, accepted)
    if after_apply is not None:
        sections["after_apply"] = after_apply
    languages = analysis_languages(analysis)
    verdicts = Verdicts.from_analysis(analysis, top=0)
    return {
        "schema_version": SCHEMA_VERSION,
        "config": _config_section(analysis, inputs),
        "calibration": _calibration_section(analysis, answerability),
        "metrics": _metrics_section(analysis.metrics, verdicts),
        "summary": _summary_section(analysis, verdicts),
        "chunking": {"token_fit": analysis.corpus.token_fit.to_dict() if analysis.corpus.token_fit else None},
        "languages": languages_section(languages),
        "clusters": _cluster_entries(analysis),
        "gaps": gaps_section(analysis),
        "documents": _document_entries(analysis, languages),
        "questions": _question_entries(analysis, labels, languages),
        "duplicate_groups": _duplicate_section(analysis),
        **sections,
        "warnings": list(analysis.warnings),
    }


def _metrics(metrics: Mapping[str, float]) -> dict:
    return {name: _plain(metrics[name]) for name in METRIC_NAMES}


def _metrics_section(metrics: Mapping[str, float], verdicts: Verdicts) -> dict:
    """The :data:`METRIC_NAMES`, then the tested share's ceiling (module docstring, within version 6): the one
    the headline states, so the two cannot disagree; a bound to read the share against, not a score to gate on."""
    return {**_metrics(metrics), "testable_share_max": _plain(verdicts.testable_share_max)}


def _config_section(analysis: Analysis, inputs: dict | None) -> dict:
    config = analysis.config.to_dict()
    config["n_clusters_used"] = analysis.clustering.n_clusters
    config["tested_k"] = analysis.config.tested_k
    config["screening_threshold"] = _plain(getattr(analysis.screener, "threshold_", None))
    choice = analysis.model_choice
    # How the automatic choice picked the model ``embedding`` names; None when the model was named.
    config["model_choice"] = None if choice is None else {"reason": choice.reason, "languages": list(choice.languages)}
    if inputs:
        config["inputs"] = inputs
    return _plain(config)


def _calibration_section(analysis: Analysis, answerability) -> dict:
    calibration = analysis.calibration.to_dict()
    if answerability is not None:
        calibration["labelled_threshold"] = getattr(answerability, "threshold", None)
    return _plain(calibration)


def _summary_section(analysis: Analysis, verdicts: Verdicts) -> dict:
    corpus = analysis.corpus
    return {
        "n_documents": len(corpus.documents),
        "n_chunks": len(corpus.chunks),
        "n_questions": len(analysis.questions.questions),
        "n_outliers": int(analysis.is_outlier.sum()),
        "n_blank_questions": analysis.questions.n_blank,
        "n_chunks_over_token_limit": corpus.embedded.n_over_limit,
        "embedded": corpus.embedded.n_embedded + analysis.question_embedding.n_embedded,
        "from_cache": corpus.embedded.n_cached + analysis.question_embedding.n_cached,
        "headline": verdicts.headline,
    }


def _cluster_entries(analysis: Analysis) -> list[dict]:
    gaps_by_cluster = {gap.cluster: gap for gap in analysis.gaps if not gap.document}  # a topic's own gap
    clusters = []
    for row in analysis.clusters.itertuples(index=False):
        gap = gaps_by_cluster.get(int(row.cluster))
        clusters.append(
            {
                "id": int(row.cluster),
                "label": str(getattr(row, "label", "") or ""),
                "size": int(row.size),
                "share": _plain(row.share),
                "coverage": _plain(row.coverage),
                "multi_threshold_coverage": _plain(row.multi_threshold_coverage),
                "multi_n_coverage": _plain(row.multi_n_coverage),
                "n_questions": int(row.n_questions),
                "n_tested": int(row.n_tested),
                "tested_share": _plain(row.tested_share),
                "is_gap": bool(row.is_gap),
                "gap_rank": (analysis.gaps.index(gap) + 1) if gap else None,
                "themes": list(gap.themes) if gap else [],
                "suggested_questions": [
                    {"text": s.text, "origin": s.origin, "document": s.document, "passage": s.passage}
                    for s in (gap.suggestions if gap else ())
                ],
                "representative_chunks": list(row.representative_chunks),
            }
        )
    return clusters


def analysis_languages(analysis: Analysis) -> LanguageProfile:
    """The analysis's :class:`~coverage_core.languages.LanguageProfile`, read now when it has none (built by hand)."""
    if analysis.languages is not None:
        return analysis.languages
    return profile_languages(analysis.corpus.documents, analysis.questions)


def languages_section(profile: LanguageProfile) -> dict:
    """The report's ``languages`` section (module docstring, version 5)."""
    def entries(shares: Sequence[LanguageShare], count: str) -> list[dict]:
        return [{"code": s.code, "name": s.name, "share": _plain(s.share), count: s.n_texts} for s in shares]

    return {"documents": entries(profile.document_shares, "n_documents"),
            "questions": entries(profile.question_shares, "n_questions")}


def _document_entries(analysis: Analysis, languages: LanguageProfile) -> list[dict]:
    language_of = dict(zip(languages.document_names, languages.document_languages))
    return [
        {
            "name": row.document,
            "language": language_of.get(row.document, UNDETERMINED),
            "n_chunks": int(row.n_chunks),
            "coverage": _plain(row.coverage),
            "n_tested": int(row.n_tested),
            "tested_share": _plain(row.tested_share),
            "n_questions": int(row.n_questions),
            "is_untested": bool(row.is_untested),
            "is_undertested": bool(row.is_undertested),
            "is_low": bool(row.is_low),
            "cluster": None if pd.isna(getattr(row, "cluster", None)) else int(row.cluster),
            "is_gap": bool(getattr(row, "is_gap", False)),
        }
        for row in analysis.documents.itertuples(index=False)
    ]


def _question_entries(analysis: Analysis, labels, languages: LanguageProfile) -> list[dict]:
    codes = languages.question_languages
    if len(codes) != len(analysis.question_table):  # a profile of other questions: tell nothing
        codes = (UNDETERMINED,) * len(analysis.question_table)
    questions = [
        {
            "row": int(row.row),
            "text": row.text,
            "language": code,
            "max_similarity": _plain(row.max_similarity),
            "nearest_document": row.nearest_document,
            "cluster": int(row.cluster),
            "outlier_score": _plain(row.outlier_score),
            "lof_score": _plain(row.lof_score),
            "is_outlier": bool(row.is_outlier),
            "offtopic_reason": str(row.offtopic_reason),
            "offtopic_rule": str(getattr(row, "offtopic_rule", "") or ""),
            "offtopic_detail": str(row.offtopic_detail),
            "offtopic_score": _plain(row.offtopic_score),
            "duplicate_of": None if row.duplicate_of is None or pd.isna(row.duplicate_of) else int(row.duplicate_of),
        }
        for row, code in zip(analysis.question_table.itertuples(index=False), codes)
    ]
    if labels is not None and labels.column is not None:
        for entry, label in zip(questions, labels.labels):
            if np.isfinite(label):
                entry["label"] = int(label)
    return questions


def _duplicate_section(analysis: Analysis) -> dict:
    duplicates = analysis.duplicate_groups
    rows = np.asarray(analysis.questions.rows)
    return {
        "n_groups": duplicates.n_groups,
        "n_questions": duplicates.n_questions,
        "threshold": _plain(duplicates.threshold),
        "groups": [
            {
                "representative": int(rows[representative]),
                "rows": rows[members].tolist(),
                "min_similarity": _plain(duplicates.similarity[members].min()),
            }
            for representative, members in duplicates.groups
        ],
    }


def _optional_sections(retrieval, answerability, labels, subquestions, chunking) -> dict:
    """The sections present only when computed, each from its own module's section builder."""
    sections = {}
    if retrieval is not None:
        from coverage_core.checks.retrieval import retrieval_section

        sections["retrieval"] = retrieval_section(retrieval)
    if answerability is not None:
        from coverage_core.checks.answerability import answerability_section

        sections["answerability"] = answerability_section(answerability, labels.column if labels else None)
    if subquestions is not None:
        from coverage_core.checks.subquestions import subquestion_section

        sections["subquestions"] = subquestion_section(subquestions)
    if chunking is not None:
        from coverage_core.chunking_comparison import comparison_section

        sections["chunking_comparison"] = comparison_section(chunking)
    return sections


# ---------------------------------------------------------------- after Apply


@dataclass(frozen=True)
class ApplyPair:
    """The test set before and after Apply: the metrics of both, and each analysis when known."""

    before_metrics: Mapping[str, float]
    after_metrics: Mapping[str, float]
    before: Analysis | None
    after: Analysis | None

    @property
    def added_texts(self) -> list[str]:
        """The questions the after-analysis has beyond the before-analysis (empty unless both are known)."""
        if self.before is None or self.after is None:
            return []
        return [q.text for q in self.after.questions.questions[len(self.before.questions.questions):]]


def apply_pair(
    analysis: Analysis, improved: Analysis | None = None, before: Analysis | Mapping[str, float] | None = None
) -> ApplyPair | None:
    """Which side of Apply ``analysis`` is: before it when ``improved`` is given, after it when ``before`` is.

    None when neither is given; ValueError when both are.
    """
    if improved is not None and before is not None:
        raise ValueError("Give the analysis after Apply (improved) or the one before it (before), not both.")
    if improved is not None:
        return ApplyPair(analysis.metrics, improved.metrics, analysis, improved)
    if before is not None:
        if isinstance(before, Mapping):
            return ApplyPair(before, analysis.metrics, None, analysis)
        return ApplyPair(before.metrics, analysis.metrics, before, analysis)
    return None


def accepted_question_entries(
    accepted: Sequence[Suggestion | Mapping[str, Any]] | None, added_texts: Sequence[str] = ()
) -> list[dict]:
    """The accepted questions as plain dicts ``{"text", "origin", "cluster", "document", "passage"}``.

    ``accepted`` holds :class:`~coverage_core.suggest.questions.Suggestion` objects or
    mappings (the text under ``text`` or ``question``). Texts are put on one
    line; ``passage`` is shortened to :data:`ACCEPTED_PASSAGE_CHARS`; a blank
    ``document``, ``passage`` or ``origin`` becomes None. Without
    ``accepted``, ``added_texts`` are listed with every other field None.
    """
    if accepted is None:
        return [_accepted_entry({"text": text}) for text in added_texts]
    return [_accepted_entry(item) for item in accepted]


def _accepted_entry(item: Suggestion | Mapping[str, Any]) -> dict:
    if not isinstance(item, Mapping):
        item = {name: getattr(item, name, None) for name in ("text", "origin", "cluster", "document", "passage")}
    text = item.get("text")
    if _blank(text):
        text = item.get("question")

    def plain_text(name: str, limit: int | None = None) -> str | None:
        value = item.get(name)
        if _blank(value):
            return None
        return shorten(value, limit) if limit else " ".join(str(value).split())

    cluster = item.get("cluster")
    return {
        "text": "" if _blank(text) else " ".join(str(text).split()),
        "origin": plain_text("origin"),
        "cluster": None if _blank(cluster) else int(cluster),
        "document": plain_text("document"),
        "passage": plain_text("passage", ACCEPTED_PASSAGE_CHARS),
    }


def _blank(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def after_apply_section(
    pair: ApplyPair, accepted: Sequence[Suggestion | Mapping[str, Any]] | None = None
) -> dict:
    """The ``after_apply`` section of the report.

    Schema::

        {"before": {metric: value}, "after": {metric: value}, "change": {metric: after - before},
         "n_questions_before", "n_questions_after", "n_accepted",
         "accepted_questions": [{"text", "origin", "cluster", "document", "passage"}]}

    Metrics are those of ``metrics`` (:data:`METRIC_NAMES`), rounded to 6
    decimals; ``change`` is None where either side is. ``origin`` is
    ``"llm"`` (written by the LLM), ``"draft"`` (an offline draft the user
    worded as a question before accepting it: unworded drafts are never
    applied), ``"you"`` (a row the user wrote in the dashboard) or null
    (not known); ``cluster`` is the gap it was suggested for; ``document``
    and ``passage`` (at most :data:`ACCEPTED_PASSAGE_CHARS` characters) are
    its source, null when it has none. ``n_questions_*`` are null when that
    side is given as metrics only.
    """
    entries = accepted_question_entries(accepted, pair.added_texts)
    before, after = _metrics(pair.before_metrics), _metrics(pair.after_metrics)
    return {
        "before": before,
        "after": after,
        "change": {
            name: None if before[name] is None or after[name] is None else round(after[name] - before[name], 6)
            for name in METRIC_NAMES
        },
        "n_questions_before": len(pair.before.questions.questions) if pair.before is not None else None,
        "n_questions_after": len(pair.after.questions.questions) if pair.after is not None else None,
        "n_accepted": len(entries),
        "accepted_questions": entries,
    }


def _after_apply(analysis: Analysis, improved, before, accepted) -> dict | None:
    pair = apply_pair(analysis, improved, before)
    if pair is None:
        if accepted:
            raise ValueError("Accepted questions need the analysis before (before) or after (improved) Apply.")
        return None
    return after_apply_section(pair, accepted)


def write_report(report: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")


# ---------------------------------------------------------------- the verdicts in words


UNTESTED, UNDERTESTED = "untested", "under-tested"


@dataclass(frozen=True)
class DocumentFinding:
    """One document a verdict names: ``verdict`` is :data:`UNTESTED` or :data:`UNDERTESTED`; ``words`` say why."""

    document: str
    verdict: str
    words: str


def document_findings(analysis: Analysis, verdicts: Verdicts | None = None) -> list[DocumentFinding]:
    """The untested documents, then the under-tested ones, each in the verdicts' order, with their numbers in words.

    Untested: "no on-topic question targets its 30 passages"; under-tested:
    "tested, but thinly: 12% of 30 passages, by 2 questions".
    """
    verdicts = verdicts or Verdicts.from_analysis(analysis, top=0)
    findings = [
        DocumentFinding(d.document, UNTESTED, f"no on-topic question targets its {wording.count(d.n_chunks, 'passage')}")
        for d in verdicts.untested
    ]
    findings += [
        DocumentFinding(d.document, UNDERTESTED, f"tested, but thinly: {d.tested_share:.0%} of {d.n_chunks} passages, "
                        f"by {d.n_questions} {wording.plural(d.n_questions, 'question')}")
        for d in verdicts.undertested
    ]
    return findings


def offtopic_reason_words(reason: Any) -> str:
    """An ``offtopic_reason`` code in plain words (:data:`OFFTOPIC_REASON_WORDS`); "" for none, an unknown code spelt out."""
    if _blank(reason):
        return ""
    return OFFTOPIC_REASON_WORDS.get(str(reason), str(reason).replace("_", " "))


def calibration_warning(analysis: Analysis) -> str:
    """What the figures rest on when τ could not be calibrated, in two plain sentences; "" when it was."""
    calibration = analysis.calibration
    if calibration.reliable:
        return ""
    reason = " ".join(str(calibration.reason).split()) or "The support level could not be calibrated on these documents."
    level = fallback_level_words(calibration.support_threshold, calibration.method)
    return (f"{reason} Every figure and verdict here rests on {level}, not on one measured on these documents, "
            "so they may be wrong.")


def model_line(analysis: Analysis) -> str:
    """"Model: <name>", and why when the automatic choice picked it."""
    name = configured_model_name(analysis.config.embedding.provider, analysis.config.embedding.model)
    choice = analysis.model_choice
    return f"Model: {name} (automatic choice: {choice.reason})" if choice is not None else f"Model: {name}."


def summary_table(analysis: Analysis, retrieval=None, answerability=None, chunking=None) -> str:
    """A plain-text summary for the terminal: the headline (an unreliable calibration leads it), the
    untested documents, then the under-tested ones, then the tables."""
    verdicts = Verdicts.from_analysis(analysis)
    lines = [verdicts.headline, ""]
    findings = document_findings(analysis, verdicts)
    for kind, title in ((UNTESTED, "Untested documents"), (UNDERTESTED, "Under-tested documents")):
        named = [f for f in findings if f.verdict == kind]
        if named:
            lines.append(f"{title} ({len(named)})")
            lines += [f"  {f.document}: {f.words}" for f in named]
    if findings:
        lines.append("")
    corpus = analysis.corpus
    n_questions = len(analysis.questions.questions)
    lines.append(
        f"{wording.count(len(corpus.documents), 'document')}, {wording.count(len(corpus.chunks), 'chunk')}, "
        f"{wording.count(analysis.clustering.n_clusters, 'cluster')}; {wording.count(n_questions, 'question')}, "
        f"{verdicts.n_off_topic} screened out as off-topic."
    )
    lines.append(f"Languages: {analysis_languages(analysis).in_words()}.")
    lines.append(model_line(analysis))
    if corpus.token_fit is not None and corpus.token_fit.n_resplit:
        n_resplit = corpus.token_fit.n_resplit
        lines.append(f"{wording.count(n_resplit, 'passage')} {wording.plural(n_resplit, 'was', 'were')} longer than "
                     f"the model reads ({corpus.token_fit.max_tokens} tokens) and {wording.plural(n_resplit, 'was', 'were')} "
                     "split again.")
    duplicates = analysis.duplicate_groups
    if duplicates.n_groups:
        lines.append(
            f"{wording.count(duplicates.n_questions, 'question')} form {wording.count(duplicates.n_groups, 'group')} of "
            "near-duplicates "
            f"(similarity ≥ {duplicates.threshold:.3g} to the group's first question); the report lists them."
        )
    lines.append("")
    calibration = analysis.calibration
    if calibration.reliable:
        lines.append(f"A question tests a passage when it retrieves it among its top {analysis.config.tested_k} "
                     f"passages at similarity ≥ {calibration.support_threshold:.3f}, the support level "
                     f"({calibration.method}).")
    else:
        lines.append(f"{ranking_only_sentence(analysis.config.tested_k)} The support level "
                     f"{calibration.support_threshold:.3f} ({calibration.method}) still decides which questions are "
                     "off-topic.")
    if calibration.method == "pseudo-queries":
        lines.append(f"A question has support (is on-topic) from similarity {calibration.question_support_threshold:.3f}, "
                     "the question support level: the level that tells a passage's own sentences from other topics'.")
    lines.append("Coverage (relative scores: compare test sets, do not read as a percentage of truth)")
    for name in RELATIVE_METRIC_NAMES:
        note = "  (equals basic by construction)" if name == "weighted" else ""
        lines.append(f"  {name:<16} {analysis.metrics[name]:.3f}{note}")
    lines.append("")
    lines.append(f"{'cluster':>7} {'size':>5} {'share':>6} {'tested':>6} {'coverage':>8} {'questions':>9}  gap  topic")
    for row in analysis.clusters.sort_values("coverage").itertuples(index=False):
        lines.append(
            f"{row.cluster:>7} {row.size:>5} {row.share:>6.1%} {row.tested_share:>6.0%} {row.coverage:>8.3f} {row.n_questions:>9}  "
            f"{'GAP' if row.is_gap else '   '}  {getattr(row, 'label', '') or ''}".rstrip()
        )
    lines.append("")
    lines.append(f"{'document':<40} {'chunks':>6} {'questions':>9} {'tested':>6} {'coverage':>8}")
    for row in analysis.documents.sort_values("coverage").itertuples(index=False):
        flag = ("  UNTESTED" if row.is_untested else "  UNDER-TESTED" if row.is_undertested
                else "  covered far less than the others" if row.is_low else "")
        lines.append(f"{row.document[:40]:<40} {row.n_chunks:>6} {row.n_questions:>9} "
                     f"{row.tested_share:>6.0%} {row.coverage:>8.3f}{flag}")
    lines.extend(largest_gaps_lines(analysis))
    lines.extend(_checks_summary_lines(retrieval, answerability, chunking))
    outliers = analysis.question_table[analysis.question_table["is_outlier"]]
    if len(outliers):
        lines.append("")
        lines.append("Off-topic questions (highest scores first)")
        for row in outliers.sort_values("offtopic_score", ascending=False).head(10).itertuples(index=False):
            lines.append(f"  row {row.row}: {' '.join(str(row.text).split())[:90]}")
            why = offtopic_reason_words(row.offtopic_reason)
            detail = " ".join(str(row.offtopic_detail).split())
            if why or detail:
                lines.append(f"    {why}{': ' if why and detail else ''}{detail}")
    return "\n".join(lines)


def _checks_summary_lines(retrieval, answerability, chunking) -> list[str]:
    """The summary lines of the optional checks (retrieval, answerability, chunking comparison)."""
    lines: list[str] = []
    if retrieval is not None:
        lines.append("")
        lines.append(
            f"Retrieval at k={retrieval.k} ({wording.count(retrieval.n_labelled, 'question')} "
            f"{wording.plural(retrieval.n_labelled, 'names its', 'name their')} source in "
            f"{retrieval.relevant_column!r}, {retrieval.n_unlabelled:,} {wording.plural(retrieval.n_unlabelled, 'does', 'do')} not)"
        )
        for name in ("precision_at_k", "recall_at_k", "hit_at_k", "mrr"):
            lines.append(f"  {name:<16} {getattr(retrieval, name):.3f}")
        n_failed = int((retrieval.per_question["hit_at_k"] == 0).sum())
        if n_failed:
            lines.append(f"  {wording.count(n_failed, 'question')} did not retrieve any of {wording.plural(n_failed, 'its', 'their')} "
                         "sources; the report lists them.")
    if answerability is not None:
        lines.append("")
        lines.append(f"Answerability labels ({wording.count(answerability.n_labelled, 'question')})")
        lines.append(
            f"  {MEASURE_NAMES['point_biserial_r']} {answerability.point_biserial_r:.3f} "
            f"(p = {answerability.p_value:.2g}), {MEASURE_NAMES['auroc']} {answerability.auroc:.3f}, "
            f"{MEASURE_NAMES['threshold']} {answerability.threshold:.3f}"
        )
        if answerability.note:
            lines.append(f"  {answerability.note}")
    if chunking is not None and len(chunking):
        lines.append("")
        lines.append("Chunking comparison (same questions, screening held fixed)")
        columns = ["chunk_size", "chunk_overlap", "n_chunks", "basic", "balanced", "precision_at_k", "recall_at_k",
                   "mrr", "newly_embedded"]
        lines.append("  " + chunking[columns].to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-")
                     .replace("\n", "\n  "))
    return lines
