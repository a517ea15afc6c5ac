"""One get-or-compute helper for everything the dashboard keeps between reruns.

``memo(slot, key, compute)`` returns the value ``slot`` holds for ``key``,
or computes it with ``compute()``, stores it and returns it. Keys are frozen
dataclasses with named fields (:class:`ui.engine.StageKey`: the key of what
a value is computed from and its settings by name), never tuples read by
position or object identities, so what a cached value depends on is
written down where the key is made.

A slot is anything with ``get(key, missing)`` and ``put(key, value)``:

* :class:`Recent` keeps the last few values (the tuning cache: moving K
  back and forth is instant);
* ``ui.state.SessionSlot`` keeps one value in a session-state key (a
  page's result; a new key replaces it).

No Streamlit here: the benchmark and the engine use it too.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
MISSING = object()


class Slot(Protocol):
    def get(self, key: Any, missing: Any = MISSING) -> Any: ...

    def put(self, key: Any, value: Any) -> None: ...


def check_key(key: Any) -> Any:
    """``key`` if it is a frozen dataclass instance (hashable, with named fields); else TypeError."""
    if not (dataclasses.is_dataclass(key) and not isinstance(key, type) and key.__dataclass_params__.frozen):
        raise TypeError(f"memo keys are frozen dataclasses with named fields, not {type(key).__name__}")
    return key


def memo(slot: Slot, key: Any, compute: Callable[[], T]) -> T:
    """The value ``slot`` holds for ``key``, computed by ``compute()`` and stored when it holds none."""
    check_key(key)
    found = slot.get(key, MISSING)
    if found is MISSING:
        found = compute()
        slot.put(key, found)
    return found


@dataclass
class Recent:
    """The last ``keep`` values by key, most recently used last."""

    keep: int = 4
    entries: OrderedDict = field(default_factory=OrderedDict)

    def get(self, key: Any, missing: Any = MISSING) -> Any:
        if key not in self.entries:
            return missing
        self.entries.move_to_end(key)
        return self.entries[key]

    def put(self, key: Any, value: Any) -> None:
        self.entries[key] = value
        self.entries.move_to_end(key)
        while len(self.entries) > self.keep:
            self.entries.popitem(last=False)

    def __contains__(self, key: Any) -> bool:
        return key in self.entries

    def items(self):
        return self.entries.items()

    def values(self):
        return self.entries.values()

    def __len__(self) -> int:
        return len(self.entries)

    def last(self) -> tuple[Any, Any] | None:
        """The most recently stored (key, value), or None."""
        if not self.entries:
            return None
        key = next(reversed(self.entries))
        return key, self.entries[key]
