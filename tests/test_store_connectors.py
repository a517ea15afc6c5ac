"""Chunk vectors read from real local Qdrant and Chroma collections: ``--vectors qdrant:…`` and ``chroma:…``.

Every collection is written here, in a temporary folder, by the store's own
client (qdrant-client's local mode, Chroma's PersistentClient), and read back
through ``read_vector_source``, the command line and the Upload page. Small
synthetic vectors test the reading; the vectors of the real bundled model
(three documents cut from the Ant article, as in test_vector_store.py) test
that ``analyze --vectors qdrant:…`` gives the analysis ``--docs`` gives.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from coverage_core import cli
from coverage_core.errors import InputError
from coverage_core.inputs import store_connectors
from coverage_core.inputs.store_connectors import StoreAddress, parse_store_address, read_vector_source
from coverage_core.inputs.vector_store import VectorColumns
from tests.helpers import PROJECT, embedded_chunks, write_knowledge_base
from ui.messages import user_message

DIM = 16
TEXTS = [f"Passage {i} about ants and their colonies." for i in range(7)]
SOURCES = ["a.pdf", "a.pdf", "b.pdf", "a.pdf", "b.pdf", "c.txt", "c.txt"]
PAGES = [1, 2, 1, 3, 2, None, None]


def chroma_client(path):
    import chromadb
    from chromadb.config import Settings

    # The reader's settings: Chroma keeps one client per folder in a process, and refuses other settings for it.
    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def unit(matrix):
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def vectors():
    return np.random.default_rng(7).normal(size=(len(TEXTS), DIM)).astype(np.float32)


@pytest.fixture(scope="module")
def qdrant(tmp_path_factory, vectors):
    """A Qdrant folder with the collections ``docs`` (one unnamed vector, plain payload), ``langchain`` (LangChain's
    layout), ``named`` (two named vectors, one point without ``dense``), ``single`` (one named vector) and ``empty``."""
    from qdrant_client import QdrantClient, models

    path = tmp_path_factory.mktemp("qdrant") / "store"
    client = QdrantClient(path=str(path))
    params = models.VectorParams(size=DIM, distance=models.Distance.COSINE)

    def payload(i):
        return {"text": TEXTS[i], "source": SOURCES[i], **({"page": PAGES[i]} if PAGES[i] else {})}

    client.create_collection("docs", vectors_config=params)
    client.upsert("docs", [models.PointStruct(id=i, vector=vectors[i].tolist(), payload=payload(i))
                           for i in range(len(TEXTS))])
    client.create_collection("langchain", vectors_config=params)
    client.upsert("langchain", [models.PointStruct(
        id=i, vector=vectors[i].tolist(),
        payload={"page_content": TEXTS[i], "metadata": {"source": SOURCES[i], "page": PAGES[i] or ""}})
        for i in range(len(TEXTS))])
    client.create_collection("named", vectors_config={
        "dense": params, "title": models.VectorParams(size=4, distance=models.Distance.DOT)})
    client.upsert("named", [models.PointStruct(
        id=i, vector={"title": [1.0, 0.0, 0.0, float(i)], **({"dense": vectors[i].tolist()} if i != 2 else {})},
        payload=payload(i)) for i in range(len(TEXTS))])
    client.create_collection("single", vectors_config={"dense": params})
    client.upsert("single", [models.PointStruct(id=i, vector={"dense": vectors[i].tolist()}, payload=payload(i))
                             for i in range(len(TEXTS))])
    client.create_collection("empty", vectors_config=params)
    client.close()  # releases the folder's lock for the readers
    return path


@pytest.fixture(scope="module")
def chroma(tmp_path_factory, vectors):
    """A Chroma folder with ``docs`` (texts as Chroma documents, a misleading ``text`` metadata entry),
    ``metadata_text`` (no Chroma documents: the text in the metadata) and ``empty``."""
    path = tmp_path_factory.mktemp("chroma") / "store"
    client = chroma_client(path)
    ids = [f"p{i}" for i in range(len(TEXTS))]
    metadatas = [{"source": SOURCES[i], "text": "not the passage", **({"page": PAGES[i]} if PAGES[i] else {})}
                 for i in range(len(TEXTS))]
    client.create_collection("docs", embedding_function=None).add(
        ids=ids, embeddings=vectors, documents=TEXTS, metadatas=metadatas)
    client.create_collection("metadata_text", embedding_function=None).add(
        ids=ids, embeddings=vectors, metadatas=[{"body": TEXTS[i], "file": SOURCES[i]} for i in range(len(TEXTS))])
    client.create_collection("empty", embedding_function=None)
    return path


def assert_read_as_written(found, vectors, *, rows=None):
    rows = list(range(len(TEXTS))) if rows is None else rows
    assert [c.text for c in found.corpus.chunks] == [TEXTS[i] for i in rows]
    assert [c.document for c in found.corpus.chunks] == [SOURCES[i] for i in rows]
    assert [c.page for c in found.corpus.chunks] == [PAGES[i] for i in rows]
    assert found.corpus.vectors.dtype == np.float32
    np.testing.assert_allclose(found.corpus.vectors, unit(vectors[rows]), atol=1e-6)
    assert [d.name for d in found.corpus.documents] == list(dict.fromkeys(SOURCES[i] for i in rows))


# ---------------------------------------------------------------- Qdrant


def test_a_qdrant_collection_reads_its_payload_and_vectors_in_point_order(qdrant, vectors):
    found = read_vector_source(f"qdrant:{qdrant}?collection=docs")
    assert_read_as_written(found, vectors)
    assert found.source == "Qdrant collection docs" and found.dimensions == DIM
    assert found.columns == VectorColumns("text", "vector", "source", "page") and found.warnings == []


def test_langchains_nested_metadata_is_read_and_a_blank_page_is_no_page(qdrant, vectors):
    found = read_vector_source(f"qdrant:{qdrant}?collection=langchain")
    assert_read_as_written(found, vectors)
    assert found.columns == VectorColumns("page_content", "vector", "source", "page") and found.warnings == []


def test_scrolling_page_by_page_reads_every_point_once(qdrant, vectors, monkeypatch):
    monkeypatch.setattr(store_connectors, "QDRANT_PAGE_POINTS", 3)  # 7 points: pages of 3, 3 and 1
    assert_read_as_written(read_vector_source(f"qdrant:{qdrant}?collection=docs"), vectors)


def test_named_vectors_one_is_taken_several_are_chosen(qdrant, vectors):
    assert_read_as_written(read_vector_source(f"qdrant:{qdrant}?collection=single"), vectors)
    found = read_vector_source(f"qdrant:{qdrant}?collection=named&vector=dense")
    assert_read_as_written(found, vectors, rows=[0, 1, 3, 4, 5, 6])  # point 2 has no dense vector
    assert found.warnings == ["1 of 7 rows (row 3, counting from 1) has no vector, so it was left out."]
    titles = read_vector_source(f"qdrant:{qdrant}?collection=named&vector=title")
    assert titles.dimensions == 4 and len(titles.corpus.chunks) == 7


def test_the_text_and_document_keys_can_be_named(qdrant):
    found = read_vector_source(f"qdrant:{qdrant}?collection=docs", VectorColumns(text="source", document="text"))
    assert [c.text for c in found.corpus.chunks] == SOURCES and found.corpus.chunks[0].document == TEXTS[0]


def test_a_folder_another_client_holds_is_one_sentence(qdrant):
    from qdrant_client import QdrantClient

    holder = QdrantClient(path=str(qdrant))
    try:
        with pytest.raises(InputError) as caught:
            read_vector_source(f"qdrant:{qdrant}?collection=docs")
    finally:
        holder.close()
    assert str(caught.value) == ("The Qdrant folder store is open in another program (a Qdrant client holds it); "
                                 "close that program and try again.")
    assert len(read_vector_source(f"qdrant:{qdrant}?collection=docs").corpus.chunks) == 7  # and it is let go after


# ---------------------------------------------------------------- Chroma


def test_a_chroma_collection_reads_its_documents_metadata_and_embeddings(chroma, vectors, monkeypatch):
    from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

    def no_model(*_, **__):
        raise AssertionError("Chroma's default embedding model must never be loaded or downloaded")

    monkeypatch.setattr(ONNXMiniLM_L6_V2, "_download_model_if_not_exists", no_model)
    monkeypatch.setattr(ONNXMiniLM_L6_V2, "__call__", no_model)
    monkeypatch.setattr(store_connectors, "CHROMA_PAGE_ROWS", 3)  # pages of 3, 3 and 1
    found = read_vector_source(f"chroma:{chroma}?collection=docs")
    assert_read_as_written(found, vectors)  # the Chroma documents, not the metadata's "text" entry
    assert found.source == "Chroma collection docs"
    assert found.columns == VectorColumns("documents", "embeddings", "source", "page") and found.warnings == []


def test_chroma_text_in_the_metadata_is_detected_or_named(chroma, vectors):
    with pytest.raises(InputError) as caught:
        read_vector_source(f"chroma:{chroma}?collection=metadata_text")
    assert str(caught.value) == (
        "Chroma collection metadata_text has no text column (looked for text, chunk, content, page_content, …); "
        "name the text column, one of: 'body', 'file', 'embeddings'."
    )
    assert user_message(caught.value).endswith(
        "give that column one of these names in the collection. Its columns: 'body', 'file', 'embeddings'.")
    found = read_vector_source(f"chroma:{chroma}?collection=metadata_text", VectorColumns(text="body"))
    assert [c.text for c in found.corpus.chunks] == TEXTS and found.columns.document == "file"
    named = read_vector_source(f"chroma:{chroma}?collection=docs", VectorColumns(text="text"))
    assert {c.text for c in named.corpus.chunks} == {"not the passage"}


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("qdrant:{q}", "The vector store address qdrant:{q} names no collection; write it as "
                       "qdrant:PATH?collection=NAME[&vector=NAME]."),
        ("qdrant:{q}?collection=", "The vector store address qdrant:{q}?collection= names no collection; write it "
                                   "as qdrant:PATH?collection=NAME[&vector=NAME]."),
        ("chroma:?collection=docs", "The vector store address chroma:?collection=docs names no folder; write it as "
                                    "chroma:PATH?collection=NAME."),
        ("qdrant:{q}?collection=docs&limit=5", "The vector store address qdrant:{q}?collection=docs&limit=5 has "
         "'limit=5', which is not one setting of qdrant:PATH?collection=NAME[&vector=NAME]; write it as "
         "qdrant:PATH?collection=NAME[&vector=NAME]."),
        ("chroma:{c}?collection=docs&vector=dense", "The vector store address chroma:{c}?collection=docs&vector=dense "
         "has 'vector=dense', which is not one setting of chroma:PATH?collection=NAME; write it as "
         "chroma:PATH?collection=NAME."),
        ("qdrant:{q}/nowhere?collection=docs", "The Qdrant folder {q}/nowhere does not exist; give the folder Qdrant "
                                               "saved its collections in."),
        ("qdrant:{q}/meta.json?collection=docs", "The Qdrant folder {q}/meta.json is a file; give the folder Qdrant "
                                                 "saved its collections in."),
        ("chroma:{q}?collection=docs", "The folder {q} holds no Chroma store (no chroma.sqlite3 in it); give the "
                                       "folder Chroma saved its collections in."),
        ("qdrant:{q}?collection=Docs", "The Qdrant folder store has no collection Docs; name one of its "
                                       "collections: docs, empty, langchain, named, single."),
        ("chroma:{c}?collection=doc", "The Chroma folder store has no collection doc; name one of its collections: "
                                      "docs, empty, metadata_text."),
        ("qdrant:{q}?collection=empty", "The Qdrant collection empty holds no passages; give the collection the "
                                        "passages were saved in."),
        ("chroma:{c}?collection=empty", "The Chroma collection empty holds no passages; give the collection the "
                                        "passages were saved in."),
        ("qdrant:{q}?collection=named", "The Qdrant collection named has several named vectors (dense, title); name "
                                        "the one that holds the passage vectors."),
        ("qdrant:{q}?collection=named&vector=sparse", "The Qdrant collection named has no named vector sparse; name "
                                                      "one of: dense, title."),
        ("qdrant:{q}?collection=docs&vector=dense", "The Qdrant collection docs has one unnamed vector, not a named "
                                                    "vector dense; name no vector."),
    ],
)
def test_each_unusable_address_is_one_sentence(qdrant, chroma, address, message):
    with pytest.raises(InputError) as caught:
        read_vector_source(address.format(q=qdrant, c=chroma))
    assert str(caught.value) == message.format(q=qdrant, c=chroma)


@pytest.mark.parametrize(("module", "kind", "package"), [("qdrant_client", "qdrant", "qdrant-client"),
                                                          ("chromadb", "chroma", "chromadb")])
def test_a_store_package_that_is_not_installed_is_named(qdrant, chroma, monkeypatch, module, kind, package):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as when the package is absent
    folder = qdrant if kind == "qdrant" else chroma
    with pytest.raises(InputError) as caught:
        read_vector_source(f"{kind}:{folder}?collection=docs")
    name = "Qdrant" if kind == "qdrant" else "Chroma"
    assert str(caught.value) == (f"Reading a {name} collection needs the {package} package, which is not installed; "
                                 "install the pinned requirements, or export the collection to Parquet.")


def test_a_folder_with_no_store_is_left_as_it_was(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    for kind in ("qdrant", "chroma"):
        with pytest.raises(InputError, match="holds no"):
            read_vector_source(f"{kind}:{folder}?collection=docs")
    assert list(folder.iterdir()) == []  # neither client was let create a store in it


def test_an_address_is_recognised_only_by_its_store_prefix():
    assert store_connectors.is_store_address("QDRANT:/x?collection=a")
    assert not store_connectors.is_store_address("vectors.parquet")
    assert not store_connectors.is_store_address("/data/qdrant:backup.parquet")
    address = parse_store_address("qdrant:/data/my%20store?collection=my%20docs&vector=dense")
    assert address == StoreAddress("qdrant", address.path, "my docs", "dense") and str(address.path) == "/data/my%20store"


# ---------------------------------------------------------------- the command line


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_command_line_says_one_sentence_and_exits_2(qdrant, chroma, tmp_path, capsys):
    common = ["--questions", str(tmp_path / "q.csv"), "--out", str(tmp_path / "r.json"), "--quiet"]
    (tmp_path / "q.csv").write_text("question\nWhat do ants eat?\n", encoding="utf-8")
    cases = [
        (f"qdrant:{qdrant}", f"coverage_core: The vector store address qdrant:{qdrant} names no collection; write "
                             "it as qdrant:PATH?collection=NAME[&vector=NAME]."),
        (f"chroma:{tmp_path}/missing?collection=docs", f"coverage_core: The Chroma folder {tmp_path}/missing does not "
                                                      "exist; give the folder Chroma saved its collections in."),
        (f"qdrant:{qdrant}?collection=named", "coverage_core: The Qdrant collection named has several named vectors "
         "(dense, title); name the one that holds the passage vectors. (command line: &vector=NAME in the --vectors "
         "address)"),
        (f"chroma:{chroma}?collection=metadata_text", "coverage_core: Chroma collection metadata_text has no text "
         "column (looked for text, chunk, content, page_content, …); name the text column, one of: 'body', 'file', "
         "'embeddings'. (command line: --text-column)"),
    ]
    for address, message in cases:
        code, _, err = run_cli(capsys, "analyze", "--vectors", address, *common)
        assert code == cli.EXIT_UNUSABLE
        assert err.strip() == message
    meta = (qdrant / "meta.json").read_bytes()
    code, _, err = run_cli(capsys, "analyze", "--vectors", f"qdrant:{qdrant}?collection=docs", *common[:2],
                           "--out", str(qdrant / "meta.json"), "--quiet")
    assert code == cli.EXIT_UNUSABLE  # a file of the store folder is an input, never overwritten
    assert err.strip() == (f"coverage_core: --out {qdrant / 'meta.json'} is also {qdrant / 'meta.json'}, read through "
                           "--vectors, so writing it would destroy that input; name another file for --out.")
    assert (qdrant / "meta.json").read_bytes() == meta


@pytest.fixture(scope="module")
def kb(tmp_path_factory, module_cache_dir):
    """The Ant knowledge base, its chunks embedded by the real model, in a Qdrant and a Chroma collection."""
    from qdrant_client import QdrantClient, models

    folder = tmp_path_factory.mktemp("kb")
    docs, questions = write_knowledge_base(folder)
    chunks, vectors = embedded_chunks(docs, module_cache_dir)
    client = QdrantClient(path=str(folder / "qdrant"))
    client.create_collection("ants", vectors_config=models.VectorParams(size=vectors.shape[1],
                                                                         distance=models.Distance.COSINE))
    client.upload_collection("ants", vectors=np.asarray(vectors), ids=list(range(len(chunks))),
                             payload=[{"text": c.text, "source": c.document} for c in chunks])
    client.close()
    chroma_client(folder / "chroma").create_collection("ants", embedding_function=None).add(
        ids=[str(i) for i in range(len(chunks))], embeddings=np.asarray(vectors), documents=[c.text for c in chunks],
        metadatas=[{"source": c.document} for c in chunks])
    return {"folder": folder, "docs": docs, "questions": questions, "chunks": chunks, "cache": module_cache_dir}


@pytest.mark.slow
def test_analyze_vectors_from_qdrant_matches_analyze_docs(kb, tmp_path, capsys):
    common = ["--questions", str(kb["questions"]), "--cache-dir", str(kb["cache"]), "--quiet"]
    code, _, err = run_cli(capsys, "analyze", "--docs", str(kb["docs"]), "--out", str(tmp_path / "docs.json"), *common)
    assert code == 0, err
    address = f"qdrant:{kb['folder'] / 'qdrant'}?collection=ants"
    code, out, err = run_cli(capsys, "analyze", "--vectors", address, "--out", str(tmp_path / "vec.json"), *common)
    assert code == 0, err
    by_docs = json.loads((tmp_path / "docs.json").read_text(encoding="utf-8"))
    by_vectors = json.loads((tmp_path / "vec.json").read_text(encoding="utf-8"))
    assert by_vectors["summary"]["n_chunks"] == by_docs["summary"]["n_chunks"] == len(kb["chunks"])
    assert by_vectors["summary"]["n_documents"] == by_docs["summary"]["n_documents"] == 3
    assert by_vectors["metrics"] == pytest.approx(by_docs["metrics"], abs=1e-5)
    assert [q["is_outlier"] for q in by_vectors["questions"]] == [q["is_outlier"] for q in by_docs["questions"]]
    assert by_vectors["config"]["inputs"]["vectors"] == "Qdrant collection ants"
    assert "of the knowledge base is tested" in out


@pytest.mark.slow
def test_python_m_coverage_core_reads_a_chroma_collection(kb, tmp_path):
    report = tmp_path / "report.json"
    address = f"chroma:{kb['folder'] / 'chroma'}?collection=ants"
    done = subprocess.run(
        [sys.executable, "-m", "coverage_core", "analyze", "--vectors", address, "--questions", str(kb["questions"]),
         "--out", str(report), "--cache-dir", str(kb["cache"]), "--quiet"],
        cwd=PROJECT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["summary"]["n_chunks"] == len(kb["chunks"]) and written["summary"]["n_documents"] == 3
    assert written["config"]["inputs"]["vectors"] == "Chroma collection ants"
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_vectors_of_another_model_stop_before_the_analysis(qdrant, kb, tmp_path, capsys):
    code, _, err = run_cli(capsys, "analyze", "--vectors", f"qdrant:{qdrant}?collection=docs",
                           "--questions", str(kb["questions"]), "--out", str(tmp_path / "r.json"),
                           "--cache-dir", str(kb["cache"]), "--quiet")
    assert code == cli.EXIT_UNUSABLE
    assert err.strip() == (f"coverage_core: The vectors have {DIM} dimensions but all-MiniLM-L6-v2 makes 384; name "
                           "the model that made them. (command line: --embedder, --model)")
    assert not (tmp_path / "r.json").exists()


# ---------------------------------------------------------------- the Upload page


def test_the_operator_offers_store_folders_and_nothing_outside_them(qdrant, chroma, tmp_path):
    from coverage_core.inputs.store_connectors import (
        VECTOR_STORES_VARIABLE,
        allowed_store_root,
        store_folder,
        store_folders,
    )

    root = tmp_path / "stores"
    root.mkdir()
    shutil.copytree(qdrant, root / "kb-qdrant")
    shutil.copytree(chroma, root / "kb-chroma")
    (root / "empty").mkdir()
    (root / "elsewhere").symlink_to(qdrant, target_is_directory=True)  # a link out of the offered folder
    assert allowed_store_root({}) is None
    assert allowed_store_root({VECTOR_STORES_VARIABLE: str(tmp_path / "missing")}) is None
    assert allowed_store_root({VECTOR_STORES_VARIABLE: f" {root} "}) == root.resolve()
    assert store_folders(root, "qdrant") == ["kb-qdrant"]
    assert store_folders(root, "chroma") == ["kb-chroma"]
    assert store_folder(root, "qdrant", "kb-qdrant") == (root / "kb-qdrant").resolve()
    for kind, name in (("qdrant", "elsewhere"), ("qdrant", "../stores/kb-qdrant"), ("chroma", "kb-qdrant")):
        with pytest.raises(InputError) as caught:
            store_folder(root, kind, name)
        assert str(caught.value).endswith("choose one from the list.")


def test_without_an_offered_folder_the_upload_page_reads_no_server_path(monkeypatch):
    from streamlit.testing.v1 import AppTest

    from coverage_core.inputs.store_connectors import VECTOR_STORES_VARIABLE
    from tests.app_support import APP, TIMEOUT, texts
    from ui import state

    monkeypatch.delenv(VECTOR_STORES_VARIABLE, raising=False)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/1_upload.py").run()
    at.radio(key=state.W_KNOWLEDGE_BASE).set_value("vectors").run()
    at.radio(key=state.W_VECTOR_SOURCE).set_value("qdrant").run()
    assert not at.exception
    assert "This dashboard offers no Qdrant folders." in " ".join(texts(at.info))
    assert not [w for w in at.text_input if w.key in (state.W_STORE_COLLECTION, state.W_STORE_VECTOR)]
    assert not [b for b in at.button if b.key == state.W_READ_STORE]


def test_the_upload_page_reads_a_qdrant_or_chroma_folder_in_plain_words(qdrant, chroma, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from coverage_core.inputs.store_connectors import VECTOR_STORES_VARIABLE
    from tests.app_support import APP, TIMEOUT, shown, texts
    from ui import state

    root = tmp_path / "stores"
    root.mkdir()
    shutil.copytree(qdrant, root / "kb-qdrant")
    shutil.copytree(chroma, root / "kb-chroma")
    monkeypatch.setenv(VECTOR_STORES_VARIABLE, str(root))
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/1_upload.py").run()
    at.radio(key=state.W_KNOWLEDGE_BASE).set_value("vectors").run()
    source = at.radio(key=state.W_VECTOR_SOURCE)
    assert source.options == ["A Parquet file (upload)", "Qdrant (local folder)", "Chroma (local folder)"]
    source.set_value("qdrant").run()
    assert at.button(key=state.W_READ_STORE).disabled  # nothing to read yet
    assert at.selectbox(key=state.W_STORE_FOLDER).options == ["kb-qdrant"]
    at.selectbox(key=state.W_STORE_FOLDER).set_value("kb-qdrant")
    at.text_input(key=state.W_STORE_COLLECTION).input("named").run()
    at.button(key=state.W_READ_STORE).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [shown(e.value) for e in at.error] == [
        "The Qdrant collection named has several named vectors (dense, title); name the one that holds the passage "
        "vectors."]
    at.text_input(key=state.W_STORE_VECTOR).input("dense").run()
    at.button(key=state.W_READ_STORE).click().run()
    assert not at.error
    assert shown(at.success[0].value) == (
        f"6 passages with their vectors ({DIM} dimensions) in 3 documents, from Qdrant collection named.")
    at.radio(key=state.W_VECTOR_SOURCE).set_value("chroma").run()
    assert not [w for w in at.text_input if w.key == state.W_STORE_VECTOR]  # Chroma has one vector per passage
    assert at.selectbox(key=state.W_STORE_FOLDER).options == ["kb-chroma"]
    at.selectbox(key=state.W_STORE_FOLDER).set_value("kb-chroma")
    at.text_input(key=state.W_STORE_COLLECTION).input("docs").run()
    at.button(key=state.W_READ_STORE).click().run()
    assert shown(at.success[0].value) == (
        f"7 passages with their vectors ({DIM} dimensions) in 3 documents, from Chroma collection docs.")
    words = " ".join([*texts(at.caption), *texts(at.success), *(w.label for w in at.text_input),
                      *(b.label for b in at.button), *(o for r in at.radio for o in r.options)])
    assert not re.search(r"(?<![\w-])--[a-z]", words) and "collection=" not in words  # no flags, no addresses
    assert "chroma:" not in words.lower() and "PersistentClient" not in words and "payload" not in words
