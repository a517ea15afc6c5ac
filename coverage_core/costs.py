"""What a paid provider will charge, estimated offline before anything is sent.

Exact tokenizers are not available offline (tiktoken and Voyage's tokenizer
download their vocabularies on first use), so token counts here are an
**approximation**: about four characters of English text per token, the rule
of thumb OpenAI documents, counted in UTF-8 bytes so other scripts are not
undercounted (:func:`coverage_core.embeddings.base.approximate_token_count`,
the same count the API embedders use to size their requests). Every figure
this module returns says so in its label; callers must show that label next
to the number.

An estimate counts what a run would really send: each distinct text once,
and none the embedding cache already holds (``uncached``). Both are linear
in the number of texts (hashing and one indexed cache lookup per 500 texts),
so estimating 100,000 chunks takes about a second.

Prices change and contracts differ, so they live in an editable table
(:func:`default_price_table`, built from the embedding providers' specs and
the LLM prices here) that the user corrects before trusting an estimate. Nothing here sends a request.

Besides the chunks and the questions, an analysis that calibrates its
support level embeds short texts taken from the corpus (up to
:data:`coverage_core.stages.calibration.MAX_CALIBRATION_TEXTS`);
:func:`estimate_calibration_cost` counts exactly those not yet cached.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from coverage_core.embeddings.base import approximate_token_count
from coverage_core.embeddings.registry import embedding_prices
from coverage_core.errors import InputError
from coverage_core.stages.calibration import MAX_CALIBRATION_TEXTS, calibration_texts
from coverage_core.types import Chunk

__all__ = [
    "APPROXIMATION_NOTE",
    "CALIBRATION_NOTE",
    "CHARS_PER_TOKEN",
    "MAX_CALIBRATION_TEXTS",
    "PRICE_COLUMNS",
    "CalibrationCost",
    "CostEstimate",
    "approximate_tokens",
    "default_price_table",
    "estimate_calibration_cost",
    "estimate_embedding_cost",
    "estimate_llm_tokens",
    "estimate_llm_cost",
    "clean_price_table",
]

CHARS_PER_TOKEN = 4
"""Characters of English per token in the approximations below (the LLM prompt sizes)."""
APPROXIMATION_NOTE = "approximate: about 4 characters per token, counted offline"

CALIBRATION_NOTE = (
    "The support level is calibrated on your documents once per set of documents and model: up to "
    f"{MAX_CALIBRATION_TEXTS:,} short texts taken from them are embedded for it."
)

PRICE_COLUMNS = ("provider", "model", "kind", "usd_per_1m_input", "usd_per_1m_output")

# LLM list prices in US dollars per million tokens when this table was written;
# each embedding provider's spec carries its own (coverage_core.embeddings.registry).
# They are a starting point: the dashboard lets the user edit every row.
_LLM_PRICES_CSV = """
provider, model,                  kind,      usd_per_1m_input, usd_per_1m_output
openai,   gpt-4o-mini,            llm,       0.15,             0.60
openai,   gpt-4o,                 llm,       2.50,             10.00
openai,   gpt-4.1-mini,           llm,       0.40,             1.60
"""


def _price_rows(csv: str) -> tuple[tuple[str, str, str, float, float], ...]:
    """The rows of a price table written as CSV (a header of :data:`PRICE_COLUMNS`, spaces around cells ignored)."""
    header, *rows = ([cell.strip() for cell in line.split(",")] for line in csv.strip().splitlines())
    if tuple(header) != PRICE_COLUMNS:
        raise ValueError(f"price table header {header} is not {list(PRICE_COLUMNS)}")
    return tuple((provider, model, kind, float(i), float(o)) for provider, model, kind, i, o in rows)


_LLM_PRICES = _price_rows(_LLM_PRICES_CSV)

# What one gap-analysis request to an LLM sends and gets back, in characters,
# besides the passages: the instructions, the topic words and up to 20
# existing questions; the reply is a short JSON object.
_LLM_PROMPT_OVERHEAD_CHARS = 2_500
_LLM_REPLY_CHARS = 1_200


def approximate_tokens(texts: Iterable[str]) -> int:
    """Approximate total tokens of ``texts``, each counted by
    :func:`~coverage_core.embeddings.base.approximate_token_count`.

    The same rule the API embedders use to size their requests, so an estimate
    and a run agree on what "a token" is.
    """
    return sum(approximate_token_count(str(text)) for text in texts)


def default_price_table() -> pd.DataFrame:
    """The editable price table: one row per (provider, model, kind).

    The embedding rows come from the registered providers' specs, read at each
    call: the paid providers' first, then the LLMs', then the free providers'
    zero rows, so the prices a user should check lead the table.
    """
    paid: list[tuple] = []
    free: list[tuple] = []
    for provider, model, usd, is_paid in embedding_prices():
        (paid if is_paid else free).append((provider, model, "embedding", usd, 0.0))
    return pd.DataFrame(paid + list(_LLM_PRICES) + free, columns=list(PRICE_COLUMNS))


def clean_price_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table as the user edited it, checked: prices are numbers, 0 or more.

    Rows without a model name are dropped (a half-typed new row). Raises
    ``InputError`` naming the first bad cell.
    """
    missing = [column for column in PRICE_COLUMNS if column not in table.columns]
    if missing:
        raise InputError(f"The price table needs the columns {', '.join(missing)}; add them back.")
    frame = table.loc[:, list(PRICE_COLUMNS)].copy()
    for column in ("provider", "model", "kind"):
        frame[column] = frame[column].fillna("").astype(str).str.strip()
    frame = frame[frame["model"] != ""].reset_index(drop=True)
    for column in ("usd_per_1m_input", "usd_per_1m_output"):
        raw = frame[column]
        blank = raw.isna() | (raw.astype(str).str.strip() == "")
        values = pd.to_numeric(raw.where(~blank, 0.0), errors="coerce")
        bad = values.isna() | (values < 0)
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise InputError(
                f"The price of {frame.loc[row, 'model']} ({column}) must be a number, 0 or more "
                f"(got {raw.iloc[row]!r}); correct it in the price table."
            )
        frame[column] = values.astype(float)
    return frame


