import os
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
FIXTURES = PROJECT / "tests" / "fixtures"
# Copies of real files from the shared data (see tests/fixtures/README.md), so a
# plain clone with nothing beside it runs every test.
PDFS = FIXTURES / "pdfs"
WIKI = FIXTURES / "wiki-qa"

# The bundled model is loaded from site-packages; nothing may reach a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty embedding cache for one test, also exported to the environment."""
    directory = tmp_path / "embedding-cache"
    monkeypatch.setenv("COVERAGE_CORE_CACHE_DIR", str(directory))
    return directory


@pytest.fixture
def fake_api():
    from tests.fake_api import FakeAPIServer

    with FakeAPIServer() as server:
        yield server


@pytest.fixture(scope="module")
def module_cache_dir(tmp_path_factory):
    """An embedding cache for one test module, exported to the environment while it runs."""
    directory = tmp_path_factory.mktemp("embedding-cache")
    previous = os.environ.get("COVERAGE_CORE_CACHE_DIR")
    os.environ["COVERAGE_CORE_CACHE_DIR"] = str(directory)
    yield directory
    if previous is None:
        os.environ.pop("COVERAGE_CORE_CACHE_DIR", None)
    else:
        os.environ["COVERAGE_CORE_CACHE_DIR"] = previous
