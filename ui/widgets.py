"""Widgets shared by several pages: tuning sliders, persistent table editors, CSV downloads, progress.

Values that must outlive a page change live in :class:`ui.state.Settings`;
widgets are seeded from it and write back through ``on_change`` callbacks,
which run before the rerun, so the page computes with the new value.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import pandas as pd
import streamlit as st

from coverage_core.languages import UNDETERMINED
from coverage_core.outputs.report import calibration_warning
from coverage_core.stages.calibration import DEFAULT_SUPPORT_THRESHOLD
from coverage_core.verdicts import Verdicts, verdict_doubt
from ui import columns as columns_, engine, exports, formats, state
from ui.columns import DASH
from ui.settings import DEFAULT_STRICTNESS, STRICTNESS_RANGE

HELP_K = (
    "How many topics (K-means clusters) the chunks are grouped into. Automatic picks K from the number "
    "of chunks. Changing K re-clusters from the stored vectors: nothing is embedded again."
)
K_KEEPS_OFF_TOPIC = (
    "Changing K does not change which questions are off-topic: that decision compares each question with "
    "the passages and the support level, not with the topics."
)
HELP_STRICTNESS = (
    "How readily a question is called off-topic (not about this knowledge base). Higher screens out "
    "more questions. Off-topic questions do not count towards coverage."
)
HELP_MULTI_THRESHOLD = (
    "For the nearby-topic score only: a question counts for every topic whose centre is at most this far from it "
    "(0: the same meaning, 1: unrelated). Nothing else on the pages changes with it."
)
HELP_MULTI_N = "For the nearest-topics score only: each question counts for this many of its closest topics."
HELP_GAP = (
    "Used when gaps are decided by the coverage score (a relative score, for method experts): a topic scoring "
    "below this is a gap."
)
HELP_GAP_RULE = (
    "Too little tested: a topic is a gap when too few of its passages are reached by any question. Coverage "
    "score: a topic is a gap when its relative coverage score is low (for method experts)."
)
HELP_TESTED_SHARE_CUT = "A topic is a gap when less than this share of its passages is reached by a question."
HELP_SUPPORT = (
    "How similar a question and a passage must be for the question to count as testing that passage. "
    "Automatic calibrates it on your documents for this embedding model; set it yourself to be stricter "
    "(higher) or more lenient (lower)."
)
GAP_RULE_LABELS = {"tested_share": "too little of it is tested", "coverage": "its coverage score is low"}
DEFAULT_SUPPORT = DEFAULT_SUPPORT_THRESHOLD


def _sync(widget_key: str, field: str, convert: Callable = lambda v: v) -> None:
    state.update_settings(**{field: convert(st.session_state[widget_key])})


def _synced(widget, widget_key: str, field: str, initial, convert: Callable = lambda v: v, **kwargs):
    state.seed_widget(widget_key, initial)
    return widget(key=widget_key, on_change=_sync, args=(widget_key, field, convert), **kwargs)


def _sync_auto(auto_key: str, field: str, value_key: str) -> None:
    if st.session_state[auto_key]:
        state.update_settings(**{field: None})
    else:
        state.update_settings(**{field: st.session_state.get(value_key)})


def tuning_controls(n_chunks: int | None, auto_k: int | None) -> None:
    """K, strictness, the gap rule and its cut. Changes apply immediately. (The settings of the relative scores
    are :func:`expert_controls`, kept with those scores.)"""
    settings = state.settings()
    left, right = st.columns(2)
    with left:
        k_max = max(2, min(200, n_chunks or 200))
        k_value = min(settings.n_clusters or auto_k or 10, k_max)
        state.seed_widget(state.W_K, k_value)
        if st.session_state[state.W_K] > k_max:
            st.session_state[state.W_K] = k_max
        auto = _auto_toggle(state.W_AUTO_K, "Automatic number of topics", settings.n_clusters is None,
                            "n_clusters", state.W_K)
        if auto_k is not None:
            st.caption(
                f"Automatic picks {auto_k} topics" + (f" for {formats.count(n_chunks, 'passage')}." if n_chunks else ".")
            )
        st.slider(
            "Number of topics (K)", min_value=1, max_value=k_max, step=1, key=state.W_K,
            disabled=auto, help=HELP_K + " " + K_KEEPS_OFF_TOPIC,
            on_change=_sync, args=(state.W_K, "n_clusters", int),
        )
        st.caption(K_KEEPS_OFF_TOPIC)
        _auto_toggle(state.W_AUTO_STRICTNESS, "Default screening strictness", settings.strictness is None,
                     "strictness", state.W_STRICTNESS)
        state.seed_widget(state.W_STRICTNESS, settings.strictness if settings.strictness is not None else DEFAULT_STRICTNESS)
        st.slider(
            "Screening strictness", min_value=STRICTNESS_RANGE[0], max_value=STRICTNESS_RANGE[1],
            step=STRICTNESS_STEP, key=state.W_STRICTNESS, help=HELP_STRICTNESS,
            disabled=st.session_state[state.W_AUTO_STRICTNESS],
            on_change=_sync, args=(state.W_STRICTNESS, "strictness", float),
        )
    with right:
        _synced(st.radio, state.W_GAP_RULE, "gap_rule", settings.gap_rule, str,
                label="A topic is a gap when", options=list(GAP_RULE_LABELS), format_func=GAP_RULE_LABELS.get,
                help=HELP_GAP_RULE)
        if state.settings().gap_rule == "tested_share":
            _synced(st.slider, state.W_TESTED_SHARE_CUT, "tested_share_cut", float(settings.tested_share_cut), float,
                    label="Gap when less than this share of a topic is tested", min_value=0.05, max_value=1.0,
                    step=0.05, format="percent", help=HELP_TESTED_SHARE_CUT)
        else:  # the cut of the other rule waits in the settings until that rule is chosen again
            _synced(st.slider, state.W_GAP_THRESHOLD, "gap_threshold", float(settings.gap_threshold), float,
                    label="Gap when the topic's coverage score is below", min_value=0.0, max_value=1.0, step=0.01,
                    help=HELP_GAP)


def expert_controls() -> None:
    """The settings of the nearby-topic and nearest-topics scores (relative scores, for method experts only:
    nothing else depends on them). Changes apply immediately."""
    settings = state.settings()
    left, right = st.columns(2)
    with left:
        _synced(st.slider, state.W_MULTI_THRESHOLD, "multi_threshold", float(settings.multi_threshold), float,
                label="Nearby-topic score: how far a question may be from a topic's centre", min_value=0.05,
                max_value=1.0, step=0.01, help=HELP_MULTI_THRESHOLD)
    with right:
        _synced(st.slider, state.W_MULTI_N, "multi_n", int(settings.multi_n), int,
                label="Nearest-topics score: topics each question counts for", min_value=1, max_value=10, step=1,
                help=HELP_MULTI_N)


def support_controls(calibrated: float | None) -> None:
    """The support level: automatic (calibrated; shown once known) or a value the user sets (0.05–1.0)."""
    settings = state.settings()
    auto = _auto_toggle(state.W_AUTO_SUPPORT, "Automatic support level (calibrated on your documents)",
                        settings.support_threshold is None, "support_threshold", state.W_SUPPORT)
    if auto:
        st.caption(
            f"Calibrated level for this model and these documents: {formats.similarity(calibrated)}." if calibrated is not None
            else "The level is calibrated on your documents when you run the analysis."
        )
    initial = settings.support_threshold if settings.support_threshold is not None else (calibrated or DEFAULT_SUPPORT)
    state.seed_widget(state.W_SUPPORT, round(min(max(float(initial), 0.05), 1.0), 2))
    st.slider(
        "Support level (similarity a question needs to reach a passage)", min_value=0.05, max_value=1.0,
        step=0.01, key=state.W_SUPPORT, disabled=auto, help=HELP_SUPPORT,
        on_change=_sync, args=(state.W_SUPPORT, "support_threshold", float),
    )


def _auto_toggle(key: str, label: str, is_auto: bool, field: str, value_key: str) -> bool:
    state.seed_widget(key, is_auto)
    return st.toggle(label, key=key, on_change=_sync_auto, args=(key, field, value_key))


STRICTNESS_STEP = 0.05
# The price table's columns in words (the core's field names stay the table's keys).
PRICE_COLUMNS = {
    "provider": st.column_config.TextColumn("provider"),
    "model": st.column_config.TextColumn("model"),
    "kind": st.column_config.TextColumn("kind"),
    "usd_per_1m_input": st.column_config.NumberColumn("US$ per million input tokens", format="%.3f", min_value=0.0),
    "usd_per_1m_output": st.column_config.NumberColumn("US$ per million output tokens", format="%.3f", min_value=0.0),
}


def persistent_editor(
    base_key: str,
    edited_key: str,
    widget_key: str,
    initial: Callable[[], pd.DataFrame],
    normalize: Callable[[pd.DataFrame], pd.DataFrame] = lambda f: f,
    **editor_kwargs,
) -> pd.DataFrame:
    """``st.data_editor`` whose edits survive reruns and page changes.

    The editor shows ``base`` and keeps the user's edits in its widget state;
    its output is stored under ``edited_key`` on every run. When the widget
    state is gone (the user visited another page), the last output becomes
    the new base, so nothing typed is lost.
    """
    base = state.get(base_key)
    if base is None:
        base = normalize(initial())
        state.put(base_key, base)
    elif widget_key not in st.session_state and state.get(edited_key) is not None:
        base = normalize(state.get(edited_key))
        state.put(base_key, base)
    editor_kwargs.setdefault("placeholder", DASH)  # a missing value reads "—", never "None"
    edited = st.data_editor(base, key=widget_key, **editor_kwargs)
    edited = normalize(pd.DataFrame(edited))
    state.put(edited_key, edited)
    return edited


def reset_editor(base_key: str, edited_key: str, widget_key: str, frame: pd.DataFrame | None) -> None:
    """Replace an editor's table (e.g. new suggestions); its pending edits go with the old table."""
    state.drop(widget_key, edited_key)
    if frame is None:
        state.drop(base_key)
    else:
        state.put(base_key, frame)


