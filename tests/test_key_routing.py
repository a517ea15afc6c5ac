"""A key from the environment goes only to its own provider.

``OPENAI_API_KEY`` / ``VOYAGE_API_KEY`` may be sent to OpenAI / Voyage
themselves only; any other base URL takes ``EMBEDDING_API_KEY`` or a key
given explicitly (the dashboard's password field). Credentials written into
a base URL never reach a report, a message or a repr.

Every "custom server" here is the loopback fake API (tests/fakes.py),
which records each request, so a test can check that the operator's secret
never arrived. Nothing contacts a real provider: the official endpoints are
only resolved, never called.
"""

from __future__ import annotations

import json
import socket

import pytest

from coverage_core.cli import main
from coverage_core.embeddings import PROVIDERS, Backoff, EmbeddingCache, key_variable, make_embedder, redact_url
from coverage_core.errors import InputError, ProviderError
from coverage_core.inputs.ingest import read_documents
from coverage_core.inputs.questions import read_questions
from coverage_core.suggest.llm import ChatClient, LLMConfig, llm_key_variable
from tests.app_support import DOCS, EXAMPLE, run_page, seed_session, shown, subset_csv, texts
from ui import engine, state

SECRET = "sk-test-SECRET-operator-0123456789"  # the server operator's provider key
CUSTOM_KEY = "custom-server-key-9876543210"  # EMBEDDING_API_KEY
TYPED_KEY = "typed-in-the-browser-5555"  # the dashboard's password field
URL_SECRET = "hunter2URLSECRET"  # a password written into a base URL
PROVIDER_VARIABLES = {"openai": "OPENAI_API_KEY", "voyage": "VOYAGE_API_KEY"}
EMBEDDINGS = "/v1/embeddings"


@pytest.fixture
def operator_env(monkeypatch):
    """The server has both providers' keys and no EMBEDDING_API_KEY / LLM_API_KEY."""
    for variable in PROVIDER_VARIABLES.values():
        monkeypatch.setenv(variable, SECRET)
    monkeypatch.delenv("EMBEDDING_API_KEY", raising=False)
    monkeypatch.delenv("LLM_API_KEY", raising=False)
    return monkeypatch


def closed_port() -> int:
    with socket.socket() as sock:  # bound, then released: nobody listens on it
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------- the rule


@pytest.mark.parametrize("provider", ["openai", "voyage"])
@pytest.mark.parametrize(
    ("template", "own"),
    [
        (None, True),
        ("", True),
        ("https://{host}/v1", True),
        ("https://{HOST}:443/v1", True),
        ("http://{host}/v1", False),  # plain http: the key would cross the network readable
        ("https://{host}:8443/v1", False),
        ("https://{host}.evil.example/v1", False),
        ("https://{host}@evil.example/v1", False),
        ("https://user@{host}/v1", False),
        ("https://evil.example\\@{host}/v1", False),  # read as evil.example by browsers' URL rules
        ("http://127.0.0.1:8000/v1", False),
        ("{host}/v1", False),
    ],
)
def test_only_the_providers_own_https_host_gets_its_variable(provider, template, own):
    host = {"openai": "api.openai.com", "voyage": "api.voyageai.com"}[provider]
    url = template if template is None else template.format(host=host, HOST=host.upper())
    expected = PROVIDER_VARIABLES[provider] if own else "EMBEDDING_API_KEY"
    assert key_variable(provider, url) == expected
    if provider == "openai":  # the LLM client follows the same rule with its own variable
        assert llm_key_variable(url) == ("OPENAI_API_KEY" if own else "LLM_API_KEY")


@pytest.mark.parametrize("provider", ["openai", "voyage"])
def test_the_provider_variable_serves_the_providers_own_endpoint(provider, operator_env):
    official = {"openai": "https://api.openai.com/v1", "voyage": "https://api.voyageai.com/v1"}[provider]
    operator_env.setenv("EMBEDDING_API_KEY", CUSTOM_KEY)  # not for the provider itself
    assert make_embedder(provider).api_key == SECRET
    assert make_embedder(provider, base_url=official).api_key == SECRET
    assert make_embedder(provider, api_key=TYPED_KEY).api_key == TYPED_KEY


