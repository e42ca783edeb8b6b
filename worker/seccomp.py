"""The sandbox's system-call filter (SPEC SB1): no Unix-domain socket, no socket family
but Internet and netlink ones, no io_uring and no kernel keyring.

A socket file is a door out of any file-system view: a read-only mount does not stop
``connect()``, and a supervisor (of another state dir), an ssh ControlMaster, a gpg or
docker socket run what they are told outside the sandbox. Hiding known directories
cannot find them all (a supervisor's state dir can be anywhere; a hard link in the
workspace reaches any socket on its file system), so the sandboxed command cannot make a
Unix-domain socket at all: ``socket(AF_UNIX, …)`` fails with EACCES, and so does a
``socketpair`` but of stream or seqpacket sockets (a datagram one, ``SOCK_RAW`` too, can
be connected again, to any socket file). A stream ``socketpair`` (pipes between its own
processes) still works. Only Internet and netlink
sockets can be made besides (a new network namespace takes the network away unless it is
allowed); any other family fails with EAFNOSUPPORT: vsock, for one, reaches the host of a
virtual machine from any network namespace. io_uring can make and
connect sockets past a seccomp filter: ``io_uring_setup`` fails with ENOSYS, as on
kernels without it, and programs fall back to plain system calls. The kernel's keyrings
belong to a uid, not to a namespace: ``add_key``, ``request_key`` and ``keyctl`` fail with
ENOSYS too (root's cached secrets, and ``request_key`` runs a helper outside).

A classic BPF program for bubblewrap's ``--seccomp FD``, for this machine's system-call
ABIs (its native one and the 32-bit one it also runs); any other ABI is refused.
"""

from __future__ import annotations

import errno
import platform
import struct

_LOAD = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JUMP_EQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
_AND = 0x54  # BPF_ALU | BPF_AND | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24  # offsets in struct seccomp_data (low halves)
_X32_BIT = 0x40000000
AF_UNIX = 1
SOCKET_FAMILIES = (2, 10, 16)
"""AF_INET, AF_INET6 and AF_NETLINK: the only families a sandboxed ``socket()`` makes."""
SOCK_STREAM, SOCK_SEQPACKET = 1, 5
_SOCK_TYPE_MASK = 0xF  # (the type's other bits are SOCK_NONBLOCK and SOCK_CLOEXEC)
_SYS_SOCKET, _SYS_SOCKETPAIR = 1, 8  # socketcall's call numbers
_IO_URING_SETUP = 425  # the same number in every ABI here


class _Abi:
    """One system-call ABI: its audit arch and the numbers the filter looks at."""

    def __init__(
        self, arch: int, socket: int, socketpair: int, add_key: int, socketcall: int | None = None
    ):
        self.arch, self.socket, self.socketpair = arch, socket, socketpair
        self.keys = (add_key, add_key + 1, add_key + 2)  # add_key, request_key, keyctl
        self.socketcall = socketcall


_ABIS = {
    "x86_64": (_Abi(0xC000003E, 41, 53, 248), _Abi(0x40000003, 359, 360, 286, socketcall=102)),
    "aarch64": (_Abi(0xC00000B7, 198, 199, 217), _Abi(0x40000028, 281, 288, 309)),
}
"""Per machine: the native ABI (x32 shares its arch, with a bit set in the number), then
the 32-bit one (i386's ``socketcall`` hides its arguments in memory: its ``socket`` and
``socketpair`` calls are refused whatever the domain)."""


def _abi_section(abi: _Abi, native: bool) -> list[tuple[int, int, int, int]]:
    """Instructions run once the arch matched, each section ending in a return; jump
    offsets count the instructions skipped."""
    refuse_socket = (_RETURN, 0, 0, _ERRNO | errno.EACCES)
    no_io_uring = (_RETURN, 0, 0, _ERRNO | errno.ENOSYS)
    allow = (_RETURN, 0, 0, _ALLOW)
    code = [(_LOAD, 0, 0, _NR)]
    if native:
        code.append((_AND, 0, 0, ~_X32_BIT & 0xFFFFFFFF))  # x32 numbers as native ones
    # nr: io_uring_setup → ENOSYS; socket → look at the domain; socketcall → look at the call;
    # add_key, request_key, keyctl → ENOSYS: keyrings are the uid's, not the namespace's
    # (a reviewer read and planted keys of root's user keyring from the sandbox)
    checks = [(_IO_URING_SETUP, "absent"), *((n, "absent") for n in abi.keys)]
    checks += [(abi.socket, "socket"), (abi.socketpair, "pair")]
    if abi.socketcall is not None:
        checks.append((abi.socketcall, "socketcall"))
    tails: dict[str, list[tuple[int, int, int, int]]] = {
        "absent": [no_io_uring],
        # Internet and netlink sockets only (vsock, for one, reaches the VM's host from
        # any network namespace); Unix ones EACCES, every other family EAFNOSUPPORT.
        "socket": [
            (_LOAD, 0, 0, _ARG0),
            *(
                (_JUMP_EQ, len(SOCKET_FAMILIES) + 2 - i, 0, family)
                for i, family in enumerate(SOCKET_FAMILIES)
            ),
            (_JUMP_EQ, 1, 0, AF_UNIX),
            (_RETURN, 0, 0, _ERRNO | errno.EAFNOSUPPORT),
            refuse_socket,
            allow,
        ],
        # A datagram pair can be connected again, to any socket file (SOCK_RAW is one
        # too, for Unix sockets): only stream and seqpacket pairs, connected for good.
        "pair": [
            (_LOAD, 0, 0, _ARG0),
            (_JUMP_EQ, 0, 5, AF_UNIX),
            (_LOAD, 0, 0, _ARG1),
            (_AND, 0, 0, _SOCK_TYPE_MASK),
            (_JUMP_EQ, 2, 0, SOCK_STREAM),
            (_JUMP_EQ, 1, 0, SOCK_SEQPACKET),
            refuse_socket,
            allow,
        ],
        "socketcall": [
            (_LOAD, 0, 0, _ARG0),
            (_JUMP_EQ, 1, 0, _SYS_SOCKET),
            (_JUMP_EQ, 0, 1, _SYS_SOCKETPAIR),
            refuse_socket,
            allow,
        ],
    }
    body: list[tuple[int, int, int, int]] = []
    targets: list[tuple[int, str]] = []
    for number, name in checks:
        targets.append((len(body), name))
        body.append((_JUMP_EQ, 0, 0, number))
    body.append(allow)
    for at, name in targets:  # point each check at its tail
        skip = len(body) - at - 1
        body[at] = (_JUMP_EQ, skip, 0, body[at][3])
        body += tails[name]
    return code + body


def socket_filter(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default this one), or None where it is not known."""
    abis = _ABIS.get(machine or platform.machine())
    if abis is None:
        return None
    native, compat = (_abi_section(abis[0], True), _abi_section(abis[1], False))
    code = [(_LOAD, 0, 0, _ARCH)]
    # arch == native → native section; arch == compat → compat section; else refused
    code.append((_JUMP_EQ, 0, len(native), abis[0].arch))
    code += native
    code.append((_JUMP_EQ, 0, len(compat), abis[1].arch))
    code += compat
    code.append((_RETURN, 0, 0, _ERRNO | errno.ENOSYS))  # an ABI this filter does not know
    if any(jt > 255 or jf > 255 for _, jt, jf, _ in code):  # pragma: no cover - fixed size
        raise AssertionError("seccomp filter jump too long")
    return b"".join(struct.pack("=HBBI", op, jt, jf, k) for op, jt, jf, k in code)
