"""jobhandlers: render, check and test the jobhandlers Helm chart."""

from __future__ import annotations

__version__ = "0.3.0"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType


def __getattr__(name: str) -> ModuleType:
    """`from jobhandlers import helm`, the import of every generated suite (render/helm.py),
    made on first use so that `import jobhandlers` stays light (PEP 562)."""
    if name == "helm":
        from .render import helm

        return helm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
