"""Gap ranking, c-TF-IDF themes, offline drafts and the LLM path."""

import json
from dataclasses import replace

import numpy as np
import pytest

from coverage_core.errors import InputError
from coverage_core.suggest.gaps import (
    Gap,
    GapConfig,
    Suggestion,
    analyze_gaps,
    extract_themes,
    rank_gaps,
)
from coverage_core.suggest.llm import ChatClient, LLMConfig
from coverage_core.suggest.passages import representative_chunks
from coverage_core.verdicts import is_gap
from tests.fakes import chat_reply, error_reply
from tests.helpers import BREAD, JAKARTA, VIOLIN

CHAT = "/v1/chat/completions"

TEXTS = VIOLIN + JAKARTA + BREAD
DOCUMENTS = ["violin.pdf"] * 4 + ["jakarta.txt"] * 4 + ["bread.md"] * 4
LABELS = np.array([0] * 4 + [1] * 4 + [2] * 4)
CENTROIDS = np.eye(3)


def _vectors():
    # Each cluster sits on one axis; chunk j of a cluster leans a little more
    # off-axis with j, so representativeness is chunk 0 > 1 > 2 > 3.
    vectors = np.zeros((12, 3))
    for i, label in enumerate(LABELS):
        j = i % 4
        vectors[i, label] = 1.0
        vectors[i, (label + 1) % 3] = 0.1 * j
    return vectors


VECTORS = _vectors()
# Within each cluster, distance to the nearest question: chunk 2 worst, then 1.
MIN_DISTANCES = np.array([0.3, 0.5, 0.8, 0.2] * 2 + [0.05] * 4)
COVERAGE = np.array([0.45, 0.55, 0.95])


def below(coverage, config=GapConfig()):
    """The coverage rule of verdicts.is_gap: the gap decision these tests hand to the gap analysis."""
    return is_gap(coverage, None, replace(config, rule="coverage"))


def run(existing=(), llm=None, **config):
    # Each fixture cluster holds 4 passages: 3 of them asked about leaves one to tell apart.
    config = {"n_passages": 3, "n_suggestions": 3, **config}
    return analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, list(existing), GapConfig(**config), llm,
        is_gap=below(COVERAGE, GapConfig(**config)),
    )


# --------------------------------------------------------------------------
# ranking
# --------------------------------------------------------------------------


def test_rank_gaps_order_and_threshold():
    coverage = [0.3, 0.5, 0.9, 0.65, np.nan, 0.7]
    sizes = [10, 90, 50, 0, 5, 5]
    # total 160; shares 0.0625, 0.5625, ...
    # cluster 0: 0.7 * (1 - 0.3) + 0.3 * 0.0625 = 0.49 + 0.01875 = 0.50875
    # cluster 1: 0.7 * (1 - 0.5) + 0.3 * 0.5625 = 0.35 + 0.16875 = 0.51875
    # cluster 2: 0.9 >= 0.7, not a gap; 3: empty; 4: NaN; 5: exactly 0.7, not below
    ranked = rank_gaps(coverage, sizes, GapConfig(), is_gap=below(coverage))
    assert [k for k, _ in ranked] == [1, 0]
    assert np.allclose([p for _, p in ranked], [0.51875, 0.50875])
    # size ignored: worst coverage first
    assert [k for k, _ in rank_gaps(coverage, sizes, GapConfig(size_weight=0.0), is_gap=below(coverage))] == [0, 1]
    # stricter threshold
    assert [k for k, _ in rank_gaps(coverage, sizes, GapConfig(gap_threshold=0.4), is_gap=below(coverage, GapConfig(gap_threshold=0.4)))] == [0]


def test_rank_gaps_validation():
    with pytest.raises(InputError, match="equal length"):
        rank_gaps([0.1, 0.2], [1], is_gap=[True, True])
    with pytest.raises(InputError, match="size_weight"):
        GapConfig(size_weight=1.5)
    with pytest.raises(InputError, match="n_suggestions"):
        GapConfig(n_suggestions=-1)


# --------------------------------------------------------------------------
# themes
# --------------------------------------------------------------------------


