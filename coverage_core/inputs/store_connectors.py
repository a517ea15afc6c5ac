"""Chunk vectors in a Qdrant or Chroma collection kept in a folder on this machine.

``qdrant:PATH?collection=NAME`` reads a collection that qdrant-client's local
mode (``QdrantClient(path=PATH)``) saved; ``chroma:PATH?collection=NAME`` one
that Chroma saved in-process (``chromadb.PersistentClient(path=PATH)``). No
server is contacted and nothing is embedded: each point's text, source
document, optional page and vector are read page by page and handed to
:func:`~coverage_core.inputs.vector_store.read_vector_table` as one table, so
the rows are checked, left out and warned about exactly as a Parquet file's.

Payload keys (Qdrant) and metadata keys (Chroma) are detected by the names
the Parquet columns are (``TEXT_COLUMN_NAMES``, ``DOCUMENT_COLUMN_NAMES``,
``PAGE_COLUMN_NAMES``), or named by the caller (:class:`VectorColumns`).
Chroma's own documents are the passage text unless another text key is
named. LangChain's layout, with the metadata nested under a ``metadata``
payload key, is read too: its keys count as payload keys.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import numpy as np

from coverage_core.errors import InputError
from coverage_core.inputs.memory import check_fits
from coverage_core.inputs.vector_store import (
    ROW_OVERHEAD_BYTES,
    VectorColumns,
    VectorCorpus,
    first_line,
    read_vector_table,
    read_vectors,
    resolve_columns,
)
from coverage_core.invisible import one_line_name

__all__ = [
    "STORE_KINDS",
    "StoreAddress",
    "VECTOR_STORES_VARIABLE",
    "allowed_store_root",
    "is_store_address",
    "parse_store_address",
    "read_store",
    "read_vector_source",
    "store_address",
    "store_folder",
    "store_folders",
]

STORE_KINDS = {"qdrant": "Qdrant", "chroma": "Chroma"}
"""The stores read, by the prefix of their address, with the name messages give them."""
QDRANT_PAGE_POINTS = 1024
"""Points one Qdrant scroll request returns."""
CHROMA_PAGE_ROWS = 5000
"""Rows one Chroma ``get`` returns."""
STORE_COPIES = 2
"""Times a store folder's size its reading may take in memory: the client's own copy and the rows read from it."""
NESTED_METADATA_KEY = "metadata"
"""The payload key LangChain nests a passage's metadata under; its keys are read as payload keys."""

_STORE_MARKERS = {"qdrant": "meta.json", "chroma": "chroma.sqlite3"}
"""The file each store writes at the top of its folder; a folder without it is not opened (the clients would
create a new, empty store in it)."""
_ADDRESS_SETTINGS = {"qdrant": ("collection", "vector"), "chroma": ("collection",)}
"""The settings each address takes after ``?``."""
_CHROMA_TEXT = "documents"
"""The key Chroma's own document text goes by among a row's metadata keys (Chroma's word for it; it shadows a
metadata entry of that name)."""


@dataclass(frozen=True)
class StoreAddress:
    """One collection of a vector store kept in a folder on this machine.

    ``kind`` is a key of :data:`STORE_KINDS`; ``vector`` names one of a
    Qdrant collection's named vectors (None: its only vector). Raises
    :class:`InputError` for an unknown kind, an empty collection name, or a
    vector name given for Chroma.
    """

    kind: str
    path: Path
    collection: str
    vector: str | None = None

    def __post_init__(self):
        if self.kind not in STORE_KINDS:
            raise InputError(f"{self.kind!r} is not a vector store read here; use one of: {', '.join(STORE_KINDS)}.")
        if not self.collection:
            raise InputError(f"Give the name of the {STORE_KINDS[self.kind]} collection to read.")
        if self.vector is not None and self.kind != "qdrant":
            raise InputError(f"A {STORE_KINDS[self.kind]} collection has one vector per passage; name no vector.")

    @property
    def label(self) -> str:
        """How messages and the report name the collection, e.g. "Qdrant collection docs"."""
        return f"{STORE_KINDS[self.kind]} collection {one_line_name(self.collection)}"


def store_address(kind: str, folder: str | Path, collection: str, vector: str | None = None) -> StoreAddress:
    """A :class:`StoreAddress` from typed values: surrounding spaces dropped, a blank vector name taken as none.

    Raises :class:`InputError` as :class:`StoreAddress` does, and for a blank folder.
    """
    folder_text = str(folder).strip()
    if not folder_text:
        raise InputError(f"Give the folder the {STORE_KINDS.get(kind, kind)} collection is saved in.")
    vector = (vector or "").strip() or None
    return StoreAddress(kind, Path(folder_text).expanduser(), (collection or "").strip(), vector)


