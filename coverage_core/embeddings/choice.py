"""The automatic model choice: the bundled model that reads the languages the documents and questions are in.

``--embedder auto`` (the default) and the Configure page's "Automatic" stand
for a concrete model picked here from the detected languages
(:mod:`coverage_core.languages`) before anything is embedded, so caches,
reports and stage keys always name the model that really ran.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from coverage_core.embeddings import registry
from coverage_core.embeddings.auto import AUTO
from coverage_core.embeddings.local import DEFAULT_LOCAL_MODEL
from coverage_core.languages import UNDETERMINED, LanguageShare, language_name

__all__ = ["AUTO", "ENGLISH_MODEL", "MULTILINGUAL_MODELS", "ModelChoice", "choose_model", "resolve"]

ENGLISH_MODEL = ("local", DEFAULT_LOCAL_MODEL)
"""The model for English-only corpora (provider, model)."""

MULTILINGUAL_MODELS = (("e5", "multilingual-e5-small"), ("use", "universal-sentence-encoder-multilingual-3"))
"""Bundled models for other languages, in order of preference: the first that covers every main language.
multilingual-e5-small separates far better (off-topic questions from genuine ones by best similarity,
AUROC on French 0.944 against 0.826, on Chinese 0.910 against 0.769; French retrieval hit@5 0.960
against 0.915; ``benchmarks/eval_languages.py``), the Universal Sentence Encoder is about 6× faster
(``benchmarks/bench_embedding.py --models use,e5 --n 200 --size 1000``: 12.6 and 71 texts/s on 2 cores)."""

E5_MAX_CHARACTERS = 5_000_000
"""Documents longer than this in all go to the faster multilingual model: multilingual-e5-small embeds
about 12,000 characters a second on 2 cores, so five million characters (about 6,000 chunks of 1,000
with their overlap) already take about eight minutes, and calibration adds half a minute."""

# A language below this share of the characters does not steer the choice
# (an English abstract in a German report).
MIN_LANGUAGE_SHARE = 0.05


@dataclass(frozen=True)
class ModelChoice:
    """The model an analysis embeds with, and why: ``reason`` is one plain sentence for the page and the summary."""

    provider: str
    model: str
    reason: str
    languages: tuple[str, ...] = ()


def _steering(shares: Sequence[LanguageShare]) -> list[LanguageShare]:
    """The languages that steer the choice: those holding :data:`MIN_LANGUAGE_SHARE`; when none does (50
    languages of 2% each, a help centre in every language), all detected ones, or the corpus would be taken
    for one with no language and so for English."""
    detected = [s for s in shares if s.code != UNDETERMINED]
    return [s for s in detected if s.share >= MIN_LANGUAGE_SHARE] or detected


def _main(shares: Sequence[LanguageShare]) -> list[str]:
    return [s.code for s in _steering(shares)]


def _described(shares: Sequence[LanguageShare], shown: int = 3) -> str:
    kept = _steering(shares)
    if len(kept) == 1:
        return f"in {kept[0].name}"
    if kept[0].share < MIN_LANGUAGE_SHARE:
        named = ", ".join(f"{s.name} {s.share:.0%}" for s in kept[:shown])
        more = f" and {len(kept) - shown} more" if len(kept) > shown else ""
        return f"in {len(kept)} languages, none with {MIN_LANGUAGE_SHARE:.0%} of the text ({named}{more})"
    return "in " + ", ".join(f"{s.name} ({s.share:.0%})" for s in kept)


def _names(codes: Sequence[str], shown: int = 5) -> str:
    """"Khmer, Lao and Burmese"; past ``shown`` names, "… and 12 more"."""
    names = [language_name(code) for code in codes]
    if len(names) > shown:
        return f"{', '.join(names[:shown])} and {len(names) - shown} more"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def choose_model(document_shares: Sequence[LanguageShare], question_shares: Sequence[LanguageShare] = (),
                 n_characters: int = 0) -> ModelChoice:
    """The bundled model for these languages.

    English documents and questions (or nothing detected) keep
    all-MiniLM-L6-v2, and the reason says which of the two it was; any
    other main language, in the documents or the questions (a
    cross-lingual test set), takes the first of
    :data:`MULTILINGUAL_MODELS` whose registry entry lists every main
    language (a model listing none is taken to read them all), passing
    over multilingual-e5-small when the documents hold more than
    :data:`E5_MAX_CHARACTERS` (``n_characters``) and the faster model
    reads the languages too. Main languages hold :data:`MIN_LANGUAGE_SHARE`
    of the characters; when no detected language does, all of them are
    main. When no bundled model lists every main language, the reason is a
    warning naming those none lists, and the model that reads the most.
    """

    documents, questions = _main(document_shares), _main(question_shares)
    languages = tuple(dict.fromkeys(documents + questions))
    if not languages:
        return ModelChoice(*ENGLISH_MODEL, "No language could be told in the documents or questions (too little "
                                            "text, or only numbers and symbols), so the English model "
                                            "all-MiniLM-L6-v2 is used.", languages)
    if set(languages) == {"en"}:
        return ModelChoice(*ENGLISH_MODEL, "The documents and questions are in English, which all-MiniLM-L6-v2 "
                                            "reads well and fast.", languages)
    where = f"the documents are {_described(document_shares)}" if documents else "the documents' language is unknown"
    if questions and set(questions) != set(documents):
        where += f" and the questions {_described(question_shares)}"
    readers = [(p, m) for p, m in MULTILINGUAL_MODELS
               if all(registry.covers_language(p, m, code) is not False for code in languages)]
    large = n_characters > E5_MAX_CHARACTERS and len(readers) > 1 and readers[0][0] == "e5"
    for provider, model in readers[1:] if large else readers:
        name = registry.model_display_name(provider, model)
        why = (f" (the more exact multilingual-e5-small would take long on {n_characters:,} characters)"
               if large else "")
        return ModelChoice(provider, model, f"{where[:1].upper()}{where[1:]}: the multilingual model {name} reads "
                                            f"them{why}; all-MiniLM-L6-v2 reads English only.", languages)
    # No bundled model lists them all: the one that lists the most, and a warning naming what none lists.
    provider, model = max(MULTILINGUAL_MODELS, key=lambda pm: sum(registry.covers_language(*pm, code) is not False
                                                                   for code in languages))
    unread = [code for code in languages
              if all(registry.covers_language(p, m, code) is False for p, m in (ENGLISH_MODEL, *MULTILINGUAL_MODELS))]
    missing = _names(unread or [c for c in languages if registry.covers_language(provider, model, c) is False])
    return ModelChoice(provider, model, f"{where[:1].upper()}{where[1:]}, but no bundled model is trained for "
                                        f"{missing}, so the figures for them may be wrong; "
                                        f"{registry.model_display_name(provider, model)} reads the most of them.", languages)


def resolve(embedding, document_shares: Sequence[LanguageShare], question_shares: Sequence[LanguageShare] = (),
            n_characters: int = 0):
    """``(embedding config, ModelChoice or None)``: an ``"auto"`` :class:`~coverage_core.config.EmbeddingConfig`
    made concrete by :func:`choose_model`; any other config unchanged, with None."""
    if embedding.provider != AUTO:
        return embedding, None
    choice = choose_model(document_shares, question_shares, n_characters)
    return dataclasses.replace(embedding, provider=choice.provider, model=choice.model, dimensions=None,
                               base_url=None), choice
