"""The MCP server through the SDK's real stdio client (SPEC I3, issue 4)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import stat
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import mcp.types as types
from conftest import REPO, wait_until
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from wave_bash.api import Client, texts, tool_definitions
from wave_bash.api.mcp_compat import MCP_V1


@contextlib.asynccontextmanager
async def mcp_client(
    state_dir: Path,
    *args: str,
    env: dict[str, str] | None = None,
    errlog: Any = None,
    elicitation: Any = None,
    initialized: list[Any] | None = None,
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "wave_bash.api.cli", "mcp", *args],
        env={"WAVE_STATE_DIR": str(state_dir), **(env or {})},
        cwd=str(REPO),
    )
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as streams,
        ClientSession(*streams, elicitation_callback=elicitation) as session,
    ):
        answer = await session.initialize()
        if initialized is not None:
            initialized.append(answer)
        yield session


def run(
    state_dir: Path, scenario: Callable[[ClientSession], Awaitable[Any]], *args: str, **kw: Any
) -> Any:
    async def go() -> Any:
        async with mcp_client(state_dir, *args, **kw) as session:
            return await asyncio.wait_for(scenario(session), timeout=60)

    return asyncio.run(go())


def text(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


# The SDK's 1.x models name their fields as on the wire (isError), 2.x in snake_case.
def is_error(result: types.CallToolResult) -> bool:
    return bool(getattr(result, "isError" if MCP_V1 else "is_error"))


def structured(result: types.CallToolResult) -> Any:
    return getattr(result, "structuredContent" if MCP_V1 else "structured_content")


def input_schema(tool: types.Tool) -> Any:
    return getattr(tool, "inputSchema" if MCP_V1 else "input_schema")


def test_tools_and_schemas_are_the_api_definitions(state_dir: Path) -> None:
    listed = run(state_dir, lambda s: s.list_tools(), "--session", "t")
    ours = {t["name"]: t for t in tool_definitions("mcp")}
    assert [t.name for t in listed.tools] == ["Bash", "TaskOutput", "TaskStop", "TaskInput"]
    for tool in listed.tools:
        assert tool.description == ours[tool.name]["description"]
        assert input_schema(tool) == ours[tool.name]["inputSchema"]
    timeout = input_schema(listed.tools[0])["properties"]["timeout"]
    assert timeout["type"] == "number" and "maximum" not in timeout
    assert input_schema(listed.tools[0])["properties"]["run_in_background"]["type"] == "boolean"


def test_the_server_names_itself_and_its_version(state_dir: Path) -> None:
    """`serverInfo.version` was empty (a trial)."""
    initialized: list[Any] = []
    run(state_dir, lambda s: s.send_ping(), "--session", "t", initialized=initialized)
    info = getattr(initialized[0], "serverInfo" if MCP_V1 else "server_info")
    assert (info.name, info.version) == ("wave-bash", version("wave-bash"))


def test_a_state_dir_whose_path_is_not_utf8_is_answered(tmp_path: Path) -> None:
    """The paths of its logs hold bytes that are no UTF-8, which the SDK's JSON refuses:
    it dropped the answer unsaid, and the host waited for ever (a review). They come
    written with backslash escapes."""
    state = tmp_path / os.fsdecode(b"st\xff")

    async def scenario(s: ClientSession) -> list[types.CallToolResult]:
        ran = await asyncio.wait_for(s.call_tool("Bash", {"command": "echo hi"}), 20)
        started = await asyncio.wait_for(
            s.call_tool("Bash", {"command": "echo there", "run_in_background": True}), 20
        )
        task_id = structured(started)["backgroundTaskId"]
        read = await asyncio.wait_for(s.call_tool("TaskOutput", {"task_id": task_id}), 20)
        return [ran, started, read]

    ran, started, read = run(state, scenario, "--session", "t")
    assert text(ran) == "hi" and "st\\xff" in structured(ran)["outputPath"]
    assert "st\\xff" in text(started)
    assert "there" in text(read) and not is_error(read)
    Client(state_dir=state).shutdown()


def test_output_and_failure(state_dir: Path) -> None:
    async def scenario(s: ClientSession) -> tuple[types.CallToolResult, types.CallToolResult]:
        return (
            await s.call_tool("Bash", {"command": "echo hello; echo oops >&2"}),
            await s.call_tool("Bash", {"command": "echo bad; exit 3"}),
        )

    ok, bad = run(state_dir, scenario, "--session", "t")
    assert not is_error(ok) and text(ok) == "hello\noops"
    data = structured(ok)
    assert data["exitCode"] == 0 and data["message"] == "hello\noops" and "stdout" not in data
    assert is_error(bad) and text(bad) == "bad\nExit code 3"
    assert structured(bad)["success"] is False


def test_a_command_that_prints_nothing_says_so(state_dir: Path) -> None:
    """Its text block was empty, which a host passing it on to a model's API gets
    refused ("text content blocks must be non-empty"): a trial. So is one of blanks alone
    ("must contain non-whitespace text"; claude-code#23440): a helper's trial."""
    commands = ("true", "printf '\\n\\n'", "printf '\\n\\n   \\n\\t\\n'")

    async def scenario(s: ClientSession) -> list[types.CallToolResult]:
        return [await s.call_tool("Bash", {"command": c}) for c in commands]

    for result, command in zip(run(state_dir, scenario, "--session", "t"), commands, strict=True):
        assert not is_error(result) and text(result) == "(no output)", command
        assert structured(result)["message"].strip() == ""


def test_a_command_that_prints_nothing_says_so_before_its_notices(state_dir: Path) -> None:
    """`true` followed by a notice read as if the notice were what `true` printed (a
    trial): its text says `(no output)` first."""
    ended = Client(state_dir=state_dir, session="quiet").bash("exit 3", run_in_background=True)
    Client(state_dir=state_dir).wait(ended.background_task_id or "", timeout=10_000)

    async def scenario(s: ClientSession) -> types.CallToolResult:
        return await s.call_tool("Bash", {"command": "true"})

    said = text(run(state_dir, scenario, "--session", "quiet"))
    assert said.startswith("(no output)\n\nBackground command ") and "exit code 3" in said


def test_a_result_carries_a_bounded_number_of_notices(state_dir: Path) -> None:
    """600 tasks that ended while no server ran made one result of 120,000 characters
    (a helper's trial): a result carries the oldest 20, says how many more wait, and the
    next results carry those."""
    many = Client(state_dir=state_dir, session="many")
    ids = [
        many.bash(f"exit {i % 3}", run_in_background=True).background_task_id or ""
        for i in range(25)
    ]
    for task_id in ids:
        many.wait(task_id, timeout=10_000)

    async def scenario(s: ClientSession) -> list[str]:
        return [text(await s.call_tool("Bash", {"command": "true"})) for _ in range(3)]

    first, second, third = run(state_dir, scenario, "--session", "many")
    said = [line for line in first.splitlines() if line.startswith("Background command")]
    assert len(said) == 20 and first.endswith(
        "5 more background tasks ended; their notices come with the next results"
    )
    rest = [line for line in second.splitlines() if line.startswith("Background command")]
    assert len(rest) == 5 and "more background" not in second and third == "(no output)"
    shown = {line.split("(ID: ")[1].split(")")[0] for line in said + rest}
    assert shown == set(ids)


def test_progress_during_a_loop(state_dir: Path) -> None:
    seen: list[tuple[float, float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((time.monotonic(), progress, message))

    async def scenario(s: ClientSession) -> types.CallToolResult:
        return await s.call_tool(
            "Bash",
            {"command": "for i in 1 2 3 4; do echo step $i; sleep 0.8; done"},
            progress_callback=on_progress,
        )

    result = run(state_dir, scenario, "--session", "t")
    assert text(result).endswith("step 4")
    assert len(seen) >= 2
    assert [p for _, p, _ in seen] == sorted({p for _, p, _ in seen})  # strictly increasing
    assert all(b[0] - a[0] >= 0.9 for a, b in itertools.pairwise(seen))  # ≤ 1 per second
    last = seen[-1][2] or ""
    assert last.startswith("step") and len(last.splitlines()) <= 3  # shortResult


def test_timeout_moves_to_background_then_task_output_waits(state_dir: Path) -> None:
    async def scenario(s: ClientSession) -> tuple[types.CallToolResult, types.CallToolResult]:
        first = await s.call_tool(
            "Bash", {"command": "echo begin; sleep 1.5; echo finished", "timeout": 300}
        )
        tid = structured(first)["backgroundTaskId"]
        rest = await s.call_tool("TaskOutput", {"task_id": tid, "timeout": 20000})
        return first, rest

    first, rest = run(state_dir, scenario, "--session", "t")
    data = structured(first)
    assert not is_error(first) and data["assistantAutoBackgrounded"] is True
    assert text(first) == texts.auto_backgrounded_text(
        data["backgroundTaskId"], data["outputPath"], 300
    )
    assert "timed out" not in text(first)
    assert not is_error(rest) and structured(rest)["status"] == "completed"
    assert "begin\nfinished" in text(rest)


def test_bad_input_and_unknown_task(state_dir: Path) -> None:
    async def scenario(s: ClientSession) -> list[types.CallToolResult]:
        out = [
            await s.call_tool("Bash", {"command": "echo x", "timeout": bad})
            for bad in ("5000", True, -1)
        ]
        out.append(await s.call_tool("TaskStop", {"task_id": "nosuch"}))
        out.append(await s.call_tool("KillBash", {"shell_id": "nosuch2"}))
        out.append(await s.call_tool("Bash", {"command": "echo big", "timeout": 900000}))
        return out

    *bad, unknown, alias, big = run(state_dir, scenario, "--session", "t")
    for result in bad:
        assert is_error(result)
        assert "timeout must be a non-negative number of milliseconds" in text(result)
        assert "600000" not in text(result)
    assert is_error(unknown) and text(unknown) == "No task found with ID: nosuch"
    for result in [*bad, unknown]:  # (in the structured content too: a trial's host showed
        assert structured(result) == {"success": False, "error": text(result)}  # none)
    assert is_error(alias) and text(alias) == "No task found with ID: nosuch2"
    assert not is_error(big) and text(big) == "big"
    assert len(Client(state_dir=state_dir, session="t").tasks()) == 1  # bad input ran nothing


def test_interactive_prompt_answered_with_task_input(state_dir: Path) -> None:
    """Issue 16 through the SDK client: Bash with interactive=true returns at the prompt,
    TaskInput answers it; TaskInput to a task that is not interactive is an error."""

    async def scenario(s: ClientSession) -> list[types.CallToolResult]:
        asked = await s.call_tool(
            "Bash", {"command": "read -p 'Proceed? [y/N] ' a; echo \"answer: $a\"",
                     "interactive": True, "timeout": 60000},
        )  # fmt: skip
        task_id = structured(asked)["backgroundTaskId"]
        answered = await s.call_tool("TaskInput", {"task_id": task_id, "input": "y\n"})
        plain = await s.call_tool("Bash", {"command": "sleep 30", "run_in_background": True})
        refused = await s.call_tool(
            "TaskInput", {"task_id": structured(plain)["backgroundTaskId"], "input": "y\n"}
        )
        await s.call_tool("TaskStop", {"task_id": structured(plain)["backgroundTaskId"]})
        return [asked, answered, refused]

    asked, answered, refused = run(state_dir, scenario, "--session", "t")
    data = structured(asked)
    assert not is_error(asked) and data["waitingForInput"] is True and data["success"] is True
    assert text(asked).startswith("Proceed? [y/N] \nCommand is waiting for input (ID: ")
    assert not is_error(answered) and structured(answered)["status"] == "completed"
    assert text(answered) == "Status: completed (exit code 0)\ny\nanswer: y"
    assert is_error(refused) and "is not interactive" in text(refused)


def test_permission_deny_and_ask_through_mcp(state_dir: Path, tmp_path: Path) -> None:
    """Issue 17 through the SDK client: deny names the rule; ask becomes an elicitation
    where the client supports it (accepted: runs; declined: refused), otherwise a refusal
    that says how to allow it."""
    rules = tmp_path / "rules.toml"
    rules.write_text('allow = ["Bash(echo *)"]\nask = ["Bash(touch *)"]\ndeny = ["Bash(rm *)"]\n')
    work = tmp_path / "work"
    work.mkdir()
    asked: list[str] = []
    answers = iter([True, False])

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        if next(answers):
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    async def scenario(s: ClientSession) -> list[types.CallToolResult]:
        return [
            await s.call_tool("Bash", {"command": f"rm -rf {work}"}),
            await s.call_tool("Bash", {"command": f"touch {work}/yes"}),
            await s.call_tool("Bash", {"command": f"touch {work}/no"}),
        ]

    denied, approved, declined = run(
        state_dir, scenario, "--session", "t", "--rules", str(rules), elicitation=on_elicit
    )
    assert is_error(denied) and text(denied) == (
        f"Permission denied: `rm -rf {work}` matches deny rule Bash(rm *). Nothing was run."
    )
    assert structured(denied)["permission"]["rule"] == "Bash(rm *)"
    assert not is_error(approved) and (work / "yes").exists()
    assert is_error(declined) and "did not approve" in text(declined)
    assert not (work / "no").exists() and len(asked) == 2
    assert asked[0] == (
        f"Run this command?\n\ntouch {work}/yes\n\nIt needs approval: `touch {work}/yes` "
        "matches ask rule Bash(touch *)."
    )

    async def no_elicitation(s: ClientSession) -> types.CallToolResult:
        return await s.call_tool("Bash", {"command": f"touch {work}/never"})

    refused = run(state_dir, no_elicitation, "--session", "t", "--rules", str(rules))
    assert is_error(refused) and not (work / "never").exists()
    assert "needs approval" in text(refused) and "Bash(touch *)" in text(refused)
    assert str(rules) in text(refused)


def test_an_approval_shows_the_control_characters_of_a_command(
    state_dir: Path, tmp_path: Path
) -> None:
    """The question put to the host's user quoted the command raw: an ``ESC[2K`` and a
    carriage return, or a bidirectional override, can show another command than the one
    a Yes runs (helper 215). They are shown; its lines stay lines."""
    rules = tmp_path / "rules.toml"
    rules.write_text('ask = ["Bash(echo *)"]\n')
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="decline")

    command = "echo 'x\x1b[2K\rgit status' \u202eabc\u2028\u3164é\necho two"

    async def scenario(s: ClientSession) -> types.CallToolResult:
        return await s.call_tool("Bash", {"command": command})

    declined = run(state_dir, scenario, "--rules", str(rules), elicitation=on_elicit)
    assert is_error(declined) and len(asked) == 1
    assert asked[0].startswith(
        "Run this command?\n\necho 'x^[[2K^Mgit status' <U+202E>abc<U+2028><U+3164>é\necho two\n\n"
    ), asked[0]
    assert "\x1b" not in asked[0] and "\r" not in asked[0] and "\u202e" not in asked[0]


def test_an_approval_that_names_a_path_that_is_no_utf8_is_asked(
    state_dir: Path, tmp_path: Path
) -> None:
    """The question named a file found under the tree a command removes, whose name is no
    UTF-8: the SDK could not send it, and the server ended without a word (a review). The
    byte is shown as ``\\xff``."""
    work = tmp_path / "w"
    work.mkdir()
    (work / os.fsdecode(b"\xff")).touch()
    rules = tmp_path / "rules.toml"
    rules.write_text(f'allow = ["Bash(rm *)"]\nask = ["Write({work}/**)"]\n')
    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="decline")

    async def scenario(s: ClientSession) -> types.CallToolResult:
        return await asyncio.wait_for(s.call_tool("Bash", {"command": f"rm -r {work}"}), 30)

    declined = run(state_dir, scenario, "--rules", str(rules), elicitation=on_elicit)
    assert is_error(declined) and "did not approve" in text(declined)
    assert len(asked) == 1 and f"{work}/\\xff" in asked[0], asked
    assert (work / os.fsdecode(b"\xff")).exists()


def test_bash_output_through_mcp_does_not_block_and_filters(
    state_dir: Path, tmp_path: Path
) -> None:
    """The server named the call TaskOutput before the client saw it: BashOutput blocked
    and dropped its filter through MCP, where models call it (a review)."""
    mark = tmp_path / "written"

    async def scenario(s: ClientSession) -> tuple[str, float]:
        command = f"echo ok; echo ERR; echo fine; touch {mark}; sleep 30"
        started = await s.call_tool("Bash", {"command": command, "run_in_background": True})
        tid = structured(started)["backgroundTaskId"]
        deadline = asyncio.get_running_loop().time() + 20
        while not mark.exists() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)  # (the lines are written once the mark is there)
        began = asyncio.get_running_loop().time()
        read = await s.call_tool("BashOutput", {"bash_id": tid, "filter": "^ERR$"})
        took = asyncio.get_running_loop().time() - began
        await s.call_tool("TaskStop", {"task_id": tid})
        return structured(read)["output"], took

    output, took = run(state_dir, scenario, "--session", "older")
    assert output == "ERR" and took < 10  # (at once, not blocking the command's 30 s)


