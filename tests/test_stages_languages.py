"""The text-reading stages on corpora that are not English: topic names, the word check, subjects, probes."""

import numpy as np
import pytest

from coverage_core.stages import calibration, topics
from coverage_core.stages.lexical import Reading, _question_terms, corpus_reading, lexical_coverage
from coverage_core.stages.subjects import question_subjects, subject_presence
from coverage_core.stages.topics import topic_labels
from coverage_core.types import Chunk

FRENCH_CHUNKS = [
    "Le volcan de l'île est entré en éruption en 1793. Les coulées de lave ont recouvert la côte et le cratère fume encore.",
    "Les géologues étudient le cratère du volcan depuis des années. La lave du volcan est riche en basalte.",
    "Le cratère du volcan est surveillé par des géologues, car une nouvelle éruption est possible.",
    "Le club de football a remporté le championnat de France avec son entraîneur et ses joueurs.",
    "Les joueurs du club ont gagné la coupe et le championnat grâce à leur entraîneur.",
    "L'entraîneur du club de football a recruté des joueurs pour la saison du championnat.",
]
FRENCH_STOP = {"le", "la", "les", "des", "est", "du", "de", "en", "et", "par", "pour", "ses", "son", "une", "car", "ont"}

CHINESE_CHUNKS = [
    "首爾是南韓的首都，也是南韓最大的城市。首爾的人口超過一千萬人。",
    "南韓的首都首爾位於漢江流域，首爾是南韓的政治中心。",
    "南韓的經濟在首爾發展迅速，首爾有許多大型企業。",
    "稻米是亞洲的主要糧食作物，水稻需要大量的水來栽培。",
    "水稻的栽培在亞洲有數千年的歷史，稻米是許多國家的主食。",
    "農民在水田中栽培水稻，稻米的產量取決於氣候。",
]
CHINESE_STOP_CHARACTERS = {"的", "是", "在", "有", "也", "了", "和"}

ENGLISH_CHUNKS = [
    "The octopus is a cephalopod with eight arms and a soft body.",
    "Cephalopods such as the octopus and the squid change colour.",
    "Kuala Lumpur is the capital of Malaysia and its largest city.",
    "The violin is a string instrument played with a bow.",
]
ENGLISH_QUESTIONS = [
    "How many arms does an octopus have?",
    "Is the squid a cephalopod?",
    "What is the capital of Malaysia?",
    "Who invented the telephone?",
    "What colour does the violin bow change?",
]


def test_french_topic_labels_are_content_words_not_stop_words():
    labels = topic_labels(FRENCH_CHUNKS, [0, 0, 0, 1, 1, 1], 2)
    words = [set(label.replace(" · ", " ").split()) for label in labels]
    assert all(words) and not (words[0] | words[1]) & FRENCH_STOP, labels
    assert "volcan" in words[0] and {"club", "championnat"} & words[1], labels


def test_chinese_topic_labels_are_character_pairs_without_stop_characters():
    labels = topic_labels(CHINESE_CHUNKS, [0, 0, 0, 1, 1, 1], 2)
    terms = [label.split(" · ") for label in labels]
    assert all(terms), labels
    for term in terms[0] + terms[1]:
        assert 2 <= len(term) <= 3 and not set(term) & CHINESE_STOP_CHARACTERS, labels
    assert {"首爾", "南韓"} & set(terms[0]) and ("水稻" in terms[1] or "稻米" in terms[1]), labels


NAPOLEON_CHUNKS = [
    "拿破崙三世是法國的皇帝，拿破崙三世在巴黎稱帝。",
    "法國皇帝拿破崙三世推動巴黎的改建。",
    "拿破崙三世的軍隊在色當戰敗，拿破崙三世被俘。",
    "拿破崙三世喜歡巴黎，拿破崙三世的政府改建巴黎。",
]


def test_chinese_topic_labels_name_whole_names_not_the_character_pairs_that_cut_them():
    labels = topic_labels(NAPOLEON_CHUNKS + CHINESE_CHUNKS[3:], [0, 0, 0, 0, 1, 1, 1], 2)
    terms = labels[0].split(" · ")
    assert "拿破崙三世" in terms, labels
    assert not any(term != "拿破崙三世" and term in "拿破崙三世" for term in terms), labels  # no "破崙", "崙三"
    # Seen 5 times, 4 of them before 的: chance in a few sentences, so "南韓" stays itself.
    assert topics._whole_word("南韓", "".join(CHINESE_CHUNKS[:3])) == "南韓"
    zhou = ["周恩來是總理。", "毛澤東與周恩來會談。", "周恩來出生於淮安。", "總理周恩來訪問印度。", "周恩來的外交。",
            "人們紀念周恩來。"]
    assert topics._whole_word("周恩", "".join(zhou)) == "周恩來"
    assert topics._whole_word("周恩", "".join(zhou[:5])) == "周恩"  # too few to tell
    # A pair straddling two words grows into a run holding a better ranked word: the word stays.
    assert topics._without_parts(["韓國", "韓國國", "韓語", "韓語"]) == ["韓國", "韓語"]


