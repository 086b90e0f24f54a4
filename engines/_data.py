"""Data files beside the engines that read them: word lists, code lists and tables, loaded once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def load_data(path: Path) -> Any:
    """A data file: a ``.txt`` file as a tuple of its lines (blank lines and ``#`` comments
    skipped), a ``.json`` file as its value with every array a tuple."""

    def tuples(value: Any) -> Any:
        if isinstance(value, list):
            return tuple(tuples(item) for item in value)
        if isinstance(value, dict):
            return {key: tuples(item) for key, item in value.items()}
        return value

    text = path.read_text(encoding="utf-8")
    if path.name.endswith(".json"):
        return tuples(json.loads(text))
    return tuple(line for line in text.splitlines() if line.strip() and not line.startswith("#"))