def table(
    frame: pd.DataFrame,
    *,
    medium: tuple[str, ...] = (),
    large: tuple[str, ...] = (),
    scores: tuple[str, ...] = (),
    percents: tuple[str, ...] = (),
    bars: tuple[str, ...] = (),
    columns: dict | None = None,
    **kwargs,
):
    """``st.dataframe`` without its index, its columns formatted by what they hold.

    ``medium`` and ``large`` are text columns of that width, ``scores``
    numbers with three decimals (:data:`ui.formats.SCORE_FORMAT`),
    ``percents`` shares shown as whole percentages and ``bars`` shares drawn
    as progress bars from 0 to 100% (both converted by :func:`ui.columns.percents`);
    ``columns`` adds or overrides column configs by name (a header in words,
    another format). A missing value reads "—".
    """
    frame = columns_.percents(frame, (*percents, *bars))
    config = {name: st.column_config.TextColumn(width="medium") for name in medium}
    config.update({name: st.column_config.TextColumn(width="large") for name in large})
    config.update({name: st.column_config.NumberColumn(format=formats.SCORE_FORMAT) for name in scores})
    config.update({name: columns_.percent_column(name) for name in percents})
    config.update({name: columns_.percent_column(name, bar=True) for name in bars})
    config.update(columns or {})
    kwargs.setdefault("placeholder", DASH)  # a missing value (a text file's page, a query's topic) reads "—"
    return st.dataframe(frame, hide_index=True, column_config=config, **kwargs)


