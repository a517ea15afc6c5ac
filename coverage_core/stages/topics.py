"""Named topics: a short human label for every cluster of chunks.

A cluster's label is its three most distinctive terms joined with " · ",
e.g. ``"koala · marsupial · eucalyptus"``. Terms are words and adjacent word
pairs ("steam engine"), scored by class-based TF-IDF (:func:`cluster_terms`).
The same terms are the gap ``themes`` of :mod:`coverage_core.suggest.gaps`.

Terms are read in the corpus's own languages (:func:`_reading`): the stop
words of each language detected in the chunks are no terms, and text in a
script written without spaces (Chinese, Japanese, Thai) is read as
overlapping character pairs, two adjacent pairs making one term of three
characters ("南韓" + "韓國" -> "南韓國").

Noise never becomes a term: stop words, markup and attribute debris
(``alt=``, ``href``, ``http``, ``www``, ``px``, HTML/wiki markup), numbers and
number-like tokens, single letters, and page furniture (page numbers,
"page", "copyright", running headers repeated on many chunks).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, OrderedDict
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from coverage_core.errors import InputError
from coverage_core.languages import has_spaceless_text, stop_words, word_units
from coverage_core.stages.lexical import corpus_reading

__all__ = [
    "LABEL_SEPARATOR",
    "MAX_CHUNKS_PER_CLUSTER",
    "cluster_name",
    "cluster_terms",
    "display_names",
    "topic_labels",
]

LABEL_SEPARATOR = " · "
# Terms per label, and how many ranked terms a label may draw on to become distinct.
N_LABEL_TERMS = 3
N_SPARE_TERMS = 8

WHOLE_WORD_SHARE = 0.8
"""A spaceless term (character pairs) grows by the character beside it in at least this share of its
occurrences in its topic's passages (:func:`_whole_word`): "破崙" is "拿破崙" there, "馬帝國" "羅馬帝國"."""
WHOLE_WORD_LONGEST = 8
WHOLE_WORD_EVIDENCE = 6
"""A spaceless term seen fewer times than this in its topic does not grow: in a few sentences the
character beside it is chance ("南韓的" in three sentences on Seoul)."""

MAX_CHUNKS_PER_CLUSTER = 100
"""Chunks per cluster whose words are counted for its terms (label, gap themes).

A larger cluster is represented by this many of its chunks, evenly spaced
through it (deterministic, and spread over its documents); a smaller one by
all of them, so its terms are exactly those of the full count. A topic's top
terms are stable long before this many passages, and counting words is the
costly part: the cost is bounded by ``K x 100`` chunks whatever the corpus
size (K = 50: ~0.5-0.8 s at 200,000 chunks of ~150 words,
benchmarks/bench_scale_topics.py and bench_scale.py's data)."""

# The last few results of cluster_terms, by content hash of what was counted:
# the cluster table's labels and the gap themes ask the same question of the
# same chunks, and counting words is the costly part (~0.5-0.8 s at K = 50).
_N_RECENT_TERMS = 4
_RECENT_TERMS: "OrderedDict[str, tuple[tuple[str, ...], ...]]" = OrderedDict()

# Words that are never a topic: markup and attribute debris, web and file
# furniture, citation and page furniture.
NOISE_WORDS = frozenset(
    """
    alt href src http https www com org net html htm php asp xml url urls px em pt rem
    img jpg jpeg png gif svg tif tiff pdf thumb thumbnail upright nbsp amp quot apos lt gt
    div span class style width height align center colspan rowspan td tr th br hr li ul ol
    ref refs reflist cite citation sfn harvnb infobox wikitable wiki wikipedia wikimedia commons
    isbn issn doi pmid pmc oclc arxiv jstor bibcode retrieved archived accessed
    page pages pp copyright rights reserved vol ed eds et al ibid op cit fig figure
    """.split()
)

