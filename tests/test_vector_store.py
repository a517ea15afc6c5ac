"""Chunk vectors from the user's own store: Parquet and LanceDB, column detection, bad rows, the model check.

The vectors are made by the real bundled model from three small documents cut
from tests/fixtures (the Ant article), so ``analyze --vectors`` can be compared
with ``analyze --docs`` of the same documents.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coverage_core import cli
from coverage_core.embeddings import EmbeddingCache, make_embedder
from coverage_core.errors import InputError
from coverage_core.inputs.vector_store import (
    VectorColumns,
    check_dimensions,
    read_vector_table,
    read_vectors,
    read_vectors_bytes,
)
from tests.helpers import embedded_chunks, vector_table, write_knowledge_base
from ui.messages import user_message


@pytest.fixture(scope="module")
def kb(tmp_path_factory, module_cache_dir):
    folder = tmp_path_factory.mktemp("kb")
    docs, questions = write_knowledge_base(folder)
    chunks, vectors = embedded_chunks(docs, module_cache_dir)
    parquet = folder / "vectors.parquet"
    pq.write_table(vector_table(chunks, vectors), parquet)
    return {"folder": folder, "docs": docs, "questions": questions, "chunks": chunks, "vectors": vectors,
            "parquet": parquet, "cache": module_cache_dir}


# ---------------------------------------------------------------- reading


@pytest.mark.slow
def test_parquet_gives_the_corpus_embedding_would(kb):
    found = read_vectors(kb["parquet"])
    assert found.columns == VectorColumns("chunk", "embedding", "source", "page_number")
    corpus = found.corpus
    assert [(c.document, c.text) for c in corpus.chunks] == [(c.document, c.text) for c in kb["chunks"]]
    np.testing.assert_allclose(corpus.vectors, kb["vectors"], atol=1e-6)
    assert corpus.vectors.dtype == np.float32
    assert [d.name for d in corpus.documents] == ["ant-1.txt", "ant-2.txt", "ant-3.txt"]
    for chunk in corpus.chunks:  # offsets point into the rebuilt document text, as for chunked documents
        document = next(d for d in corpus.documents if d.name == chunk.document)
        assert document.text[chunk.start:chunk.end] == chunk.text
    assert found.warnings == [] and found.n_rows == len(kb["chunks"])


@pytest.mark.slow
def test_fixed_size_lists_and_columns_named_by_the_caller(kb, tmp_path):
    names = ("body", "emb_3", "origin", "pg")
    table = vector_table(kb["chunks"], kb["vectors"], names, fixed=True)
    table = table.set_column(3, "pg", pa.array(list(range(1, len(kb["chunks"]) + 1))))
    path = tmp_path / "named.parquet"
    pq.write_table(table, path)
    with pytest.raises(InputError, match="has no text column"):
        read_vectors(path)
    found = read_vectors(path, VectorColumns(text="body", vector="EMB_3", document="origin", page="pg"))
    assert found.columns == VectorColumns("body", "emb_3", "origin", "pg")
    np.testing.assert_allclose(found.corpus.vectors, kb["vectors"], atol=1e-6)
    assert [c.page for c in found.corpus.chunks] == list(range(1, len(kb["chunks"]) + 1))
    assert found.corpus.documents[0].page_at(found.corpus.chunks[1].start) == 2


@pytest.mark.slow
def test_uploaded_bytes_read_like_the_file(kb):
    found = read_vectors_bytes(kb["parquet"].read_bytes(), "mine.parquet")
    assert found.source == "mine.parquet" and len(found.corpus.chunks) == len(kb["chunks"])


@pytest.mark.slow
def test_vectors_are_scaled_to_unit_length(kb):
    table = vector_table(kb["chunks"][:3], np.asarray(kb["vectors"][:3]) * 7.5)
    found = read_vector_table(table)
    np.testing.assert_allclose(np.linalg.norm(found.corpus.vectors, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(found.corpus.vectors, kb["vectors"][:3], atol=1e-6)


@pytest.mark.slow
def test_lancedb_table_folder_and_database_folder(kb, tmp_path):
    import lancedb

    database = lancedb.connect(str(tmp_path / "store"))
    database.create_table("passages", data=vector_table(kb["chunks"], kb["vectors"], ("text", "vector", "doc_id", "page"), fixed=True))
    for path in (tmp_path / "store", tmp_path / "store" / "passages.lance"):
        found = read_vectors(path)
        assert found.columns == VectorColumns("text", "vector", "doc_id", "page")
        np.testing.assert_allclose(found.corpus.vectors, kb["vectors"], atol=1e-6)
        assert [c.text for c in found.corpus.chunks] == [c.text for c in kb["chunks"]]
    database.create_table("other", data=vector_table(kb["chunks"][:2], kb["vectors"][:2]))
    with pytest.raises(InputError, match=r"holds 2 tables \(other, passages\); give the folder of the one"):
        read_vectors(tmp_path / "store")


# ---------------------------------------------------------------- bad rows


@pytest.mark.slow
def test_each_kind_of_bad_row_is_left_out_with_its_count_and_rows(kb):
    good = np.asarray(kb["vectors"][:8], dtype=float)
    vectors = [row.tolist() for row in good]
    vectors[1] = None  # no vector
    vectors[2] = [math.nan] + vectors[2][1:]  # NaN
    vectors[3] = vectors[3][:100]  # ragged
    vectors[4] = [0.0] * good.shape[1]  # all zero
    vectors[6] = []  # empty list: no vector either
    texts = [c.text for c in kb["chunks"][:8]]
    texts[5] = "   "
    table = pa.table({"text": texts, "vector": pa.array(vectors, type=pa.list_(pa.float64())),
                      "document": [c.document for c in kb["chunks"][:8]]})
    found = read_vector_table(table, source="store.parquet")
    assert found.kept.tolist() == [0, 7]
    np.testing.assert_allclose(found.corpus.vectors, good[[0, 7]], atol=1e-6)
    assert found.warnings == [
        "2 of 8 rows (rows 2, 7, counting from 1) have no vector, so they were left out.",
        "1 of 8 rows (row 4, counting from 1) has a vector of another length than the 384 of most rows, so it was left out.",
        "1 of 8 rows (row 3, counting from 1) has NaN or infinite values in its vector, so it was left out.",
        "1 of 8 rows (row 5, counting from 1) has an all-zero vector, so it was left out.",
        "1 of 8 rows (row 6, counting from 1) has no text, so it was left out.",
    ]


@pytest.mark.slow
def test_many_bad_rows_name_the_first_five(kb):
    n = 9
    table = pa.table({"text": [""] * 7 + ["a", "b"], "vector": pa.array([row.tolist() for row in kb["vectors"][:n]]),
                      "file": ["x"] * n})
    found = read_vector_table(table)
    assert found.warnings == ["7 of 9 rows (rows 1, 2, 3, 4, 5 and 2 more, counting from 1) have no text, so they were left out."]
    assert [c.document for c in found.corpus.chunks] == ["x", "x"]


@pytest.mark.slow
def test_rows_without_a_document_count_as_the_file(kb):
    table = pa.table({"text": ["a", "b"], "vector": pa.array([row.tolist() for row in kb["vectors"][:2]]),
                      "source": ["guide.md", None]})
    found = read_vector_table(table, source="store.parquet")
    assert [c.document for c in found.corpus.chunks] == ["guide.md", "store.parquet"]
    assert found.warnings == [
        "1 of 2 rows (row 2, counting from 1) names no document, so it counts as document 'store.parquet'."
    ]


def test_nothing_usable_stops_with_every_reason():
    table = pa.table({"text": ["a", ""], "vector": pa.array([None, [1.0, 2.0]], type=pa.list_(pa.float32())),
                      "source": ["x", "y"]})
    with pytest.raises(InputError) as caught:
        read_vector_table(table, source="store.parquet")
    assert str(caught.value) == (
        "No row of store.parquet can be used: 1 of 2 rows (row 1, counting from 1) has no vector; "
        "1 of 2 rows (row 2, counting from 1) has no text; fix these rows or name other columns."
    )


@pytest.mark.parametrize(
    ("table", "columns", "message"),
    [
        (pa.table({"text": ["a"], "source": ["x"]}), VectorColumns(),
         "store.parquet has no vector column (looked for vector, embedding, embeddings, values, …); name the vector "
         "column, one of: 'text', 'source'."),
        (pa.table({"text": ["a"], "vector": [[1.0]]}), VectorColumns(),
         "store.parquet has no document column (looked for document, source, doc_id, document_id, …); name the "
         "document column, one of: 'text', 'vector'."),
        (pa.table({"text": ["a"], "vector": [[1.0]], "source": ["x"]}), VectorColumns(page="pages"),
         "The page column 'pages' is not in store.parquet; name one of its columns: 'text', 'vector', 'source'."),
        (pa.table({"text": ["a"], "vector": [1.0], "source": ["x"]}), VectorColumns(),
         "The vector column of store.parquet holds double, not lists of numbers; name the column that holds the "
         "embeddings."),
        (pa.table({"text": ["a"], "vector": [["x"]], "source": ["x"]}), VectorColumns(),
         "The vector column of store.parquet holds lists of string, not numbers; name the column that holds the "
         "embeddings."),
        (pa.table({"text": ["a"], "vector": [[1.0]], "source": ["x"]}), VectorColumns(document="text"),
         "The column 'text' of store.parquet cannot be both the text and the document column; name the document "
         "column, one of: 'text', 'vector', 'source'."),
    ],
)
def test_unusable_columns_say_which_and_list_the_columns(table, columns, message):
    with pytest.raises(InputError) as caught:
        read_vector_table(table, columns, source="store.parquet")
    assert str(caught.value) == message


def test_a_file_that_is_not_parquet(tmp_path):
    path = tmp_path / "vectors.parquet"
    path.write_text("text,vector\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"^vectors.parquet could not be read as a Parquet file \(.+\); export"):
        read_vectors(path)
    with pytest.raises(InputError, match="does not exist"):
        read_vectors(tmp_path / "missing.parquet")


# ---------------------------------------------------------------- the model that made them


@pytest.mark.slow
def test_dimension_mismatch_names_both_sizes_and_the_model(kb):
    table = pa.table({"text": ["a passage"], "vector": pa.array([np.ones(1536).tolist()]), "source": ["x"]})
    found = read_vector_table(table)
    embedder = make_embedder("local")
    cache = EmbeddingCache(kb["cache"])
    with pytest.raises(InputError) as caught:
        check_dimensions(found, embedder, "all-MiniLM-L6-v2", "What do ants eat?", cache)
    message = str(caught.value)
    assert message == (
        "The vectors have 1536 dimensions but all-MiniLM-L6-v2 makes 384; name the model that made them."
    )
    assert cli._with_flags(message).endswith("(command line: --embedder, --model)")
    assert user_message(message).endswith("; choose the model that made them on the Configure page.")
    assert check_dimensions(384, embedder, "all-MiniLM-L6-v2", "What do ants eat?", cache) == 384


# ---------------------------------------------------------------- the command line


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
def test_analyze_vectors_matches_analyze_docs(kb, tmp_path, capsys):
    common = ["--questions", str(kb["questions"]), "--cache-dir", str(kb["cache"]), "--quiet"]
    code, _, err = run_cli(capsys, "analyze", "--docs", str(kb["docs"]), "--out", str(tmp_path / "docs.json"), *common)
    assert code == 0, err
    code, out, err = run_cli(capsys, "analyze", "--vectors", str(kb["parquet"]), "--out", str(tmp_path / "vec.json"), *common)
    assert code == 0, err
    by_docs = json.loads((tmp_path / "docs.json").read_text(encoding="utf-8"))
    by_vectors = json.loads((tmp_path / "vec.json").read_text(encoding="utf-8"))
    assert by_vectors["summary"]["n_chunks"] == by_docs["summary"]["n_chunks"] == len(kb["chunks"])
    assert by_vectors["summary"]["n_documents"] == by_docs["summary"]["n_documents"] == 3
    assert by_vectors["metrics"]["tested_share"] == by_docs["metrics"]["tested_share"]
    assert by_vectors["metrics"] == pytest.approx(by_docs["metrics"], abs=1e-5)
    assert by_vectors["calibration"]["support_threshold"] == pytest.approx(by_docs["calibration"]["support_threshold"], abs=1e-5)
    assert [q["is_outlier"] for q in by_vectors["questions"]] == [q["is_outlier"] for q in by_docs["questions"]]
    assert by_vectors["config"]["inputs"]["vectors"] == "vectors.parquet"
    assert "of the knowledge base is tested" in out


@pytest.mark.slow
def test_analyze_vectors_of_another_model_stops_before_the_analysis(kb, tmp_path, capsys):
    path = tmp_path / "openai.parquet"
    rng = np.random.default_rng(0)
    pq.write_table(pa.table({"text": ["a", "b"], "vector": pa.array(rng.normal(size=(2, 1536)).tolist()),
                             "source": ["x", "y"]}), path)
    code, _, err = run_cli(capsys, "analyze", "--vectors", str(path), "--questions", str(kb["questions"]),
                           "--out", str(tmp_path / "r.json"), "--cache-dir", str(kb["cache"]), "--quiet")
    assert code == cli.EXIT_UNUSABLE
    assert err.strip() == (
        "coverage_core: The vectors have 1536 dimensions but all-MiniLM-L6-v2 makes 384; name the model that made "
        "them. (command line: --embedder, --model)"
    )
    assert not (tmp_path / "r.json").exists()


@pytest.mark.slow
def test_analyze_vectors_warns_about_left_out_rows_and_names_column_flags(kb, tmp_path, capsys):
    table = vector_table(kb["chunks"], kb["vectors"], ("passage_text", "dense", "file", "page"))
    vectors = table.column("dense").to_pylist()
    vectors[0] = None
    table = table.set_column(1, "dense", pa.array(vectors, type=pa.list_(pa.float64())))
    path = tmp_path / "store.parquet"
    pq.write_table(table, path)
    common = ["--questions", str(kb["questions"]), "--out", str(tmp_path / "r.json"), "--cache-dir", str(kb["cache"]),
              "--quiet", "--support-threshold", "0.6"]
    code, _, err = run_cli(capsys, "analyze", "--vectors", str(path), *common)
    assert code == cli.EXIT_UNUSABLE
    assert err.strip().endswith("name the text column, one of: 'passage_text', 'dense', 'file', 'page'. "
                                "(command line: --text-column)")
    code, _, err = run_cli(capsys, "analyze", "--vectors", str(path), "--text-column", "passage_text", *common)
    assert code == cli.EXIT_UNUSABLE
    assert err.strip().endswith("(command line: --vector-column)") and "has no vector column" in err
    code, _, err = run_cli(capsys, "analyze", "--vectors", str(path), "--text-column", "passage_text",
                           "--vector-column", "dense", *common)
    assert code == 0, err
    warning = f"1 of {len(kb['chunks'])} rows (row 1, counting from 1) has no vector, so it was left out."
    assert f"warning: {warning}" in err
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["summary"]["n_chunks"] == len(kb["chunks"]) - 1
    assert warning in report["warnings"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--docs", "d", "--text-column", "body"],
         "coverage_core: --text-column names a column of the --vectors file; add --vectors PATH or leave it out."),
        (["--vectors", "v.parquet", "--compare-chunking"],
         "coverage_core: --compare-chunking chunks the documents again, which vectors from a store do not allow; "
         "use it with --docs."),
    ],
)
def test_flags_that_do_not_fit_are_refused_before_reading(capsys, tmp_path, extra, message):
    code, _, err = run_cli(capsys, "analyze", *extra, "--questions", "q.csv", "--out", str(tmp_path / "r.json"))
    assert code == cli.EXIT_UNUSABLE
    assert err.strip() == message


def test_docs_and_vectors_together_are_refused(capsys, tmp_path):
    code, _, err = run_cli(capsys, "analyze", "--docs", "d", "--vectors", "v.parquet", "--questions", "q.csv",
                           "--out", str(tmp_path / "r.json"))
    assert code == cli.EXIT_UNUSABLE and "not allowed with argument" in err
    code, _, err = run_cli(capsys, "analyze", "--questions", "q.csv", "--out", str(tmp_path / "r.json"))
    assert code == cli.EXIT_UNUSABLE and "one of the arguments --docs --vectors is required" in err


def test_the_dashboard_words_for_a_missing_column():
    with pytest.raises(InputError) as caught:
        read_vector_table(pa.table({"body": ["a"], "vector": [[1.0]], "source": ["x"]}), source="store.parquet")
    assert user_message(caught.value) == (
        "store.parquet has no text column (looked for text, chunk, content, page_content, …); give that column one "
        "of these names in your file. Its columns: 'body', 'vector', 'source'."
    )


@pytest.mark.slow
def test_many_row_groups_and_batches_read_like_one_table(kb, tmp_path, monkeypatch):
    """Rows are decoded a few at a time; bad rows in any batch are found as in one table."""
    import coverage_core.inputs.vector_store as vector_store

    vectors = [row.tolist() for row in np.asarray(kb["vectors"], dtype=float)]
    vectors[1], vectors[4] = None, vectors[4][:10]
    texts = [c.text for c in kb["chunks"]]
    texts[7] = ""
    table = pa.table({"text": texts, "vector": pa.array(vectors, type=pa.list_(pa.float32())),
                      "source": [c.document for c in kb["chunks"]], "notes": ["x" * 50] * len(texts)})
    pq.write_table(table, tmp_path / "groups.parquet", row_group_size=3)
    folder = tmp_path / "dataset"
    folder.mkdir()
    pq.write_table(table.slice(0, 10), folder / "part-0.parquet")
    pq.write_table(table.slice(10), folder / "part-1.parquet")
    monkeypatch.setattr(vector_store, "READ_BATCH_ROWS", 2)
    whole = read_vector_table(table, source="groups.parquet")
    for path in (tmp_path / "groups.parquet", folder):
        found = read_vectors(path)
        assert found.kept.tolist() == whole.kept.tolist() == [i for i in range(len(texts)) if i not in (1, 4, 7)]
        np.testing.assert_array_equal(found.corpus.vectors, whole.corpus.vectors)
        assert [w.split(" (")[0] for w in found.warnings] == ["1 of %d rows" % len(texts)] * 3