@pytest.mark.parametrize("provider", ["openai", "voyage"])
def test_a_custom_base_url_never_takes_the_provider_variable(provider, operator_env):
    with pytest.raises(InputError) as caught:
        make_embedder(provider, base_url="http://127.0.0.1:9/v1")
    message = str(caught.value)
    assert "EMBEDDING_API_KEY" in message and PROVIDER_VARIABLES[provider] in message
    assert "Configure page" in message and SECRET not in message
    assert message.count(". ") == 0 and message.endswith(".")  # one sentence

    operator_env.setenv("EMBEDDING_API_KEY", CUSTOM_KEY)
    assert make_embedder(provider, base_url="http://127.0.0.1:9/v1").api_key == CUSTOM_KEY
    assert make_embedder(provider, base_url="http://127.0.0.1:9/v1", api_key=TYPED_KEY).api_key == TYPED_KEY


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_every_registered_provider_follows_the_rule(provider, operator_env):
    """The rule holds for whatever the registry lists: a provider's key variable serves its own https
    hosts only, and a provider without one (the local model) never names a variable of its own."""
    spec = PROVIDERS[provider]
    custom = "http://127.0.0.1:9/v1"
    assert key_variable(provider, custom) == "EMBEDDING_API_KEY"
    if spec.key_variable is None:
        assert key_variable(provider, None) == "EMBEDDING_API_KEY" and not spec.hosts
        return
    assert spec.hosts and key_variable(provider, None) == spec.key_variable
    for host in spec.hosts:
        assert key_variable(provider, f"https://{host}/v1") == spec.key_variable
        assert key_variable(provider, f"http://{host}/v1") == "EMBEDDING_API_KEY"
        assert key_variable(provider, f"https://{host}.evil.example/v1") == "EMBEDDING_API_KEY"
    for other in PROVIDERS.values():  # another provider's host is a custom server for this one
        for host in set(other.hosts) - set(spec.hosts):
            assert key_variable(provider, f"https://{host}/v1") == "EMBEDDING_API_KEY"


# ---------------------------------------------------------------- the command line


def write_questions(tmp_path):
    path = tmp_path / "questions.csv"
    path.write_text("question\nWhat is a drum?\nHow is a drum played?\nWhat are drumheads made of?\n")
    return path


def cli(tmp_path, provider, base_url, *extra):
    out = tmp_path / "report.json"
    argv = [
        "analyze", "--docs", str(EXAMPLE / "docs" / "Drum.txt"), "--questions", str(write_questions(tmp_path)),
        "--out", str(out), "--embedder", provider, "--base-url", base_url, "--clusters", "2", "--quiet", *extra,
    ]
    return main(argv), out


@pytest.mark.parametrize("provider", ["openai", "voyage"])
def test_cli_refuses_to_send_the_operators_key_to_a_custom_server(
    provider, operator_env, fake_api, cache_dir, tmp_path, capsys
):
    code, out = cli(tmp_path, provider, f"{fake_api.url}/v1")
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("coverage_core: ") and "EMBEDDING_API_KEY" in lines[-1]
    assert "Traceback" not in err and SECRET not in err
    assert not fake_api.received(SECRET) and fake_api.requests == []
    assert not out.exists()


@pytest.mark.parametrize("provider", ["openai", "voyage"])
def test_cli_sends_embedding_api_key_to_a_custom_server(provider, operator_env, fake_api, cache_dir, tmp_path, capsys):
    operator_env.setenv("EMBEDDING_API_KEY", CUSTOM_KEY)
    code, out = cli(tmp_path, provider, f"{fake_api.url}/v1")
    assert code == 0, capsys.readouterr().err
    assert fake_api.requests_to(EMBEDDINGS)
    assert set(fake_api.authorizations()) == {f"Bearer {CUSTOM_KEY}"}
    assert not fake_api.received(SECRET)
    assert CUSTOM_KEY not in out.read_text() and SECRET not in out.read_text()