# Markup removed before counting: URLs, tags, entities, wiki/template
# brackets, attribute names (``alt=``), file names.
_MARKUP = re.compile(
    r"https?://\S+|www\.\S+"
    r"|<[^>\n]{0,200}>"
    r"|&[a-z]+;|&#\d+;"
    r"|\{\{|\}\}|\[\[|\]\]|'''?|\|"
    r"|\b[\w-]+\s*=\s*\S*"
    r"|\b[\w-]+\.(?:jpe?g|png|gif|svg|tiff?|pdf|html?|php)\b",
    re.IGNORECASE,
)
# A character or string every _MARKUP match contains: texts without one skip
# the substitution (its word-by-word attribute and file-name patterns are
# most of the cost of counting plain prose).
_MARKUP_HINT = re.compile(r"[=<&{}\[\]|]|''|https?:|www\.|\.(?:jpe?g|png|gif|svg|tiff?|pdf|html?|php)\b", re.IGNORECASE)
# A word (the group), or anything else that ends a phrase: punctuation other
# than in-word apostrophes and hyphens (findall gives "" for those).
_TOKEN = re.compile(r"(\w+)|[^\w\s'-]+|\s['-]|['-]\s")
# Roman numerals up to 39 (chapter and page numbers), two letters or more.
_ROMAN = re.compile(r"x{0,3}(?:ix|iv|v?i{0,3})")
# A line is furniture when, digits aside, it repeats in this many chunks (and
# in at least 3): running headers, footers, "Page 3 of 10".
_FURNITURE_SHARE = 0.1
_FURNITURE_MAX_WORDS = 12


@lru_cache(maxsize=1 << 17)
def _is_term_word(word: str) -> bool:
    # Cached: a corpus repeats its words, and this runs for every word counted.
    return (
        len(word) >= 2
        and word.isalpha()  # no digits: "1990s", "3rd", "p12"
        and word not in ENGLISH_STOP_WORDS
        and word not in NOISE_WORDS
        and not _ROMAN.fullmatch(word)
    )


@lru_cache(maxsize=16)
def _corpus_stop_words(codes: tuple[str, ...]) -> frozenset[str]:
    """The stop words of the languages ``codes`` (English adds stopwords-iso's list to scikit-learn's, which
    :func:`_is_term_word` always leaves out)."""
    return stop_words(codes) - ENGLISH_STOP_WORDS


def _reading(texts: list[str]) -> tuple[list[str], frozenset[str]]:
    """The texts as words are counted in them, and the words that are no terms beyond :func:`_is_term_word`'s.

    The corpus's languages (:func:`~coverage_core.stages.lexical.corpus_reading`, which reads them from an
    even sample of the texts, as the word check does) give the stop words; with a spaceless one among them,
    every text is read as character pairs (``word_units``), and pairs holding a one-character stop word are
    no terms either.
    """
    reading = corpus_reading(texts)
    stop = _corpus_stop_words(tuple(sorted(reading.languages)))
    if not reading.spaceless:
        return texts, stop
    units = [word_units(text) for text in texts]
    return units, stop | _pairs_holding(units, reading.stop_characters)


def _pairs_holding(units: list[str], characters: frozenset[str]) -> frozenset[str]:
    """The character pairs of texts read as word units holding one of ``characters``."""
    if not characters:
        return frozenset()
    pairs = {word for text in units for word in text.split() if len(word) == 2}
    return frozenset(pair for pair in pairs if pair[0] in characters or pair[1] in characters)


def _tokens(text: str) -> list[str]:
    """The lowercase words of a text in order, with ``""`` wherever a phrase ends.

    Markup goes first (it ends a phrase too), then every punctuation mark
    other than an apostrophe or hyphen inside a word ends a phrase. The
    terms of a text are its term words (:func:`_is_term_word`) and every
    pair of term words next to each other in one phrase: no pair spans a
    removed word, a number, markup or punctuation ("area is among the
    largest" gives no fake "area largest").
    """
    text = text.lower()
    if _MARKUP_HINT.search(text):
        text = _MARKUP.sub(" . ", text)
    return _TOKEN.findall(text)


def _line_key(line: str) -> str:
    return " ".join(re.sub(r"\d+", "#", line.lower()).split())


