"""Core messages in the dashboard's words. No Streamlit.

The core writes its warnings and errors for the command line and the
dashboard alike, and some still name a command-line flag ("--question-column")
or a library detail ("n_neighbors=20 … LOF uses 7 neighbours"). Everything
the dashboard shows from the core passes through :func:`user_message`, so
the interface names its own controls instead. :data:`REWRITES` lists each
known core wording; the generic rules after it catch flags nobody listed yet.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ui.formats import markdown_text

# (pattern, replacement): a core wording and what the dashboard says instead.
REWRITES: tuple[tuple[re.Pattern, str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        # coverage_core/inputs/pdf.py, encrypted PDFs
        (r"\s*\(the PDF password field, or --pdf-password on the command line\)", " in the PDF password field"),
        (r"\s*\(or --pdf-password on the command line\)", ""),
        # coverage_core/inputs/questions.py, question column
        (r"name another column with --question-column", "choose another column under the file preview"),
        (r"for example with --question-column", "in the box under the file preview"),
        # coverage_core/checks/subquestions/config.py
        (r"\s*\(on the Configure page, or with --llm-model / --llm-base-url\)", " on the Configure page"),
        # coverage_core/offtopic/screener.py: the LOF score is reported but decides nothing
        (
            r"n_neighbors=\d+ is not below the number of questions \((\d+)\); LOF uses (\d+) neighbours\.",
            r"With \1 questions, each question's neighbourhood score compares it with the \2 others "
            "(a reported score only: it does not decide what is off-topic).",
        ),
        # coverage_core/inputs/vector_store.py: the dashboard finds the columns by name only
        (r"^((?:Qdrant|Chroma) collection .*); name the (text|document|page) column, one of: ",
         r"\1; give that column one of these names in the collection. Its columns: "),
        (r"; name the (text|vector|document|page) column, one of: ",
         r"; give that column one of these names in your file. Its columns: "),
        (r"; name the column that holds the embeddings\.",
         "; give the column that holds the embeddings one of the names listed above the uploader."),
        (r"; name the model that made them\.", "; choose the model that made them on the Configure page."),
        # coverage_core/checks/retrieval.py
        (r"^k = (\d+) is more than the (\d+) chunks, so k = (\d+) was used\.",
         r"You asked for \1 chunks per question, but there are only \2, so \3 were used."),
    )
)
_FLAG_IN_PARENTHESES = re.compile(r"\s*\([^()]*--[a-z][a-z-]+[^()]*\)")
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z-]+)")


def user_message(text: object) -> str:
    """``text`` (a core warning or error) without command-line flags or library internals."""
    message = str(text)
    for pattern, replacement in REWRITES:
        message = pattern.sub(replacement, message)
    message = _FLAG_IN_PARENTHESES.sub("", message)  # "(or --x on the command line)": the CLI's own hint
    return _FLAG.sub(lambda m: "the " + m.group(1).replace("-", " ") + " setting", message)


def user_messages(texts: Iterable[object]) -> list[str]:
    """:func:`user_message` of each, without repeats, in order."""
    return list(dict.fromkeys(user_message(text) for text in texts))


def shown_message(text: object) -> str:
    """:func:`user_message`, escaped for an element that reads Markdown (st.error, st.warning, st.info, …): a core
    message quotes file names, column names and cell values, which are user text."""
    return markdown_text(user_message(text))


def shown_messages(texts: Iterable[object]) -> list[str]:
    """:func:`shown_message` of each, without repeats, in order."""
    return [markdown_text(message) for message in user_messages(texts)]
