import numpy as np
import pytest

from coverage_core.offtopic.absent_subject import weakest_subject
from coverage_core.offtopic.absent_word import absent_word
from coverage_core.offtopic.name_in_passing import PASSING_COMPANY, named_in_passing
from coverage_core.offtopic.names_no_document import names_a_document_subject
from coverage_core.stages import subjects
from coverage_core.stages.subjects import question_subjects, subject_presence


def names(text):
    return [(s.text, s.kind) for s in question_subjects(text)]


@pytest.mark.parametrize(
    "question, expected",
    [
        ("How did Intel's gross margin change?", [("Intel", "name")]),
        ("Did Abraham Lincoln sign it?", [("Abraham Lincoln", "name")]),
        ("Abraham Lincoln was born where?", [("Abraham Lincoln", "name")]),
        ("Intel's revenue grew?", [("Intel", "name")]),
        ("Who founded the Bank of America?", [("Bank of America", "name")]),
        ("Was Leonardo da Vinci left-handed?", [("Leonardo da Vinci", "name")]),
        # Particles of French, Portuguese and Arabic names join one name, so a typo in one word of it
        # is judged with the rest ("Collge des Quatre-Nations" is the corpus's college).
        ("Did he study at the Collège des Quatre-Nations?", [("Collège des Quatre-Nations", "name")]),
        ("Was Harun al Rashid a caliph?", [("Harun al Rashid", "name")]),
        ("What does AMD make?", [("AMD", "acronym")]),
        ("What did NVIDIA and Microsoft announce?", [("NVIDIA", "acronym"), ("Microsoft", "name")]),
        ("What happened in 1887?", [("1887", "period")]),
        ("What was revenue in Q3 2023?", [("Q3 2023", "period")]),
        ('What does "gross margin" mean here?', [("gross margin", "quoted")]),
        # A capital at the start of a question says nothing; nor do question and calendar words.
        ("Did the battery work in March?", []),
        ("Volta invented what?", []),
        ("Who plays violin?", []),
        ("How Did Intel's Gross Margin Change?", [("Intel", "name"), ("Gross Margin Change", "name")]),
        ("Have two paintings sold for more than US0 million?", []),
    ],
)
def test_question_subjects(question, expected):
    assert names(question) == expected


def test_subject_stems_fold_case_and_possessives():
    (intel,) = question_subjects("Was INTEL's margin good?")
    assert intel.stems == (b"intel",)
    (apple,) = question_subjects("How did the Apples' sales go?")
    assert apple.stems == (b"appl",)


CHUNKS = [
    "Apple reported revenue of 90 billion dollars in the quarter; gross margin rose.",
    "NVIDIA data center revenue grew; gross margin was 70 percent.",
    "Apple services revenue grew in the quarter.",
    "NVIDIA announced a partnership with Microsoft for cloud computing.",
    "NVIDIA gaming revenue fell in the quarter.",
    "Apple iPhone revenue in the quarter was 40 billion dollars.",
    "Avogadro proposed that equal volumes of gas hold equal numbers of molecules.",
]


def evidence(question, retrieved=(0, 1), **kwargs):
    (found,) = subject_presence([question], CHUNKS, np.array([list(retrieved)]), **kwargs)
    return {e.subject.text: e for e in found}


def test_absent_subject_is_in_no_passage():
    found = evidence("How did Intel's gross margin change?")
    assert found["Intel"].n_passages == 0 and not found["Intel"].retrieved


def test_a_passing_subject_the_question_reaches_by_similarity_counts_as_retrieved():
    texts = ["Apple reported revenue growth.", "Microsoft is a partner of Apple.", "Apple sells phones."]
    asked = ["How did Microsoft's revenue grow?"]
    far = subject_presence(asked, texts, np.array([[0, 2]]))[0]
    near = subject_presence(asked, texts, np.array([[0, 2]]), reaches=lambda q, passages: 1 in passages)[0]
    assert [(e.subject.text, e.retrieved) for e in far] == [("Microsoft", False)]
    assert [(e.subject.text, e.retrieved) for e in near] == [("Microsoft", True)]


