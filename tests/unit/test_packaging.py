"""The wheel holds every package: ``[tool.setuptools] packages`` is a list written by hand (the
themes folder maps to ``agenttui.themes``), and a package left off it installs as missing modules
(the six rooms of ``agenttui.runs`` were, from their move until this test)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_list_names_every_package_under_agenttui() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "agenttui").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert found | {"agenttui.themes"} == listed
