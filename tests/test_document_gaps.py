"""An untested document is always in a gap: carried by its topic's gap, or a gap of its own (suggest.document_gaps)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from coverage_core import session
from coverage_core.gap_finding import find_gaps
from coverage_core.outputs.html_report import build_html_report
from coverage_core.outputs.junit import junit_xml
from coverage_core.outputs.report import build_report, summary_table
from coverage_core.suggest.document_gaps import gap_key, main_topics, merge_ranked
from coverage_core.suggest.gaps import GapConfig, analyze_gaps
from coverage_core.suggest.questions import DRAFT_WORDINGS
from coverage_core.verdicts import Verdicts, is_document_gap
from tests.fakes import chat_reply

VIOLIN = [
    "The violin is a wooden string instrument played with a bow. Violin makers in Cremona built famous violins.",
    "Antonio Stradivari crafted violins whose varnish and spruce tops are still studied by violin makers.",
    "A violin bow is strung with horsehair; rosin helps the bow grip the strings of the violin.",
    "Violin concertos by Vivaldi and Bach remain popular, and every orchestra seats many violin players.",
]
VIOLA = [
    "The viola is slightly larger than the violin and is tuned a fifth lower, so violas sound darker.",
    "Viola players read the alto clef, and a viola section sits between the violins and the cellos.",
]
JAKARTA = [
    "Jakarta is the capital of Indonesia, on the northwest coast of Java, with heavy traffic and flooding.",
    "The Jakarta metropolitan area is among the largest urban areas; Jakarta suffers land subsidence.",
    "Indonesia plans to move its capital from Jakarta to Nusantara in East Kalimantan because Jakarta is sinking.",
    "The city of Jakarta hosts many museums, and the old town of Jakarta was called Batavia.",
]
BATAVIA = [
    "Batavia was the name of the Dutch colonial capital that the East India Company founded on Java.",
    "The canals of Batavia were dug by Dutch engineers, who modelled the town on Amsterdam.",
]
SUNDA = ["Sunda Kelapa is the old harbour of the city, where wooden pinisi schooners still unload their cargo."]
BREAD = [
    "Sourdough bread rises with a starter of wild yeast and lactic acid bacteria.",
    "Bakers knead bread dough to develop gluten, then let the dough proof before baking.",
    "A hot oven and steam give bread a crisp crust and an open crumb.",
    "Whole wheat bread uses flour milled from the entire grain, including bran and germ.",
]
TEXTS = VIOLIN + VIOLA + JAKARTA + BATAVIA + SUNDA + BREAD
DOCUMENTS = ["violin.pdf"] * 4 + ["viola.txt"] * 2 + ["jakarta.txt"] * 4 + ["batavia.txt"] * 2 + ["sunda.txt"] \
    + ["bread.md"] * 4
LABELS = np.array([0] * 6 + [1] * 7 + [2] * 4)
VIOLA_ROWS, BATAVIA_ROWS, SUNDA_ROWS = {4, 5}, {10, 11}, {12}
CENTROIDS = np.eye(4)[:3]
# The violin topic is tested (its violin passages, not its viola ones); the Jakarta topic is a gap whose least
# covered passages are Jakarta's own: Batavia's and Sunda's are nearer a question, though no question targets them.
MIN_DISTANCES = np.array([0.1] * 4 + [0.6, 0.62] + [0.5, 0.6, 0.7, 0.8] + [0.2, 0.25] + [0.3] + [0.05] * 4)
COVERAGE = np.array([0.8, 0.45, 0.95])
IS_GAP = [False, True, False]


def _vectors():
    vectors = np.zeros((len(TEXTS), 4))
    for i, label in enumerate(LABELS):
        vectors[i, label] = 1.0
        vectors[i, (label + 1) % 3] = 0.02 * (i % 4)
    vectors[sorted(VIOLA_ROWS), 3] = 0.7  # the viola leans its own way inside the string topic
    return vectors


VECTORS = _vectors()


def _embed_by_words(texts):
    """A tiny embedder in the space of VECTORS: one axis per topic word, and one for the viola."""
    return np.array([[float("violin" in t.lower()), float("jakarta" in t.lower() or "batavia" in t.lower()),
                      float("bread" in t.lower()), 0.7 * float("viola" in t.lower())] for t in texts])


def run(untested=(), own=(), **config):
    config = {"n_passages": 2, "n_suggestions": 2, "spread_reach": None, **config}
    return analyze_gaps(TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [],
                        GapConfig(**config), is_gap=IS_GAP, untested_documents=list(untested), document_gaps=list(own))


def from_document(gap, document):
    return [s for s in gap.suggestions if s.text and s.document == document]


# ---------------------------------------------------------------- the verdict and the ranking


def test_an_untested_document_is_a_gap_of_its_own_only_when_its_main_topic_is_no_gap():
    untested = [True, True, False, False]
    topic_is_gap = [False, True, False, True]
    assert is_document_gap(untested, topic_is_gap).tolist() == [True, False, False, False]


def test_a_documents_main_topic_holds_most_of_its_passages_ties_to_the_lower_cluster():
    topics = main_topics(["a", "a", "a", "b", "b", "c"], [2, 1, 2, 0, 1, 3])
    assert topics == {"a": 2, "b": 0, "c": 3}


def test_a_document_gap_ranks_as_a_topic_of_its_size_that_nothing_tests():
    # 100 passages; topic 0 (coverage 0.4, 30 passages): 0.7 * 0.6 + 0.3 * 0.3 = 0.51;
    # topic 1 (coverage 0.02, 60 passages): 0.7 * 0.98 + 0.3 * 0.6 = 0.866; the document (5 passages): 0.7 + 0.015.
    ranked = merge_ranked([(1, 0.866), (0, 0.51)], [("koala.txt", 0, 5)], 100, 0.3, carried={1: ["b.txt", "a.txt"]})
    assert [(g.cluster, g.document) for g in ranked] == [(1, ""), (0, "koala.txt"), (0, "")]
    assert ranked[1].priority == pytest.approx(0.715) and ranked[1].untested == ("koala.txt",)
    assert ranked[0].untested == ("a.txt", "b.txt")
    assert gap_key(6) == "6" and gap_key(6, "koala.txt").startswith("d") and gap_key(6, "koala.txt").isalnum()


# ---------------------------------------------------------------- analyze_gaps


def test_an_untested_document_in_a_tested_topic_gets_its_own_gap_with_a_suggestion():
    plain, _ = run()
    assert [g.document for g in plain] == [""] and not any(from_document(g, "viola.txt") for g in plain)

    gaps, warnings = run(untested=["viola.txt"], own=["viola.txt"])
    assert warnings == []
    assert [(g.cluster, g.document) for g in gaps] == [(0, "viola.txt"), (1, "")]  # the document first
    viola = gaps[0]
    assert viola.untested == ("viola.txt",) and viola.size == 2 and viola.share == pytest.approx(2 / 17)
    assert viola.priority == pytest.approx(0.7 + 0.3 * 2 / 17)
    assert viola.coverage == pytest.approx(1 - 0.61)
    assert set(viola.passages) <= VIOLA_ROWS and viola.passages[0] == 5  # least covered first
    assert viola.themes and "viola" in viola.themes[0]
    assert from_document(viola, "viola.txt") and all(s.document == "viola.txt" for s in viola.suggestions)
    assert all(s.origin == "draft" and s.cluster == 0 for s in viola.suggestions)


def test_an_untested_document_whose_topic_is_a_gap_is_carried_with_a_suggestion_from_it():
    plain, _ = run(n_suggestions=1)
    assert [(g.cluster, g.document) for g in plain] == [(1, "")]
    assert not from_document(plain[0], "batavia.txt") and not from_document(plain[0], "sunda.txt")

    gaps, _ = run(untested=["sunda.txt", "batavia.txt"], n_suggestions=1)
    assert [(g.cluster, g.document) for g in gaps] == [(1, "")]  # carried: no gap of their own
    jakarta = gaps[0]
    assert jakarta.untested == ("batavia.txt", "sunda.txt")
    # Each carried document's least covered passage leads, even beyond one suggestion a gap.
    assert set(jakarta.passages[:2]) == {11, 12} and len(jakarta.passages) == 2
    assert from_document(jakarta, "batavia.txt") and from_document(jakarta, "sunda.txt")


def test_an_untested_document_its_inputs_left_in_no_gap_becomes_a_gap_of_its_own():
    gaps, _ = run(untested=["viola.txt"])  # not marked a document gap, and its topic is no gap
    assert gaps[0].document == "viola.txt" and from_document(gaps[0], "viola.txt")


def test_no_suggestions_asked_for_leaves_the_document_gap_without_any():
    gaps, _ = run(untested=["viola.txt"], own=["viola.txt"], n_suggestions=0)
    assert gaps[0].document == "viola.txt" and gaps[0].suggestions == () and gaps[0].note


def test_the_bundled_writer_writes_for_a_document_gap_as_for_a_topic(fake_api):
    from tests.test_gaps import llm_for

    fake_api.handle(CHAT, lambda body: chat_reply(
        "Which clef do viola players read?" if "viola" in str(body["messages"][-1]["content"]).lower()
        else "Why is Jakarta sinking?"))
    gaps, _ = analyze_gaps(
        TEXTS, DOCUMENTS, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [],
        GapConfig(n_passages=1, n_suggestions=1, spread_reach=None, worked_examples=False),
        embed=_embed_by_words, support_threshold=0.5, is_gap=IS_GAP, writer=llm_for(fake_api),
        untested_documents=["viola.txt"], document_gaps=["viola.txt"],
    )
    viola = gaps[0]
    assert viola.document == "viola.txt" and viola.written
    assert [(s.text, s.origin, s.document) for s in viola.suggestions] == [
        ("Which clef do viola players read?", "local", "viola.txt")]


CHAT = "/v1/chat/completions"

GERMAN_STRINGS = [
    "Die Geige ist ein Streichinstrument aus Holz, das mit einem Bogen gespielt wird und vier Saiten hat.",
    "Geigenbauer in Cremona bauten die berühmtesten Geigen, deren Lack noch heute untersucht wird.",
    "Der Bogen der Geige ist mit Rosshaar bespannt, und Kolophonium lässt ihn an den Saiten haften.",
    "In jedem Orchester sitzen viele Geiger, die Konzerte von Vivaldi und Bach spielen.",
]
GERMAN_VIOLA = [
    "Die Bratsche ist etwas größer als die Geige und wird eine Quinte tiefer gestimmt, daher klingt sie dunkler.",
    "Bratschisten lesen den Altschlüssel, und die Bratschen sitzen im Orchester zwischen den Geigen und den Celli.",
]
FRENCH_STRINGS = [
    "Le violon est un instrument à cordes frottées en bois, joué avec un archet et doté de quatre cordes.",
    "Les luthiers de Crémone ont fabriqué les violons les plus célèbres, dont le vernis est encore étudié.",
    "L'archet du violon est tendu de crin de cheval, et la colophane l'aide à accrocher les cordes.",
    "Chaque orchestre compte de nombreux violonistes qui jouent les concertos de Vivaldi et de Bach.",
]
FRENCH_VIOLA = [
    "L'alto est un peu plus grand que le violon et il est accordé une quinte plus bas, ce qui assombrit sa voix.",
    "Les altistes lisent la clé d'ut troisième ligne, et les altos sont assis entre les violons et les violoncelles.",
]


@pytest.mark.parametrize(("code", "strings", "viola", "name"), [
    ("de", GERMAN_STRINGS, GERMAN_VIOLA, "Bratsche.txt"),
    ("fr", FRENCH_STRINGS, FRENCH_VIOLA, "Alto.txt"),
])
def test_a_german_or_french_untested_document_gets_its_own_gap_with_drafts_in_its_language(code, strings, viola, name):
    texts = strings + viola + JAKARTA + BATAVIA + SUNDA + BREAD
    documents = ["geige.pdf"] * 4 + [name] * 2 + DOCUMENTS[6:]
    gaps, _ = analyze_gaps(texts, documents, VECTORS, LABELS, CENTROIDS, MIN_DISTANCES, COVERAGE, [],
                           GapConfig(n_passages=2, n_suggestions=2, spread_reach=None), is_gap=IS_GAP,
                           untested_documents=[name], document_gaps=[name])
    own = gaps[0]
    assert own.document == name
    drafts = from_document(own, name)
    assert drafts and all(s.language == code and s.passage in [" ".join(v.split()) for v in viola] for s in drafts)
    wording = DRAFT_WORDINGS[code]
    assert all(s.text.startswith(wording.prefix) or s.text.endswith("?") for s in drafts)
    assert not any(s.text.startswith(DRAFT_WORDINGS["en"].prefix) for s in drafts)


# ---------------------------------------------------------------- every output sees the same gaps


@pytest.fixture(scope="module")
def own_gap(analysis):
    """The synthetic analysis where no topic is a gap (a coverage rule nothing is under): the untested
    <b>gamma</b>.md is a gap of its own, as the German user's seven documents were."""
    config = dataclasses.replace(analysis.config, gaps=GapConfig(rule="coverage", gap_threshold=-0.99))
    return find_gaps(session.regap(analysis, config))


