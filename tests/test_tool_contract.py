"""Tool definitions, texts and input validation (SPEC T1–T6, B4, R)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from wave_bash.api import (
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    BashInput,
    Client,
    InvalidInputError,
    texts,
    tool_definitions,
)
from wave_bash.api.tools import TIMEOUT_PARAMETER_TEXT


def bash_tool(fmt: str = "anthropic") -> tuple[str, dict]:  # type: ignore[type-arg]
    tool = tool_definitions(fmt)[0]  # type: ignore[arg-type]
    if fmt == "openai":
        tool = tool["function"]
        return tool["description"], tool["parameters"]
    return tool["description"], tool["input_schema" if fmt == "anthropic" else "inputSchema"]


def test_ceiling_and_default_from_one_constant_in_both_texts() -> None:
    description, schema = bash_tool()
    param = schema["properties"]["timeout"]["description"]
    ceiling = f"up to {MAX_TIMEOUT_MS}ms / 10 minutes"
    default = f"{DEFAULT_TIMEOUT_MS}ms / 2 minutes"
    for text in (description, param):
        assert ceiling in text and default in text
        assert f"up to {DEFAULT_TIMEOUT_MS}" not in text  # the default is never the ceiling
    assert param == TIMEOUT_PARAMETER_TEXT


def test_timeout_schema_is_a_plain_number() -> None:
    _, schema = bash_tool()
    assert schema["properties"]["timeout"]["type"] == "number"
    assert set(schema["properties"]["timeout"]) == {"type", "description"}
    assert "maximum" not in json.dumps(schema)
    assert schema["required"] == ["command"]
    assert set(schema["properties"]) == {
        "command", "timeout", "description", "run_in_background", "interactive",
    }  # fmt: skip


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "mcp"])
def test_formats_list_four_tools(fmt: str) -> None:
    tools = tool_definitions(fmt)  # type: ignore[arg-type]
    names = [t["function"]["name"] if fmt == "openai" else t["name"] for t in tools]
    assert names == ["Bash", "TaskOutput", "TaskStop", "TaskInput"]
    # (no other field is taken, T6: a host that checks calls by the schema knows it)
    schemas = [t["function"]["parameters"] if fmt == "openai" else t.get("inputSchema")
               or t["input_schema"] for t in tools]  # fmt: skip
    assert all(schema["additionalProperties"] is False for schema in schemas)
    assert bash_tool(fmt)[1]["properties"]["timeout"] == bash_tool()[1]["properties"]["timeout"]


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown tool format"):
        tool_definitions("xml")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [0, 1, 1500, 600_000, 900_000, 3_600_000, 0.5])
def test_any_non_negative_number_is_kept_as_given(value: float) -> None:
    assert BashInput.parse({"command": "x", "timeout": value}).timeout == value


@pytest.mark.parametrize(
    "value", ["5000", "", True, False, {}, [], math.nan, math.inf, -math.inf, -1, -0.5, 10**400]
)
def test_bad_timeouts(value: object) -> None:
    with pytest.raises(InvalidInputError) as err:
        BashInput.parse({"command": "x", "timeout": value})
    assert str(err.value).startswith("timeout must be a non-negative number of milliseconds")
    assert "600000" not in str(err.value)
    assert "inf" not in str(err.value)  # (`1e400` is read as infinity: "got inf", a trial)


@pytest.mark.parametrize(
    ("text", "said"),
    [("1e400", "got a number too large"), ("-1e400", "got a negative number"),
     ("NaN", "got NaN"), ("-5", "got -5")],
)  # fmt: skip
def test_a_timeout_is_named_as_it_was_sent(text: str, said: str) -> None:
    with pytest.raises(InvalidInputError, match=f"milliseconds, {said}$"):
        BashInput.parse(json.loads(f'{{"command": "x", "timeout": {text}}}'))


def test_null_timeout_means_not_given_and_unknown_fields_are_ignored() -> None:
    parsed = BashInput.parse({"command": "x", "timeout": None, "future_field": 1})
    assert parsed.timeout is None and not parsed.run_in_background


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "command is required"),
        ({"command": 5}, "command must be a string, got a number"),
        ({"command": " "}, "command must not be empty"),
        ({"command": "a\x00"}, "NUL byte"),
        (
            {"command": "x", "run_in_background": "yes"},
            "run_in_background must be a boolean, got a string",
        ),
        ({"command": "x", "interactive": [1]}, "interactive must be a boolean, got an array"),
        ("echo", "must be a JSON object"),
    ],
)
def test_other_bad_input(raw: object, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        BashInput.parse(raw)


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("Bash", {"cmd": "echo x"}, "command is required (an unexpected parameter 'cmd' was "
         "sent: did you mean 'command'?)"),
        ("TaskOutput", {"taskId": "abc"}, "task_id is required (an unexpected parameter "
         "'taskId' was sent: did you mean 'task_id'?)"),
        ("TaskOutput", {"shellId": "abc"}, "task_id is required (an unexpected parameter "
         "'shellId' was sent: did you mean 'task_id'?)"),  # (like an older name of it)
        ("Bash", {"script": "echo x"}, "command is required (an unexpected parameter 'script' "
         "was sent: Bash takes command, timeout, description, run_in_background, interactive)"),
        ("TaskInput", {"task_id": "abc", "text": "y\n"}, "input is required (an unexpected "
         "parameter 'text' was sent: TaskInput takes task_id, input, timeout)"),
        ("Bash", {}, "command is required"),
    ],
)  # fmt: skip
def test_a_missing_field_names_the_near_miss_that_was_sent(
    tool: str, arguments: dict[str, Any], message: str, tmp_path: Path
) -> None:
    """`{"cmd": "echo x"}` was refused with "command is required" alone, and a model
    guessed again (a trial): a field sent that looks like the missing one is named."""
    client = Client(state_dir=tmp_path / "state")  # (refused before any supervisor)
    with pytest.raises(InvalidInputError) as refused:
        client.call_tool(tool, arguments)
    assert refused.value.message == message


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("Bash", {"command": "touch ran", "background": True}, "an unexpected parameter "
         "'background' was sent (Bash takes command, timeout, description, run_in_background, "
         "interactive): did you mean 'run_in_background'?"),
        ("Bash", {"command": "touch ran", "timeout_ms": 5000}, "an unexpected parameter "
         "'timeout_ms' was sent (Bash takes command, timeout, description, run_in_background, "
         "interactive): did you mean 'timeout'?"),
        ("Bash", {"command": "touch ran", "dangerouslyDisableSandbox": True}, "an unexpected "
         "parameter 'dangerouslyDisableSandbox' was sent (Bash takes command, timeout, "
         "description, run_in_background, interactive)"),
        ("Bash", {"command": "touch ran", "shell_id": "abc"}, "an unexpected parameter "
         "'shell_id' was sent"),  # (task_id's older name: Bash takes no task)
        ("TaskOutput", {"task_id": "abc", "blocking": True}, "an unexpected parameter "
         "'blocking' was sent (TaskOutput takes task_id, block, timeout, pattern): did you "
         "mean 'block'?"),
        ("KillShell", {"shell_id": "abc", "force": True}, "an unexpected parameter 'force' "
         "was sent (TaskStop takes task_id)"),
        ("TaskStop", {"task_id": "abc", "shell_id": "xyz"}, "task_id 'abc', shell_id 'xyz' "
         "name different tasks: send task_id alone"),  # (one was taken, a trial)
        ("BashOutput", {"bash_id": "abc", "shell_id": "xyz"}, "bash_id 'abc', shell_id 'xyz' "
         "name different tasks: send task_id alone"),
        ("TaskStop", {"task_id": " ABC", "shell_id": "abc", "force": 1}, "an unexpected "
         "parameter 'force'"),  # (one task, as each is taken: no conflict)
        ("Bash", {"command": "touch ran", "background": True, "timeout_ms": 5, "x" * 50: 1},
         "unexpected parameters 'background', 'timeout_ms' and 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxx...' were sent (Bash takes command, timeout, description, run_in_background, "
         "interactive): did you mean 'run_in_background' for 'background'; 'timeout' for "
         "'timeout_ms'?"),  # (each named: the first alone was mended, the next sent again)
        ("TaskOutput", {"shellId": "abc", "blocking": True}, "task_id is required (unexpected "
         "parameters 'shellId' and 'blocking' were sent: did you mean 'task_id' for 'shellId'; "
         "'block' for 'blocking'?)"),
        ("Bash", {"command": "touch ran", **{f"f{i}": 1 for i in range(10)}}, "unexpected "
         "parameters 'f0', 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7' and 2 more were sent"),
    ],
)  # fmt: skip
def test_a_field_the_tool_does_not_take_is_refused(
    tool: str, arguments: dict[str, Any], message: str, tmp_path: Path, monkeypatch: Any
) -> None:
    """`background: true` was ignored and the command ran in the foreground, a dev server
    until its timeout (a review): a field the tool does not take is refused, as Claude
    Code refuses one, and nothing runs."""
    monkeypatch.chdir(tmp_path)
    client = Client(state_dir=tmp_path / "state")  # (refused before any supervisor)
    with pytest.raises(InvalidInputError) as refused:
        client.call_tool(tool, arguments)
    assert refused.value.message.startswith(message)
    assert not (tmp_path / "ran").exists() and not (tmp_path / "state").exists()


def test_the_older_names_are_still_taken(state_dir: Path) -> None:
    """`shell_id`, `bash_id` and BashOutput's `filter` are no schema's, yet still sent by
    older hosts (T3a): they are taken, not refused as unexpected."""
    client = Client(state_dir=state_dir)
    tid = client.call_tool("Bash", {"command": "echo a; echo b", "run_in_background": True})[
        "backgroundTaskId"
    ]
    read = client.call_tool("BashOutput", {"bash_id": tid, "filter": "b", "block": True})
    assert read["output"] == "b"
    tid = client.call_tool("Bash", {"command": "sleep 30", "run_in_background": True})[
        "backgroundTaskId"
    ]
    assert client.call_tool("KillShell", {"shell_id": tid})["status"] == "killed"


def test_result_texts_exact() -> None:
    assert texts.format_seconds(120_000) == "120"
    assert texts.format_seconds(2000) == "2"
    assert texts.format_seconds(1500) == "1.5"
    assert texts.format_seconds(0.5) == "0.0005" and texts.format_seconds(0.001) == "0.000001"
    assert texts.format_seconds(0.0004) == "0.0000004"  # (never `4e-07`: a trial)
    assert texts.format_seconds(1e-300) == "0"  # (15 places at most)
    assert texts.format_seconds(5e-324) == "0"  # (a subnormal: its log in seconds failed)
    assert texts.format_seconds(0) == "0" and texts.format_seconds(1) == "0.001"
    assert texts.format_seconds(1.5) == "0.0015" and texts.format_seconds(1234.5) == "1.2345"
    assert texts.auto_backgrounded_text("ab12", "/p.log", 120_000) == (
        "Command exceeded the timeout (120s) and was moved to the background with ID: ab12. "
        "It is still running — you will be notified when it completes. Output is being written to: /p.log"
    )
    assert texts.user_backgrounded_text("ab12", "/p.log") == (
        "Command was manually backgrounded by user with ID: ab12. Output is being written to: /p.log"
    )
    assert texts.background_started_text("ab12", "/p.log") == (
        "Command running in background with ID: ab12. Output is being written to: /p.log"
    )
    assert "timed out" not in texts.sleep_terminated_text(2000)
    assert texts.notice_text("ab12", "make", None, "failed", 2, "/p.log") == (
        'Background command "make" (ID: ab12) failed with exit code 2. Output: /p.log'
    )
