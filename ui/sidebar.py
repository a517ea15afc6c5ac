"""The sidebar every page shows: what is loaded, what is computed, and a reset."""

from __future__ import annotations

import streamlit as st

from ui import flow, state


def _reset() -> None:
    for key in list(st.session_state.keys()):
        del st.session_state[key]


def render() -> None:
    with st.sidebar:
        st.subheader("This session")
        documents = state.documents()
        questions = state.questions()
        inputs = flow.stored_inputs()
        if documents is None:
            st.caption("Documents: none yet")
        else:
            st.caption(f"Documents: {len(documents.documents)} readable" + (" (example)" if documents.source == "example" else ""))
        if questions is None:
            st.caption("Questions: none yet")
        else:
            st.caption(f"Questions: {len(questions.questions)} in column “{questions.question_column}”")
        if inputs is None:
            st.caption("Analysis: not run yet")
        else:
            stale = " (inputs changed: run again)" if flow.is_stale(inputs) else ""
            st.caption(f"Analysis: {len(inputs.corpus.chunks):,} chunks embedded{stale}")
        st.caption("Everything stays in this browser session; nothing is shared with other users.")
        st.button("Start over", key=state.W_RESET, on_click=_reset, help="Forget every upload, setting and result of this session.")