def test_ctfidf_picks_distinctive_words():
    themes = extract_themes(TEXTS, LABELS, 3, n_themes=4)
    assert len(themes) == 3 and all(1 <= len(t) <= 4 for t in themes)
    assert themes[0][0].startswith("violin")  # "violin" or a distinctive pair such as "violin makers"
    assert themes[1][0] == "jakarta"
    assert "bread" in themes[2]
    violin_words = " ".join(themes[0])
    assert "jakarta" not in violin_words and "bread" not in violin_words


def test_themes_drop_near_duplicates():
    texts = [
        "Van Gogh painted sunflowers in Arles.",
        "Van Gogh wrote letters to his brother Theo.",
        "Van Gogh cut his ear.",
        "Jakarta floods often.",
    ]
    themes = extract_themes(texts, [0, 0, 0, 1], 2, n_themes=5)
    assert themes[0][0] == "van gogh"
    assert not {"van", "gogh"} & set(themes[0])
    assert sum("gogh" in phrase for phrase in themes[0]) == 1


def test_themes_tiny_corpus_and_empty_cluster():
    assert extract_themes(["the and of", "a an 42"], [0, 1], 2) == [[], []]
    assert extract_themes([], [], 2) == [[], []]
    themes = extract_themes(["violin bow", "violin strings"], [0, 0], 3)
    assert themes[0] and themes[1] == [] and themes[2] == []


# --------------------------------------------------------------------------
# representative passages, offline drafts
# --------------------------------------------------------------------------


def test_representative_chunks_closest_to_centroid_first():
    assert representative_chunks(VECTORS, LABELS, CENTROIDS, 1, 10).tolist() == [4, 5, 6, 7]
    # centroid length does not matter
    assert representative_chunks(VECTORS, LABELS, CENTROIDS * 0.2, 0, 2).tolist() == [0, 1]


def test_passages_are_least_covered_representatives():
    # Cluster of 12: chunk i leans off-axis by i, mindist grows with i, so the
    # two least representative chunks (10, 11) are also the least covered;
    # they must be skipped: passages come from the 10 most representative.
    vectors = np.array([[1.0, 0.05 * i] for i in range(12)])
    distances = np.linspace(0.1, 0.9, 12)
    gaps, _ = analyze_gaps(
        [f"Chunk number {i} talks about violin bows and strings." for i in range(12)],
        ["doc"] * 12, vectors, np.zeros(12, dtype=int), [[1.0, 0.0]], distances, [0.5], [],
        GapConfig(n_passages=3), is_gap=[True],
    )
    assert gaps[0].passages == (9, 8, 7)


def test_offline_drafts_are_marked_and_rank_gaps():
    gaps, warnings = run()
    assert warnings == []
    assert [g.cluster for g in gaps] == [0, 1]  # bread is covered
    violin = gaps[0]
    assert isinstance(violin, Gap)
    assert violin.size == 4 and violin.share == pytest.approx(4 / 12)
    assert violin.coverage == pytest.approx(0.45)
    # least covered representatives: mindist 0.8 (chunk 2), 0.5 (1), 0.3 (0)
    assert violin.passages == (2, 1, 0)
    assert violin.themes[0].startswith("violin")
    assert 1 <= len(violin.suggestions) <= 3
    for suggestion in violin.suggestions:
        assert isinstance(suggestion, Suggestion)
        assert suggestion.origin == "draft" and suggestion.cluster == 0
        assert suggestion.document == "violin.pdf"
        assert suggestion.passage in [" ".join(t.split()) for t in VIOLIN]
        assert "What does the knowledge base say about" not in suggestion.text and "(see:" not in suggestion.text
        # a real sentence of the passage, quoted or asked back
        assert suggestion.text.startswith(("Write a question answered by: “", "What "))
    # the first draft quotes the least covered passage (chunk 2)
    assert violin.suggestions[0].passage == VIOLIN[2]
    assert violin.suggestions[0].text == (
        "Write a question answered by: “A violin bow is strung with horsehair; rosin helps the bow grip the strings of the violin.”"
    )