def is_store_address(value) -> bool:
    """Whether ``value`` (a --vectors argument) names a store, ``qdrant:…`` or ``chroma:…``, rather than a file."""
    return isinstance(value, str | Path) and str(value).lower().startswith(tuple(f"{kind}:" for kind in STORE_KINDS))


def parse_store_address(value: str) -> StoreAddress:
    """The collection ``qdrant:PATH?collection=NAME[&vector=NAME]`` or ``chroma:PATH?collection=NAME`` names.

    Setting values may be percent-encoded. Raises :class:`InputError` for
    any other form: no folder, no collection, an unknown or repeated setting.
    """
    kind, _, rest = str(value).partition(":")
    kind = kind.lower()
    if kind not in STORE_KINDS:
        raise InputError(f"The vector store address {value} names no store read here; start it with "
                         f"{' or '.join(f'{known}:' for known in STORE_KINDS)}.")
    form = f"{kind}:PATH?collection=NAME" + ("[&vector=NAME]" if kind == "qdrant" else "")
    path, _, query = rest.rpartition("?") if "?" in rest else (rest, "", "")
    if not path.strip() or not query:
        missing = "no folder" if not path.strip() else "no collection"
        raise InputError(f"The vector store address {value} names {missing}; write it as {form}.")
    settings: dict[str, str] = {}
    for part in query.split("&"):
        name, equals, setting = part.partition("=")
        if not equals or name not in _ADDRESS_SETTINGS[kind] or name in settings:
            raise InputError(f"The vector store address {value} has {part!r}, which is not one setting of {form}; "
                             f"write it as {form}.")
        settings[name] = unquote(setting)
    if not settings.get("collection", "").strip():
        raise InputError(f"The vector store address {value} names no collection; write it as {form}.")
    return store_address(kind, path, settings["collection"], settings.get("vector"))


def read_vector_source(source, columns: VectorColumns = VectorColumns()) -> VectorCorpus:
    """The chunk vectors a ``--vectors`` argument names: a store collection (a :class:`StoreAddress` or its
    ``qdrant:…`` / ``chroma:…`` text, :func:`read_store`), else a Parquet file or LanceDB folder
    (:func:`~coverage_core.inputs.vector_store.read_vectors`). Raises :class:`InputError` as they do."""
    if isinstance(source, StoreAddress) or is_store_address(source):
        return read_store(source, columns)
    return read_vectors(source, columns)


def read_store(address: StoreAddress | str, columns: VectorColumns = VectorColumns()) -> VectorCorpus:
    """The chunk vectors of a Qdrant or Chroma collection (an address or its ``kind:PATH?collection=NAME`` text).

    ``columns`` names the payload or metadata keys of the text, document
    and page (None: detected by name); ``columns.vector`` must be None (a
    Qdrant collection's vectors are chosen with ``vector=NAME``). The
    vectors are checked and scaled as :func:`read_vector_table` does.

    Raises :class:`InputError` (one sentence) when the address, folder,
    collection or its points cannot be used, or the store's package is not
    installed.
    """
    if not isinstance(address, StoreAddress):
        address = parse_store_address(address)
    name = STORE_KINDS[address.kind]
    if columns.vector is not None:
        which = "choose a named vector with vector=NAME" if address.kind == "qdrant" else "leave the vector column out"
        raise InputError(f"The vectors of a {name} collection are not a payload column; {which}.")
    _check_folder(address)
    reader = _read_qdrant if address.kind == "qdrant" else _read_chroma
    return reader(address, columns)


# --------------------------------------------------------------------------
# the folders an operator offers to the dashboard
# --------------------------------------------------------------------------

VECTOR_STORES_VARIABLE = "COVERAGE_CORE_VECTOR_STORES"
"""The environment variable naming the folder whose store folders the dashboard may open: opening a Qdrant
folder unpickles its points, so a dashboard user never names a server path."""