def _strip_furniture(texts: list[str]) -> list[str]:
    """The texts without lines repeated (digits aside) across many chunks: running headers, page footers."""
    if len(texts) < 3:
        return texts
    seen = Counter()
    for text in texts:
        seen.update({_line_key(line) for line in text.splitlines() if 0 < len(line.split()) <= _FURNITURE_MAX_WORDS})
    floor = max(3, _FURNITURE_SHARE * len(texts))
    furniture = {key for key, count in seen.items() if count >= floor}
    if not furniture:
        return texts
    stripped = []
    for text in texts:
        lines = text.splitlines()
        body = [line for line in lines if _line_key(line) not in furniture]
        # A header is part of a page: a chunk that is nothing but the repeated line keeps it.
        stripped.append("\n".join(body) if any(line.strip() for line in body) else text)
    return stripped


def _count_terms(texts: list[str], stop: frozenset[str] = frozenset()):
    """Chunk x term counts of words and word pairs (:func:`_tokens`), or (None, None) if no term survives.

    ``stop``: words that are no terms besides those :func:`_is_term_word` rejects (the corpus's languages').

    The counts, and the columns (the terms in alphabetical order), are those
    of scikit-learn's ``CountVectorizer`` with ``min_df`` 2 (1 below 20
    texts, or when no term is in two); they are found with array operations
    on word numbers rather than one Python step per term, a third of the
    time on 4,000 chunks.
    """
    tokens: list[str] = []
    lengths = []
    for text in texts:
        found = _tokens(text)
        found.append("")  # a text's end ends its last phrase
        tokens += found
        lengths.append(len(found))
    words = list(dict.fromkeys(tokens))
    number = {word: i for i, word in enumerate(words)}
    ids = np.fromiter(map(number.__getitem__, tokens), dtype=np.int64, count=len(tokens))
    is_term = np.fromiter((_is_term_word(w) and w not in stop for w in words), dtype=bool, count=len(words))
    chunk_of = np.repeat(np.arange(len(texts)), lengths)

    at_term = is_term[ids]
    word_at = np.flatnonzero(at_term)
    pair_at = np.flatnonzero(at_term[:-1] & at_term[1:])
    pair_codes, pair_column = np.unique(ids[pair_at] * len(words) + ids[pair_at + 1], return_inverse=True)
    # Columns: the term words, then the pairs (named once it is known which are kept).
    term_words = np.flatnonzero(is_term)
    word_column = np.zeros(len(words), dtype=np.int64)
    word_column[term_words] = np.arange(len(term_words))
    n_terms = len(term_words) + len(pair_codes)
    if not n_terms:
        return None, None
    counts = sp.csr_matrix(
        (
            np.ones(len(word_at) + len(pair_at), dtype=np.int64),
            (
                np.concatenate([chunk_of[word_at], chunk_of[pair_at]]),
                np.concatenate([word_column[ids[word_at]], len(term_words) + pair_column.ravel()]),
            ),
        ),
        shape=(len(texts), n_terms),
    )
    counts.sum_duplicates()
    chunks_with = np.bincount(counts.indices, minlength=n_terms)
    # On tiny corpora no term may be in two chunks; then one is enough.
    for min_df in ((2, 1) if len(texts) >= 20 else (1,)):
        kept = np.flatnonzero(chunks_with >= min_df)
        if len(kept):
            break
    else:
        return None, None
    kept_words = kept[kept < len(term_words)]
    first, second = np.divmod(pair_codes[kept[len(kept_words):] - len(term_words)], len(words))
    names = [words[i] for i in term_words[kept_words]] + [f"{words[a]} {words[b]}" for a, b in zip(first, second)]
    order = np.argsort(np.array(names), kind="stable")
    return counts[:, kept[order]].tocsr(), np.asarray(names, dtype=object)[order]


def stem_word(word: str) -> str:
    # Crude plural folding, only to spot near-duplicate phrases.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ses", "xes", "ches", "shes")):
        return word[:-2]  # "octopuses", "boxes", "churches"
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")) else word


