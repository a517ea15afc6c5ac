"""The bundled local model (SmolLM2-135M-Instruct on llama.cpp), end to end through the real openai client.

Its questions differ from one CPU to another, so these tests check what
must hold whatever it writes: every kept question passes the keep rule
when checked again here, every dropped one says why, every gap has
suggestions or a note, and the LLM features answer or fail in one sentence.
"""

from __future__ import annotations

import urllib.error
import urllib.request

import numpy as np
import pytest

from coverage_core.errors import ProviderError
from coverage_core.suggest.gaps import GapConfig, analyze_gaps
from coverage_core.suggest.llm import ChatClient, LLMConfig
from coverage_core.suggest.local_model import LOCAL_MODEL, LocalModelServer, local_model_available, local_model_path
from coverage_core.suggest.writing import WritingConfig
from coverage_core.validation import unit_rows
from tests.test_gaps import (
    CENTROIDS,
    COVERAGE,
    DOCUMENTS,
    LABELS,
    MIN_DISTANCES,
    TEXTS,
    VECTORS,
    _embed_by_words,
    below,
)

pytestmark = pytest.mark.slow  # every test runs the real model

# Similarities recomputed here may differ from the run's in the last float32 digits (bf16 on AMX machines).
SIMILARITY_TOLERANCE = 1e-3


@pytest.fixture(scope="module")
def local_server():
    with LocalModelServer(n_threads=2) as server:
        yield server


def test_the_model_ships_in_the_installed_packages():
    path = local_model_path()
    assert path is not None and path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert local_model_available()


def test_the_server_listens_on_loopback_only_and_demands_its_own_key(local_server):
    assert local_server.base_url.startswith("http://127.0.0.1:")
    config = local_server.config()
    assert config.api_key not in repr(local_server) and config.api_key not in repr(config)
    stranger = ChatClient(LLMConfig(model=LOCAL_MODEL, base_url=local_server.base_url, api_key="guess", max_retries=0))
    with pytest.raises(ProviderError) as caught:
        stranger.complete_text("You answer.", "Say hello.")
    assert caught.value.kind == "auth" and "guess" not in str(caught.value)
    with pytest.raises(urllib.error.HTTPError) as refused:  # no key sent at all: refused too
        urllib.request.urlopen(local_server.base_url + "/models", timeout=30)
    assert refused.value.code == 401


def test_the_model_answers_text_and_json_through_the_openai_client(local_server):
    client = local_server.client()
    text = client.complete_text("You write one quiz question about a passage.",
                                "Passage: Koalas eat eucalyptus leaves.\n\nWrite one question.", max_tokens=32)
    assert isinstance(text, str) and text.strip()
    # The 135M model samples (temperature 0.2) and now and then writes no JSON twice in a row; that must
    # come back as one sentence, and of three tries at least one must give a JSON value.
    values = []
    for _ in range(3):
        try:
            values.append(client.complete_json("Reply with JSON only.", 'Give {"animal": "<an animal>"} for a koala.'))
            break
        except ProviderError as failed:
            assert failed.kind == "bad_response" and "did not return valid JSON" in str(failed)
            assert "\n" not in str(failed)
    assert values and isinstance(values[0], (dict, list))


def test_written_questions_on_the_example_hold_the_keep_rule(example_analysis):
    from coverage_core.embeddings import make_embedder

    gaps = example_analysis.gaps
    assert gaps, "the example has gaps"
    tau = example_analysis.calibration.support_threshold
    chunks = unit_rows(np.asarray(example_analysis.corpus.vectors, dtype=np.float32))
    existing = unit_rows(np.asarray(example_analysis.question_vectors, dtype=np.float32))
    written = [s for gap in gaps for s in gap.suggestions if s.origin == "local"]
    assert written, "the bundled model kept no question on the example"
    vectors = unit_rows(np.asarray(make_embedder("local").embed([s.text for s in written]), dtype=np.float32))
    top_k = WritingConfig().top_k
    for suggestion, vector in zip(written, vectors):
        gap = next(g for g in gaps if g.cluster == suggestion.cluster)
        assert suggestion.chunk in gap.passages and suggestion.kept and suggestion.reason == ""
        assert suggestion.text.rstrip().endswith("?")
        similarities = chunks @ vector
        assert similarities[suggestion.chunk] >= tau - SIMILARITY_TOLERANCE
        assert np.count_nonzero(similarities > similarities[suggestion.chunk] + SIMILARITY_TOLERANCE) < top_k
        assert float(np.max(existing @ vector)) < WritingConfig().duplicate_similarity + SIMILARITY_TOLERANCE
        assert suggestion.document == example_analysis.corpus.chunks[suggestion.chunk].document
    for gap in gaps:
        assert any(s.text for s in gap.suggestions) or gap.note
        assert all(not s.kept and s.reason for s in gap.dropped)


def test_the_llm_suggestion_path_runs_against_the_local_model(local_server):
    gaps, warnings = analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [], GapConfig(),
        local_server.client(), embed=_embed_by_words, support_threshold=0.5, is_gap=below(COVERAGE),
    )
    assert len(gaps) == 2
    for gap in gaps:
        assert gap.suggestions and all(s.origin in ("llm", "draft") and s.text for s in gap.suggestions)
        for suggestion in gap.suggestions:
            if suggestion.origin == "llm" and suggestion.chunk is not None:  # checked against its passage
                assert float(_embed_by_words([suggestion.text])[0] @ VECTORS[suggestion.chunk]) > 0
    for warning in warnings:  # a weak model's failure is one plain sentence
        assert "\n" not in warning and "Traceback" not in warning and warning.endswith(".")


def test_sub_questions_run_against_the_local_model(example_analysis, local_server):
    from coverage_core.checks.runner import run_subquestion_check
    from coverage_core.embeddings import make_embedder

    result = run_subquestion_check(example_analysis, 2, local_server.client(), make_embedder("local"))
    assert len(result.questions) == 2
    statuses = {score.status for score in result.questions}
    assert statuses <= {"ok", "failed", "skipped"}
    if "ok" in statuses:
        assert result.model == LOCAL_MODEL
    for warning in result.warnings:
        assert "\n" not in warning and "Traceback" not in warning


def test_a_rerun_reads_the_bundled_models_questions_from_the_cache(local_server, tmp_path, monkeypatch):
    from coverage_core.suggest import local_model
    from coverage_core.suggest.reply_cache import ReplyCache
    from coverage_core.suggest.writing import write_questions

    monkeypatch.setattr(local_model, "_replies", type(local_model._replies)())  # this test's own process memo

    def write():
        client = local_server.client(ReplyCache(tmp_path))
        return write_questions(client, 0, [2, 1], TEXTS, DOCUMENTS, VECTORS, _embed_by_words, 0.5,
                               languages=["en", "en"], n=2, config=WritingConfig(attempts=2))

    first = write()
    assert ReplyCache(tmp_path).count() >= 1
    assert local_server.identity().startswith(LOCAL_MODEL) and "gguf" in local_server.identity()
    local_model._replies.clear()  # a new process: only the disk remembers

    def no_model(*args, **kwargs):
        raise AssertionError("the model was asked again")

    monkeypatch.setattr(ChatClient, "complete_text", no_model)
    assert write() == first
