"""Results: coverage metrics, clusters, documents, off-topic questions, near-duplicates, the 2-D map."""

import streamlit as st

from coverage_core.errors import CoverageError
from coverage_core.outputs import plots
from coverage_core.outputs.report import UNDERTESTED, UNTESTED, document_findings
from coverage_core.verdicts import UNDERTESTED_SHARE, Verdicts
from ui import columns, engine, exports, flow, formats, history, state, widgets
from ui.views import gaps as gaps_view, results as view

TABS = ["Clusters", "Documents", "Off-topic questions", "Near-duplicates", "Map"]
OFF_TOPIC_TAB = TABS[2]

flow.start_page("Results")
analysis = flow.require_analysis()
n_chunks = len(analysis.corpus.chunks)

# ------------------------------------------------------------------ the verdict first
widgets.show_headline(analysis)
verdict = Verdicts.from_analysis(analysis)
findings = document_findings(analysis, verdict)
for kind, title, icon, show in (
    (UNTESTED, "**Untested documents** (no on-topic question targets them):", ":material/description:", st.error),
    (UNDERTESTED, f"**Under-tested documents** (questions target them, but less than {UNDERTESTED_SHARE:.0%} of "
     "their passages are tested):", ":material/difference:", st.warning),
):
    named = [f for f in findings if f.verdict == kind]
    if named:
        st.markdown(title)
        show("\n".join(f"- {widgets.plain(f.document)}: {f.words}" for f in named), icon=icon)
if not findings:
    widgets.verdict_passed(analysis, "Every document has questions that test it.")
if verdict.gaps:
    st.markdown(f"**Top gaps: topics and untested documents** ({verdict.n_gaps} in all, {engine.GAP_ORDER}):")
    found = state.stored_stage(state.GAPS)  # suggestions already written for this analysis (the Gap page's)
    gapped = found.value if found is not None and found.key.source == flow.analysis_key() else None
    for gap in verdict.gaps:
        with st.container(border=True):
            st.warning(
                f"{widgets.plain(gap.topic)}: {gap.tested_share:.0%} of {formats.count(gap.size, 'passage')} tested",
                icon=":material/troubleshoot:",
            )
            outlook = gaps_view.gap_outlook(gapped, gap.key) if gapped is not None else None
            if outlook:
                st.caption(widgets.plain(outlook))
            # The link opens the Gap analysis at this gap: open, and scrolled to.
            st.page_link(flow.GAPS_PAGE, label=f"Suggest questions for “{widgets.plain(gap.topic)}” (Gap analysis)",
                         icon=":material/arrow_forward:", query_params={state.GAP_PARAM: gap.key})
else:
    widgets.verdict_passed(analysis, "No topic is a gap.")
if verdict.n_off_topic:
    st.button(
        f"Review the {formats.count(verdict.n_off_topic, 'off-topic question')}", key=state.W_REVIEW_OFF_TOPIC,
        on_click=state.put, args=(state.W_RESULTS_TABS, OFF_TOPIC_TAB), icon=":material/arrow_downward:",
        help="Opens the Off-topic questions tab below, where you can override the decision.",
    )

with st.expander("Tune topics and gaps (applies at once)"):
    try:
        auto_k = engine.default_k(n_chunks)
    except CoverageError:
        auto_k = None
    widgets.tuning_controls(n_chunks, auto_k)

with st.expander(engine.EXPERTS):  # the one place of the relative scores and their settings
    st.caption(engine.EXPERTS_NOTE)
    for name, value, sentence in engine.secondary_scores(analysis):
        st.markdown(f"**{formats.metric_label(name)} {formats.score(value)}** — {sentence}")
    widgets.expert_controls()

st.caption(
    f"{formats.count(len(analysis.corpus.documents), 'document')}, {formats.count(n_chunks, 'passage')} in "
    f"{formats.count(analysis.clustering.n_clusters, 'topic')}; "
    f"{formats.count(len(analysis.questions.questions), 'question')}, {verdict.n_off_topic:,} screened out as off-topic."
)

flow.show_warnings(view.warnings_beside_the_verdict(analysis))

