"""Results: coverage metrics, clusters, documents, off-topic questions, near-duplicates, the 2-D map."""

import streamlit as st

from coverage_core import plots
from coverage_core.metrics import UNTESTED_SHARE
from coverage_core.gaps import rank_gaps
from coverage_core.errors import CoverageError
from ui import engine, flow, state, widgets

METRIC_HELP = {
    "basic": (
        "1 − the average distance from each chunk to its nearest test question. A relative score: "
        "compare test sets on the same corpus and settings; it is not a percentage of the knowledge base."
    ),
    "balanced": (
        "The average of the per-topic coverages, every topic weighted the same, so a small untested topic "
        "pulls it down. Relative, not absolute."
    ),
    "multi_threshold": (
        "Each topic is scored only by questions close to its centre (within the multi-cluster threshold); "
        "a topic no question is close to scores 0. Relative, not absolute."
    ),
    "multi_n": (
        "Each topic is scored only by questions that have it among their N nearest topics. "
        "Relative, not absolute."
    ),
    "weighted": (
        "The method's size-weighted per-topic coverage. It equals basic by construction (topics partition "
        "the chunks); shown because the method defines it. Relative, not absolute."
    ),
}
METRIC_ORDER = ("basic", "balanced", "multi_threshold", "multi_n", "weighted")
TABS = ["Clusters", "Documents", "Off-topic questions", "Near-duplicates", "Map"]

st.title("Results")
analysis = flow.require_analysis()
n_chunks = len(analysis.corpus.chunks)
widgets.show_headline(analysis)


def open_off_topic_tab() -> None:
    st.session_state[state.W_RESULTS_TABS] = "Off-topic questions"


# ------------------------------------------------------------------ what to do next
untested = analysis.documents[analysis.documents["is_untested"]].sort_values(["tested_share", "document"])
if len(untested):
    st.markdown(
        f"**Untested documents** (fewer than {UNTESTED_SHARE:.0%} of their passages are reached by a question):"
    )
    st.markdown("\n".join(
        f"- {widgets.plain(row.document)}: {row.tested_share:.0%} of {int(row.n_chunks)} passages tested"
        for row in untested.itertuples(index=False)
    ))
clusters_by_id = analysis.clusters.set_index("cluster")
ranked = rank_gaps(
    analysis.clusters["coverage"].to_numpy(), analysis.clusters["size"].to_numpy(), analysis.config.gaps,
    is_gap=analysis.clusters["is_gap"].to_numpy(dtype=bool),
)
if ranked:
    st.markdown(f"**Top gaps by topic** ({len(ranked)} in all, most urgent first):")
    st.markdown("\n".join(
        f"- {widgets.plain(clusters_by_id.loc[k, 'label'] or f'cluster {k}')}: "
        f"{clusters_by_id.loc[k, 'tested_share']:.0%} of {int(clusters_by_id.loc[k, 'size'])} passages tested"
        for k, _ in ranked[:3]
    ))
if len(untested) or ranked:
    st.page_link(flow.GAPS_PAGE, label="Suggest questions for the gaps (Gap analysis)", icon=":material/troubleshoot:")
n_off_topic = int(analysis.is_outlier.sum())
if n_off_topic:
    st.button(
        f"Review the {n_off_topic} off-topic question(s)", on_click=open_off_topic_tab,
        help="Opens the Off-topic questions tab below, where you can override the decision.",
    )

with st.expander("Tune clusters and thresholds (applies at once)"):
    try:
        auto_k = engine.default_k(n_chunks)
    except CoverageError:
        auto_k = None
    widgets.tuning_controls(n_chunks, auto_k)

n_outliers = int(analysis.is_outlier.sum())
st.caption(
    f"{len(analysis.corpus.documents)} documents, {n_chunks:,} chunks in {analysis.clustering.n_clusters} clusters; "
    f"{len(analysis.questions.questions):,} questions, {n_outliers} screened out as off-topic. "
    "The scores below are relative: compare test sets (or versions of one) on the same corpus and settings."
)
st.markdown("**Secondary scores**")

columns = st.columns(len(METRIC_ORDER))
for column, name in zip(columns, METRIC_ORDER):
    column.metric(plots.METRIC_LABELS[name], f"{analysis.metrics[name]:.3f}", help=METRIC_HELP[name], border=True)
st.caption("Weighted coverage equals basic coverage by construction; balanced weights every topic equally.")

for message in dict.fromkeys(analysis.warnings):
    st.warning(message)

clusters_tab, documents_tab, outliers_tab, duplicates_tab, map_tab = st.tabs(
    TABS, key=state.W_RESULTS_TABS, on_change="rerun"
)