def csv_download(
    label: str,
    table: pd.DataFrame | Callable[[], bytes],
    file_name: str,
    *,
    key: str | None = None,
    help: str | None = None,
    headers: dict | None = None,
) -> None:
    """A button that downloads ``table`` as CSV through :func:`coverage_core.outputs.safe_csv.to_safe_csv`.

    A frame's columns get human headers in the file (:func:`ui.exports.table_csv`; ``headers`` gives the
    page's own labels, e.g. :func:`ui.exports.column_labels` of its ``column_config``); the frame is untouched.

    ``table`` is a frame, or a function returning finished CSV bytes (the
    improved test set, which keeps the user's delimiter). This replaces
    Streamlit's own table download, turned off in .streamlit/config.toml: that
    one neither quotes a lone carriage return nor neutralises formulas.
    """
    build = table if callable(table) else functools.partial(exports.table_csv, table, headers)
    st.download_button(
        label,
        data=build,  # a function: the file is built only when the button is clicked
        file_name=file_name,
        mime="text/csv",
        key=key or f"download-{file_name}",
        help=help,
        on_click="ignore",  # no rerun: other buttons keep their files, nothing is recomputed
    )


def file_download(column, label: str, data, file_name: str, mime: str, *, key: str, help: str | None = None) -> None:
    """A download button in ``column`` for finished bytes or a function building them when clicked."""
    column.download_button(
        label, data=data, file_name=file_name, mime=mime, key=key, help=help,
        on_click="ignore",  # no rerun: the other buttons keep their files, nothing is recomputed
    )


