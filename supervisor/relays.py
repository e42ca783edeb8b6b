"""Results that a relay (an MCP server) has yet to pass on to its host.

What a result takes counts once the result is written to its caller: a read moves the
session's offset past its output (B6c), a foreground command's end is no notice (ND5),
claimed notices are the reader's. A relay's result is only passed on once the relay
writes it to its host; a relay killed in between lost it for good (a trial: a
foreground result, a read's 40 lines). So a relay's calls name a receipt, and what their
results took is held until the relay confirms them passed on (``delivered``) or given
back, by the supervisor, once the relay's presence connection closes first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import Connection

log = logging.getLogger("wave_bash.supervisor")

GiveBack = Callable[[], object]
"""Undoes what a result took: its read given back, its end made a notice, its claim
released; each finds out itself whether that still holds."""

MAX_HELD = 4096
"""Receipts held per relay at most: a relay that never confirms them costs bounded
memory; the oldest beyond this counts as passed on."""
MAX_PER_RECEIPT = 64
"""What one receipt holds at most (a call sent again names it again; a client that
names one for ever holds no more)."""


class Relays:
    """The relays present now and what their results took."""

    def __init__(self) -> None:
        self._present: dict[str, int] = {}
        """Relay → its presence connections open now (a reconnecting one has two)."""
        self._held: dict[str, dict[str, list[GiveBack]]] = {}
        """Relay → receipt → what to give back if the relay goes before confirming."""

    @property
    def count(self) -> int:
        return len(self._present)

    @property
    def held(self) -> int:
        return sum(len(held) for held in self._held.values())

    def present(self, receipt: str) -> bool:
        """Whether the relay of ``receipt`` is present: only then is anything held."""
        return self._present.get(_relay_of(receipt), 0) > 0

    def hold(self, receipt: str, give_back: list[GiveBack]) -> None:
        """Hold what a result written to the relay took, until it confirms the receipt."""
        relay = _relay_of(receipt)
        if not give_back or not self._present.get(relay):
            return
        held = self._held.setdefault(relay, {})
        undo = held.setdefault(receipt, [])
        undo.extend(give_back[: MAX_PER_RECEIPT - len(undo)])
        while len(held) > MAX_HELD:
            del held[next(iter(held))]

    def confirm(self, receipts: list[str]) -> int:
        """The relay passed these results on: what they took stands."""
        confirmed = 0
        for receipt in receipts:
            held = self._held.get(_relay_of(receipt))
            if held is not None and held.pop(receipt, None) is not None:
                confirmed += 1
        return confirmed

    async def attend(self, relay: str, conn: Connection) -> int:
        """Hold ``relay`` present while ``conn`` stays open; once the relay closed it (it
        ended, or was killed) and no other presence of it is left, give back what its
        unconfirmed results took. One that the supervisor's own stop cut gives nothing
        back: the relay goes on, and confirms to the next supervisor, which holds none.
        Returns how many results were given back."""
        self._present[relay] = self._present.get(relay, 0) + 1
        try:
            await conn.closed
        finally:
            left = self._present[relay] - 1
            if left:
                self._present[relay] = left
            else:
                del self._present[relay]
                held = self._held.pop(relay, {})
                if conn.closed.done():
                    _give_back(relay, held)
        return len(held) if not left and conn.closed.done() else 0


def _relay_of(receipt: str) -> str:
    return receipt.partition(":")[0]


def _give_back(relay: str, held: dict[str, list[GiveBack]]) -> None:
    if held:
        log.info("relay %s went with %d results not passed on: given back", relay, len(held))
    for give_back in reversed(held.values()):  # newest first: a read given back moves the
        give_back_result(give_back)  # offset to where the one before it ended, so that one
        # finds it where it left it (oldest first, it found it moved on and its output was
        # never read again: a review)


def give_back_result(give_back: list[GiveBack]) -> None:
    """Undo what one result took that never reached its reader, last taken first."""
    for undo in reversed(give_back):
        try:
            undo()
        except Exception:  # (one failing must not keep the others)
            log.exception("giving back what a result never passed on took")
