"""History: every recorded run, the tested share and the verdicts over time, what changed between two runs (the
questions whose document changed among it), and the decisions on suggested questions a run recorded."""

import streamlit as st

from coverage_core.errors import CoverageError
from coverage_core.history import changes_since
from coverage_core.outputs.plots import history as plots
from ui import flow, formats, history, state, widgets
from ui.messages import shown_message
from ui.views import history as view

flow.start_page(
    "History",
    "Every recorded run of the analysis: is the test set keeping up with the knowledge base, which documents "
    "were added and are not tested, and what changed between any two runs.",
)


with st.expander("Where the history is kept", icon=":material/database:"):
    st.caption(f"This page reads, and the dashboard records into: {widgets.plain(history.shown_target())}")
    state.seed_widget(state.W_HISTORY_FILE, state.get(state.HISTORY_FILE) or "")
    left, right = st.columns(2)
    left.text_input(
        "History file on the server", key=state.W_HISTORY_FILE, on_change=history.keep_file_choice,
        placeholder="the server's default", help="A file the server can write; created when new. Empty: the "
        "server's own history.",
    )
    right.text_input(
        "Or a team database address", type="password", key=state.W_HISTORY_URL, on_change=history.keep_database_url,
        help="For example a PostgreSQL address with its user and password. Kept in this browser session's "
        "memory only: never written to disk, a report or a log, and shown with its password hidden.",
    )
    if history.uses_database_url():
        st.button("Use the history file instead", key=state.W_HISTORY_USE_FILE, on_click=history.forget_database_url)
    state.seed_widget(state.W_HISTORY_AUTO, history.automatic())
    st.toggle(
        "Record every analysis automatically", key=state.W_HISTORY_AUTO,
        on_change=history.keep_automatic_choice,
        help="Each analysis you run on Configure is recorded once, when it finishes.",
    )

if not history.exists():
    st.info(view.EMPTY_HISTORY)
    st.stop()
try:
    store = history.open_store()
except CoverageError as error:
    flow.show_error(error)
    st.stop()