def test_cli_report_never_holds_credentials_from_the_base_url(operator_env, fake_api, cache_dir, tmp_path, capsys):
    operator_env.setenv("EMBEDDING_API_KEY", CUSTOM_KEY)
    credentialed = fake_api.url.replace("http://", f"http://user:{URL_SECRET}@") + "/v1"
    code, out = cli(tmp_path, "openai", credentialed)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert fake_api.requests_to(EMBEDDINGS) and not fake_api.received(SECRET)
    text = out.read_text()
    assert URL_SECRET not in text and "user:" not in text
    assert URL_SECRET not in captured.out + captured.err
    host = fake_api.url.removeprefix("http://")
    assert json.loads(text)["config"]["embedding"]["base_url"] == f"http://***@{host}/v1"


# ---------------------------------------------------------------- messages and reprs


@pytest.mark.parametrize("provider", ["openai", "voyage"])
@pytest.mark.parametrize("credentials", [f"user:{URL_SECRET}", URL_SECRET])
def test_connection_error_hides_credentials_in_the_url(provider, credentials):
    port = closed_port()
    embedder = make_embedder(
        provider, api_key=TYPED_KEY, base_url=f"http://{credentials}@127.0.0.1:{port}/v1", max_retries=0, timeout=2
    )
    embedder.backoff = Backoff(initial=0.01, maximum=0.05)
    assert URL_SECRET not in repr(embedder) and TYPED_KEY not in repr(embedder)
    with pytest.raises(ProviderError) as caught:
        embedder.embed(["x"])
    message = str(caught.value)
    assert caught.value.kind in ("connection", "timeout")
    assert URL_SECRET not in message and TYPED_KEY not in message
    if caught.value.kind == "connection":
        assert f"http://***@127.0.0.1:{port}/v1" in message


def test_missing_key_message_hides_credentials_in_the_url(operator_env):
    with pytest.raises(InputError) as caught:
        make_embedder("openai", base_url=f"http://user:{URL_SECRET}@127.0.0.1:9/v1")
    assert URL_SECRET not in str(caught.value) and "127.0.0.1:9" in str(caught.value)


def test_llm_messages_and_settings_hide_credentials_in_the_url(operator_env):
    port = closed_port()
    config = LLMConfig(base_url=f"http://user:{URL_SECRET}@127.0.0.1:{port}/v1", max_retries=0, timeout=2)
    assert URL_SECRET not in json.dumps(config.public_dict()) and URL_SECRET not in repr(config)
    client = ChatClient(config)
    assert URL_SECRET not in repr(client)
    with pytest.raises(ProviderError) as caught:
        client.complete_json("s", "u")
    assert caught.value.kind == "connection"
    assert URL_SECRET not in str(caught.value) and f"127.0.0.1:{port}" in str(caught.value)


def test_llm_key_follows_the_same_host_rule(operator_env):
    # No request is sent: only which key each client would use is checked.
    assert ChatClient(LLMConfig(base_url="https://api.openai.com/v1"))._client.api_key == SECRET
    lookalike = ChatClient(LLMConfig(base_url="https://api.openai.com.evil.example/v1"))
    assert lookalike._client.api_key != SECRET
    operator_env.setenv("LLM_API_KEY", CUSTOM_KEY)
    assert ChatClient(LLMConfig(base_url="http://127.0.0.1:9/v1"))._client.api_key == CUSTOM_KEY


