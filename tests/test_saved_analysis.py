"""Saved analyses: ``analyze --save-analysis`` writes one, ``load_analysis`` reads it back the same; bad folders are refused."""

from __future__ import annotations

import json
import shutil
import zipfile

import numpy as np
import pyarrow.parquet as pq
import pytest

from coverage_core import cli
from coverage_core.errors import InputError
from coverage_core.outputs.report import build_report
from coverage_core.saved import analysis as saved_analysis
from coverage_core.saved.analysis import load_analysis, save_analysis, saved_folder, saved_folders, zip_folder
from tests.helpers import write_knowledge_base

SECRET = "sk-test-never-written-0123456789"


@pytest.fixture(scope="module")
def saved(tmp_path_factory, module_cache_dir):
    """A real analysis of three small documents, saved by the command line, and its JSON report."""
    folder = tmp_path_factory.mktemp("saved-kb")
    docs, questions = write_knowledge_base(folder)
    target = folder / "analysis"
    mp = pytest.MonkeyPatch()
    mp.setenv("EMBEDDING_API_KEY", SECRET)  # a key in the environment must not reach the folder
    try:
        code = cli.main([
            "analyze", "--docs", str(docs), "--questions", str(questions), "--out", str(folder / "report.json"),
            "--cache-dir", str(module_cache_dir), "--quiet", "--save-analysis", str(target),
        ])
    finally:
        mp.undo()
    assert code == 0
    return {"folder": target, "report": json.loads((folder / "report.json").read_text(encoding="utf-8"))}