def test_task_stop_through_mcp(state_dir: Path) -> None:
    async def scenario(s: ClientSession) -> tuple[types.CallToolResult, str]:
        started = await s.call_tool("Bash", {"command": "sleep 300", "run_in_background": True})
        assert text(started).startswith("Command running in background with ID:")
        tid = structured(started)["backgroundTaskId"]
        stopped = await s.call_tool("TaskStop", {"task_id": tid})
        return stopped, text(await s.call_tool("Bash", {"command": "echo next"}))

    stopped, after = run(state_dir, scenario, "--session", "t")
    assert not is_error(stopped) and structured(stopped)["status"] == "killed"
    assert "was stopped" in text(stopped)
    # The stop's own notice is said neither with it (it repeated it) nor later.
    assert "Background command" not in text(stopped) and after == "next"


def test_completion_notice_arrives_with_the_next_result(state_dir: Path) -> None:
    async def scenario(s: ClientSession) -> tuple[str, str, str]:
        started = await s.call_tool(
            "Bash",
            {
                "command": "sleep 0.5; echo quick",
                "run_in_background": True,
                "description": "Say quick",
            },
        )
        assert "Say quick" not in text(started)  # still running when the start was answered
        tid = structured(started)["backgroundTaskId"]
        Client(state_dir=state_dir).wait(tid, timeout=10_000)
        nxt = await s.call_tool("Bash", {"command": "echo next"})
        again = await s.call_tool("Bash", {"command": "echo again"})
        return tid, text(nxt), text(again)

    tid, nxt, again = run(state_dir, scenario, "--session", "notice-me")
    assert nxt.startswith("next\n\n")
    assert f'Background command "Say quick" (ID: {tid}) completed with exit code 0.' in nxt
    assert again == "again"  # delivered once


