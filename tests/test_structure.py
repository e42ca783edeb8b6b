"""The contract's structure: one registry of requests, each with its handler, its client
method and its result type (issue 14 §3)."""

from __future__ import annotations

import ast
import inspect
import types
import typing
from typing import Any

import pytest

from wave_bash.api import calls as calls_module
from wave_bash.api import client as client_module
from wave_bash.api import protocol
from wave_bash.supervisor.handlers import HANDLERS


def test_every_request_has_one_op_and_one_handler() -> None:
    ops = [t.model_fields["op"].default for t in protocol.REQUEST_TYPES]
    assert len(ops) == len(set(ops)) == len(protocol.OPS)
    assert set(HANDLERS) == set(protocol.REQUEST_TYPES)


def _built_by_client() -> set[str]:
    tree = ast.parse(inspect.getsource(client_module))
    return (
        {
            node.func.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        | {  # parse_params(StopRequest, …) builds one too
            arg.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "parse_params"
            for arg in node.args[:1]
            if isinstance(arg, ast.Name)
        }
    )


def test_every_request_is_sent_by_a_client_method() -> None:
    names = {t.__name__ for t in protocol.REQUEST_TYPES}
    # attach is how any call waits for its command again after a restart (api/calls.py)
    assert names - _built_by_client() == {"AttachRequest"}
    assert 'op = "attach"' in inspect.getsource(calls_module)


@pytest.mark.parametrize("kind", protocol.REQUEST_TYPES, ids=lambda t: t.__name__)
def test_handler_returns_the_request_result_type(kind: type[protocol.Request[Any]]) -> None:
    handler = HANDLERS[kind]
    returned = typing.get_type_hints(handler)["return"]
    allowed = {kind.result_type}
    if kind in (protocol.RunRequest, protocol.AttachRequest):  # None: the caller is gone
        allowed = {kind.result_type | None, typing.Optional[kind.result_type]}  # noqa: UP045
    assert returned in allowed or (isinstance(returned, types.UnionType) and returned in allowed), (
        kind.__name__,
        returned,
    )


def test_unknown_and_malformed_ops_are_protocol_errors() -> None:
    from wave_bash.api.errors import ProtocolError

    for op in ("nope", None, ["stop"], {"a": 1}, 3):
        with pytest.raises(ProtocolError, match="unknown operation"):
            protocol.parse_request({"v": 1, "op": op})
    assert isinstance(protocol.parse_request({"op": "stop", "task_id": "x"}), protocol.StopRequest)