with st.container(border=True):
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    run_label = left.text_input(
        "Label for this run (optional: a branch, a commit or a release)", key=state.W_SAVE_LABEL, max_chars=200,
        help="Runs saved under the same label can be followed on their own on the History page.",
    )
    if right.button("Save to history", key=state.W_SAVE_HISTORY, icon=":material/history:"):
        try:
            saved = history.record(analysis, run_label)
        except CoverageError as error:
            flow.show_error(error)
        else:
            st.success(widgets.plain(history.saved_sentence(saved, history.shown_target())))
            st.page_link("pages/10_history.py", label="Open the History", icon=":material/history:")

clusters_tab, documents_tab, outliers_tab, duplicates_tab, map_tab = st.tabs(
    TABS, key=state.W_RESULTS_TABS, on_change="rerun"
)

if clusters_tab.open:
    with clusters_tab:
        st.plotly_chart(plots.topic_verdict_bar(analysis.clusters, analysis.config.gaps))
        clusters = view.cluster_table(analysis)
        cluster_config = columns.topic_columns()
        if analysis.config.gaps.rule == "coverage":  # the gap verdict reads it: shown beside the tested share
            cluster_config["coverage"] = columns.score_column("coverage score")
        st.dataframe(columns.percents(clusters, view.SHARE_COLUMNS), hide_index=True, placeholder=columns.DASH,
                     column_order=view.cluster_columns(clusters, analysis.config.gaps.rule), column_config=cluster_config)
        widgets.csv_download("Download the topics (CSV)", clusters, "coverage-clusters.csv",
                             headers=exports.column_labels(cluster_config))

if documents_tab.open:
    with documents_tab:
        documents = view.document_table(analysis)
        low = documents[documents["is_low"] & ~documents["is_untested"] & ~documents["is_undertested"]]
        level = (f"with similarity of at least {formats.similarity(analysis.calibration.support_threshold)}"
                 if analysis.calibration.reliable else "whatever the similarity, since the level is not calibrated")
        st.caption(
            f"A passage is tested when a question retrieves it among its top "
            f"{formats.count(analysis.config.tested_k, 'passage')} {level}. Untested: no "
            "on-topic question targets the document. Under-tested: questions target it, but less than "
            f"{UNDERTESTED_SHARE:.0%} of its passages are tested."
        )
        if len(low):
            st.warning(
                f"{formats.count(len(low), 'document')} {formats.plural(len(low), 'is', 'are')} covered far less than "
                "the rest: untested or possibly misaligned "
                f"({formats.plural(len(low), 'it', 'they')} may not belong in this knowledge base)."
            )
        # Red marks the verdict (untested), not the median/MAD hint.
        st.plotly_chart(plots.document_verdict_bar(analysis.documents))
        documents = documents.drop(columns=["is_low", "is_untested", "is_undertested"])  # the verdict says it
        document_config = columns.document_columns()
        st.dataframe(columns.percents(documents, view.SHARE_COLUMNS), hide_index=True, placeholder=columns.DASH, column_config=document_config)
        widgets.csv_download("Download the documents (CSV)", documents, "coverage-documents.csv",
                             headers=exports.column_labels(document_config))