@dataclass(frozen=True)
class CostEstimate:
    """Approximate tokens and dollars; ``usd`` is None when the table has no price."""

    input_tokens: int
    output_tokens: int
    usd: float | None
    model: str

    @property
    def label(self) -> str:
        tokens = f"~{self.input_tokens:,} tokens"
        if self.output_tokens:
            tokens += f" in, ~{self.output_tokens:,} out"
        if self.usd is None:
            return f"{tokens} ({APPROXIMATION_NOTE}); no price for {self.model} in the table, add one to see a cost"
        return f"{tokens}, about ${self.usd:,.4f} ({APPROXIMATION_NOTE})"


def _price(table: pd.DataFrame, provider: str, model: str, kind: str) -> tuple[float, float] | None:
    rows = table[
        (table["provider"].str.lower() == provider.lower())
        & (table["model"].str.lower() == model.lower())
        & (table["kind"].str.lower() == kind)
    ]
    if rows.empty:
        return None
    row = rows.iloc[0]
    return float(row["usd_per_1m_input"]), float(row["usd_per_1m_output"])


def estimate_embedding_cost(n_tokens: int, provider: str, model: str, table: pd.DataFrame) -> CostEstimate:
    """Cost of embedding ``n_tokens`` (approximate) with ``provider``/``model``."""
    price = _price(clean_price_table(table), provider, model, "embedding")
    usd = None if price is None else n_tokens * price[0] / 1_000_000
    return CostEstimate(int(n_tokens), 0, usd, model)


@dataclass(frozen=True)
class CalibrationCost:
    """What calibrating the support level would send: ``n_texts`` texts, priced in ``estimate``."""

    n_texts: int
    estimate: CostEstimate

    @property
    def label(self) -> str:
        return f"Support-level calibration: about {self.n_texts:,} texts, {self.estimate.label}"


def estimate_calibration_cost(
    chunks: Sequence[Chunk],
    provider: str,
    model: str,
    table: pd.DataFrame,
    *,
    random_state: int = 0,
    uncached: Callable[[Sequence[str]], Sequence[str]] | None = None,
    counted: Iterable[str] = (),
) -> CalibrationCost:
    """Cost of calibrating the support level on ``chunks`` with ``provider``/``model``.

    The texts are exactly those calibration would embed
    (:func:`coverage_core.stages.calibration.calibration_texts` with ``random_state``:
    probe sentences and their chunks without them, at most
    :data:`MAX_CALIBRATION_TEXTS`; none when the corpus cannot be
    calibrated). ``uncached`` keeps the texts the embedding cache does not
    hold (e.g. ``embeddings.cache.uncached_texts`` bound to an embedder and
    cache); without it every distinct text counts. ``counted`` are texts the
    caller's own estimate already includes (the passages and questions of the
    same run): a calibration text equal to one of them is embedded once, so
    it is not counted again.
    """
    already = set(counted)
    texts = [text for text in dict.fromkeys(calibration_texts(chunks, random_state)) if text not in already]
    sent = list(uncached(texts)) if uncached is not None else texts
    return CalibrationCost(len(sent), estimate_embedding_cost(approximate_tokens(sent), provider, model, table))


def estimate_llm_tokens(n_gaps: int, passage_chars: int) -> tuple[int, int]:
    """Approximate (input, output) tokens of a gap analysis with an LLM.

    One request per gap; ``passage_chars`` is the total length of the passages
    sent across all gaps (the least-covered passages, each cut to 1,200
    characters by the gap analysis).
    """
    if n_gaps <= 0:
        return 0, 0
    input_chars = passage_chars + n_gaps * _LLM_PROMPT_OVERHEAD_CHARS
    return math.ceil(input_chars / CHARS_PER_TOKEN), math.ceil(n_gaps * _LLM_REPLY_CHARS / CHARS_PER_TOKEN)


def estimate_llm_cost(
    input_tokens: int, output_tokens: int, model: str, table: pd.DataFrame, provider: str = "openai"
) -> CostEstimate:
    """Cost of an LLM run from approximate token counts."""
    price = _price(clean_price_table(table), provider, model, "llm")
    usd = None if price is None else (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
    return CostEstimate(int(input_tokens), int(output_tokens), usd, model)
