"""Every contract ID cited in the repository is defined in ``api/CONTRACT.md`` (issue 14 §4).

What counts as a citation, in ``api/``, ``supervisor/``, ``worker/``, ``tests/`` and the
README:

- anything after the word ``SPEC``: a list of IDs (``F3``, ``B4a``), ranges (``B1–B7``:
  every member), sections (``§13``) and whole families (``R``), separated by commas;
- in Python comments and docstrings, any ID or range on its own (``B4a: …``, ``(T4–T6)``);
- in Markdown, an ID alone between backticks, as a code span.

An ID is defined by an anchor in the contract: ``**ID**`` opening a list item or a table
row; ``§N`` by a heading ``## N. …``; a family by a heading ending in ``(F)``. This file
itself is not scanned: its examples are not citations.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "api" / "CONTRACT.md"
SCANNED_DIRS = ("api", "supervisor", "worker", "tests")
SCANNED_FILES = ("README.md",)

FAMILIES = (
    *("SH", "PR", "ND", "CR", "DF", "TR", "LM", "RM", "CF"),
    *("T", "F", "B", "S", "R", "E", "O", "D", "I", "X"),
)
"""Every ID family of the contract; two-letter ones first, so that ``SH1`` is not ``S``."""

_FAMILY = "(?:" + "|".join(FAMILIES) + ")"
_ID = rf"{_FAMILY}[1-9][0-9]*[a-z]?"
_DASH = r"\s*[–-]\s*"
ID_RE = re.compile(rf"(?P<fam>{_FAMILY})(?P<num>[1-9][0-9]*)(?P<sub>[a-z]?)")
BARE_RE = re.compile(rf"\b(?P<first>{_ID})(?:{_DASH}(?P<last>{_ID}))?\b")
SECTION_REF_RE = re.compile(rf"§(?P<first>[0-9]+)(?:{_DASH}§?(?P<last>[0-9]+))?")
_ITEM = rf"(?:{_ID}(?:{_DASH}{_ID})?\b|{_FAMILY}\b(?![–-])|§[0-9]+(?:{_DASH}§?[0-9]+)?)"
SPEC_RE = re.compile(rf"\bSPEC\s+(?P<items>{_ITEM}(?:\s*,\s*{_ITEM})*)")
ITEM_RE = re.compile(_ITEM)
CODE_SPAN_RE = re.compile(rf"`(?P<id>{_ID})`")

ANCHOR_RE = re.compile(rf"^[ \t]*(?:[-*]|\|)[ \t]*\*\*(?P<id>{_ID})\*\*", re.M)
SECTION_RE = re.compile(r"^## (?P<num>[0-9]+)\. (?P<title>.*)$", re.M)
FAMILY_HEADING_RE = re.compile(rf"\((?P<fam>{_FAMILY})\)\s*$")


def expand(first: str, last: str | None) -> list[str]:
    """The IDs a citation names: one ID, or every member of a range.

    ``B1–B7`` is B1 … B7 and ``X1a–X1c`` is X1a, X1b, X1c; a range across families or
    mixing plain and sub-IDs names its two ends only.
    """
    if last is None:
        return [first]
    a, b = ID_RE.fullmatch(first), ID_RE.fullmatch(last)
    assert a is not None and b is not None
    fam, lo, hi = a["fam"], int(a["num"]), int(b["num"])
    if fam != b["fam"] or hi < lo:
        return [first, last]
    if lo == hi and a["sub"] and b["sub"]:
        return [f"{fam}{lo}{chr(c)}" for c in range(ord(a["sub"]), ord(b["sub"]) + 1)]
    if a["sub"] or b["sub"]:
        return [first, last]
    return [f"{fam}{n}" for n in range(lo, hi + 1)]


def expand_sections(first: str, last: str | None) -> list[str]:
    lo = int(first)
    hi = int(last) if last is not None else lo
    return [f"§{n}" for n in range(lo, max(lo, hi) + 1)]


def spec_references(text: str) -> list[tuple[int, str]]:
    """(offset, reference) of everything cited after ``SPEC``: IDs like ``F3``, sections
    like ``§13`` and families like ``R``."""
    found = []
    for match in SPEC_RE.finditer(text):
        for item in ITEM_RE.finditer(match["items"]):
            where = match.start("items") + item.start()
            token = item.group()
            if token.startswith("§"):
                section = SECTION_REF_RE.fullmatch(token)
                assert section is not None
                refs = expand_sections(section["first"], section["last"])
            elif bare := BARE_RE.fullmatch(token):
                refs = expand(bare["first"], bare["last"])
            else:
                refs = [token]  # a whole family
            found += [(where, ref) for ref in refs]
    return found


def bare_references(text: str) -> list[tuple[int, str]]:
    """(offset, ID) of every ID or range written on its own."""
    return [
        (m.start(), ref) for m in BARE_RE.finditer(text) for ref in expand(m["first"], m["last"])
    ]


def _python_prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of a module's comments and docstrings (any string statement)."""
    prose = [
        (node.lineno, node.value.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            prose.append((token.start[0], token.string))
    return prose


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def scanned_files() -> list[Path]:
    files = [ROOT / name for name in SCANNED_FILES]
    for folder in SCANNED_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".md") and "__pycache__" not in path.parts:
                files.append(path)
    return [p for p in files if p.resolve() not in (CONTRACT, Path(__file__).resolve())]


def citations() -> list[tuple[str, int, str]]:
    """(file, line, reference) of every citation in the scanned files."""
    found: set[tuple[str, int, str]] = set()
    for path in scanned_files():
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(ROOT))
        found |= {(name, _line(text, at), ref) for at, ref in spec_references(text)}
        if path.suffix == ".py":
            for first_line, prose in _python_prose(text):
                found |= {
                    (name, first_line + _line(prose, at) - 1, ref)
                    for at, ref in bare_references(prose)
                }
        else:
            found |= {(name, _line(text, m.start()), m["id"]) for m in CODE_SPAN_RE.finditer(text)}
    return sorted(found)


