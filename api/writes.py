"""The files a command writes, read from its words (SPEC PM1: a write rule, ``Write(…)`` and
``Edit(…)``, holds for what programs write as well as for redirections): the copiers,
archivers, downloaders, git's commands that write a work tree or make a repository, and
the link makers (whose links a later write may follow). ``api.reading`` checks each
against the rules; a target known only as the command runs is asked about."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .programs import (
    COPIERS,
    abbreviates,
    git_options,
    long_prefix,
    long_value,
    may_be_option,
    operands_and_options,
    option_from_a_word,
    sort_options,
    tar_words,
    word_after,
)
from .runners import TIME_OPTIONS_WITH_VALUE, short_options
from .shellwords import LineSplit

TIME_LONG_VALUED = tuple(o for o in TIME_OPTIONS_WITH_VALUE if o.startswith("--"))
TIME_VALUED = "".join(o[1] for o in TIME_OPTIONS_WITH_VALUE if len(o) == 2)
"""GNU time's options that take a value, long and short (``-o FILE`` is a write)."""


SHUF_LONG_VALUED = ("--input-range", "--head-count", "--output", "--random-source")
"""GNU shuf's long options that take a value (its short ones: ``-i``, ``-n``, ``-o``)."""


def _positional(
    words: Sequence[str | None], short_valued: str, long_valued: Sequence[str] = ()
) -> list[int]:
    """The indices of a program's words that are no option nor an option's value (or
    are computed)."""
    return operands_and_options(words, short_valued, long_valued)[0]


def _value_at(words: Sequence[str | None], index: int, option: str) -> str | None:
    """The file named at word ``index``: after ``option`` where the word starts with it
    (``-oFILE``, ``--output=FILE``, ``of=FILE``), else the whole word."""
    word = words[index] if index < len(words) else ""
    if word is None:
        return None
    return word[len(option) :] if option and word.startswith(option) else word


_ARCHIVERS: dict[str, tuple[str, tuple[str, ...], int, Kind, tuple[str, ...]]] = {
    "zip": ("bntOPZsIXi", ("--temp-path", "--suffixes", "--output-file", "--password",
                           "--compression-method", "--split-size"), 0, "file",
            ("-O", "--output-file")),
    "split": ("abCdlnt", ("--suffix-length", "--bytes", "--line-bytes", "--lines", "--number",
                          "--separator", "--additional-suffix", "--filter"), 1, "file", ()),
    "rsync": ("eBfTMp", ("--rsh", "--rsync-path", "--filter", "--exclude", "--include",
                         "--exclude-from", "--include-from", "--files-from", "--temp-dir",
                         "--compare-dest", "--copy-dest", "--link-dest", "--backup-dir",
                         "--suffix", "--chmod", "--chown", "--usermap", "--groupmap",
                         "--timeout", "--contimeout", "--port", "--log-file",
                         "--log-file-format", "--out-format", "--password-file", "--bwlimit",
                         "--partial-dir", "--max-size", "--min-size", "--block-size",
                         "--checksum-choice", "--compress-choice", "--compress-level",
                         "--skip-compress", "--iconv", "--info", "--debug", "--write-batch",
                         "--only-write-batch", "--read-batch", "--protocol", "--sockopts",
                         "--max-delete", "--modify-window", "--remote-option", "--outbuf",
                         "--address", "--config", "--dparam"), -1, "tree",
              ("--log-file", "--write-batch", "--only-write-batch")),
}  # fmt: skip
"""Programs that write where an operand says (its options with a value, short and long;
which operand: the first, the second, the last; how) and files options name: ``zip
OUT.zip``, ``split IN PREFIX`` (its pieces, ``PREFIXaa``…), ``rsync SRC… DEST`` (a
directory written whole, unless on another host: ``host:path``) and ``--log-file``
(``unzip``: :func:`_unzip_writes`)."""


_REMOTE = re.compile(r"[^/]*:|rsync://")
"""An rsync operand on another host (``host:path``, ``user@host:``, ``rsync://``)."""


def _unzip_writes(
    words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """Where ``unzip`` extracts: ``-d DIR`` (``-dDIR``), written whole, else where it runs
    (the archive's names); anywhere with ``-:``, which keeps ``../`` in names."""
    found: list[tuple[str | None, str, Kind]] = [
        ((w or "")[2:] or word_after(words, i), shown[i], "tree")
        for i, w in enumerate(words)
        if (w or "").startswith("-d")
    ] or [(".", "unzip", "names")]
    if any(w is not None and w.startswith("-") and ":" in w for w in words):
        found.append((None, "-:", "tree"))
    return [(value, text, kind) for value, text, kind in found if value != ""]


def _tar_writes(
    words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """What ``tar`` writes: the archive ``-f FILE`` it creates or adds to (``-c``, ``-r``,
    ``-u``, ``-A``; old style, ``cf FILE``), the directory ``-C DIR`` it extracts into
    (whole), or where it runs (the archive's names), anywhere with ``-P`` or a ``-T``
    list (whose lines may say ``-C DIR``), its ``-g`` snapshot, ``--index-file``,
    ``--one-top-level=DIR`` and ``--volno-file`` (reviews wrote by each under a deny
    rule)."""
    modes, named, _ = tar_words(words)
    kinds: dict[str, Kind] = {"g": "file", "i": "file", "v": "file"}
    if modes & set("cruA"):
        kinds["f"] = "file"
    if "x" in modes:
        kinds["C"] = kinds["1"] = "tree"  # (`--one-top-level=DIR`)
    found: list[tuple[str | None, str, Kind]] = [
        (_value_at(words, i, before), shown[i], kinds[letter])
        for letter, i, before in named
        if letter in kinds and i < len(words)
    ]
    letters = {letter for letter, _, _ in named}
    if "x" in modes and "C" not in letters:
        found.append((".", "tar -x", "names"))  # (where it runs)
    if "x" in modes and ("P" in modes or "T" in letters):
        found.append((None, "tar -x", "tree"))  # (anywhere, known only as it runs)
    return [(value, text, kind) for value, text, kind in found if value not in ("", "-")]


_SUDO_VALUED = ("ugCDhprtTU", ("--user", "--group", "--close-from", "--chdir", "--host",
                               "--prompt", "--role", "--type", "--other-user",
                               "--command-timeout"))  # fmt: skip
"""sudo's options that take the next word."""


def _edits(words: Sequence[str | None]) -> bool:
    """Whether ``sudo``'s own options, before its command, say ``-e``/``--edit``: it
    writes the files that follow, as ``sudoedit`` does (a review)."""
    operands, options = operands_and_options(words, *_SUDO_VALUED)
    first = operands[0] if operands else len(words)
    return any(
        abbreviates(words[i], "--edit") or "-e" in short_options(words[i] or "", _SUDO_VALUED[0])
        for i in options
        if i < first
    )


_TOUCHERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "touch": ("drt", ("--date", "--reference")),
    "truncate": ("sr", ("--size", "--reference")),
    "sponge": ("", ()),
}
"""Programs that write each of their operands."""
_CHANGERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "unlink": ("", ()),
    "rmdir": ("", ()),
    "shred": ("ns", ("--iterations", "--size", "--random-source", "--remove")),
    "mkdir": ("mZ", ("--mode", "--context")),
    "mkfifo": ("mZ", ("--mode", "--context")),
    "setfacl": (
        "mMxX",
        ("--modify", "--modify-file", "--remove", "--remove-file", "--set", "--set-file"),
    ),
}
"""Programs that remove, make or overwrite each of their operands, putting no text of
the command's there: ``changed`` (see :data:`Kind`)."""
_OWN_OPERAND_FIRST: dict[str, tuple[str, tuple[str, ...]]] = {
    "chmod": ("", ("--reference",)),
    "chown": ("", ("--reference", "--from")),
    "chgrp": ("", ("--reference",)),
}
"""Programs whose first operand is what they set (a mode, an owner), unless
``--reference`` names a file to take it from; the files after it are written."""
_COMPRESSORS: dict[str, str] = {
    "gzip": ".gz", "gunzip": ".gz", "pigz": ".gz", "unpigz": ".gz", "bzip2": ".bz2",
    "bunzip2": ".bz2", "pbzip2": ".bz2", "xz": ".xz", "unxz": ".xz", "lzma": ".lzma",
    "unlzma": ".lzma", "zstd": ".zst", "unzstd": ".zst", "lz4": ".lz4", "lzip": ".lz",
    "compress": ".Z", "uncompress": ".Z", "brotli": ".br", "lzop": ".lzo",
}  # fmt: skip
"""Programs that replace each file they are given (``gzip f``: ``f.gz``, ``f`` gone;
``gunzip f.gz``: ``f``), with the suffix each adds."""
_UNPACKERS = frozenset({"gunzip", "unpigz", "bunzip2", "unxz", "unlzma", "unzstd", "uncompress"})
_KEEPERS = frozenset({"zstd", "unzstd", "lz4", "brotli", "lzop"})
"""Those that keep the file they are given unless told (``--rm``, ``-j``, ``-U``)."""
_COMPRESSED = re.compile(r"(?i)\.(?:gz|z|bz2|xz|lzma|zst|lz4|lz|br|lzo|tgz|tbz2?|txz)$")