def test_redact_url_forms():
    assert redact_url(None) is None and redact_url("") == ""
    assert redact_url("http://u:p@h:1/v1") == "http://***@h:1/v1"
    assert redact_url("http://token@h/v1") == "http://***@h/v1"
    assert redact_url("u:p@h/v1") == "***@h/v1"
    assert redact_url("http://u:pa/ss@h/v1") == "http://***@h/v1"  # a "/" in the password
    assert redact_url("http://h/v1?key=abc") == "http://h/v1?***"
    assert redact_url("https://api.openai.com/v1") == "https://api.openai.com/v1"


def test_analysis_report_and_html_hide_credentials_in_the_url(fake_api, cache_dir):
    from coverage_core.config import AnalysisConfig, EmbeddingConfig
    from coverage_core.outputs.html_report import build_html_report
    from coverage_core.outputs.report import build_report
    from coverage_core.session import analyze

    credentialed = fake_api.url.replace("http://", f"http://user:{URL_SECRET}@") + "/v1"
    config = AnalysisConfig(embedding=EmbeddingConfig("openai", base_url=credentialed), n_clusters=2)
    documents = read_documents([EXAMPLE / "docs" / "Drum.txt"]).documents
    questions = read_questions(subset_csv(("Drum",)), name="q.csv")
    analysis = analyze(config, documents, questions, api_key=TYPED_KEY, cache=EmbeddingCache(cache_dir))
    shown = [
        json.dumps(build_report(analysis, {"questions_file": "q.csv"})),
        build_html_report(analysis, inputs={"questions_file": "q.csv"}),
        repr(analysis.config),
    ]
    for text in shown:
        assert URL_SECRET not in text and TYPED_KEY not in text


# ---------------------------------------------------------------- the dashboard

CONFIGURE = "pages/2_configure.py"


def configure_values(settings: state.Settings) -> dict:
    """Session state after an upload: documents and questions, nothing embedded yet."""
    document_set = read_documents([EXAMPLE / "docs" / name for name in DOCS])
    data = subset_csv()
    return {
        state.SETTINGS: settings,
        state.DOCUMENTS: state.LoadedDocuments(
            engine.documents_fingerprint(document_set.documents), tuple(DOCS), tuple(document_set.documents), ()
        ),
        state.QUESTION_FILE: state.QuestionFile("subset.csv", data),
        state.QUESTIONS: read_questions(data, name="subset.csv"),
    }


def run_analysis(at):
    at.checkbox(key=state.W_COST_OK).check().run()
    at.button(key=state.W_RUN).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown_text(at) -> str:
    return " ".join(
        texts(at.success) + texts(at.error) + texts(at.caption) + texts(at.markdown) + texts(at.info)
        + [field.label for field in at.text_input]
    )


def test_configure_page_does_not_offer_the_operators_key_to_a_custom_server(operator_env, fake_api, cache_dir):
    at = run_page(CONFIGURE, configure_values(state.Settings(provider="openai", base_url=f"{fake_api.url}/v1")))
    assert not any("OPENAI_API_KEY environment variable" in s for s in texts(at.success))
    field = at.text_input(key=state.W_EMBED_KEY)
    assert field.proto.type == field.proto.PASSWORD and "EMBEDDING_API_KEY" in field.label
    run_analysis(at)
    assert "EMBEDDING_API_KEY" in " ".join(texts(at.error))
    assert not fake_api.received(SECRET) and fake_api.requests == []
    assert SECRET not in shown_text(at)


def test_configure_page_uses_embedding_api_key_for_a_custom_server(operator_env, fake_api, cache_dir):
    operator_env.setenv("EMBEDDING_API_KEY", CUSTOM_KEY)
    at = run_page(CONFIGURE, configure_values(state.Settings(provider="openai", base_url=f"{fake_api.url}/v1")))
    assert any("EMBEDDING_API_KEY" in s for s in texts(at.success))
    assert not [f for f in at.text_input if f.key == state.W_EMBED_KEY]
    run_analysis(at)
    assert fake_api.requests_to(EMBEDDINGS)
    assert set(fake_api.authorizations()) == {f"Bearer {CUSTOM_KEY}"}
    assert not fake_api.received(SECRET)


