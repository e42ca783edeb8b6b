"""The sandbox's system-call filter (SPEC SB1): no Unix-domain socket, no socket family
but Internet and netlink ones, no io_uring, no kernel keyring, no set-ID file.

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

No file gets a set-user-ID or set-group-ID bit: ``chmod``, ``fchmod``, ``fchmodat(2)``,
``open``/``openat``/``creat`` and ``mknod(at)`` with such a mode fail with EPERM.
``nosuid`` guards the sandbox's own mounts only: a workspace file made setuid there is a
setuid program outside (a review made one of ``bash`` owned by root, a door to root for
any local user). ``openat2`` hides its mode in memory: it fails with ENOSYS, as on
kernels without it (programs fall back to ``openat``).

A classic BPF program for bubblewrap's ``--seccomp FD``, for this machine's system-call
ABIs (its native one and the 32-bit one it also runs); any other ABI is refused.
"""

from __future__ import annotations

import errno
import platform
import struct

_LOAD = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JUMP_EQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JUMP_SET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
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
_OPENAT2, _FCHMODAT2 = 437, 452  # (the same in every ABI here)
_SET_ID_BITS = 0o6000  # S_ISUID | S_ISGID


class _Abi:
    """One system-call ABI: its audit arch and the numbers the filter looks at (``modes``:
    the calls that give a file a mode, each with the index of its mode argument)."""

    def __init__(
        self,
        arch: int,
        socket: int,
        socketpair: int,
        add_key: int,
        modes: dict[int, int],
        socketcall: int | None = None,
    ):
        self.arch, self.socket, self.socketpair = arch, socket, socketpair
        self.keys = (add_key, add_key + 1, add_key + 2)  # add_key, request_key, keyctl
        self.modes = {**modes, _FCHMODAT2: 2}
        self.socketcall = socketcall


# open, creat, chmod, fchmod, mknod (the old ABIs only), then openat, fchmodat, mknodat
_I386_AND_ARM_MODES = {5: 2, 8: 1, 15: 1, 94: 1, 14: 1}
_ABIS = {
    "x86_64": (
        _Abi(0xC000003E, 41, 53, 248, {2: 2, 85: 1, 90: 1, 91: 1, 133: 1, 257: 3, 268: 2, 259: 2}),
        _Abi(0x40000003, 359, 360, 286, {**_I386_AND_ARM_MODES, 295: 3, 306: 2, 297: 2},
             socketcall=102),
    ),
    "aarch64": (
        _Abi(0xC00000B7, 198, 199, 217, {56: 3, 52: 1, 53: 2, 33: 2}),
        _Abi(0x40000028, 281, 288, 309, {**_I386_AND_ARM_MODES, 322: 3, 333: 2, 324: 2}),
    ),
}  # fmt: skip
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
    checks = [(_IO_URING_SETUP, "absent"), (_OPENAT2, "absent")]
    checks += [*((n, "absent") for n in abi.keys), (abi.socket, "socket"), (abi.socketpair, "pair")]
    checks += [(n, f"mode{arg}") for n, arg in abi.modes.items()]
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
        # A mode with a set-ID bit: refused, as chmod is to a user without the right.
        **{
            f"mode{arg}": [
                (_LOAD, 0, 0, _ARG0 + 8 * arg),
                (_JUMP_SET, 0, 1, _SET_ID_BITS),
                (_RETURN, 0, 0, _ERRNO | errno.EPERM),
                allow,
            ]
            for arg in (1, 2, 3)
        },
    }
    body: list[tuple[int, int, int, int]] = []
    targets: list[tuple[int, str]] = []
    for number, name in checks:
        targets.append((len(body), name))
        body.append((_JUMP_EQ, 0, 0, number))
    body.append(allow)
    starts: dict[str, int] = {}
    for name in dict.fromkeys(name for _, name in targets):  # each tail once, checks share it
        starts[name] = len(body)
        body += tails[name]
    for at, name in targets:  # point each check at its tail
        body[at] = (_JUMP_EQ, starts[name] - at - 1, 0, body[at][3])
    return code + body


def system_call_filter(machine: str | None = None) -> bytes | None:
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