def _distinct_phrases(ranked: list[tuple[str, float]], n: int) -> list[str]:
    """Top ``n`` phrases without near-duplicates.

    Phrases sharing a word (plurals folded) are near-duplicates: "gogh",
    "van gogh", "gogh painted". Of those only the first ranked is kept,
    except that a longer phrase containing it replaces it when its weight is
    at least 0.7 times the weakest part it replaces and 0.3 times the
    strongest: a distinctive pair beats its parts ("steam engine" over
    "steam" and "engine", "james watt" over "watt" and "james"), a loose one
    does not ("violin used" does not replace "violin", nor "jakarta hosts"
    "jakarta").
    """
    chosen: list[tuple[str, frozenset, float]] = []
    for phrase, weight in ranked:
        words = frozenset(stem_word(w) for w in phrase.split())
        overlapping = [i for i, (_, other, _) in enumerate(chosen) if other & words]
        if not overlapping:
            if len(chosen) < n:
                chosen.append((phrase, words, weight))
        elif (
            all(chosen[i][1] < words for i in overlapping)
            and weight >= 0.7 * min(chosen[i][2] for i in overlapping)
            and weight >= 0.3 * max(chosen[i][2] for i in overlapping)
        ):
            chosen[overlapping[0]] = (phrase, words, weight)
            chosen = [c for i, c in enumerate(chosen) if i not in overlapping[1:]]
    return [phrase for phrase, _, _ in chosen]


def _evenly_per_cluster(labels: np.ndarray, cap: int) -> np.ndarray:
    """Indices keeping at most ``cap`` evenly spaced chunks of each cluster, in order.

    Evenly spaced rather than random: the same chunks on every run without
    a seed, and, since chunks come in document order, spread over the
    cluster's documents.
    """
    if not len(labels):
        return np.array([], dtype=np.intp)
    # One stable sort groups every cluster's members in index order (a scan of
    # all labels per cluster would cost K passes over a million labels).
    order = np.argsort(labels, kind="stable")
    _, starts, counts = np.unique(labels[order], return_index=True, return_counts=True)
    keep = []
    for start, count in zip(starts, counts):
        members = order[start : start + count]
        if count > cap:
            members = members[np.linspace(0, count - 1, cap).round().astype(np.intp)]
        keep.append(members)
    return np.sort(np.concatenate(keep))


def _check(chunk_texts, labels, n_clusters) -> np.ndarray:
    """The labels as an index array; InputError unless there is one valid label per text."""
    labels = np.asarray(labels, dtype=np.intp)
    if labels.shape != (len(chunk_texts),):
        raise InputError(
            f"labels must hold one cluster label per chunk ({len(chunk_texts)}); got shape {labels.shape}."
        )
    if labels.size and (labels.min() < 0 or labels.max() >= n_clusters):
        raise InputError(f"labels must be cluster numbers 0..{n_clusters - 1}.")
    return labels


def cluster_terms(
    chunk_texts: Sequence[str],
    labels,
    n_clusters: int,
    n_terms: int = 5,
    max_chunks_per_cluster: int | None = MAX_CHUNKS_PER_CLUSTER,
) -> list[list[str]]:
    """Terms that set each cluster apart from the others (class-based TF-IDF).

    Words and adjacent word pairs (noise excluded) are counted per chunk and summed per cluster. With
    ``tf_{t,c}`` the count of term ``t`` in cluster ``c`` divided by all term counts of ``c``, ``f_t`` the
    count of ``t`` over all clusters and ``A`` the mean number of terms per cluster (BERTopic's c-TF-IDF)::

        W_{t,c} = tf_{t,c} * log(1 + A / f_t)

    The top terms are thinned of near-duplicates; a distinctive word pair replaces its parts.
    Why: a term frequent in one cluster and rare elsewhere names it; docs/developing.md, *Topic terms*.

    Parameters
    ----------
    chunk_texts : sequence of n str
    labels : array-like of shape (n,), int in 0..n_clusters-1
    n_clusters : int
    n_terms : int, terms per cluster
    max_chunks_per_cluster : int or None
        Larger clusters are represented by this many evenly spaced chunks (None: all).

    Returns
    -------
    list of n_clusters lists of up to ``n_terms`` lowercase terms, best
    first; empty for a cluster without usable words.
    """
    if not isinstance(chunk_texts, (list, tuple)):
        chunk_texts = list(chunk_texts)
    labels = _check(chunk_texts, labels, n_clusters)
    if max_chunks_per_cluster is not None:
        keep = _evenly_per_cluster(labels, max_chunks_per_cluster)
        texts, labels = [str(chunk_texts[i]) for i in keep], labels[keep]
    else:
        texts = [str(text) for text in chunk_texts]
    key = _memo_key(texts, labels, n_clusters, n_terms)
    if key not in _RECENT_TERMS:
        _RECENT_TERMS[key] = _class_terms(texts, labels, n_clusters, n_terms)
        while len(_RECENT_TERMS) > _N_RECENT_TERMS:
            _RECENT_TERMS.popitem(last=False)
    _RECENT_TERMS.move_to_end(key)
    return [list(terms) for terms in _RECENT_TERMS[key]]


