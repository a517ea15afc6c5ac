"""Reading a file a user named, without trusting what it is.

A path given on the command line may name a device (``/dev/zero`` never
ends), a FIFO with no writer (a read blocks forever), a folder or a file far
larger than anything the product can hold. :func:`read_user_file` reads
regular files only, checks the size before reading and never reads more than
the limit, so none of those can hang the run or exhaust memory.

Paths the user names for writing are checked before any work as well:
:func:`check_output_file` and :func:`check_output_folder` refuse a path that
cannot be written (a missing folder, a folder, a device), and
:func:`refuse_overlaps` an output that is also an input or another output
(compared resolved, through symlinks and hard links), so a slip of the
keyboard never overwrites the question file or a document.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Sequence

from coverage_core.errors import InputError

__all__ = [
    "DEFAULT_MAX_FILE_BYTES", "check_output_file", "check_output_folder", "check_regular_file",
    "read_user_file", "refuse_overlaps",
]

DEFAULT_MAX_FILE_BYTES = 200 * 1024 * 1024
"""Largest single input file read whole (questions, query logs): 200 MB."""


def _size_words(n_bytes: int) -> str:
    if n_bytes >= 1024**3:
        return f"{n_bytes / 1024**3:.1f} GB"
    if n_bytes >= 1024**2:
        return f"{n_bytes / 1024**2:.0f} MB"
    return f"{max(1, n_bytes // 1024)} KB"


def check_regular_file(path: str | Path, what: str = "file", max_bytes: int | None = None) -> os.stat_result:
    """``os.stat`` of ``path`` when it is a regular file (symlinks followed) of at most ``max_bytes`` (None: any
    size); InputError otherwise.

    Uses ``stat`` rather than opening the file, so a FIFO is refused without blocking; for a reader that opens
    the file itself.
    """
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"The {what} {path} does not exist; check the path.") from None
    except OSError as error:
        raise InputError(f"The {what} {path} cannot be read ({error.strerror or error}); check the path "
                         "and its permissions.") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"The {what} {path} is a folder; give a file.")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"The {what} {path} is not a regular file (a device, pipe or socket); "
                         "save its content to a file and give that.")
    if max_bytes is not None and info.st_size > max_bytes:
        raise InputError(f"The {what} {path.name} is {_size_words(info.st_size)}, over the "
                         f"{_size_words(max_bytes)} limit; split it or keep only what you need.")
    return info


def read_user_file(path: str | Path, what: str = "file", max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them; InputError otherwise.

    The size is checked before reading and again while reading (a file that
    grows meanwhile is cut off at the limit and refused, not read on).
    """
    check_regular_file(path, what, max_bytes)
    limit_words = _size_words(max_bytes)
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise InputError(f"The {what} {path} cannot be read ({error.strerror or error}); check the path "
                         "and its permissions.") from None
    if len(data) > max_bytes:
        raise InputError(f"The {what} {Path(path).name} grew past the {limit_words} limit while it was "
                         "read; give a file that is not being written to.")
    return data


def _where(path: Path) -> Path:
    """``path``'s folder as it will be opened (the current folder for a bare name)."""
    return path.parent if str(path.parent) else Path(".")


def check_output_file(path: str | Path, flag: str) -> None:
    """InputError unless a file can be written at ``path``: its folder exists and is writable, and ``path`` is not
    a folder, a device or a pipe (writing to a FIFO with no reader blocks forever).

    Run before any work, so a typo in an output path does not cost a whole analysis. ``os.devnull`` is allowed:
    a CI job may want the exit code only.
    """
    path = Path(path)
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):  # the folder is checked below
        info = None
    except OSError as error:
        raise InputError(f"{flag} {path} cannot be used ({error.strerror or error}); name another file.") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{flag} {path} is a folder; name a file to write.")
        if not stat.S_ISREG(info.st_mode) and os.path.realpath(path) != os.path.realpath(os.devnull):
            raise InputError(f"{flag} {path} is not a regular file (a device, pipe or socket); name a file to write.")
        if not os.access(path, os.W_OK):
            raise InputError(f"{flag} {path} cannot be written (permission denied); name another file.")
        return
    folder = _where(path)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise InputError(f"{flag} {path} cannot be written: the folder {folder} {what}; create it or name "
                         "another path.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path} cannot be written: the folder {folder} is not writable; name another path.")


