"""The sidebar every page shows: what is loaded, what is computed, and a reset.

Each page draws it first (:func:`render`, through ``ui.flow.start_page``),
before it reads any input; a page that loads inputs then calls
:func:`refresh` (through ``ui.flow``, which imports this module, never the
other way round) to redraw what is loaded at once, so
during a long first run the sidebar already names the documents and
questions. The pages draw it rather than ``app.py`` because Streamlit may
run a page script without the entry script: with a ``pages/`` folder next
to ``app.py`` it does so until ``st.navigation`` has run in the server
process, and on every AppTest rerun.
"""

from __future__ import annotations

import threading

import streamlit as st

from ui import state, widgets

# The placeholder of this script run. Each session's script runs in its own
# thread, so one session never draws into another's sidebar.
_RUN = threading.local()


# How the documents came, after their count ("" for an upload of documents).
_ORIGINS = {"example": " (example)", "vectors": " (passages with vectors)", "saved": " (saved analysis)"}


def _reset() -> None:
    for key in list(st.session_state.keys()):
        del st.session_state[key]


def lines() -> list[str]:
    """What the sidebar says about this session, one caption each."""
    documents = state.documents()
    questions = state.questions()
    inputs = state.stored_inputs()
    said = []
    if documents is None:
        said.append("Documents: none yet")
    else:
        said.append(f"Documents: {len(documents.documents)} readable" + _ORIGINS.get(documents.source, ""))
    if questions is None:
        said.append("Questions: none yet")
    else:
        said.append(f"Questions: {len(questions.questions)} in column “{widgets.plain(questions.question_column)}”")
    if inputs is None:
        said.append("Analysis: not run yet")
    else:
        stale = " (inputs changed: run again)" if state.is_stale(inputs) else ""
        said.append(f"Analysis: {len(inputs.corpus.chunks):,} chunks embedded{stale}")
    return said


def _draw(slot) -> None:
    """One caption, a line per input: an ``st.empty`` holds one element, and each redraw replaces it."""
    slot.caption("  \n".join(lines()))


def _this_run():
    """What tells this script run from the last one in the same thread (the run context's fresh cursor table)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return None if ctx is None else ctx.cursors


def render() -> None:
    """Draw the sidebar of this page run (the first thing every page does)."""
    with st.sidebar:
        st.subheader("This session")
        _RUN.slot, _RUN.run = st.empty(), _this_run()
        _draw(_RUN.slot)
        st.caption("Everything stays in this browser session; nothing is shared with other users.")
        st.button("Start over", key=state.W_RESET, on_click=_reset, help="Forget every upload, setting and result of this session.")


def refresh() -> None:
    """Redraw what is loaded (no-op outside a page run that drew the sidebar)."""
    slot = getattr(_RUN, "slot", None)
    if slot is not None and getattr(_RUN, "run", None) is _this_run():  # never into an earlier run's sidebar
        _draw(slot)


def forget() -> None:
    """End of a page run: callbacks of the next run (before the sidebar is drawn) must not draw into this one."""
    _RUN.slot = _RUN.run = None
