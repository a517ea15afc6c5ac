"""The memory any file read from a user may take: what the machine and its container still allow.

Sizes a file declares are compared with :func:`memory_budget` before anything of that size is allocated
(:func:`check_fits`), so a hostile or oversized file is one sentence, not an exhausted server.
"""

from __future__ import annotations

import os
from pathlib import Path

from coverage_core.errors import InputError

__all__ = [
    "FALLBACK_MEMORY_BYTES", "MEMORY_FRACTION", "READ_COPIES", "available_memory", "check_fits", "memory_budget",
    "size_words",
]

MEMORY_FRACTION = 0.5
"""Share of the memory available now that one file read from a user may take (the rest keeps the server up)."""
FALLBACK_MEMORY_BYTES = 4 * 1024**3
"""The budget's base when the machine's memory cannot be read (not Linux, no ``sysconf``)."""
READ_COPIES = 3
"""Times a vector is held while read: the file's bytes, the Arrow column and the float32 matrix."""


def size_words(n_bytes: int | float) -> str:
    """``1.5 GB``, ``300 MB``, ``12 KB``: a size as a message gives it."""
    if n_bytes >= 1024**3:
        return f"{n_bytes / 1024**3:.1f} GB"
    if n_bytes >= 1024**2:
        return f"{n_bytes / 1024**2:.0f} MB"
    return f"{max(1, int(n_bytes) // 1024)} KB"


def _read_number(path: str, prefix: str = "") -> int | None:
    """The number in ``path`` (after ``prefix`` on its line, in kB when the line says so), or None."""
    try:
        lines = Path(path).read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        if line.startswith(prefix):
            words = line[len(prefix):].split()
            if words and words[0].isdigit():
                return int(words[0]) * (1024 if words[1:2] == ["kB"] else 1)
    return None


def available_memory() -> int | None:
    """Bytes of memory this process may still take: the least of what the machine has available and what its
    container (cgroup) still allows; None when neither can be read."""
    known = []
    available = _read_number("/proc/meminfo", "MemAvailable:")
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            available = None
    if available is not None:
        known.append(available)
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit, used = _read_number(limit_file), _read_number(usage_file)
        if limit is not None and used is not None and limit < 2**60:  # "max" or v1's huge number: no limit
            known.append(max(0, limit - used))
    return min(known) if known else None


def memory_budget() -> int:
    """Bytes one file read from a user may take: :data:`MEMORY_FRACTION` of :func:`available_memory`."""
    available = available_memory()
    return int(MEMORY_FRACTION * (available if available is not None else FALLBACK_MEMORY_BYTES))


def check_fits(n_bytes: int | float, what: str, budget: int | None = None) -> None:
    """InputError when ``what`` (its name in the message) would take more than ``budget`` bytes of memory
    (default :func:`memory_budget`)."""
    budget = memory_budget() if budget is None else budget
    if n_bytes > budget:
        raise InputError(
            f"{what} would need about {size_words(n_bytes)} of memory, more than the {size_words(budget)} this "
            "server can spare; use a smaller file or a machine with more memory."
        )
