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

__all__ = [
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
]
