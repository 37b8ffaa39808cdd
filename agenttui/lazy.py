"""Package roots that give some of their names when first asked for, not when imported (PEP 562).

``agenttui STORE`` imports what the runs list needs and nothing else (benchmarks/startup.py): a
package root that imported every module it names would bring them all with any one of them, as
importing ``agenttui.journal.keys`` runs ``agenttui/journal/__init__.py`` first.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(package: str, lazy: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: a name that ``lazy`` lists under one of its
    modules imports that module when first asked for, and is kept in the package from then on."""
    module_of = {name: module for module, names in lazy.items() for name in names}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value  # asked once
        return value

    return __getattr__