try:
    try:
        runs = plots.runs_frame(store.runs())
    except CoverageError as error:
        flow.show_error(error)
        st.stop()
    if runs.empty:
        if store.damaged_runs:
            st.warning(shown_message(store.damaged_sentence()))
        st.info(view.EMPTY_HISTORY)
        st.stop()

    labels = view.labels_of(runs)
    label = view.ALL_LABELS
    if len(labels) > 1:
        if state.get(state.W_HISTORY_LABEL) not in labels:
            state.drop(state.W_HISTORY_LABEL)
        label = st.selectbox("Show", labels, format_func=view.label_option, key=state.W_HISTORY_LABEL)
    # Read first: a run whose parts are damaged is found here and left out of everything below, named once.
    timeline, timeline_error = None, None
    try:
        timeline = store.document_timeline(label or None)
    except CoverageError as error:
        timeline_error = error
    if store.damaged_runs:
        st.warning(shown_message(store.damaged_sentence()))
    shown = view.with_label(runs, label)
    shown = shown[~shown["run"].isin(list(store.damaged_runs))].reset_index(drop=True)
    if shown.empty:
        st.stop()

    st.subheader(view.share_sentence(shown), anchor=False)  # numbers and fixed words only

    st.plotly_chart(plots.tested_share_over_time(shown), key=state.W_HISTORY_CHART, on_select=lambda: history.pick_runs(shown),
                    selection_mode="points")

    st.header("What changed")
    choices = view.run_choices(shown)
    pair = view.default_pair(shown)
    if pair is None:
        st.info("One run so far: what changed is shown once a second run is recorded.")
    else:
        for widget, run in zip((state.W_HISTORY_EARLIER, state.W_HISTORY_LATER), pair):
            if state.get(widget) not in choices:
                state.put(widget, run)
        left, right = st.columns(2)
        earlier = left.selectbox("Earlier run", list(choices), format_func=choices.get, key=state.W_HISTORY_EARLIER,
                                 help="Or pick two points on the chart above.")
        later = right.selectbox("Later run", list(choices), format_func=choices.get, key=state.W_HISTORY_LATER)
        if earlier == later:
            st.info("Choose two different runs to see what changed between them.")
        else:
            first, second = view.ordered_pair(earlier, later)
            try:
                earlier_run = store.load(first)
                changes = changes_since(earlier_run, store.load(second), previous_run=first)
            except CoverageError as error:
                flow.show_error(error)
            else:
                # The Gap page offers replacement questions for the stale questions' changed passages.
                offered = history.keep_stale(earlier_run, changes)
                st.markdown(f"**From run {first} to run {second}:** {widgets.plain(changes.reason)}")
                untested = view.new_untested_sentence(changes)
                if untested:
                    st.markdown(f"**{untested}**")
                    st.error("\n".join(f"- {widgets.plain(name)}: {how} since run {first}, untested"
                                        for name, how in view.new_untested_documents(changes)),
                             icon=":material/description:")
                for heading, n in view.change_counts(changes):
                    if not n:
                        continue
                    st.subheader(f"{heading} ({n:,})", anchor=False)
                    if heading in ("Documents added", "Documents changed"):
                        which = "added" if heading == "Documents added" else "changed"
                        widgets.table(view.documents_table(changes, which), medium=("document",),
                                      percents=("share tested",))
                    elif heading == "Documents removed":
                        widgets.table(view.names_table(changes.documents_removed, "document"), medium=("document",))
                    elif heading.startswith("Questions"):
                        asked = changes.questions_added if heading == "Questions added" else changes.questions_removed
                        widgets.table(view.names_table(asked, "question"), large=("question",))
                    elif heading == view.DECISIONS_ADDED:
                        widgets.table(view.decisions_table(changes.decisions_added), large=("question",))
                    else:
                        lost = changes.topics_lost if heading.startswith("Topics that lost") else changes.topics_gained
                        widgets.table(view.topics_table(lost), large=("topic",),
                                      percents=("share tested before", "share tested after"))
                if not any(n for _, n in view.change_counts(changes)):
                    st.caption("The same documents and questions in both runs.")
                stale = view.stale_sentence(changes)  # numbers and fixed words only
                if changes.questions_stale:
                    st.subheader(f"{view.STALE_HEADING} ({view.stale_count(changes):,})", anchor=False)
                    st.markdown(stale)
                    widgets.table(view.stale_table(changes.questions_stale), large=("question",),
                                  medium=("document", "what happened"))
                    if offered:
                        st.page_link(flow.GAPS_PAGE, icon=":material/edit_note:",
                                     label="Write replacement questions for the changed passages (Gap analysis)")
                elif stale:
                    st.caption(stale)

    with st.expander("Decisions on suggested questions", icon=":material/checklist:"):
        if state.get(state.W_HISTORY_DECISIONS) not in choices:
            state.put(state.W_HISTORY_DECISIONS, list(choices)[-1])  # the latest run
        decided = st.selectbox("Run", list(choices), format_func=choices.get, key=state.W_HISTORY_DECISIONS)
        try:
            decisions = store.decisions(decided)
        except CoverageError as error:
            flow.show_error(error)
        else:
            st.caption(view.decisions_sentence(decided, decisions))  # numbers and fixed words only
            if decisions:
                widgets.table(view.decisions_table(decisions), large=("question",), medium=("suggested as",))

    st.header("Verdicts over time")
    st.plotly_chart(plots.verdict_counts_over_time(shown))

    st.header("Documents over time")
    if timeline_error is not None:
        flow.show_error(timeline_error)
    else:
        st.plotly_chart(plots.document_timeline_chart(timeline, shown))
        st.caption(
            f"{formats.count(len({name for name, *_ in timeline}), 'document')} in these runs; a marker where a "
            "document appeared, became tested or untested, or was removed."
        )
finally:
    store.close()