def test_restarted_host_reattaches_by_session(state_dir: Path) -> None:
    async def start(s: ClientSession) -> str:
        r = await s.call_tool(
            "Bash", {"command": "sleep 0.5; echo late", "run_in_background": True}
        )
        return str(structured(r)["backgroundTaskId"])

    tid = run(state_dir, start, "--session", "host-1")
    Client(state_dir=state_dir).wait(tid, timeout=10_000)

    async def after_restart(s: ClientSession) -> str:
        return text(await s.call_tool("Bash", {"command": "true"}))

    assert f"(ID: {tid}) completed" in run(state_dir, after_restart, "--session", "host-1")


def test_session_name_is_printed_when_not_given(state_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "stderr.txt"
    with open(log, "w") as errlog:
        run(state_dir, lambda s: s.list_tools(), errlog=errlog)
    assert "agent session mcp-" in log.read_text()


def test_login_path_probed_once_for_three_commands(state_dir: Path, tmp_path: Path) -> None:
    tmp = tmp_path
    counter = tmp / "count"
    wrapper = tmp / "bash"
    wrapper.write_text(
        f'#!/bin/bash\ncase "$1" in -l*) echo x >> {counter};; esac\nexec /bin/bash "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    home = tmp / "home"
    home.mkdir()
    (home / ".bash_profile").write_text('export PATH="/opt/mcp-login:$PATH"\n')

    async def scenario(s: ClientSession) -> list[str]:
        return [text(await s.call_tool("Bash", {"command": "echo $PATH"})) for _ in range(3)]

    env = {"WAVE_SHELL": str(wrapper), "HOME": str(home), "PATH": os.environ["PATH"]}
    paths = run(state_dir, scenario, "--session", "t", env=env)
    assert len(set(paths)) == 1 and "/opt/mcp-login" in paths[0].split(os.pathsep)
    wait_until(counter.exists)
    assert counter.read_text().count("x") == 1


def test_follow_cd_and_session_from_environment(state_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "stderr.txt"

    async def scenario(s: ClientSession) -> tuple[str, str]:
        moved = await s.call_tool("Bash", {"command": "cd /usr/share"})
        return structured(moved)["cwd"], text(await s.call_tool("Bash", {"command": "pwd"}))

    with open(log, "w") as errlog:
        cwd, pwd = run(
            state_dir, scenario, "--follow-cd", env={"WAVE_SESSION": "from-env"}, errlog=errlog
        )
    assert (cwd, pwd) == ("/usr/share", "/usr/share")
    assert "agent session from-env" in log.read_text()
    assert [t.session for t in Client(state_dir=state_dir).tasks(all=True)] == [
        "from-env",
        "from-env",
    ]


def test_taskoutput_says_why_wave_bash_ended_a_task(state_dir: Path) -> None:
    """A task stopped by another caller (or at the log cap) read as `Status: killed (exit
    code 143)` alone, and this result took the place of the notice that said why: the
    model never learnt it (a helper's trial). It says so, and gives `endReason`."""
    own = Client(state_dir=state_dir, session="why")
    task_id = own.bash("echo up; sleep 60", run_in_background=True).background_task_id or ""
    another = Client(state_dir=state_dir, session="another")
    wait_until(lambda: "up" in another.task_output(task_id, block=False, offset=0).output)
    another.task_stop(task_id)

    async def scenario(s: ClientSession) -> types.CallToolResult:
        return await s.call_tool("TaskOutput", {"task_id": task_id})

    out = run(state_dir, scenario, "--session", "why")
    assert text(out).startswith("Status: killed (exit code 143); it was stopped\nup"), text(out)
    assert structured(out)["endReason"] == "stopped"
    quick = own.bash("echo done", run_in_background=True).background_task_id or ""
    own.wait(quick, timeout=10_000)
    assert structured(run(state_dir, lambda s: s.call_tool(
        "TaskOutput", {"task_id": quick}), "--session", "why"))["endReason"] is None  # fmt: skip


def test_taskoutput_that_reports_the_end_leaves_no_notice_to_say_it_again(
    state_dir: Path,
) -> None:
    """The MCP server's TaskOutput result that shows how a task ended does not repeat
    the end as a notice; the notice is acknowledged with it (once written), so neither
    the next result nor any reader gets it again."""

    async def scenario(s: ClientSession) -> tuple[str, str]:
        command = {"command": "sleep 0.5; echo bg", "run_in_background": True}
        started = await s.call_tool("Bash", command)  # (answered before it ends)
        tid = structured(started)["backgroundTaskId"]
        out = await s.call_tool("TaskOutput", {"task_id": tid})  # blocks until it ends
        nxt = await s.call_tool("Bash", {"command": "echo next"})
        return text(out), text(nxt)

    out, nxt = run(state_dir, scenario, "--session", "seen")
    assert "Status: completed" in out and "Background command" not in out
    assert nxt == "next"  # acknowledged with the TaskOutput result, not given again
    assert Client(state_dir=state_dir, session="seen").notifications() == []