def test_passing_subject_counts_its_passages_and_whether_a_retrieved_one_mentions_it():
    passing = evidence("How did Microsoft's revenue grow?", retrieved=(0, 1, 2))["Microsoft"]
    assert (passing.n_passages, passing.retrieved) == (1, False)
    reached = evidence("How did Microsoft's revenue grow?", retrieved=(3, 1))["Microsoft"]
    assert (reached.n_passages, reached.retrieved) == (1, True)
    present = evidence("How did Apple's revenue grow?", retrieved=(1,))["Apple"]
    assert present.n_passages == 3 and not present.retrieved


def test_typos_and_partial_names_are_not_absent():
    # A typo counts as the corpus word when the question reaches a passage holding it.
    assert evidence("What did Avagadro propose?", retrieved=(6, 0))["Avagadro"].n_passages == 1
    assert evidence("What did Avagadro propose?", retrieved=(0, 1))["Avagadro"].n_passages == 0
    # A name of several words is as present as its most present word.
    assert evidence("What did Amedeo Avogadro propose?")["Amedeo Avogadro"].n_passages == 1
    # Short names are not spelling-fixed: "Intel" is no typo of a corpus word.
    assert evidence("Did Intel grow?")["Intel"].n_passages == 0


def test_an_acronym_the_retrieved_passages_write_out_is_present():
    texts = ["Brodeur won gold at the Winter Olympic Games in 2002 with the National Hockey League's best.",
             "The Parti communiste ran joint lists.", "Prices of the paid time off plan.", "Weather in spring."]

    def found(question, retrieved):
        (evidence,) = subject_presence([question], texts, np.array([retrieved]))
        return {e.subject.text: (e.n_passages, e.retrieved) for e in evidence}

    assert found("Which NHL team did Brodeur join?", [0, 3])["NHL"] == (1, True)
    assert found("How many lists with the PC?", [1])["PC"] == (1, True)
    assert found("How many PTO days are there?", [2])["PTO"] == (1, True)
    # Only a passage the question retrieves is read; and two lower-case words spell two letters by chance.
    assert found("Which NHL team did Brodeur join?", [3])["NHL"] == (0, False)
    assert found("Is the PT plan good?", [2])["PT"] == (0, False)
    assert found("Which NBA team did Brodeur join?", [0, 1, 2, 3])["NBA"] == (0, False)


def test_document_names_are_the_corpus_own_subjects():
    found = evidence("What does the Northwind Standard plan cover?",
                     document_names=["Northwind_Standard_Benefits.pdf", "NorthwindHealthPlus.pdf"])
    assert found["Northwind Standard"].n_passages == 0
    assert found["Northwind Standard"].in_document_names
    assert not evidence("What does the Contoso plan cover?", document_names=["Northwind.pdf"])[
        "Contoso"].in_document_names


def test_absent_subject_verdict_boundary():
    from coverage_core.offtopic.absent_subject import is_absent

    n = np.array([-1, 0, 1, 5, 5, 6])
    retrieved = np.array([False, False, False, False, True, False])
    assert is_absent(n, retrieved, few=5).tolist() == [False, True, True, True, False, False]
    assert is_absent([10, 11], [False, False]).tolist() == [True, False]
    assert is_absent(n, retrieved, few=0).tolist() == [False, True, False, False, False, False]


def test_no_questions_or_no_subjects():
    assert subject_presence([], CHUNKS, np.zeros((0, 2), int)) == []
    assert subject_presence(["what is revenue?"], CHUNKS, np.array([[0]])) == [[]]


ANIMAL_CHUNKS = [
    "The octopus is a cephalopod with eight arms and a soft body.",
    "Cephalopods such as the octopus and the squid change colour.",
    "The octopus lives in coral reefs and on the sea floor.",
    "Kuala Lumpur is the capital of Malaysia.",
]


def animal_evidence(question, retrieved=(0, 1)):
    (found,) = subject_presence([question], ANIMAL_CHUNKS, np.array([list(retrieved)]), content_words=True)
    return {e.subject.text: e for e in found}


