"""``faultdeck init`` and ``faultdeck completion``, run as a user runs them."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from faultdeck.config import Settings, load_settings
from tests.support.children import child_env

BIN = Path(sys.executable).parent
EXE = str(BIN / "faultdeck")
NEXT = [
    "faultdeck record runs/base.jsonl -- python agent.py",
    "pytest --block-network",
    "faultdeck rehearse runs/base.jsonl -- python agent.py",
]
KEYS = sorted(f.name for f in dataclasses.fields(Settings) if f.name not in ("root", "source"))


def run(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args], capture_output=True, text=True, cwd=cwd, env=child_env(**env), timeout=60
    )


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def uncommented(section: str) -> str:
    """The section with every commented ``key = value`` line made live."""
    return re.sub(r"^# (\w+ = )", r"\1", section, flags=re.M)


def test_init_in_an_empty_folder_writes_the_section_and_a_conftest(tmp_path: Path) -> None:
    done = run("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "pyproject.toml").read_text("utf-8")
    assert text.startswith("[tool.faultdeck]\n")
    assert tomllib.loads(text) == {"tool": {"faultdeck": {}}}
    settings = load_settings(tmp_path)
    assert settings == Settings(root=str(tmp_path), source=str(tmp_path / "pyproject.toml"))
    assert "def faultdeck_config():" in (tmp_path / "conftest.py").read_text("utf-8")
    assert "created pyproject.toml with [tool.faultdeck]" in done.stdout
    assert "wrote conftest.py" in done.stdout
    shown = [line.split("  ", 2)[1].strip() for line in done.stdout.splitlines()[-3:]]
    assert shown == NEXT


def test_the_section_names_every_key_with_its_default_and_a_comment(tmp_path: Path) -> None:
    run("init", cwd=tmp_path)
    section = (tmp_path / "pyproject.toml").read_text("utf-8")
    lines = [line for line in section.splitlines() if re.match(r"# \w+ = ", line)]
    assert sorted(line.split()[1] for line in lines) == KEYS
    assert all(" # " in line.split(" = ", 1)[1] for line in lines), lines
    # Made live, the section is one load_settings accepts, and the values it holds are the
    # defaults (cassette_dir, mode and max_age are unset by default: their lines show an
    # example).
    (tmp_path / "pyproject.toml").write_text(uncommented(section), "utf-8")
    live = load_settings(tmp_path)
    default = Settings(root=live.root, source=live.source)
    assert (live.cassette_dir, live.mode, live.max_age) == ("cassettes", "replay", "90d")
    assert dataclasses.replace(live, cassette_dir=None, mode=None, max_age=None) == default


def test_init_appends_to_a_pyproject_and_keeps_every_byte_of_it(tmp_path: Path) -> None:
    before = b'[project]\r\nname = "agent"\r\n\r\n[tool.ruff]\r\nline-length = 100'
    (tmp_path / "pyproject.toml").write_bytes(before)
    done = run("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    after = (tmp_path / "pyproject.toml").read_bytes()
    assert after.startswith(before + b"\r\n\r\n[tool.faultdeck]\r\n")
    assert b"\n" not in after.replace(b"\r\n", b"")  # the file's own line ends
    data = tomllib.loads(after.decode())
    assert data["project"] == {"name": "agent"}
    assert data["tool"] == {"ruff": {"line-length": 100}, "faultdeck": {}}
    assert load_settings(tmp_path).source == str(tmp_path / "pyproject.toml")
    assert "added [tool.faultdeck] to pyproject.toml" in done.stdout


@pytest.mark.parametrize(
    "pyproject",
    [
        '[project]\nname = "agent"\n\n[tool.faultdeck]\nmode = "once"\n',
        '[tool.faultdeck.normalizers]\nsearch = "agent.rules:search"\n',
        'tool.faultdeck.match = "strict"\n',
    ],
)
def test_a_pyproject_with_the_section_is_left_untouched(tmp_path: Path, pyproject: str) -> None:
    (tmp_path / "pyproject.toml").write_text(pyproject, "utf-8")
    done = run("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "pyproject.toml").read_text("utf-8") == pyproject
    assert "pyproject.toml has [tool.faultdeck] already: left untouched" in done.stdout


def test_an_existing_conftest_is_never_changed_and_the_snippet_is_printed(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("pytest_plugins = ['mine']\n", "utf-8")
    done = run("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "conftest.py").read_text("utf-8") == "pytest_plugins = ['mine']\n"
    assert "conftest.py exists: left untouched" in done.stdout
    snippet = done.stdout.split("paste this in:\n", 1)[1].split("\nnext:\n", 1)[0]
    assert snippet.strip().startswith("import pytest")
    namespace: dict[str, object] = {}
    exec(compile(snippet, "snippet", "exec"), namespace)
    assert callable(namespace["faultdeck_config"])


def test_running_init_again_changes_nothing(tmp_path: Path) -> None:
    run("init", cwd=tmp_path)
    first = files(tmp_path)
    done = run("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert files(tmp_path) == first


def test_init_dir_sets_up_another_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    done = run("init", "--dir", "project", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(files(project)) == ["conftest.py", "pyproject.toml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project"]


def test_the_written_conftest_configures_the_plugin(pytester: pytest.Pytester) -> None:
    run("init", cwd=pytester.path)
    pytester.makepyfile(
        """
        def test_defaults(faultdeck_config):
            assert faultdeck_config == {}
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    # Uncommenting a line of the fixture is what configures every deck in the folder.
    conftest = pytester.path / "conftest.py"
    text = conftest.read_text("utf-8")
    conftest.write_text(text.replace('# "mode": "once",', '"mode": "once",'), "utf-8")
    pytester.makepyfile(
        """
        def test_defaults(deck):
            assert deck.mode == "once"
            assert deck.call("tool", "t", {}, lambda: 1) == 1
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert list(pytester.path.glob("cassettes/*/test_defaults.jsonl"))


@pytest.mark.parametrize(
    ("pyproject", "says"),
    [
        (b"[project\n", "pyproject.toml is not valid TOML"),
        (b"name = '\xff'\n", "pyproject.toml is not valid TOML"),
        (b"tool = { ruff = {} }\n", "would not be valid TOML with [tool.faultdeck] appended"),
    ],
)
def test_a_bad_pyproject_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, pyproject: bytes, says: str
) -> None:
    (tmp_path / "pyproject.toml").write_bytes(pyproject)
    done = run("init", cwd=tmp_path)
    assert done.returncode == 2
    assert says in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert files(tmp_path) == {"pyproject.toml": pyproject}


def test_a_pyproject_that_is_not_a_file_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").mkdir()
    done = run("init", cwd=tmp_path)
    assert done.returncode == 2
    assert "pyproject.toml is not a file" in done.stderr
    assert done.stderr.count("\n") == 1
    assert files(tmp_path) == {}


def test_an_unreadable_pyproject_is_exit_2(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[project]\n", "utf-8")
    pyproject.chmod(0)
    # Root ignores permissions; without the capabilities that let it, it meets them too.
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]
    command = [*(drop if os.geteuid() == 0 else []), EXE, "init"]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=tmp_path, env=child_env(), timeout=60
        )
    finally:
        pyproject.chmod(0o644)
    assert done.returncode == 2
    assert "pyproject.toml: cannot read it" in done.stderr
    assert done.stderr.count("\n") == 1
    assert files(tmp_path) == {"pyproject.toml": b"[project]\n"}


def test_a_folder_that_does_not_exist_is_exit_2(tmp_path: Path) -> None:
    done = run("init", "--dir", "nowhere", cwd=tmp_path)
    assert done.returncode == 2
    assert "'nowhere' does not exist" in done.stderr
    assert done.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_clicks_script_for_the_shell(tmp_path: Path, shell: str) -> None:
    done = run("completion", shell, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    source = run(cwd=tmp_path, _FAULTDECK_COMPLETE=f"{shell}_source")
    assert done.stdout.strip() == source.stdout.strip()
    assert "_FAULTDECK_COMPLETE" in done.stdout


def test_completion_of_an_unknown_shell_is_exit_2(tmp_path: Path) -> None:
    done = run("completion", "tcsh", cwd=tmp_path)
    assert done.returncode == 2
    assert "'tcsh' is not one of" in done.stderr


def completions(words: str, cword: int, tmp_path: Path) -> set[str]:
    done = run(
        cwd=tmp_path, _FAULTDECK_COMPLETE="bash_complete", COMP_WORDS=words, COMP_CWORD=str(cword)
    )
    assert done.returncode == 0, done.stderr
    return {line.split(",", 1)[1] for line in done.stdout.splitlines()}


def test_the_console_script_completes_commands_and_arguments(tmp_path: Path) -> None:
    assert completions("faultdeck re", 1, tmp_path) == {
        "record",
        "redteam",
        "replay",
        "rehearse",
        "resume",
    }
    assert completions("faultdeck in", 1, tmp_path) == {"init"}
    assert completions("faultdeck completion ", 2, tmp_path) == {"bash", "zsh", "fish"}


def test_bash_completes_through_the_printed_script(tmp_path: Path) -> None:
    script = run("completion", "bash", cwd=tmp_path).stdout
    (tmp_path / "faultdeck.bash").write_text(script, "utf-8")
    line = (
        "source faultdeck.bash; COMP_WORDS=(faultdeck re); COMP_CWORD=1; "
        '_faultdeck_completion faultdeck; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    env = child_env(PATH=os.pathsep.join([str(BIN), os.environ["PATH"]]))
    done = subprocess.run(
        ["bash", "--norc", "-c", line],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == ["record", "redteam", "rehearse", "replay", "resume"]
