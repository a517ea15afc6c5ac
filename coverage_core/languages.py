"""Which languages the documents and questions are written in, and how each one is read as words.

Detection is py3langid (a maintained fork of langid.py: a naive Bayes model
over byte n-grams for 97 languages, shipped in the wheel, numpy only, so
nothing is downloaded). Stop words come from stopwords-iso (``stopwordsiso``,
58 languages). Languages written without spaces between words (Chinese,
Japanese, Thai) are read as overlapping pairs of characters, the CJK reading
of search engines (Lucene's CJKAnalyzer), since no segmenter is bundled.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from coverage_core.invisible import strip_invisible

UNDETERMINED = "und"
"""The code of a text too short or too bare (numbers, symbols) to tell its language."""

# Below this many letters a text's language is not guessed on its own
# ("Q3?"); it takes the corpus's main language when detection restricts to it.
MIN_LETTERS = 3
# A guess from the unrestricted model below this probability is retried among
# the corpus's languages (short questions: "Was Volta an Egyptian?" reads as
# Nigerian Pidgin at 0.07 among 97 languages, as English among the corpus's).
CONFIDENT = 0.9
# Only this many leading characters are read: enough for a stable guess,
# and a long chunk costs no more than a paragraph.
DETECTION_CHARS = 2000

LANGUAGE_NAMES = {
    "af": "Afrikaans", "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cs": "Czech",
    "da": "Danish", "de": "German", "el": "Greek", "en": "English", "es": "Spanish", "et": "Estonian",
    "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French", "ga": "Irish", "gl": "Galician",
    "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "hy": "Armenian", "id": "Indonesian",
    "it": "Italian", "ja": "Japanese", "ko": "Korean", "la": "Latin", "lt": "Lithuanian", "lv": "Latvian",
    "ms": "Malay", "nl": "Dutch", "no": "Norwegian", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian",
    "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "sr": "Serbian", "sv": "Swedish", "sw": "Swahili",
    "th": "Thai", "tl": "Tagalog", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese",
    "zh": "Chinese", UNDETERMINED: "undetermined",
}

# py3langid tells apart written varieties no model or stop-word list does:
# Traditional-character questions often read as Cantonese or Wu.
ALIASES = {"yue": "zh", "wuu": "zh", "gan": "zh", "hak": "zh", "nan": "zh", "cmn": "zh", "nb": "no", "nn": "no"}

SPACELESS = frozenset({"zh", "ja", "th", "lo", "km", "my"})
"""Languages written without spaces between words: read as character pairs."""

# Han, Hiragana, Katakana, Hangul syllables, Thai, Lao, Khmer, Myanmar.
_SPACELESS_RUN = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
    "\u0e00-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f]+"
)
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)

_IDENTIFIER = None
_IDENTIFIER_LOCK = threading.Lock()


def _identifier():
    """The py3langid model with normalised probabilities, loaded once per process (about 0.3 s)."""
    global _IDENTIFIER
    with _IDENTIFIER_LOCK:
        if _IDENTIFIER is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _IDENTIFIER = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _IDENTIFIER


def language_name(code: str) -> str:
    """The English name of ISO 639-1 ``code`` ("fr" -> "French"); the code itself when not listed."""
    return LANGUAGE_NAMES.get(code, code)


def _guess(text: str, candidates: Sequence[str] | None) -> tuple[str, float]:
    # Invisible format characters go first: py3langid reads bytes, and the bytes of zero-width spaces
    # between an English text's letters are Khmer's (which separates words with them).
    sample = strip_invisible(text[:2 * DETECTION_CHARS])[:DETECTION_CHARS]
    if len(_LETTER.findall(sample)) < MIN_LETTERS:
        return UNDETERMINED, 0.0
    return _classified(sample, tuple(candidates) if candidates else None)


@lru_cache(maxsize=16_384)  # samples are at most DETECTION_CHARS: a bounded few tens of MB
def _classified(sample: str, candidates: tuple[str, ...] | None) -> tuple[str, float]:
    # The same texts are read more than once in a run (the questions by the language profile and by the
    # screener, a passage by each gap it could serve), and py3langid costs about a millisecond per text.
    identifier = _identifier()
    with _IDENTIFIER_LOCK:
        code, probability = identifier.classify(sample)
        code = ALIASES.get(code, code)
        if probability >= CONFIDENT or not candidates or code in candidates:
            return code, float(probability)
        # Rank is over all languages; keep the best among the candidates.
        for candidate, candidate_probability in identifier.rank(sample):
            if ALIASES.get(candidate, candidate) in candidates:
                return ALIASES.get(candidate, candidate), float(candidate_probability)
    return code, float(probability)


def detect_language(text: str, candidates: Sequence[str] | None = None) -> str:
    """The ISO 639-1 code of ``text``'s language, or :data:`UNDETERMINED`; invisible format characters
    (zero-width spaces, soft hyphens, bidi marks: :func:`~coverage_core.invisible.strip_invisible`) are not read.

    ``candidates``: the languages an unsure guess (below :data:`CONFIDENT`)
    is chosen among, usually the corpus's (a short question is read against
    the documents' languages); None keeps the model's best guess.
    """
    return _guess(text if isinstance(text, str) else "", candidates)[0]


def detect_languages(texts: Iterable[str], candidates: Sequence[str] | None = None) -> list[str]:
    """:func:`detect_language` of each text."""
    return [detect_language(text, candidates) for text in texts]


@dataclass(frozen=True)
class LanguageShare:
    """One language's part of a set of texts: ``share`` of the characters, ``n_texts`` texts."""

    code: str
    name: str
    share: float
    n_texts: int


