"""The Gap analysis page's "Send accepted questions to Phoenix": the accepted questions, with who wrote them and
their source passage, go to a Phoenix dataset as a new version of it (or as a new dataset).

The tester types the Phoenix server's address, the dataset's name and, when the server asks for one, an API key
in a password field. The key stays in this session's memory (a widget's value: never saved, exported or
logged) and goes only to the server typed beside it. The server's own ``PHOENIX_API_KEY`` is never used here:
the address is typed by whoever uses the dashboard, and the operator's key must not go to any server they name.

:func:`send` does the work without Streamlit; :func:`push_panel` draws the fields and the button.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import quote, urlsplit

import streamlit as st

from coverage_core.connectors import phoenix
from coverage_core.connectors.accepted import accepted_from_records
from coverage_core.errors import CoverageError, InputError
from ui import flow, formats, state

KEY_WORDS = "the API key field"
"""Where the dashboard's key comes from, as a refusal's sentence names it."""
SERVER_EXAMPLE = "http://localhost:6006"


def dataset_address(server: str, dataset: str) -> phoenix.PhoenixAddress:
    """The Phoenix dataset ``dataset`` on the server at ``server`` (``http://host:port``, or https, and any
    path Phoenix is served under).

    Raises
    ------
    InputError
        In one sentence in the page's words: a blank field, an address that is no http(s) server, or one
        holding a user name or password (never repeated back).
    """
    server, dataset = server.strip().rstrip("/"), dataset.strip()
    if not server or not dataset:
        raise InputError(f"Type the Phoenix server's address (such as {SERVER_EXAMPLE}) and the name of the "
                         "dataset to send the questions to.")
    try:
        parts = urlsplit(server)
    except ValueError:
        parts = None
    if parts is not None and "@" in parts.netloc:
        raise InputError("The Phoenix server's address holds a user name or password, which is never sent; type "
                         "the key in the API key field instead.")
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname \
            or parts.query or parts.fragment:
        raise InputError(f"Type the Phoenix server's address as it opens in a browser, such as {SERVER_EXAMPLE}.")
    return phoenix.parse_address(f"{phoenix.SCHEME}{server}/{phoenix.DATASETS}/{quote(dataset, safe='')}",
                                 phoenix.DATASETS, key_words=KEY_WORDS)


def send(server: str, dataset: str, api_key: str | None, rows: Sequence[Mapping]) -> str:
    """Send the accepted suggestion-table ``rows`` (``ui.views.gaps.accepted_rows``) to the dataset; the
    sentence saying what was sent. Raises InputError (one sentence) for anything that stops it."""
    address = dataset_address(server, dataset)
    return phoenix.push_accepted(address, accepted_from_records(rows), api_key=(api_key or "").strip() or None,
                                 key_words=KEY_WORDS).sentence()


def push_panel(rows: Sequence[Mapping]) -> None:
    """The fields and the button; the result or the reason it failed is said under them."""
    with st.expander("Send accepted questions to Phoenix"):
        n = len(rows)
        st.caption(f"{formats.count(n, 'accepted question')} {formats.plural(n, 'goes', 'go')} to the dataset as a "
                   "new version, or as a new dataset when it does not exist yet; each keeps who wrote it and its "
                   "source passage. Questions the dataset holds already are not sent again.")
        server_column, dataset_column, key_column = st.columns(3)
        server = server_column.text_input("Phoenix server", placeholder=SERVER_EXAMPLE, key=state.W_PHOENIX_SERVER)
        dataset = dataset_column.text_input("Dataset", placeholder="rag-test-questions", key=state.W_PHOENIX_DATASET)
        api_key = key_column.text_input(
            "API key (if needed)", type="password", key=state.W_PHOENIX_KEY,
            help="Only when your Phoenix server asks for one. Kept in this browser session only, sent to this "
            "Phoenix server only, never saved.",
        )
        if st.button("Send accepted questions to Phoenix", key=state.W_PHOENIX_SEND, disabled=not rows):
            try:
                with st.spinner("Sending the accepted questions to Phoenix…"):
                    st.success(formats.markdown_text(send(server, dataset, api_key, rows)))
            except CoverageError as error:
                flow.show_error(error)