def check_output_folder(path: str | Path, flag: str) -> None:
    """InputError unless the folder ``path`` exists or can be created (its nearest existing parent is a
    writable folder); what may already be in it is the writer's to check."""
    folder = Path(os.path.abspath(path))
    if folder.exists():
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(f"{flag} {path} is not writable; name another folder.")
        return
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{flag} {path} cannot be created: {parent} is a file; name another folder.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path} cannot be created: {parent} is not writable; name another folder.")


def _identity(path: str | Path) -> tuple[str, tuple[int, int] | None]:
    """The resolved path (symlinks followed) and, for an existing file, its device and inode (hard links)."""
    real = os.path.realpath(path)
    try:
        info = os.stat(real)
    except OSError:
        return real, None
    return real, (info.st_dev, info.st_ino)


_MAX_LISTED = 200_000
"""Files of input folders compared with the outputs at most: a folder holding more (``--docs /``) must not
make the check itself run for minutes; the readers refuse such folders anyway."""


def _input_files(flag: str, path: str | Path, suffixes: Sequence[str] | None) -> list[tuple[str, str, bool]]:
    """``(flag, file, named)`` for an input path: the path itself (``named``), and when it is a folder every file
    under it (with one of ``suffixes``, None: any), through symlinked files and folders as a reader may go."""
    found = [(flag, str(path), True)]
    if not os.path.isdir(path):
        return found
    seen: set[tuple[int, int]] = set()
    for root, folders, names in os.walk(path, followlinks=True):
        try:
            info = os.stat(root)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen:  # a link back up the tree: walked already
            folders[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        found.extend((flag, os.path.join(root, name), False) for name in names
                     if suffixes is None or os.path.splitext(name)[1].lower() in suffixes)
        if len(found) > _MAX_LISTED:
            break
    return found


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def refuse_overlaps(
    inputs: Sequence[tuple[str, str | Path]],
    outputs: Sequence[tuple[str, str | Path]],
    output_folders: Sequence[tuple[str, str | Path]] = (),
    read_suffixes: dict[str, Sequence[str]] | None = None,
) -> None:
    """InputError when an output would overwrite an input or another output.

    ``inputs``, ``outputs`` and ``output_folders`` are ``(flag, path)`` pairs; an input folder stands for every
    file under it (only those ending in ``read_suffixes[flag]`` when given: the files its reader reads), and an
    output folder for every file in it. Paths are compared resolved (symlinks followed) and by inode (hard
    links), before anything is read or written.
    """
    suffixes = read_suffixes or {}
    files = [(flag, name, named, *_identity(name))
             for flag, path in inputs for flag, name, named in _input_files(flag, path, suffixes.get(flag))]
    written: list[tuple[str, str, bool, str, tuple[int, int] | None]] = []
    for flag, path in outputs:
        real, inode = _identity(path)
        for other_flag, other, named, other_real, other_inode in [*written, *files]:
            if real != other_real and (inode is None or inode != other_inode):
                continue
            if any(other_flag == f for f, *_ in written):
                raise InputError(f"{flag} {path} is also the {other_flag} file, so one would overwrite the other; "
                                 f"name different files for {other_flag} and {flag}.")
            what = f"the {other_flag} file" if named else f"{other}, read through {other_flag}"
            raise InputError(f"{flag} {path} is also {what}, so writing it would destroy that input; name another "
                             f"file for {flag}.")
        written.append((flag, str(path), True, real, inode))
    for flag, folder in output_folders:
        real_folder = os.path.realpath(folder)
        for other_flag, other, _, other_real, _ in [*written, *files]:
            if _inside(other_real, real_folder):
                raise InputError(f"{flag} {folder} would hold {other} ({other_flag}), which saving the analysis "
                                 f"could overwrite; name another folder for {flag}.")
