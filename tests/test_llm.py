"""ChatClient through the real openai client against the local fake server."""

import json
import socket

import pytest

from coverage_core.errors import ProviderError
from coverage_core.suggest.llm import ChatClient, LLMConfig, parse_json_loose
from tests.fakes import Reply, chat_reply, error_reply
from tests.helpers import chat_client

KEY = "sk-test-SECRET-4242"
CHAT = "/v1/chat/completions"


def client_for(server, **overrides) -> ChatClient:
    return chat_client(server, KEY, **overrides)


def header(request, name: str) -> str | None:
    return {key.lower(): value for key, value in request.headers.items()}.get(name.lower())


def test_good_json(fake_api):
    fake_api.script(CHAT, [chat_reply('{"questions": ["a", "b"]}')])
    assert client_for(fake_api).complete_json("system", "user") == {"questions": ["a", "b"]}
    (request,) = fake_api.requests_to(CHAT)
    assert request.body["model"] == "fake-chat"
    assert [m["role"] for m in request.body["messages"]] == ["system", "user"]
    assert header(request, "Authorization") == f"Bearer {KEY}"


def test_fenced_json_with_prose(fake_api):
    reply = 'Sure! Here are the questions:\n```json\n{"questions": [{"question": "Why?", "passage": 1},]}\n```\nHope it helps.'
    fake_api.script(CHAT, [chat_reply(reply)])
    assert client_for(fake_api).complete_json("s", "u") == {"questions": [{"question": "Why?", "passage": 1}]}


def test_malformed_then_good_retries_with_nudge(fake_api):
    fake_api.script(CHAT, [chat_reply("I think the answer is {questions: oops"), chat_reply('[1, 2]')])
    assert client_for(fake_api).complete_json("s", "u") == [1, 2]
    first, second = fake_api.requests_to(CHAT)
    assert len(second.body["messages"]) == 4
    assert second.body["messages"][2]["content"].startswith("I think the answer")
    assert "not valid JSON" in second.body["messages"][3]["content"]


def test_malformed_twice_is_bad_response(fake_api):
    fake_api.script(CHAT, [chat_reply("no json here"), chat_reply("still none {")])
    with pytest.raises(ProviderError) as caught:
        client_for(fake_api).complete_json("s", "u")
    assert caught.value.kind == "bad_response"
    assert "valid JSON" in str(caught.value)


def test_401_is_auth_and_message_has_no_key(fake_api):
    fake_api.script(CHAT, [error_reply(401, f"Incorrect API key provided: {KEY}")])
    with pytest.raises(ProviderError) as caught:
        client_for(fake_api).complete_json("s", "u")
    assert caught.value.kind == "auth"
    assert KEY not in str(caught.value) and "SECRET" not in str(caught.value)
    assert "127.0.0.1" in str(caught.value)


def test_429_then_success(fake_api):
    fake_api.script(CHAT, [error_reply(429, "slow down", **{"retry-after-ms": "10"}), chat_reply('{"ok": true}')])
    assert client_for(fake_api, max_retries=2).complete_json("s", "u") == {"ok": True}
    assert len(fake_api.requests_to(CHAT)) == 2


def test_429_after_retries_is_rate_limit(fake_api):
    limited = error_reply(429, "slow down", **{"retry-after-ms": "10"})
    fake_api.script(CHAT, [limited, limited, limited])
    with pytest.raises(ProviderError) as caught:
        client_for(fake_api, max_retries=2).complete_json("s", "u")
    assert caught.value.kind == "rate_limit"
    assert len(fake_api.requests_to(CHAT)) == 3


def test_timeout_names_host(fake_api):
    fake_api.script(CHAT, [Reply(200, {}, delay=1.5)])
    with pytest.raises(ProviderError) as caught:
        client_for(fake_api, timeout=0.3).complete_json("s", "u")
    assert caught.value.kind == "timeout"
    assert "127.0.0.1" in str(caught.value) and KEY not in str(caught.value)


def test_connection_refused_names_host():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = ChatClient(LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0, timeout=2))
    with pytest.raises(ProviderError) as caught:
        client.complete_json("s", "u")
    assert caught.value.kind == "connection"
    assert f"127.0.0.1:{port}" in str(caught.value) and KEY not in str(caught.value)


def test_server_without_json_mode_gets_plain_requests(fake_api):
    fake_api.script(CHAT, [error_reply(400, "response_format is not supported"), chat_reply('{"a": 1}')])
    client = client_for(fake_api)
    assert client.complete_json("s", "u") == {"a": 1}
    with_mode, without = fake_api.requests_to(CHAT)
    assert with_mode.body["response_format"] == {"type": "json_object"}
    assert "response_format" not in without.body
    client.complete_json("s", "u")
    assert "response_format" not in fake_api.requests_to(CHAT)[-1].body


def test_local_server_without_key_uses_placeholder(fake_api, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_api.script(CHAT, [chat_reply("[]")])
    client = ChatClient(LLMConfig(base_url=fake_api.url + "/v1", max_retries=0))
    assert client.complete_json("s", "u") == []
    assert header(fake_api.requests_to(CHAT)[0], "Authorization") == "Bearer not-needed"


def test_openai_without_key_is_auth_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderError) as caught:
        ChatClient(LLMConfig())
    assert caught.value.kind == "auth"


def test_config_never_shows_key():
    config = LLMConfig(api_key=KEY, base_url="http://localhost:11434/v1")
    assert KEY not in repr(config)
    assert "api_key" not in config.public_dict()
    assert KEY not in json.dumps(config.public_dict())
    assert config.public_dict()["model"] == "gpt-4o-mini"


def test_client_repr_has_no_key(fake_api):
    assert KEY not in repr(client_for(fake_api))


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a": 1}', {"a": 1}),
        ("```\n[1, 2]\n```", [1, 2]),
        ('```json\n{"a": [1, 2,],}\n```', {"a": [1, 2]}),
        ('Here you go: {"a": "has } and { inside"} -- done', {"a": "has } and { inside"}),
        ('Note [see below]. {"q": ["x"]}', {"q": ["x"]}),
        ('{"a": 1} and then {"b": 2}', {"a": 1}),
    ],
)
def test_parse_json_loose(text, expected):
    assert parse_json_loose(text) == expected


@pytest.mark.parametrize("text", ["", "no json", "{broken", "42"])
def test_parse_json_loose_rejects(text):
    with pytest.raises(ValueError):
        parse_json_loose(text)


def test_openai_key_from_environment_is_not_sent_to_a_custom_server(fake_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.delenv("LLM_API_KEY", raising=False)
    fake_api.script("/v1/chat/completions", [chat_reply('{"ok": 1}')])
    ChatClient(LLMConfig(base_url=fake_api.url + "/v1")).complete_json("s", "u")
    sent = fake_api.requests_to("/v1/chat/completions")[-1].headers
    assert "sk-openai-secret" not in json.dumps(sent)

    monkeypatch.setenv("LLM_API_KEY", "local-server-key")
    fake_api.script("/v1/chat/completions", [chat_reply('{"ok": 1}')])
    ChatClient(LLMConfig(base_url=fake_api.url + "/v1")).complete_json("s", "u")
    assert header(fake_api.requests_to("/v1/chat/completions")[-1], "Authorization") == "Bearer local-server-key"