GAMMA = "<b>gamma</b>.md"


def test_a_document_gap_reaches_the_verdict_and_every_report(own_gap):
    assert not own_gap.clusters["is_gap"].any()
    documents = own_gap.documents.set_index("document")
    assert documents.loc[GAMMA, "is_untested"] and documents.loc[GAMMA, "is_gap"]

    verdict = Verdicts.from_analysis(own_gap)
    assert verdict.n_gaps == 1 and [g.document for g in verdict.gaps] == [GAMMA]
    assert verdict.gaps[0].topic.startswith(f"{GAMMA} (untested document; topic: ")
    assert verdict.gaps[0].tested_share == 0.0 and verdict.gaps[0].size == 20

    assert [g.document for g in own_gap.gaps] == [GAMMA] and from_document(own_gap.gaps[0], GAMMA)
    report = build_report(own_gap)
    entry = report["gaps"][0]
    assert entry["document"] == GAMMA and entry["untested_documents"] == [GAMMA]
    assert entry["label"] == verdict.gaps[0].topic and entry["tested_share"] == 0.0
    assert any(s["kept"] and s["document"] == GAMMA for s in entry["suggestions"])
    assert all(c["gap_rank"] is None for c in report["clusters"])  # its topic is still no gap
    gamma = next(d for d in report["documents"] if d["name"] == GAMMA)
    assert gamma["is_gap"] is True and isinstance(gamma["cluster"], int)

    xml = junit_xml(report)
    assert "gap 1, its own gap" in xml and "suggested question" in xml

    html = build_html_report(own_gap)
    assert "&lt;b&gt;gamma&lt;/b&gt;.md (untested document; topic:" in html and "<b>gamma</b>" not in html
    assert "No gap:" not in html

    lines = summary_table(own_gap).splitlines()
    first = lines[lines.index("Largest gaps") + 1]
    assert first.startswith(f"  1. {GAMMA} (untested document")