def contract_text() -> str:
    return CONTRACT.read_text(encoding="utf-8")


def defined(text: str) -> set[str]:
    """What the contract defines: IDs (anchors), sections ``§N`` and families."""
    names = {m["id"] for m in ANCHOR_RE.finditer(text)}
    for section in SECTION_RE.finditer(text):
        names.add(f"§{section['num']}")
        if family := FAMILY_HEADING_RE.search(section["title"]):
            names.add(family["fam"])
    return names


def test_every_cited_id_is_defined_in_the_contract() -> None:
    names = defined(contract_text())
    missing = [f"{file}:{line}: {ref}" for file, line, ref in citations() if ref not in names]
    assert not missing, (
        "cited but not defined in api/CONTRACT.md (add the ID there, or fix the citation):\n"
        + "\n".join(missing)
    )


def test_the_scan_finds_the_known_citations() -> None:
    """Guards the scanner itself: a broken pattern would find nothing and pass."""
    found = citations()
    refs = {(file, ref) for file, _, ref in found}
    assert len(found) >= 50
    assert ("supervisor/handlers/run.py", "F3") in refs  # SPEC F3 in a docstring
    assert ("supervisor/handlers/run.py", "T5") in refs  # a bare range T4–T6 in a comment
    assert ("api/texts.py", "B4a") in refs  # a bare sub-ID opening a docstring
    assert ("api/constants.py", "§1") in refs  # SPEC §1


def test_each_id_is_defined_once() -> None:
    counts = Counter(m["id"] for m in ANCHOR_RE.finditer(contract_text()))
    assert [name for name, n in counts.items() if n > 1] == []


def test_the_contract_cites_only_what_it_defines() -> None:
    text = contract_text()
    names = defined(text)
    cited = {ref for _, ref in bare_references(text)}
    cited |= {
        ref for m in SECTION_REF_RE.finditer(text) for ref in expand_sections(m["first"], m["last"])
    }
    assert sorted(cited - names) == []


def test_every_family_has_a_section_and_ids() -> None:
    text = contract_text()
    headed = {
        m["fam"] for s in SECTION_RE.finditer(text) if (m := FAMILY_HEADING_RE.search(s["title"]))
    }
    assert headed == set(FAMILIES)
    anchors = [ID_RE.match(m["id"]) for m in ANCHOR_RE.finditer(text)]
    with_ids = {anchor["fam"] for anchor in anchors if anchor is not None}
    assert with_ids == set(FAMILIES)


@pytest.mark.parametrize(
    ("text", "refs"),
    [
        ("(SPEC B1–B7, F4)", ["B1", "B2", "B3", "B4", "B5", "B6", "B7", "F4"]),
        ("(SPEC §2, §6, I4)", ["§2", "§6", "I4"]),
        ("(SPEC F3, B, D7)", ["F3", "B", "D7"]),
        ("(SPEC SH2, E1, E3; issue 7)", ["SH2", "E1", "E3"]),
        ("(SPEC B3, issue 13)", ["B3"]),
        ("SPEC X1a–X1c.", ["X1a", "X1b", "X1c"]),
        ("SPEC D3–D5 and D7", ["D3", "D4", "D5"]),
        ("SPEC §13–§14", ["§13", "§14"]),
        ("The contract was `../shared/SPEC.md`; SPEC says", []),
    ],
)
def test_spec_citations_are_parsed(text: str, refs: list[str]) -> None:
    assert [ref for _, ref in spec_references(text)] == refs


@pytest.mark.parametrize(
    ("text", "refs"),
    [
        ('"""B4a: the foreground timeout passed."""', ["B4a"]),
        ("# The same validation (T4–T6): a door too.", ["T4", "T5", "T6"]),
        ("# C0 controls, RE2, E2E, SHA256, SIM115, O_NOFOLLOW, X0", []),
        ("# SH1 and S1, DF2", ["SH1", "S1", "DF2"]),
    ],
)
def test_bare_citations_are_parsed(text: str, refs: list[str]) -> None:
    assert [ref for _, ref in bare_references(text)] == refs
