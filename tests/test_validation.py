"""The shared checks of coverage_core.validation, and the public helpers that moved there."""

import math

import numpy as np
import pandas as pd
import pytest

from coverage_core.checks import answerability
from coverage_core.embeddings import DEFAULT_MODELS, trained_for_truncation
from coverage_core.errors import CoverageError, InputError
from coverage_core.offtopic.screener import QuestionScreener
from coverage_core.stages.clustering import ChunkClusterer
from coverage_core.suggest import llm
from coverage_core.validation import (
    SettingError,
    all_finite,
    check_scalar,
    check_vectors,
    column_key,
    find_column,
    is_blank,
    is_number,
    is_whole,
    listed_columns,
    resolve_column,
    shorten,
    unit_rows,
)


def test_input_error_is_also_a_value_error():
    error = InputError("The file is empty.")
    assert isinstance(error, CoverageError) and isinstance(error, ValueError)
    with pytest.raises(ValueError, match="^The file is empty.$"):
        raise error


def test_shorten_cuts_at_the_limit_or_at_a_word():
    assert shorten("  a\n b  ", 10) == "a b"
    assert shorten("abcdefghij", 10) == "abcdefghij"
    assert shorten("abcdefghijk", 10) == "abcdefghi…"
    assert shorten("one two three four", 12) == "one two thr…"
    assert shorten("one two three four", 12, at_word=True) == "one two…"
    assert shorten("onetwothreefour", 8, at_word=True) == "onetwoth…"  # no space in the second half
    assert shorten(None, 10) == "None"


@pytest.mark.parametrize("value", [None, float("nan"), np.float32("nan"), pd.NA, pd.NaT, "", "  \t"])
def test_is_blank(value):
    assert is_blank(value)


@pytest.mark.parametrize("value", ["x", 0, 0.0, False, " a "])
def test_is_not_blank(value):
    assert not is_blank(value)


def test_column_keys_ignore_case_accents_and_separators():
    assert column_key("Questão") == column_key("QUESTAO") == "questao"
    assert column_key("Is Answerable") == column_key("is-answerable") == column_key("IS_ANSWERABLE")
    assert find_column(["id", "Requête"], ["requete"]) == "Requête"
    assert find_column(["id"], ["question"]) is None
    assert find_column([1, "b"], ["1"]) == "1"


def test_listed_columns():
    assert listed_columns([]) == "none"
    assert listed_columns(["a", "b"]) == "'a', 'b'"
    assert listed_columns([f"c{i}" for i in range(25)]).endswith("'c19' and 5 more")


def test_resolve_column_treats_blank_names_as_not_given():
    columns = ["id", "Question Text", "source"]
    for blank in (None, "", "   "):
        assert resolve_column(columns, blank, ["question_text"], what="question") == "Question Text"
        assert resolve_column(columns, blank, ["label"], what="label") is None


def test_resolve_column_prefers_the_exact_name_then_a_tolerant_match():
    assert resolve_column(["a b", "ab"], "ab", [], what="label") == "ab"
    assert resolve_column(["a b", "x"], "A_B", [], what="label") == "a b"


def test_resolve_column_names_the_missing_column_in_one_sentence():
    with pytest.raises(InputError) as error:
        resolve_column(["id", "text"], "frage", ["question"], what="question", source="q.csv")
    assert str(error.value) == (
        "The question column 'frage' is not in the question file q.csv; name one of its columns: 'id', 'text'."
    )
    with pytest.raises(InputError, match="^The label column 'x' is not in the question file; "):
        resolve_column(["id"], "x", [], what="label")


