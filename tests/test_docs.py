"""The documentation names only code that exists: every module path, dotted name and import in docs/.

``./test.sh`` builds the site with ``mkdocs build --strict`` (broken links and
anchors, pages left out of the navigation); these tests check what MkDocs
cannot: that the code the pages name is still there under that name. The
changelog is left out: it names what was renamed or removed.
"""

from __future__ import annotations

import importlib
import re

import pytest

from tests.helpers import PROJECT

DOCS = PROJECT / "docs"
PAGES = sorted(path for path in DOCS.glob("*.md") if path.name != "changelog.md")
PATH_ROOTS = ("", "coverage_core", "benchmarks", "docs", "ui")
"""Where a module or page path in the docs may start: `stages/subjects.py` is under coverage_core/."""
REPORT_SECTIONS = {"calibration", "chunking", "config", "coverage", "traffic"}
"""Report fields (`calibration.reliable`) and JUnit names (`coverage.untested`) that share a module's name."""


def _inline_code(path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return re.findall(r"`([^`\n]+)`", text)


def _module_names() -> dict[str, list[str]]:
    """Every module of coverage_core and ui under each of its dotted tails (`verdicts`, `offtopic.screen`)."""
    names: dict[str, list[str]] = {}
    for top in ("coverage_core", "ui"):
        for path in (PROJECT / top).rglob("*.py"):
            parts = list(path.relative_to(PROJECT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            for start in range(len(parts)):
                names.setdefault(".".join(parts[start:]), []).append(".".join(parts))
    return names


def _resolves(name: str, modules: dict[str, list[str]]) -> bool:
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        for module in modules.get(".".join(parts[:split]), []):
            target = importlib.import_module(module)
            for attribute in parts[split:]:
                target = getattr(target, attribute, None)
                if target is None:
                    break
            else:
                return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_every_module_path_a_page_names_exists(page):
    paths = [
        path
        for code in _inline_code(page)
        for path in re.findall(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:py|md))\b", code)
    ]
    missing = [path for path in paths if not any((PROJECT / root / path).exists() for root in PATH_ROOTS)]
    assert not missing, f"{page.name} names files that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_every_dotted_code_name_a_page_names_resolves(page):
    modules = _module_names()
    names = {
        name
        for code in _inline_code(page)
        for name in re.findall(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", code)
        if not re.search(r"\.(py|md|json|csv|txt|xml|html|pdf|sqlite\w*|toml|yml|db)$", name)
    }
    checked = [
        name for name in names
        if name.split(".")[0] == "coverage_core"
        or (name.split(".")[0] in modules and name.split(".")[0] not in REPORT_SECTIONS)
    ]
    unresolved = [name for name in sorted(checked) if not _resolves(name.removeprefix("coverage_core."), modules)]
    assert not unresolved, f"{page.name} names code that does not exist: {unresolved}"


def test_the_python_example_imports():
    block = re.search(r"```python\n(.*?)```", (DOCS / "python.md").read_text(encoding="utf-8"), flags=re.S).group(1)
    imports = re.findall(r"^from (\S+) import (\w+)$", block, flags=re.M)
    assert imports
    for module, name in imports:
        assert hasattr(importlib.import_module(module), name), f"docs/python.md imports {name} from {module}"


def test_the_navigation_lists_every_page():
    config = (PROJECT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w-]+\.md)\s*$", config, flags=re.M))
    assert listed == {path.name for path in DOCS.glob("*.md")}
