"""Semantic test-set coverage for retrieval-augmented generation.

Measures how much of a knowledge base a set of test questions exercises,
which topics no question touches, which questions are off-topic, and which
questions the knowledge base cannot answer.
"""

from coverage_core.errors import CoverageError, InputError, ProviderError
from coverage_core.types import (
    Chunk,
    Document,
    DocumentSet,
    IngestWarning,
    PageSpan,
    Question,
    QuestionSet,
)

__version__ = "0.1.0"

# Imported on first use: ``import coverage_core`` stays light (no numpy models, no scikit-learn).
_LAZY = {
    "analyze": "coverage_core.session",
    "analyze_corpus": "coverage_core.session",
    "AnalysisSession": "coverage_core.session",
    "AnalysisConfig": "coverage_core.config",
    "EmbeddingConfig": "coverage_core.config",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'coverage_core' has no attribute {name!r}")

__all__ = [
    "AnalysisConfig",
    "AnalysisSession",
    "Chunk",
    "CoverageError",
    "Document",
    "DocumentSet",
    "IngestWarning",
    "InputError",
    "PageSpan",
    "ProviderError",
    "Question",
    "QuestionSet",
    "analyze",
    "analyze_corpus",
    "EmbeddingConfig",
]
