"""Fixtures of the Phoenix tests: one real Phoenix server for the session (tests/phoenix/support.py), holding
the example's production traffic as traces and a test set as a dataset."""

from __future__ import annotations

import csv

import pytest

from tests.phoenix.support import EXAMPLE, example_traffic, running_phoenix, send_traces

PROJECT_NAME = "wiki-qa production"
DATASET_NAME = "wiki-qa tests"
ARTICLES = ("Drum", "Flute", "Koala")
"""The knowledge base of the command-line runs: three of the example's articles (Koala.txt has no question)."""


@pytest.fixture(scope="session")
def phoenix_server():
    """``phoenix serve`` on 127.0.0.1 for the session, its key required (support.running_phoenix)."""
    with running_phoenix() as server:
        yield server


@pytest.fixture(scope="session")
def production(phoenix_server):
    """The example's traffic (support.example_traffic), sent to the project :data:`PROJECT_NAME` as traces."""
    traffic = example_traffic()
    send_traces(phoenix_server, PROJECT_NAME, traffic)
    return traffic


@pytest.fixture(scope="session")
def test_dataset(phoenix_server):
    """The example's questions about :data:`ARTICLES` as the Phoenix dataset :data:`DATASET_NAME`: the question
    in the input, the answer in the output, the article, source file and answerability in the metadata."""
    with open(EXAMPLE / "questions.csv", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["article"] in ARTICLES]
    phoenix_server.client().datasets.create_dataset(
        name=DATASET_NAME, inputs=[{"question": row["question"]} for row in rows],
        outputs=[{"answer": row["answer"]} for row in rows],
        metadata=[{"article": row["article"], "source": row["source"], "answerable": row["answerable"]}
                  for row in rows])
    return rows
