"""The checks' page steps that run long work with a progress display: the dimension sweep (Fitness),
sub-questions (Sub-questions) and the chunking comparison (Retrieval).

Like :mod:`ui.flow`, whose resources (the embedder, the cache, the price table, the LLM's key) they use,
they call the core through :mod:`ui.engine` and the views, keep results in session state through
:mod:`ui.state`, and show a :class:`~coverage_core.errors.CoverageError` instead of raising it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import streamlit as st

from coverage_core.checks.runner import run_subquestion_check
from coverage_core.errors import CoverageError
from coverage_core.session import StageKey
from ui import engine, formats, state
from ui.flow import embedder_for, embedding_cache, llm_key, price_table, show_error
from ui.state import stored_inputs
from ui.views import (
    fitness as fitness_view,
    retrieval as retrieval_view,
    subquestions as subquestions_view,
)


# ---------------------------------------------------------------- dimension sweep
def sweep_embedder(config, model: str):
    """``embedder_at(d)``: the API embedder of ``config`` with ``model``, returning ``d`` dimensions."""
    config = dataclasses.replace(config, model=model)
    return lambda d: embedder_for(config, dimensions=d)


def sweep_estimate(config, model: str, texts: Sequence[str], dims: Sequence[int]):
    """What embedding ``texts`` once per size in ``dims`` through the API would cost (cached texts are not sent)."""
    return fitness_view.sweep_estimate(
        texts, dims, config.provider, model, sweep_embedder(config, model), embedding_cache(), price_table()
    )


def dimension_sweep_for(labels, use_api: bool):
    """The dimension sweep already run on the current inputs with these labels and API choice, else None."""
    return state.stage(state.DIMENSION_SWEEP, engine.sweep_key(stored_inputs(), labels, use_api))


def run_dimension_sweep(analysis, labels, use_api: bool):
    """Run the dimension sweep with a progress display and keep it; None after an error, which is shown.

    ``labels``: the answerability labels to score at each size, or None.
    ``use_api``: embed every text again at each smaller size through the
    OpenAI API (the model's own shorter embeddings); else the stored vectors
    are cut.
    """
    inputs = stored_inputs()
    config = inputs.embedding
    smaller = fitness_view.sweep_sizes(int(analysis.question_vectors.shape[1]))

    def compute():
        if not use_api:
            with st.spinner(f"Recomputing the best similarities at {len(smaller) + 1} sizes…"):
                return fitness_view.dimension_sweep(analysis, labels)
        with st.status(f"Embedding at {formats.count(len(smaller), 'smaller size')}…", expanded=True) as status:
            bar = st.progress(0.0, text="Starting…")
            embed_at = fitness_view.sweep_embed_at(
                [c.text for c in analysis.corpus.chunks], list(analysis.questions.texts),
                sweep_embedder(config, fitness_view.sweep_model(config)), embedding_cache(),
                lambda text, fraction: bar.progress(fraction, text=text),
            )
            sweep = fitness_view.dimension_sweep(analysis, labels, embed_at)
            status.update(label="Sweep done.", state="complete", expanded=False)
        return sweep

    try:
        return state.memo(state.DIMENSION_SWEEP, engine.sweep_key(inputs, labels, use_api), compute)
    except CoverageError as error:
        show_error(error)
        return None



def subquestions_key() -> StageKey:
    """What a decomposition depends on: the embedded inputs, the LLM, the number of sub-questions and k.

    Keyed by the embedded inputs first (:func:`subquestions_for_inputs` relies on that). Weights and the
    support threshold only rescore, so they are not in it.
    """
    from coverage_core.checks.subquestions import SubQuestionConfig

    return StageKey.of(
        stored_inputs().key, llm=llm_key(), max_sub_questions=SubQuestionConfig().max_sub_questions,
        k=int(state.settings().retrieval_k),
    )


def subquestions_result():
    """The sub-question result for the current inputs, LLM and k, if there is one."""
    return state.stage(state.SUBQUESTIONS, subquestions_key())


def break_into_subquestions(analysis, positions: Sequence[int], llm, previous):
    """Ask the LLM to break the questions at ``positions`` into sub-questions, showing progress.

    Calls :func:`coverage_core.checks.runner.run_subquestion_check`; the new questions
    are merged into ``previous`` (rescored together) and stored. Returns the
    result to show (``previous`` when the run failed). An error that made the
    core stop asking (a rejected key, a server down) is shown after the run.
    """
    from coverage_core.checks.subquestions import SubQuestionConfig

    key = subquestions_key()
    run_config = SubQuestionConfig(top_k=int(state.settings().retrieval_k))
    watched = subquestions_view.WatchedLLM(llm)
    result = previous
    with st.status(f"Breaking {formats.count(len(positions), 'question')} into sub-questions…", expanded=True) as status:
        bar = st.progress(0.0, text="Starting…")

        def progress(done: int, total: int) -> None:
            bar.progress(done / total, text=f"Question {done} of {total}")

        try:
            new = run_subquestion_check(
                analysis, list(positions), watched, embedder_for(stored_inputs()), embedding_cache(),
                config=run_config, progress=progress,
            )
        except CoverageError as error:
            status.update(label="Stopped.", state="error")
            show_error(error)
        else:
            config = previous.config if previous is not None else run_config
            result = state.put_stage(state.SUBQUESTIONS, key, subquestions_view.merge_subquestions(previous, new, config))
            ok = new.count("ok")
            status.update(
                label=f"{ok:,} of {formats.count(len(positions), 'question')} broken into sub-questions.",
                state="complete" if ok == len(positions) else "error", expanded=False,
            )
    if watched.fatal is not None:
        show_error(watched.fatal)
        st.caption("The questions finished before it are kept; fix the problem and run again for the rest.")
    return result


def rescore_subquestions(result, config):
    """``result`` scored with ``config`` (weights, threshold; no LLM call), stored when it changed."""
    from coverage_core.checks.subquestions import rescore_subquestions as rescore

    if config == result.config:
        return result
    return state.put_stage(state.SUBQUESTIONS, subquestions_key(), rescore(result, config))


# ---------------------------------------------------------------- chunking comparison
def chunking_comparison_for(analysis, grid, k: int, relevant_column) -> tuple[retrieval_view.ChunkingComparison | None, bool]:
    """The last chunking comparison and whether it was made with these inputs, grid, k, column and screening."""
    stored = state.stored_stage(state.CHUNKING_COMPARISON)
    if stored is None:
        return None, False
    key = engine.chunking_comparison_key(stored_inputs(), analysis, grid, k, relevant_column)
    return stored.value, stored.key == key


def compare_chunkings(analysis, grid, k: int, relevant_column, model, prices) -> retrieval_view.ChunkingComparison | None:
    """Run the chunking comparison with a progress display and keep it (None after an error, which is shown).

    ``model`` is the inputs' embedder when the caller built it already (None: built here); ``prices`` the
    price table for a paid provider, None for the local model.
    """
    inputs = stored_inputs()
    own_level = analysis.config.support_threshold is not None
    try:
        model = model or embedder_for(inputs)
        with st.status(f"Comparing {formats.count(len(grid), 'chunk configuration')}…", expanded=True) as status:
            bar = st.progress(0.0, text="Starting…")

            def progress(done: int, total: int, chunking, step: str) -> None:
                name = f"{chunking.chunk_size}/{chunking.chunk_overlap}"
                if step == "embedding":
                    text = (
                        f"Configuration {done + 1} of {total}: {name} (chunking, embedding, "
                        f"{'measuring' if own_level else 'calibrating the support level, measuring'})…"
                    )
                    status.update(label=text)
                else:
                    text = f"Configuration {done} of {total} done: {name}."
                    st.write(text)
                bar.progress(done / total if total else 1.0, text=text)

            result = retrieval_view.compare_chunkings(
                inputs, analysis, grid, k, relevant_column, model, embedding_cache(), prices, progress
            )
            status.update(label=f"Compared {formats.count(len(result.table), 'configuration')}.", state="complete", expanded=False)
    except CoverageError as error:
        show_error(error)
        return None
    key = engine.chunking_comparison_key(inputs, analysis, grid, k, relevant_column)
    return state.put_stage(state.CHUNKING_COMPARISON, key, result)