def _memo_key(texts: list[str], labels: np.ndarray, n_clusters: int, n_terms: int) -> str:
    """Content hash of one :func:`cluster_terms` question (the counted texts and their clusters)."""
    digest = hashlib.sha256(f"{n_clusters}/{n_terms}/{len(texts)}".encode())
    digest.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def _class_terms(texts: list[str], labels: np.ndarray, n_clusters: int, n_terms: int) -> tuple[tuple[str, ...], ...]:
    """The c-TF-IDF terms of :func:`cluster_terms` for the texts actually counted."""
    result: list[list[str]] = [[] for _ in range(n_clusters)]
    if not texts:
        return tuple(tuple(t) for t in result)
    counted, stop = _reading(_strip_furniture(texts))
    counts, terms = _count_terms(counted, stop)
    if counts is None:
        return tuple(tuple(t) for t in result)

    membership = sp.csr_matrix(
        (np.ones(len(texts)), (labels, np.arange(len(texts)))), shape=(n_clusters, len(texts))
    )
    class_counts = np.asarray((membership @ counts).todense(), dtype=np.float64)  # (K, V)
    per_class = class_counts.sum(axis=1, keepdims=True)
    tf = np.divide(class_counts, per_class, out=np.zeros_like(class_counts), where=per_class > 0)
    average_terms = per_class.sum() / max(int((per_class > 0).sum()), 1)
    weights = tf * np.log(1.0 + average_terms / class_counts.sum(axis=0))
    # Chunks of each cluster containing each term: breaks ties between
    # equally weighted terms (common in small corpora) in favour of spread.
    spread = np.asarray((membership @ (counts > 0).astype(np.float64)).todense())

    for k in range(n_clusters):
        present = np.flatnonzero(class_counts[k] > 0)
        if present.size == 0:
            continue
        # Best weight first, then most chunks, then alphabetical (reproducible).
        keys = (terms[present], -spread[k, present], -np.round(weights[k, present], 12))
        order = present[np.lexsort(keys)][: 10 * n_terms]
        chosen = _distinct_phrases([(str(terms[t]), float(weights[k, t])) for t in order], n_terms)
        result[k] = [_joined_pairs(phrase) for phrase in chosen]
    if any(has_spaceless_text(term) for terms_of_topic in result for term in terms_of_topic):
        for k, terms_of_topic in enumerate(result):
            text = "\n".join(texts[i] for i in np.flatnonzero(labels == k))
            result[k] = _without_parts([_whole_word(term, text) for term in terms_of_topic])
    return tuple(tuple(t) for t in result)


def _whole_word(term: str, text: str, share: float = WHOLE_WORD_SHARE, longest: int = WHOLE_WORD_LONGEST,
                least: int = WHOLE_WORD_EVIDENCE) -> str:
    """A term of a spaceless script grown, one character at a time, by the character that comes before
    (or else after) it in at least ``share`` of its occurrences in ``text``, up to ``longest`` characters;
    any other term unchanged. Terms are character pairs, which cut the names of three or more characters
    that a topic is about ("周恩" of 周恩來, "破崙" of 拿破崙, "華民國" of 中華民國); punctuation or a
    character of another script ends the word, and a term seen fewer than ``least`` times does not grow
    (one sentence would become the term). No stop-character list decides it: the one-character stop words
    include 中, 來, 下, 拿 and 自, which begin or end names (中華民國, 周恩來, 下薩克森邦, 拿破崙, 自殺率),
    while a particle (的) follows a name in far fewer than ``share`` of its occurrences.

    On the 34 zh-qa articles (one topic each) 15 of the 34 labels change, each for the better: cut names
    become whole ("周恩" 周恩來, "薩克森 · 森邦" 下薩克森邦, "君士坦" 君士坦丁堡), and a cut pair beside
    its own word gives way to the next term ("馬祖 · 祖列島" becomes "馬祖 · 北竿鄉")."""
    if " " in term or not has_spaceless_text(term):
        return term
    while len(term) < longest:
        starts = [match.start() for match in re.finditer(re.escape(term), text)]
        if len(starts) < least:
            return term
        before = Counter(text[i - 1] for i in starts if i > 0).most_common(1)
        after = Counter(text[i + len(term)] for i in starts if i + len(term) < len(text)).most_common(1)
        grown = [character + term for character, count in before if count >= share * len(starts)
                 and has_spaceless_text(character)]
        grown += [term + character for character, count in after if count >= share * len(starts)
                  and has_spaceless_text(character)]
        if not grown:
            return term
        term = grown[0]
    return term


