"""Closing the gap: gap ranking, themes, suggested questions and the LLM client."""
