"""Chunks fitted to the embedding model's input limit (issue 20): split again, never cut at embedding."""

from __future__ import annotations

import re

import pytest

from coverage_core.embedding_steps import embed_corpus, token_limit
from coverage_core.embeddings import EmbeddingCache
from coverage_core.outputs.report import build_report, summary_table
from coverage_core.results import TokenFit
from coverage_core.stages.chunking import (
    MAX_RESPLIT_ROUNDS,
    ChunkingConfig,
    TokenLimit,
    chunk_documents,
    split_documents,
)
from coverage_core.types import Document, PageSpan
from tests.fakes import FakeEmbedder

FRENCH = (
    "La Révolution française est une période de bouleversements politiques et sociaux en France, "
    "dans ses colonies et en Europe à la fin du XVIIIe siècle. Traditionnellement, on la fait commencer "
    "à l'ouverture des États généraux le 5 mai 1789 et finir au coup d'État de Napoléon Bonaparte le "
    "9 novembre 1799. En cette fin du XVIIIe siècle, la Révolution a mis fin à l'Ancien Régime en "
    "remplaçant la monarchie absolue par une monarchie constitutionnelle, puis par la Première République. "
    "Elle a aussi transformé l'administration, la fiscalité, la justice et l'Église catholique du royaume. "
    "Les historiens débattent encore de ses causes économiques, intellectuelles et démographiques."
)
GERMAN = (
    "Die Bundesrepublik Deutschland ist ein Bundesstaat in Mitteleuropa. Sie besteht aus sechzehn "
    "Ländern und ist als freiheitlich-demokratischer und sozialer Rechtsstaat verfasst. Die "
    "Wiedervereinigung der beiden deutschen Teilstaaten erfolgte am dritten Oktober neunzehnhundertneunzig. "
    "Verfassungsrechtliche Grundlage ist das Grundgesetz, dessen Grundrechtskatalog unveränderlich ist. "
    "Die Hauptstadt und zugleich bevölkerungsreichste Stadt ist Berlin; Regierungssitz ist ebenfalls Berlin, "
    "einige Bundesministerien haben ihren ersten Dienstsitz jedoch weiterhin in der Bundesstadt Bonn. "
    "Wirtschaftlich gehört Deutschland zu den führenden Industrienationen der Welt."
)


def three_per_word(texts: list[str]) -> list[int]:
    """A fake tokenizer: three tokens per whitespace-separated word."""
    return [3 * len(text.split()) for text in texts]


def paragraphs(n: int, words: int, seed_word: str = "word") -> str:
    return "\n\n".join(" ".join(f"{seed_word}{p}x{i}" for i in range(words)) + "." for p in range(n))


def assert_pieces_cover(document: Document, original, pieces) -> None:
    """Every non-space character of ``original`` lies in some piece, and each piece is the document's text."""
    for piece in pieces:
        assert piece.document == document.name
        assert document.text[piece.start : piece.end] == piece.text
        assert original.start <= piece.start < piece.end <= original.end
    covered = set()
    for piece in pieces:
        covered.update(range(piece.start, piece.end))
    missing = [i for i in range(original.start, original.end) if i not in covered and not document.text[i].isspace()]
    assert missing == []


def test_long_chunks_are_split_again_until_every_piece_fits():
    document = Document("long.txt", paragraphs(6, 120))  # 1,000-character chunks of ~110 words: ~330 tokens
    config = ChunkingConfig(1000, 200)
    plain = chunk_documents([document], config)
    limit = TokenLimit(100, three_per_word)
    split = split_documents([document], config, limit)

    assert max(three_per_word([c.text for c in plain])) > 100  # the character split alone is too long
    assert all(n <= 100 for n in three_per_word([c.text for c in split.chunks]))
    assert split.n_resplit == sum(n > 100 for n in three_per_word([c.text for c in plain]))
    assert split.resplit_texts == [c.text for c in plain if three_per_word([c.text])[0] > 100]
    assert split.n_truncated == 0
    assert len(split.chunks) > len(plain)
    # Pieces stay in document order and each maps back to the document exactly.
    assert [c.start for c in split.chunks] == sorted(c.start for c in split.chunks)
    assert len({(c.start, c.end) for c in split.chunks}) == len(split.chunks)  # each span once
    for original in plain:
        inside = [c for c in split.chunks if original.start <= c.start and c.end <= original.end]
        assert_pieces_cover(document, original, inside)