def test_check_vectors_accepts_and_refuses():
    array = check_vectors([[1, 2], [3, 4]], "chunk_vectors")
    assert array.dtype == np.float32 and array.shape == (2, 2)
    assert check_vectors([], "question_vectors", allow_empty=True, dim=3).shape == (0, 3)
    with pytest.raises(InputError, match="^chunk_vectors is empty; at least one row is needed.$"):
        check_vectors(np.zeros((0, 2)), "chunk_vectors")
    with pytest.raises(InputError, match=r"^question_vectors must be a 2-d array \(rows, dimensions\); got 1"):
        check_vectors([1.0, 2.0], "question_vectors")
    with pytest.raises(InputError, match="^x must be a 2-d array of numbers.$"):
        check_vectors([["a", "b"]], "x")
    with pytest.raises(InputError, match="has 3 dimensions but the chunk vectors have 2"):
        check_vectors([[1, 2, 3]], "question_vectors", dim=2)
    with pytest.raises(InputError, match="^x contains NaN or infinite values.$"):
        check_vectors([[1, np.inf]], "x")


@pytest.mark.parametrize("row", [0, 16_383, 16_384, 40_000])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_all_finite_finds_a_bad_value_in_any_block(row, bad):
    vectors = np.ones((40_001, 3), dtype=np.float32)  # three blocks of rows, the last one short
    assert all_finite(vectors)
    vectors[row, 2] = bad
    assert not all_finite(vectors)
    assert all_finite(np.zeros((0, 3), dtype=np.float32))


def test_unit_rows_keeps_zero_rows_and_precision():
    rows = unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert rows.dtype == np.float64
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.0, 0.0]])
    assert unit_rows([[1, 0]]).dtype == np.float32
    original = np.array([[2.0, 0.0]], dtype=np.float32)
    unit_rows(original)
    assert original[0, 0] == 2.0  # not modified in place
    with pytest.raises(InputError, match=r"^vectors must be a 2-d array \(rows, dimensions\); got 1 dimension"):
        unit_rows([1.0, 2.0])