def test_content_words_are_subjects_only_when_asked_for():
    assert subject_presence(["Is the cougar a cephalopod?"], ANIMAL_CHUNKS, np.array([[0]])) == [[]]
    found = animal_evidence("Is the cougar a cephalopod?")
    assert {t: (e.subject.kind, e.n_passages) for t, e in found.items()} == {
        "cougar": ("word", 0), "cephalopod": ("word", 2)}
    # A word already inside a name is not listed again; contractions are no content words.
    found = animal_evidence("Wasn't Kuala Lumpur the capital of Malaysia?", retrieved=(3,))
    assert [(t, e.subject.kind) for t, e in found.items()] == [
        ("Kuala Lumpur", "name"), ("Malaysia", "name"), ("capital", "word")]


def test_a_misspelt_word_counts_as_its_fix_only_when_the_question_reaches_that_fix():
    # "octopos" is one slip from "octopus": reached, it is that word.
    assert animal_evidence("Is the octopos a cephalopod?", retrieved=(0, 2))["octopos"].n_passages == 3
    # "koala" is one slip from "kuala", but a question about koalas does not reach Kuala Lumpur.
    assert animal_evidence("Does the koala eat leaves?", retrieved=(0, 1))["koala"].n_passages == 0
    assert animal_evidence("Does the koala eat leaves?", retrieved=(3,))["koala"].n_passages == 1


def test_era_markers_are_no_subjects():
    assert names("Did Vietnamese come to predominate politically in 2nd century BC?") == [("Vietnamese", "name")]
    # Written eras too: "since Before Christ" asks about a time.
    assert names("Had the drums been used in Sri Lanka since Before Christ?") == [("Sri Lanka", "name")]
    assert names("Was it built in the first century of the Common Era?") == []


VOLTA_CHUNKS = [
    "Alessandro Volta was an Italian physicist who invented the battery.",
    "Volta was born in Como and taught at Pavia.",
    "Egyptian tombs held jars that some call ancient batteries.",
]


def test_a_name_in_passing_is_what_a_question_asks_of_a_document_subject_it_reaches():
    question = ["Was Alessandro Volta an Egyptian?"]
    own = subject_presence(question, VOLTA_CHUNKS, np.array([[0, 1]]), document_names=["Alessandro_Volta.txt"])[0]
    assert subjects.asks_of_a_document_subject(own)
    assert weakest_subject(own) is None
    # Without the document of that name, or not reaching it, the passing name is the weakest subject.
    other = subject_presence(question, VOLTA_CHUNKS, np.array([[0, 1]]), document_names=["Battery.txt"])[0]
    assert weakest_subject(other).subject.text == "Egyptian"
    far = subject_presence(question, VOLTA_CHUNKS, np.array([[2]]), document_names=["Alessandro_Volta.txt"])[0]
    assert not subjects.asks_of_a_document_subject(far)
    # A name no passage has still counts.
    absent = subject_presence(["Was Alessandro Volta a friend of Pasteur?"], VOLTA_CHUNKS, np.array([[0, 1]]),
                              document_names=["Alessandro_Volta.txt"])[0]
    assert weakest_subject(absent).subject.text == "Pasteur"


@pytest.mark.parametrize("question, closed", [
    ("Was Alessandro Volta an Egyptian?", True), ("Does Fender make cymbals?", True),
    ("Isn't Malay spoken in Iraq?", True), ("  can it fly?", True), ("Could Volta swim?", True),
    ("Who made cymbals?", False), ("Which cymbals does Fender make?", False), ("Volta was born where?", False),
    ("Island life?", False), ("", False), (None, False),
])
def test_is_closed_question(question, closed):
    assert subjects.is_closed_question(question) is closed


CYMBAL_CHUNKS = [
    "Cymbals are made by Zildjian, Sabian and Paiste from bronze alloys.",
    "A cymbal has a bell, a bow and an edge.",
    "Guitars have six strings and are played with a pick.",
]