def test_a_carried_document_is_named_by_its_topic_gap_in_the_report(analysis):
    topic = next(g for g in analysis.gaps if GAMMA in g.untested)
    assert not topic.document and from_document(topic, GAMMA)
    assert not analysis.documents.set_index("document").loc[GAMMA, "is_gap"]
    report = build_report(analysis)
    entry = next(e for e in report["gaps"] if e["cluster"] == topic.cluster)
    assert entry["document"] is None and entry["untested_documents"] == [GAMMA]
    assert "held by the topic gap" in junit_xml(report)
    assert Verdicts.from_analysis(analysis).n_gaps == int(analysis.clusters["is_gap"].sum())


def test_regap_moves_an_untested_document_between_its_topic_and_a_gap_of_its_own(analysis, own_gap):
    assert not analysis.documents["is_gap"].any() and own_gap.documents["is_gap"].sum() == 1
    back = session.regap(own_gap, analysis.config)
    assert back.documents["is_gap"].tolist() == analysis.documents["is_gap"].tolist()


def test_the_results_page_names_the_untested_document_as_a_gap_and_links_to_it(own_gap, monkeypatch):
    from tests.app_support import run_page, texts
    from tests.test_gap_loop import GAPS, RESULTS, gap_page
    from ui import flow, state

    monkeypatch.setattr(flow, "require_analysis", lambda: own_gap)
    at = run_page(RESULTS)
    shown = " ".join(texts(at.markdown) + texts(at.success) + texts(at.warning) + texts(at.info))
    assert "No topic is a gap" not in shown
    assert f"{GAMMA} (untested document" in shown
    links = [n for n in at.main if n.type == "page_link"]
    key = Verdicts.from_analysis(own_gap).gaps[0].key
    assert [link.proto.query_string for link in links] == [f"{state.GAP_PARAM}={key}"]

    at = gap_page(own_gap, monkeypatch, query={state.GAP_PARAM: key})
    opened = [e.label for e in at.expander if e.proto.expanded and e.label[:1].isdigit()]
    assert len(opened) == 1 and opened[0].startswith("1. ") and "gamma" in opened[0]
    assert at.session_state[state.GAP_FOCUS] == key
    assert GAPS.endswith("4_gaps.py")
