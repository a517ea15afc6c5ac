"""The Knowledge-base fitness page: per-question support, answerability labels, the MDS map, the dimension sweep."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from coverage_core import wording
from coverage_core.config import EmbeddingConfig
from coverage_core.errors import CoverageError
from coverage_core.outputs.plots.fitness import SWEEP_NAMES
from coverage_core.results import Analysis
from ui import formats

LABEL_NAMES = {1.0: "answerable", 0.0: "not answerable"}
SWEEP_COLUMNS = {
    "d": "dimensions",
    "method": "vectors",
    "spearman": SWEEP_NAMES["spearman"],
    "mean_similarity": "mean best similarity",
    "point_biserial_r": SWEEP_NAMES["point_biserial_r"],
    "auroc": SWEEP_NAMES["auroc"],
}
"""The sweep table's headers, in the chart's plain words (the statistics are named in the label analysis only)."""
SWEEP_SCORE_COLUMNS = tuple(name for key, name in SWEEP_COLUMNS.items() if key not in ("d", "method"))


def fitness_table(analysis: Analysis, threshold: float) -> pd.DataFrame:
    """Per question: best similarity to any chunk, nearest document and passage, ranked."""
    table = analysis.question_table
    frame = pd.DataFrame(
        {
            "row": table["row"].astype(int),
            "question": table["text"],
            "best similarity": table["max_similarity"].astype(float),
            "nearest document": table["nearest_document"],
            "nearest passage": table["nearest_passage"],
            "cluster": table["cluster"].astype(int),
        }
    )
    frame["verdict"] = np.where(
        frame["best similarity"] < threshold, "the knowledge base may not answer this", ""
    )
    return frame.sort_values(["best similarity", "row"], ascending=[False, True]).reset_index(drop=True)


# Why Results flags a question the fitness threshold does not, by its off-topic reason (screening.OFFTOPIC_REASONS).
FLAGGED_ABOVE = {
    "no_support": "{are} flagged there, as {it_is} short of the support level Results uses",
    "missing_words": "{are} flagged there, as no passage holds {its} words together",
    "absent_subject": "{are} flagged there, as {it} {asks} about a subject the documents never discuss",
    "excluded": "{are} excluded by your choice",
}


def offtopic_difference(analysis: Analysis, table: pd.DataFrame) -> str:
    """Why the page's "may not be answerable" count (``table``, :func:`fitness_table`) differs from Results'
    off-topic count, by reason ("" when the two name the same questions): Results also reads the words and
    the named subjects, lets a question a little short of its level pass, and applies the user's choices."""
    from coverage_core.checks.answerability import fitness_threshold

    questions = analysis.question_table
    below = questions["row"].astype(int).isin(table.loc[table["verdict"] != "", "row"].astype(int)).to_numpy()
    flagged = questions["is_outlier"].to_numpy(dtype=bool)
    if (below == flagged).all():
        return ""
    kept = below & ~flagged
    included = kept & np.isnan(questions["offtopic_score"].to_numpy(dtype=float))  # an override has no score
    level = fitness_threshold(analysis)
    reaching = questions["max_similarity"].to_numpy(dtype=float) >= level
    reasons = [
        _clause(int((kept & ~included & reaching).sum()), "below this threshold",
                f"{{are}} kept there, as {{it}} {{reaches}} the support level Results uses ({formats.similarity(level)})"),
        _clause(int((kept & ~included & ~reaching).sum()), "below this threshold", "{are} kept there, as one "
                "passage holds most of {its} words or {it_is} only a little short of the support level Results uses"),
        _clause(int(included.sum()), "below this threshold", "{are} kept by your choice"),
    ]
    codes = questions["offtopic_reason"].astype(str).to_numpy()
    reasons += [_clause(int((flagged & ~below & (codes == code)).sum()), "above it", why)
                for code, why in FLAGGED_ABOVE.items()]
    return (f"Results counts {wording.count(int(flagged.sum()), 'question')} off-topic, not {int(below.sum()):,}: "
            + "; ".join(reason for reason in reasons if reason) + ".")


def _clause(n: int, where: str, template: str) -> str:
    """"{n} questions {where} …" with ``template``'s verbs and pronouns agreeing with ``n``; "" when ``n`` is 0."""
    if not n:
        return ""
    agreeing = template.format(
        are=wording.plural(n, "is", "are"), it_is=wording.plural(n, "it is", "they are"),
        its=wording.plural(n, "its", "their"), it=wording.plural(n, "it", "they"), asks=wording.plural(n, "asks", "ask"),
        reaches=wording.plural(n, "reaches", "reach"),
    )
    return f"{wording.count(n, 'question')} {where} {agreeing}"


def with_labels(table: pd.DataFrame, analysis: Analysis, labels) -> pd.DataFrame:
    """:func:`fitness_table` with each question's answerability label before the verdict ("" when unknown)."""
    by_row = dict(zip((int(r) for r in analysis.questions.rows), labels.labels))
    table = table.copy()
    table.insert(
        table.columns.get_loc("verdict"), "label",
        [LABEL_NAMES.get(by_row.get(int(r), np.nan), "") for r in table["row"]],
    )
    return table