def test_a_closed_question_of_a_document_subject_names_nothing_absent():
    """A yes-or-no question that names a document's own subject and reaches it asks that subject to be or have
    what else it names: the documents answer it (no), so no name of it is absent."""
    volta = subject_presence(["Was Alessandro Volta a friend of Pasteur?"], VOLTA_CHUNKS, np.array([[0, 1]]),
                             document_names=["Alessandro_Volta.txt"])[0]
    assert weakest_subject(volta, closed=True) is None
    assert {e.subject.text: e.names_a_document for e in volta} == {"Alessandro Volta": True, "Pasteur": False}
    assert weakest_subject(volta).subject.text == "Pasteur"
    # A common word that is a document's whole name anchors a closed question too.
    fender = subject_presence(["Does Fender make cymbals?"], CYMBAL_CHUNKS, np.array([[0, 1]]),
                              document_names=["Cymbal.txt", "Guitar.txt"], content_words=True)[0]
    assert {e.subject.text: e.names_a_document for e in fender} == {"Fender": False, "make": False, "cymbals": True}
    assert subjects.asks_of_a_document_subject(fender, closed=True)
    assert not subjects.asks_of_a_document_subject(fender)
    assert weakest_subject(fender, closed=True) is None
    assert weakest_subject(fender).subject.text == "Fender"
    # Not when the word is only part of a document's name, or the question does not reach the document.
    part = subject_presence(["Does Fender make cymbals?"], CYMBAL_CHUNKS, np.array([[0, 1]]),
                            document_names=["Cymbal_makers.txt"], content_words=True)[0]
    assert weakest_subject(part, closed=True).subject.text == "Fender"
    far = subject_presence(["Does Fender make cymbals?"], CYMBAL_CHUNKS, np.array([[2]]),
                           document_names=["Cymbal.txt"], content_words=True)[0]
    assert weakest_subject(far, closed=True).subject.text == "Fender"
    # A closed question that names no document keeps its absent name ("Is Berlin the capital of Germany?").
    berlin = subject_presence(["Is Berlin bigger than Zildjian?"], CYMBAL_CHUNKS, np.array([[0, 1]]),
                              document_names=["Cymbal.txt"], content_words=True)[0]
    assert weakest_subject(berlin, closed=True).subject.text == "Berlin"


def test_document_name_extensions_name_no_subject_of_the_document():
    (found,) = subject_presence(["Is the TXT file a cymbal?"], CYMBAL_CHUNKS, np.array([[0]]),
                                document_names=["Cymbal.txt"], content_words=True)
    by_text = {e.subject.text: e for e in found}
    assert by_text["TXT"].in_document_names and not by_text["TXT"].names_a_document
    assert by_text["cymbal"].names_a_document


def test_a_past_form_is_no_absent_word():
    assert absent_word(list(animal_evidence("What prompted the octopus to change colour?").values())) is None
    found = absent_word(list(animal_evidence("What made the cougar change colour?").values()))
    assert found.subject.text == "cougar"
    # Short words ending in -ed are nouns as often as not.
    assert absent_word(list(animal_evidence("Does the octopus breed?").values())).subject.text == "breed"


def test_a_term_the_question_asks_a_subject_is_called_is_no_absent_word():
    for question in ("Is the octopus called a siphon?", "Is the octopus known as a devilfish?",
                     "Is the octopus referred to as the devilfish?"):
        assert absent_word(list(animal_evidence(question).values())) is None, question
    # The subject itself, named before the term, still counts.
    found = absent_word(list(animal_evidence("Is the cougar called a puma?").values()))
    assert found.subject.text == "cougar"


ESTONIA_CHUNKS = [
    "Most Swedish speakers fled before the invasion of Estonia by the Soviet army in 1944.",
    "Estonia was independent from 1918 to 1940.",
    "Swedish is spoken in Finland and Sweden.",
    "The Soviet Union built factories in the east.",
]


def test_a_passage_naming_two_of_the_questions_names_is_company_whatever_words_it_uses():
    question = "When did the Soviet military forces occupy Estonia?"
    (found,) = subject_presence([question], ESTONIA_CHUNKS, np.array([[1, 2]]), content_words=True)
    estonia = {e.subject.text: e for e in found}["Estonia"]
    # "army" and "invasion" paraphrase "military forces" and "occupy": one of four other words only.
    assert estonia.company == 1.0
    assert named_in_passing(found).company == 1.0
    # Without the other name beside it, the same passage holds too little of the question.
    (alone,) = subject_presence(["When did the military forces occupy Estonia?"], ESTONIA_CHUNKS,
                                np.array([[1, 2]]), content_words=True)
    assert {e.subject.text: e for e in alone}["Estonia"].company <= PASSING_COMPANY


