"""A run's output as the site shows it, read by the tool's output schema: model-written text
as Markdown made safe (nh3), code and data as preformatted text with a copy button, lists,
tables of records, images, audio and video players, downloads, and the raw JSON beside it."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import markdown
import nh3
from markupsafe import Markup

from blueprints.site.forms import field_label
from catalogue import Tool

# Engines whose text is written by a model, in Markdown.
_MODEL_ENGINES = frozenset({"llm.chat", "vision.chat"})
# Fields whose text is code or data: shown as written, in a monospace block.
_CODE_FIELDS = frozenset(
    {"html", "json", "csv", "xml", "code", "minified", "formatted", "yaml", "toml", "sql",
     "css", "svg", "vcard", "ics", "jsonld", "json_ld", "markup", "tsv", "diff", "regex"}
)  # fmt: skip
_TABLE_MAX_COLUMNS = 8
_MAX_DEPTH = 3


@dataclass
class Block:
    """One field of the output, ready for templates/site/_output.html."""

    label: str
    # markdown, code, text, scalar, list, table, object, image, audio, video, file, json, empty
    kind: str
    value: Any = None
    id: str = ""
    children: list[Block] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)


def safe_markdown(text: str) -> Markup:
    """Markdown rendered to HTML that cannot run script or load anything unexpected."""
    html = markdown.markdown(text, extensions=["fenced_code", "tables", "sane_lists"])
    return Markup(nh3.clean(html, link_rel="noopener noreferrer nofollow"))


def _is_file(value: Any) -> bool:
    return isinstance(value, dict) and {"url", "content_type"} <= value.keys()


def blocks(tool: Tool, output: dict, file_url: Callable[[dict], str]) -> list[Block]:
    """The output's fields as blocks; ``file_url`` gives the address a file is served at."""
    ids = itertools.count(1)
    markdown_text = tool.engine in _MODEL_ENGINES
    properties = tool.output.get("properties", {}) if isinstance(tool.output, dict) else {}
    names = [name for name in properties if name in output]
    names += [name for name in output if name not in properties]
    return [
        _block(name, output[name], properties.get(name, {}), file_url, ids, markdown_text, 0)
        for name in names
    ]


def _block(name, value, spec, file_url, ids, markdown_text, depth) -> Block:
    label = field_label(name)
    block_id = f"out-{next(ids)}"
    if value is None or value == "" or value == [] or value == {}:
        return Block(label, "empty", id=block_id)
    if _is_file(value):
        return _file_block(label, value, file_url, block_id)
    if isinstance(value, str):
        if name == "markdown" or (markdown_text and ("\n" in value or len(value) > 80)):
            return Block(label, "markdown", safe_markdown(value), block_id)
        if name in _CODE_FIELDS or (isinstance(spec, dict) and spec.get("format") == "code"):
            return Block(label, "code", value, block_id)
        return Block(label, "text", value, block_id)
    if isinstance(value, bool):
        return Block(label, "scalar", "yes" if value else "no", block_id)
    if isinstance(value, int | float):
        return Block(label, "scalar", _number(value), block_id)
    if depth >= _MAX_DEPTH:
        return Block(label, "json", json.dumps(value, indent=2, ensure_ascii=False), block_id)
    if isinstance(value, list):
        if all(_is_file(item) for item in value):
            return Block(label, "list", None, block_id, [
                _file_block(_file_name(item, i), item, file_url, f"{block_id}-{i}")
                for i, item in enumerate(value, start=1)
            ])  # fmt: skip
        if all(isinstance(item, str | int | float | bool) for item in value):
            shown = [safe_markdown(item) if markdown_text and isinstance(item, str) else item
                     for item in value]  # fmt: skip
            return Block(label, "list", shown, block_id)
        columns = _columns(value)
        if columns:
            return Block(label, "table", [[_cell(row.get(c)) for c in columns] for row in value],
                         block_id, columns=[field_label(c) for c in columns])  # fmt: skip
        return Block(label, "json", json.dumps(value, indent=2, ensure_ascii=False), block_id)
    if isinstance(value, dict):
        properties = spec.get("properties", {}) if isinstance(spec, dict) else {}
        return Block(label, "object", None, block_id, [
            _block(key, item, properties.get(key, {}), file_url, ids, markdown_text, depth + 1)
            for key, item in value.items()
        ])  # fmt: skip
    return Block(label, "json", json.dumps(value, ensure_ascii=False), block_id)


def _file_block(label: str, value: dict, file_url: Callable[[dict], str], block_id: str) -> Block:
    kind = value.get("content_type", "")
    shown = {**value, "href": file_url(value), "name": _file_name(value, 1)}
    for prefix in ("image", "audio", "video"):
        if kind.startswith(prefix + "/"):
            return Block(label, prefix, shown, block_id)
    return Block(label, "file", shown, block_id)


def _file_name(value: dict, index: int) -> str:
    return value.get("filename") or f"File {index}"


def _columns(rows: list) -> list[str] | None:
    """The columns of a list of flat records, or None when it is not one."""
    if not rows or not all(isinstance(row, dict) for row in rows):
        return None
    columns: list[str] = []
    for row in rows:
        for key, value in row.items():
            if isinstance(value, dict | list) and value:
                return None
            if key not in columns:
                columns.append(key)
    return columns if len(columns) <= _TABLE_MAX_COLUMNS else None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _number(value: int | float) -> str:
    """A number as written, a float to at most four decimals (no thousands separators: a
    year or an id must read as it is)."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.4f}".rstrip("0").rstrip(".")
    return str(int(value)) if isinstance(value, float) else str(value)


def raw_json(output: dict) -> str:
    return json.dumps(output, indent=2, ensure_ascii=False)