def language_shares(texts: Sequence[str], languages: Sequence[str]) -> list[LanguageShare]:
    """Each detected language's share of the characters of ``texts``, largest first (undetermined texts left out).

    Characters, not texts: one long manual outweighs ten one-line notes.
    """
    characters: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for text, code in zip(texts, languages):
        if code == UNDETERMINED:
            continue
        characters[code] += len(text or "")
        counts[code] += 1
    total = sum(characters.values())
    if not total:
        return []
    return [
        LanguageShare(code, language_name(code), characters[code] / total, counts[code])
        for code, _ in characters.most_common()
    ]


def main_languages(shares: Sequence[LanguageShare], min_share: float = 0.05) -> list[str]:
    """The codes holding at least ``min_share`` of the characters, largest first; all of them when none does.

    Fifty languages of 2% each (a help centre in every language) are fifty
    main languages, not the one that happens to be largest: the stop words,
    and the candidates a short question is read among, are all of theirs.
    """
    kept = [share.code for share in shares if share.share >= min_share]
    return kept or [share.code for share in shares]


def corpus_languages(texts: Sequence[str], sample: int = 200, min_share: float = 0.05) -> list[str]:
    """The main languages (:func:`main_languages`) of ``texts``, read from an even sample of at most ``sample`` of them.

    For stages that get only texts (topic names, the word check): cheap, and
    the same answer the report's language summary gives for a corpus.
    """
    texts = list(texts)
    if not texts:
        return []
    step = max(1, len(texts) // sample)
    picked = texts[::step][:sample]
    return main_languages(language_shares(picked, detect_languages(picked)), min_share)


# stopwords-iso's Chinese list is written in Simplified characters; Traditional text (Taiwan, Hong Kong:
# "哪裡", "什麼", "為什麼") writes these characters of its function words otherwise.
_TRADITIONAL = str.maketrans(
    "说于来么这时们为样别个后儿则当对过宁尔从与总随虽边还纵据体处关诸几设开论无里会凭见较顺经并诚罢犹类话区转难问简愿进岂让鉴极旧将万谁种归呜哟",
    "說於來麼這時們為樣別個後兒則當對過寧爾從與總隨雖邊還縱據體處關諸幾設開論無裡會憑見較順經並誠罷猶類話區轉難問簡願進豈讓鑑極舊將萬誰種歸嗚喲",
)


@lru_cache(maxsize=None)
def _stopwordsiso(code: str) -> frozenset[str]:
    import stopwordsiso

    words = frozenset(stopwordsiso.stopwords(code)) if stopwordsiso.has_lang(code) else frozenset()
    if code == "zh":
        words |= {word.translate(_TRADITIONAL) for word in words}
    return words


def stop_words(codes: Iterable[str]) -> frozenset[str]:
    """The stop words of every language in ``codes`` (stopwords-iso, lower-cased; English adds scikit-learn's list).

    Words of spaceless languages are read as character pairs
    (:func:`word_units`), so their stop words are given that way too.
    """
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    words: set[str] = set()
    for code in set(codes):
        listed = _stopwordsiso(code)
        if code == "en":
            listed = listed | ENGLISH_STOP_WORDS
        for word in listed:
            word = word.lower()
            words.update(word_units(word).split() if code in SPACELESS else [word])
    return frozenset(words)


def spaceless_stop_characters(codes: Iterable[str]) -> frozenset[str]:
    """The stop words of one character of the spaceless languages among ``codes`` (Chinese "的", "是").

    A character pair (:func:`word_units`) holding one ("韓的", "的首")
    straddles a word boundary more often than not: no word to count.
    """
    return frozenset(
        word for code in set(codes) if code in SPACELESS for word in _stopwordsiso(code)
        if len(word) == 1 and has_spaceless_text(word)
    )


def has_spaceless_text(text: str) -> bool:
    """Whether ``text`` holds a run of a language written without spaces (Chinese, Japanese, Thai, …)."""
    if not text or text.isascii():  # no such script is ASCII, and the test costs nothing
        return False
    return _SPACELESS_RUN.search(text) is not None


def _pairs(match: re.Match) -> str:
    run = match.group(0)
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i:i + 2] for i in range(len(run) - 1)) + " "


