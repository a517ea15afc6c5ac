"""coverage_core.verdicts: each rule at its boundary, and what an analysis decided, in reading order."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from coverage_core import verdicts
from coverage_core.config import AnalysisConfig
from coverage_core.stages.calibration import Calibration, default as default_calibration
from coverage_core.suggest.gaps import GapConfig
from coverage_core.verdicts import Verdicts


# ---------------------------------------------------------------- the rules at their boundaries
def test_a_document_is_untested_below_the_targeting_questions_needed():
    needed = verdicts.MIN_TARGETING_QUESTIONS
    assert verdicts.is_untested([0, needed - 1, needed, 7]).tolist() == [True, True, False, False]
    assert verdicts.is_untested([0, 1], min_questions=1).tolist() == [True, False]


def test_a_targeted_document_is_undertested_strictly_below_the_cut_and_never_untested_too():
    cut = verdicts.UNDERTESTED_SHARE
    needed = verdicts.MIN_TARGETING_QUESTIONS
    n_questions = [needed, needed, needed, needed - 1, 3]
    share = [cut - 1e-9, cut, 1.0, 0.0, 0.0]
    undertested = verdicts.is_undertested(n_questions, share)
    assert undertested.tolist() == [True, False, False, False, True]
    assert not (undertested & verdicts.is_untested(n_questions)).any()
    assert verdicts.is_undertested([2], [0.5], cut=0.6).tolist() == [True]


def test_a_topic_is_a_gap_strictly_below_the_cut_of_its_rule():
    coverage, tested = [0.69, 0.7, np.nan], [0.49, 0.5, np.nan]
    by_share = GapConfig()  # tested share below 0.5
    assert verdicts.is_gap(coverage, tested, by_share).tolist() == [True, False, False]
    by_coverage = GapConfig(rule="coverage", gap_threshold=0.7)
    assert verdicts.is_gap(coverage, None, by_coverage).tolist() == [True, False, False]
    # Each rule reads its own figure only.
    assert verdicts.is_gap([0.0], [1.0], by_share).tolist() == [False]
    assert verdicts.is_gap([1.0], [0.0], by_coverage).tolist() == [False]


def test_a_question_is_off_topic_strictly_below_the_cut():
    from coverage_core.offtopic import Evidence, RuleSet, margin_cut
    from coverage_core.offtopic.missing_words import MissingWords
    from coverage_core.offtopic.no_support import NoSupport

    assert margin_cut(0.5) == -0.75
    evidence = Evidence(max_similarity=np.array([0.2, 0.2, 0.6, 0.6]), level=0.5,
                        support_margin=np.array([-1.0, -0.75, -0.8, 0.5]), lexical_coverage=np.full(4, 0.2))
    rules = RuleSet([NoSupport(), MissingWords()])
    assert rules.decide(evidence, 0.5).tolist() == [True, False, True, False]
    codes, details, names = rules.explain(evidence, 0.5)
    assert codes.tolist() == ["no_support", "", "missing_words", ""]
    assert details[0] == "Its closest passage has similarity 0.20, below the support level 0.50."
    assert details[2].startswith("No passage holds its distinctive words together (at most 20% of them)")


def test_unmet_demand_is_frequent_and_mostly_unanswerable():
    share = [verdicts.MIN_TOPIC_SHARE, verdicts.MIN_TOPIC_SHARE - 1e-9, 0.5, 0.5]
    answerable = [0.49, 0.0, verdicts.UNMET_ANSWERABLE_SHARE, 0.0]
    assert verdicts.is_unmet_demand(share, answerable).tolist() == [True, False, False, True]


def test_a_traffic_topic_is_untested_strictly_below_the_cut_however_rare():
    cut = verdicts.UNTESTED_TOPIC_SHARE
    assert verdicts.is_untested_topic([cut - 1e-9, cut, 0.0]).tolist() == [True, False, True]


def test_untested_traffic_is_frequent_and_mostly_untested():
    share = [verdicts.MIN_TOPIC_SHARE, verdicts.MIN_TOPIC_SHARE - 1e-9, 0.5]
    tested = [0.49, 0.0, verdicts.UNTESTED_TOPIC_SHARE]
    assert verdicts.is_untested_traffic(share, tested).tolist() == [True, False, False]


@pytest.mark.parametrize(
    "value, threshold, failed",
    [(0.5, 0.5, False), (0.4999, 0.5, True), (None, 0.5, True), (float("nan"), 0.5, True),
     ("0.9", 0.5, True), (True, 0.5, True), (None, None, False), (0.0, None, False)],
)
def test_the_gate_fails_below_its_threshold_and_on_an_undefined_value(value, threshold, failed):
    assert verdicts.gate_failed(value, threshold) is failed


# ---------------------------------------------------------------- what an analysis decided
_MEANS = "A passage counts as tested when a question retrieves it among its top 5 passages with similarity of at least 0.48."


def _analysis(*, tested=(10, 10, 10), untested=(False, False), undertested=(False, False), off_topic=0,
              gaps=(False, False, False), reliable=True, reason=""):
    """A stand-in for results.Analysis with only what Verdicts reads: 3 topics of 10 passages, 2 documents,
    10 questions (enough, at k = 5, to test every passage: no ceiling is stated)."""
    clusters = pd.DataFrame({
        "cluster": [0, 1, 2],
        "size": [10, 10, 10],
        "coverage": [0.9, 0.2, 0.4],
        "n_tested": list(tested),
        "tested_share": [n / 10 for n in tested],
        "is_gap": list(gaps),
        "label": ["koala · marsupial", "", "lobster · claw"],
    })
    documents = pd.DataFrame({
        "document": ["b.txt", "a.txt"],
        "n_chunks": [12, 18],
        "n_tested": [2, 2],
        "tested_share": [2 / 12, 2 / 18],
        "n_questions": [3, 2],
        "is_untested": list(untested),
        "is_undertested": list(undertested),
    })
    return SimpleNamespace(
        corpus=SimpleNamespace(chunks=[None] * 30), clusters=clusters, documents=documents,
        is_outlier=np.arange(10) < off_topic, config=AnalysisConfig(), questions=SimpleNamespace(texts=[]),
        languages=None,
        calibration=Calibration(0.48, "pseudo-queries") if reliable else Calibration(
            0.5, "default: model default", reliable=False, reason=reason),
    )


def test_the_headline_when_everything_is_tested_says_what_tested_means():
    found = Verdicts.from_analysis(_analysis())
    assert found.headline == (
        "100% of the knowledge base is tested (30 of 30 passages); 0 documents untested, 0 under-tested; "
        "0 questions off-topic. " + _MEANS
    )
    assert "whatever the similarity" not in found.headline  # the ranking-only sentence is for an unreliable level
    assert found.untested == () and found.undertested == () and found.gaps == () and found.n_gaps == 0
    assert found.calibration_reliable and found.support_threshold == 0.48 and found.retrieval_k == 5


def test_untested_documents_come_least_tested_first_and_lead_the_headline():
    found = Verdicts.from_analysis(_analysis(tested=(10, 3, 10), untested=(True, True)))
    assert [u.document for u in found.untested] == ["a.txt", "b.txt"]  # a.txt is 2 of 18 tested, b.txt 2 of 12
    assert found.untested[0] == ("a.txt", pytest.approx(2 / 18), 18)
    assert found.headline.startswith(
        "77% of the knowledge base is tested (23 of 30 passages); 2 documents untested, 0 under-tested;"
    )
    one = Verdicts.from_analysis(_analysis(untested=(True, False)))
    assert "; 1 document untested, 0 under-tested;" in one.headline


def test_undertested_documents_come_least_tested_first_with_their_questions():
    found = Verdicts.from_analysis(_analysis(undertested=(True, True)))
    assert [(u.document, u.n_questions, u.n_tested, u.n_chunks) for u in found.undertested] == [
        ("a.txt", 2, 2, 18), ("b.txt", 3, 2, 12)]
    assert found.untested == () and "; 0 documents untested, 2 under-tested;" in found.headline


def test_an_unreliable_calibration_leads_the_headline_with_its_reason():
    reason = "The documents form a single topic, so there is no other passage to tell theirs apart from."
    found = Verdicts.from_analysis(_analysis(reliable=False, reason=reason))
    assert not found.calibration_reliable and found.calibration_reason == reason
    assert found.headline.startswith(
        "The support level could not be calibrated on these documents: the documents form a single topic, so "
        "there is no other passage to tell theirs apart from. The figures below rest on the model's default "
        "level 0.50 and may be wrong. 100% of the knowledge base is tested"
    )
    # Tested then reads the ranking alone, and the headline says so in place of the level's sentence.
    assert found.headline.endswith(
        " 0 questions off-topic. Without a calibrated level, similarity is not used: a passage counts as tested "
        "when a question retrieves it among its top 5 passages, whatever the similarity, and a document when at "
        "least 2 questions retrieve one of its passages among their top 5, as their closest match or nearly so."
    )
    assert "similarity of at least" not in found.headline
    # When no calibration ran at all, its reason only restates the sentence and is not repeated.
    not_run = default_calibration()
    uncalibrated = _analysis(reliable=False, reason=not_run.reason)
    uncalibrated.calibration = replace(uncalibrated.calibration, method=not_run.method)
    generic = Verdicts.from_analysis(uncalibrated)
    assert generic.headline.startswith("The support level could not be calibrated on these documents. The figures ")
    # A model no default level was measured for says its level is a generic one.
    unmeasured = _analysis(reliable=False, reason=reason)
    unmeasured.calibration = replace(unmeasured.calibration, method="default: generic default")
    assert ("The figures below rest on a generic level 0.50 (none is measured for this model) and may be wrong."
            in Verdicts.from_analysis(unmeasured).headline)


def test_gaps_come_most_urgent_first_named_by_topic():
    found = Verdicts.from_analysis(_analysis(tested=(10, 0, 2), gaps=(False, True, True)))
    assert [(g.cluster, g.topic) for g in found.gaps] == [(1, "cluster 1"), (2, "lobster · claw")]
    assert found.gaps[1].tested_share == 0.2 and found.gaps[1].size == 10 and found.n_gaps == 2
    assert Verdicts.from_analysis(_analysis(gaps=(False, True, True)), top=1).gaps[0].cluster == 1
    assert Verdicts.from_analysis(_analysis(gaps=(False, True, True)), top=1).n_gaps == 2
    # The headline counts passages, documents and questions; the gaps follow it on every page.
    assert found.headline.startswith("40% of the knowledge base is tested (12 of 30 passages)")


def test_the_headline_counts_off_topic_questions():
    assert Verdicts.from_analysis(_analysis(off_topic=1)).headline.endswith("; 1 question off-topic. " + _MEANS)
    found = Verdicts.from_analysis(_analysis(off_topic=3))
    assert found.n_off_topic == 3 and "; 3 questions off-topic. " in found.headline
    assert verdicts.headline(_analysis(off_topic=3)) == found.headline


def test_the_headline_says_how_much_the_questions_can_test_at_most_when_it_is_under_all():
    found = Verdicts(n_passages=812, n_tested=146, untested=(), gaps=(), n_gaps=0, n_off_topic=0,
                     support_threshold=0.48, retrieval_k=5, n_on_topic=50)
    assert found.testable_share_max == pytest.approx(250 / 812)
    assert found.ceiling == "50 questions at top 5 can test at most 31% of the knowledge base."
    assert found.headline == (
        "18% of the knowledge base is tested (146 of 812 passages); 0 documents untested, 0 under-tested; "
        "0 questions off-topic. 50 questions at top 5 can test at most 31% of the knowledge base. " + _MEANS
    )
    assert found.figures not in found.ceiling and "31%" not in found.figures  # the page's one-sentence headline
    assert found.ceiling_detail == ("Each question tests at most the 5 passages it retrieves first, so 50 questions "
                                    "can test at most 250 of the 812 passages; more questions raise this limit.")
    # Off-topic questions test nothing: the ceiling counts the others, and says so.
    screened = Verdicts.from_analysis(_analysis(off_topic=6))  # 4 on-topic questions at top 5, 30 passages
    assert screened.testable_share_max == pytest.approx(20 / 30)
    assert screened.headline.endswith(
        "; 6 questions off-topic. 4 on-topic questions at top 5 can test at most 67% of the knowledge base. " + _MEANS)
    assert verdicts.headline(_analysis(off_topic=6)) == screened.headline


@pytest.mark.parametrize("n_on_topic, k, n_passages", [(6, 5, 30), (60, 5, 30), (199, 5, 1000), (None, 5, 30),
                                                       (3, None, 30)])
def test_no_ceiling_is_stated_when_it_is_all_or_rounds_to_it_or_is_not_known(n_on_topic, k, n_passages):
    found = Verdicts(n_passages=n_passages, n_tested=3, untested=(), gaps=(), n_gaps=0, n_off_topic=0,
                     support_threshold=0.48, retrieval_k=k, n_on_topic=n_on_topic)
    assert found.ceiling == found.ceiling_detail == ""
    assert "can test at most" not in found.headline
    assert found.testable_share_max is None if None in (n_on_topic, k) else found.testable_share_max > 0.99


def test_a_share_at_its_ceiling_reads_equal_to_it():
    # 7 × 5 = 35 of 113 passages, all tested: both 31% (30.97%), never "31% tested, at most 30%".
    found = Verdicts(n_passages=113, n_tested=35, untested=(), gaps=(), n_gaps=0, n_off_topic=0,
                     support_threshold=0.48, retrieval_k=5, n_on_topic=7)
    assert found.figures.startswith("31% of the knowledge base is tested")
    assert found.ceiling == "7 questions at top 5 can test at most 31% of the knowledge base."
    nobody = Verdicts(n_passages=40, n_tested=0, untested=(), gaps=(), n_gaps=0, n_off_topic=3,
                      support_threshold=0.48, retrieval_k=5, n_on_topic=0)
    assert nobody.ceiling == "0 on-topic questions at top 5 can test at most 0% of the knowledge base."


def test_verdicts_are_frozen():
    found = Verdicts.from_analysis(_analysis())
    with pytest.raises(AttributeError):
        found.n_off_topic = 1


@pytest.mark.parametrize("chunk_size, expected", [(1000, 5), (500, 10), (800, 6), (1500, 3), (2000, 2), (20000, 1)])
def test_a_question_tests_as_much_text_at_any_chunk_size(chunk_size, expected):
    from coverage_core.config import AnalysisConfig
    from coverage_core.stages.chunking import ChunkingConfig

    config = AnalysisConfig(chunking=ChunkingConfig(chunk_size=chunk_size, chunk_overlap=0))
    assert config.retrieval_k == 5 and config.tested_k == expected
    assert AnalysisConfig(retrieval_k=3, chunking=ChunkingConfig(chunk_size=500, chunk_overlap=0)).tested_k == 6


def _analysis_in(language_code: str, provider: str, separation: float = 0.7):
    from coverage_core.config import EmbeddingConfig
    from coverage_core.languages import LanguageProfile, LanguageShare, language_name

    analysis = _analysis()
    analysis.config = replace(analysis.config, embedding=EmbeddingConfig(provider))
    analysis.calibration = replace(analysis.calibration, separation=separation)
    share = (LanguageShare(language_code, language_name(language_code), 1.0, 2),)
    analysis.languages = LanguageProfile(document_shares=share, question_shares=share)
    return analysis


def test_a_model_not_trained_for_the_documents_language_leads_the_headline_with_the_remedy():
    found = Verdicts.from_analysis(_analysis_in("de", "local"))
    assert found.headline.startswith(
        "all-MiniLM-L6-v2 is not trained for German (100% of the documents and 100% of the questions), so these "
        "figures may be wrong; analyse again with a multilingual model")
    assert found.headline.index("100% of the knowledge base is tested") > 0


def test_a_model_that_reads_the_language_and_separates_well_adds_nothing():
    assert Verdicts.from_analysis(_analysis_in("de", "use")).model_fit == ""
    assert Verdicts.from_analysis(_analysis_in("en", "local")).model_fit == ""
    # Documents about one subject separate modestly with a model that reads them (ten instruments: 0.30).
    assert Verdicts.from_analysis(_analysis_in("en", "local", separation=0.3)).model_fit == ""
    poor = Verdicts.from_analysis(_analysis_in("fr", "use", separation=0.17))
    assert poor.headline.startswith("universal-sentence-encoder-multilingual-3 barely tells these documents' topics "
                                    "apart (separation 0.17, under 0.20)")


def test_off_topic_flags_on_questions_in_another_language_than_english_say_they_are_less_sure():
    from coverage_core.verdicts import offtopic_caution

    french = _analysis_in("fr", "e5")
    french.is_outlier = np.arange(5) < 2
    headline = Verdicts.from_analysis(french).headline
    assert "2 questions off-topic. Off-topic flags are less sure for questions in French than in English: " \
        "check them before removing any." in headline
    english = _analysis_in("en", "local")
    english.is_outlier = np.arange(5) < 2
    assert "less sure" not in Verdicts.from_analysis(english).headline
    assert "less sure" not in Verdicts.from_analysis(_analysis_in("fr", "e5")).headline  # nothing flagged
    mixed = [("en", "English", 0.7), ("de", "German", 0.27), ("fr", "French", 0.03)]  # French under 5%
    assert offtopic_caution(mixed) == ("Off-topic flags are less sure for questions in German than in English: "
                                       "check them before removing any.")


def test_off_topic_flags_on_a_test_set_of_chat_messages_say_they_are_less_sure():
    from coverage_core.verdicts import message_caution, reads_as_chat_message

    # doc2dial's opening turns (benchmarks/devsets/docs-qa) against wiki-qa's questions.
    assert reads_as_chat_message("Hi, I'm not currently in New York City. How do I get an extension, I need it")
    assert reads_as_chat_message("I bought my new car from a private seller.")
    assert reads_as_chat_message("我想知道。他在哪里？")
    assert not reads_as_chat_message("Was Abraham Lincoln the sixteenth President of the United States?")
    assert not reads_as_chat_message("Did the U.S. Army fight there?")
    assert not reads_as_chat_message("他在哪里？")
    assert not reads_as_chat_message("   ")
    chat = ["Hello. I need to renew my license.", "hi I need to replace the inspection tag"]
    single = [f"What is question {n}?" for n in range(6)]
    assert message_caution(single + chat) == (
        "2 of the 8 test questions read as chat messages rather than single questions (several sentences, or no "
        "question mark), and off-topic flags are less sure for those: check them before removing any.")
    assert message_caution(single * 2 + chat) == ""  # 2 of 14: under a quarter
    analysis = _analysis_in("en", "local")
    analysis.questions = SimpleNamespace(texts=chat + single[:3])
    assert "read as chat messages" not in Verdicts.from_analysis(analysis).headline  # nothing flagged
    analysis.is_outlier = np.arange(5) < 1
    headline = Verdicts.from_analysis(analysis).headline
    assert "1 question off-topic. 2 of the 5 test questions read as chat messages" in headline


def test_a_name_never_in_company_of_the_rest_of_the_question_is_absent():
    from coverage_core.offtopic import Evidence
    from coverage_core.offtopic.absent_subject import AbsentSubject
    from coverage_core.offtopic.name_in_passing import PASSING_COMPANY, NameInPassing
    from coverage_core.stages.subjects import Subject, SubjectEvidence

    company = [np.nan, 0.0, PASSING_COMPANY, PASSING_COMPANY + 0.01, 1.0]
    # a name in 3 passages, retrieved: the absent-subject rule keeps them all
    found = [[] if np.isnan(c) else [SubjectEvidence(Subject("Taipei", "name", (b"taipei",)), 3, True, company=c)]
             for c in company]
    evidence = Evidence(max_similarity=np.zeros(5), subjects=found)
    assert not AbsentSubject().mask(evidence).any()
    assert NameInPassing().mask(evidence).tolist() == [False, True, True, False, False]
    assert NameInPassing().reason(evidence, 2) == (
        "Asks about Taipei, which the documents mention only in passing (3 passages, none holding more than 25% "
        "of the question's other words).")
    foreign = Evidence(max_similarity=np.zeros(5), subjects=found, foreign=np.array([False, True, False, False, False]))
    assert NameInPassing().mask(foreign).tolist() == [False, False, True, False, False]


def test_the_target_margin_is_a_share_of_the_corpus_own_similarity_gap():
    from coverage_core.stages.calibration import Calibration, default, override

    # all-MiniLM-L6-v2 on English (a gap of 0.1) and multilingual-e5-small on French (0.015).
    english = Calibration(0.5, "pseudo-queries", positive_median=0.50, negative_median=0.40)
    french = Calibration(0.84, "pseudo-queries", positive_median=0.841, negative_median=0.826)
    assert verdicts.target_margin(english) == pytest.approx(0.02, abs=1e-9)
    assert verdicts.target_margin(french) == pytest.approx(0.003, abs=1e-9)
    # Nothing measured, or measured but not trusted: the fixed margin.
    collapsed = Calibration(0.3, "default: model default", positive_median=0.5, negative_median=0.56, reliable=False)
    for calibration in (override(0.6), default(), collapsed):
        assert verdicts.target_margin(calibration) == verdicts.TARGET_MARGIN


def test_a_compressed_similarity_range_no_longer_lets_a_neighbour_document_be_targeted():
    from coverage_core import metrics

    # One question whose best passage is in a.txt and whose second, 0.01 lower, is in b.txt: with MiniLM's
    # margin b.txt counts as targeted; with the margin of a corpus whose gap is 0.015 it does not.
    top, sims = np.array([[0, 1]]), np.array([[0.850, 0.840]])
    documents = ["a.txt", "b.txt"]
    assert metrics.question_targets(top, sims, documents, 0.8, 2, margin=verdicts.TARGET_MARGIN) == [("a.txt", "b.txt")]
    assert metrics.question_targets(top, sims, documents, 0.8, 2, margin=0.2 * 0.015) == [("a.txt",)]


def _cross_lingual(document_code: str, question_shares: list[tuple[str, float]], provider: str = "e5"):
    from coverage_core.languages import LanguageProfile, LanguageShare, language_name

    analysis = _analysis_in(document_code, provider)
    analysis.languages = LanguageProfile(
        document_shares=(LanguageShare(document_code, language_name(document_code), 1.0, 2),),
        question_shares=tuple(LanguageShare(code, language_name(code), share, 1) for code, share in question_shares),
    )
    return analysis


def test_questions_in_another_language_than_the_documents_lead_the_headline_and_take_the_ticks_away():
    """French documents, English questions (e5, 8 fr-qa articles): 6 of 8 documents came out untested with no
    word of doubt, because a question matches a passage in another language less closely than τ expects."""
    found = Verdicts.from_analysis(_cross_lingual("fr", [("en", 1.0)]))
    assert found.headline.startswith(
        "The questions are in English and the documents in French: the support level is measured within the "
        "documents' language, and a question matches a passage in another language less closely, so untested "
        "documents and off-topic questions may be wrong; check them before acting.")
    assert found.headline.index("of the knowledge base is tested") > 0
    assert verdicts.verdict_doubt(_cross_lingual("fr", [("en", 1.0)])).startswith(
        "The questions are in another language than the documents")
    # Questions in the documents' language, or too few in another, leave the verdicts as they were.
    for same in ([("fr", 1.0)], [("fr", 0.97), ("en", 0.03)], [("fr", 0.5), ("und", 0.5)]):
        analysis = _cross_lingual("fr", same)
        assert Verdicts.from_analysis(analysis).cross_language == "" and verdicts.verdict_doubt(analysis) == ""


def test_a_query_log_in_another_language_takes_the_traffic_tick_away():
    analysis = _cross_lingual("fr", [("fr", 1.0)])
    assert verdicts.traffic_doubt(analysis, SimpleNamespace(language_problem="")) == ""
    foreign = SimpleNamespace(language_problem="The queries are in English and the documents in French: …")
    assert verdicts.traffic_doubt(analysis, foreign).startswith("The queries are in another language")
    # An uncalibrated level comes first, as for the test questions' verdicts.
    analysis.calibration = replace(analysis.calibration, reliable=False)
    assert verdicts.traffic_doubt(analysis, foreign) == verdicts.verdict_doubt(analysis) != ""


def test_the_cross_language_sentence_names_the_share_and_every_foreign_language():
    from coverage_core.verdicts import cross_language_problem

    documents = [("de", "German", 0.8), ("en", "English", 0.2)]
    mixed = cross_language_problem(documents, [("de", "German", 0.6), ("fr", "French", 0.3), ("ar", "Arabic", 0.1)])
    assert mixed.startswith("40% of the questions are in French and Arabic and the documents in German and English:")
    assert cross_language_problem(documents, [("en", "English", 1.0)]) == ""  # English documents are 20%
    assert cross_language_problem([], [("en", "English", 1.0)]) == ""  # no documents' language known
    assert cross_language_problem([("und", "undetermined", 1.0)], [("en", "English", 1.0)]) == ""
    edge = verdicts.CROSS_LANGUAGE_SHARE
    assert cross_language_problem(documents, [("fr", "French", edge)]) != ""
    assert cross_language_problem(documents, [("fr", "French", edge - 0.001)]) == ""
