"""The README's commands stay true: what a new user copies must work as written.

The README is the front page; the documentation is in docs/ (``tests/test_docs.py``)."""

from __future__ import annotations

import re
import shlex
import subprocess

from tests.helpers import PROJECT

README = (PROJECT / "README.md").read_text(encoding="utf-8")


def _code_blocks() -> list[str]:
    return re.findall(r"```[a-z]*\n(.*?)```", README, flags=re.S)


def test_the_two_commands_are_the_scripts_and_ci_runs_the_test_command():
    blocks = [block.strip() for block in _code_blocks()]
    assert "./run.sh" in blocks and "./test.sh" in blocks
    ci = (PROJECT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^bash test\.sh\b", ci, flags=re.M), ".ci/run must run the README's test command"


def test_the_example_command_leaves_the_checkout_clean():
    commands = [block for block in _code_blocks() if "coverage_core analyze" in block and "examples/wiki-qa" in block]
    assert commands, "the README shows the example on the command line"
    argv = shlex.split(commands[0].replace("\\\n", " "))
    written = [argv[i + 1] for i, arg in enumerate(argv) if arg in ("--out", "--junit")]
    assert written
    for path in written:
        ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=PROJECT)
        assert ignored.returncode == 0, f"the README example writes {path}, which git would show as untracked"


def test_the_readme_is_a_front_page_whose_links_lead_somewhere():
    assert len(README.splitlines()) <= 200, "the README is the front page: the rest goes to docs/"
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    assert "docs/images/results.png" in targets and "docs/cli.md" in targets
    missing = [target for target in targets if "://" not in target and not (PROJECT / target).is_file()]
    assert not missing, f"the README links to files that do not exist: {missing}"


def test_the_layout_names_every_module():
    layout = (PROJECT / "docs" / "layout.md").read_text(encoding="utf-8")
    block = re.search(r"```\n(.*?)```", layout, flags=re.S).group(1)
    listed = [line.split()[0] for line in block.splitlines() if line.strip()]
    modules = ["app.py"] + [
        str(path.relative_to(PROJECT / top))
        for top in ("coverage_core", "ui", "pages")
        for path in sorted((PROJECT / top).rglob("*.py"))
    ]
    missing = [name for name in modules if name not in listed]
    assert not missing, f"docs/layout.md does not list {missing}"
    stale = [name for name in listed if name.endswith(".py") and name not in modules]
    assert not stale, f"docs/layout.md lists modules that do not exist: {stale}"


def test_the_readme_says_how_to_choose_the_port_and_run_sh_passes_it_on_last():
    assert "./run.sh --server.port 8600" in README
    script = (PROJECT / "run.sh").read_text(encoding="utf-8")
    assert "./run.sh --server.port 8600" in script  # and says so when it starts
    start = [line for line in script.splitlines() if "streamlit run" in line and not line.lstrip().startswith("#")][-1]
    # Streamlit takes the last --server.port given: the user's, after the default.
    assert start.rstrip().endswith('"$@"') and start.index("--server.port=8501") < start.index('"$@"')