def test_no_module_imports_another_modules_private_names():
    import ast

    from tests.helpers import PROJECT

    for path in sorted((PROJECT / "coverage_core").rglob("*.py")) + sorted((PROJECT / "ui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("coverage_core", "ui"):
                private = [alias.name for alias in node.names if alias.name.startswith("_")]
                assert not private, f"{path.name} imports private {private} from {node.module}"


DOCSTRING_SLACK = 10
"""A function's docstring may be at most this many lines longer than its code: a contract, not a lab
notebook (the reasoning and evidence live in docs/)."""


def test_docstrings_are_contracts_not_longer_than_their_code():
    import ast

    from tests.helpers import PROJECT

    too_long = []
    for path in sorted((PROJECT / "coverage_core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node, clean=False):
                docstring = node.body[0]
                doc_lines = docstring.end_lineno - docstring.lineno + 1
                code_lines = node.end_lineno - docstring.end_lineno
                if doc_lines > code_lines + DOCSTRING_SLACK:
                    too_long.append(f"{path.relative_to(PROJECT)}:{node.lineno} {node.name} ({doc_lines} > {code_lines})")
    assert not too_long, "docstrings longer than their code plus 10 lines: " + "; ".join(too_long)


def test_binary_labels_is_public():
    labels = answerability.binary_labels(["yes", "no", "", None], 4)
    assert labels[:2].tolist() == [1.0, 0.0] and all(math.isnan(v) for v in labels[2:])
    assert answerability.binary_labels(np.array([1, 0]), 2).tolist() == [1.0, 0.0]
    with pytest.raises(InputError, match=r"^labels must hold one answerability label per question \(3\)"):
        answerability.binary_labels([1, 0], 3)
    with pytest.raises(InputError, match="^Numeric answerability labels must be 1"):
        answerability.binary_labels([2.0, 0.0], 2)


def test_defaults_have_one_home():
    assert llm.DEFAULT_LLM_MODEL == "gpt-4o-mini" == llm.LLMConfig().model
    assert answerability.DEFAULT_FITNESS_THRESHOLD == 0.4
    assert DEFAULT_MODELS == {
        "auto": "all-MiniLM-L6-v2", "local": "all-MiniLM-L6-v2", "use": "universal-sentence-encoder-multilingual-3",
        "e5": "multilingual-e5-small", "openai": "text-embedding-3-small", "voyage": "voyage-3.5",
    }


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("local", None, False),
        ("local", "sentence-transformers/all-MiniLM-L6-v2", False),
        ("local", "my-model", None),
        ("openai", None, True),
        ("openai", "text-embedding-3-large", True),
        ("openai", "text-embedding-ada-002", False),
        ("openai", "custom", None),
        ("voyage", "voyage-3.5", True),
        ("voyage", "voyage-3-lite", False),
        ("voyage", "voyage-9", None),
        ("cohere", "embed", None),
    ],
)
def test_trained_for_truncation_comes_from_provider_metadata(provider, model, expected):
    assert trained_for_truncation(provider, model) is expected


def test_screening_and_clustering_raise_input_error_with_the_same_messages():
    with pytest.raises(InputError, match=r"^X must be a 2-D array with at least one chunk"):
        ChunkClusterer().fit(np.zeros(3))
    with pytest.raises(InputError, match="^question_vectors contains NaN or infinite values; check the embeddings.$"):
        QuestionScreener().fit(np.array([[np.nan, 1.0]]), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"^strictness must be between 0 and 1 \(got 3\); 0 flags only extreme questions, 1 flags many\.$"):  # still a ValueError
        QuestionScreener(strictness=3).fit(np.ones((2, 2)), np.ones((2, 2)))


# --------------------------------------------------------------------------
# check_scalar: one sentence naming the setting, as scikit-learn's contract
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "boundaries, accepted, refused",
    [
        ("both", [0, 0.5, 1], [-0.01, 1.01]),
        ("left", [0, 0.99], [1, -0.01]),
        ("right", [0.01, 1], [0, 1.01]),
        ("neither", [0.01, 0.99], [0, 1]),
    ],
)
def test_check_scalar_boundaries(boundaries, accepted, refused):
    for value in accepted:
        assert check_scalar(value, "x", float, min_val=0, max_val=1, include_boundaries=boundaries) == value
    for value in refused:
        with pytest.raises(SettingError):
            check_scalar(value, "x", float, min_val=0, max_val=1, include_boundaries=boundaries)


@pytest.mark.parametrize(
    "boundaries, phrase",
    [
        ("both", "between 0 and 1"),
        ("left", "at least 0 and less than 1"),
        ("right", "greater than 0 and at most 1"),
        ("neither", "greater than 0 and less than 1"),
    ],
)
def test_check_scalar_says_the_bounds_in_words(boundaries, phrase):
    with pytest.raises(InputError, match=f"^x must be {phrase} \\(got 2\\)\\.$"):
        check_scalar(2, "x", float, min_val=0, max_val=1, include_boundaries=boundaries)


def test_check_scalar_names_the_setting_in_one_sentence():
    with pytest.raises(InputError, match=r"^The multi-cluster N must be at least 1 \(got 0\)\.$") as caught:
        check_scalar(0, "the multi-cluster N", int, min_val=1)
    assert (caught.value.setting, caught.value.requirement) == ("the multi-cluster N", "must be at least 1 (got 0).")
    with pytest.raises(InputError) as caught:  # a field name: what a caller maps, never the sentence's words
        check_scalar(0, "the multi-cluster N", int, min_val=1, field="multi_n")
    assert caught.value.setting == "multi_n" and str(caught.value).startswith("The multi-cluster N must")


@pytest.mark.parametrize("field, value", [
    ("dimensions", 0), ("n_clusters", 0), ("random_state", -1), ("strictness", 2.0), ("multi_threshold", 5.0),
    ("multi_n", 0), ("support_threshold", 2.0), ("retrieval_k", 0),
])
def test_every_analysis_setting_error_names_its_field_and_the_command_line_has_its_flag(field, value):
    from coverage_core.cli import _SETTING_FLAGS
    from coverage_core.config import AnalysisConfig, EmbeddingConfig

    with pytest.raises(SettingError) as caught:
        if field == "dimensions":
            EmbeddingConfig(dimensions=value)
        else:
            AnalysisConfig(**{field: value})
    assert caught.value.setting == field and field in _SETTING_FLAGS
    with pytest.raises(ValueError, match=r"^top_k must be at most 30 \(got 31\); fewer is faster\.$"):
        check_scalar(31, "top_k", int, max_val=30, hint="fewer is faster")


@pytest.mark.parametrize("value", [True, False, np.bool_(True), 1.0, 2.5, "3", None])
def test_check_scalar_refuses_bool_and_non_whole_numbers_for_int(value):
    with pytest.raises(InputError, match=r"^--seed must be a whole number between 0 and 9 \(got "):
        check_scalar(value, "--seed", int, min_val=0, max_val=9)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float32("nan")])