# ---------------------------------------------------------------- scores
# The relative scores shown side by side (the tested share has its own card).
RELATIVE_SCORES = ("basic", "balanced", "multi_threshold", "multi_n")


def score_card(column, name: str, before: float, after: float, help: str) -> None:
    """A relative score after a change, with its change rounded as shown (never "-0.000")."""
    change = formats.change(before, after)
    unchanged = change == formats.NO_CHANGE
    column.metric(
        formats.metric_label(name), formats.score(after), delta=change, border=True, help=help,
        delta_color="off" if unchanged else "normal", delta_arrow="off" if unchanged else "auto",
    )


def share_card(column, name: str, before: float, after: float, help: str) -> None:
    """A share (the tested share) after a change, in percent, its change in percentage points as shown."""
    shown, change = formats.share_change(before, after)
    unchanged = change == formats.NO_CHANGE
    column.metric(
        formats.metric_label(name), shown, delta=change, border=True, help=help,
        delta_color="off" if unchanged else "normal", delta_arrow="off" if unchanged else "auto",
    )


def tested_share_card(before: float, after: float, shares_in_words: str) -> None:
    """The tested share ``after`` a change and its change from ``before`` (:func:`share_card`), on a card a third of
    the page wide; its help is ``shares_in_words`` (the sentence naming both shares), then what its points are."""
    card, _ = st.columns([1, 2])
    share_card(card, "tested_share", before, after, help=f"{shares_in_words} Points are percentage points.")


def score_columns(names: tuple[str, str]) -> dict:
    """Column formats of a before/after table of relative scores."""
    return {
        names[0]: st.column_config.NumberColumn(format=formats.SCORE_FORMAT),
        names[1]: st.column_config.NumberColumn(format=formats.SCORE_FORMAT),
        "change": st.column_config.NumberColumn(format=formats.SCORE_CHANGE_FORMAT),
    }


# ---------------------------------------------------------------- headline
def plain(text: object) -> str:
    """User text (a file name, a topic) escaped for st.markdown: shown as written, never as markup
    (:func:`ui.formats.markdown_text`)."""
    return formats.markdown_text(text)


def support_sentence(analysis) -> str:
    """What *tested* means and where the support level comes from, in one or two plain sentences (the headline's
    :attr:`~coverage_core.verdicts.Verdicts.tested_meaning` with the level's origin); when it is not calibrated,
    that the level then judges off-topic questions only (tested passages and documents read the ranking alone)."""
    calibration = analysis.calibration
    support_threshold = formats.similarity(calibration.support_threshold)
    meaning = Verdicts.from_analysis(analysis, top=0).tested_meaning
    if not calibration.reliable:
        reaches = f"a question reaches a passage when their similarity is at least {support_threshold}."
        return f"{meaning} Off-topic questions are still judged by similarity: {reaches}".strip()
    origin = engine.support_origin(calibration)
    if meaning:
        return f"{meaning[:-1]} ({origin})."
    return f"A question reaches a passage when their similarity is at least {support_threshold}, {origin}."


def _without_restating(warning: str) -> str:
    """:func:`~coverage_core.outputs.report.calibration_warning` without a first sentence that only says again
    that the level is not calibrated (the box's title says it)."""
    first, _, rest = warning.partition(". ")
    lowered = first.lower()
    restates = lowered.startswith("the support level") and "calibrated" in lowered and "because" not in lowered
    return rest if restates and rest else warning


def headline_cautions(analysis) -> list[str]:
    """The headline's cautions but the calibration's, which :func:`show_headline` says once in its own box."""
    verdicts = Verdicts.from_analysis(analysis, top=0)
    calibration = () if verdicts.calibration_reliable else verdicts.leading_cautions[:1]
    return [c for c in (*verdicts.leading_cautions, *verdicts.offtopic_cautions) if c not in calibration]