def word_units(text: str) -> str:
    """``text`` with every run of spaceless script replaced by its overlapping character pairs, spaced.

    "南韓的首都" -> " 南韓 韓的 的首 首都 ": word-like units for counting,
    matching and labelling where no segmenter is bundled; other text is
    unchanged.
    """
    if not text or not has_spaceless_text(text):
        return text or ""
    return _SPACELESS_RUN.sub(_pairs, text)


# ---------------------------------------------------------------- the corpus's languages, once per analysis

# A document is read on this many slices of SLICE_CHARS, spread evenly over
# its text, so a manual with an English appendix still reads as French and a
# document costs about 2 ms however long it is: py3langid's time grows with
# the bytes read, and 400 characters already read right on Wikipedia text.
DOCUMENT_SLICES = 3
SLICE_CHARS = 400
QUESTION_FALLBACK = "en"
"""Always among the languages a short question is read against: test sets are often written in English."""
# Measured on the 833 + 846 + 850 distinct questions of wiki-qa, fr-qa and zh-qa
# (benchmarks/eval_question_languages.py): against their own corpus's languages 2 English
# questions of 833 are misread, none else; put to English candidates, 819 of
# 846 French and all 850 Chinese questions keep their language (705 and 86
# when any candidate replaces an unsure guess).
PLAUSIBLE_CANDIDATE = 0.01

# The rest of py3langid's languages, so no page or summary shows a bare code.
LANGUAGE_NAMES.update({
    "ace": "Acehnese", "am": "Amharic", "an": "Aragonese", "ary": "Moroccan Arabic", "arz": "Egyptian Arabic",
    "as": "Assamese", "az": "Azerbaijani", "ba": "Bashkir", "bcl": "Central Bikol", "be": "Belarusian",
    "br": "Breton", "bs": "Bosnian", "crh": "Crimean Tatar", "cy": "Welsh", "dz": "Dzongkha", "eo": "Esperanto",
    "ext": "Extremaduran", "fo": "Faroese", "fuv": "Nigerian Fulfulde", "fy": "Western Frisian",
    "gcf": "Guadeloupean Creole", "gcr": "Guianese Creole", "gd": "Scottish Gaelic", "gom": "Konkani",
    "grc": "Ancient Greek", "gu": "Gujarati", "gug": "Paraguayan Guarani", "guw": "Gun", "ha": "Hausa",
    "hbo": "Ancient Hebrew", "ht": "Haitian Creole", "ig": "Igbo", "is": "Icelandic", "jv": "Javanese",
    "ka": "Georgian", "kab": "Kabyle", "kik": "Kikuyu", "kk": "Kazakh", "km": "Khmer", "kn": "Kannada",
    "ku": "Kurdish", "ky": "Kyrgyz", "lb": "Luxembourgish", "lg": "Ganda", "lij": "Ligurian", "ln": "Lingala",
    "lo": "Lao", "ltg": "Latgalian", "mg": "Malagasy", "mk": "Macedonian", "ml": "Malayalam", "mn": "Mongolian",
    "mr": "Marathi", "mt": "Maltese", "my": "Burmese", "ne": "Nepali", "nso": "Northern Sotho", "oc": "Occitan",
    "om": "Oromo", "or": "Odia", "pa": "Punjabi", "pcm": "Nigerian Pidgin", "ps": "Pashto", "qu": "Quechua",
    "rw": "Kinyarwanda", "sa": "Sanskrit", "sdh": "Southern Kurdish", "se": "Northern Sami", "si": "Sinhala",
    "sn": "Shona", "so": "Somali", "sq": "Albanian", "st": "Southern Sotho", "ta": "Tamil", "te": "Telugu",
    "tg": "Tajik", "tk": "Turkmen", "tt": "Tatar", "ug": "Uyghur", "uz": "Uzbek", "uzs": "Southern Uzbek",
    "vec": "Venetian", "vo": "Volapük", "wa": "Walloon", "xh": "Xhosa", "yo": "Yoruba", "zu": "Zulu",
    "zxx": "no language",
} | LANGUAGE_NAMES)