def test_a_question_names_a_document_subject_by_a_word_of_its_name_or_title_that_it_reaches():
    names = ["Octopus.txt", "Kuala_Lumpur.txt"]

    def anchored(question, retrieved=(0, 1), document_names=names):
        (found,) = subject_presence([question], ANIMAL_CHUNKS, np.array([list(retrieved)]),
                                    document_names=document_names, content_words=True)
        return names_a_document_subject(found)

    assert anchored("Does the octopus keep its ink someplace?")
    assert anchored("Is Kuala Lumpur hot?", retrieved=(3,))
    # A misspelt word that the question reaches reads as its fix, and so names the document.
    assert anchored("Does the octopos keep its ink someplace?", retrieved=(0, 2))
    # Named but not reached, not named, or named only by a file called otherwise: no anchor.
    assert not anchored("Is Kuala Lumpur hot?", retrieved=(0, 1))
    assert not anchored("Is the cougar a cephalopod?")
    assert not anchored("Does the octopus keep its ink someplace?", document_names=["doc_01.txt"])
    # The first line of a document, when it reads as a title, names it as well as its file.
    titles = subjects.document_titles(["Octopus\n\nThe octopus is a cephalopod.", "More on arms.",
                                       "A long first sentence that ends like a sentence.\nMore.",
                                       "# Kuala Lumpur\nThe capital."],
                                      ["doc_01.txt", "doc_01.txt", "doc_02.txt", "doc_03.txt"])
    assert titles == ["Octopus", "Kuala Lumpur"]
    assert anchored("Does the octopus keep its ink someplace?", document_names=["doc_01.txt", *titles])
    assert subjects.document_titles([], []) == []


def _word_evidence(absent_word, margin, names_no_document):
    """Evidence of questions with (or without) an absent word, naming (or not) a document they reach."""
    from coverage_core.offtopic import Evidence
    from coverage_core.stages.subjects import Subject, SubjectEvidence

    word = SubjectEvidence(Subject("cougar", "word", (b"cougar",)), 0, False)
    document = SubjectEvidence(Subject("octopus", "word", (b"octopus",)), 4, True, names_a_document=True)
    found = [([word] if absent else []) + ([] if unnamed else [document])
             for absent, unnamed in zip(absent_word, names_no_document)]
    return Evidence(max_similarity=np.zeros(len(found)), level=0.5, support_margin=np.asarray(margin, float),
                    subjects=found)


def test_an_absent_word_flags_whatever_the_margin_a_question_that_names_no_document():
    from coverage_core.offtopic import RuleSet
    from coverage_core.offtopic.absent_word import AbsentWord
    from coverage_core.offtopic.names_no_document import MIN_NAMING_SHARE, NamesNoDocument

    rules = RuleSet([AbsentWord(), NamesNoDocument()])
    absent = [True, True, True, True, False]
    margin = [-0.1, 0.5, -0.1, 0.5, -0.1]
    evidence = _word_evidence(absent, margin, [False, False, True, True, True])
    assert AbsentWord().mask(evidence).tolist() == [True, False, True, False, False]
    assert rules.decide(evidence, 0.5).tolist() == [True, False, True, True, False]
    assert rules.first_rules(evidence, 0.5).tolist() == ["absent_word", "", "absent_word", "names_no_document", ""]
    # Only where questions do name their documents: here none of the 2 well-supported questions does.
    nobody_names = _word_evidence(absent, margin, [True] * 5)
    assert rules.decide(nobody_names, 0.5).tolist() == [True, False, True, False, False]
    assert MIN_NAMING_SHARE > 0.1
    few_name = _word_evidence([False, False, True] + [False] * 7, [0.5] * 10, [True, False] + [True] * 8)
    assert not rules.decide(few_name, 0.5).any()


GERMAN_CHUNKS = [
    "Die deutsche Fußballnationalmannschaft ist die Auswahl des Deutschen Fußball-Bundes. Die Mannschaft gewann "
    "die Weltmeisterschaft im Jahr 2014 in Brasilien, und der Welt gehört seither ihr Titel.",
    "Der Spieler Thomas Müller spielt beim FC Bayern München als Stürmer. Welche Position er spielt, wechselt oft.",
    "Die Nation feierte den Titel, und die Spieler kehrten als Meister nach Hause zurück.",
] * 4