def test_configure_page_sends_the_typed_key_to_a_custom_server(operator_env, fake_api, cache_dir):
    at = run_page(CONFIGURE, configure_values(state.Settings(provider="openai", base_url=f"{fake_api.url}/v1")))
    at.text_input(key=state.W_EMBED_KEY).input(TYPED_KEY).run()
    assert at.session_state[state.EMBED_API_KEY] == TYPED_KEY
    run_analysis(at)
    assert fake_api.requests_to(EMBEDDINGS)
    assert set(fake_api.authorizations()) == {f"Bearer {TYPED_KEY}"}
    assert not fake_api.received(SECRET)
    assert TYPED_KEY not in shown_text(at)


def test_configure_page_uses_the_provider_variable_for_the_provider_itself(operator_env):
    # Nothing is run: that would contact OpenAI.
    at = run_page(CONFIGURE, configure_values(state.Settings(provider="openai")))
    assert any("OPENAI_API_KEY environment variable" in s for s in texts(at.success))
    assert not [f for f in at.text_input if f.key == state.W_EMBED_KEY]


def test_a_typed_key_is_forgotten_when_the_base_url_changes(operator_env, fake_api):
    values = configure_values(state.Settings(provider="openai", base_url=f"{fake_api.url}/v1"))
    values[state.EMBED_API_KEY] = TYPED_KEY
    at = run_page(CONFIGURE, values)
    assert any("set for this session" in s for s in texts(at.success))
    at.text_input(key=state.W_BASE_URL).input("http://127.0.0.1:9/v1").run()
    assert state.EMBED_API_KEY not in at.session_state
    assert at.text_input(key=state.W_EMBED_KEY).proto.type == at.text_input(key=state.W_EMBED_KEY).proto.PASSWORD


def test_fitness_dimension_sweep_does_not_send_the_operators_key(operator_env, fake_api, cache_dir):
    base_url = fake_api.url + "/v1"
    # A set support level: the page needs no calibration (which would need the forgotten key).
    settings = state.Settings(
        provider="openai", model="text-embedding-3-small", dimensions=64, base_url=base_url, n_clusters=3,
        support_threshold=0.5,
    )
    # Embedded earlier in the session with a typed key, which the session has since forgotten.
    embedder = make_embedder("openai", "text-embedding-3-small", dimensions=64, api_key=TYPED_KEY, base_url=base_url)
    values, _ = seed_session(
        read_documents([EXAMPLE / "docs" / name for name in DOCS]), subset_csv(), settings, embedder,
        EmbeddingCache(cache_dir),
    )
    sent_before = len(fake_api.requests)
    at = run_page("pages/5_fitness.py", values)
    at.checkbox(key=state.W_SWEEP_API).check().run()
    at.button(key=state.W_RUN_SWEEP).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "EMBEDDING_API_KEY" in " ".join(texts(at.error))
    assert len(fake_api.requests) == sent_before and not fake_api.received(SECRET)


def test_configure_page_offers_a_provider_registered_as_one_spec(operator_env, cache_dir):
    from tests.test_embeddings_providers import acme_spec

    operator_env.setitem(PROVIDERS, "acme", acme_spec([]))
    operator_env.delenv("ACME_API_KEY", raising=False)
    at = run_page(CONFIGURE, configure_values(state.Settings(provider="acme")))
    assert "Acme embeddings (a test provider)" in at.selectbox(key=state.W_PROVIDER).options
    assert at.selectbox(key=f"{state.W_MODEL}_acme").options == ["acme-embed-1"]
    field = at.text_input(key=state.W_EMBED_KEY)  # its own variable, named on its own page
    assert field.proto.type == field.proto.PASSWORD and "ACME_API_KEY" in field.label
    assert any("Embedding with acme-embed-1" in shown(metric.label) for metric in at.metric)  # paid: its cost first
    assert at.checkbox(key=state.W_COST_OK).label == "I accept the estimated embedding cost"
