"""Engines: what actually runs a tool.

Every engine implements ``Engine`` (see ``engines.base``) and is registered here by name; a
tool in the catalogue names its engine and the engine parameters it runs with.
"""

from __future__ import annotations

import importlib
from typing import Any

from engines.base import (
    Engine,
    EngineError,
    ModelUnfit,
    ProviderUnavailable,
    ToolSpec,
    models_noted,
)

# The modules (or packages) that hold engines, each in an ``ENGINES`` tuple.
_MODULES = (
    "audio",
    "code",
    "convert",
    "documents",
    "images",
    "models",
    "text",
    "web",
)

__all__ = [
    "Engine",
    "EngineError",
    "ModelUnfit",
    "ProviderUnavailable",
    "ToolSpec",
    "engine_names",
    "get_engine",
    "models_noted",
    "run_tool",
]


def _build_registry() -> dict[str, Engine]:
    registry: dict[str, Engine] = {}
    for name in _MODULES:
        module = importlib.import_module(f"engines.{name}")
        for engine in module.ENGINES:
            if engine.name in registry:
                raise RuntimeError(f"Two engines are named {engine.name}.")
            registry[engine.name] = engine
    return dict(sorted(registry.items()))


_REGISTRY = _build_registry()


def get_engine(name: str) -> Engine:
    """Return the engine registered under ``name``; raises KeyError if there is none."""
    return _REGISTRY[name]


def engine_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def run_tool(tool: ToolSpec, inputs: dict[str, Any]) -> dict[str, Any]:
    """Run ``tool`` on inputs already validated and completed with defaults.

    Raises EngineError for input the engine cannot process (422) and ProviderUnavailable when
    the engine cannot serve (503).
    """
    engine = get_engine(tool.engine)
    reason = engine.unavailable_reason()
    if reason is not None:
        raise ProviderUnavailable(reason)
    return engine.run_tool(tool, inputs)
