"""Helpers shared by several test modules."""

from coverage_core.llm import ChatClient, LLMConfig


def chat_client(server, api_key: str, **overrides) -> ChatClient:
    """A ChatClient for the fake API ``server`` (tests/fake_api.py): model ``fake-chat``,
    no retries, a 5 s timeout; ``overrides`` replace any of these settings."""
    settings = dict(model="fake-chat", base_url=server.url + "/v1", api_key=api_key, max_retries=0, timeout=5)
    settings.update(overrides)
    return ChatClient(LLMConfig(**settings))