def _found_and_deleted(
    words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """What ``find … -delete`` may remove: each starting point whole (``.`` where none is
    given), through links with ``-L``/``-follow`` (`find protected -delete` went past a
    deny rule, a review); a word known only as it runs may be ``-delete``."""
    if "-delete" not in words and not any(
        w is None and may_be_option(t, ["-delete"]) for w, t in zip(words, shown, strict=False)
    ):
        return []
    followed = any(w in ("-L", "-follow") for w in words)
    starts: list[int] = []
    for i, word in enumerate(words):
        if word in ("-H", "-L", "-P") or (word or "").startswith(("-D", "-O")):
            continue
        if word is not None and (word.startswith("-") or word in ("(", "!", ",")):
            break
        starts.append(i)
    kind: Kind = "tree" if followed else "changed tree"
    return [(words[i], shown[i], kind) for i in starts] or [(".", "find", kind)]


def _compressed(
    name: str, words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """What a compressor writes: ``-o FILE`` (``lz4 IN OUT``), else for each file the one
    it makes beside it (decompressed, its text is the archive's: written as any file is,
    `zstd -d h.zst -o .git/hooks/pre-commit` set a hook, a review; compressed, a
    ``changed`` one) and the file itself, gone unless kept; a directory whole with
    ``-r``; nothing to its output (``-c``) or when it only tests or lists."""
    operands, options = operands_and_options(
        words, "bSpTLoB", ("--suffix", "--threads", "--output", "--memlimit", "--format")
    )
    flags = [words[i] or "" for i in options]

    def given(letters: str, *longs: str) -> bool:
        return any(
            f in longs or (f[:1] == "-" and f[1:2] != "-" and bool(set(f[1:]) & set(letters)))
            for f in flags
        )

    if given("ctl", "--stdout", "--to-stdout", "--test", "--list"):
        return []
    found: list[tuple[str | None, str, Kind]] = []
    for i in options:
        flag = words[i] or ""
        if flag.startswith("-o") and name in ("zstd", "unzstd", "brotli", "lz4"):
            found.append((flag[2:] or word_after(words, i), shown[i], "file"))
        elif abbreviates(flag, "--output"):
            found.append((long_value(words, i), shown[i], "file"))
    if name == "lz4" and len(operands) == 2 and not given("m", "--multiple"):
        found.append((words[operands[1]], shown[operands[1]], "file"))
        operands = operands[:1]
    named_output = bool(found)
    unpacking = name in _UNPACKERS or given("d", "--decompress", "--uncompress")
    kept = given("k", "--keep") or (name in _KEEPERS and not given("jU", "--rm", "--delete"))
    for i in operands:
        word, text = words[i], shown[i]
        if given("r", "--recursive"):
            found.append((word, text, "tree" if unpacking else "changed tree"))
            continue
        if not kept:
            found.append((word, text, "changed"))
        if named_output:
            continue
        if word is None:  # (what it makes beside it: known only as it runs)
            found.append((None, text, "file" if unpacking else "changed"))
        elif unpacking and (suffix := _COMPRESSED.search(word)):
            plain = word[: suffix.start()] + (".tar" if suffix[0].lower().startswith(".t") else "")
            found.append((plain, text, "file"))
        elif not unpacking:
            found.append((word + _COMPRESSORS[name], text, "changed"))
    return found


def _changed_in_place(
    name: str, words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]] | None:
    """What ``rm`` (a directory whole, with ``-r``), ``chmod``/``chown``/``chgrp`` (``-R``:
    whole), ``unlink``, ``rmdir``, ``shred``, ``mkdir``, ``mkfifo`` and a compressor
    change (``changed``: a Write rule holds what they take away too, `rm` and `gzip`
    went past a deny rule `mv` met, a review), and what ``patch`` writes; None: not one
    of them."""
    if name in _CHANGERS:
        operands = _positional(words, *_CHANGERS[name])
        return [(words[i], shown[i], "changed") for i in operands]
    if name == "mknod":  # (`mknod NAME TYPE MAJOR MINOR`: the first is made)
        operands = _positional(words, "mZ", ("--mode", "--context"))[:1]
        return [(words[i], shown[i], "changed") for i in operands]
    if name in ("rm", *_OWN_OPERAND_FIRST):
        long = _OWN_OPERAND_FIRST.get(name, ("", ()))[1]
        operands, options = operands_and_options(words, "", long)
        flags = [words[i] or "" for i in options]
        whole = any(
            f.startswith("--recursive") or (f[1:2] != "-" and set(f[1:]) & set("rR")) for f in flags
        )
        given = any(f.startswith("--reference") for f in flags) or (
            name == "chmod" and any(re.fullmatch(r"-[rwxXst]+", f) for f in flags)
        )  # (`chmod -x f`: its mode looks like an option)
        files = operands if name == "rm" or given else operands[1:]
        followed = name != "rm" and any(
            f == "-L" or (f[1:2] != "-" and "L" in f[1:]) for f in flags
        )
        tree: Kind = "tree" if followed else "changed tree"  # (`-RL`: through every link)
        return [(words[i], shown[i], tree if whole else "changed") for i in files]
    if name == "find" and any(w in ("-delete", None) for w in words):
        return _found_and_deleted(words, shown)
    if name in _COMPRESSORS:
        return _compressed(name, words, shown)
    if name == "patch":  # (`-o OUT`, or the file it is given; else those its diff
        read = patch_input(words)  # names: :func:`diff_targets`)
        operands = operands_and_options(words, PATCH_VALUED, PATCH_LONG_VALUED)[0]
        found: list[tuple[str | None, str, Kind]] = []
        if read.dry_run:
            return found
        if read.reject not in ("", "-"):
            found.append((read.reject, "-r", "file"))
        if read.output != "":
            found.append((read.output, "-o", "file"))
        elif operands:
            found.append((words[operands[0]], shown[operands[0]], "file"))
        return found
    return None


PATCH_VALUED = "pDoirBFVYzdg"
PATCH_LONG_VALUED = ("--strip", "--input", "--output", "--directory", "--reject-file",
                     "--prefix", "--suffix", "--basename-prefix", "--ifdef", "--fuzz",
                     "--get", "--version-control", "--quoting-style", "--reject-format",
                     "--read-only")  # fmt: skip
"""GNU patch's options that take a value."""


@dataclass(frozen=True)
class PatchInput:
    """What ``patch`` is told to read and where it writes (each None where a word is
    known only as it runs)."""

    diff: str | None
    """The diff it reads: ``-i FILE``, its second operand, else "" (its input)."""
    strip: int | None
    """``-pN`` (None: not given, or computed: ``computed`` says which)."""
    directory: str | None
    """``-d DIR`` ("" for none)."""
    output: str | None
    """``-o FILE`` ("": none)."""
    reject: str | None = ""
    """``-r FILE``, where its rejected hunks go ("": beside each file)."""
    backups: tuple[str | None, str | None, str | None] = ("", "", "")
    """``-B PREFIX``, ``-Y PREFIX`` (of the base name), ``-z SUFFIX`` of its backups."""
    named: bool = False
    """A file to patch is given (its first operand): the diff's names are not used."""
    dry_run: bool = False
    """``--dry-run``: it writes nothing."""
    whole_names: bool = False
    """Its diff's names run to a tab (git's), not to their first blank (patch's)."""
    computed: bool = False
    """An option's value is known only as it runs."""


@dataclass(frozen=True)
class PatchRead:
    """A diff ``patch`` reads, as the command names it: a file as written (None: known
    only as it runs, or ``text``), the text a literal here-document gives, and what its
    words say (``words``)."""

    path: str | None
    text: bytes | None
    words: PatchInput


_PATCH_OPTIONS = (("i", "--input"), ("p", "--strip"), ("d", "--directory"), ("o", "--output"),
                  ("r", "--reject-file"), ("B", "--prefix"), ("Y", "--basename-prefix"),
                  ("z", "--suffix"))  # fmt: skip


def git_apply_inputs(words: Sequence[str | None]) -> list[PatchInput] | None:
    """What ``git apply`` (``words``: after ``apply``) reads to write the work tree:
    a :class:`PatchInput` for each patch file ("" for its input), names taking off one
    part (``-pN``: N), in ``--directory``; none where it writes no file (``--check``,
    ``--stat``, ``--cached``…); None where an option is known only as it runs."""
    operands, options = operands_and_options(
        words,
        "pC",
        ("--directory", "--exclude", "--include", "--whitespace", "--build-fake-ancestor"),
    )
    strip: int | None = 1
    directory: str | None = ""
    flags = [words[i] for i in options]
    if None in flags:
        return None
    applies = "--apply" in flags  # (it turns applying on again: `--stat --apply`, a review)
    if not applies and any(
        f in ("--check", "--stat", "--numstat", "--summary", "--cached")
        or abbreviates(f, "--build-fake-ancestor")
        for f in flags
    ):
        return []
    for i in options:
        flag = words[i] or ""
        if flag.startswith("-p"):
            value = flag[2:] or word_after(words, i)
            strip = int(value) if value is not None and value.isdigit() else None
        elif abbreviates(flag, "--directory"):
            directory = long_value(words, i)
    if strip is None or directory is None:
        return None
    files = [words[i] for i in operands] or [""]
    return [
        PatchInput(diff=f, strip=strip, directory=directory, output="", whole_names=True)
        for f in files
    ]


def patch_input(words: Sequence[str | None]) -> PatchInput:
    """What ``patch``'s words say it reads and where (see :class:`PatchInput`)."""
    operands, options = operands_and_options(words, PATCH_VALUED, PATCH_LONG_VALUED)
    values: dict[str, str | None] = {}
    for i in options:
        flag = words[i] or ""
        for letter, long in _PATCH_OPTIONS:
            if flag.startswith("--") and abbreviates(flag, long):
                values[letter] = long_value(words, i)
            elif flag[:1] == "-" and flag[1:2] != "-" and letter in flag[1:]:
                given = short_options(flag, PATCH_VALUED)
                if given and given[-1] == f"-{letter}":
                    values[letter] = flag[len(given) + 1 :] or word_after(words, i)
    diff = values.get("i", words[operands[1]] if len(operands) > 1 else "")
    strip = values.get("p")
    computed = any(v is None for v in values.values()) or None in words
    return PatchInput(
        diff=diff,
        strip=int(strip) if strip is not None and strip.isdigit() else None,
        directory=values.get("d", ""),
        output=values.get("o", ""),
        reject=values.get("r", ""),
        backups=(values.get("B", ""), values.get("Y", ""), values.get("z", "")),
        named=bool(operands),
        dry_run=any(abbreviates(words[i], "--dry-run") for i in options),
        computed=computed or (strip is not None and not strip.isdigit()),
    )


DIFF_READ_LIMIT = 16 * 1024 * 1024
"""Bytes of a diff read to find the files it names: a longer one asks."""
_DIFF_NAME = re.compile(
    rb"^[ \tX]*(?:\+\+\+|---|\*\*\*|Index:)[ \t]+(.+)$|^[ \tX]*diff --git (\S+) (\S+)$"
    rb"|^[ \tX]*(?:rename (?:from|to)|copy to) (.+)$",
    re.MULTILINE,
)
"""A diff's names: what follows its headers, also indented (GNU patch takes a diff
indented, or each line after an `X`: `  --- a/x` went past a deny rule, a review)."""
_HUNK_RANGE = re.compile(rb"^\d+(?:,\d+)? (?:\*\*\*\*|----)")


def diff_targets(diff: bytes, strip: int | None, whole_names: bool = False) -> list[str] | None:
    """The files a diff has ``patch`` write or remove (each name its headers give, up to
    its first blank as GNU patch reads it, to its first tab with ``whole_names``, as git
    does: `a/my dir/.env`, a review; ``strip`` slashes taken off as ``-pN`` does, the base
    name alone without it; git's renamed names too, also as written; names of
    ``/dev/null`` left out), or None: a C-quoted name with escapes, which it cannot read
    as patch does."""
    found: list[str] = []
    for match in _DIFF_NAME.finditer(diff):
        for raw in (g for g in match.groups() if g is not None):
            if _HUNK_RANGE.match(raw):  # (`*** 1,5 ****`, `--- 1,5 ----`: a context hunk)
                continue
            if raw.startswith(b'"'):
                end = raw.find(b'"', 1)
                if end < 0 or b"\\" in raw[: end + 1]:
                    return None
                raw = raw[1:end]
            elif whole_names:
                raw = raw.split(b"\t", 1)[0].rstrip(b"\r")
            else:  # (`--- .env junk`: patch takes `.env`, a review)
                raw = (raw.split(None, 1) or [b""])[0]
            name = os.fsdecode(raw)
            if not name or name == "/dev/null":
                continue
            found += [n for n in (_stripped(name, strip),) if n]
            if match.group(4) is not None:  # (git's own names: no `a/`, `b/` to take off)
                found.append(name)
    return list(dict.fromkeys(found))


def _stripped(name: str, strip: int | None) -> str | None:
    """``name`` as ``-pN`` leaves it: the smallest prefix holding N slashes taken off (a
    run of slashes counting as one: `/x/y` by one is `x/y`, a review), None where it has
    fewer; without ``-p``, its base name."""
    if strip is None:
        return name.rstrip("/").rpartition("/")[2] or None
    rest = name
    for _ in range(strip):
        at = rest.find("/")
        if at < 0:
            return None
        rest = rest[at:].lstrip("/")
    return rest or None


def files_written(
    name: str, rest: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """The files a program writes by its words, as a redirection would (each with its
    word as written, None where it is known only as it runs, and how, :data:`Kind`):
    ``tee FILE…``, ``sort -o FILE``, ``time -o FILE`` (a wrapper: given its own words),
    ``uniq IN OUT``, ``xxd IN OUT``, ``tree -o FILE``, ``dd of=FILE``, git's
    ``--output FILE``, ``history -w FILE``, what ``cp``, ``mv``, ``ln`` and ``install``
    write to, ``touch`` and ``truncate`` operands, what ``curl`` and ``wget`` download to
    (sed's: ``texttools.script_code``).
    Write rules and the files git or a shell runs commands from apply to them (`sort -o .git/config` with
    `Bash(sort *)` set a `core.fsmonitor` the next `git status` ran: a review; so did
    `sed -i … .git/config` and `cp x .git/config`, a trial)."""
    words = list(rest)
    at: list[tuple[int, str]] = []
    made: list[tuple[str | None, str, Kind]] = []  # (directories git makes)
    if name in COPIERS:
        return _copied_to(name, words, shown)
    if name in _DOWNLOADS:
        return _downloaded_to(name, words, shown)
    if name == "tar":
        return _tar_writes(words, shown)
    if name == "unzip":
        return _unzip_writes(words, shown)
    if name in _ARCHIVERS:  # (`zip OUT.zip …`, `split IN PREFIX`, `rsync SRC… DEST`)
        short, long, place, kind, files = _ARCHIVERS[name]
        operands = _positional(words, short, long)
        if name == "rsync" and len(operands) < 2:
            operands = []  # (one operand: it lists, writes nothing)
        picked = operands[place : place + 1] if place >= 0 else operands[place:]
        named = [(words[i], shown[i], kind) for i in picked
                 if words[i] is None or not _REMOTE.match(words[i] or "")]  # fmt: skip
        if name == "split":  # (its pieces, `PREFIXaa`…; `xaa` where it runs: a prefix
            prefix = words[picked[0]] if picked else "x"  # `/etc/` writes `/etc/xaa`)
            text = shown[picked[0]] if picked else "split"
            named = [(None if prefix is None else f"{prefix}aa", text, "file")]
        for i, word in enumerate(words):
            given = next((o for o in files if abbreviates(word, o) or word == o), None)
            if given is not None:
                value = long_value(words, i) if given.startswith("--") else word_after(words, i)
                named.append((value, shown[i], "file"))
        return [(value, text, kind) for value, text, kind in named if value not in ("", "-")]
    changed = _changed_in_place(name, words, shown)
    if changed is not None:
        return [(value, text, kind) for value, text, kind in changed if value != "-"]
    if name == "sudoedit" or (name == "sudo" and _edits(words)):  # (the files it edits)
        at = [(i, "") for i in _positional(words, *_SUDO_VALUED) if words[i] != "--"]
    elif name in _TOUCHERS:
        at = [(i, "") for i in _positional(words, *_TOUCHERS[name])]
    elif name == "tee":
        at = [(i, "") for i in _positional(words, "")]
    elif name == "sort":
        at = sort_options(words, shown)[1]
    elif name == "shuf":  # (its `-o FILE` as sort's: a trial)
        at = sort_options(words, shown, "ino", SHUF_LONG_VALUED)[1]
    elif name == "time":  # (GNU time's `-o FILE`, its own words only: a trial)
        at = sort_options(words, shown, TIME_VALUED, TIME_LONG_VALUED)[1]
    elif name == "uniq":
        longs = ("--skip-fields", "--skip-chars", "--check-chars")
        at = [(i, "") for i in _positional(words, "fsw", longs)[1:2]]
    elif name == "xxd":
        at = [(i, "") for i in _xxd_files(words)[1:2]]
    elif name == "git":  # (`--output`; `archive -o FILE`, `-oFILE`: a trial)
        sub = git_options(words)
        made = _git_writes(words[sub:], shown[sub:], words[:sub])
        archive = sub < len(words) and words[sub] == "archive"
        outputs = sub >= len(words) or words[sub] not in _GIT_WITHOUT_OUTPUT
        ended = words.index("--", sub) if "--" in words[sub:] else len(words)
        for i, w in enumerate(words[:ended]):
            if w == "--output" or (archive and i > sub and w == "-o"):
                at.append((i + 1, ""))
            elif (
                w is None  # (git's own options' values, its subcommand: no `--output`
                and (outputs if i > sub else isinstance(shown[i], LineSplit))  # unless
                and may_be_option(shown[i], ["--output"], "o" if archive else "")  # split)
            ):
                at.append((i, ""))
            elif w is not None and w.startswith("--output="):
                at.append((i, "--output="))
            elif archive and i > sub and w is not None and w[:2] == "-o":
                at.append((i, "-o"))
    elif name == "tree":  # (`-o FILE`; grouped, each option of the group that takes a
        # value takes the next word in turn: `-Lo 1 FILE`, `-oL FILE 1`, a trial)
        for i, w in enumerate(words):
            if w is None and may_be_option(shown[i], [], "o", _TREE_VALUED):
                at.append((i, ""))
            elif w is not None and w[:1] == "-" and w[1:2] != "-" and "o" in w:
                valued = [letter for letter in w[1:] if letter in _TREE_VALUED]
                at.append((i + 1 + valued.index("o"), ""))
    elif name == "dd":  # (`of=FILE`; `"of=$F"` computed)
        at = [(i, "of=") for i, w in enumerate(words)
              if (w or re.sub(r"[\"']", "", shown[i])).startswith("of=")]  # fmt: skip
    elif name == "history":  # (`-w FILE`, `-w -- FILE`; no file: `$HISTFILE`, computed)
        for i, w in enumerate(words):
            if w is None or (w[:1] == "-" and set(w[1:]) & set("aw")):
                j = i + 1 + (word_after(words, i) == "--")
                if j < len(words) or w is None:
                    at.append((j if w is not None else i, ""))
                else:
                    return [(None, "$HISTFILE", "file")]
    found = [*made, *(
        (_value_at(words, i, option), shown[i] if i < len(shown) else "", "file")
        for i, option in at
        if i < len(words) and words[i] != "-"
    )]  # fmt: skip
    return found


def git_place(own: Sequence[str | None]) -> str | None:
    """Where git's own ``-C DIR`` options take it ("": where it runs; None: known only as
    it runs): each relative to the one before, as git reads them."""
    place: str | None = ""
    for i, word in enumerate(own):
        if word == "-C":
            value = word_after(own, i)
            place = None if value is None or place is None else os.path.join(place, value)
    return place


def placed_by_git(place: str | None, path: str | None) -> str | None:
    """``path`` as git, moved to ``place`` by ``-C``, finds it."""
    if path is None or path.startswith(("/", "~")) or place == "":
        return path
    return None if place is None else os.path.join(place, path)


_WORK_TREE_WRITERS = frozenset({
    "checkout", "switch", "reset", "restore", "stash", "merge", "pull", "rebase",
    "cherry-pick", "revert", "checkout-index", "read-tree", "apply", "am", "mv", "rm",
    "clean", "submodule", "sparse-checkout", "bisect",
})  # fmt: skip
"""git subcommands that write in the work tree: where ``--work-tree=DIR`` says, or,
with ``--git-dir`` alone, where git runs (`git -C /etc --git-dir=r checkout -- .`)."""


_GIT_OPTION_WRITES: dict[str, tuple[tuple[str, ...], Kind]] = {
    "bugreport": (("-o", "--output-directory"), "tree"),
    "diagnose": (("-o", "--output-directory"), "tree"),
    "mailsplit": (("-o",), "tree"),
    "fast-export": (("--export-marks",), "file"),
    "fast-import": (("--export-marks",), "file"),
    "credential-store": (("--file",), "file"),
    "format-patch": (("-o", "--output-directory"), "tree"),
}
"""git subcommands that write where an option says (a review wrote under a deny rule's
folder by each)."""


_GIT_MAKERS: dict[tuple[str, ...], tuple[str, tuple[str, ...], int, Kind]] = {
    # subcommand: short options with a value, long ones, the operand written, how
    ("init",): ("b", ("--template", "--separate-git-dir", "--object-format", "--initial-branch",
                      "--ref-format"), 0, "tree"),
    ("clone",): ("obcju", ("--origin", "--branch", "--config", "--jobs", "--upload-pack",
                           "--template", "--reference", "--reference-if-able", "--depth",
                           "--separate-git-dir", "--shallow-since", "--shallow-exclude",
                           "--filter", "--server-option", "--bundle-uri", "--ref-format"),
                  1, "tree"),
    ("worktree", "add"): ("bB", ("--reason",), 0, "tree"),
    ("worktree", "move"): ("", (), 1, "tree"),
    ("bundle", "create"): ("", ("--version",), 0, "file"),
}  # fmt: skip
"""git subcommands that write where an operand says: a repository, a work tree, a
bundle."""


def _git_writes(
    words: Sequence[str | None], shown: Sequence[str], own: Sequence[str | None] = ()
) -> list[tuple[str | None, str, Kind]]:
    """What a git subcommand writes besides ``--output`` (``words``: from the subcommand;
    ``own``: git's own options): a work tree, where an option says, what it makes (a
    review wrote under a ``Write`` deny rule's folder by each)."""
    if not words or words[0] is None:
        return []
    if words[0] in _WORK_TREE_WRITERS:
        found = _git_work_tree(words, shown, own)
    elif words[0] in _GIT_OPTION_WRITES:
        found = _git_option_writes(words, shown)
    else:
        found = _git_made(words, shown, own)
    if words[0] in _GIT_PATH_WRITERS:
        found += _git_paths(words, shown)
    return [(value, text, kind) for value, text, kind in found if value != ""]


_GIT_PATH_WRITERS: dict[str, tuple[str, tuple[str, ...]]] = {
    # subcommand: short options with a value, long ones
    "checkout": ("bB", ("--orphan", "--conflict", "--pathspec-from-file")),
    "restore": ("s", ("--source", "--conflict", "--pathspec-from-file")),
    "checkout-index": ("", ("--prefix", "--stage")),
    "rm": ("", ("--pathspec-from-file",)),
    "clean": ("e", ("--exclude",)),
    "stash": ("m", ("--message", "--pathspec-from-file")),  # (`stash push -- PATHS`)
    "mv": ("", ()),
    "merge-file": ("L", ("--marker-size",)),  # (its first operand, but with `-p`)
    "submodule": ("bj", ("--branch", "--name", "--reference", "--depth", "--jobs", "--filter")),
    "am": ("pCS", ("--directory", "--exclude", "--include", "--whitespace", "--resolvemsg")),
}
"""git subcommands that write (or remove) the files they name in the work tree, each a
``changed tree``: held by Write rules, and what makes a folder a git directory asks (a
trial's `git checkout HEAD~1 -- protected/a.txt` and `git clean -fdx` went past Write
rules that `cp` and `rm` met, and a `git checkout` of a committed config made a folder
a git directory). Not more: git writes tracked files there, never in a git directory,
and `git checkout -- .` would ask in every repository (``git mv``: as ``mv``)."""


def _git_paths(
    words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """The paths :data:`_GIT_PATH_WRITERS` subcommands write: their operands (those after
    ``--`` where it is given, the tree-ish before it not; without it, a branch may be
    taken for a path, as nothing but the repository tells them apart, but for a lone
    quoted word known only as it runs, a branch in a loop, ``git checkout "$b"``); one
    known only as it runs, or read from a file, asks only where Write rules are; none
    for a dry run (``-n``), ``rm --cached`` or ``restore --staged`` (the index alone);
    ``clean`` with none cleans where it runs; ``stash push -- PATHS`` puts those back
    as they were; ``mv`` as ``mv``."""
    name = words[0] or ""
    if name == "am":  # (what its mails' patches write: known only as it runs, as `apply`'s;
        quiet = ("--abort", "--quit", "--show-current-patch")  # these apply none)
        if any((w or "").split("=", 1)[0] in quiet for w in words[1:]):
            return []
        return [(None, "the files git am's patches name", "changed tree")]
    if name == "submodule":  # (`add URL [PATH]`, `update [PATHS]`: a checkout there;
        at = 1  # `deinit PATHS` removes one, `absorbgitdirs PATHS` moves its `.git`)
        while at < len(words) and words[at] in ("-q", "--quiet"):
            at += 1
        sub = words[at] if at < len(words) else None
        if sub not in ("add", "update", "deinit", "absorbgitdirs"):
            return []
        short, long = _GIT_PATH_WRITERS[name]
        operands, options = operands_and_options(words[at + 1 :], short, long)
        named = [words[at + 1 + i] for i in operands]
        if sub == "deinit" and any(words[at + 1 + i] in ("-a", "--all") for i in options):
            named.append(None)  # (every submodule's: known only as it runs)
        if sub == "add":
            url = named[0] if named else ""
            named = named[1:2] or [None if url is None else _basename(url.rstrip("/"))]
            named = [n[:-4] if n is not None and n.endswith(".git") else n for n in named]
        return [(_pathspec(n), "submodule", "changed tree") for n in named]
    if name == "stash":  # (`stash push …`, or `stash -- …`: its pathspecs; the rest is
        if words[1:2] == ["push"]:  # the whole work tree's, not judged, as `reset`'s)
            return _git_paths(words[1:], shown[1:])
        return _git_paths(["push", *words[1:]], ["push", *shown[1:]]) if "--" in words else []
    short, long = _GIT_PATH_WRITERS["stash" if name == "push" else name]
    operands, options = operands_and_options(words[1:], short, long)
    flags = [words[1 + i] or "" for i in options]
    if (
        (name in ("rm", "clean", "mv") and any(
            abbreviates(f, "--dry-run") or _letter(f, "n") for f in flags))
        or (name == "rm" and any(abbreviates(f, "--cached") for f in flags))
        or (
            name == "restore"
            and any(abbreviates(f, "--staged") or _letter(f, "S") for f in flags)
            and not any(abbreviates(f, "--worktree") or _letter(f, "W") for f in flags)
        )
    ):  # fmt: skip
        return []
    if name == "merge-file":  # (`-p`: to its output)
        if any(f in ("-p", "--stdout") for f in flags):
            return []
        operands = operands[:1]
    if name == "mv":  # (its options take no value: a word known only as it runs is a name)
        named = [words[1 + i] for i in operands]
        return _copied_to("mv", ["--", *named], ["--", *(shown[1 + i] for i in operands)])
    if name == "checkout" and "--" in words[1:]:
        ended = words.index("--", 1)
        operands = [i for i in operands if 1 + i > ended]
    elif name == "checkout" and len(operands) == 1 and words[1 + operands[0]] is None:
        lone = shown[1 + operands[0]][:1] == '"'  # (a branch, `for b in …`: one quoted word)
        operands = [] if lone else operands
    # (`checkout`, `restore`, `stash push` and `checkout-index` put back tracked files
    # alone: a directory named is not walked, where an untracked `.env` under a Write
    # deny rule had `git checkout .` denied, helper 222; `rm` and `clean` take its files)
    kind: Kind = "changed tree" if name in ("rm", "clean") else "changed"
    found: list[tuple[str | None, str, Kind]] = [
        (_pathspec(words[1 + i]), shown[1 + i], kind) for i in operands
    ]
    if any(abbreviates(f, "--pathspec-from-file") for f in flags) or (
        name == "checkout-index" and any(f in ("-a", "--all", "--stdin") for f in flags)
    ):
        found.append((None, f"the paths git {name} reads", kind))
    if name == "clean" and not operands:
        found.append((".", "clean", "changed tree"))
    return found


def _pathspec(word: str | None) -> str | None:
    """A git pathspec as a path: None (known only as it runs) for one with magic, which
    names paths from the top, in any case, or all but some (``:/protected``,
    ``:(icase)PROTECTED``, ``:!x``: each went past the Write rules, helper 219)."""
    return None if word is None or word.startswith(":") else word


def _letter(word: str, letter: str) -> bool:
    """Whether the short option group ``word`` holds ``letter`` (``-SW``)."""
    return word[:1] == "-" and word[1:2] != "-" and letter in word[1:]


def _git_work_tree(
    words: Sequence[str | None], shown: Sequence[str], own: Sequence[str | None]
) -> list[tuple[str | None, str, Kind]]:
    """The work tree ``--work-tree=DIR`` names (with ``--git-dir`` alone: where git runs,
    its names), and ``checkout-index --prefix=DIR/``."""
    trees = [long_value(own, i) for i, w in enumerate(own) if abbreviates(w, "--work-tree")]
    found: list[tuple[str | None, str, Kind]] = [(t, "--work-tree", "tree") for t in trees]
    if not trees and any(abbreviates(w, "--git-dir") for w in own):
        found.append((".", "--git-dir", "names"))
    for i, word in enumerate(words):
        if words[0] == "checkout-index" and abbreviates(word, "--prefix"):
            prefix = long_value(words, i)
            tree = prefix if prefix is None or prefix.endswith("/") else os.path.dirname(prefix)
            found.append((tree or ".", shown[i], "tree"))
    return found


def _git_option_writes(
    words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """Where :data:`_GIT_OPTION_WRITES` options say (``format-patch`` with none: its
    patches where it runs)."""
    options, how = _GIT_OPTION_WRITES[words[0] or ""]
    found: list[tuple[str | None, str, Kind]] = []
    for i, word in enumerate(words[1:], 1):
        for option in options:
            if option.startswith("--") and abbreviates(word, option):
                found.append((long_value(words, i), shown[i], how))
            elif not option.startswith("--") and (word or "").startswith(option):
                found.append(((word or "")[2:] or word_after(words, i), shown[i], how))
    if words[0] == "format-patch" and not found:
        found.append((".", "format-patch", "names"))
    return found


def _git_made(
    words: Sequence[str | None], shown: Sequence[str], own: Sequence[str | None]
) -> list[tuple[str | None, str, Kind]]:
    """What ``git init DIR``, ``git clone URL DIR`` (or the name its URL ends in), ``git
    worktree add DIR``/``move A DIR``, ``--separate-git-dir=DIR`` and ``git bundle
    create FILE`` make. A repository made afresh is named by its ``.git/description``
    (``git init`` alone: ``./.git``, or ``--git-dir=DIR``): it holds no code of the
    command's (`cd /etc && git init` wrote there under a deny rule)."""
    for path, (short, long, operand, kind) in _GIT_MAKERS.items():
        if tuple(words[: len(path)]) != path:
            continue
        rest, texts = words[len(path) :], shown[len(path) :]
        made: list[tuple[str | None, str, Kind]] = [
            (long_value(rest, i), texts[i], "tree")
            for i, word in enumerate(rest)
            if word is not None and abbreviates(word, "--separate-git-dir")
        ]
        operands = _positional(rest, short, long)
        if operand < len(operands):
            i = operands[operand]
            made.append((rest[i], texts[i], kind))
        if path == ("clone",) and len(operands) == 1:  # (into the name its URL gives)
            url = rest[operands[0]]
            named = None if url is None else re.sub(r"(?:/?\.git)?/*$", "", url)
            name = None if named is None else re.split(r"[/:]", named)[-1]
            made.append((name, texts[operands[0]], kind))
        if path == ("init",):
            return _git_init(made, rest, bool(operands), own)
        return made
    return []


def _git_init(
    made: list[tuple[str | None, str, Kind]],
    rest: Sequence[str | None],
    named: bool,
    own: Sequence[str | None],
) -> list[tuple[str | None, str, Kind]]:
    """What ``git init`` makes (``made``: its ``--separate-git-dir``, then the directory it
    is ``named``, if any): a repository's ``description``, and the ``HEAD`` of a git
    directory of another name (``--bare``, ``--separate-git-dir``, ``--git-dir``), which
    takes as its config a ``config`` already there (`git init --bare d` after `printf
    '[alias]…' > d/config`: the alias ran, a review; ``permissions``)."""
    bare = any(w is not None and abbreviates(w, "--bare") for w in [*own, *rest])
    given = [long_value(own, i) for i, w in enumerate(own) if abbreviates(w, "--git-dir")]
    separate = made[: len(made) - named]
    heads = [_head(d, text) for d, text, _ in separate]
    if named and made[-1][0] is not None:
        directory, text, _ = made[-1]
        inner = "" if bare else "/.git"
        made[-1] = (f"{(directory or '').rstrip('/')}{inner}/description", text, "file")
        if bare:
            heads.append(_head(directory, text))
    elif not named:
        heads += [_head(g, "--git-dir") for g in given]
        if bare and not given:
            heads.append(_head(".", "init"))
        made += [(g, "--git-dir", "tree") for g in given] or [(".git/description", "init", "file")]
    return made + heads


def _head(git_dir: str | None, text: str) -> tuple[str | None, str, Kind]:
    """The ``HEAD`` a git directory is made with (None: known only as it runs)."""
    return (None if git_dir is None else f"{git_dir.rstrip('/')}/HEAD", text, "file")


_GIT_WITHOUT_OUTPUT = frozenset({
    "add", "branch", "checkout", "cherry-pick", "clean", "clone", "commit", "fetch", "init",
    "ls-files", "merge", "mv", "pull", "push", "rebase", "remote", "reset", "restore",
    "revert", "rev-parse", "rm", "status", "switch", "tag", "worktree",
})  # fmt: skip
"""git subcommands that take no ``--output``: a word of theirs known only as it runs
writes nothing (``git push "$(…)"``, ``git checkout "$b"`` in a loop)."""


_TREE_VALUED = "LPIHTo"
"""tree's options that take a value (its parser gives none attached: ``-oFILE`` is ``-o``,
``-F``, ``-I``, ``-L``, ``-E``)."""


Kind = Literal["file", "tree", "names", "last", "last tree", "changed", "changed tree"]
"""How a program writes a target: ``file``; ``tree``, a directory written whole (``cp
-r``, ``mv``, a name known only as it runs copied into one); ``names``, a directory a
glob's names land in (no dotfile); ``last``, a last operand
written as a file, or into, where it is a directory already (``cp a dst``); ``last
tree``, the same copied or moved whole; ``changed`` (``changed tree``: a directory and
all in it), removed, made, or overwritten with nothing of the command's (``rm``,
``chmod``, ``gzip``): Write rules hold it, but it puts no commands into a file
something runs, and one known only as it runs asks only where Write rules are."""


def glob_folder(written: str) -> str | None:
    """The directory of a written word whose name alone is a glob (``src/*.py``: ``src``;
    ``*.txt``: ``.``), or None when more of it is known only as it runs (``"$f"``, which
    may hold a ``/``, ``$D/x``, ``*/x``, a name a glob may start with a dot in)."""
    folder, _, name = written.rpartition("/")
    if re.search(r"[$`\\\"'{*?\[~<]", folder) or re.search(r"[$`<\\\"'(]|\[\^|\[\[", name):
        return None  # (quoted or escaped parts, `[^…]`, `[[:…:]]`, extglob's `@(…)`: bash
        # reads them otherwise than the check's glob does, a review)
    if not re.search(r"[*?\[]", name):  # (computed otherwise: `"$f"`, what xargs appends)
        return None
    if name.startswith("."):
        return None
    return (folder or "/") if written.startswith("/") else (folder or ".")


def _copied_to(
    name: str, words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """What ``cp``, ``mv``, ``ln`` or ``install`` writes: ``-t DIR``'s (or the last
    operand's, a directory when several come before it) ``DIR/NAME`` for each source
    operand (``DIR/SOURCE`` with ``--parents``); with one source, also the last operand
    itself (``last``: a file, or a directory it writes into); with ``-T``, that file
    alone; ``ln NAME`` alone links ``./NAME``; each with its backup beside it (``-b``,
    ``-S SUFFIX``: `cp -bSg x .git/confi` wrote `.git/config`, a review); ``mv``'s
    sources too, which it takes away; ``install -d``'s operands, made."""
    if option_from_a_word(name, words, shown):
        return []  # (it asks: see there)
    short, long = COPIERS[name]
    operands, options = operands_and_options(words, short, long)
    into: str | None = None
    target = file_only = parents = directories = False
    tree = name == "mv"
    suffixes: list[str | None] = []
    named = ""  # (-t's word as written)
    for index in options:
        word = words[index] or ""
        flag = word.split("=", 1)[0]
        value_at = index + ("=" not in word)  # (a long option's value: attached or next)
        if flag.startswith("--"):
            file_only = file_only or abbreviates(flag, "--no-target-directory")
            parents = parents or (name == "cp" and abbreviates(flag, "--parents"))
            tree = tree or (name == "cp" and any(
                abbreviates(flag, o) for o in ("--recursive", "--archive")))  # fmt: skip
            directories = directories or (name == "install" and abbreviates(flag, "--directory"))
            if abbreviates(flag, "--backup"):
                suffixes.append("~")
            if abbreviates(flag, "--suffix"):
                suffixes.append(_value_at(words, value_at, flag + "="))
            if abbreviates(flag, "--target-directory"):
                target, into = True, _value_at(words, value_at, flag + "=")
                named = shown[value_at] if value_at < len(shown) else ""
            continue
        letters = short_options(word, short)
        file_only = file_only or "-T" in letters
        tree = tree or (name == "cp" and bool({"-r", "-R", "-a"} & set(letters)))
        directories = directories or (name == "install" and "-d" in letters)
        if "-b" in letters:
            suffixes.append("~")
        if letters and letters[-1] in ("-t", "-S"):
            attached = word[len(letters) + 1 :]
            at = index + (not attached)
            value = attached or (_value_at(words, at, "") if at < len(words) else "")
            if letters[-1] == "-S":
                suffixes.append(value)
            else:
                target, into, named = True, value, shown[at] if at < len(shown) else ""
    if directories:  # (`install -d DIR…`: each made)
        return [(words[k], shown[k], "file") for k in operands]
    whole: Kind = "tree" if tree else "file"
    taken: list[tuple[str | None, str, Kind]] = []
    if name == "mv":  # (what it takes away)
        taken = [(words[k], shown[k], "tree") for k in operands[: None if target else -1]]
    if target:
        destination, sources = named, operands
    elif len(operands) >= 2:
        destination, sources = shown[operands[-1]], operands[:-1]
        into = words[operands[-1]]
    elif name == "ln" and len(operands) == 1:
        return [(_basename(words[operands[0]]), shown[operands[0]], "file")]
    else:
        return []
    made: list[tuple[str | None, Kind]] = []
    if into is None or (file_only and not target):
        made.append((into, whole))
    else:
        if not target and len(sources) == 1:
            made.append((into, "last tree" if tree else "last"))
        for source in sources:
            base = words[source] if parents else _basename(words[source])
            if base is None:  # (a name known as it runs: whatever lands in the directory;
                # a glob's, none of its dotfiles: `cp -r tmpl/* .`)
                made.append(
                    (f"{into.rstrip('/')}/.", "names" if glob_folder(shown[source]) else "tree")
                )
            else:
                made.append((f"{into.rstrip('/') or '/'}/{base.lstrip('/')}", whole))
    backups: list[tuple[str | None, Kind]] = [
        (m + s if m is not None and s is not None else None, "file")
        for m, _ in made
        for s in suffixes
    ]
    return [*((m, destination, kind) for m, kind in [*made, *backups]), *taken]


_LINKING = frozenset({"-s", "-l", "-d", "-P", "-a", "-r", "-R"})


_LINKING_LONG = ("--symbolic-link", "--link", "--no-dereference", "--archive", "--recursive")


def makes_links(name: str, words: Sequence[str | None]) -> bool:
    """Whether what ``name`` writes may be a link, leading anywhere: ``ln``'s, ``mv``'s (a
    link moved) and ``cp``'s with ``-s``, ``-l`` (a hard link), ``-d``, ``-P``, ``-a``,
    ``-r`` or ``-R`` (links copied as links). A write through such a name later in the
    command goes where the link leads, which no check made before it runs can see
    (`ln -s protected l; echo > l/x`, `cp -l protected/f g; echo > g`: a trial)."""
    if name in ("ln", "link", "mv"):
        return True
    if name != "cp":
        return False
    short, long = COPIERS[name]
    for index in operands_and_options(words, short, long)[1]:
        word = words[index] or ""
        flag = word.split("=", 1)[0]
        if flag.startswith("--"):
            if any(abbreviates(flag, option) for option in _LINKING_LONG):
                return True
        elif _LINKING & set(short_options(word, short)):
            return True
    return False


_CURL_VALUED = "AbcdDeEFHKmoQrTuUwxXyYzCPt"
"""curl's short options that take a value (``-o FILE``, grouped too: ``-sSLo FILE``)."""


_CURL_LONG_VALUED = ("--output", "--output-dir", "--config", "--data", "--header", "--user",
                     "--request", "--user-agent", "--cookie", "--cookie-jar", "--dump-header",
                     "--trace", "--trace-ascii", "--stderr", "--upload-file", "--form",
                     "--proxy", "--referer", "--max-time", "--retry", "--range", "--write-out",
                     "--libcurl", "--etag-save", "--hsts", "--alt-svc")  # fmt: skip
"""Its long ones (those of them that write files are :data:`_DOWNLOADS`'s)."""


_DOWNLOADS = {  # files (short, long), folders (short, long)
    "curl": ("ocD", ("--output", "--dump-header", "--trace", "--trace-ascii", "--cookie-jar",
                     "--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc"),
             "", ("--output-dir",)),
    "wget": ("Ooa", ("--output-document", "--output-file", "--append-output", "--save-cookies",
                     "--warc-file", "--rejected-log", "--hsts-file"),
             "P", ("--directory-prefix",)),
}  # fmt: skip
"""The options of ``curl`` and ``wget`` that name a file they write, or their folder."""


_WGET_VALUED = "oaeiBtOTwQPlARDIXU"


_SET_ELSEWHERE = {  # short, long: what they write is set in a text or a file of its own
    "curl": ("K", ("--config",)),
    "wget": ("e", ("--execute", "--config")),
}
"""Options whose value may say where curl or wget write (`curl -K cfg` with `output =`,
`wget -e output_document=…`, a review): what they write is known only as they run."""


_WGETRC_WRITES = {
    "outputdocument": "file", "logfile": "file", "savecookies": "file", "warcfile": "file",
    "rejectedlog": "file", "hstsfile": "file", "dirprefix": "folder",
    "contentdisposition": "naming", "trustservernames": "naming", "dirstruct": "naming",
    "recursive": "naming", "mirror": "naming", "pagerequisites": "naming",
}  # fmt: skip
"""The wgetrc commands (``wget -e``) that say where it writes: a file, its folder, or
that the names in its folder come as it runs."""


def _wgetrc_write(command: str | None) -> tuple[str, str | None] | None:
    """What a wgetrc command given with ``wget -e`` says of where wget writes (see
    :data:`_WGETRC_WRITES`; a command known only as it runs may say any file), None
    where it says nothing of it (``robots=off``)."""
    if command is None:
        return ("file", None)
    key, _, value = command.partition("=")
    how = _WGETRC_WRITES.get(re.sub(r"[-_\s]", "", key).lower())
    return None if how is None else (how, value.strip())


_NAMED_ELSEWHERE = {  # short, long, flags: the server names the file, or a folder per URL
    "curl": ("J", ("--remote-header-name",)),
    "wget": (
        "xbrmp",
        (
            "--content-disposition",
            "--trust-server-names",
            "--force-directories",
            "--background",
            "--recursive",
            "--mirror",
            "--page-requisites",
        ),
    ),
}
"""Options under which the names written in the folder come as they run (`curl -OJ`,
`wget --content-disposition` wrote `.envrc`; `wget -x -nH` a path of the URL's; `-r`,
`-m`, a tree; `-b` its log)."""


def _downloaded_to(
    name: str, words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """Where ``curl`` and ``wget`` write (:data:`_DOWNLOADS`; a file named after its URL
    in the folder: ``curl -O``, ``wget`` without ``-O``; curl's ``-o`` in its
    ``--output-dir``): a trial's `curl -o` under a denied folder went unchecked. What they
    write is known only as they run under :data:`_SET_ELSEWHERE`, a URL glob (``{a,b}``,
    ``[1-3]``, a ``#1`` in ``-o``) and, in the folder, :data:`_NAMED_ELSEWHERE`."""
    files, long_files, folders, long_folders = _DOWNLOADS[name]
    valued = _CURL_VALUED if name == "curl" else _WGET_VALUED
    long_valued = _CURL_LONG_VALUED if name == "curl" else (*long_files, *long_folders)
    elsewhere, long_elsewhere = _SET_ELSEWHERE[name]
    naming, long_naming = _NAMED_ELSEWHERE[name]
    operands, options = operands_and_options(words, valued, long_valued)
    found: list[tuple[str | None, str]] = []
    folder: tuple[str | None, str] | None = None
    named_by_url, named_as_it_runs, globbing = name == "wget", False, name == "curl"

    def set_elsewhere(value: str | None, said: str, wgetrc: bool) -> None:
        """An option of :data:`_SET_ELSEWHERE` (``wgetrc``: a wgetrc command, read)."""
        nonlocal folder, named_as_it_runs
        told = _wgetrc_write(value) if wgetrc else ("file", None)
        if told is not None and told[0] == "folder":
            folder = (told[1], said)
        elif told is not None:
            found.extend([(told[1], said)] if told[0] == "file" else [])
            named_as_it_runs |= told[0] == "naming"

    def writes_out(value: str | None) -> bool:  # (curl -w '%output{FILE}…'; `@FILE`, `@-`:
        return name == "curl" and (  # the format read from there, known only as it runs)
            "%output{" in (value or "%output{") or (value or "").startswith("@")
        )

    for index in options:
        word = words[index] or ""
        said_next = shown[index + 1] if index + 1 < len(shown) else ""
        if word.startswith("--"):
            flag, attached = word.split("=", 1)[0], "=" in word
            value = long_value(words, index) if attached else word_after(words, index)
            said = word if attached else said_next
            if any(abbreviates(flag, option) for option in long_files):
                found.append((value, said))
                named_by_url = named_by_url and not abbreviates(flag, "--output-document")
            elif any(abbreviates(flag, option) for option in long_folders):
                folder = (value, said)
            elif any(abbreviates(flag, option) for option in long_elsewhere):
                set_elsewhere(value, said, name == "wget" and abbreviates(flag, "--execute"))
            named_by_url = named_by_url or (
                name == "curl" and long_prefix(flag, "--remote-name-all")  # (`--remote-name`)
            )
            named_as_it_runs |= any(abbreviates(flag, option) for option in long_naming)
            globbing = globbing and not abbreviates(flag, "--globoff")
            if abbreviates(flag, "--write-out") and writes_out(value):
                found.append((None, said))
            continue
        letters = word[1:]
        at = next((i for i, letter in enumerate(letters) if letter in valued), len(letters))
        named_by_url = named_by_url or (name == "curl" and "O" in letters[:at])
        named_as_it_runs |= bool(set(letters[:at]) & set(naming))
        globbing = globbing and "g" not in letters[:at]
        if at == len(letters):
            continue
        value = letters[at + 1 :] or word_after(words, index)
        said = word if letters[at + 1 :] else said_next
        if letters[at] in files:
            found.append((value, said))
            named_by_url = named_by_url and letters[at] != "O"
        elif letters[at] in folders:
            folder = (value, said)
        elif letters[at] in elsewhere:
            set_elsewhere(value, said, name == "wget")
        elif letters[at] == "w" and writes_out(value):
            found.append((None, said))
    for index in operands:  # (`--output-document="$F"`)
        if words[index] is None and may_be_option(
            shown[index], long_files, files + folders, valued
        ):
            found.append((None, shown[index]))
    urls = [words[i] for i in operands]
    globbed = globbing and any(u is None or re.search(r"[{\[]", u) for u in urls)
    if globbed:  # (`-o '#1.new'` names what a URL glob gives)
        found = [(None if f is None or "#" in f else f, said) for f, said in found]
    where, shown_where = folder or (".", ".")
    if name == "curl" and folder is not None:  # (its -o files are in its --output-dir)
        found = [(None if where is None or f is None else os.path.join(where, f), said)
                 for f, said in found]  # fmt: skip
    written: list[tuple[str | None, str, Kind]] = [(f, said, "file") for f, said in found]
    if not (named_by_url or named_as_it_runs):
        return written
    if named_as_it_runs or globbed or None in urls or "-i" in words or where is None:
        inside = None if where is None else f"{where.rstrip('/') or '/'}/."
        return [*written, (inside, shown_where, "tree")]  # (names, as it runs, deep too)
    for url in urls:  # (the name its URL gives, in its folder: `wget http://x/.bashrc`)
        written.append((os.path.join(where, _url_name(url or "")), shown_where, "file"))
    return written


def _url_name(url: str) -> str:
    """The file name ``wget`` and ``curl -O`` give what a URL names: its path's last
    part (wget: ``index.html`` for none)."""
    from urllib.parse import urlsplit

    return os.path.basename(urlsplit(url).path) or "index.html"


def _basename(path: str | None) -> str | None:
    """A source's name as copied into a directory (None: computed)."""
    return None if path is None else os.path.basename(path.rstrip("/")) or path


_XXD_LONG = {"c": ("ols",), "g": ("roupsize",), "l": ("en",), "n": ("ame",), "o": ("ffset",),
             "s": ("eek", "kip"), "R": ()}  # fmt: skip
"""xxd's options that take a value, with the rest of their long spellings (``-cols``)."""


def _xxd_files(words: Sequence[str | None]) -> list[int]:
    """The indices of xxd's file operands: xxd reads ``-cols``, ``-seek``, ``--c`` as its
    one-letter options (a review's `xxd -seek 0 IN OUT` wrote OUT unasked), each taking
    the next word unless its value is attached: any text after the letter that is no
    long spelling of it (``-c8``, ``-c8k``, ``-s1k``, ``-Ralways``: a review's `xxd
    -c8k IN OUT` wrote OUT unasked, the value taken for hex only)."""
    found: list[int] = []
    skip = False
    for index, word in enumerate(words):
        if skip:
            skip = False
        elif word is None or word == "-" or word[:1] != "-":
            found.append(index)
        else:
            letters = word.lstrip("-")
            tails = _XXD_LONG.get(letters[:1])
            rest = letters[1:]
            skip = tails is not None and (not rest or any(rest.startswith(t) for t in tails))
    return found
