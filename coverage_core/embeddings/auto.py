"""The provider "auto" as the registry lists it: the automatic model choice before it has seen any text.

Unresolved, "auto" embeds with the English default model and falls back to
its measured support level; analyses resolve it to a concrete model first
(:func:`coverage_core.embeddings.choice.resolve`). Kept apart from the choice
itself, which reads the registry, so that the registry can list it.
"""

from __future__ import annotations

import dataclasses

from coverage_core.embeddings.base import EmbedderOptions, ProviderSpec
from coverage_core.embeddings.local import DEFAULT_LOCAL_MODEL, SPEC as LOCAL

AUTO = "auto"
"""The provider name that stands for the automatic choice."""


def _english_default(model: str, options: EmbedderOptions):
    return LOCAL.factory(DEFAULT_LOCAL_MODEL, options)


# No price row of its own: it never runs unresolved in an analysis.
SPEC = ProviderSpec(
    name=AUTO,
    label="the automatic choice",
    description="Automatic: the bundled model for the documents' languages (free, nothing leaves this server)",
    default_model=DEFAULT_LOCAL_MODEL,
    models={DEFAULT_LOCAL_MODEL: dataclasses.replace(LOCAL.models[DEFAULT_LOCAL_MODEL], usd_per_1m_tokens=None)},
    factory=_english_default,
    trained_for_truncation=LOCAL.trained_for_truncation,
)
