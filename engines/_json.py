"""Strict JSON parsing shared by the engines: NaN and Infinity refused, errors that say where."""

from __future__ import annotations

import json
from typing import Any

from engines.base import EngineError


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(text: str, invalid: str, at: str = ": line {line}, column {column}") -> Any:
    """``text`` parsed as JSON, refusing NaN and Infinity, which Python would otherwise accept.

    Bad input raises EngineError: ``{invalid}{at}: {reason}.`` for a syntax error, ``at``
    formatted with its line and column, and ``{invalid}: {reason}.`` for a constant.
    RecursionError (nesting deeper than Python's stack) is left to the caller.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        where = at.format(line=error.lineno, column=error.colno)
        raise EngineError(f"{invalid}{where}: {error.msg}.") from None
    except ValueError as error:  # a constant, rejected above
        raise EngineError(f"{invalid}: {error}.") from None