def document_language(text: str, slices: int = DOCUMENT_SLICES, slice_chars: int = SLICE_CHARS) -> str:
    """The language of most characters among ``slices`` evenly spaced slices of ``slice_chars`` of ``text``.

    Each slice is detected on its own (:func:`detect_language`) and weighs
    its length; undetermined slices weigh nothing, so a text is
    :data:`UNDETERMINED` only when every slice is. A tie goes to the
    earlier slice.
    """
    text = text if isinstance(text, str) else ""
    if len(text) <= slice_chars:
        starts = [0]
    else:
        last = len(text) - slice_chars
        count = max(1, min(slices, -(-len(text) // slice_chars)))
        starts = sorted({round(last * i / max(1, count - 1)) for i in range(count)})
    characters: Counter[str] = Counter()
    for start in starts:
        piece = text[start:start + slice_chars]
        code = detect_language(piece)
        if code != UNDETERMINED:
            characters[code] += len(piece)
    return characters.most_common(1)[0][0] if characters else UNDETERMINED


def count_shares(languages: Sequence[str]) -> list[LanguageShare]:
    """Each detected language's share of the texts by number, largest first (undetermined texts left out).

    For questions: "French 97%" then means 97 of 100 questions, whatever their length.
    """
    counts = Counter(code for code in languages if code != UNDETERMINED)
    total = sum(counts.values())
    return [LanguageShare(code, language_name(code), n / total, n) for code, n in counts.most_common()]


def volume_shares(languages: Sequence[str], counts: Sequence[int]) -> list[LanguageShare]:
    """Each detected language's share of a query log's volume (each distinct query weighted by how often it
    was asked), largest first; ``n_texts`` counts distinct queries (undetermined ones left out)."""
    volume: Counter[str] = Counter()
    distinct: Counter[str] = Counter()
    for code, count in zip(languages, counts):
        if code != UNDETERMINED:
            volume[code] += int(count)
            distinct[code] += 1
    total = sum(volume.values())
    if not total:
        return []
    return [LanguageShare(code, language_name(code), n / total, distinct[code]) for code, n in volume.most_common()]


def shares_in_words(shares: Sequence[LanguageShare]) -> str:
    """``shares`` as "French 97%, English 3%" ("none detected" when empty); a share under 0.5% reads "<1%"."""
    if not shares:
        return "none detected"
    return ", ".join(f"{share.name} {share.share:.0%}" if share.share >= 0.005 else f"{share.name} <1%"
                     for share in shares)


@dataclass(frozen=True)
class LanguageProfile:
    """Which language each document and question is written in, and each language's share.

    ``document_languages`` is aligned with ``document_names``;
    ``question_languages`` with the questions given to :func:`profile_languages`.
    ``document_shares`` are by characters (:func:`language_shares`),
    ``question_shares`` by number of questions (:func:`count_shares`);
    ``main_languages`` are the documents' (:func:`main_languages`).
    """

    document_names: tuple[str, ...] = ()
    document_languages: tuple[str, ...] = ()
    question_languages: tuple[str, ...] = ()
    document_shares: tuple[LanguageShare, ...] = ()
    question_shares: tuple[LanguageShare, ...] = ()
    main_languages: tuple[str, ...] = ()

    def language_of(self, document: str) -> str:
        """The language of the document named ``document``; :data:`UNDETERMINED` for a name not profiled."""
        for name, code in zip(self.document_names, self.document_languages):
            if name == document:
                return code
        return UNDETERMINED

    def in_words(self) -> str:
        """One line: "documents French 97%, English 3%; questions French 100%"."""
        return (f"documents {shares_in_words(self.document_shares)}; "
                f"questions {shares_in_words(self.question_shares)}")

    def query_shares(self, texts: Sequence[str], counts: Sequence[int]) -> tuple[LanguageShare, ...]:
        """The languages of a query log's distinct ``texts``, read as questions are, by share of volume
        (:func:`volume_shares`)."""
        return tuple(volume_shares(_question_languages(list(texts), self.main_languages), counts))

    def with_questions(self, questions) -> LanguageProfile:
        """The same documents' profile for another question set (the documents are not read again)."""
        codes = _question_languages(_texts(questions), self.main_languages)
        return dataclasses.replace(self, question_languages=codes, question_shares=tuple(count_shares(codes)))


def _texts(questions) -> list[str]:
    return list(questions.texts if hasattr(questions, "texts") else questions)


def question_language(text: str, candidates: Sequence[str]) -> str:
    """``text``'s language, an unsure guess moved to a candidate only when the model finds that one plausible.

    As :func:`detect_language`, except that the best candidate replaces an
    unsure guess only when its probability is at least
    :data:`PLAUSIBLE_CANDIDATE` times the guess's: a Chinese question put to
    English candidates stays Chinese (English 1e-10 against Chinese 0.78).
    """
    code, probability = _guess(text if isinstance(text, str) else "", None)
    if code == UNDETERMINED or probability >= CONFIDENT or not candidates or code in candidates:
        return code
    candidate, candidate_probability = _guess(text, candidates)
    return candidate if candidate_probability >= PLAUSIBLE_CANDIDATE * probability else code


def foreign_to(texts: Sequence[str], languages: Sequence[str]) -> list[bool]:
    """Which ``texts`` are written in none of ``languages``, each read as the report reads a question
    (among those languages and English; an undetermined text is not foreign): English questions put to
    French documents. Words cannot be matched across languages ("Moscow" against "Moscou", "NHL"
    against "LNH")."""
    if not languages:
        return [False] * len(texts)
    codes = _question_languages(list(texts), languages)
    return [code != UNDETERMINED and code not in languages for code in codes]


def _confident_languages(texts: Sequence[str], sample: int = 200) -> list[str]:
    """The main languages of the texts of an even sample the model reads with confidence (:data:`CONFIDENT`)."""
    picked = list(texts)[::max(1, len(texts) // sample)][:sample]
    codes = [code for code, probability in (_guess(t if isinstance(t, str) else "", None) for t in picked)
             if code != UNDETERMINED and probability >= CONFIDENT]
    return main_languages(count_shares(codes)) if codes else []


def _question_languages(texts: list[str], documents_main: Sequence[str]) -> tuple[str, ...]:
    candidates = list(documents_main or _confident_languages(texts))
    if QUESTION_FALLBACK not in candidates:
        candidates.append(QUESTION_FALLBACK)
    return tuple(question_language(text, candidates) for text in texts)


def profile_languages(documents: Sequence, questions) -> LanguageProfile:
    """The :class:`LanguageProfile` of ``documents`` (``types.Document``) and ``questions``.

    ``questions`` is a ``types.QuestionSet`` or a sequence of texts. Each
    document is read with :func:`document_language`; each question with
    :func:`question_language` among the documents' main languages and
    :data:`QUESTION_FALLBACK` (a short question alone is unreliable), or,
    without documents, among the main languages of the questions the model
    reads with confidence.
    """
    names = tuple(document.name for document in documents)
    texts = [document.text for document in documents]
    document_codes = tuple(document_language(text) for text in texts)
    document_shares = tuple(language_shares(texts, document_codes))
    main = tuple(main_languages(document_shares))
    question_codes = _question_languages(_texts(questions), main)
    return LanguageProfile(names, document_codes, question_codes, document_shares,
                           tuple(count_shares(question_codes)), main)
