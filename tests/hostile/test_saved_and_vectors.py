"""Saved analyses and vector files from anyone (issue 22): every field checked, sizes bounded before reading.

Each hostile file is made here, small: the limits it would break are
lowered instead (they are module constants and :func:`memory_budget`).
"""

from __future__ import annotations

import dataclasses
import io
import json
import random
import struct
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coverage_core.errors import InputError
from coverage_core.inputs import memory, vector_store
from coverage_core.inputs.vector_store import read_vectors, read_vectors_bytes
from coverage_core.outputs.report_upgrade import upgrade_report
from coverage_core.saved import analysis as saved_analysis, schema as saved_schema
from coverage_core.saved.analysis import load_analysis, save_analysis, zip_folder
from coverage_core.types import Document, PageSpan

DEEP = 200_000


@pytest.fixture
def folder(analysis, tmp_path):
    """The synthetic analysis saved to a folder named ``saved``, its documents with page spans."""
    corpus = analysis.corpus
    documents = [Document(d.name, "x" * 40, (PageSpan(1, 0, 20), PageSpan(2, 22, 40))) for d in corpus.documents]
    paged = dataclasses.replace(analysis, corpus=dataclasses.replace(corpus, documents=documents))
    return save_analysis(paged, tmp_path / "saved")


def edit_json(path, change):
    data = json.loads(path.read_text(encoding="utf-8"))
    result = change(data)  # a new document, or None when ``data`` was changed in place
    path.write_text(json.dumps(data if not isinstance(result, (dict, list, str)) else result), encoding="utf-8")


