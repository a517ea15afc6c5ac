"""One number format per quantity, shared by every page. No Streamlit.

The charts of :mod:`coverage_core.outputs.plots` print similarity thresholds with
two decimals, so every similarity and threshold the dashboard shows has two
too; relative coverage scores have three; shares are percentages.
A change is rounded to the digits shown *before* its sign is chosen, so no
card or table ever says "-0.000".
"""

from __future__ import annotations

import math
import re

from coverage_core.checks.answerability import MEASURE_NAMES
from coverage_core.outputs.gap_report import SUGGESTION_ORIGIN_WORDS, origin_words  # noqa: F401 (re-exported)
from coverage_core.wording import count, plural  # noqa: F401 (re-exported: the pages count with them)

SIMILARITY_DECIMALS = 2
SCORE_DECIMALS = 3
SIMILARITY_FORMAT = f"%.{SIMILARITY_DECIMALS}f"  # st.column_config / slider format strings
SCORE_FORMAT = f"%.{SCORE_DECIMALS}f"
SCORE_CHANGE_FORMAT = f"%+.{SCORE_DECIMALS}f"
NO_CHANGE = "no change"


def _fixed(value: float | None, decimals: int) -> str:
    if value is None or not math.isfinite(float(value)):
        return "—"
    return f"{float(value):.{decimals}f}"


def similarity(value: float | None) -> str:
    """A cosine similarity or a threshold on one: ``0.40``."""
    return _fixed(value, SIMILARITY_DECIMALS)


def score(value: float | None) -> str:
    """A relative coverage score (basic, balanced, …) or a statistic: ``0.734``."""
    return _fixed(value, SCORE_DECIMALS)


def p_value(value: float | None) -> str:
    """A p-value, to two significant digits: ``0.0031``, ``4.2e-07``."""
    if value is None or not math.isfinite(float(value)):
        return "—"
    return f"{float(value):.2g}"


def rounded(value: float, decimals: int) -> float:
    """``value`` rounded, with −0.0 made 0.0 (a change that rounds to zero has no sign)."""
    return round(float(value), decimals) + 0.0


def shown_difference(before: float, after: float, decimals: int = SCORE_DECIMALS) -> float:
    """``after − before`` of the values as shown (each rounded first), so never −0.000."""
    return rounded(rounded(after, decimals) - rounded(before, decimals), decimals)


def change(before: float, after: float, decimals: int = SCORE_DECIMALS) -> str:
    """``after − before`` of the values as shown: ``"+0.012"``, or "no change" when the shown values are equal."""
    difference = shown_difference(before, after, decimals)
    return NO_CHANGE if difference == 0 else f"{difference:+.{decimals}f}"


def share_change(before: float, after: float) -> tuple[str, str]:
    """A share after a change, in whole percent, and its change in percentage points: ``("45%", "+2.8 pts")``,
    as the HTML report says it (:func:`coverage_core.outputs.plots.style.percent_points`)."""
    from coverage_core.outputs.plots.style import percent_points

    return percent_points(before, after)


def rate_and_eta(done: int, total: int, seconds: float) -> str:
    """"35 per second, about 12 s left" once something is done, else ""."""
    if done <= 0 or seconds <= 0:
        return ""
    rate = done / seconds
    left = max(total - done, 0) / rate
    eta = f"about {left:.0f} s left" if left < 90 else f"about {left / 60:.0f} min left"
    return f"{rate:,.0f} per second, {eta}" if done < total else f"{rate:,.0f} per second"


def percent(value: float | None) -> str:
    """A share as a whole percentage: ``45%`` (``—`` when there is none)."""
    if value is None or not math.isfinite(float(value)):
        return "—"
    return f"{float(value):.0%}"


# Plain names first, the statistician's term after: cards, table columns and CSV headers share them.
MRR_LABEL = "First-hit rank score (MRR)"
POINT_BISERIAL_LABEL = MEASURE_NAMES["point_biserial_r"][:1].upper() + MEASURE_NAMES["point_biserial_r"][1:]


def metric_label(name: str) -> str:
    """A metric's plain name as the charts print it ("tested_share" -> "Tested share")."""
    from coverage_core.outputs.plots import METRIC_LABELS

    return METRIC_LABELS.get(name, name.replace("_", " "))


# Who wrote a suggested question: the words every output uses, kept once in the core.
ORIGIN_WORDS = SUGGESTION_ORIGIN_WORDS

# Every ASCII character that starts markup in Streamlit's Markdown: CommonMark and GitHub's extensions
# (images, links, autolinks, raw HTML, entities, tables, strikethrough), LaTeX ($), Streamlit's directives
# (":red[…]", ":material/…:", emoji shortcodes) and setext headings (=). CommonMark lets any ASCII
# punctuation be backslash-escaped, so each shows as itself.
MARKDOWN_SPECIAL = "\\`*_{}[]()<>#+-.!|~$:&=@^"
_MARKDOWN_ESCAPES = str.maketrans({c: "\\" + c for c in MARKDOWN_SPECIAL})
# GitHub's autolinks ("http://…", "www.…", "a@b.org") are found in the text after escapes are undone, so
# escaping cannot stop them: an invisible word joiner after "://"'s colon, "www" and "@" breaks each pattern.
WORD_JOINER = "\u2060"
_AUTOLINK_STARTS = re.compile(r"(\\:)(?=//)|(?i:\b(www))(?=\\\.)|(\\@)")


def markdown_text(text: object) -> str:
    """User text (a file name, a column name, a question, a topic) escaped for any Streamlit element that reads
    Markdown (st.markdown, captions, alerts, labels, expander titles, radio options): shown as written, never as
    markup or a link, so a "![x](http://host/beacon.png)" in a file is never an image the browser fetches."""
    escaped = str(text).translate(_MARKDOWN_ESCAPES)
    return _AUTOLINK_STARTS.sub(lambda match: match.group(0) + WORD_JOINER, escaped)