def test_drafts_never_repeat_existing_questions():
    first, _ = run()
    draft = first[0].suggestions[0].text
    # same text, different case, spacing and punctuation: still a repeat
    existing = ["  " + draft.upper().replace("?", " ?!").replace('"', "'") + "  "]
    gaps, _ = run(existing=existing)
    texts = [s.text for g in gaps for s in g.suggestions]
    assert draft not in texts
    assert len(texts) == len(set(texts))


def test_tiny_corpus_gives_drafts_without_themes():
    gaps, warnings = analyze_gaps(
        ["42 and 43.", "the of and"], ["a", "b"], [[1.0, 0.0], [0.9, 0.1]], [0, 0], [[1.0, 0.0]],
        [0.9, 0.9], [0.1], [], GapConfig(), is_gap=[True],
    )
    assert len(gaps) == 1 and gaps[0].themes == ()
    assert gaps[0].suggestions == ()  # nothing quotable: no filler
    assert warnings == []


def test_no_gaps_when_everything_is_covered():
    gaps, warnings = analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, [0.9, 0.9, 0.9], [], GapConfig(),
        is_gap=below([0.9, 0.9, 0.9]),
    )
    assert gaps == [] and warnings == []


def test_analyze_gaps_validates_lengths():
    with pytest.raises(InputError, match="chunk_documents"):
        analyze_gaps(TEXTS, DOCUMENTS[:-1], VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [], GapConfig(),
                     is_gap=below(COVERAGE))
    with pytest.raises(InputError, match="cluster_coverage"):
        analyze_gaps(TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE[:2], [], GapConfig(),
                     is_gap=below(COVERAGE[:2]))


# --------------------------------------------------------------------------
# LLM path, through the real openai client
# --------------------------------------------------------------------------


def llm_for(server) -> ChatClient:
    return ChatClient(LLMConfig(model="fake-chat", base_url=server.url + "/v1", api_key="sk-x", max_retries=0))


EXISTING = ["Who crafted famous violins in Cremona?"]


def test_llm_suggestions_and_fallback_for_failed_gap(fake_api):
    violin_answer = {
        "themes": ["violin making", "bows", "Cremona luthiers"],
        "questions": [
            {"question": "What is a violin bow strung with?", "passage": 1},
            {"question": "who crafted famous violins in Cremona", "passage": 2},  # existing: dropped
            {"question": "Which composers wrote popular violin concertos?", "passage": 99},  # bad index
        ],
    }
    fake_api.script(
        CHAT,
        [
            chat_reply("Here you go:\n```json\n" + json.dumps(violin_answer) + "\n```"),  # fenced + prose
            chat_reply("Sorry, I cannot do that."),  # Jakarta gap: malformed ...
            chat_reply("{still not json"),  # ... twice -> fallback
        ],
    )
    gaps, warnings = run(existing=EXISTING, llm=llm_for(fake_api))
    violin, jakarta = gaps
    assert violin.themes == ("violin making", "bows", "Cremona luthiers")
    assert [s.origin for s in violin.suggestions] == ["llm", "llm"]
    first, second = violin.suggestions
    assert first.text == "What is a violin bow strung with?"
    # passage 1 in the prompt is the least covered passage, chunk 2
    assert first.document == "violin.pdf" and first.passage == VIOLIN[2]
    assert second.document == "" and second.passage == ""  # cited no valid passage

    assert jakarta.suggestions and all(s.origin == "draft" for s in jakarta.suggestions)
    assert jakarta.themes[0] == "jakarta"  # offline themes kept
    assert len(warnings) == 1 and "Cluster 1" in warnings[0] and "drafts" in warnings[0]
    assert len(fake_api.requests_to(CHAT)) == 3


