"""``docs/reliability.md`` stays true: each test it names exists, and each test of the
fault modules has a row."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reliability.md"
FAULT_MODULES = (
    "test_faults.py",
    "test_crash_recovery.py",
    "test_slack_windows.py",
    "test_leases.py",
    "test_hostile.py",
    "test_expiry.py",
)
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::([\w:]+)`")


def defined_tests(path: Path) -> set[str]:
    """``name`` and ``Class::name`` of every test function in ``path``."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in tree.body:
        if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef):
            found.add(node.name)
        elif isinstance(node, ast.ClassDef):
            found |= {
                f"{node.name}::{item.name}"
                for item in node.body
                if isinstance(item, ast.AsyncFunctionDef | ast.FunctionDef)
            }
    return {name for name in found if name.rsplit("::", 1)[-1].startswith("test_")}


def test_every_named_test_exists() -> None:
    references = REFERENCE.findall(DOC.read_text())
    assert len(references) >= 25
    missing = [
        f"{path}::{name}" for path, name in references if name not in defined_tests(ROOT / path)
    ]
    assert missing == []


def test_every_fault_test_has_a_row() -> None:
    named = {f"{path}::{name}" for path, name in REFERENCE.findall(DOC.read_text())}
    unlisted = [
        f"tests/{module}::{name}"
        for module in FAULT_MODULES
        for name in sorted(defined_tests(ROOT / "tests" / module))
        if f"tests/{module}::{name}" not in named
    ]
    assert unlisted == []