def label_column_options(analysis: Analysis, current: str) -> list[str]:
    """The label picker's options: "" (the detected column), every column but the questions', and ``current``.

    A column of an earlier file stays an option so the error under the picker can say it is missing.
    """
    questions = analysis.questions
    options = [""] + [str(c) for c in questions.frame.columns if str(c) != questions.question_column]
    return options + [current] if current and current not in options else options


def detected_label_column(analysis: Analysis, chosen: str, labels) -> str | None:
    """The label column found by its name, for the picker's "Detected: …" (``labels`` is what the checks read)."""
    from coverage_core.checks.answerability_labels import find_label_column

    if chosen:  # the checks read the chosen column: look for the one a blank choice would find
        questions = analysis.questions
        return find_label_column([c for c in questions.frame.columns if str(c) != questions.question_column])
    return labels.column if labels is not None else None


def mds_frames(analysis: Analysis, points, labels=None):
    """The chunk and question tables of the MDS map (``labels``: answerability labels to colour by, or None)."""
    from coverage_core.checks.answerability import mds_frames as frames

    return frames(
        points, [c.text for c in analysis.corpus.chunks], analysis.questions.texts,
        chunk_documents=analysis.corpus.chunk_documents,
        labels=labels.labels if labels is not None else None,
        similarities=analysis.question_table["max_similarity"].to_numpy(dtype=float),
    )


# ---------------------------------------------------------------- dimension sweep
def sweep_sizes(full: int) -> list[int]:
    """The sweep's sizes below ``full`` dimensions (the full size itself is always compared too)."""
    from coverage_core.checks.answerability import DEFAULT_SWEEP_DIMS

    return [d for d in DEFAULT_SWEEP_DIMS if d is not None and d < full]


def sweep_model(config: EmbeddingConfig) -> str | None:
    """The model of ``config`` when its API returns every size the sweep compares (``output_dimensions``), else None.

    OpenAI's text-embedding-3 models qualify; Voyage's shorter sizes start at
    256 dimensions, too few for the sweep, and the local model has none.
    """
    from coverage_core.embeddings import PROVIDERS

    spec = PROVIDERS.get(config.provider)
    if spec is None:
        return None
    model = config.model or spec.default_model
    listed = spec.models.get(model)
    if listed is None or not listed.output_dimensions:
        return None
    sizes = sweep_sizes(listed.dimensions)
    return model if sizes and all(size in listed.output_dimensions for size in sizes) else None


def sweep_estimate(texts: Sequence[str], dims: Sequence[int], provider: str, model: str, embedder_at, cache, prices):
    """Tokens and dollars of embedding ``texts`` once per size in ``dims`` through the API (a costs.CostEstimate).

    ``embedder_at(d)`` builds the embedder of size ``d``; texts already in
    ``cache`` for it are not counted. When it cannot be built (no key yet),
    nothing is assumed cached.
    """
    from coverage_core import costs
    from coverage_core.embeddings.cache import uncached_texts

    tokens = 0
    for d in dims:
        try:
            tokens += costs.approximate_tokens(uncached_texts(texts, embedder_at(d), cache))
        except CoverageError:  # no key yet: assume nothing is cached
            tokens += costs.approximate_tokens(dict.fromkeys(texts))
    return costs.estimate_embedding_cost(tokens, provider, model, prices)


def sweep_consent_label(dims: Sequence[int], estimate) -> str:
    """The label of the box that allows the sweep to embed again through the API, with its cost (no LaTeX "$").
    The model it names is one of the providers' own (:func:`sweep_model`), never user text."""
    sizes = ", ".join(str(d) for d in dims)
    return (
        f"Embed every text again at {sizes} dimensions through the API "
        f"(the model's own shorter embeddings; {estimate.label})"
    ).replace("$", "\\$")


def sweep_embed_at(chunk_texts: Sequence[str], question_texts: Sequence[str], embedder_at, cache, progress=None):
    """``embed_at`` for :func:`coverage_core.checks.answerability.dimension_sweep`: each size embedded afresh.

    ``embedder_at(d)`` builds the embedder of size ``d`` (through ``cache``);
    ``progress(text, fraction)`` hears "32 dimensions: embedded 10 of 40
    questions" as each batch lands.
    """
    from coverage_core.embeddings import embed_texts

    def embed_at(d: int):
        embedder = embedder_at(d)
        runs = []
        for what, texts in (("questions", question_texts), ("chunks", chunk_texts)):
            def report(done: int, total: int, what=what) -> None:
                if progress is not None:
                    progress(f"{d} dimensions: embedded {done:,} of {total:,} {what}", done / total if total else 1.0)

            runs.append(embed_texts(list(texts), embedder, cache, report).vectors)
        return runs[0], runs[1]

    return embed_at


def dimension_sweep(analysis: Analysis, labels=None, embed_at=None) -> pd.DataFrame:
    """The core's dimension sweep of the analysis's vectors (``labels``: answerability labels to score, or None)."""
    from coverage_core.checks.answerability import dimension_sweep as sweep

    return sweep(
        analysis.question_vectors, analysis.corpus.vectors,
        labels=labels.labels if labels is not None else None, embed_at=embed_at,
    )


def sweep_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """The sweep with the column names the page shows and downloads."""
    return sweep.rename(columns=SWEEP_COLUMNS)
