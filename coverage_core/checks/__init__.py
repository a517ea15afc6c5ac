"""Checks beside the coverage analysis: retrieval, answerability, chunking comparison, production traffic, sub-questions."""