def copy_of(saved, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(saved["folder"], target)
    return target


def refusal(folder) -> str:
    """The sentence ``load_analysis(folder)`` refuses the folder with (an InputError is required)."""
    with pytest.raises(InputError) as caught:
        load_analysis(folder)
    return str(caught.value)


@pytest.mark.slow
def test_the_folder_holds_every_file_and_a_manifest_without_keys(saved):
    folder = saved["folder"]
    assert sorted(p.name for p in folder.iterdir()) == sorted([*saved_analysis.FILES, saved_analysis.MANIFEST])
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["schema_version"] == saved_analysis.SCHEMA_VERSION
    assert (manifest["provider"], manifest["model"], manifest["dimensions"]) == ("local", "all-MiniLM-L6-v2", 384)
    assert manifest["chunking"] == {"chunk_size": 1000, "chunk_overlap": 200} and manifest["passages"] == "documents"
    assert manifest["counts"]["chunks"] == saved["report"]["summary"]["n_chunks"]
    assert "T" in manifest["created"] and manifest["created"].endswith("+00:00")
    for path in folder.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path.name
    assert json.loads((folder / "report.json").read_text(encoding="utf-8")) == saved["report"]


@pytest.mark.slow
def test_loading_gives_the_same_clusters_vectors_and_report(saved):
    loaded = load_analysis(saved["folder"])
    report = saved["report"]
    assert len(loaded.corpus.chunks) == report["summary"]["n_chunks"]
    assert loaded.corpus.vectors.shape == (report["summary"]["n_chunks"], 384)
    np.testing.assert_allclose(np.linalg.norm(loaded.corpus.vectors, axis=1), 1.0, atol=1e-5)
    assert loaded.calibration.to_dict() == pytest.approx(report["calibration"], abs=1e-6)
    assert loaded.chunking.chunk_size == 1000 and not loaded.from_vectors
    assert loaded.questions.question_column == "question"
    assert list(loaded.questions.frame.columns) == ["question", "owner"]
    assert loaded.questions.texts == [q["text"] for q in report["questions"]]
    for chunk in loaded.corpus.chunks:
        document = next(d for d in loaded.corpus.documents if d.name == chunk.document)
        assert document.text[chunk.start:chunk.end] == chunk.text
    again = loaded.analysis()  # measured from the stored vectors, clusters and τ: nothing embedded
    assert again.clustering.labels.tolist() == loaded.clustering.labels.tolist()
    rebuilt = build_report(again, report["config"].get("inputs"))
    assert rebuilt["clusters"] == report["clusters"]
    assert rebuilt["metrics"] == report["metrics"]
    assert rebuilt == report


@pytest.mark.slow
def test_a_zip_of_the_folder_loads_the_same(saved, tmp_path):
    data = zip_folder(saved["folder"])
    from_bytes = load_analysis(data, "analysis.zip")
    assert from_bytes.clustering.labels.tolist() == load_analysis(saved["folder"]).clustering.labels.tolist()
    archive = tmp_path / "nested.zip"  # zipped as a folder: the files sit under its name
    with zipfile.ZipFile(archive, "w") as handle:
        for path in saved["folder"].iterdir():
            handle.write(path, f"analysis/{path.name}")
    assert load_analysis(archive).report == saved["report"]


@pytest.mark.slow
def test_a_folder_saved_with_the_old_field_names_still_opens(saved, tmp_path):
    """Before report schema 3 the question level was ``topic_threshold`` (calibration) and ``answer_threshold``."""
    folder = copy_of(saved, tmp_path)
    current = json.loads((folder / "calibration.json").read_text(encoding="utf-8"))
    old = dict(current)
    old["topic_threshold"] = old.pop("question_support_threshold")
    (folder / "calibration.json").write_text(json.dumps(old), encoding="utf-8")
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    report["schema_version"], report["calibration"] = 2, old
    (folder / "report.json").write_text(json.dumps(report), encoding="utf-8")
    loaded = load_analysis(folder)
    assert loaded.calibration.to_dict() == current
    assert loaded.report["calibration"] == current


@pytest.mark.slow
@pytest.mark.parametrize("removed, sentence", [
    ("manifest.json", "copy has no manifest.json, so it is not a saved analysis; choose a folder (or a zip of one) "
                      "that an analysis was saved to."),
    ("questions.parquet", "copy is missing questions.parquet; save the analysis again."),
])
def test_a_missing_file_is_named(saved, tmp_path, removed, sentence):
    folder = copy_of(saved, tmp_path)
    (folder / removed).unlink()
    assert refusal(folder) == sentence


@pytest.mark.slow
def test_wrong_schema_version(saved, tmp_path):
    folder = copy_of(saved, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["schema_version"] = 99
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert refusal(folder) == (
        "copy was saved in format version 99, but this version reads versions 1 to 2; upgrade coverage_core to open "
        "it, or save the analysis again with this version."
    )


@pytest.mark.slow
def test_row_counts_that_do_not_match_the_manifest(saved, tmp_path):
    folder = copy_of(saved, tmp_path)
    table = pq.read_table(folder / "chunks.parquet")
    pq.write_table(table.slice(0, table.num_rows - 1), folder / "chunks.parquet")
    assert refusal(folder) == (
        f"chunks.parquet in copy has {table.num_rows - 1} rows but the manifest says {table.num_rows}; the folder is "
        "incomplete or was changed, so save the analysis again."
    )


@pytest.mark.slow
def test_damaged_files(saved, tmp_path):
    folder = copy_of(saved, tmp_path)
    (folder / "clusters.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match=r"^clusters.parquet in copy is not a readable Parquet file; save"):
        load_analysis(folder)
    (folder / "manifest.json").write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match=r"^The manifest.json of copy is not valid JSON"):
        load_analysis(folder)
    bad_zip = tmp_path / "analysis.zip"
    bad_zip.write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(InputError, match="is neither a folder nor a zip file|is not a readable zip file"):
        load_analysis(bad_zip)
    with pytest.raises(InputError, match="is not a readable zip file"):
        load_analysis(b"PK\x03\x04 broken", "upload.zip")


@pytest.mark.slow
def test_saving_never_overwrites_other_files(saved, tmp_path, capsys):
    occupied = tmp_path / "mine"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(InputError, match="already holds other files"):
        save_analysis(load_analysis(saved["folder"]).analysis(), occupied)
    # The command line refuses before reading or embedding anything.
    code = cli.main(["analyze", "--docs", str(tmp_path / "none"), "--questions", "q.csv", "--out",
                     str(tmp_path / "r.json"), "--save-analysis", str(occupied)])
    assert code == cli.EXIT_UNUSABLE
    assert "already holds other files" in capsys.readouterr().err
    assert (occupied / "notes.txt").read_text(encoding="utf-8") == "keep me"


@pytest.mark.slow
def test_resaving_a_saved_folder_replaces_it(saved, tmp_path):
    folder = copy_of(saved, tmp_path)
    loaded = load_analysis(folder)
    save_analysis(loaded.analysis(), folder, question_file_name="questions.csv")
    assert load_analysis(folder).report["metrics"] == saved["report"]["metrics"]


@pytest.mark.slow
def test_only_listed_sub_folders_of_the_allowed_root_open(saved, tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    shutil.copytree(saved["folder"], root / "march")
    (root / "empty").mkdir()
    (root / ".hidden").mkdir()
    shutil.copy(saved["folder"] / "manifest.json", root / ".hidden" / "manifest.json")
    outside = tmp_path / "outside"
    shutil.copytree(saved["folder"], outside)
    (root / "link").symlink_to(outside, target_is_directory=True)
    assert saved_folders(root) == ["march"]
    assert saved_folder(root, "march") == (root / "march").resolve()
    for name in ("../outside", "link", "empty", str(outside)):
        with pytest.raises(InputError, match="is not one of the saved analyses offered here"):
            saved_folder(root, name)
    monkeypatch.setenv(saved_analysis.SAVED_ANALYSES_VARIABLE, str(root))
    assert saved_analysis.allowed_root() == root.resolve()
    monkeypatch.setenv(saved_analysis.SAVED_ANALYSES_VARIABLE, str(tmp_path / "missing"))
    assert saved_analysis.allowed_root() is None


@pytest.mark.slow
def test_a_chosen_k_keeps_the_automatic_topics_the_screening_was_judged_against(saved, tmp_path, module_cache_dir):
    """With --clusters the screening still uses the automatic topics: the same scores as the automatic run, saved
    beside the chosen clusters, and read back (older folders without them still open)."""
    docs, questions = write_knowledge_base(tmp_path)
    target = tmp_path / "chosen-k"
    code = cli.main([
        "analyze", "--docs", str(docs), "--questions", str(questions), "--out", str(tmp_path / "report.json"),
        "--cache-dir", str(module_cache_dir), "--quiet", "--clusters", "2", "--save-analysis", str(target),
    ])
    assert code == 0
    chosen, automatic = load_analysis(target), load_analysis(saved["folder"])
    assert chosen.clustering.n_clusters == 2 != automatic.clustering.n_clusters
    assert chosen.topics.tolist() == automatic.clustering.labels.tolist()
    chosen_questions = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["questions"]
    automatic_questions = saved["report"]["questions"]
    assert [q["outlier_score"] for q in chosen_questions] == pytest.approx(
        [q["outlier_score"] for q in automatic_questions], abs=1e-9
    )
    assert [q["is_outlier"] for q in chosen_questions] == [q["is_outlier"] for q in automatic_questions]
    again = chosen.analysis()
    assert again.screening_topics.tolist() == automatic.clustering.labels.tolist()
    assert again.is_outlier.tolist() == [q["is_outlier"] for q in chosen_questions]
    topics = chosen.topic_clustering()  # what the dashboard caches, so opening the folder clusters nothing
    np.testing.assert_allclose(topics.centroids, automatic.clustering.centroids, atol=1e-5)

    older = copy_of({"folder": target}, tmp_path / "older")
    table = pq.read_table(older / saved_analysis.CHUNKS)
    pq.write_table(table.drop(["topic"]), older / saved_analysis.CHUNKS)
    opened = load_analysis(older)
    assert opened.topics is None and opened.topic_clustering() is None
    assert opened.analysis().screening_topics.tolist() == opened.clustering.labels.tolist()


@pytest.mark.slow
def test_the_dashboard_opens_a_chosen_k_analysis_without_clustering_again(tmp_path, module_cache_dir, monkeypatch):
    from coverage_core import session
    from ui import engine
    from ui.settings import Settings
    from ui.state import Overrides

    docs, questions = write_knowledge_base(tmp_path)
    target = tmp_path / "chosen-k"
    assert cli.main([
        "analyze", "--docs", str(docs), "--questions", str(questions), "--out", str(tmp_path / "report.json"),
        "--cache-dir", str(module_cache_dir), "--quiet", "--clusters", "2", "--save-analysis", str(target),
    ]) == 0
    saved = load_analysis(target)
    settings = engine.saved_settings(saved, Settings())
    corpus_key = engine.embedded_corpus_key(engine.corpus_fingerprint(saved.corpus), settings, saved.chunking)
    inputs = engine.EmbeddedInputs(
        saved.corpus, corpus_key, saved.questions, saved.question_embedding,
        engine.question_key(engine.questions_fingerprint(saved.questions), settings),
    )

    def no_clustering(*args, **kwargs):
        raise AssertionError("opening a saved analysis must not cluster again")

    monkeypatch.setattr(session, "cluster_chunks", no_clustering)
    tuned = engine.tune(inputs, settings, Overrides(), engine.saved_tuning(saved, corpus_key, settings))
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert tuned.clustering.n_clusters == 2
    assert tuned.screening_topics.tolist() == saved.topics.tolist()
    assert tuned.is_outlier.tolist() == [q["is_outlier"] for q in report["questions"]]


# ---------------------------------------------------------------- the gaps and their suggestions


def _hand_made_gaps():
    from coverage_core.suggest.gaps import Gap
    from coverage_core.suggest.questions import Suggestion

    kept = Suggestion(cluster=2, text="Where do comets orbit?", origin="local", document="<b>gamma</b>.md",
                      passage="comet orbit ice tail.", language="en", chunk=41)
    dropped = Suggestion(cluster=2, text="Is ice cold?", origin="local", document="<b>gamma</b>.md", passage="comet",
                         chunk=42, kept=False, reason="it does not reach its passage")
    return [
        Gap(2, 0.21, 20, 1 / 3, 0.9, ("comet", "orbit"), (41, 42), (kept,), dropped=(dropped,)),
        Gap(1, 0.5, 20, 1 / 3, 0.4, ("violin",), (21,), (), note="Every question written for this gap was dropped."),
    ]


@pytest.fixture
def saved_gaps(analysis, tmp_path):
    """The synthetic analysis with hand-made gaps (kept, dropped, a note), saved to a folder."""
    import dataclasses

    gaps = _hand_made_gaps()
    folder = save_analysis(dataclasses.replace(analysis, gaps=gaps), tmp_path / "saved")
    return folder, gaps


def test_gaps_and_their_suggestions_round_trip(saved_gaps):
    folder, gaps = saved_gaps
    loaded = load_analysis(folder)
    assert loaded.gaps == gaps  # every field: kept and dropped, chunk, reason, note, language
    assert loaded.analysis().gaps == gaps  # opened as saved, not written again
    assert load_analysis(zip_folder(folder), "saved.zip").gaps == gaps


def test_a_folder_saved_before_the_gaps_were_kept_finds_them_again(saved_gaps, analysis):
    folder, _ = saved_gaps
    (folder / saved_analysis.GAPS).unlink()
    loaded = load_analysis(folder)
    assert loaded.gaps is None
    again = loaded.analysis()
    assert [gap.cluster for gap in again.gaps] == [gap.cluster for gap in analysis.gaps]
    assert load_analysis(zip_folder(folder), "old.zip").gaps is None  # its zip leaves the file out too


def test_gaps_saved_before_the_new_fields_take_their_defaults(saved_gaps):
    folder, gaps = saved_gaps
    path = folder / saved_analysis.GAPS
    records = json.loads(path.read_text(encoding="utf-8"))
    for record in records:
        record.pop("dropped"), record.pop("note")
        for item in record["suggestions"]:
            for name in ("chunk", "kept", "reason"):
                item.pop(name)
    records[0]["added_by_a_later_version"] = 1
    path.write_text(json.dumps(records), encoding="utf-8")
    first, second = load_analysis(folder).gaps
    assert first.dropped == () and first.note == "" and second.note == ""
    assert first.suggestions[0].chunk is None and first.suggestions[0].kept is True
    assert first.suggestions[0].reason == "" and first.suggestions[0].text == gaps[0].suggestions[0].text


@pytest.mark.parametrize("content, message", [
    ("[{", "The gaps.json of saved is damaged; save the analysis again."),
    ('[{"cluster": 2}]', "The gaps.json of saved is damaged; save the analysis again."),
    ('{"cluster": 2}', "The gaps.json of saved is damaged; save the analysis again."),
])
def test_damaged_gaps_are_refused(saved_gaps, content, message):
    folder, _ = saved_gaps
    (folder / saved_analysis.GAPS).write_text(content, encoding="utf-8")
    assert refusal(folder) == message


def test_gaps_that_name_other_clusters_are_refused(saved_gaps):
    folder, _ = saved_gaps
    path = folder / saved_analysis.GAPS
    records = json.loads(path.read_text(encoding="utf-8"))
    records[0]["cluster"] = 99
    path.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(InputError, match="do not match its clusters and passages"):
        load_analysis(folder)