def put(path: list, value):
    def change(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def set_column(path, name, values, kind=None):
    table = pq.read_table(path)
    pq.write_table(table.set_column(table.column_names.index(name), name, pa.array(values, type=kind)), path)


def refused(source, name=None) -> str:
    with pytest.raises(InputError) as caught:
        load_analysis(source, name)
    return str(caught.value)


# ---------------------------------------------------------------- every field of the manifest and JSON files


@pytest.mark.parametrize("field, value", [
    (["config", "support_threshold"], "abc"),
    (["config", "support_threshold"], 7.5),
    (["provider"], "evil"),
    (["config", "embedding", "provider"], "evil"),
    (["config", "embedding", "base_url"], "file:///etc/passwd"),
    (["config", "gaps", "n_themes"], [1, 2]),
    (["config", "redundancy_threshold"], float("1e300")),
    (["question_file", "duplicates"], ["ab", "cd"]),
    (["question_file", "duplicates"], [[0, 10**9]]),
    (["question_file", "n_blank"], -3),
    (["question_file", "warnings"], [1, 2]),
    (["question_file", "delimiter"], ""),
    (["question_file", "encoding"], "no-such-codec"),
    (["question_file", "question_column"], {"a": 1}),
    (["embedded", "chunks", "n_cached"], "many"),
    (["embedded", "questions"], "x"),
    (["dimensions"], "sixteen"),
    (["counts", "chunks"], -1),
    (["cluster_warnings"], 5),
    (["base_url"], "ftp://host"),
])
def test_a_bad_manifest_field_is_one_sentence_naming_the_file_and_field(folder, field, value):
    edit_json(folder / "manifest.json", put(field, value))
    message = refused(folder)
    assert message.startswith("The manifest.json of saved has an invalid ")
    assert ".".join(field) in message and message.endswith("save the analysis again.")
    assert message.count(". ") == 0  # one sentence


def test_a_file_linked_from_outside_the_saved_folder_is_not_read(folder, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    report = folder / "report.json"
    (outside / "report.json").write_bytes(report.read_bytes())  # valid content: only the link is wrong
    report.unlink()
    report.symlink_to(outside / "report.json")
    message = refused(folder)
    assert "report.json of saved is a link to a file outside the saved analysis" in message
    report.unlink()
    report.write_bytes((outside / "report.json").read_bytes())
    assert load_analysis(folder).corpus is not None  # the same bytes in place open


def test_an_unknown_or_missing_setting_is_named(folder):
    edit_json(folder / "manifest.json", put(["config", "gaps", "evil"], 1))
    assert refused(folder) == "The manifest.json of saved has an unknown field config.gaps.evil; save the analysis again."
    edit_json(folder / "manifest.json", lambda data: data["config"]["gaps"].pop("evil", None) and None)
    edit_json(folder / "manifest.json", lambda data: data["counts"].pop("clusters", None) and None)
    assert refused(folder) == "The manifest.json of saved lacks the field counts.clusters; save the analysis again."


@pytest.mark.parametrize("file", ["calibration.json", "report.json"])
def test_bad_calibration_and_report_fields_are_named(folder, file):
    field, value = {"calibration.json": ("support_threshold", "abc"), "report.json": ("config", "not an object")}[file]
    edit_json(folder / file, put([field], value))
    message = refused(folder)
    assert message.startswith(f"The {file} of saved has an invalid ") and field in message


def test_a_bad_token_fit_or_model_choice_in_the_report_is_named(folder):
    edit_json(folder / "report.json", put(["chunking"], {"token_fit": {"max_tokens": "x", "n_chunks": 1,
                                                                         "n_resplit": 0, "n_truncated": 0}}))
    assert "chunking.token_fit.max_tokens" in refused(folder)
    edit_json(folder / "report.json", put(["chunking"], {}))
    edit_json(folder / "report.json", put(["config", "model_choice"], {"reason": "r", "languages": [1]}))
    assert "config.model_choice.languages[0]" in refused(folder)


@pytest.mark.parametrize("file", ["manifest.json", "report.json", "calibration.json", "gaps.json"])
def test_json_nested_200000_deep_is_refused_without_a_recursion_error(folder, file):
    (folder / file).write_text("[" * DEEP + "]" * DEEP, encoding="utf-8")
    message = refused(folder)
    assert message.startswith(f"The {file} of saved is ")
    assert "nested more than" in message or file == "gaps.json"


def test_json_nested_just_over_the_limit_is_refused_and_just_under_opens(folder):
    depth = saved_schema.MAX_JSON_DEPTH
    edit_json(folder / "report.json", put(["inputs_extra"], json.loads("[" * (depth - 1) + "]" * (depth - 1))))
    assert load_analysis(folder).report["inputs_extra"] == json.loads("[" * (depth - 1) + "]" * (depth - 1))
    edit_json(folder / "report.json", put(["inputs_extra"], json.loads("[" * depth + "]" * depth)))
    assert "nested more than" in refused(folder)


# ---------------------------------------------------------------- the tables


def test_page_spans_of_five_numbers_are_refused(folder):
    set_column(folder / "documents.parquet", "pages", [[[1, 0, 20, 4, 5]]] * 3)
    assert refused(folder) == ("The page spans in documents.parquet of saved are not each a page (from 1), a start "
                               "and an end; save the analysis again.")


@pytest.mark.parametrize("column, values, words", [
    ("start", lambda n: [10**12] * n, "passage offsets"),
    ("page", lambda n: [-4] * n, "page numbers"),
    ("text", lambda n: [None] * n, "passages"),
    ("cluster", lambda n: [10**9] * n, "cluster numbers"),
])
def test_damaged_passage_columns_are_refused(folder, column, values, words):
    n = pq.read_metadata(folder / "chunks.parquet").num_rows
    kind = pa.string() if column == "text" else pa.int64()
    set_column(folder / "chunks.parquet", column, values(n), kind)
    assert f"The {words} in chunks.parquet of saved" in refused(folder)


def test_a_column_of_the_wrong_type_is_refused_before_it_is_read(folder):
    set_column(folder / "documents.parquet", "name", [1, 2, 3])
    assert refused(folder) == "The column name of documents.parquet in saved holds int64, not text; save the analysis again."
    table = pq.read_table(folder / "chunks.parquet")
    ragged = pa.array([[0.0] * 16] * (table.num_rows - 1) + [[0.0] * 10**5], type=pa.list_(pa.float32()))
    pq.write_table(table.set_column(table.column_names.index("vector"), "vector", ragged), folder / "chunks.parquet")
    assert "The column vector of chunks.parquet in saved holds list<" in refused(folder)


def test_the_question_file_must_be_text_and_hold_the_question_column(folder):
    edit_json(folder / "manifest.json", put(["question_file", "question_column"], "nope"))
    assert refused(folder) == ("The question column 'nope' of manifest.json is not a column of question_file.parquet "
                               "in saved; save the analysis again.")
    edit_json(folder / "manifest.json", put(["question_file", "question_column"], "question"))
    n = pq.read_metadata(folder / "question_file.parquet").num_rows
    set_column(folder / "question_file.parquet", "question", list(range(n)), pa.int64())
    assert refused(folder).startswith("The column question of question_file.parquet in saved holds int64, not text")


@pytest.mark.parametrize("topic", [2_000_000, 500_000_000])
def test_topic_ids_outside_the_passages_are_refused_before_any_centre_is_allocated(folder, topic):
    n = pq.read_metadata(folder / "chunks.parquet").num_rows
    set_column(folder / "chunks.parquet", "topic", [0] * (n - 1) + [topic], pa.int64())
    assert "The topic numbers in chunks.parquet of saved are not between 0 and the number of passages" in refused(folder)


def test_topics_inside_the_passages_still_give_their_centres(folder):
    n = pq.read_metadata(folder / "chunks.parquet").num_rows
    set_column(folder / "chunks.parquet", "topic", [i % 4 for i in range(n)], pa.int64())
    clustering = load_analysis(folder).topic_clustering()
    assert clustering.centroids.shape[0] == 4
    np.testing.assert_allclose(np.linalg.norm(clustering.centroids, axis=1), 1.0, atol=1e-5)


def test_counts_whose_vectors_would_not_fit_in_memory_are_refused_before_any_file_is_read(folder, monkeypatch):
    monkeypatch.setattr(pq, "ParquetFile", lambda *a, **k: pytest.fail("a table was read"))
    edit_json(folder / "manifest.json", put(["dimensions"], 10**9))
    message = refused(folder)
    assert message.startswith("The ") and "vectors of 1000000000 dimensions that the manifest.json of saved" in message
    assert "would need about" in message and "this server can spare" in message


# ---------------------------------------------------------------- zips: bounded by what each file can hold


def test_a_zip_of_the_folder_still_opens_under_every_limit(folder):
    loaded = load_analysis(zip_folder(folder), "saved.zip")
    assert len(loaded.corpus.chunks) == pq.read_metadata(folder / "chunks.parquet").num_rows


def test_a_highly_compressible_json_member_over_its_limit_is_not_unpacked(folder, monkeypatch):
    padding = 8 * 1024**2
    report = (folder / "report.json").read_text(encoding="utf-8")
    (folder / "report.json").write_text(report + " " * padding, encoding="utf-8")  # still valid JSON
    data = zip_folder(folder)
    assert len(data) < padding // 50
    monkeypatch.setattr(saved_analysis, "MAX_JSON_BYTES", 1024**2)
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, info, *a, **k: opened.append(
        getattr(info, "filename", info)) or real_open(self, info, *a, **k))
    size = zipfile.ZipFile(io.BytesIO(data)).getinfo("report.json").file_size
    message = refused(data, "bomb.zip")
    assert message.startswith(f"report.json in bomb.zip is {memory.size_words(size)}, more than a saved "
                              "analysis of its size can hold (1 MB)")
    assert "report.json" not in opened


def test_a_vectors_member_larger_than_its_rows_and_dimensions_allow_is_not_unpacked(folder, monkeypatch):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in (*saved_analysis.FILES, saved_analysis.MANIFEST):
            archive.write(folder / name, name) if name != saved_analysis.CLUSTERS else archive.writestr(
                name, bytes(4 * 1024**2))
    monkeypatch.setattr(saved_analysis, "PARQUET_SLACK_BYTES", 64 * 1024)
    message = refused(buffer.getvalue(), "zeros.zip")
    assert message.startswith(f"clusters.parquet in zeros.zip is {memory.size_words(4 * 1024**2)}, more than a "
                              "saved analysis of its size")


def test_the_files_read_together_are_held_to_the_memory_budget(folder, monkeypatch):
    monkeypatch.setattr(saved_analysis, "memory_budget", lambda: 20 * 1024)
    message = refused(zip_folder(folder), "big.zip")
    assert message.startswith("Opening big.zip would need about") and "this server can spare" in message


def _rewrite_sizes(data: bytes, member: str, size: int) -> bytes:
    """The zip ``data`` with ``member``'s uncompressed size declared as ``size`` in both of its headers."""
    data, name = bytearray(data), member.encode()
    local = data.index(b"PK\x03\x04")
    while data[local + 30:local + 30 + len(name)] != name:
        local = data.index(b"PK\x03\x04", local + 4)
    struct.pack_into("<I", data, local + 22, size)
    central = data.index(b"PK\x01\x02")
    while data[central + 46:central + 46 + len(name)] != name:
        central = data.index(b"PK\x01\x02", central + 4)
    struct.pack_into("<I", data, central + 24, size)
    return bytes(data)


@pytest.mark.parametrize("change", [-100, +10**6])
def test_a_member_whose_header_lies_about_its_size_is_refused(folder, change):
    data = zip_folder(folder)
    real = zipfile.ZipFile(io.BytesIO(data)).getinfo("report.json").file_size
    message = refused(_rewrite_sizes(data, "report.json", real + change), "lying.zip")
    assert message == "report.json in lying.zip could not be unpacked; zip the saved analysis folder again."


def test_a_zip_of_many_members_is_refused(folder, monkeypatch):
    monkeypatch.setattr(saved_analysis, "MAX_ZIP_MEMBERS", 30)
    buffer = io.BytesIO(zip_folder(folder))
    with zipfile.ZipFile(buffer, "a") as archive:
        for i in range(40):
            archive.writestr(f"junk/{i}.txt", b"")
    n_files = len(zipfile.ZipFile(buffer).namelist())
    assert n_files > 30
    assert refused(buffer.getvalue(), "many.zip").startswith(f"many.zip holds {n_files} files, more than the 30")


def test_a_zip_declaring_more_than_the_unpacked_limit_is_refused(folder, monkeypatch):
    monkeypatch.setattr(saved_analysis, "MAX_UNPACKED_BYTES", 10 * 1024)
    assert refused(zip_folder(folder), "big.zip").startswith("big.zip would unpack to more than 10 KB")


# ---------------------------------------------------------------- the report upgrader


def _junk(rng: random.Random, depth: int = 0):
    keys = ["schema_version", "clusters", "themes", "suggested_questions", "gap_rank", "calibration", "method",
            "documents", "questions", "is_outlier", "text", "id", "label", "topic_threshold", "traffic"]
    roll = rng.random()
    if depth > 4 or roll < 0.3:
        return rng.choice([None, True, 0, -1, 10**30, 1.5, 1e300, "x", "", [], {}])
    if roll < 0.6:
        return [_junk(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(keys): _junk(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def test_the_report_upgrader_survives_any_json():
    rng = random.Random(22)
    upgraded = 0
    for _ in range(3000):
        report = _junk(rng)
        if isinstance(report, dict):
            report["schema_version"] = rng.choice([1, 3, 5, 6, True, "3", None])
            assert isinstance(upgrade_report(report), dict)
            upgraded += 1
        else:
            with pytest.raises(InputError, match="not an object"):
                upgrade_report(report)
    assert upgraded > 100


def test_hostile_old_clusters_become_gaps_without_error(folder):
    clusters = [{"gap_rank": 1, "id": 0, "themes": 5, "suggested_questions": 7},
                {"gap_rank": 2, "id": 1, "themes": ["a", 3], "suggested_questions": [{"text": "Q?"}, 4]}, "x"]
    edit_json(folder / "report.json", lambda report: {
        **{key: value for key, value in report.items() if key != "gaps"}, "schema_version": 5, "clusters": clusters})
    gaps = load_analysis(folder).report["gaps"]
    assert [gap["themes"] for gap in gaps] == [[], ["a", "3"]]
    assert [[s["question"] for s in gap["suggestions"]] for gap in gaps] == [[], ["Q?"]]


# ---------------------------------------------------------------- vector files


def _vector_file(path, n_rows: int, dims: int, pages=None, zeros: bool = False):
    values = np.zeros(n_rows * dims, np.float32) if zeros else np.random.default_rng(0).random(n_rows * dims,
                                                                                                np.float32)
    columns = {"text": [f"passage {i}" for i in range(n_rows)], "document": ["a.pdf"] * n_rows,
               "vector": pa.FixedSizeListArray.from_arrays(pa.array(values), dims)}
    if pages is not None:
        columns["page"] = pages
    pq.write_table(pa.table(columns), path, compression="zstd")
    return path


def test_a_small_parquet_file_declaring_many_rows_is_refused_before_it_is_decoded(tmp_path, monkeypatch):
    path = _vector_file(tmp_path / "bomb.parquet", 200_000, 64, zeros=True)
    raw = 200_000 * 64 * 4
    assert path.stat().st_size < raw // 100
    monkeypatch.setattr(vector_store, "memory_budget", lambda: raw // 2)
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", lambda *a, **k: pytest.fail("the rows were decoded"))
    for read in (lambda: read_vectors(path), lambda: read_vectors_bytes(path.read_bytes(), "bomb.parquet")):
        with pytest.raises(InputError, match=r"^The 200000 rows of bomb.parquet would need about .* this server can"):
            read()
    (tmp_path / "store").mkdir()
    path.rename(tmp_path / "store" / "part-0.parquet")
    with pytest.raises(InputError, match=r"^The 200000 rows of store would need about"):
        read_vectors(tmp_path / "store")


def test_the_same_file_within_the_budget_is_read(tmp_path, monkeypatch):
    path = _vector_file(tmp_path / "fine.parquet", 2_000, 64)
    monkeypatch.setattr(vector_store, "memory_budget", lambda: 2_000 * 64 * 4 * 20)
    assert read_vectors(path).corpus.vectors.shape == (2_000, 64)


@pytest.mark.parametrize("pages, bad", [
    (pa.array([1.0, float("nan"), 2.0, 3.0, None]), [2]),
    (pa.array([1, -5, 2, 0, None]), [2, 4]),
    (pa.array([1.0, 1e300, 2.5, float("-inf"), 4.0]), [2, 3, 4]),
    (pa.array(["1", "abc", " ", "2", "1e300"]), [2, 5]),
    (pa.array([1, 2**62, 3, 4, 5]), [2]),
    (pa.array([[1], [2], None, [4], [5]]), [1, 2, 4, 5]),
])
def test_page_numbers_that_are_not_pages_are_dropped_with_one_warning_and_nothing_else_lost(tmp_path, pages, bad):
    path = _vector_file(tmp_path / "pages.parquet", 5, 8, pages=pages)
    read = read_vectors(path)
    assert len(read.corpus.chunks) == 5 and read.corpus.vectors.shape == (5, 8)
    page_of = [chunk.page for chunk in read.corpus.chunks]
    assert [i + 1 for i, page in enumerate(page_of) if page is None and pages[i].as_py() not in (None, " ")] == bad
    assert all(page is None or 1 <= page <= vector_store.MAX_PAGE_NUMBER for page in page_of)
    warned = [w for w in read.warnings if "page number" in w]
    assert len(warned) == 1 and warned[0].startswith(f"{len(bad)} of 5 rows (")
    assert ", ".join(str(row) for row in bad) in warned[0]
    spans = [span.page for document in read.corpus.documents for span in document.pages]
    assert spans == [page for page in page_of if page is not None]
