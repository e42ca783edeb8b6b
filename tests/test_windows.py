"""Windows rules as pure functions, runnable on any OS (SPEC SH2, E1, E3; issue 7)."""

from __future__ import annotations

import pytest

from wave_bash.worker import (
    NoShellError,
    Shell,
    build_payload,
    final_cwd,
    find_git_bash,
    posix_to_windows_path,
    resolve_shell,
    usual_git_bash_locations,
    windows_to_posix_path,
)


@pytest.mark.parametrize(
    ("native", "posix"),
    [
        ("C:\\Users\\x", "C:/Users/x"),
        ("c:\\Users\\x\\", "c:/Users/x/"),
        ("C:\\Program Files\\Git\\bin", "C:/Program Files/Git/bin"),
        ("D:\\", "D:/"),
        ("\\\\server\\share\\dir", "//server/share/dir"),
        ("C:/already/forward", "C:/already/forward"),
        ("/tmp/posix", "/tmp/posix"),
    ],
)
def test_windows_to_posix_path(native: str, posix: str) -> None:
    assert windows_to_posix_path(native) == posix


@pytest.mark.parametrize(
    ("posix", "native"),
    [
        ("/c/Users/x", "C:\\Users\\x"),
        ("/c/Users/x/", "C:\\Users\\x"),
        ("/cygdrive/c/Users/x", "C:\\Users\\x"),
        ("/cygdrive/d/", "D:\\"),
        ("/c", "C:\\"),
        ("/c/", "C:\\"),
        ("/e/My Projects/app", "E:\\My Projects\\app"),
        ("C:/Users/x", "C:\\Users\\x"),
        ("c:/Users/x/", "C:\\Users\\x"),
        ("C:\\Users\\x", "C:\\Users\\x"),  # already native
        ("C:\\", "C:\\"),
        ("//server/share/dir", "\\\\server\\share\\dir"),
        ("/c/Users/x\n", "C:\\Users\\x"),  # as read from the pwd -P file
        ("/usr/bin", "/usr/bin"),  # inside Git's own tree: no drive to convert
    ],
)
def test_posix_to_windows_path(posix: str, native: str) -> None:
    assert posix_to_windows_path(posix) == native


def lookups(files: set[str], git: str | None = None):  # type: ignore[no-untyped-def]
    return {
        "which": lambda name, path: git if name == "git" else None,
        "is_file": files.__contains__,
    }


ENV = {"ProgramFiles": "C:\\Program Files", "ProgramFiles(x86)": "C:\\Program Files (x86)",
       "LOCALAPPDATA": "C:\\Users\\me\\AppData\\Local", "PATH": "C:\\Windows"}  # fmt: skip
STANDARD = "C:\\Program Files\\Git\\bin\\bash.exe"


def test_env_var_first() -> None:
    env = {**ENV, "WAVE_GIT_BASH_PATH": "D:\\tools\\bash.exe"}
    found = find_git_bash(
        env, **lookups({"D:\\tools\\bash.exe", STANDARD}, git="E:\\Git\\cmd\\git.exe")
    )
    assert found == "D:\\tools\\bash.exe"


def test_env_var_pointing_nowhere_is_a_clear_error() -> None:
    env = {**ENV, "WAVE_GIT_BASH_PATH": "D:\\missing\\bash.exe"}
    with pytest.raises(NoShellError, match=r"WAVE_GIT_BASH_PATH is set to D:\\missing\\bash.exe"):
        find_git_bash(env, **lookups({STANDARD}))


def test_derived_from_git_on_path() -> None:
    derived = "E:\\Tools\\Git\\bin\\bash.exe"
    found = find_git_bash(ENV, **lookups({derived, STANDARD}, git="E:\\Tools\\Git\\cmd\\git.exe"))
    assert found == derived  # <git.exe>/../../bin/bash.exe, before the usual folders


def test_git_on_path_without_bash_falls_to_usual_folders() -> None:
    assert find_git_bash(ENV, **lookups({STANDARD}, git="E:\\odd\\git.exe")) == STANDARD


@pytest.mark.parametrize(
    "where",
    ["C:\\Program Files\\Git\\bin\\bash.exe", "C:\\Program Files (x86)\\Git\\bin\\bash.exe",
     "C:\\Users\\me\\AppData\\Local\\Programs\\Git\\bin\\bash.exe"],
)  # fmt: skip
def test_usual_folders(where: str) -> None:
    assert find_git_bash(ENV, **lookups({where})) == where


def test_usual_folders_without_environment() -> None:
    assert usual_git_bash_locations({}) == [STANDARD, "C:\\Program Files (x86)\\Git\\bin\\bash.exe"]


def test_not_found_never_cmd_exe() -> None:
    with pytest.raises(NoShellError) as err:
        find_git_bash(ENV, **lookups({"C:\\Windows\\System32\\cmd.exe"}))
    message = str(err.value)
    assert "Install Git for Windows" in message and "WAVE_GIT_BASH_PATH" in message
    assert "cmd.exe" in message  # says it will not use it


def test_resolve_shell_on_windows_is_git_bash() -> None:
    env = {**ENV, "SHELL": "/usr/bin/zsh"}
    shell = resolve_shell(
        env, which=lambda n, p: None, is_executable={STANDARD}.__contains__, platform="win32"
    )
    assert shell == Shell(STANDARD, "bash")
    with pytest.raises(NoShellError, match="Install Git for Windows"):
        resolve_shell(
            env, which=lambda n, p: None, is_executable=set().__contains__, platform="win32"
        )


def test_cwd_capture_path_is_converted_for_git_bash() -> None:
    payload = build_payload("cd sub", "C:\\Users\\me\\state\\tasks\\ab12.exit", windows=True)
    assert "C:/Users/me/state/tasks/ab12.exit" in payload and "C:\\" not in payload


def test_pwd_output_converted_before_the_existence_check() -> None:
    seen: list[str] = []

    def isdir(path: str) -> bool:
        seen.append(path)
        return path == "C:\\Users\\me\\project\\sub"

    final = final_cwd(
        "/c/Users/me/project/sub", "C:\\Users\\me\\project", windows=True, isdir=isdir,
        realpath=lambda p: p,
    )  # fmt: skip
    assert final == "C:\\Users\\me\\project\\sub"
    assert seen == ["C:\\Users\\me\\project\\sub"]  # never checked as C:\c\Users\...


def test_cwd_unchanged_or_failed_gives_nothing(caplog: pytest.LogCaptureFixture) -> None:
    same = final_cwd(
        "/c/Users/me/project", "c:\\users\\me\\project", windows=True, isdir=lambda p: True,
        realpath=lambda p: p,
    )  # fmt: skip
    assert same is None
    caplog.set_level("DEBUG")
    gone = final_cwd(
        "/c/deleted/dir", "C:\\x", windows=True, isdir=lambda p: False, realpath=lambda p: p
    )
    assert gone is None
    assert final_cwd(None, "C:\\x", windows=True) is None  # nothing captured
    assert all(r.levelname == "DEBUG" for r in caplog.records)  # never a warning
