"""The repository's other test helpers, loaded by path: tests/apiserver and tests/packaging are
no packages (their own tests import them by name from their folder)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from .helm import ROOT


def load(relpath: str) -> ModuleType:
    """ROOT/relpath as a module, once per process (named after its path)."""
    name = "jh_" + relpath.removesuffix(".py").replace("/", "_")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / relpath)
        assert spec and spec.loader, relpath
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
