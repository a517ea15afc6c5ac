"""Where benchmarks and evaluations find the shared real data, and a clear stop without it.

The real data (55 Wikipedia articles with human-written questions, real PDFs)
lives beside the project in ``../shared/data`` on developer and CI machines;
a plain clone has no such folder. Tests never need it (they use
``tests/fixtures``); these scripts do, so they say so in one sentence instead
of failing on a missing file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
# COVERAGE_SHARED_DATA points elsewhere when the data is not beside the project.
SHARED_DATA = Path(os.environ.get("COVERAGE_SHARED_DATA", PROJECT.parent / "shared" / "data"))
WIKI_QA = SHARED_DATA / "wiki-qa"
PDFS = SHARED_DATA / "pdfs"


def require(path: Path) -> Path:
    """``path`` if it exists; otherwise stop the script with one sentence saying what is missing."""
    if not path.exists():
        sys.exit(
            f"{path} is missing: this script reads the shared real data (../shared/data beside the "
            "project, see its README); put that folder there or set COVERAGE_SHARED_DATA to where it is."
        )
    return path
