"""The command line's connectors (:mod:`coverage_core.connectors`): a Phoenix address given to ``--questions``
or ``--traffic``, and the ``push-accepted`` command.

The key is read from :data:`~coverage_core.connectors.phoenix.API_KEY_VARIABLE` when a request is made, handed
to the connector, and kept nowhere else.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from coverage_core.connectors import phoenix
from coverage_core.connectors.phoenix import is_phoenix_address
from coverage_core.errors import InputError

__all__ = ["check_addresses", "input_name", "is_phoenix_address", "push_accepted", "read_dataset", "read_project"]


def _key() -> str | None:
    return os.environ.get(phoenix.API_KEY_VARIABLE)


def _flagged(flag: str, error: InputError) -> InputError:
    """``error``'s sentence after the flag that gave the address ("--traffic: the Phoenix address …")."""
    text = str(error)
    return InputError(f"{flag}: {text[:1].lower() + text[1:] if text[1:2].islower() else text}")


def check_addresses(args: argparse.Namespace) -> None:
    """InputError naming the flag when ``--questions`` or ``--traffic`` is a Phoenix address that cannot be used
    (:func:`~coverage_core.connectors.phoenix.parse_address`); nothing is sent."""
    for flag, value, kind in (("--questions", args.questions, phoenix.DATASETS),
                              ("--traffic", args.traffic, phoenix.PROJECTS)):
        if is_phoenix_address(value):
            try:
                phoenix.parse_address(value, kind)
            except InputError as error:
                raise _flagged(flag, error) from None


def input_name(value: str) -> str:
    """How the report names an input: a file by its name, a Phoenix project or dataset by its address."""
    return str(phoenix.parse_address(value)) if is_phoenix_address(value) else Path(value).name


def read_dataset(args: argparse.Namespace):
    """The test set of the Phoenix dataset ``--questions`` names, its question column ``--question-column`` or
    detected (:func:`~coverage_core.connectors.phoenix.read_dataset_questions`)."""
    return phoenix.read_dataset_questions(args.questions, args.question_column, api_key=_key())


def read_project(args: argparse.Namespace):
    """The query log of the Phoenix project ``--traffic`` names
    (:func:`~coverage_core.connectors.phoenix.read_project_traffic`)."""
    return phoenix.read_project_traffic(args.traffic, api_key=_key())


def push_accepted(args: argparse.Namespace) -> str:
    """``push-accepted``: the accepted questions of the report or saved analysis ``source`` sent to the Phoenix
    dataset ``--to`` (checked before the source is read); returns the sentence saying what was sent."""
    from coverage_core.connectors.accepted import read_accepted

    try:
        address = phoenix.parse_address(args.to, phoenix.DATASETS)
    except InputError as error:
        raise _flagged("--to", error) from None
    return phoenix.push_accepted(address, read_accepted(args.source), api_key=_key()).sentence()