def test_llm_prompt_has_passages_and_asks_for_answerable_questions(fake_api):
    fake_api.handle(CHAT, lambda body: chat_reply('{"themes": [], "questions": [{"question": "Q?", "passage": 1}]}'))
    gaps, warnings = run(existing=EXISTING, llm=llm_for(fake_api), n_suggestions=2)
    violin_request = fake_api.requests_to(CHAT)[0]
    system, user = (m["content"] for m in violin_request.body["messages"])
    assert "JSON" in system
    # least covered passages first (chunks 2, 1, 0); the two most central
    # ones (0, 1) are already among them, so chunk 3 is not shown
    assert user.index(VIOLIN[2]) < user.index(VIOLIN[1]) < user.index(VIOLIN[0])
    assert "[1] " + VIOLIN[2] in user
    assert "answerable from the passage" in user
    assert "Write 2 new test questions" in user
    assert EXISTING[0] in user  # on-topic existing question shown to avoid
    assert '"questions"' in user and '"passage"' in user
    assert VIOLIN[3] not in user
    # the Jakarta gap got the same question again: a repeat, so drafts + warning
    assert len(fake_api.requests_to(CHAT)) == 2
    assert [s.origin for s in gaps[0].suggestions] == ["llm"]
    assert gaps[0].themes[0].startswith("violin")  # no LLM themes: offline ones kept
    assert all(s.origin == "draft" for s in gaps[1].suggestions)
    assert len(warnings) == 1 and "repeated" in warnings[0]


def test_llm_auth_failure_stops_asking_and_falls_back(fake_api):
    fake_api.script(CHAT, [error_reply(401, "Incorrect API key provided: sk-x")])
    gaps, warnings = run(llm=llm_for(fake_api))
    assert [g.cluster for g in gaps] == [0, 1]
    assert all(s.origin == "draft" for g in gaps for s in g.suggestions)
    assert len(warnings) == 1 and "unavailable" in warnings[0] and "sk-x" not in warnings[0]
    assert len(fake_api.requests_to(CHAT)) == 1


def test_themes_of_large_clusters_come_from_an_even_sample():
    from coverage_core.stages.topics import _evenly_per_cluster

    labels = np.array([0] * 10 + [1] * 2)
    assert _evenly_per_cluster(labels, 3).tolist() == [0, 4, 9, 10, 11]
    texts = [f"The violin bow and violin strings, note {i}." for i in range(10)] + [
        "Jakarta harbour traffic.", "Jakarta city districts."
    ]
    capped = extract_themes(texts, labels, 2, n_themes=3, max_chunks_per_cluster=3)
    full = extract_themes(texts, labels, 2, n_themes=3, max_chunks_per_cluster=None)
    assert "violin" in " ".join(capped[0]) and "jakarta" in " ".join(capped[1])
    assert capped[1] == full[1]


# --------------------------------------------------------------------------
# LLM questions must reach their passage
# --------------------------------------------------------------------------


def _embed_by_words(texts):
    """A tiny deterministic embedder in the space of VECTORS: one axis per cluster topic word."""
    rows = []
    for text in texts:
        lower = text.lower()
        rows.append([float("violin" in lower), float("jakarta" in lower), float("bread" in lower)])
    return np.array(rows)


def test_llm_questions_that_do_not_reach_their_passage_are_dropped_and_counted(fake_api):
    violin_answer = {
        "themes": [],
        "questions": [
            {"question": "What is a violin bow strung with?", "passage": 1},  # reaches chunk 2
            {"question": "How deep is the Jakarta harbour?", "passage": 1},  # off the violin passage
            {"question": "What bread did Stradivari bake?", "passage": 2},  # off
        ],
    }
    jakarta_answer = {"themes": [], "questions": [{"question": "Why is Jakarta sinking?", "passage": 1}]}
    fake_api.script(CHAT, [chat_reply(json.dumps(violin_answer)), chat_reply(json.dumps(jakarta_answer))])
    gaps, warnings = analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [], GapConfig(),
        llm_for(fake_api), embed=_embed_by_words, support_threshold=0.9, is_gap=below(COVERAGE),
    )
    violin, jakarta = gaps
    assert [s.text for s in violin.suggestions] == ["What is a violin bow strung with?"]
    assert violin.suggestions[0].passage == VIOLIN[2]
    assert [s.text for s in jakarta.suggestions] == ["Why is Jakarta sinking?"]
    assert warnings == [
        "2 suggested questions did not reach their passage (cosine similarity below 0.900) and were dropped."
    ]