def show_headline(analysis) -> None:
    """The answer, short, as the first thing under a page title; the cautions under it, then what *tested* means.

    The headline is the figures' one sentence (:attr:`~coverage_core.verdicts.Verdicts.figures`), and under
    it, when too few questions can test the whole knowledge base, the most they can test (its reason in the
    help). When τ could not be calibrated, one warning above it says so, why, and that every figure rests on
    the model's default level; it is said nowhere else on the page. The other cautions (a model that does not
    fit the texts, questions in another language, less sure off-topic flags) follow the headline in one box.
    """
    warning = calibration_warning(analysis)
    if warning:
        st.warning(f"**The support level is not calibrated.** {plain(_without_restating(warning))}",
                   icon=":material/warning:")
    verdicts = Verdicts.from_analysis(analysis, top=0)
    st.subheader(verdicts.figures, anchor=False)  # numbers and fixed words only
    if verdicts.ceiling:  # read beside the share it caps, before any caution
        st.caption(verdicts.ceiling, help=verdicts.ceiling_detail)
    cautions = headline_cautions(analysis)
    if cautions:  # the core's sentences: numbers, language and model names, fixed words
        st.info("\n".join(f"- {plain(caution)}" for caution in cautions), icon=":material/info:")
    st.caption(plain(support_sentence(analysis)))


def verdict_passed(analysis, sentence: str, doubt: str = "") -> None:
    """A verdict that found nothing: a tick when τ was calibrated for these documents and questions; otherwise
    a neutral note that it may be wrong, and why (:func:`~coverage_core.verdicts.verdict_doubt`, or ``doubt``
    when the verdict reads other texts than the test questions, such as a query log)."""
    doubt = doubt or verdict_doubt(analysis)
    if not doubt:
        st.success(sentence, icon=":material/task_alt:")
    else:
        st.info(f"{sentence} This may be wrong: {doubt[:1].lower()}{doubt[1:]}", icon=":material/help:")


def language_table(shares, noun: str) -> pd.DataFrame:
    """``shares`` (:class:`~coverage_core.languages.LanguageShare`) as "Language | Share of the <noun> | <Noun>"."""
    return pd.DataFrame({
        "Language": [share.name for share in shares],
        f"Share of the {noun}": [formats.percent(share.share) for share in shares],
        noun.capitalize(): [share.n_texts for share in shares],
    })


def show_languages(profile) -> None:
    """The languages of the documents and of the questions (a :class:`~coverage_core.languages.LanguageProfile`),
    a small table each, and how many texts were too short to tell."""
    st.subheader("Languages", anchor=False)
    st.caption("Each document's language is read on a few samples of its text; a document's share counts its "
               "characters, a question's share counts questions.")
    for noun, codes, shares in (("documents", profile.document_languages, profile.document_shares),
                                ("questions", profile.question_languages, profile.question_shares)):
        if not codes:
            continue
        st.dataframe(language_table(shares, noun), hide_index=True)
        n_unknown = sum(code == UNDETERMINED for code in codes)
        if n_unknown:
            verb, whose = ("is", "its") if n_unknown == 1 else ("are", "their")
            st.caption(f"{n_unknown} of {len(codes)} {noun} {verb} too short to tell {whose} language.")


# ---------------------------------------------------------------- gaps
def gap_card(card) -> None:
    """One gap's suggestions (a :class:`ui.views.gaps.GapCard`): each question with who wrote it and its source,
    or why there is none; then the written questions that were dropped, and why, in an expander."""
    if card.themes:
        st.caption(f"Themes: {plain(', '.join(card.themes))}.")
    if card.suggestions:
        st.markdown("\n".join(
            f"- {plain(text)} — *{origin}*" + (f", from {plain(document)}" if document else "")
            for text, origin, document in card.suggestions
        ))
        st.caption("Tick **accept** on the ones to add under *Improve the test set* below.")
    else:
        st.info(plain(card.note), icon=":material/info:")
    if card.dropped:
        n = len(card.dropped)
        with st.expander(f"{formats.count(n, 'written question')} dropped, and why", type="compact"):
            st.markdown("\n".join(f"- {plain(text)} — {plain(reason)}" for text, reason in card.dropped))


def scroll_to(key: str) -> None:
    """Scroll the page to the element with widget key ``key`` once it is drawn (a key, never user text),
    leaving room above it for the page's header bar."""
    selector = json.dumps(f".st-key-{key}")
    st.html(
        "<script>(() => { let tries = 0; const timer = setInterval(() => {"
        f" const target = document.querySelector({selector});"
        " if (target || ++tries > 100) { clearInterval(timer);"
        " if (target) { target.style.scrollMarginTop = '5rem'; target.scrollIntoView({block: 'start'}); } }"
        " }, 100); })();</script>",
        unsafe_allow_javascript=True,
    )