def test_english_word_check_is_exactly_the_english_only_computation():
    found = lexical_coverage(ENGLISH_QUESTIONS, ENGLISH_CHUNKS)
    english = lexical_coverage(ENGLISH_QUESTIONS, ENGLISH_CHUNKS, reading=Reading())
    np.testing.assert_array_equal(found[0], english[0])
    np.testing.assert_array_equal(found[1], english[1])
    assert found[2] == english[2]
    # And the values themselves: "octopus" and "arms" in chunk 0; "telephone" and "invented" nowhere.
    assert found[0][0] == pytest.approx(1.0, abs=1e-12) and found[1][0] == 0
    assert found[0][3] == pytest.approx(0.0, abs=1e-12) and found[2][3] == ["invent", "telephon"]


def test_french_question_words_are_stop_words_and_accents_are_optional():
    reading = corpus_reading(FRENCH_CHUNKS)
    assert "fr" in reading.languages and reading.accentless and not reading.spaceless
    terms = _question_terms(reading.text("Quel est le nom du cratère et les géologues ?"), reading.stop)
    assert terms == [b"nom", b"crater", b"geologu"]
    # A question typed without accents finds the accented words.
    coverage, best, absent = lexical_coverage(["Quand le crater du volcan est-il entre en eruption ?"], FRENCH_CHUNKS)
    assert best[0] == 0 and absent == [[]] and coverage[0] == pytest.approx(1.0, abs=1e-9)


def test_a_french_century_written_another_way_is_the_same_period():
    """fr-qa: "Quel était le reproche ... au XXème siècle ?" was flagged as asking about "XXème", which the
    documents, writing "XXe siècle", never mention."""
    chunks = FRENCH_CHUNKS + ["Au XXe siècle, le club de football a changé de stade et de couleurs."]
    reading = corpus_reading(chunks)
    assert reading.text("XXème") == reading.text("XXe") == reading.text("XXᵉ") == "XXe"
    assert reading.text("20ème siècle") == "20e siecle"
    # Words that merely end like an ordinal keep their letters.
    assert reading.text("la vie de Louis XIV") == "la vie de Louis XIV"
    evidence = subject_presence(["Qu'a changé le club au XXème siècle ?"], chunks, np.array([[6]]), reading=reading)
    found = {e.subject.text: (e.subject.kind, e.n_passages) for e in evidence[0]}
    # A period, like a year: it counts against the question only when no passage has it.
    assert found.get("XXème") == ("period", 1)
    assert not any(s.kind == "period" for s in question_subjects("Le club et Ce stade", reading))


def test_chinese_questions_get_a_lexical_coverage_from_character_pairs():
    questions = ["南韓的首都是哪裡？", "水稻需要多少水？", "火星上有水嗎？"]
    coverage, best, absent = lexical_coverage(questions, CHINESE_CHUNKS)
    assert corpus_reading(CHINESE_CHUNKS).spaceless
    assert coverage[0] == pytest.approx(1.0, abs=1e-9) and best[0] in (0, 1)
    assert coverage[1] > 0.5 and best[1] in (3, 4, 5)
    assert coverage[2] < 0.5 and "火星" in absent[2]
    # Punctuation and lone characters are no words: "？" and "的" never count.
    assert all("？" not in words and "的" not in words for words in absent)


def test_chinese_questions_list_no_absent_content_words_but_find_years_and_acronyms():
    chunks = CHINESE_CHUNKS + ["首爾在1988年舉辦了奧運會，NBA球隊也曾來訪。"]
    evidence = subject_presence(["南韓的火星探測器在1988年做了什麼？", "NBA球隊哪年來訪？"], chunks,
                                np.array([[6], [6]]), content_words=True)
    kinds = [{e.subject.text: (e.subject.kind, e.n_passages) for e in found} for found in evidence]
    assert kinds == [{"1988": ("period", 1)}, {"NBA": ("acronym", 1)}]


GERMAN_CHUNKS = [
    "Der Turm der Stadt wurde im Mittelalter gebaut und ist heute ein Museum für die Besucher.",
    "Die Stadt Bremen liegt an der Weser und hat einen großen Hafen für die Schiffe.",
    "Im Hafen der Stadt werden jedes Jahr viele Waren aus aller Welt umgeschlagen.",
]


def test_german_single_capitalised_nouns_are_common_words_multi_word_names_stay_names():
    reading = corpus_reading(GERMAN_CHUNKS)
    assert "de" in reading.languages
    subjects = {s.text: s.kind for s in question_subjects("Wann hat Karl Müller den Turm in Bremen gebaut?", reading)}
    assert subjects == {"Karl Müller": "name", "Turm": "word", "Bremen": "word"}
    # In English a single capitalised word inside a sentence is a name.
    assert [(s.text, s.kind) for s in question_subjects("How tall is the Turm?")] == [("Turm", "name")]


