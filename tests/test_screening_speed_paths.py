"""The screener's fast paths equal the plain computations they replace.

The word check (``lexical_coverage``) reads the chunk texts once where it
used to read them twice; the chunk density and the question neighbours run
their products in threads.
Each is compared here with a straightforward implementation of the
documented rule, on random inputs with many ties and on the real example's
texts, with the switches that choose the paths set both ways.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from coverage_core import threads
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from coverage_core.offtopic.screener import QuestionScreener
from coverage_core.stages import lexical, neighbourhoods
from coverage_core.stages.chunking import chunk_documents
from coverage_core.stages.lexical import lexical_coverage
from coverage_core.stages.neighbourhoods import chunk_density
from tests.helpers import PROJECT, plain_lexical_coverage

EXAMPLE = PROJECT / "examples" / "wiki-qa"


# --- plain reference implementations ---------------------------------------


def plain_chunk_density(vectors, labels, n_neighbors=neighbourhoods.DENSITY_NEIGHBORS,
                        max_reference=neighbourhoods.MAX_REFERENCE, random_state=0):
    """Per cluster, in label order: the same seeded reference sample, every
    similarity, a full sort, the mean of the k largest (self excluded)."""
    n = len(vectors)
    labels = np.zeros(n, dtype=int) if labels is None else np.asarray(labels)
    rng = np.random.default_rng(random_state)
    density = np.zeros(n)
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        if len(members) < 2:
            continue
        reference = members
        if len(members) > max_reference:
            reference = np.sort(rng.choice(members, size=max_reference, replace=False))
        k = max(1, round(min(n_neighbors, len(members) - 1) * len(reference) / len(members)))
        k = min(k, len(reference) - 1)
        for i in members:
            sims = vectors[reference].astype(np.float64) @ vectors[i].astype(np.float64)
            sims = sims[reference != i]
            density[i] = np.sort(sims)[-k:].mean()
    return density


def assert_same_lexical(found, expected):
    np.testing.assert_allclose(found[0], expected[0], atol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(found[1], expected[1])
    assert found[2] == expected[2]


# --- the word check ----------------------------------------------------------

WORDS = ["alpha", "betas", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "mu",
         "retire", "retired", "retirement", "retires", "drum", "drums", "flute", "koala", "koalas",
         "grind", "grunt", "boss", "bosses", "ments", "aments", "sings", "ing", "tied", "ties", "ies",
         "Éclair", "éclairs", "naïve", "CAFÉ", "a&amp;b", "x", "ab", "abcdefgh", "abcdefghs",
         "abcdefghij", "supercalifragilisticexpialidocious", "self-made", "don’t", "2024"]
TYPOS = ["gammma", "thetta", "koalla", "grint", "flutte", "zebra", "epsilom", "lambada", "retirment"]


def random_texts(rng, n_chunks, n_questions):
    chunks = [" ".join(rng.choice(WORDS, rng.integers(0, 14))) + str(rng.choice([".", "!", "", "\u2014x"]))
              for _ in range(n_chunks)]
    questions = ["What " + " ".join(rng.choice(WORDS + TYPOS, rng.integers(1, 6))) + "?" for _ in range(n_questions)]
    return chunks, questions


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_one_pass_word_check_equals_the_plain_rule_on_random_texts(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    chunks, questions = random_texts(rng, 150, 60)
    expected = plain_lexical_coverage(questions, chunks)
    assert any(expected[2]) and not all(expected[2])  # some words are absent, some typos get fixed
    monkeypatch.setattr(lexical, "HASH_BLOCK_BYTES", int(rng.choice([1, 50, 400, 1 << 22])))
    # Small corpus: no sample, absent words' edits in a second pass.
    assert_same_lexical(lexical_coverage(questions, chunks), expected)
    # Large-corpus path forced: the sample predicts well, badly (step 50, budget 1), or not at all (budget 0).
    monkeypatch.setattr(lexical, "SINGLE_PASS_MIN_CHARS", 0)
    for step, budget in [(1, 400), (3, 400), (50, 1), (2, 0)]:
        monkeypatch.setattr(lexical, "PRESENCE_SAMPLE_STEP", step)
        monkeypatch.setattr(lexical, "PREDICTED_FIXES", budget)
        for likely in (None, rng.integers(-5, 160, size=(60, 2)), []):  # hints, some out of range
            assert_same_lexical(lexical_coverage(questions, chunks, likely_chunks=likely), expected)


def test_the_cap_on_spelling_fixes_counts_the_same_words_on_both_paths(monkeypatch):
    rng = np.random.default_rng(9)
    chunks, questions = random_texts(rng, 80, 40)
    for cap in (0, 1, 2):
        monkeypatch.setattr(lexical, "MAX_SPELLING_FIXES", cap)
        expected = plain_lexical_coverage(questions, chunks)
        monkeypatch.setattr(lexical, "SINGLE_PASS_MIN_CHARS", 10**12)
        assert_same_lexical(lexical_coverage(questions, chunks), expected)
        monkeypatch.setattr(lexical, "SINGLE_PASS_MIN_CHARS", 0)
        monkeypatch.setattr(lexical, "PREDICTED_FIXES", 1)
        assert_same_lexical(lexical_coverage(questions, chunks), expected)


def test_equally_frequent_corrections_pick_the_greatest_word(monkeypatch):
    chunks = ["The windmill will grind the grain.", "A pig will grunt.", "Nothing here."]
    question = ["Does a windmill grint?"]
    expected = plain_lexical_coverage(question, chunks)
    for minimum in (10**12, 0):  # two passes, then the one-pass path
        monkeypatch.setattr(lexical, "SINGLE_PASS_MIN_CHARS", minimum)
        coverage, best, absent = lexical_coverage(question, chunks)
        # "grint" is one letter from "grind" and from "grunt" (one chunk each): "grunt" wins the tie, so
        # no chunk holds both words, and the best (the first of two) covers half.
        assert absent == [[]] and best[0] == 0 and coverage[0] == pytest.approx(0.5)
        assert_same_lexical((coverage, best, absent), expected)


def test_the_one_pass_path_reads_the_texts_once(monkeypatch):
    rng = np.random.default_rng(4)
    chunks, questions = random_texts(rng, 400, 50)
    read = []
    block_words = lexical._block_words
    monkeypatch.setattr(lexical, "_block_words", lambda texts: read.append(len(texts)) or block_words(texts))
    monkeypatch.setattr(lexical, "SINGLE_PASS_MIN_CHARS", 0)
    monkeypatch.setattr(lexical, "PRESENCE_SAMPLE_STEP", 4)
    expected = plain_lexical_coverage(questions, chunks)
    assert_same_lexical(lexical_coverage(questions, chunks), expected)
    assert sum(read) == 400 + 100  # every chunk once, and the sample of one in four
    read.clear()
    monkeypatch.setattr(lexical, "PREDICTED_FIXES", 0)  # nothing predicted: the edits need a second pass
    assert_same_lexical(lexical_coverage(questions, chunks), expected)
    assert sum(read) == 2 * 400 + 100


def test_word_stems_are_cut_and_hashed_in_place_as_normalize_word_does():
    rng = np.random.default_rng(1)
    letters = list(b"abcdegimnstyz") + [0xC3, 0xA9, 0xE2]  # the suffixes' letters, and UTF-8 bytes
    words = [np.array(rng.choice(letters, rng.integers(1, 30)), dtype=np.uint8).tobytes() for _ in range(3000)]
    words += [w.encode() for w in ["ss", "boss", "bosses", "ments", "aments", "moments", "sing", "sings", "ied",
                                   "tied", "ties", "ies", "abies", "eyes", "y", "ey", "abcdefgh", "abcdefghs"]]
    padded = lexical._PADDING + b" ".join(words) + b" \x01 " + lexical._PADDING
    starts, hashes = lexical._word_stem_hashes(padded)
    assert len(starts) == len(words)
    stems = [lexical.normalize_word(w) for w in words]
    np.testing.assert_array_equal(hashes, lexical._stem_hashes(stems))
    # Distinct stems, distinct hashes (a collision would merge two words).
    distinct = list(dict.fromkeys(stems))
    assert len(np.unique(lexical._stem_hashes(distinct))) == len(distinct)


def test_block_text_is_split_into_the_words_of_each_chunk_as_words_does():
    texts = ["Café CULTURE: the espresso\u2014strong coffee", "", "A &amp; B &#39853; don\u2019t",
             "Control \x01 chars", "ÉCOLE école", "plain ascii TEXT, with-punctuation!", "\x01"]
    for chosen in ([0, 1, 2], [5], [5, 1], [3, 4], [6, 0], list(range(len(texts)))):
        block = [texts[i] for i in chosen]
        owner, hashes = lexical._block_words(block)
        expected_owner = [i for i, t in enumerate(block) for _ in lexical.words_of(t)]
        expected = [lexical.normalize_word(w) for t in block for w in lexical.words_of(t)]
        np.testing.assert_array_equal(owner, expected_owner)
        np.testing.assert_array_equal(hashes, lexical._stem_hashes(expected))


def test_one_pass_word_check_on_the_real_example_equals_the_plain_rule(monkeypatch):
    documents = read_documents([EXAMPLE / "docs"]).documents
    chunk_texts = [chunk.text for chunk in chunk_documents(documents)]
    question_texts = [q.text for q in read_questions(EXAMPLE / "questions.csv").questions]
    expected = plain_lexical_coverage(question_texts, chunk_texts)
    monkeypatch.setattr(lexical, "HASH_BLOCK_BYTES", 5000)
    assert_same_lexical(lexical_coverage(question_texts, chunk_texts), expected)
    monkeypatch.setattr(lexical, "SINGLE_PASS_MIN_CHARS", 0)
    assert_same_lexical(lexical_coverage(question_texts, chunk_texts), expected)
    monkeypatch.setattr(lexical, "PRESENCE_SAMPLE_STEP", 1000)  # a poor sample: most words look absent
    monkeypatch.setattr(lexical, "PREDICTED_FIXES", 3)
    assert_same_lexical(lexical_coverage(question_texts, chunk_texts), expected)


def test_screener_fit_with_its_hints_equals_the_fit_on_precomputed_evidence(monkeypatch):
    rng = np.random.default_rng(2)
    chunks, questions = random_texts(rng, 120, 40)
    C = rng.normal(size=(120, 16)).astype(np.float32)
    Q = rng.normal(size=(40, 16)).astype(np.float32)
    labels = rng.integers(0, 4, 120)
    two_passes = lexical_coverage(questions, chunks)
    assert_same_lexical(two_passes, plain_lexical_coverage(questions, chunks))
    reference = QuestionScreener(question_support_threshold=0.3).fit(Q, C, labels, question_texts=questions,
                                                             chunk_texts=chunks, lexical=two_passes)
    monkeypatch.setattr(lexical, "SINGLE_PASS_MIN_CHARS", 0)
    monkeypatch.setattr(lexical, "PRESENCE_SAMPLE_STEP", 7)
    fitted = QuestionScreener(question_support_threshold=0.3).fit(Q, C, labels, question_texts=questions, chunk_texts=chunks)
    np.testing.assert_array_equal(fitted.lexical_coverage_, two_passes[0])
    np.testing.assert_array_equal(fitted.lexical_chunk_, two_passes[1])
    assert fitted.absent_words_ == two_passes[2]
    np.testing.assert_array_equal(fitted.outlier_score_, reference.outlier_score_)
    np.testing.assert_array_equal(fitted.is_outlier_, reference.is_outlier_)


# --- the chunk density -------------------------------------------------------


def tied_unit_vectors(rng, n, d):
    """Few distinct directions: many exactly equal similarities."""
    basis = rng.normal(size=(5, d))
    vectors = basis[rng.integers(0, 5, n)] + (rng.random((n, 1)) < 0.5) * 0.1 * rng.normal(size=(n, d))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_chunk_density_equals_the_plain_computation(monkeypatch, workers):
    monkeypatch.setattr(threads, "worker_threads", lambda: workers)
    monkeypatch.setattr(neighbourhoods, "BLOCK_ROWS", 7)
    rng = np.random.default_rng(workers)
    vectors = tied_unit_vectors(rng, 260, 12)
    # Clusters of 1, 2, 3, 50 and 204 chunks with gaps in the labels, in mixed order.
    labels = np.repeat([9, 4, 7, 0, 12], [1, 2, 3, 50, 204])
    rng.shuffle(labels)
    for n_neighbors, max_reference in [(20, 2000), (5, 40), (1, 3), (3, 60)]:
        expected = plain_chunk_density(vectors, labels, n_neighbors, max_reference, random_state=5)
        found = chunk_density(vectors, labels, n_neighbors, max_reference, random_state=5)
        assert found.dtype == np.float32 and found.shape == (260,)
        np.testing.assert_allclose(found, expected, atol=1e-5, rtol=0)
    assert found[labels == 9][0] == 0.0  # alone in its cluster
    expected = plain_chunk_density(vectors, None, 20, 100, random_state=1)
    np.testing.assert_allclose(chunk_density(vectors, None, 20, 100, random_state=1), expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("k", [1, 2, 10, 32, 33, 60])
def test_top_k_mean_by_maxima_or_partition_is_the_mean_of_the_k_largest(k):
    rng = np.random.default_rng(k)
    sims = np.round(rng.random((40, 70)), 2).astype(np.float32)  # many ties
    sims[np.arange(40), rng.integers(0, 70, 40)] = -np.inf  # a chunk is not its own neighbour
    block = sims.copy()
    expected = -np.sort(-sims.astype(np.float64), axis=1)[:, :k].mean(axis=1)
    found = neighbourhoods._top_k_mean(block, k)
    assert found.dtype == np.float32
    np.testing.assert_allclose(found, expected, atol=1e-6, rtol=0)
    np.testing.assert_array_equal(block, sims)  # the caller's block is left as it was


def test_chunk_density_is_the_same_in_any_number_of_threads(monkeypatch):
    rng = np.random.default_rng(8)
    vectors = tied_unit_vectors(rng, 3000, 24)
    labels = rng.integers(0, 6, 3000)
    monkeypatch.setattr(threads, "worker_threads", lambda: 1)
    alone = chunk_density(vectors, labels, max_reference=300)
    used = set()
    top_k_mean = neighbourhoods._top_k_mean

    def slow_top_k_mean(sims, k):  # long enough that the blocks overlap
        used.add(threading.get_ident())
        time.sleep(0.01)
        return top_k_mean(sims, k)

    monkeypatch.setattr(neighbourhoods, "_top_k_mean", slow_top_k_mean)
    monkeypatch.setattr(threads, "worker_threads", lambda: 4)
    np.testing.assert_array_equal(chunk_density(vectors, labels, max_reference=300), alone)
    assert len(used) > 1  # the blocks really ran in several threads


def test_in_threads_keeps_the_order_reads_lazily_and_passes_errors_on(monkeypatch):
    monkeypatch.setattr(threads, "worker_threads", lambda: 3)
    drawn = []

    def items():
        for i in range(40):
            drawn.append(i)
            yield i

    def square(i):
        assert len(drawn) - i <= 2 * 3 + 1  # never more than two items per thread ahead
        return i * i

    assert threads.in_threads(square, items()) == [i * i for i in range(40)]

    def fail(i):
        if i == 17:
            raise ValueError("item 17")
        return i

    with pytest.raises(ValueError, match="item 17"):
        threads.in_threads(fail, range(40))


def test_threads_follow_the_cpus_this_process_may_use_up_to_the_cap(monkeypatch):
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert threads.worker_threads() == threads.MAX_THREADS
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert threads.worker_threads() == 1
    calls = []
    assert threads.in_threads(lambda i: calls.append(threading.get_ident()) or i + 1, range(5)) == [1, 2, 3, 4, 5]
    assert set(calls) == {threading.get_ident()}  # one CPU: no pool, the caller's own thread


# --- one word index for the word check and the subjects ----------------------


def _count_passes(monkeypatch, n_chunks):
    """A list that gains one entry per full pass over ``n_chunks`` chunk texts (a sample pass is not counted)."""
    read = []
    block_words = lexical._block_words
    monkeypatch.setattr(lexical, "_block_words", lambda texts: read.append(len(texts)) or block_words(texts))
    return lambda: sum(read) // n_chunks


def test_the_word_index_reads_the_texts_only_for_stems_not_read_before(monkeypatch):
    rng = np.random.default_rng(5)
    chunks, _ = random_texts(rng, 200, 1)
    stems = [lexical.normalize_word(w.lower().encode()) for w in ["gamma", "koalas", "drum", "zebra"]]
    expected = lexical.chunks_holding(chunks, stems)
    passes = _count_passes(monkeypatch, 200)
    index = lexical.WordIndex(chunks)
    first = index.holding(stems)
    assert passes() == 1
    again = index.holding(stems[:2])
    assert passes() == 1  # nothing new: no pass
    assert all(np.array_equal(first[t], expected[t]) for t in stems)
    assert all(np.array_equal(again[t], expected[t]) for t in stems[:2])
    assert len(first[lexical.normalize_word(b"zebra")]) == 0  # not in WORDS: in no chunk
    index.holding([*stems, lexical.normalize_word(b"flute")])
    assert passes() == 2


@pytest.mark.parametrize("pair_limit", [0, 2**31 - 1])
def test_postings_are_the_same_whether_pairs_sort_as_int64_or_int32(monkeypatch, pair_limit):
    rng = np.random.default_rng(9)
    chunks, _ = random_texts(rng, 300, 1)
    words = sorted({w for text in chunks for w in lexical.words_of(text)})
    stems = list(dict.fromkeys(lexical.normalize_word(w) for w in words))[:200] + [b"absentstem"]
    monkeypatch.setattr(lexical, "_INT32_PAIR_LIMIT", pair_limit)
    found = lexical.chunks_holding(chunks, stems)
    for stem in stems:  # the plain rule: a chunk holds a stem when one of its words normalises to it
        expected = [i for i, text in enumerate(chunks) if stem in map(lexical.normalize_word, lexical.words_of(text))]
        np.testing.assert_array_equal(found[stem], expected)


def test_held_is_isin_on_ascending_postings():
    from coverage_core.stages.subjects import _held

    rng = np.random.default_rng(3)
    for _ in range(200):
        postings = np.unique(rng.integers(0, 50, rng.integers(0, 30)))
        chunks = rng.integers(0, 55, rng.integers(0, 12))
        np.testing.assert_array_equal(_held(chunks, postings), np.isin(chunks, postings))


def _comparable(evidence):
    """Subject evidence with NaN (no company measured) as None, so that equal evidence compares equal."""
    return [[(e.subject, e.n_passages, e.retrieved, e.in_document_names, e.names_a_document,
              None if np.isnan(e.company) else e.company) for e in found] for found in evidence]


@pytest.mark.parametrize("seed", range(3))
def test_subjects_read_from_the_word_checks_index_equal_subjects_read_alone(monkeypatch, seed):
    from coverage_core.stages.subjects import stems_to_read, subject_lists, subject_presence

    rng = np.random.default_rng(seed)
    chunks, questions = random_texts(rng, 300, 60)
    # Stems the word check itself does not read: a short name word ("Mu"), words derived from others.
    questions += ["Is Koala Gammma in the Drums?", "Was Epsilom Zebra a koalla?", "Who was Thetta Kappa?",
                  "Was Mu Zeta a gammaism or a deltaist?", "Who was Zorq Kappa?"]  # "zorq": short and absent
    top = rng.integers(-1, 300, size=(len(questions), 5))
    alone = subject_presence(questions, chunks, top, content_words=True)
    monkeypatch.setattr(lexical, "SINGLE_PASS_MIN_CHARS", 0)
    monkeypatch.setattr(lexical, "PRESENCE_SAMPLE_STEP", 5)
    passes = _count_passes(monkeypatch, 300)
    reading = lexical.corpus_reading(chunks, questions)
    index = lexical.WordIndex(reading.texts(chunks))
    subjects = subject_lists(questions, reading, content_words=True)
    words = lexical_coverage(questions, chunks, reading=reading, index=index, also=stems_to_read(subjects))
    word_check_passes = passes()
    shared = subject_presence(questions, chunks, top, content_words=True, reading=reading, subjects=subjects,
                              index=index)
    # The word check's own result does not change, and the subjects' stems and their fixes were read in its
    # one pass (their absent stems' edits predicted from the sample too): none is left for the subjects.
    assert_same_lexical(words, plain_lexical_coverage(questions, chunks))
    assert word_check_passes == 1 and passes() == 1
    assert _comparable(shared) == _comparable(alone)
    assert any(e.n_passages == 0 for evidence in alone for e in evidence)  # absent subjects were looked up


def plain_neighbour_check(Q, index, similarity, k):
    """Each question's k neighbours are other questions, their similarities are theirs, most similar first,
    and no question left out is more similar than the k-th (float32 products: 1e-5 apart at most)."""
    sims = Q.astype(np.float64) @ Q.astype(np.float64).T
    np.fill_diagonal(sims, -np.inf)
    n = len(Q)
    assert index.shape == similarity.shape == (n, k)
    assert not (index == np.arange(n)[:, None]).any()
    assert all(len(set(row)) == k for row in index)
    np.testing.assert_allclose(similarity, np.take_along_axis(sims, index, axis=1), atol=1e-5, rtol=0)
    assert (np.diff(similarity, axis=1) <= 0).all()
    np.testing.assert_allclose(similarity[:, -1], -np.sort(-sims, axis=1)[:, k - 1], atol=1e-5, rtol=0)


@pytest.mark.parametrize("pruned", [False, True])
@pytest.mark.parametrize("workers", [1, 3])
def test_question_neighbours_are_each_questions_most_similar(monkeypatch, workers, pruned):
    monkeypatch.setattr(threads, "worker_threads", lambda: workers)
    monkeypatch.setattr(neighbourhoods, "BLOCK_ROWS", 16)
    if pruned:  # runs of 4 questions from 5 x 4 x 4 = 80 questions on; 301 leaves a short last run
        monkeypatch.setattr(neighbourhoods, "NEIGHBOR_GROUP", 4)
        monkeypatch.setattr(neighbourhoods, "PRUNE_FACTOR", 4)
    rng = np.random.default_rng(workers)
    Q = tied_unit_vectors(rng, 301, 12) + 1e-3 * rng.normal(size=(301, 12)).astype(np.float32)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    index, similarity = neighbourhoods.question_neighbours(Q, 5)
    plain_neighbour_check(Q, index, similarity, 5)


def test_question_neighbours_are_the_same_in_any_number_of_threads(monkeypatch):
    rng = np.random.default_rng(3)
    Q = tied_unit_vectors(rng, 700, 16)
    monkeypatch.setattr(neighbourhoods, "BLOCK_ROWS", 32)
    monkeypatch.setattr(threads, "worker_threads", lambda: 1)
    alone = neighbourhoods.question_neighbours(Q, 8)
    monkeypatch.setattr(threads, "worker_threads", lambda: 4)
    together = neighbourhoods.question_neighbours(Q, 8)
    np.testing.assert_array_equal(together[0], alone[0])
    np.testing.assert_array_equal(together[1], alone[1])
