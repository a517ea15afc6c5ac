"""The embedding providers, one spec each, and the lookups everything else uses.

Each provider module declares one :class:`~coverage_core.embeddings.base.ProviderSpec`
as ``SPEC``. ``make_embedder``, the key routing, the CLI's ``--embedder``, the
default price table and the dashboard's Configure page read them from here, so
a new provider is its module plus one entry in :data:`PROVIDERS`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from coverage_core.embeddings import auto, local, multilingual, openai_provider, voyage_provider
from coverage_core.embeddings.base import (
    ModelSpec,
    ProviderSpec,
    endpoint_is_own,
    environment_key_for,
    key_variable_for,
    resolve_key,
)
from coverage_core.errors import InputError

PROVIDERS: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        auto.SPEC, local.SPEC, multilingual.USE_SPEC, multilingual.E5_SPEC, openai_provider.SPEC,
        voyage_provider.SPEC,
    )
}
"""Every provider by name, in the order the CLI and the Configure page offer them."""


def provider_spec(provider: str | None) -> ProviderSpec:
    """The spec of ``provider`` (case and spaces ignored); InputError naming the choices when none is registered."""
    spec = PROVIDERS.get((provider or "").strip().lower())
    if spec is None:
        raise InputError(f"Unknown embedding provider {provider!r}; choose one of: {', '.join(PROVIDERS)}.")
    return spec


def sends_requests(provider: str) -> bool:
    """Whether ``provider`` sends texts to a server; an unregistered name is taken to (the cautious reading)."""
    spec = PROVIDERS.get(provider)
    return spec is None or spec.remote


def is_paid(provider: str) -> bool:
    """Whether ``provider``'s own endpoint charges per token; an unregistered name is taken to (its cost is shown)."""
    spec = PROVIDERS.get(provider)
    return spec is None or spec.paid


def is_provider_endpoint(provider: str, base_url: str | None) -> bool:
    """Whether ``base_url`` is ``provider``'s own API: no URL, or https on one of its hosts (:func:`~coverage_core.embeddings.base.endpoint_is_own`)."""
    return endpoint_is_own(PROVIDERS.get(provider), base_url)


def key_variable(provider: str, base_url: str | None) -> str:
    """The environment variable whose key may be sent to ``base_url`` for ``provider``.

    The provider's own variable (``OPENAI_API_KEY``, ``VOYAGE_API_KEY``) only
    for the provider's own endpoint; ``EMBEDDING_API_KEY`` for any other
    server, so an operator's key never reaches a URL a user typed.
    """
    return key_variable_for(PROVIDERS.get(provider), base_url)


def environment_key(provider: str, base_url: str | None) -> str | None:
    """The key the environment holds for ``provider`` at ``base_url`` under :func:`key_variable`, or None."""
    return environment_key_for(PROVIDERS.get(provider), base_url)


def resolve_api_key(provider: str, api_key: str | None, base_url: str | None) -> str:
    """``api_key`` if given, else the environment's key for this endpoint.

    Raises:
        InputError: neither exists; the message names the variable to set.
    """
    return resolve_key(PROVIDERS.get(provider), api_key, base_url, name=provider)


def trained_for_truncation(provider: str, model: str | None = None) -> bool | None:
    """Whether ``model`` of ``provider`` was trained for truncation (Matryoshka), from the provider's metadata.

    True: its first dimensions are a smaller embedding (OpenAI
    text-embedding-3, Voyage models with ``output_dimension``). False: known
    not to be (all-MiniLM-L6-v2, ada-002, voyage-3). None: unknown provider
    or model. ``model`` None or blank is the provider's default.
    """
    spec = PROVIDERS.get((provider or "").strip().lower())
    if spec is None:
        return None
    return spec.trained_for_truncation((model or "").strip() or spec.default_model)


def model_spec(provider: str | None, model: str | None = None) -> ModelSpec | None:
    """The registry entry of ``model`` (blank: the provider's default; a local folder or hub id by its last
    part, as :attr:`~ProviderSpec.model_name` shortens it), or None for an unlisted provider or model."""
    spec = PROVIDERS.get((provider or "").strip().lower())
    if spec is None:
        return None
    name = (model or "").strip() or spec.default_model
    if name not in spec.models and spec.model_name is not None:
        name = spec.model_name(name)
    return spec.models.get(name)


def default_support_level(provider: str | None, model: str | None = None) -> tuple[float | None, str]:
    """``(level, source)``: the support level ``model`` falls back to when a calibration cannot be trusted,
    and where it was measured; level None when the model has none (the generic default then applies)."""
    entry = model_spec(provider, model)
    if entry is None:
        return None, "not measured: the model is not in the registry"
    return entry.default_support_threshold, entry.default_support_source


def near_duplicate_similarity(provider: str | None, model: str | None = None) -> float | None:
    """The cosine from which two questions are near-duplicates on ``model`` (its registry entry's
    :attr:`~coverage_core.embeddings.base.ModelSpec.near_duplicate_similarity`), None when not measured."""
    entry = model_spec(provider, model)
    return None if entry is None else entry.near_duplicate_similarity


def covers_language(provider: str | None, model: str | None, code: str) -> bool | None:
    """Whether ``model`` of ``provider`` was trained for the language ``code`` (ISO 639-1): True or False
    when its registry entry lists its languages, None when it lists none or is not in the registry."""
    entry = model_spec(provider, model)
    if entry is None or entry.languages is None:
        return None
    return code in entry.languages


def model_display_name(provider: str, model: str) -> str:
    """``model`` as messages name it: the provider's :attr:`~ProviderSpec.model_name`, else unchanged."""
    spec = PROVIDERS.get((provider or "").strip().lower())
    return spec.model_name(model) if spec is not None and spec.model_name is not None else model


def configured_model_name(provider: str, model: str | None) -> str:
    """The model a configuration names, as messages name it: ``model`` or the provider's default
    (:func:`model_display_name`); the provider itself when it is not registered."""
    spec = PROVIDERS.get((provider or "").strip().lower())
    name = model or (spec.default_model if spec is not None else "")
    return model_display_name(provider, name) if name else provider


def embedding_prices() -> list[tuple[str, str, float, bool]]:
    """``(provider, model, usd_per_1m_tokens, paid)`` for every listed model with a known price."""
    return [
        (spec.name, name, model.usd_per_1m_tokens, spec.paid)
        for spec in PROVIDERS.values()
        for name, model in spec.models.items()
        if model.usd_per_1m_tokens is not None
    ]


class _DefaultModels(Mapping):
    """Each provider's default model, read from :data:`PROVIDERS` at every lookup."""

    def __getitem__(self, provider: str) -> str:
        return PROVIDERS[provider].default_model

    def __iter__(self) -> Iterator[str]:
        return iter(PROVIDERS)

    def __len__(self) -> int:
        return len(PROVIDERS)

    def __repr__(self) -> str:
        return repr(dict(self))


DEFAULT_MODELS: Mapping[str, str] = _DefaultModels()
"""``{provider: default model}``, always in step with :data:`PROVIDERS` (a provider registered later included)."""