def test_chinese_sentences_split_on_full_stops_and_make_probes():
    text = "南韓是一個位於東亞的國家。首都是首爾，人口很多！他說：「我來了。」然後他走了很久；\n標題"
    assert calibration._sentences(text) == [
        "南韓是一個位於東亞的國家。", "首都是首爾，人口很多！", "他說：「我來了。」", "然後他走了很久；", "標題"]
    assert calibration.probe_words("南韓是一個國家。") == 7 and calibration.probe_words("a b c") == 3
    texts = [CHINESE_CHUNKS[i % 6] + CHINESE_CHUNKS[(i + 1) % 6] + CHINESE_CHUNKS[(i + 3) % 6] for i in range(12)]
    chunks = [Chunk(document=f"d{i % 3}", text=t, start=0, end=len(t)) for i, t in enumerate(texts)]
    probes = calibration.sample_probes(chunks, max_probes=50)
    assert len(probes) >= calibration.MIN_PROBES
    assert all(calibration.probe_words(sentence) >= calibration.MIN_PROBE_WORDS for _, sentence, _ in probes)


def test_questions_in_another_language_than_the_documents_keep_no_word_evidence():
    from coverage_core.offtopic.screener import QuestionScreener

    chunks = [
        "Moscou est la capitale de la Russie et sa plus grande ville, sur la Moskova.",
        "Martin Brodeur a joué dans la Ligue nationale de hockey pour les Devils du New Jersey.",
        "Le bronzage est une réaction de la peau aux rayons ultraviolets du soleil.",
    ] * 4
    questions = [
        "What river flows through Moscow, the capital of Russia?",  # English: names written otherwise
        "Which NHL team did Martin Brodeur play for?",
        "Quelle rivière traverse Moscou ?",  # French, as the documents
    ]
    rng = np.random.default_rng(0)
    C = rng.normal(size=(len(chunks), 8))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    Q = C[[0, 1, 0]] + 0.01  # each question right on its passage
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    screener = QuestionScreener(random_state=0, question_support_threshold=0.5).fit(
        Q, C, np.arange(len(chunks)) % 3, question_texts=questions, chunk_texts=chunks)
    assert screener.foreign_.tolist() == [True, True, False]
    assert np.isnan(screener.lexical_coverage_[:2]).all() and np.isfinite(screener.lexical_coverage_[2])
    # "NHL" is "LNH" in French: without the rule for foreign questions it would be a subject never mentioned.
    assert not screener.absent_subject_[:2].any() and not screener.is_outlier_.any()
    # Every question in another language: the note says why the words are not read (not "no content word").
    english = QuestionScreener(random_state=0, question_support_threshold=0.5).fit(
        Q[:2], C, np.arange(len(chunks)) % 3, question_texts=questions[:2], chunk_texts=chunks)
    assert any(note.startswith("Every question is in another language than the documents") for note in english.warnings_)
    assert not any("content word" in note for note in english.warnings_)


@pytest.mark.parametrize("chunks, questions, weight", [
    (FRENCH_CHUNKS, ["Quand le volcan entra-t-il en éruption ?", "Qui a entraîné le club de football ?"],
     "INFLECTED_LEXICAL_WEIGHT"),
    (ENGLISH_CHUNKS, ENGLISH_QUESTIONS[:2], "MARGIN_LEXICAL_WEIGHT"),
    (CHINESE_CHUNKS, ["南韓的首都是哪裡？", "水稻需要多少水？"], "MARGIN_LEXICAL_WEIGHT"),
])
def test_words_weigh_less_in_the_support_margin_where_the_word_index_leaves_inflections_apart(
        chunks, questions, weight):
    from coverage_core.offtopic import screener as screening

    reading = corpus_reading(chunks, questions)
    assert reading.folds_word_forms == (weight == "MARGIN_LEXICAL_WEIGHT")
    rng = np.random.default_rng(0)
    C = rng.normal(size=(len(chunks), 16))
    Q = C[[0, 3]] + 0.5 * rng.normal(size=(2, 16))
    tau = 0.6
    s = screening.QuestionScreener(question_support_threshold=tau).fit(
        Q, C, question_texts=questions, chunk_texts=chunks)
    expected = getattr(screening, weight)
    assert s.lexical_weight_ == expected
    np.testing.assert_allclose(
        s.support_margin_, screening.support_margin(s.max_similarity_, s.lexical_coverage_, tau, expected),
        atol=1e-12)
    assert screening.INFLECTED_LEXICAL_WEIGHT < screening.MARGIN_LEXICAL_WEIGHT