if outliers_tab.open:
    with outliers_tab:
        overrides = state.overrides()
        table = view.off_topic_table(analysis, overrides)
        flagged = table[table["off-topic"]]
        st.write(
            f"{len(flagged):,} of {formats.count(len(table), 'question')} {formats.plural(len(flagged), 'looks', 'look')} "
            f"off-topic (not about this knowledge base) and {formats.plural(len(flagged), 'is', 'are')} "
            "left out of coverage. Each says why, with the numbers. The off-topic score is above 0 exactly when a "
            "question is flagged; higher = more off-topic. Override the decision below; coverage updates at once."
        )
        show_all = st.toggle("Show every question, not only the off-topic ones", key=state.W_SHOW_ALL_QUESTIONS)
        st.dataframe(
            table if show_all else flagged,
            hide_index=True, placeholder=columns.DASH,
            column_config={
                "off-topic score": st.column_config.NumberColumn(format=formats.SCORE_FORMAT),
                "question": st.column_config.TextColumn(width="large"),
                "reason": st.column_config.TextColumn(width="medium"),
                "detail": st.column_config.TextColumn(width="large"),
                "best similarity": st.column_config.NumberColumn(format=formats.SIMILARITY_FORMAT),
            },
        )
        widgets.csv_download(
            "Download every question (CSV)", table, "coverage-questions.csv",
            help="All questions, not only the off-topic ones: off-topic score, decision and reason, your override, nearest "
            "document and best similarity to any passage (how well the knowledge base supports the question).",
        )
        texts = dict(zip(table["row"], table["question"]))
        rows = sorted(texts)

        def label(row: int) -> str:
            text = " ".join(str(texts.get(row, "")).split())
            return f"row {row}: {text[:90]}" + ("…" if len(text) > 90 else "")

        def save_overrides() -> None:
            state.set_overrides(
                st.session_state.get(state.W_FORCE_INCLUDE, []), st.session_state.get(state.W_FORCE_EXCLUDE, [])
            )

        state.seed_widget(state.W_FORCE_INCLUDE, sorted(r for r in overrides.include if r in texts))
        state.seed_widget(state.W_FORCE_EXCLUDE, sorted(r for r in overrides.exclude if r in texts))
        left, right = st.columns(2)
        left.multiselect(
            "Count these questions anyway (include)", rows, format_func=label, key=state.W_FORCE_INCLUDE,
            on_change=save_overrides, help="For questions wrongly screened out as off-topic.",
        )
        right.multiselect(
            "Leave these questions out (exclude)", rows, format_func=label, key=state.W_FORCE_EXCLUDE,
            on_change=save_overrides, help="For questions that should not count towards coverage.",
        )
        both = overrides.include & overrides.exclude
        if both:
            st.warning(f"Rows {', '.join(map(str, sorted(both)))} are both included and excluded; exclude wins.")

if duplicates_tab.open:
    with duplicates_tab:
        groups = view.duplicate_table(analysis)
        threshold = analysis.duplicate_groups.threshold
        if groups.empty:
            st.success(f"No near-duplicate questions (similarity ≥ {formats.similarity(threshold)}).")
        else:
            st.write(
                f"{formats.count(int(groups['questions'].sum()), 'question')} form {formats.count(len(groups), 'group')} "
                "of near-duplicates: every "
                f"question of a group has similarity ≥ {formats.similarity(threshold)} to the group's first question, its "
                "representative, so the others add next to no coverage."
            )
            st.dataframe(groups, hide_index=True, placeholder=columns.DASH, column_config={
                "row": st.column_config.NumberColumn("representative row"),
                "question": st.column_config.TextColumn("representative question", width="large"),
                "lowest similarity": st.column_config.NumberColumn(format=formats.SIMILARITY_FORMAT),
            })
            widgets.csv_download("Download the groups (CSV)", groups, "near-duplicate-groups.csv")
            heads = dict(zip(groups["row"], groups["question"]))
            head = st.selectbox(
                "Show the questions of one group", list(heads),
                format_func=lambda row: f"row {row}: {heads[row][:90]}" + ("…" if len(heads[row]) > 90 else ""),
            )
            st.dataframe(view.duplicate_members(analysis, head), hide_index=True, placeholder=columns.DASH, column_config={
                "question": st.column_config.TextColumn(width="large"),
                "similarity to the representative": st.column_config.NumberColumn(format=formats.SIMILARITY_FORMAT),
            })

if map_tab.open:
    with map_tab:
        method = st.selectbox(
            "Map method", ["tsne", "pca", "mds"], key=state.W_MAP_METHOD,
            format_func={"tsne": "t-SNE (default)", "pca": "PCA (fastest)", "mds": "MDS (cosine)"}.get,
            help="The map is computed once per data set and method; thresholds and K do not recompute it.",
        )
        try:
            projection = flow.projection_for(analysis, method)
        except CoverageError as error:
            flow.show_error(error)
        else:
            chunks, questions = plots.map_frames(analysis, projection)
            st.plotly_chart(
                plots.coverage_map(chunks, questions, None, projection.caption if projection.sampled else None),
            )
            if projection.sampled:
                st.caption(projection.caption)
            st.caption(
                "Chunks are coloured by cluster; questions are black diamonds, off-topic questions orange crosses. "
                "Distances on a 2-D map are approximate: the metrics use the full vectors."
            )