def test_a_gap_whose_llm_questions_all_miss_their_passage_gets_drafts_and_one_sentence_saying_so(fake_api):
    off = {"themes": [], "questions": [{"question": "How deep is the Jakarta harbour?", "passage": 1},
                                       {"question": "What bread did Stradivari bake?", "passage": 2}]}
    jakarta_answer = {"themes": [], "questions": [{"question": "Why is Jakarta sinking?", "passage": 1}]}
    fake_api.script(CHAT, [chat_reply(json.dumps(off)), chat_reply(json.dumps(jakarta_answer))])
    gaps, warnings = analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [], GapConfig(),
        llm_for(fake_api), embed=_embed_by_words, support_threshold=0.9, is_gap=below(COVERAGE),
    )
    assert all(s.origin == "draft" for s in gaps[0].suggestions)
    assert (f"Cluster {gaps[0].cluster}: offline question drafts are shown because the LLM failed: "
            "None of its 2 questions reached their passage, so they were dropped.") in warnings
    assert all(w.endswith(".") and "\n" not in w for w in warnings)


def test_without_a_support_threshold_llm_questions_are_not_checked(fake_api):
    answer = {"themes": [], "questions": [{"question": "How deep is the Jakarta harbour?", "passage": 1}]}
    fake_api.handle(CHAT, lambda body: chat_reply(json.dumps(answer)))
    gaps, warnings = analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [], GapConfig(),
        llm_for(fake_api), embed=_embed_by_words, is_gap=below(COVERAGE),
    )
    assert gaps[0].suggestions[0].text == "How deep is the Jakarta harbour?"
    assert not any("did not reach" in w for w in warnings)


def test_offline_drafts_quote_a_real_sentence_and_skip_markup():
    noisy = [
        "alt=Photo of a violin. 1 2 3 4 5 6 7 8 9. * Violin makers list",
        "The violin is a wooden string instrument played with a bow in orchestras.",
    ]
    gaps, _ = analyze_gaps(
        noisy, ["v.txt"] * 2, [[1.0, 0.0], [0.9, 0.1]], [0, 0], [[1.0, 0.0]], [0.9, 0.8], [0.1], [], GapConfig(), is_gap=[True],
    )
    texts = [s.text for s in gaps[0].suggestions]
    assert texts == ["What is the violin?"]  # the markup-only passage offers nothing
    for text in texts:
        assert "What does the knowledge base say about" not in text and "(see:" not in text and "alt=" not in text


def test_unfinished_drafts_are_left_out_of_apply_and_export():
    import pandas as pd

    from coverage_core.suggest.questions import DRAFT_PREFIX, is_unfinished_draft
    from ui.views import gaps as view

    draft = f"{DRAFT_PREFIX} “The koala cannot legally be kept as a pet.”"
    assert is_unfinished_draft(draft) and is_unfinished_draft("  write a QUESTION answered by: x")
    assert not is_unfinished_draft("Can a koala be kept as a pet?")
    table = pd.DataFrame(
        {
            "accept": [True, True, False],
            "question": [draft, "Can a koala be kept as a pet?", "What is a lobster?"],
        }
    )
    assert view.accepted_texts(table) == ["Can a koala be kept as a pet?"]
    assert view.unfinished_drafts(table) == 1


@pytest.mark.parametrize("ties", [False, True])
def test_each_rows_top_k_is_the_stable_sorts_first_k(ties):
    """The partition that replaced a full sort of every row picks the same passages, equal values included."""
    from coverage_core.suggest.passages import _top_per_row

    rng = np.random.default_rng(7)
    for _ in range(100):
        n, m = rng.integers(1, 30, size=2)
        values = rng.integers(0, 4, size=(n, m)) if ties else rng.random((n, m))
        values = values.astype(np.float32)
        for k in (0, 1, int(rng.integers(1, m + 1)), m, m + 3):
            expected = np.zeros_like(values, dtype=bool)
            if min(k, m):
                np.put_along_axis(expected, np.argsort(-values, axis=1, kind="stable")[:, :min(k, m)], True, axis=1)
            assert (_top_per_row(values, k) == expected).all()
