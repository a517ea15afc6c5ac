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

from coverage_core.embeddings.base import EmbedderOptions, ProviderSpec
from coverage_core.embeddings.local import DEFAULT_LOCAL_MODEL, SPEC as LOCAL
from coverage_core.languages import UNDETERMINED, LanguageShare, language_name

AUTO = "auto"
"""The provider name that stands for the automatic choice."""

ENGLISH_MODEL = ("local", DEFAULT_LOCAL_MODEL)
"""The model for English-only corpora (provider, model)."""

MULTILINGUAL_MODELS = (("e5", "multilingual-e5-small"), ("use", "universal-sentence-encoder-multilingual-3"))
"""Bundled models for other languages, in order of preference: the first that covers every main language.
multilingual-e5-small separates far better (off-topic questions from genuine ones by best similarity,
AUROC on French 0.944 against 0.826, on Chinese 0.910 against 0.769; French retrieval hit@5 0.960
against 0.915; ``benchmarks/eval_languages.py``), the Universal Sentence Encoder is about 25× faster
(``benchmarks/bench_embedding.py --models local,use,e5``: 2.2 and 48 texts/s on 2 cores)."""

E5_MAX_CHARACTERS = 1_000_000
"""Documents longer than this in all go to the faster multilingual model: multilingual-e5-small embeds
about 1,800 characters a second on 2 cores, so a million characters (about 1,250 chunks of 1,000
with their overlap) already take about ten minutes."""

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


def _main(shares: Sequence[LanguageShare]) -> list[str]:
    return [s.code for s in shares if s.share >= MIN_LANGUAGE_SHARE and s.code != UNDETERMINED]


def _described(shares: Sequence[LanguageShare]) -> str:
    kept = [s for s in shares if s.share >= MIN_LANGUAGE_SHARE and s.code != UNDETERMINED]
    if len(kept) == 1:
        return f"in {kept[0].name}"
    return "in " + ", ".join(f"{s.name} ({s.share:.0%})" for s in kept)


def choose_model(document_shares: Sequence[LanguageShare], question_shares: Sequence[LanguageShare] = (),
                 n_characters: int = 0) -> ModelChoice:
    """The bundled model for these languages.

    English documents and questions (or nothing detected) keep
    all-MiniLM-L6-v2; any other main language, in the documents or the
    questions (a cross-lingual test set), takes the first of
    :data:`MULTILINGUAL_MODELS` whose registry entry lists every main
    language (a model listing none is taken to read them all), passing
    over multilingual-e5-small when the documents hold more than
    :data:`E5_MAX_CHARACTERS` (``n_characters``) and the faster model
    reads the languages too.
    """
    from coverage_core.embeddings.registry import covers_language, model_display_name

    documents, questions = _main(document_shares), _main(question_shares)
    languages = tuple(dict.fromkeys(documents + questions))
    if set(languages) <= {"en"}:
        return ModelChoice(*ENGLISH_MODEL, "The documents and questions are in English, which all-MiniLM-L6-v2 "
                                            "reads well and fast.", languages)
    where = f"the documents are {_described(document_shares)}" if documents else "the documents' language is unknown"
    if questions and set(questions) != set(documents):
        where += f" and the questions {_described(question_shares)}"
    readers = [(p, m) for p, m in MULTILINGUAL_MODELS
               if all(covers_language(p, m, code) is not False for code in languages)]
    large = n_characters > E5_MAX_CHARACTERS and len(readers) > 1 and readers[0][0] == "e5"
    for provider, model in readers[1:] if large else readers:
        name = model_display_name(provider, model)
        why = (f" (the more exact multilingual-e5-small would take long on {n_characters:,} characters)"
               if large else "")
        return ModelChoice(provider, model, f"{where[:1].upper()}{where[1:]}: the multilingual model {name} reads "
                                            f"them{why}; all-MiniLM-L6-v2 reads English only.", languages)
    provider, model = MULTILINGUAL_MODELS[-1]
    missing = ", ".join(language_name(code) for code in languages if covers_language(provider, model, code) is False)
    return ModelChoice(provider, model, f"{where[:1].upper()}{where[1:]}: no bundled model lists {missing}; "
                                        f"{model_display_name(provider, model)} reads the most languages.", languages)


def resolve(embedding, document_shares: Sequence[LanguageShare], question_shares: Sequence[LanguageShare] = (),
            n_characters: int = 0):
    """``(embedding config, ModelChoice or None)``: an ``"auto"`` :class:`~coverage_core.config.EmbeddingConfig`
    made concrete by :func:`choose_model`; any other config unchanged, with None."""
    if embedding.provider != AUTO:
        return embedding, None
    choice = choose_model(document_shares, question_shares, n_characters)
    return dataclasses.replace(embedding, provider=choice.provider, model=choice.model, dimensions=None,
                               base_url=None), choice


def _english_default(model: str, options: EmbedderOptions):
    return LOCAL.factory(DEFAULT_LOCAL_MODEL, options)


# Unresolved (no texts seen yet), "auto" is the English default model: it embeds with it and falls back
# to its measured support level; analyses resolve it first (resolve()). No price row of its own.
SPEC = ProviderSpec(
    name=AUTO,
    label="the automatic choice",
    description="Automatic: the bundled model for the documents' languages (free, nothing leaves this server)",
    default_model=DEFAULT_LOCAL_MODEL,
    models={DEFAULT_LOCAL_MODEL: dataclasses.replace(LOCAL.models[DEFAULT_LOCAL_MODEL], usd_per_1m_tokens=None)},
    factory=_english_default,
    trained_for_truncation=LOCAL.trained_for_truncation,
)