def allowed_store_root(environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder named by ``$COVERAGE_CORE_VECTOR_STORES`` (None when unset or not a folder)."""
    value = (environ if environ is not None else os.environ).get(VECTOR_STORES_VARIABLE, "").strip()
    if not value:
        return None
    root = Path(value).expanduser()
    return root.resolve() if root.is_dir() else None


def store_folders(root: Path, kind: str) -> list[str]:
    """Names of the sub-folders of ``root`` that hold a ``kind`` store (its marker file), sorted; hidden folders
    and links leading outside ``root`` are left out."""
    resolved = Path(root).resolve()
    names = []
    for child in sorted(resolved.iterdir(), key=lambda path: path.name.casefold()):
        if child.name.startswith(".") or not child.is_dir() or child.resolve().parent != resolved:
            continue
        if (child / _STORE_MARKERS[kind]).is_file():
            names.append(child.name)
    return names


def store_folder(root: Path, kind: str, name: str) -> Path:
    """The sub-folder ``name`` of ``root``; InputError unless :func:`store_folders` offers it for ``kind``."""
    if name not in store_folders(root, kind):
        raise InputError(f"{name!r} is not one of the {STORE_KINDS[kind]} folders offered here; choose one from "
                         "the list.")
    return Path(root).resolve() / name


# --------------------------------------------------------------------------
# the folder
# --------------------------------------------------------------------------


def _check_folder(address: StoreAddress) -> None:
    """InputError unless ``address.path`` is a folder the store wrote (its marker file inside) that fits in memory.

    Checked before the client opens it: both clients create a new, empty store in a folder that holds none.
    """
    name, path = STORE_KINDS[address.kind], address.path
    wanted = f"give the folder {name} saved its collections in"
    if not path.exists():
        raise InputError(f"The {name} folder {path} does not exist; {wanted}.")
    if not path.is_dir():
        raise InputError(f"The {name} folder {path} is a file; {wanted}.")
    if not (path / _STORE_MARKERS[address.kind]).is_file():
        raise InputError(f"The folder {path} holds no {name} store (no {_STORE_MARKERS[address.kind]} in it); {wanted}.")
    check_fits(STORE_COPIES * _folder_bytes(path), f"The {name} folder {path.name}")


def _folder_bytes(path: Path) -> int:
    """The size of the files under ``path`` (links not followed)."""
    total = 0
    for root, _, names in os.walk(path):
        for file_name in names:
            try:
                total += os.lstat(os.path.join(root, file_name)).st_size
            except OSError:  # removed meanwhile: nothing to read
                continue
    return total


def _import(module: str, package: str, address: StoreAddress):
    """The store's client module; InputError naming the package when it is not installed."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:  # pinned in requirements.txt; a trimmed install may lack it
        raise InputError(
            f"Reading a {STORE_KINDS[address.kind]} collection needs the {package} package, which is not installed; "
            "install the pinned requirements, or export the collection to Parquet."
        ) from None


def _folder_name(address: StoreAddress) -> str:
    """The store folder's name as messages give it (the path itself for ``.`` or a root)."""
    return address.path.name or str(address.path)


def _no_collection(address: StoreAddress, names: Iterable[str]) -> InputError:
    """The error for a collection name not among ``names``, the folder's collections (listed, sorted)."""
    names = sorted(names)
    name, folder = STORE_KINDS[address.kind], _folder_name(address)
    if not names:
        return InputError(f"The {name} folder {folder} holds no collection; give the folder the passages were "
                          "saved in.")
    listed = ", ".join(one_line_name(n) for n in names)
    return InputError(
        f"The {name} folder {folder} has no collection {one_line_name(address.collection)}; name one of its "
        f"collections: {listed}."
    )


def _empty(address: StoreAddress) -> InputError:
    """The error for a collection without a single point."""
    return InputError(f"The {address.label} holds no passages; give the collection the passages were saved in.")


# --------------------------------------------------------------------------
# Qdrant
# --------------------------------------------------------------------------


def _read_qdrant(address: StoreAddress, columns: VectorColumns) -> VectorCorpus:
    """The collection read through qdrant-client's local mode, scrolled :data:`QDRANT_PAGE_POINTS` at a time."""
    qdrant_client = _import("qdrant_client", "qdrant-client", address)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the local mode's advice to run a server past 20,000 points
            client = qdrant_client.QdrantClient(path=str(address.path))
    except RuntimeError as error:
        if "already accessed" in str(error):
            raise InputError(
                f"The Qdrant folder {_folder_name(address)} is open in another program (a Qdrant client holds it); close "
                "that program and try again."
            ) from None
        raise _unreadable(address, error) from None
    except Exception as error:  # a damaged meta.json or storage file: pydantic, sqlite or OS errors
        raise _unreadable(address, error) from None
    try:
        return _scroll_qdrant(client, address, columns)
    finally:
        client.close()


def _scroll_qdrant(client, address: StoreAddress, columns: VectorColumns) -> VectorCorpus:
    """The collection ``address`` names, read through the open local ``client``; InputError as :func:`read_store`."""
    names = [collection.name for collection in client.get_collections().collections]
    if address.collection not in names:
        raise _no_collection(address, names)
    try:
        info = client.get_collection(address.collection)
        vector, dim = _qdrant_vector(info.config.params.vectors, address)
        total = client.count(address.collection, exact=True).count
    except InputError:
        raise
    except Exception as error:  # as in _read_qdrant
        raise _unreadable(address, error) from None
    if total == 0:
        raise _empty(address)
    check_fits(total * (ROW_OVERHEAD_BYTES + 8 * dim), f"The {total} points of the {address.label}")
    table = _StoreTable(dim)
    offset = None
    while True:
        records, offset = client.scroll(
            address.collection, limit=QDRANT_PAGE_POINTS, offset=offset, with_payload=True,
            with_vectors=[vector] if vector is not None else True,
        )
        table.add(
            [_lifted(record.payload or {}) for record in records],
            [(record.vector or {}).get(vector) if vector is not None else record.vector for record in records],
        )
        if offset is None or not records:
            break
    return table.corpus(columns, address.label, vector_key="vector")


def _qdrant_vector(config, address: StoreAddress) -> tuple[str | None, int]:
    """The name (None: unnamed) and size of the dense vector to read; InputError when none can be chosen."""
    label = address.label
    if not isinstance(config, dict):  # one unnamed vector
        if address.vector is not None:
            raise InputError(f"The {label} has one unnamed vector, not a named vector {address.vector}; name no "
                             "vector.")
        return None, _dense_size(config, label)
    if not config:
        raise InputError(f"The {label} holds no dense vectors; save the passage vectors as a dense vector.")
    listed = ", ".join(sorted(config))
    if address.vector is not None:
        if address.vector not in config:
            raise InputError(f"The {label} has no named vector {address.vector}; name one of: {listed}.")
        return address.vector, _dense_size(config[address.vector], label)
    if len(config) == 1:
        (name, params), = config.items()
        return name, _dense_size(params, label)
    raise InputError(f"The {label} has several named vectors ({listed}); name the one that holds the passage "
                     "vectors.")


def _dense_size(params, label: str) -> int:
    """The size of one vector of ``params`` (a ``VectorParams``); InputError for a multivector."""
    if getattr(params, "multivector_config", None) is not None:
        raise InputError(f"The {label} keeps several vectors per point (a multivector); save one vector per "
                         "passage.")
    return int(params.size)


def _lifted(payload: dict) -> dict:
    """``payload`` with the keys of a nested ``metadata`` dict alongside its own (its own keys win)."""
    nested = payload.get(NESTED_METADATA_KEY)
    if not isinstance(nested, dict):
        return payload
    lifted = {key: value for key, value in payload.items() if key != NESTED_METADATA_KEY}
    for key, value in nested.items():
        lifted.setdefault(key, value)
    return lifted


def _unreadable(address: StoreAddress, error: Exception) -> InputError:
    """The error for a store its client could not open or read, quoting the first line of ``error``."""
    return InputError(
        f"The {STORE_KINDS[address.kind]} folder {_folder_name(address)} could not be read ({first_line(error)})."
    )


# --------------------------------------------------------------------------
# Chroma
# --------------------------------------------------------------------------


def _read_chroma(address: StoreAddress, columns: VectorColumns) -> VectorCorpus:
    """The collection read through Chroma in-process, :data:`CHROMA_PAGE_ROWS` rows per ``get``.

    No embedding function is attached, so Chroma never loads or downloads a model; telemetry is off.
    """
    chromadb = _import("chromadb", "chromadb", address)
    from chromadb.config import Settings

    try:
        client = chromadb.PersistentClient(path=str(address.path), settings=Settings(anonymized_telemetry=False))
        names = [collection.name for collection in client.list_collections()]
    except Exception as error:  # a damaged or newer store: Chroma's own, sqlite or OS errors
        raise _unreadable(address, error) from None
    if address.collection not in names:
        raise _no_collection(address, names)
    try:
        collection = client.get_collection(address.collection, embedding_function=None)
        total = collection.count()
    except Exception as error:  # as above
        raise _unreadable(address, error) from None
    if total == 0:
        raise _empty(address)
    table: _StoreTable | None = None
    offset = 0
    while True:
        try:
            got = collection.get(limit=CHROMA_PAGE_ROWS, offset=offset,
                                 include=["documents", "metadatas", "embeddings"])
        except Exception as error:  # as above
            raise _unreadable(address, error) from None
        vectors = got["embeddings"]
        n = len(got["ids"])
        if n == 0:
            break
        if table is None:  # the collection's size is known from its first vector
            dim = len(vectors[0])
            check_fits(total * (ROW_OVERHEAD_BYTES + 8 * dim), f"The {total} rows of the {address.label}")
            table = _StoreTable(dim)
        metadatas = got["metadatas"] or [None] * n
        documents = got["documents"] or [None] * n
        table.add([{**(metadata or {}), _CHROMA_TEXT: document} for metadata, document in zip(metadatas, documents)],
                  vectors)
        offset += n
        if n < CHROMA_PAGE_ROWS:
            break
    if table is None:
        raise _empty(address)
    text = columns.text if columns.text is not None else (_CHROMA_TEXT if table.has_text(_CHROMA_TEXT) else None)
    return table.corpus(VectorColumns(text=text, document=columns.document, page=columns.page), address.label,
                        vector_key="embeddings", own_text=_CHROMA_TEXT)


# --------------------------------------------------------------------------
# rows into a table
# --------------------------------------------------------------------------


class _StoreTable:
    """Points gathered page by page: their payload dicts, and their vectors in float32 pages."""

    def __init__(self, dim: int):
        self.dim = dim
        self.payloads: list[dict] = []
        self.pages: list[np.ndarray] = []
        self.missing: list[np.ndarray] = []
        self.keys: set[str] = set()

    def add(self, payloads: list[dict], vectors) -> None:
        """One page: each point's payload and vector (None or empty: no vector; another length: left out)."""
        missing = np.array([vector is None or len(vector) != self.dim for vector in vectors], dtype=bool)
        if not missing.any():  # the usual page: one conversion
            page = np.array(vectors, dtype=np.float32).reshape(len(payloads), self.dim)
        else:
            page = np.zeros((len(payloads), self.dim), dtype=np.float32)
            for row in np.flatnonzero(~missing):
                page[row] = vectors[row]
        for payload in payloads:
            self.keys.update(payload)
        self.payloads.extend(payloads)
        self.pages.append(page)
        self.missing.append(missing)

    def has_text(self, key: str) -> bool:
        """Whether any point holds a text under ``key``."""
        return any(isinstance(payload.get(key), str) and payload[key].strip() for payload in self.payloads)

    def corpus(self, columns: VectorColumns, source: str, *, vector_key: str, own_text: str | None = None
               ) -> VectorCorpus:
        """The points as :func:`read_vector_table` reads them; ``own_text`` is the store's own text key, offered
        only when a point holds one."""
        import pyarrow as pa

        # Sorted: Chroma returns each row's metadata keys in no fixed order, and messages list them.
        keys = sorted(key for key in self.keys if key != own_text or self.has_text(own_text))
        vector_key = _unused(vector_key, keys)
        resolved = resolve_columns([*keys, vector_key], VectorColumns(columns.text, vector_key, columns.document,
                                                                       columns.page), source)
        matrix = np.concatenate(self.pages) if len(self.pages) > 1 else self.pages[0]
        self.pages = []
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), self.dim,
                                                    mask=pa.array(np.concatenate(self.missing)))
        data = {resolved.vector: vectors}
        for role in ("text", "document", "page"):
            key = getattr(resolved, role)
            if key is not None:
                values = [payload.get(key) for payload in self.payloads]
                data[key] = _page_numbers(values) if role == "page" else _texts(values)
        self.payloads = []
        return read_vector_table(pa.table(data), resolved, source=source)


def _unused(name: str, keys: list[str]) -> str:
    """``name``, or ``name (store)`` when a payload key already has that name."""
    return name if name not in keys else f"{name} (store)"


def _texts(values: list):
    """Payload values as an Arrow string column: text as it is, None as null, anything else as its ``str``."""
    import pyarrow as pa

    return pa.array([value if value is None or isinstance(value, str) else str(value) for value in values],
                    type=pa.string())


def _page_numbers(values: list):
    """Payload values as an Arrow float column for the page checks: blanks null, words and booleans NaN."""
    import pyarrow as pa

    numbers = []
    for value in values:
        if value is None or (isinstance(value, str) and not value.strip()):
            numbers.append(None)
        elif isinstance(value, bool):  # a flag, not a page number
            numbers.append(float("nan"))
        else:
            try:
                numbers.append(float(value))
            except (TypeError, ValueError, OverflowError):  # a word, a list: not a page, said as such
                numbers.append(float("nan"))
    return pa.array(numbers, type=pa.float64())