def test_pieces_keep_their_pages():
    text = paragraphs(2, 150, "alpha") + "\n\n" + paragraphs(2, 150, "beta")
    middle = text.index("beta")
    document = Document("book.pdf", text, pages=[PageSpan(1, 0, middle), PageSpan(2, middle, len(text))])
    split = split_documents([document], ChunkingConfig(1000, 200), TokenLimit(60, three_per_word))
    assert split.n_resplit > 0
    for chunk in split.chunks:
        assert chunk.page == (1 if chunk.start < middle else 2)
        assert document.text[chunk.start : chunk.end] == chunk.text


def test_chunks_within_the_limit_are_left_as_they_are_and_counted_in_one_call():
    documents = [Document("a.txt", paragraphs(5, 40)), Document("b.txt", paragraphs(3, 60))]
    calls: list[list[str]] = []

    def count(texts):
        calls.append(list(texts))
        return three_per_word(texts)

    config = ChunkingConfig(500, 100)
    split = split_documents(documents, config, TokenLimit(10_000, count))
    assert split.chunks == chunk_documents(documents, config)
    assert (split.n_resplit, split.n_truncated, split.resplit_texts) == (0, 0, [])
    assert calls == [[c.text for c in split.chunks]]  # one batched call, nothing counted twice


def test_rounds_are_batched_and_bounded():
    documents = [Document(f"d{i}.txt", paragraphs(4, 200)) for i in range(3)]
    calls: list[int] = []

    def count(texts):
        calls.append(len(texts))
        return three_per_word(texts)

    split_documents(documents, ChunkingConfig(1000, 200), TokenLimit(40, count))
    assert 2 <= len(calls) <= MAX_RESPLIT_ROUNDS + 1


def test_a_piece_that_cannot_fit_is_reported_as_truncated():
    document = Document("dense.txt", paragraphs(2, 100))

    def always_over(texts):
        return [10_000 for _ in texts]

    split = split_documents([document], ChunkingConfig(1000, 200), TokenLimit(50, always_over))
    assert split.n_truncated == len(split.chunks) > 0
    for chunk in split.chunks:
        assert document.text[chunk.start : chunk.end] == chunk.text


def test_token_limit_needs_a_positive_whole_number():
    with pytest.raises(ValueError):
        TokenLimit(0, three_per_word)


def test_limit_comes_from_the_registry_then_the_embedder():
    from coverage_core.embeddings import make_embedder

    local = make_embedder("local")
    assert token_limit(local).max_tokens == 256
    assert not local.is_loaded  # finding the limit loads nothing
    assert token_limit(FakeEmbedder(max_tokens=77)).max_tokens == 77

    class NoLimit(FakeEmbedder):
        max_tokens = None

    embedder = NoLimit()
    embedder.__dict__.pop("max_tokens", None)
    assert token_limit(embedder) is None


def test_embed_corpus_reports_the_fit_per_language(tmp_path):
    documents = [Document("fr.txt", "\n\n".join([FRENCH] * 4)), Document("short.txt", "A short English note.")]
    embedder = FakeEmbedder(max_tokens=60, width=8)  # one token per word
    corpus = embed_corpus(documents, ChunkingConfig(1000, 200), embedder, EmbeddingCache(tmp_path / "cache"))
    fit = corpus.token_fit
    assert isinstance(fit, TokenFit)
    assert fit.max_tokens == 60 and fit.n_chunks == len(corpus.chunks)
    assert fit.n_resplit > 0 and fit.n_truncated == 0
    assert fit.by_language == {"fr": fit.n_resplit}
    assert corpus.embedded.n_over_limit == 0  # nothing is cut when it is embedded
    assert all(len(c.text.split()) <= 60 for c in corpus.chunks)