if clusters_tab.open:
    with clusters_tab:
        st.plotly_chart(
            plots.cluster_coverage_bar(
                analysis.clusters,
                analysis.config.gaps.gap_threshold if analysis.config.gaps.rule == "coverage" else None,
            )
        )
        clusters = engine.cluster_table(analysis)
        st.dataframe(
            clusters,
            hide_index=True,
            column_config={
                "topic": st.column_config.TextColumn("topic", width="medium"),
                "share": st.column_config.NumberColumn("share of corpus", format="percent"),
                "coverage": st.column_config.ProgressColumn("coverage", min_value=0.0, max_value=1.0, format="%.3f"),
                "multi_threshold_coverage": st.column_config.NumberColumn("multi-threshold", format="%.3f"),
                "multi_n_coverage": st.column_config.NumberColumn("multi-N", format="%.3f"),
                "n_questions": st.column_config.NumberColumn("questions near it"),
                "n_tested": st.column_config.NumberColumn("passages tested"),
                "tested_share": st.column_config.ProgressColumn(
                    "share tested", min_value=0.0, max_value=1.0, format="percent"
                ),
                "is_gap": st.column_config.CheckboxColumn("gap"),
                "example passage": st.column_config.TextColumn("most central passage", width="large"),
            },
        )
        widgets.csv_download("Download the clusters (CSV)", clusters, "coverage-clusters.csv")

if documents_tab.open:
    with documents_tab:
        documents = engine.document_table(analysis)
        low = documents[documents["is_low"] & ~documents["is_untested"]]
        if len(low):
            st.warning(
                f"{len(low)} document(s) are covered far less than the rest: untested or possibly misaligned "
                "(they may not belong in this knowledge base)."
            )
        st.plotly_chart(plots.document_coverage_bar(analysis.documents))
        documents = documents.drop(columns=["is_low"])
        st.dataframe(
            documents,
            hide_index=True,
            column_config={
                "coverage": st.column_config.ProgressColumn("coverage", min_value=0.0, max_value=1.0, format="%.3f"),
                "n_chunks": st.column_config.NumberColumn("chunks"),
                "n_tested": st.column_config.NumberColumn("passages tested"),
                "tested_share": st.column_config.ProgressColumn(
                    "share tested", min_value=0.0, max_value=1.0, format="percent"
                ),
                "is_untested": st.column_config.CheckboxColumn("untested"),
            },
        )
        widgets.csv_download("Download the documents (CSV)", documents, "coverage-documents.csv")

if outliers_tab.open:
    with outliers_tab:
        overrides = state.overrides()
        table = engine.off_topic_table(analysis, overrides)
        flagged = table[table["off-topic"]]
        st.write(
            f"{len(flagged)} of {len(table)} questions look off-topic (not about this knowledge base) and are "
            "left out of coverage. Higher score = more off-topic. Override the decision below; coverage "
            "updates at once."
        )
        show_all = st.toggle("Show every question, not only the off-topic ones", key=state.W_SHOW_ALL_QUESTIONS)
        st.dataframe(
            table if show_all else flagged,
            hide_index=True,
            column_config={
                "outlier score": st.column_config.NumberColumn(format="%.3f"),
                "question": st.column_config.TextColumn(width="large"),
                "best similarity": st.column_config.NumberColumn(format="%.3f"),
            },
        )
        widgets.csv_download(
            "Download every question (CSV)", table, "coverage-questions.csv",
            help="All questions, not only the off-topic ones: off-topic score and decision, your override, nearest "
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
        groups = engine.duplicate_table(analysis)
        threshold = analysis.config.redundancy_threshold
        if groups.empty:
            st.success(f"No near-duplicate questions (similarity ≥ {threshold:.2f}).")
        else:
            st.write(
                f"{int(groups['questions'].sum())} questions form {len(groups)} group(s) of near-duplicates: every "
                f"question of a group has similarity ≥ {threshold:.2f} to the group's first question, its "
                "representative, so the others add next to no coverage."
            )
            st.dataframe(groups, hide_index=True, column_config={
                "row": st.column_config.NumberColumn("representative row"),
                "question": st.column_config.TextColumn("representative question", width="large"),
                "lowest similarity": st.column_config.NumberColumn(format="%.3f"),
            })
            widgets.csv_download("Download the groups (CSV)", groups, "near-duplicate-groups.csv")
            heads = dict(zip(groups["row"], groups["question"]))
            head = st.selectbox(
                "Show the questions of one group", list(heads),
                format_func=lambda row: f"row {row}: {heads[row][:90]}" + ("…" if len(heads[row]) > 90 else ""),
            )
            st.dataframe(engine.duplicate_members(analysis, head), hide_index=True, column_config={
                "question": st.column_config.TextColumn(width="large"),
                "similarity to the representative": st.column_config.NumberColumn(format="%.3f"),
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
            st.error(str(error))
        else:
            chunks, questions = plots.map_frames(analysis, projection)
            st.plotly_chart(
                plots.coverage_map(chunks, questions, analysis.metrics, projection.caption if projection.sampled else None),
            )
            if projection.sampled:
                st.caption(projection.caption)
            st.caption(
                "Chunks are coloured by cluster; questions are black diamonds, off-topic questions orange crosses. "
                "Distances on a 2-D map are approximate: the metrics use the full vectors."
            )