def test_german_interrogatives_and_common_nouns_are_no_names():
    from coverage_core.stages.lexical import corpus_reading

    questions = ["Welches Team gewann die Weltmeisterschaft?", "Welche Position spielt Thomas Müller?",
                 "Welcher Spieler spielt beim FC Bayern?"]
    reading = corpus_reading(GERMAN_CHUNKS, questions)
    assert reading.capitalises_nouns and reading.joins_compounds
    named = [[s.text for s in question_subjects(q, reading) if s.kind != "word"] for q in questions]
    assert named == [[], ["Thomas Müller"], ["FC Bayern"]]
    # In English, a capitalised word inside a sentence is a name as before.
    assert [s.kind for s in question_subjects("Which team did Müller join?")] == ["name"]


def test_a_german_compound_no_passage_writes_is_matched_by_its_parts():
    from coverage_core.stages.compounds import compound_splits
    from coverage_core.stages.lexical import corpus_reading, lexical_coverage, normalize_word

    assert (b"nation", b"titel") in compound_splits(b"nationstitel", normalize_word)
    assert (b"welt", b"meister") in compound_splits(b"weltmeister", normalize_word)
    assert compound_splits(b"titel", normalize_word) == []
    questions = ["Wann feierte die Nation den Meistertitel?", "Wann feierte die Nation den Zauberbesen?"]
    coverage, _, absent = lexical_coverage(questions, GERMAN_CHUNKS, reading=corpus_reading(GERMAN_CHUNKS, questions))
    assert absent[0] == [] and coverage[0] == pytest.approx(1.0)  # "Meister" and "Titel" in one passage
    assert absent[1] == ["zauberbesen"] and coverage[1] < 0.7  # no part of it is a word of the passages
    # English reads no compounds: the same word stays absent.
    english = ["When did the nation celebrate the meistertitel?"]
    eng_coverage, _, _ = lexical_coverage(english, ["The nation celebrated the titel of the meister."] * 3)
    assert eng_coverage[0] < 1.0


def test_a_word_well_supported_questions_near_several_documents_use_is_wording_not_a_subject():
    from coverage_core.offtopic import Evidence
    from coverage_core.offtopic.absent_word import AbsentWord, style_words
    from coverage_core.stages.subjects import Subject, SubjectEvidence

    def word(text):
        return SubjectEvidence(Subject(text, "word", (text.encode(),)), 0, False)

    from coverage_core.offtopic.absent_word import STYLE_DOCUMENTS

    # "hello" opens supported questions near three documents; "cougar" only questions near one.
    assert STYLE_DOCUMENTS == 3
    found = [[word("hello")]] * 4 + [[word("cougar")], [word("cougar")]]
    margin = np.array([0.5, 0.2, 0.1, -0.5, 0.3, -0.4])
    near = np.array(["Renew.txt", "Fees.txt", "Tax.txt", "Renew.txt", "Koala.txt", "Koala.txt"], dtype=object)
    evidence = Evidence(max_similarity=np.zeros(6), level=0.5, support_margin=margin, subjects=found,
                        nearest_document=near)
    assert style_words(evidence) == {b"hello"}
    assert AbsentWord().mask(evidence).tolist() == [False] * 5 + [True]
    # Asked to be near four documents, the same word is still a subject.
    assert style_words(evidence, min_documents=4) == frozenset()
    # Without the documents nothing is read as wording.
    unknown = Evidence(max_similarity=np.zeros(6), level=0.5, support_margin=margin, subjects=found)
    assert style_words(unknown) == frozenset()
    assert AbsentWord().mask(unknown).tolist() == [False, False, False, True, False, True]


def test_the_name_in_passing_rule_reads_names_only_where_a_capital_marks_one():
    from coverage_core.offtopic.name_in_passing import NameInPassing
    from coverage_core.stages.lexical import corpus_reading

    german = corpus_reading(GERMAN_CHUNKS, ["Welches Team gewann die Weltmeisterschaft?"])
    english = corpus_reading(["The octopus is a cephalopod with eight arms and ink."] * 4)
    assert not NameInPassing().applies(german)
    assert NameInPassing().applies(english) and not NameInPassing().applies(None)
