import io

import pandas as pd
import pytest

from coverage_core.report import neutralise_formula, to_safe_csv


@pytest.mark.parametrize(
    "cell, expected",
    [
        ("=SUM(A1:A2)", "'=SUM(A1:A2)"),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@cmd", "'@cmd"),
        ("\t=1", "'\t=1"),
        ("What is 2+2?", "What is 2+2?"),
        ("", ""),
        (None, None),
    ],
)
def test_neutralise_formula(cell, expected):
    assert neutralise_formula(cell) == expected


def test_safe_csv_neutralises_every_cell_and_header_but_keeps_text():
    frame = pd.DataFrame({"question": ["=1+1", "Why, though?"], "=bad header": ["@x", "ok"]})
    data = to_safe_csv(frame)
    assert data.startswith(b"\xef\xbb\xbf")  # BOM: spreadsheets then read UTF-8
    back = pd.read_csv(io.StringIO(data.decode("utf-8-sig")), dtype=str)
    assert list(back.columns) == ["question", "'=bad header"]
    assert back["question"].tolist() == ["'=1+1", "Why, though?"]
    assert back["'=bad header"].tolist() == ["'@x", "ok"]