def _without_parts(terms: list[str]) -> list[str]:
    """``terms`` in order without one that holds, or is held by, a term before it: two pairs of one name
    grow into the same word ("馬帝國" and "羅馬帝" into "羅馬帝國"), and a pair that straddles two words
    grows into a longer run holding a better ranked word ("國國" into "韓國國", beside "韓國")."""
    kept: list[str] = []
    for term in terms:
        if not any(term in other or other in term for other in kept):
            kept.append(term)
    return kept


def _joined_pairs(phrase: str) -> str:
    """Two overlapping character pairs of a spaceless script as the three characters they read ("南韓 韓國" ->
    "南韓國"); any other phrase unchanged."""
    words = phrase.split(" ")
    if len(words) == 2 and len(words[0]) == len(words[1]) == 2 and words[0][1] == words[1][0]:
        if has_spaceless_text(phrase):
            return words[0] + words[1][1]
    return phrase


def labels_from_terms(terms: Sequence[Sequence[str]], n_terms: int = N_LABEL_TERMS) -> list[str]:
    """Labels of ``n_terms`` terms each; clusters sharing a label get their next terms until they differ."""
    used = [min(n_terms, len(t)) for t in terms]
    while True:
        labels = [LABEL_SEPARATOR.join(t[:u]) for t, u in zip(terms, used)]
        clashes = Counter(label for label in labels if label)
        grew = False
        for k, label in enumerate(labels):
            if label and clashes[label] > 1 and used[k] < len(terms[k]):
                used[k] += 1
                grew = True
        if not grew:
            return labels


def topic_labels(
    chunk_texts: Sequence[str],
    labels,
    n_clusters: int,
    n_terms: int = N_LABEL_TERMS,
    max_chunks_per_cluster: int | None = MAX_CHUNKS_PER_CLUSTER,
) -> list[str]:
    """A short human label per cluster: its ``n_terms`` best :func:`cluster_terms` joined with " · ".

    Labels are made distinct where possible: clusters that would share a
    label get their next most distinctive term. A cluster without usable
    words (or without chunks) gets ``""``; show it with :func:`cluster_name`.
    """
    terms = cluster_terms(chunk_texts, labels, n_clusters, n_terms + N_SPARE_TERMS, max_chunks_per_cluster)
    return labels_from_terms(terms, n_terms)


def cluster_name(cluster: int, label: object = "") -> str:
    """``"cluster 6: koala · marsupial · eucalyptus"``, or ``"cluster 6"`` without a label."""
    label = "" if label is None or (isinstance(label, float) and np.isnan(label)) else str(label).strip()
    return f"cluster {int(cluster)}: {label}" if label else f"cluster {int(cluster)}"


def display_names(clusters: Sequence[int], labels: Sequence[object] | None) -> list[str]:
    """One distinct display name per cluster, for chart axes and legends.

    The label where it is present and unique, otherwise ``"C<number>"`` in
    front of it (or alone): two categories must never merge on an axis.
    """
    clusters = [int(c) for c in clusters]
    texts = [
        "" if label is None or (isinstance(label, float) and np.isnan(label)) else str(label).strip()
        for label in (labels if labels is not None else [""] * len(clusters))
    ]
    counts = Counter(texts)
    return [
        text if text and counts[text] == 1 else (f"C{c} {text}" if text else f"C{c}")
        for c, text in zip(clusters, texts)
    ]