def test_a_cached_corpus_that_fits_never_touches_the_tokenizer(tmp_path):
    documents = [Document("en.txt", paragraphs(3, 30))]
    cache = EmbeddingCache(tmp_path / "cache")
    first = FakeEmbedder(provider="local", model="tiny", max_tokens=500)
    embed_corpus(documents, ChunkingConfig(), first, cache)
    second = FakeEmbedder(provider="local", model="tiny", max_tokens=500)
    corpus = embed_corpus(documents, ChunkingConfig(), second, cache)
    assert second.count_calls == [] and second.embed_calls == []
    assert corpus.token_fit.n_resplit == 0 and corpus.token_fit.max_tokens == 500


def test_report_and_summary_say_what_was_split(analysis):
    import dataclasses

    fit = TokenFit(256, 60, 12, 0, {"de": 9, "fr": 3})
    fitted = dataclasses.replace(analysis, corpus=dataclasses.replace(analysis.corpus, token_fit=fit))
    report = build_report(fitted)
    assert report["chunking"]["token_fit"] == {
        "max_tokens": 256, "n_chunks": 60, "n_resplit": 12, "n_truncated": 0, "by_language": {"de": 9, "fr": 3},
    }
    assert "12 passages were longer than the model reads (256 tokens) and were split again." in summary_table(fitted)
    assert build_report(analysis)["chunking"]["token_fit"] is None
    assert "split again" not in summary_table(analysis)


# ---------------------------------------------------------------- the bundled model


@pytest.mark.slow
@pytest.mark.parametrize("text", [FRENCH, GERMAN], ids=["french", "german"])
def test_real_model_pieces_fit_its_256_tokens(text):
    from coverage_core.embeddings import make_embedder

    embedder = make_embedder("local")
    # About 1,000 characters with no paragraph break, repeated until one chunk is far over 256 tokens.
    body = (text + " ") * 3
    document = Document("x.txt", body.strip())
    config = ChunkingConfig(1000, 200)
    before = embedder.count_tokens([c.text for c in chunk_documents([document], config)])
    assert max(before) > 256
    split = split_documents([document], config, token_limit(embedder))
    after = embedder.count_tokens([c.text for c in split.chunks])
    assert max(after) <= 256 and split.n_truncated == 0 and split.n_resplit == sum(n > 256 for n in before)
    for chunk in split.chunks:
        assert document.text[chunk.start : chunk.end] == chunk.text


@pytest.mark.slow
def test_real_model_leaves_english_that_fits_unchanged():
    from coverage_core.embeddings import make_embedder

    embedder = make_embedder("local")
    text = open("tests/fixtures/wiki-qa/articles/Ant.txt", encoding="utf-8").read()
    # Plain prose only: tables and lists of numbers can pass the limit in any language.
    prose = "\n\n".join(p for p in text.split("\n\n") if len(re.findall(r"\d", p)) < 5 and len(p) > 200)
    document = Document("Ant.txt", prose)
    plain = chunk_documents([document], ChunkingConfig())
    assert max(embedder.count_tokens([c.text for c in plain])) <= 256
    assert chunk_documents([document], ChunkingConfig(), token_limit(embedder)) == plain


@pytest.mark.slow
def test_real_model_chunks_are_the_same_counted_by_the_tokenizer_file_or_the_loaded_model():
    from coverage_core.embeddings import make_embedder

    english = open("tests/fixtures/wiki-qa/articles/Ant.txt", encoding="utf-8").read()
    chinese = "小提琴是一种弦乐器，用弓拉奏。" * 80
    documents = [Document("Ant.txt", english), Document("fr.txt", (FRENCH + " ") * 4),
                 Document("de.txt", (GERMAN + "\n") * 4), Document("zh.txt", chinese)]
    counted = make_embedder("local")
    by_file = split_documents(documents, ChunkingConfig(), token_limit(counted))
    assert not counted.is_loaded  # chunking never loaded the model
    model = make_embedder("local")._get_model()

    def count_with_model(texts):
        return [len(ids) for ids in model.tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]]

    by_model = split_documents(documents, ChunkingConfig(), TokenLimit(256, count_with_model))
    assert by_file.n_resplit > 0 and by_file.resplit_texts == by_model.resplit_texts
    assert by_file.chunks == by_model.chunks and by_file.n_truncated == by_model.n_truncated
