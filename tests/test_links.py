"""Links among the documents: followed once, loops and broken links reported, never read twice.

Python 3.11's ``Path.rglob`` lists a link to a folder but does not descend
into it, so files behind a link were silently left out, and a path that is a
link loop looked like a missing path. ``read_documents`` now walks folders
itself.
"""

import os

import pytest

from coverage_core.cli import main
from coverage_core.errors import InputError
from coverage_core.inputs.ingest import read_documents


def _write(path, text="Some text about drums and flutes."):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _warnings(result):
    return [str(warning) for warning in result.warnings]


def test_a_self_referencing_link_is_a_link_loop(tmp_path):
    loop = tmp_path / "loop"
    os.symlink("loop", loop)
    with pytest.raises(InputError) as raised:
        read_documents([loop])
    assert str(raised.value) == f"{loop} is a link loop (it leads back to itself); point the link at a real file or folder."


def test_a_link_loop_as_docs_exits_2_with_one_sentence(tmp_path, capsys, cache_dir):
    loop = tmp_path / "loop"
    os.symlink("loop", loop)
    questions = _write(tmp_path / "q.csv", "question\nWhat is a drum?\n")
    assert main(["analyze", "--docs", str(loop), "--questions", str(questions), "--out", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"coverage_core: {loop} is a link loop (it leads back to itself); "
                                        "point the link at a real file or folder."]


def test_a_link_to_a_missing_target_is_a_broken_link(tmp_path):
    good = _write(tmp_path / "good.txt")
    broken = tmp_path / "broken.txt"
    os.symlink("gone.txt", broken)
    result = read_documents([broken, good])
    assert [d.name for d in result.documents] == ["good.txt"]
    assert _warnings(result) == [
        f"{broken}: It is a broken link (it points to gone.txt, which does not exist), so it was skipped; "
        "fix the link or remove it."
    ]
    missing = tmp_path / "missing.txt"
    with pytest.raises(InputError, match="does not exist"):
        read_documents([missing])


def test_a_folder_link_back_to_its_parent_is_skipped_with_a_warning(tmp_path):
    docs = tmp_path / "docs"
    _write(docs / "a.txt")
    _write(docs / "sub" / "b.txt")
    os.symlink("..", docs / "sub" / "back")  # dir/sub/back -> ..
    result = read_documents([docs])
    assert [d.name for d in result.documents] == ["a.txt", "sub/b.txt"]  # each once, under its own name
    assert _warnings(result) == [
        "sub/back: It is a link back to a folder that contains it (a link loop), so it was skipped; "
        "the folder it leads to is read once already, so nothing is missing."
    ]


def test_a_loop_through_a_folder_outside_terminates(tmp_path):
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    _write(docs / "a.txt")
    _write(outside / "o.txt")
    os.symlink(outside, docs / "ext")
    os.symlink(docs, outside / "up")  # docs/ext/up -> docs
    result = read_documents([docs], follow_symlinks=True)
    assert [d.name for d in result.documents] == ["a.txt", "ext/o.txt"]
    assert [w.source for w in result.warnings] == ["ext/up"]
    assert "a link loop" in _warnings(result)[0]


def test_links_to_folders_and_files_are_followed_and_read_once(tmp_path):
    docs, common = tmp_path / "docs", tmp_path / "common"
    _write(docs / "z-real.txt", "The real file, linked from inside the folder.")
    _write(common / "s.md", "A note in a linked folder.")
    os.symlink(common, docs / "linked")
    os.symlink(common, docs / "linked-again")  # the same folder twice
    os.symlink("z-real.txt", docs / "0-alias.txt")  # sorts before the file it points to
    result = read_documents([docs, docs / "z-real.txt", common / "s.md"], follow_symlinks=True)
    assert [d.name for d in result.documents] == ["linked/s.md", "z-real.txt"]
    assert result.warnings == []


def test_broken_and_looping_links_inside_a_folder_are_named(tmp_path):
    docs = tmp_path / "docs"
    _write(docs / "a.txt")
    os.symlink("nowhere.txt", docs / "broken.txt")
    os.symlink("self.md", docs / "self.md")
    os.symlink(tmp_path / "gone", docs / "lost-folder")
    result = read_documents([docs])
    assert [d.name for d in result.documents] == ["a.txt"]
    assert [w.source for w in result.warnings] == ["broken.txt", "lost-folder", "self.md"]
    assert "broken link" in _warnings(result)[0] and "broken link" in _warnings(result)[1]
    assert "link loop" in _warnings(result)[2]


def test_a_folder_of_only_a_loop_says_so(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    os.symlink(".", docs / "here")
    with pytest.raises(InputError) as raised:
        read_documents([docs])
    message = str(raised.value)
    assert "contains no PDF, TXT or Markdown files" in message and "here is a link back" in message
