"""The repository's tooling: the package says it is typed, and the pre-commit hooks run."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

import faultdeck as fd
from tests.support import ROOT


def test_the_package_ships_its_types() -> None:
    assert resources.files(fd).joinpath("py.typed").is_file()


def hooks() -> list[tuple[str, str]]:
    """``(id, entry)`` of each hook in the pre-commit config, read without a YAML parser."""
    found: list[tuple[str, str]] = []
    hook = ""
    for line in (ROOT / ".pre-commit-config.yaml").read_text("utf-8").splitlines():
        key, _, value = line.strip().lstrip("- ").partition(": ")
        if key == "id":
            hook = value
        elif key == "entry":
            found.append((hook, value))
    return found


def test_every_pre_commit_hook_runs_a_tool_the_dev_install_provides() -> None:
    found = dict(hooks())
    assert sorted(found) == ["faultdeck-scan", "mypy", "ruff-check", "ruff-format"]
    bin_dir = Path(sys.executable).parent
    for hook, entry in found.items():
        tool = Path(entry.split()[0]).name
        assert (bin_dir / tool).exists() or shutil.which(tool), f"{hook}: no {tool}"


def test_the_pre_commit_config_is_valid_and_its_scan_hook_passes_on_this_repository() -> None:
    pre_commit = str(Path(sys.executable).parent / "pre-commit")
    config = str(ROOT / ".pre-commit-config.yaml")
    valid = subprocess.run(
        [pre_commit, "validate-config", config], capture_output=True, text=True, check=False
    )
    assert valid.returncode == 0, valid.stdout + valid.stderr
    scan = subprocess.run(
        [pre_commit, "run", "faultdeck-scan", "--all-files", "--config", config],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert scan.returncode == 0, scan.stdout + scan.stderr
    assert "Passed" in scan.stdout


def test_make_test_runs_the_lowest_and_the_highest_python_the_package_claims() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    pattern = r"Programming Language :: Python :: (3\.\d+)"
    claimed = sorted(
        (m.group(1) for c in project["classifiers"] if (m := re.fullmatch(pattern, c))),
        key=lambda v: tuple(map(int, v.split("."))),
    )
    assert project["requires-python"] == f">={claimed[0]}"
    makefile = (ROOT / "Makefile").read_text("utf-8")
    (line,) = [line for line in makefile.splitlines() if line.startswith("PYTHONS :=")]
    assert line.split(":=")[1].split() == [claimed[0], claimed[-1]]


def test_every_repository_file_the_docs_name_exists() -> None:
    docs = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    path = re.compile(
        r"(?<![\w/.])((?:src/)?(?:faultdeck|tests|benchmarks|examples)/[\w/]+\.\w+)(::)?"
    )
    missing = []
    for doc in docs:
        for match in path.finditer(doc.read_text("utf-8")):
            if match.group(2):  # a pytest node id in an example, not a file of ours
                continue
            named = match.group(1)
            if not any((ROOT / base / named).exists() for base in ("", "src")):
                missing.append(f"{doc.relative_to(ROOT)}: {named}")
    assert missing == []