def test_check_scalar_refuses_nan_and_infinities(value):
    with pytest.raises(InputError, match=r"^x must be between 0 and 1 \(got (nan|inf|-inf)\)\.$"):
        check_scalar(value, "x", float, min_val=0, max_val=1)
    with pytest.raises(InputError, match=r"^x must be a finite number of at least 0 \(got "):
        check_scalar(value, "x", float, min_val=0)
    with pytest.raises(InputError, match=r"^x must be a finite number \(got "):
        check_scalar(value, "x", float)


def test_check_scalar_accepts_numpy_numbers_and_returns_them_unchanged():
    assert check_scalar(np.int64(3), "k", int, min_val=1) == 3
    assert check_scalar(np.float32(0.5), "x", float, min_val=0, max_val=1) == np.float32(0.5)
    assert check_scalar(2, "x", float) == 2  # an int is a number
    with pytest.raises(InputError, match=r"^x must be a number \(got True\)\.$"):
        check_scalar(True, "x", float)
    with pytest.raises(ValueError, match="include_boundaries"):
        check_scalar(1, "x", int, include_boundaries="open")


def test_is_whole_and_is_number():
    assert is_whole(3) and is_whole(np.int32(3)) and not is_whole(True) and not is_whole(3.0)
    assert is_number(3) and is_number(np.float32(0.5)) and is_number(math.nan)
    assert not is_number(False) and not is_number("3") and not is_number(None)


def _package_room(module: str) -> str | None:
    """The room of a ``coverage_core`` module: its top-level module or its top-level folder."""
    parts = module.split(".")
    return parts[1] if parts[0] == "coverage_core" and len(parts) > 1 else None


def _room_imports() -> dict[str, dict[str, str]]:
    """room -> {imported room: one "file -> module" line that shows it}, from every import in coverage_core."""
    import ast

    from tests.helpers import PROJECT

    graph: dict[str, dict[str, str]] = {}
    for path in sorted((PROJECT / "coverage_core").rglob("*.py")):
        relative = path.relative_to(PROJECT).with_suffix("")
        room = _package_room(".".join(relative.parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"{node.module}.{alias.name}" if node.module == "coverage_core" else node.module
                         for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                target = _package_room(name)
                if target and target != room and target != "__init__":
                    graph.setdefault(room, {}).setdefault(target, f"{relative} -> {name}")
    return graph


def test_imports_between_the_packages_rooms_flow_one_way():
    """No cycle among coverage_core's top-level modules and folders: types and low stages never import the
    modules that use them, so each can be read, tested and moved without those above it."""
    graph = _room_imports()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(room: str) -> list[str] | None:
        state[room], _ = 1, path.append(room)
        for target in graph.get(room, {}):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[room], _ = 2, path.pop()
        return None

    for room in sorted(graph):
        if room not in state and (cycle := visit(room)):
            shown = [graph[a][b] for a, b in zip(cycle, cycle[1:])]
            raise AssertionError("imports run in a circle: " + "; ".join(shown))
    assert {"stages", "offtopic", "measure"} <= set(graph)  # the walk saw the package
