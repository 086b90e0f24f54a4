"""Data and code converters (local, deterministic): formats, encodings, hashes, dates, colours.

Each engine is a family of operations and a tool picks one with its ``operation`` param. The
tool schemas bound every input string; what parsing can multiply (nesting, YAML aliases, rows,
query results, regex backtracking) is bounded here, and bad input raises EngineError saying
what to fix.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from engines.base import ChoiceEngine, Engine, EngineError

MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_ROWS = 10_000
MAX_OUTPUT_CHARS = 1_000_000

# --- shared helpers ----------------------------------------------------------------------


def _check_size(value: Any, what: str) -> None:
    """Refuse values nested deeper than MAX_DEPTH or holding more than MAX_NODES values.

    Walks iteratively and counts every visit, so YAML alias bombs and query results that
    repeat one object many times stop at the budget instead of expanding.
    """
    stack = [(value, 1)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise EngineError(f"{what} holds more than {MAX_NODES:,} values; send less data.")
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            raise EngineError(f"{what} is nested more than {MAX_DEPTH} levels deep.")
        stack.extend((child, depth + 1) for child in children)


def _bounded(text: str) -> str:
    if len(text) > MAX_OUTPUT_CHARS:
        raise EngineError(
            f"The result would be {len(text):,} characters, over the {MAX_OUTPUT_CHARS:,} "
            "limit; send less data."
        )
    return text


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _parse_json(text: str, what: str = "The JSON") -> Any:
    """Parse JSON text, with errors that give the line and column."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise EngineError(
            f"{what} is invalid: line {error.lineno}, column {error.colno}: {error.msg}."
        ) from None
    except RecursionError:
        raise EngineError(f"{what} is nested more than {MAX_DEPTH} levels deep.") from None
    except ValueError as error:  # NaN and Infinity, which Python would otherwise accept
        raise EngineError(f"{what} is invalid: {error}.") from None
    _check_size(value, what)
    return value


def _dump_json(value: Any, indent: int = 2) -> str:
    return _bounded(
        json.dumps(
            value,
            indent=indent or None,
            separators=(",", ": ") if indent else (",", ":"),
            ensure_ascii=False,
        )
    )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


def _key_text(key: Any) -> str:
    """A mapping key as JSON spells it (YAML and TOML allow non-string keys)."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    return _plain(key) if isinstance(key, date | time) else str(key)


def _plain(value: Any) -> Any:
    """YAML/TOML values as JSON values: dates as ISO 8601 text, bytes as base64, sets as lists."""
    import base64

    if isinstance(value, dict):
        return {_key_text(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [_plain(item) for item in items]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        raise EngineError(f"The data holds {value}, which JSON cannot represent.")
    return value


def _json_path(parts: list[Any]) -> str:
    """A location as JSONPath: ``$.items[0].name``, ``$['odd key']``."""
    path = "$"
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            path += f".{part}"
        else:
            path += "[" + json.dumps(part, ensure_ascii=False) + "]"
    return path


def _split_list(text: str, limit: int, what: str) -> list[str]:
    """Items separated by commas or new lines, blanks dropped."""
    items = [item.strip() for item in re.split(r"[,\n]", text) if item.strip()]
    if len(items) > limit:
        raise EngineError(f"Give at most {limit} {what}; there are {len(items)}.")
    return items


def _round(value: float, digits: int) -> float | int:
    """``value`` to ``digits`` significant digits, as an int when it is whole."""
    if value == 0 or not math.isfinite(value):
        return 0 if value == 0 else value
    rounded = float(f"{value:.{digits}g}")
    return int(rounded) if rounded.is_integer() and abs(rounded) < 2**53 else rounded


# --- data formats ------------------------------------------------------------------------


def _yaml_error(error: Exception) -> EngineError:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or getattr(error, "context", None) or str(error)
    if mark is None:
        return EngineError(f"The YAML is invalid: {problem}.")
    return EngineError(
        f"The YAML is invalid: line {mark.line + 1}, column {mark.column + 1}: {problem}."
    )


def _json_to_yaml(inputs: dict[str, Any]) -> dict[str, Any]:
    import yaml

    value = _parse_json(inputs["json"])
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text = yaml.dump(
        value,
        Dumper=dumper,
        sort_keys=inputs["sort_keys"],
        allow_unicode=True,
        default_flow_style=False,
        indent=inputs["indent"],
        width=100,
    )
    return {"yaml": _bounded(text)}


def _yaml_to_json(inputs: dict[str, Any]) -> dict[str, Any]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = list(yaml.load_all(inputs["yaml"], Loader=loader))
    except yaml.YAMLError as error:
        raise _yaml_error(error) from None
    except RecursionError:
        raise EngineError(f"The YAML is nested more than {MAX_DEPTH} levels deep.") from None
    if not documents:
        raise EngineError("The YAML holds no document.")
    _check_size(documents, "The YAML")
    value = _plain(documents[0] if len(documents) == 1 else documents)
    return {"json": _dump_json(value, inputs["indent"]), "documents": len(documents)}


def _flatten(value: Any, separator: str, arrays: str = "index") -> dict[str, Any]:
    """Leaves of nested objects keyed by their joined path (``a.b.0``).

    ``arrays="json"`` keeps arrays whole as JSON text; empty containers are kept as leaves.
    """
    flat: dict[str, Any] = {}

    def walk(item: Any, prefix: str) -> None:
        if isinstance(item, dict) and item:
            pairs: Any = item.items()
        elif isinstance(item, list) and item and arrays == "index":
            pairs = enumerate(item)
        else:
            if isinstance(item, list) and arrays == "json":
                item = json.dumps(item, ensure_ascii=False)
            flat[prefix] = item
            return
        for key, child in pairs:
            walk(child, f"{prefix}{separator}{key}" if prefix else str(key))

    walk(value, "")
    return flat


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _write_csv(header: list[str], rows: list[list[str]], delimiter: str) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return _bounded(buffer.getvalue())


def _json_to_csv(inputs: dict[str, Any]) -> dict[str, Any]:
    value = _parse_json(inputs["json"])
    items = value if isinstance(value, list) else [value]
    if not items:
        raise EngineError("The JSON array is empty: there are no rows to write.")
    if len(items) > MAX_ROWS:
        raise EngineError(f"The JSON has {len(items):,} items; at most {MAX_ROWS:,} rows fit.")
    records = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise EngineError(
                f"Item {number} is {_json_type(item)}; every item must be an object (one row each)."
            )
        records.append(_flatten(item, inputs["separator"], inputs["arrays"]))
    columns = list(dict.fromkeys(key for record in records for key in record))
    rows = [[_cell(record.get(column)) for column in columns] for record in records]
    return {
        "csv": _write_csv(columns, rows, inputs["delimiter"]),
        "rows": len(rows),
        "columns": columns,
    }


_DELIMITERS = (",", ";", "\t", "|")


def _read_csv(text: str, delimiter: str) -> list[list[str]]:
    """Rows of a CSV text (blank lines skipped); ``auto`` picks the delimiter of line one."""
    if delimiter == "auto":
        first = text.lstrip("\ufeff").split("\n", 1)[0]
        delimiter = max(_DELIMITERS, key=first.count)
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")), delimiter=delimiter, strict=True)
    rows = []
    try:
        for row in reader:
            if row:
                rows.append(row)
                if len(rows) > MAX_ROWS + 1:
                    raise EngineError(f"The CSV has more than {MAX_ROWS:,} rows.")
    except csv.Error as error:
        raise EngineError(f"The CSV is invalid at line {reader.line_num}: {error}.") from None
    if not rows:
        raise EngineError("The CSV holds no rows.")
    return rows


def _header_names(row: list[str]) -> list[str]:
    """Header cells as unique, non-empty column names."""
    names: list[str] = []
    for index, cell in enumerate(row, start=1):
        name = cell.strip() or f"column_{index}"
        base, suffix = name, 2
        while name in names:
            name, suffix = f"{base}_{suffix}", suffix + 1
        names.append(name)
    return names


_INT_RE = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_FLOAT_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def _infer_scalar(text: str) -> Any:
    """A cell as a number, boolean or null when it plainly is one (``007`` stays text)."""
    stripped = text.strip()
    if stripped == "":
        return None
    if _INT_RE.fullmatch(stripped):
        return int(stripped)
    if _FLOAT_RE.fullmatch(stripped) and math.isfinite(float(stripped)):
        return float(stripped)
    if stripped.lower() in ("true", "false"):
        return stripped.lower() == "true"
    return text


def _csv_to_json(inputs: dict[str, Any]) -> dict[str, Any]:
    rows = _read_csv(inputs["csv"], inputs["delimiter"])
    convert = _infer_scalar if inputs["infer_types"] else (lambda cell: cell)
    if not inputs["header"]:
        records: list[Any] = [[convert(cell) for cell in row] for row in rows]
        columns: list[str] | None = None
    else:
        columns = _header_names(rows[0])
        records = []
        for number, row in enumerate(rows[1:], start=2):
            if len(row) > len(columns):
                raise EngineError(
                    f"Row {number} has {len(row)} fields but the header has {len(columns)}."
                )
            padded = row + [""] * (len(columns) - len(row))
            records.append(
                {name: convert(cell) for name, cell in zip(columns, padded, strict=True)}
            )
    return {
        "json": _dump_json(records, inputs["indent"]),
        "rows": len(records),
        "columns": columns,
    }


def _parse_xml(text: str, keep_comments: bool = False) -> Any:
    """Parse XML into an ElementTree element; DOCTYPE (and so entity definitions) refused.

    expat is driven directly so that no DTD is ever processed (no entity expansion bombs, no
    external entities), and element prefixes stay as written (``ns:tag``).
    """
    import xml.etree.ElementTree as ET
    from xml.parsers import expat

    builder = ET.TreeBuilder(insert_comments=keep_comments)
    parser = expat.ParserCreate()
    parser.buffer_text = True
    depth = 0
    elements = 0

    def start(name: str, attributes: dict[str, str]) -> None:
        nonlocal depth, elements
        depth += 1
        elements += 1
        if depth > MAX_DEPTH:
            raise EngineError(f"The XML is nested more than {MAX_DEPTH} levels deep.")
        if elements > MAX_NODES:
            raise EngineError(f"The XML has more than {MAX_NODES:,} elements.")
        builder.start(name, attributes)

    def end(name: str) -> None:
        nonlocal depth
        depth -= 1
        builder.end(name)

    def refuse_doctype(*_args: Any) -> None:
        raise EngineError(
            "DOCTYPE declarations are not accepted (they can define entities); remove the "
            "<!DOCTYPE ...> part."
        )

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    if keep_comments:
        parser.CommentHandler = builder.comment
    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_doctype
    try:
        parser.Parse(text, True)
    except expat.ExpatError as error:
        raise EngineError(
            f"The XML is invalid: line {error.lineno}, column {error.offset + 1}: "
            f"{expat.ErrorString(error.code)}."
        ) from None
    return builder.close()


def _element_to_json(element: Any, prefix: str) -> Any:
    """An element as JSON: attributes as ``<prefix>name``, text as ``#text``, repeats as lists.

    An element with neither attributes nor children is its text (null when empty).
    """
    result: dict[str, Any] = {f"{prefix}{name}": value for name, value in element.attrib.items()}
    groups: dict[str, list[Any]] = {}
    texts = [element.text or ""]
    for child in element:
        texts.append(child.tail or "")
        groups.setdefault(child.tag, []).append(_element_to_json(child, prefix))
    for tag, values in groups.items():
        if tag in result:
            raise EngineError(
                f"<{element.tag}> has an attribute and a child both named '{tag}'; use an "
                "attribute prefix such as @."
            )
        result[tag] = values[0] if len(values) == 1 else values
    text = " ".join(part.strip() for part in texts if part.strip())
    if not result:
        return text or None
    if text:
        result["#text"] = text
    return result


def _xml_to_json(inputs: dict[str, Any]) -> dict[str, Any]:
    root = _parse_xml(inputs["xml"])
    value = {root.tag: _element_to_json(root, inputs["attribute_prefix"])}
    return {"json": _dump_json(value, inputs["indent"]), "root": root.tag}


_XML_NAME_RE = re.compile(r"[^\W\d][\w.-]*(?::[^\W\d][\w.-]*)?")


def _xml_name(name: str) -> str:
    if not _XML_NAME_RE.fullmatch(name) or name.lower().startswith("xml"):
        raise EngineError(f"'{name}' cannot be an XML element or attribute name; rename the key.")
    return name


def _xml_text(value: Any) -> str:
    if isinstance(value, dict | list):
        raise EngineError("Attributes and #text must be plain values, not objects or arrays.")
    return "" if value is None else value if isinstance(value, str) else json.dumps(value)


def _add_xml(parent: Any, tag: str, value: Any, prefix: str) -> None:
    """Append ``value`` under ``parent`` as <tag> elements (one per item of a list)."""
    import xml.etree.ElementTree as ET

    if isinstance(value, list):
        for item in value:
            _add_xml(parent, tag, item, prefix)
        return
    element = ET.SubElement(parent, _xml_name(tag))
    _fill_xml(element, value, prefix)


def _fill_xml(element: Any, value: Any, prefix: str) -> None:
    if not isinstance(value, dict):
        element.text = _xml_text(value) or None
        return
    for key, item in value.items():
        if key == "#text":
            element.text = _xml_text(item) or None
        elif prefix and key.startswith(prefix):
            element.set(_xml_name(key[len(prefix) :]), _xml_text(item))
        else:
            _add_xml(element, key, item, prefix)


def _serialize_xml(root: Any, indent: int, declaration: bool) -> str:
    import xml.etree.ElementTree as ET

    if indent:
        ET.indent(root, space=" " * indent)
    text = ET.tostring(root, encoding="unicode")
    if declaration:
        text = '<?xml version="1.0" encoding="UTF-8"?>\n' + text
    return _bounded(text)


def _json_to_xml(inputs: dict[str, Any]) -> dict[str, Any]:
    import xml.etree.ElementTree as ET

    value = _parse_json(inputs["json"])
    prefix = inputs["attribute_prefix"]
    single = (
        isinstance(value, dict)
        and len(value) == 1
        and not isinstance(next(iter(value.values())), list)
        and not (prefix and next(iter(value)).startswith(prefix))
        and next(iter(value)) != "#text"
    )
    if single:
        tag, content = next(iter(value.items()))
    else:
        tag, content = inputs["root"], value
    root = ET.Element(_xml_name(tag))
    if isinstance(content, list):
        for item in content:
            _add_xml(root, "item", item, prefix)
    else:
        _fill_xml(root, content, prefix)
    xml = _serialize_xml(root, inputs["indent"], inputs["declaration"])
    return {"xml": xml, "root": root.tag}


def _strip_whitespace_text(root: Any) -> None:
    for element in root.iter():
        if element.text is not None and not element.text.strip() and len(element):
            element.text = None
        if element.tail is not None and not element.tail.strip():
            element.tail = None


def _format_xml(inputs: dict[str, Any]) -> dict[str, Any]:
    root = _parse_xml(inputs["xml"], keep_comments=not inputs["strip_comments"])
    _strip_whitespace_text(root)
    xml = _serialize_xml(root, inputs["indent"], inputs["declaration"])
    return {"xml": xml, "elements": sum(1 for e in root.iter() if isinstance(e.tag, str))}


def _toml_to_json(inputs: dict[str, Any]) -> dict[str, Any]:
    import tomllib

    try:
        value = tomllib.loads(inputs["toml"])
    except tomllib.TOMLDecodeError as error:
        raise EngineError(f"The TOML is invalid: {error}.") from None
    except RecursionError:
        raise EngineError(f"The TOML is nested more than {MAX_DEPTH} levels deep.") from None
    _check_size(value, "The TOML")
    return {"json": _dump_json(_plain(value), inputs["indent"]), "keys": list(value)}


def _ini_to_json(inputs: dict[str, Any]) -> dict[str, Any]:
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keep the key case
    try:
        parser.read_string(inputs["ini"])
    except configparser.MissingSectionHeaderError as error:
        raise EngineError(
            f"Line {error.lineno}: {error.line.strip()!r} comes before any [section] header."
        ) from None
    except configparser.ParsingError as error:
        line, text = error.errors[0]
        raise EngineError(f"Line {line}: {text.strip()!r} is not a key = value line.") from None
    except (configparser.DuplicateSectionError, configparser.DuplicateOptionError) as error:
        raise EngineError(f"{error.message}.") from None
    convert = _infer_scalar if inputs["infer_types"] else (lambda value: value)
    data: dict[str, Any] = {}
    if parser.defaults():
        data[parser.default_section] = {k: convert(v) for k, v in parser.defaults().items()}
    for section in parser.sections():
        data[section] = {key: convert(value) for key, value in parser[section].items()}
    return {"json": _dump_json(data, inputs["indent"]), "sections": parser.sections()}


_ENV_LINE_RE = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)")
_ENV_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}
_ENV_REFERENCE_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)(?::?-([^}]*))?\}|\$([A-Za-z_]\w*)")


def _env_value(raw: str, number: int) -> tuple[str, bool]:
    """The value of one .env line and whether ``${VAR}`` references in it may expand."""
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        end = 1
        while end < len(raw) and raw[end] != quote:
            end += 2 if quote == '"' and raw[end] == "\\" else 1
        if end >= len(raw):
            raise EngineError(f"Line {number}: the {quote} quote is not closed on this line.")
        rest = raw[end + 1 :].strip()
        if rest and not rest.startswith("#"):
            raise EngineError(f"Line {number}: unexpected text after the closing quote.")
        body = raw[1:end]
        if quote == "'":
            return body, False
        return re.sub(r"\\(.)", lambda m: _ENV_ESCAPES.get(m[1], "\\" + m[1]), body), True
    return re.split(r"\s+#", raw, maxsplit=1)[0].strip(), True


def _env_to_json(inputs: dict[str, Any]) -> dict[str, Any]:
    variables: dict[str, str] = {}
    duplicates: list[str] = []
    for number, line in enumerate(inputs["env"].splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _ENV_LINE_RE.fullmatch(line)
        if not match:
            raise EngineError(f"Line {number}: expected NAME=value, got {line.strip()[:40]!r}.")
        name = match[1]
        value, expandable = _env_value(match[2].strip(), number)
        if expandable and inputs["expand"]:
            value = _ENV_REFERENCE_RE.sub(
                lambda m: variables.get(m[1] or m[3], m[2] or ""),
                value,
            )
        if name in variables and name not in duplicates:
            duplicates.append(name)
        variables[name] = value
    return {
        "json": _dump_json(variables, inputs["indent"]),
        "variables": len(variables),
        "duplicates": duplicates,
    }


def _display_width(text: str) -> int:
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _markdown_table(header: list[str], rows: list[list[str]], aligns: list[str]) -> str:
    """A GitHub-flavoured Markdown table with padded, aligned columns."""
    widths = [
        max([3, _display_width(header[i])] + [_display_width(row[i]) for row in rows])
        for i in range(len(header))
    ]

    def line(cells: list[str]) -> str:
        padded = []
        for cell, width, align in zip(cells, widths, aligns, strict=True):
            gap = width - _display_width(cell)
            if align == "right":
                padded.append(" " * gap + cell)
            elif align == "center":
                padded.append(" " * (gap // 2) + cell + " " * (gap - gap // 2))
            else:
                padded.append(cell + " " * gap)
        return "| " + " | ".join(padded) + " |"

    rule = {"left": ":{}", "center": ":{}:", "right": "{}:", "none": "{}"}
    separators = [
        rule[align].format("-" * (width - rule[align].count(":")))
        for width, align in zip(widths, aligns, strict=True)
    ]
    return _bounded(
        "\n".join(
            [line(header), "| " + " | ".join(separators) + " |"] + [line(row) for row in rows]
        )
    )


def _markdown_cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _csv_to_markdown(inputs: dict[str, Any]) -> dict[str, Any]:
    rows = [[_markdown_cell(cell) for cell in row] for row in _read_csv(inputs["csv"], "auto")]
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    if inputs["header"]:
        header, body = rows[0], rows[1:]
    else:
        header, body = [f"Column {i}" for i in range(1, width + 1)], rows
    align = inputs["align"]
    if align == "auto":
        aligns = [
            "right"
            if any(row[i] for row in body)
            and all(_FLOAT_RE.fullmatch(row[i].replace(",", "")) for row in body if row[i])
            else "left"
            for i in range(width)
        ]
    else:
        aligns = [align] * width
    return {
        "markdown": _markdown_table(header, body, aligns),
        "rows": len(body),
        "columns": width,
    }


_TABLE_RULE_RE = re.compile(r"\s*:?-+:?\s*")


def _table_cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", inner)]


def _format_markdown_table(inputs: dict[str, Any]) -> dict[str, Any]:
    lines = [line for line in inputs["markdown"].splitlines() if line.strip()]
    if len(lines) < 2:
        raise EngineError("A Markdown table needs a header line and a |---| separator line.")
    header, rule = _table_cells(lines[0]), _table_cells(lines[1])
    if not all(_TABLE_RULE_RE.fullmatch(cell) for cell in rule):
        raise EngineError("Line 2 must be the separator line, such as | --- | :---: | ---: |.")
    rows = [_table_cells(line) for line in lines[2:]]
    for number, line in enumerate(lines, start=1):
        if "|" not in line:
            raise EngineError(f"Line {number} is not a table row (it has no |).")
    width = max(len(header), len(rule), *(len(row) for row in rows))
    header += [""] * (width - len(header))
    rule += ["---"] * (width - len(rule))
    rows = [row + [""] * (width - len(row)) for row in rows]
    aligns = []
    for cell in rule:
        cell = cell.strip()
        if cell.startswith(":") and cell.endswith(":"):
            aligns.append("center")
        elif cell.endswith(":"):
            aligns.append("right")
        elif cell.startswith(":"):
            aligns.append("left")
        else:
            aligns.append("none")
    return {
        "markdown": _markdown_table(header, rows, aligns),
        "rows": len(rows),
        "columns": width,
    }


def _html_tables(html: str) -> list[list[list[str]]]:
    """Every <table> of a page as rows of cell texts (colspan repeats as empty cells)."""
    from html.parser import HTMLParser

    tables: list[list[list[str]]] = []

    class Collector(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.open: list[list[list[str]]] = []  # tables being read, innermost last
            self.cell: list[str] | None = None
            self.span = 1

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "table":
                self.open.append([])
                tables.append(self.open[-1])
            elif not self.open:
                return
            elif tag == "tr":
                self.open[-1].append([])
            elif tag in ("td", "th"):
                if not self.open[-1]:
                    self.open[-1].append([])
                self.cell = []
                span = dict(attrs).get("colspan") or "1"
                self.span = min(int(span), 100) if span.isdigit() and int(span) > 0 else 1
            elif tag == "br" and self.cell is not None:
                self.cell.append(" ")

        def handle_endtag(self, tag: str) -> None:
            if tag in ("td", "th") and self.cell is not None and self.open:
                text = " ".join("".join(self.cell).split())
                self.open[-1][-1].extend([text] + [""] * (self.span - 1))
                self.cell = None
            elif tag == "table" and self.open:
                self.open.pop()

        def handle_data(self, data: str) -> None:
            if self.cell is not None:
                self.cell.append(data)

    collector = Collector()
    collector.feed(html)
    collector.close()
    return [[row for row in table if row] for table in tables]


def _html_table_to_csv(inputs: dict[str, Any]) -> dict[str, Any]:
    tables = [table for table in _html_tables(inputs["html"]) if table]
    if not tables:
        raise EngineError("The HTML has no <table> with <td> or <th> cells.")
    index = inputs["table"]
    if index > len(tables):
        raise EngineError(f"Table {index} does not exist: the HTML has {len(tables)} table(s).")
    rows = tables[index - 1]
    if len(rows) > MAX_ROWS:
        raise EngineError(f"The table has more than {MAX_ROWS:,} rows.")
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    return {
        "csv": _write_csv(rows[0], rows[1:], inputs["delimiter"]),
        "rows": len(rows) - 1,
        "columns": width,
        "tables_found": len(tables),
    }


class DataConvertEngine(ChoiceEngine):
    """Converts between data formats: JSON, YAML, CSV, XML, TOML, INI, .env, Markdown tables."""

    name = "convert.data"
    jobs = {
        "json-to-yaml": _json_to_yaml,
        "yaml-to-json": _yaml_to_json,
        "json-to-csv": _json_to_csv,
        "csv-to-json": _csv_to_json,
        "xml-to-json": _xml_to_json,
        "json-to-xml": _json_to_xml,
        "xml-format": _format_xml,
        "toml-to-json": _toml_to_json,
        "ini-to-json": _ini_to_json,
        "env-to-json": _env_to_json,
        "csv-to-markdown": _csv_to_markdown,
        "markdown-table-format": _format_markdown_table,
        "html-table-to-csv": _html_table_to_csv,
    }


# --- JSON tools --------------------------------------------------------------------------

_FORMAT_CHECKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("date-time", re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?")),
    ("date", re.compile(r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")),
    ("time", re.compile(r"([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")),
    ("email", re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")),
    ("uri", re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s]+")),
    ("uuid", re.compile(r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")),
    ("ipv4", re.compile(r"((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)")),
)


def _infer_schema(value: Any, formats: bool, strict: bool) -> dict[str, Any]:
    if isinstance(value, dict):
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {k: _infer_schema(v, formats, strict) for k, v in value.items()},
            "required": list(value),
        }
        if strict:
            schema["additionalProperties"] = False
        return schema
    if isinstance(value, list):
        schema = {"type": "array"}
        if value:
            items = _infer_schema(value[0], formats, strict)
            for item in value[1:]:
                items = _merge_schemas(items, _infer_schema(item, formats, strict))
            schema["items"] = items
        return schema
    kind = {bool: "boolean", int: "integer", float: "number", str: "string"}.get(
        type(value), "null"
    )
    if kind == "string" and formats:
        for name, pattern in _FORMAT_CHECKS:
            if pattern.fullmatch(value):
                return {"type": "string", "format": name}
    return {"type": kind}


def _merge_schemas(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """One schema that accepts what ``a`` and ``b`` accept (as inferred from samples)."""
    if a == b:
        return a
    options = a.get("anyOf", [a]) + b.get("anyOf", [b])
    merged: list[dict[str, Any]] = []
    for option in options:
        for index, seen in enumerate(merged):
            combined = _merge_same_type(seen, option)
            if combined is not None:
                merged[index] = combined
                break
        else:
            merged.append(option)
    if len(merged) == 1:
        return merged[0]
    if all(set(option) == {"type"} for option in merged):
        return {"type": [option["type"] for option in merged]}
    return {"anyOf": merged}


def _merge_same_type(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    kinds = {a.get("type"), b.get("type")}
    if a == b:
        return a
    if kinds == {"integer", "number"}:
        return {"type": "number"}
    if kinds == {"string"}:
        return {"type": "string"}
    if kinds == {"array"}:
        if "items" in a and "items" in b:
            return {"type": "array", "items": _merge_schemas(a["items"], b["items"])}
        return a if "items" in a else b
    if kinds == {"object"}:
        properties = dict(a["properties"])
        for key, schema in b["properties"].items():
            properties[key] = (
                _merge_schemas(properties[key], schema) if key in properties else schema
            )
        merged = {
            "type": "object",
            "properties": properties,
            "required": [key for key in a["required"] if key in b["required"]],
        }
        if "additionalProperties" in a:
            merged["additionalProperties"] = False
        return merged
    return None


def _drop_required(schema: Any) -> None:
    if isinstance(schema, dict):
        schema.pop("required", None)
        for value in schema.values():
            _drop_required(value)
    elif isinstance(schema, list):
        for item in schema:
            _drop_required(item)


def _json_schema_infer(inputs: dict[str, Any]) -> dict[str, Any]:
    value = _parse_json(inputs["json"])
    schema = _infer_schema(value, inputs["detect_formats"], inputs["strict"])
    if not inputs["required"]:
        _drop_required(schema)
    document = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    if inputs["title"]:
        document["title"] = inputs["title"]
    document.update(schema)
    return {"schema": document, "json": _dump_json(document, 2)}


_REGEX_TIMEOUT = 1.0


def _regex_search(pattern: str, text: str) -> Any:
    """``regex.search`` with a time limit: a pattern that backtracks forever fails instead."""
    import regex

    try:
        return regex.search(pattern, text, timeout=_REGEX_TIMEOUT)
    except regex.error as error:
        raise EngineError(f"The pattern {pattern!r} is invalid: {error}.") from None
    except TimeoutError:
        raise EngineError(
            f"The pattern {pattern!r} takes too long to match (catastrophic backtracking); "
            "simplify it."
        ) from None


def _schema_validator_class(schema: dict[str, Any]) -> Any:
    """The validator class for ``schema``'s draft, matching patterns with a time limit."""
    from jsonschema import ValidationError, validators

    def pattern(validator: Any, expected: str, instance: Any, _schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not _regex_search(expected, instance):
            yield ValidationError(f"{instance!r} does not match {expected!r}")

    def pattern_properties(
        validator: Any, patterns: dict[str, Any], instance: Any, _schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for expected, subschema in patterns.items():
            for key, value in instance.items():
                if _regex_search(expected, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=expected)

    base = validators.validator_for(schema, default=validators.Draft202012Validator)
    return validators.extend(base, {"pattern": pattern, "patternProperties": pattern_properties})


_MAX_ERRORS = 100


def _json_schema_validate(inputs: dict[str, Any]) -> dict[str, Any]:
    from jsonschema import SchemaError
    from referencing.exceptions import Unresolvable

    instance = _parse_json(inputs["json"], "The JSON document")
    schema = _parse_json(inputs["schema"], "The schema")
    if not isinstance(schema, dict | bool):
        raise EngineError("The schema must be a JSON object (or true/false).")
    cls = _schema_validator_class(schema if isinstance(schema, dict) else {})
    try:
        cls.check_schema(schema)
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        found = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.path)))
    except SchemaError as error:
        where = _json_path(list(error.path))
        raise EngineError(f"The schema itself is invalid at {where}: {error.message}.") from None
    except Unresolvable as error:
        raise EngineError(
            f"The schema refers to {error.ref!r}, which cannot be resolved: only references "
            "inside the schema ($defs) work here."
        ) from None
    errors = [
        {
            "path": _json_path(list(error.absolute_path)),
            "message": error.message,
            "keyword": str(error.validator),
            "schema_path": "/".join(str(part) for part in error.absolute_schema_path),
        }
        for error in found[:_MAX_ERRORS]
    ]
    return {
        "valid": not found,
        "error_count": len(found),
        "errors": errors,
        "draft": cls.META_SCHEMA.get("$schema", ""),
    }


def _jmespath_query(inputs: dict[str, Any]) -> dict[str, Any]:
    import jmespath
    from jmespath import exceptions

    data = _parse_json(inputs["json"])
    try:
        result = jmespath.search(inputs["expression"], data)
    except exceptions.ParseError as error:
        raise EngineError(
            f"The expression is invalid at position {error.lex_position}: {error.msg}."
        ) from None
    except exceptions.JMESPathError as error:
        raise EngineError(f"The expression cannot run: {error}") from None
    except RecursionError:
        raise EngineError("The expression is nested too deeply.") from None
    _check_size(result, "The result")
    return {
        "result": result,
        "json": _dump_json(result, inputs["indent"]),
        "type": _json_type(result),
    }


_MAX_DIFFERENCES = 500


def _diff_values(old: Any, new: Any, path: list[Any], found: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                found.append(
                    {
                        "path": _json_path([*path, key]),
                        "change": "removed",
                        "old": old[key],
                        "new": None,
                    }
                )
            else:
                _diff_values(old[key], new[key], [*path, key], found)
        for key in new:
            if key not in old:
                found.append(
                    {
                        "path": _json_path([*path, key]),
                        "change": "added",
                        "old": None,
                        "new": new[key],
                    }
                )
    elif isinstance(old, list) and isinstance(new, list):
        for index in range(max(len(old), len(new))):
            if index >= len(new):
                found.append(
                    {
                        "path": _json_path([*path, index]),
                        "change": "removed",
                        "old": old[index],
                        "new": None,
                    }
                )
            elif index >= len(old):
                found.append(
                    {
                        "path": _json_path([*path, index]),
                        "change": "added",
                        "old": None,
                        "new": new[index],
                    }
                )
            else:
                _diff_values(old[index], new[index], [*path, index], found)
    elif old != new or type(old) is not type(new):
        found.append({"path": _json_path(path), "change": "changed", "old": old, "new": new})


def _json_diff(inputs: dict[str, Any]) -> dict[str, Any]:
    old = _parse_json(inputs["original"], "The original JSON")
    new = _parse_json(inputs["changed"], "The changed JSON")
    found: list[dict[str, Any]] = []
    _diff_values(old, new, [], found)
    counts = {
        kind: sum(1 for d in found if d["change"] == kind)
        for kind in ("added", "removed", "changed")
    }
    return {
        "identical": not found,
        **counts,
        "differences": found[:_MAX_DIFFERENCES],
        "truncated": len(found) > _MAX_DIFFERENCES,
    }


def _unflatten(flat: dict[str, Any], separator: str) -> Any:
    root: dict[str, Any] = {}
    for key, value in flat.items():
        parts = key.split(separator)
        node = root
        for depth, part in enumerate(parts[:-1], start=1):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise EngineError(
                    f"'{key}' needs '{separator.join(parts[:depth])}' to be an object, but it "
                    "also has a value of its own."
                )
            node = child
        if parts[-1] in node:
            raise EngineError(f"'{key}' is given both as a value and as a parent of other keys.")
        node[parts[-1]] = value
    return _lists_from_indexes(root)


def _lists_from_indexes(value: Any) -> Any:
    """Objects whose keys are exactly 0..n-1 become arrays."""
    if not isinstance(value, dict):
        return value
    converted = {key: _lists_from_indexes(item) for key, item in value.items()}
    if converted and list(converted) == [str(i) for i in range(len(converted))]:
        return list(converted.values())
    return converted


def _json_flatten(inputs: dict[str, Any]) -> dict[str, Any]:
    value = _parse_json(inputs["json"])
    separator = inputs["separator"]
    if inputs["direction"] == "flatten":
        if not isinstance(value, dict | list):
            raise EngineError("Give a JSON object or array to flatten.")
        result: Any = _flatten(value, separator)
    else:
        if not isinstance(value, dict):
            raise EngineError('Give a JSON object of flat keys (like {"a.b": 1}) to unflatten.')
        if any(isinstance(item, dict) for item in value.values()):
            raise EngineError("The object is already nested: its values must not be objects.")
        result = _unflatten(value, separator)
    _check_size(result, "The result")
    keys = len(result) if isinstance(result, dict | list) else 0
    return {"json": _dump_json(result, inputs["indent"]), "keys": keys}


class JsonToolsEngine(ChoiceEngine):
    """Works on JSON documents: infer or apply a JSON Schema, query, diff, (un)flatten."""

    name = "convert.json"
    requires = ("jmespath", "regex")
    jobs = {
        "schema-infer": _json_schema_infer,
        "schema-validate": _json_schema_validate,
        "query": _jmespath_query,
        "diff": _json_diff,
        "flatten": _json_flatten,
    }


# --- encodings ---------------------------------------------------------------------------


def _utf8_text(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise EngineError(
            f"{what} decodes to {len(data):,} bytes of binary data, not UTF-8 text (starts "
            f"with {data[:16].hex(' ')})."
        ) from None


def _base64(inputs: dict[str, Any]) -> dict[str, Any]:
    import base64
    import binascii

    text = inputs["text"]
    url_safe = inputs["alphabet"] == "url-safe"
    if inputs["direction"] == "encode":
        data = text.encode("utf-8")
        encoded = (base64.urlsafe_b64encode if url_safe else base64.b64encode)(data).decode()
        if not inputs["padding"]:
            encoded = encoded.rstrip("=")
        return {"result": encoded, "bytes": len(data)}
    compact = "".join(text.split())
    if url_safe:
        compact = compact.replace("-", "+").replace("_", "/")
    compact += "=" * (-len(compact) % 4)
    try:
        data = base64.b64decode(compact, validate=True)
    except binascii.Error:
        bad = re.search(r"[^A-Za-z0-9+/=]", compact)
        hint = f" (it contains {bad.group()!r})" if bad else ""
        raise EngineError(
            f"The text is not valid base64{hint}; check the alphabet setting."
        ) from None
    return {"result": _utf8_text(data, "The base64"), "bytes": len(data)}


def _url_encoding(inputs: dict[str, Any]) -> dict[str, Any]:
    from urllib.parse import quote, quote_plus, unquote, unquote_plus

    text, mode = inputs["text"], inputs["mode"]
    if inputs["direction"] == "encode":
        if mode == "form":
            return {"result": quote_plus(text, safe="")}
        return {"result": quote(text, safe="/" if mode == "path" else "")}
    try:
        return {"result": (unquote_plus if mode == "form" else unquote)(text, errors="strict")}
    except UnicodeDecodeError:
        raise EngineError(
            "The %-escapes decode to bytes that are not UTF-8 text; check the input."
        ) from None


def _html_entities(inputs: dict[str, Any]) -> dict[str, Any]:
    import html
    from html.entities import codepoint2name

    text = inputs["text"]
    if inputs["direction"] == "decode":
        return {"result": html.unescape(text)}
    escaped = html.escape(text, quote=inputs["escape_quotes"])
    style = inputs["non_ascii"]
    if style == "keep":
        return {"result": escaped}

    def entity(match: re.Match[str]) -> str:
        code = ord(match.group())
        if style == "named" and code in codepoint2name:
            return f"&{codepoint2name[code]};"
        return f"&#x{code:X};"

    return {"result": _bounded(re.sub(r"[^\x00-\x7f]", entity, escaped))}


def _escape_string(text: str, target: str) -> str:
    import shlex

    if target == "json":
        return json.dumps(text, ensure_ascii=False)
    if target == "python":
        return repr(text)
    if target == "sql":
        return "'" + text.replace("'", "''") + "'"
    if target == "shell":
        return shlex.quote(text)
    if target == "csv":
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="").writerow([text])
        return buffer.getvalue()
    return re.escape(text)


def _unescape_string(text: str, target: str) -> str:
    import ast
    import shlex

    stripped = text.strip()
    if target == "json":
        literal = stripped if stripped.startswith('"') else f'"{stripped}"'
        try:
            return str(json.loads(literal))  # a literal starting with " is a string or fails
        except json.JSONDecodeError as error:
            raise EngineError(
                f"Not a valid JSON string: {error.msg} at column {error.colno}."
            ) from None
    if target == "python":
        quoted = stripped[:1] in ("'", '"') and stripped[-1:] == stripped[:1] and len(stripped) > 1
        literal = stripped if quoted else f'"{stripped}"'
        try:
            value = ast.literal_eval(literal)
        except (SyntaxError, ValueError):
            raise EngineError(
                "Not a valid Python string literal; include the quotes, e.g. 'It\\'s'."
            ) from None
        if not isinstance(value, str):
            raise EngineError("The Python literal is not a string.")
        return value
    if target == "sql":
        if len(stripped) > 1 and stripped[0] == stripped[-1] == "'":
            stripped = stripped[1:-1]
        return stripped.replace("''", "'")
    if target == "shell":
        try:
            words = shlex.split(stripped)
        except ValueError as error:
            raise EngineError(f"Not valid shell quoting: {error}.") from None
        if len(words) != 1:
            raise EngineError(f"The text is {len(words)} shell words, not one quoted string.")
        return words[0]
    if target == "csv":
        rows = list(csv.reader(io.StringIO(stripped)))
        if len(rows) != 1 or len(rows[0]) != 1:
            raise EngineError('The text is not one CSV field; quote it as "...".')
        return rows[0][0]
    return re.sub(r"\\(.)", r"\1", text, flags=re.DOTALL)


def _string_escape(inputs: dict[str, Any]) -> dict[str, Any]:
    function = _escape_string if inputs["direction"] == "escape" else _unescape_string
    return {"result": _bounded(function(inputs["text"], inputs["target"]))}


def _convert_domain(domain: str) -> tuple[str, str]:
    """A domain as (Unicode, ASCII/punycode) under IDNA 2008 with UTS #46 mapping."""
    import idna

    domain = domain.strip().rstrip(".")
    try:
        ascii_form = idna.encode(domain, uts46=True).decode("ascii")
        unicode_form = idna.decode(ascii_form)
    except (idna.IDNAError, UnicodeError) as error:
        raise EngineError(f"'{domain}' is not a valid domain name: {error}.") from None
    return unicode_form, ascii_form


def _punycode(inputs: dict[str, Any]) -> dict[str, Any]:
    results = []
    for line in inputs["domains"].splitlines():
        if not line.strip():
            continue
        local, at, domain = line.strip().rpartition("@")
        unicode_form, ascii_form = _convert_domain(domain)
        results.append(
            {
                "input": line.strip(),
                "unicode": f"{local}{at}{unicode_form}",
                "ascii": f"{local}{at}{ascii_form}",
                "internationalized": unicode_form != ascii_form,
            }
        )
    if not results:
        raise EngineError("Give at least one domain name.")
    if len(results) > 100:
        raise EngineError(f"Give at most 100 domains; there are {len(results)}.")
    return {"domains": results}


class EncodingEngine(ChoiceEngine):
    """Encodes and decodes text: base64, URL, HTML entities, string literals, punycode."""

    name = "convert.encoding"
    requires = ("idna",)
    jobs = {
        "base64": _base64,
        "url": _url_encoding,
        "html-entities": _html_entities,
        "string-escape": _string_escape,
        "punycode": _punycode,
    }


# --- hashes, signatures, identifiers -----------------------------------------------------

_HASHES = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "sha3_256", "sha3_512",
           "blake2b", "blake2s", "crc32")  # fmt: skip


def _digest(algorithm: str, data: bytes) -> bytes:
    import hashlib
    import zlib

    if algorithm == "crc32":
        return zlib.crc32(data).to_bytes(4, "big")
    return hashlib.new(algorithm, data).digest()


def _encode_digest(digest: bytes, encoding: str) -> str:
    import base64

    return digest.hex() if encoding == "hex" else base64.b64encode(digest).decode("ascii")


def _hashes(inputs: dict[str, Any]) -> dict[str, Any]:
    data = inputs["text"].encode("utf-8")
    algorithms = list(dict.fromkeys(inputs["algorithms"]))
    if not algorithms:
        raise EngineError("Choose at least one algorithm.")
    hashes = [
        {"algorithm": name, "digest": _encode_digest(_digest(name, data), inputs["encoding"])}
        for name in algorithms
    ]
    expected = inputs["compare_with"].strip().lower()
    matches = [h["algorithm"] for h in hashes if expected and h["digest"].lower() == expected]
    return {"bytes": len(data), "hashes": hashes, "matches": matches if expected else None}


def _key_bytes(key: str, encoding: str) -> bytes:
    import base64
    import binascii

    try:
        if encoding == "hex":
            return bytes.fromhex(key)
        if encoding == "base64":
            return base64.b64decode(key + "=" * (-len(key) % 4), validate=True)
    except (ValueError, binascii.Error):
        raise EngineError(f"The key is not valid {encoding}.") from None
    return key.encode("utf-8")


def _hmac(inputs: dict[str, Any]) -> dict[str, Any]:
    import hmac

    key = _key_bytes(inputs["key"], inputs["key_encoding"])
    digest = hmac.new(key, inputs["message"].encode("utf-8"), inputs["algorithm"]).digest()
    signature = _encode_digest(digest, inputs["encoding"])
    expected = inputs["compare_with"].strip()
    if inputs["encoding"] == "hex":
        expected = expected.lower()
    return {
        "signature": signature,
        "algorithm": inputs["algorithm"],
        "matches": hmac.compare_digest(signature, expected) if expected else None,
    }


def _namespace_uuid(namespace: str) -> Any:
    import uuid

    named = {"dns": uuid.NAMESPACE_DNS, "url": uuid.NAMESPACE_URL, "oid": uuid.NAMESPACE_OID,
             "x500": uuid.NAMESPACE_X500}  # fmt: skip
    if namespace.lower() in named:
        return named[namespace.lower()]
    try:
        return uuid.UUID(namespace)
    except ValueError:
        raise EngineError(
            f"'{namespace}' is not a namespace: use dns, url, oid, x500 or a UUID."
        ) from None


def _name_uuids(inputs: dict[str, Any]) -> dict[str, Any]:
    import uuid

    namespace = _namespace_uuid(inputs["namespace"].strip())
    names = [line for line in inputs["names"].splitlines() if line.strip()]
    if len(names) > 1000:
        raise EngineError(f"Give at most 1,000 names; there are {len(names):,}.")
    make = uuid.uuid5 if inputs["version"] == 5 else uuid.uuid3
    return {
        "namespace": str(namespace),
        "version": inputs["version"],
        "uuids": [{"name": name, "uuid": str(make(namespace, name))} for name in names],
    }


def _base64url_json(segment: str, what: str) -> Any:
    import base64
    import binascii

    try:
        data = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        raise EngineError(f"The JWT {what} is not base64url.") from None
    value = _parse_json(_utf8_text(data, f"The JWT {what}"), f"The JWT {what}")
    if not isinstance(value, dict):
        raise EngineError(f"The JWT {what} must be a JSON object.")
    return value


def _claim_time(payload: dict[str, Any], claim: str) -> datetime | None:
    value = payload.get(claim)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EngineError(f"The '{claim}' claim must be a number of seconds since 1970.")
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        raise EngineError(f"The '{claim}' claim ({value}) is out of range.") from None


def _jwt_decode(inputs: dict[str, Any]) -> dict[str, Any]:
    import base64
    import hmac

    parts = inputs["token"].strip().removeprefix("Bearer ").strip().split(".")
    if len(parts) != 3:
        raise EngineError(
            f"A JWT has three parts separated by dots (header.payload.signature); this has "
            f"{len(parts)}."
        )
    header = _base64url_json(parts[0], "header")
    payload = _base64url_json(parts[1], "payload")
    algorithm = str(header.get("alg", ""))
    signature = "not checked"
    if inputs["secret"]:
        digests = {"HS256": "sha256", "HS384": "sha384", "HS512": "sha512"}
        if algorithm not in digests:
            signature = "unsupported algorithm"
        else:
            mac = hmac.new(
                inputs["secret"].encode(), f"{parts[0]}.{parts[1]}".encode(), digests[algorithm]
            ).digest()
            expected = base64.urlsafe_b64encode(mac).decode().rstrip("=")
            signature = "valid" if hmac.compare_digest(expected, parts[2]) else "invalid"
    now = _parse_datetime(inputs["now"], "UTC") if inputs["now"] else datetime.now(UTC)
    times = {claim: _claim_time(payload, claim) for claim in ("iat", "nbf", "exp")}
    return {
        "header": header,
        "payload": payload,
        "algorithm": algorithm,
        "issued_at": times["iat"] and times["iat"].isoformat(),
        "not_before": times["nbf"] and times["nbf"].isoformat(),
        "expires_at": times["exp"] and times["exp"].isoformat(),
        "expired": None if times["exp"] is None else now >= times["exp"],
        "signature": signature,
    }


class DigestEngine(ChoiceEngine):
    """Hashes, HMAC signatures, name-based UUIDs and JWT decoding."""

    name = "convert.digest"
    jobs = {
        "hash": _hashes,
        "hmac": _hmac,
        "uuid": _name_uuids,
        "jwt": _jwt_decode,
    }


# --- web and network ---------------------------------------------------------------------

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21, "ssh": 22,
                  "sftp": 22, "smtp": 25, "imap": 143, "imaps": 993, "ldap": 389,
                  "postgresql": 5432, "postgres": 5432, "mysql": 3306, "redis": 6379,
                  "mongodb": 27017, "amqp": 5672}  # fmt: skip


def _url_parse(inputs: dict[str, Any]) -> dict[str, Any]:
    from urllib.parse import parse_qsl, unquote, urlsplit

    url = inputs["url"].strip()
    parts = urlsplit(url)
    if not parts.scheme or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme):
        raise EngineError("The URL has no scheme: write it in full, e.g. https://example.com/.")
    try:
        port = parts.port
    except ValueError:
        raise EngineError("The port is not a number from 0 to 65535.") from None
    host = parts.hostname
    if parts.netloc and host and not host.startswith("["):
        with contextlib.suppress(EngineError):  # not a domain name: shown as written
            host = _convert_domain(host)[0] if "xn--" in host else host
    scheme = parts.scheme.lower()
    default_port = _DEFAULT_PORTS.get(scheme)
    origin = f"{scheme}://{parts.hostname}" if parts.hostname else None
    if origin and port is not None and port != default_port:
        origin += f":{port}"
    return {
        "scheme": scheme,
        "username": unquote(parts.username) if parts.username is not None else None,
        "password": unquote(parts.password) if parts.password is not None else None,
        "host": host,
        "port": port if port is not None else default_port,
        "explicit_port": port is not None,
        "origin": origin,
        "path": parts.path,
        "path_segments": [unquote(s) for s in parts.path.split("/") if s],
        "query": parts.query,
        "query_params": [
            {"name": name, "value": value}
            for name, value in parse_qsl(parts.query, keep_blank_values=True)
        ],
        "fragment": parts.fragment,
    }


def _query_build(inputs: dict[str, Any]) -> dict[str, Any]:
    from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

    pairs = []
    for number, line in enumerate(inputs["params"].splitlines(), start=1):
        if not line.strip():
            continue
        name, equals, value = line.partition("=")
        if not equals or not name.strip():
            raise EngineError(f"Line {number}: write one name=value per line.")
        pairs.append((name.strip(), value.strip()))
    if len(pairs) > 500:
        raise EngineError(f"Give at most 500 parameters; there are {len(pairs)}.")
    if inputs["sort"]:
        pairs.sort(key=lambda pair: pair[0])
    escape = quote_plus if inputs["spaces"] == "plus" else quote
    query = "&".join(f"{escape(n, safe='')}={escape(v, safe='')}" for n, v in pairs)
    base = inputs["base_url"].strip()
    url = None
    if base:
        parts = urlsplit(base)
        if not parts.scheme or not parts.netloc:
            raise EngineError("The base URL must be absolute, e.g. https://example.com/search.")
        merged = "&".join(part for part in (parts.query, query) if part)
        url = urlunsplit((parts.scheme, parts.netloc, parts.path or "/", merged, parts.fragment))
    return {"query": query, "url": url, "parameters": len(pairs)}


# (phrase, when to use it) for every registered status code, RFC 9110 names.
_HTTP_STATUSES: dict[int, tuple[str, str]] = {
    100: ("Continue", "Interim reply to 'Expect: 100-continue': the client may send the body."),
    101: ("Switching Protocols", "The server agrees to an Upgrade request, e.g. to WebSocket."),
    102: ("Processing", "WebDAV: the request is still being processed (deprecated)."),
    103: ("Early Hints", "Send Link headers early so the browser can preload resources."),
    200: ("OK", "Success with a body: GET results, or the outcome of a POST/PUT."),
    201: ("Created", "A resource was created; put its URL in the Location header."),
    202: ("Accepted", "Queued for asynchronous processing; return a way to poll the status."),
    203: ("Non-Authoritative Information", "A proxy returns a modified copy of the origin's 200."),
    204: ("No Content", "Success with no body, e.g. after DELETE or a PUT that returns nothing."),
    205: ("Reset Content", "Success; the client should reset the form or view that sent it."),
    206: ("Partial Content", "Answer to a Range request with only the requested bytes."),
    207: ("Multi-Status", "WebDAV: several independent results in one XML body."),
    208: ("Already Reported", "WebDAV: members already listed earlier in this response."),
    226: ("IM Used", "Delta encoding: the response is a delta applied to the current instance."),
    300: ("Multiple Choices", "Several representations exist; the client should pick one."),
    301: (
        "Moved Permanently",
        "Permanent redirect; clients may change POST to GET. Prefer 308 for APIs.",
    ),
    302: ("Found", "Temporary redirect; clients may change POST to GET. Prefer 307 or 303."),
    303: ("See Other", "After a POST, send the client to a result page to GET."),
    304: ("Not Modified", "Conditional GET: the cached copy (ETag / Last-Modified) is current."),
    305: ("Use Proxy", "Deprecated: never use."),
    307: ("Temporary Redirect", "Temporary redirect that keeps the method and body."),
    308: ("Permanent Redirect", "Permanent redirect that keeps the method and body."),
    400: ("Bad Request", "Malformed request: unparseable JSON, bad syntax, missing framing."),
    401: ("Unauthorized", "Missing or invalid credentials; send WWW-Authenticate."),
    402: ("Payment Required", "Reserved; some APIs use it when a plan or quota must be paid."),
    403: ("Forbidden", "Authenticated (or not) but not allowed; new credentials won't help."),
    404: ("Not Found", "No resource at this URL (or hiding one the caller may not see)."),
    405: ("Method Not Allowed", "The URL exists but not for this method; send an Allow header."),
    406: ("Not Acceptable", "No representation matches the Accept headers."),
    407: ("Proxy Authentication Required", "Like 401, for a proxy; send Proxy-Authenticate."),
    408: ("Request Timeout", "The client took too long to send the request; it may retry."),
    409: ("Conflict", "Conflicts with current state: duplicate key, edit conflict, wrong state."),
    410: ("Gone", "Removed on purpose and permanently; tells crawlers to drop the URL."),
    411: ("Length Required", "The request needs a Content-Length header."),
    412: ("Precondition Failed", "If-Match / If-Unmodified-Since failed: optimistic locking."),
    413: ("Content Too Large", "The body exceeds the server's limit; may send Retry-After."),
    414: ("URI Too Long", "The URL is longer than the server accepts; move data to a body."),
    415: ("Unsupported Media Type", "The body's Content-Type or encoding is not accepted."),
    416: ("Range Not Satisfiable", "The Range header lies outside the resource."),
    417: ("Expectation Failed", "The Expect header cannot be met."),
    418: ("I'm a teapot", "An April Fools' joke (RFC 2324); do not use in real APIs."),
    421: ("Misdirected Request", "The request reached a server that cannot answer for this host."),
    422: ("Unprocessable Content", "Well-formed but invalid: field validation errors."),
    423: ("Locked", "WebDAV: the resource is locked."),
    424: ("Failed Dependency", "WebDAV: failed because a request it depends on failed."),
    425: ("Too Early", "The server will not process a request that might be replayed (0-RTT)."),
    426: ("Upgrade Required", "The client must switch protocol, named in the Upgrade header."),
    428: (
        "Precondition Required",
        "The request must be conditional (If-Match) to avoid lost updates.",
    ),
    429: ("Too Many Requests", "Rate limited; say when to retry in Retry-After."),
    431: ("Request Header Fields Too Large", "Headers (often cookies) are too large."),
    451: ("Unavailable For Legal Reasons", "Blocked by a legal demand, such as a court order."),
    500: ("Internal Server Error", "An unexpected server failure; a bug, not the client's fault."),
    501: ("Not Implemented", "The server does not support this method at all."),
    502: ("Bad Gateway", "A proxy or gateway got an invalid answer from the upstream server."),
    503: ("Service Unavailable", "Overloaded or down for maintenance; send Retry-After."),
    504: ("Gateway Timeout", "A proxy or gateway got no answer in time from upstream."),
    505: ("HTTP Version Not Supported", "The HTTP version of the request is not supported."),
    506: ("Variant Also Negotiates", "Content negotiation is misconfigured on the server."),
    507: ("Insufficient Storage", "WebDAV: the server cannot store what is needed."),
    508: ("Loop Detected", "WebDAV: an infinite loop while processing the request."),
    510: ("Not Extended", "Obsolete: further extensions are required."),
    511: ("Network Authentication Required", "A captive portal requires login to the network."),
}
_STATUS_CLASSES = {1: "informational", 2: "success", 3: "redirection", 4: "client error",
                   5: "server error"}  # fmt: skip
# Worth retrying unchanged (possibly after Retry-After).
_RETRYABLE = {408, 425, 429, 500, 502, 503, 504}


def _http_status(inputs: dict[str, Any]) -> dict[str, Any]:
    query = inputs["query"].strip().lower()
    if re.fullmatch(r"[1-5]xx", query):
        codes = [code for code in _HTTP_STATUSES if code // 100 == int(query[0])]
    elif query.isdigit():
        if int(query) not in _HTTP_STATUSES:
            raise EngineError(f"{query} is not a registered HTTP status code.")
        codes = [int(query)]
    else:
        words = query.split()
        codes = [
            code
            for code, (phrase, usage) in _HTTP_STATUSES.items()
            if all(word in f"{phrase} {usage}".lower() for word in words)
        ]
        if not codes:
            raise EngineError(f"No status code mentions '{inputs['query'].strip()}'.")
    return {
        "statuses": [
            {
                "code": code,
                "phrase": _HTTP_STATUSES[code][0],
                "class": _STATUS_CLASSES[code // 100],
                "when_to_use": _HTTP_STATUSES[code][1],
                "retryable": code in _RETRYABLE,
            }
            for code in codes
        ]
    }


# Types Python's table lacks or gets wrong for today's web.
_OOXML = "application/vnd.openxmlformats-officedocument"
_EXTRA_MIME_TYPES = {
    ".webp": "image/webp",
    ".avif": "image/avif",
    ".heic": "image/heic",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".otf": "font/otf",
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".md": "text/markdown",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".jsonld": "application/ld+json",
    ".webmanifest": "application/manifest+json",
    ".opus": "audio/ogg",
    ".ogg": "audio/ogg",
    ".flac": "audio/flac",
    ".mkv": "video/x-matroska",
    ".7z": "application/x-7z-compressed",
    ".gz": "application/gzip",
    ".rar": "application/vnd.rar",
    ".epub": "application/epub+zip",
    ".ics": "text/calendar",
    ".csv": "text/csv",
    ".svg": "image/svg+xml",
    ".docx": f"{_OOXML}.wordprocessingml.document",
    ".xlsx": f"{_OOXML}.spreadsheetml.sheet",
    ".pptx": f"{_OOXML}.presentationml.presentation",
}


def _mime_table() -> Any:
    """Python's built-in table (never the machine's files, so answers do not vary)."""
    import mimetypes

    table = mimetypes.MimeTypes()
    for extension, mime_type in _EXTRA_MIME_TYPES.items():
        table.add_type(mime_type, extension)
    return table


def _mime_lookup(inputs: dict[str, Any]) -> dict[str, Any]:
    query = inputs["query"].strip().lower()
    table = _mime_table()
    if "/" in query:
        mime_type = query.split(";")[0].strip()
        extensions = sorted(set(table.guess_all_extensions(mime_type, strict=False)))
        if not extensions:
            raise EngineError(f"No file extension is known for the media type '{mime_type}'.")
        return {
            "mime_type": mime_type,
            "extensions": extensions,
            "encoding": None,
            "category": mime_type.split("/")[0],
        }
    name = query if "." in query else f"file.{query}"
    name = name if not name.startswith(".") else f"file{name}"
    mime_type, encoding = table.guess_type(name, strict=False)
    if mime_type is None:
        raise EngineError(f"No media type is known for '{inputs['query'].strip()}'.")
    return {
        "mime_type": mime_type,
        "extensions": sorted(set(table.guess_all_extensions(mime_type, strict=False))),
        "encoding": encoding,
        "category": mime_type.split("/")[0],
    }


def _ip_network(text: str) -> Any:
    import ipaddress

    try:
        return ipaddress.ip_interface(text.strip())
    except ValueError:
        raise EngineError(
            f"'{text.strip()}' is not an IP network: write it like 192.168.1.0/24, "
            "10.0.0.5/255.255.255.0 or 2001:db8::/48."
        ) from None


_MAX_SUBNETS = 256


def _subnet(inputs: dict[str, Any]) -> dict[str, Any]:
    interface = _ip_network(inputs["cidr"])
    network = interface.network
    v4 = network.version == 4
    total = network.num_addresses
    # IPv4 /31 and /32 (RFC 3021) and every IPv6 prefix use all addresses for hosts.
    whole = not v4 or network.prefixlen >= 31
    first = network.network_address if whole else network.network_address + 1
    last = network.broadcast_address if whole else network.broadcast_address - 1
    subnets = None
    if inputs["split_prefix"]:
        new_prefix = inputs["split_prefix"]
        if not network.prefixlen < new_prefix <= network.max_prefixlen:
            raise EngineError(
                f"To split a /{network.prefixlen}, the new prefix must be from "
                f"{network.prefixlen + 1} to {network.max_prefixlen}."
            )
        if 2 ** (new_prefix - network.prefixlen) > _MAX_SUBNETS:
            raise EngineError(
                f"A /{network.prefixlen} splits into {2 ** (new_prefix - network.prefixlen):,} "
                f"/{new_prefix} subnets; at most {_MAX_SUBNETS} are listed."
            )
        subnets = [str(s) for s in network.subnets(new_prefix=new_prefix)]
    return {
        "network": str(network),
        "version": network.version,
        "prefix_length": network.prefixlen,
        "netmask": str(network.netmask),
        "wildcard_mask": str(network.hostmask),
        "network_address": str(network.network_address),
        "broadcast_address": str(network.broadcast_address) if v4 else None,
        "first_host": str(first),
        "last_host": str(last),
        "total_addresses": str(total),
        "usable_hosts": str(total if whole else total - 2),
        "private": network.is_private,
        "contains_input_host": str(interface.ip)
        if interface.ip != network.network_address
        else None,
        "subnets": subnets,
    }


def _ip_inspect(inputs: dict[str, Any]) -> dict[str, Any]:
    import ipaddress

    text = inputs["ip"].strip()
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise EngineError(f"'{text}' is not an IPv4 or IPv6 address.") from None
    v6 = address.version == 6
    mapped = address.ipv4_mapped if v6 else None
    return {
        "version": address.version,
        "compressed": address.compressed,
        "exploded": address.exploded,
        "integer": str(int(address)),
        "hex": f"0x{int(address):0{8 if not v6 else 32}x}",
        "reverse_pointer": address.reverse_pointer,
        "private": address.is_private,
        "global": address.is_global,
        "loopback": address.is_loopback,
        "link_local": address.is_link_local,
        "multicast": address.is_multicast,
        "reserved": address.is_reserved,
        "unspecified": address.is_unspecified,
        "ipv4_mapped": str(mapped) if mapped else None,
    }


class WebEngine(ChoiceEngine):
    """URLs, query strings, HTTP status codes, MIME types, IP addresses and subnets."""

    name = "convert.web"
    jobs = {
        "url-parse": _url_parse,
        "query-build": _query_build,
        "http-status": _http_status,
        "mime-type": _mime_lookup,
        "subnet": _subnet,
        "ip-inspect": _ip_inspect,
    }


# --- dates and times ---------------------------------------------------------------------


def _zone(name: str) -> Any:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    name = name.strip()
    if name.upper() in ("UTC", "Z", "GMT"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise EngineError(
            f"Unknown time zone '{name}': use an IANA name such as Europe/Paris or "
            "America/New_York."
        ) from None


def _parse_datetime(text: str, zone_name: str) -> datetime:
    """An ISO 8601 date or date-time; without an offset it is read in ``zone_name``."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise EngineError(
            f"'{text.strip()}' is not an ISO 8601 date or date-time, such as 2025-03-14 or "
            "2025-03-14T09:30:00+01:00."
        ) from None
    if value.tzinfo is None:
        zone = _zone(zone_name)
        value = value.replace(tzinfo=zone)
        if value.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != value.replace(
            tzinfo=None
        ):
            raise EngineError(
                f"{text.strip()} does not exist in {zone_name} (the clocks skip it when summer "
                "time starts); pick another time."
            )
    return value


def _moment(value: datetime) -> dict[str, Any]:
    """One moment as the date tools describe it."""
    iso_year, iso_week, _ = value.isocalendar()
    return {
        "datetime": value.isoformat(),
        "utc_offset": _offset_text(value),
        "abbreviation": value.tzname(),
        "weekday": value.strftime("%A"),
        "iso_week": f"{iso_year}-W{iso_week:02d}",
        "day_of_year": value.timetuple().tm_yday,
    }


def _offset_text(value: datetime) -> str:
    offset = value.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


_UNIT_SCALES = {"seconds": 1, "milliseconds": 10**3, "microseconds": 10**6,
                "nanoseconds": 10**9}  # fmt: skip


def _timestamp(inputs: dict[str, Any]) -> dict[str, Any]:
    from decimal import Decimal, InvalidOperation

    text = inputs["value"].strip()
    zone = _zone(inputs["timezone"])
    unit = inputs["unit"]
    try:
        number = Decimal(text)
    except InvalidOperation:
        number = None
    if number is not None and number.is_finite():
        if unit == "auto":
            size = abs(number)
            unit = (
                "seconds"
                if size < 10**11
                else "milliseconds"
                if size < 10**14
                else "microseconds"
                if size < 10**17
                else "nanoseconds"
            )
        seconds = number / _UNIT_SCALES[unit]
        try:
            moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=float(seconds))
        except OverflowError:
            raise EngineError(f"{text} {unit} is outside the years 1 to 9999.") from None
    else:
        moment = _parse_datetime(text, inputs["timezone"])
        unit = None
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    delta = moment - epoch
    micros = (delta.days * 86_400 + delta.seconds) * 10**6 + delta.microseconds
    local = moment.astimezone(zone)
    return {
        "unix_seconds": _round(micros / 10**6, 16),
        "unix_milliseconds": micros // 1000,
        "utc": moment.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "local": _moment(local),
        "rfc_2822": local.strftime("%a, %d %b %Y %H:%M:%S ") + _offset_text(local).replace(":", ""),
        "detected_unit": unit,
    }


def _timezone_convert(inputs: dict[str, Any]) -> dict[str, Any]:
    source = _parse_datetime(inputs["datetime"], inputs["from_zone"])
    zones = _split_list(inputs["to_zones"], 25, "time zones")
    if not zones:
        raise EngineError("Give at least one time zone to convert to.")
    conversions = []
    for name in zones:
        local = source.astimezone(_zone(name))
        day_shift = (local.date() - source.date()).days
        conversions.append(
            {"zone": name, **_moment(local), "day_shift": day_shift, "dst": bool(local.dst())}
        )
    return {"source": _moment(source), "conversions": conversions}


_DURATION_RE = re.compile(
    r"(?P<sign>[-+])?P(?!$)(?:(?P<years>\d+(?:[.,]\d+)?)Y)?(?:(?P<months>\d+(?:[.,]\d+)?)M)?"
    r"(?:(?P<weeks>\d+(?:[.,]\d+)?)W)?(?:(?P<days>\d+(?:[.,]\d+)?)D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d+(?:[.,]\d+)?)H)?(?:(?P<minutes>\d+(?:[.,]\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?",
    re.IGNORECASE,
)
_DURATION_FIELDS = ("years", "months", "weeks", "days", "hours", "minutes", "seconds")
_FIELD_SECONDS = {"weeks": 604_800, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
# Average Gregorian lengths, for an approximate total when years or months are involved.
_AVERAGE_SECONDS = {"years": 31_556_952, "months": 2_629_746}


def _parse_duration(text: str) -> tuple[int, dict[str, float | int]]:
    """An ISO 8601 duration as (sign, fields); ``-P1D`` and decimal fractions are accepted."""
    match = _DURATION_RE.fullmatch(text.strip())
    if not match:
        raise EngineError(
            f"'{text.strip()}' is not an ISO 8601 duration such as P1Y2M10DT2H30M, PT90M or P2W."
        )
    fields: dict[str, float | int] = {}
    for name in _DURATION_FIELDS:
        raw = match.group(name)
        value = float(raw.replace(",", ".")) if raw else 0
        fields[name] = int(value) if float(value).is_integer() else value
    return (-1 if match.group("sign") == "-" else 1), fields


def _duration_text(sign: int, fields: dict[str, float | int]) -> str:
    def number(value: float | int) -> str:
        return str(int(value)) if float(value).is_integer() else f"{value:g}"

    date_part = "".join(
        f"{number(fields[n])}{n[0].upper()}" for n in _DURATION_FIELDS[:4] if fields[n]
    )
    time_part = "".join(
        f"{number(fields[n])}{n[0].upper()}" for n in _DURATION_FIELDS[4:] if fields[n]
    )
    text = "P" + date_part + (f"T{time_part}" if time_part else "")
    return ("-" if sign < 0 else "") + (text if text != "P" else "PT0S")


def _duration_words(sign: int, fields: dict[str, float | int]) -> str:
    parts = []
    for name in _DURATION_FIELDS:
        value = fields[name]
        if value:
            unit = name if value != 1 else name[:-1]
            parts.append(f"{value:g} {unit}")
    words = ", ".join(parts) if parts else "0 seconds"
    return f"minus {words}" if sign < 0 else words


def _duration(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["duration"].strip()
    if re.fullmatch(r"[-+]?\d+(\.\d+)?", text):
        total = float(text)
        if abs(total) > 10**12:
            raise EngineError("Give at most 10^12 seconds (about 31,700 years).")
        sign, remaining = (-1 if total < 0 else 1), abs(total)
        fields: dict[str, float | int] = dict.fromkeys(_DURATION_FIELDS, 0)
        for name in ("days", "hours", "minutes"):
            fields[name], remaining = (
                int(remaining // _FIELD_SECONDS[name]),
                remaining % _FIELD_SECONDS[name],
            )
        fields["seconds"] = _round(remaining, 12)
        if not inputs["use_days"]:
            fields["hours"] += fields.pop("days") * 24
            fields["days"] = 0
    else:
        sign, fields = _parse_duration(text)
    exact = sum(fields[n] * _FIELD_SECONDS[n] for n in _FIELD_SECONDS)
    calendar = fields["years"] or fields["months"]
    approximate = exact + sum(fields[n] * _AVERAGE_SECONDS[n] for n in _AVERAGE_SECONDS)
    return {
        "iso": _duration_text(sign, fields),
        "components": {name: sign * fields[name] for name in _DURATION_FIELDS},
        "total_seconds": None if calendar else _round(sign * exact, 15),
        "approximate_total_seconds": _round(sign * approximate, 15),
        "description": _duration_words(sign, fields),
    }


def _add_months(value: datetime, months: int) -> datetime:
    """``value`` moved by whole months, the day clamped to the month's end (Jan 31 + 1M: Feb 28)."""
    import calendar

    index = value.year * 12 + value.month - 1 + months
    year, month = divmod(index, 12)
    if not 1 <= year <= 9999:
        raise EngineError("The result falls outside the years 1 to 9999.")
    day = min(value.day, calendar.monthrange(year, month + 1)[1])
    return value.replace(year=year, month=month + 1, day=day)


def _holidays(text: str) -> set[date]:
    days = set()
    for item in _split_list(text, 1000, "holidays"):
        try:
            days.add(date.fromisoformat(item))
        except ValueError:
            raise EngineError(f"Holiday '{item}' is not a date like 2025-12-25.") from None
    return days


def _business_days(start: date, end: date, holidays: set[date]) -> int:
    """Weekdays from ``start`` (included) to ``end`` (excluded) that are not holidays."""
    if end <= start:
        return -_business_days(end, start, holidays) if end < start else 0
    days = (end - start).days
    weeks, extra = divmod(days, 7)
    count = weeks * 5 + sum(1 for i in range(extra) if (start.weekday() + i) % 7 < 5)
    return count - sum(1 for d in holidays if start <= d < end and d.weekday() < 5)


def _date_difference(inputs: dict[str, Any]) -> dict[str, Any]:
    start = _parse_datetime(inputs["start"], inputs["timezone"])
    end = _parse_datetime(inputs["end"], inputs["timezone"])
    sign = -1 if end < start else 1
    early, late = (start, end) if sign > 0 else (end, start)
    months = (late.year - early.year) * 12 + late.month - early.month
    anchor = _add_months(early, months)
    if anchor > late:
        months -= 1
        anchor = _add_months(early, months)
    rest = late - anchor
    delta = late - early
    return {
        "total_days": _round(sign * delta.total_seconds() / 86_400, 12),
        "total_seconds": _round(sign * delta.total_seconds(), 15),
        "weeks_and_days": {"weeks": sign * (delta.days // 7), "days": sign * (delta.days % 7)},
        "calendar": {
            "years": sign * (months // 12),
            "months": sign * (months % 12),
            "days": sign * rest.days,
            "hours": sign * (rest.seconds // 3600),
            "minutes": sign * (rest.seconds % 3600 // 60),
            "seconds": sign * (rest.seconds % 60),
        },
        "business_days": _business_days(start.date(), end.date(), _holidays(inputs["holidays"])),
    }


def _add_business_days(start: date, count: int, holidays: set[date]) -> date:
    step = 1 if count >= 0 else -1
    day, left = start, abs(count)
    while left:
        day += timedelta(days=step)
        if day.weekday() < 5 and day not in holidays:
            left -= 1
    return day


def _date_add(inputs: dict[str, Any]) -> dict[str, Any]:
    start = _parse_datetime(inputs["start"], inputs["timezone"])
    sign, fields = _parse_duration(inputs["duration"])
    if inputs["subtract"]:
        sign = -sign
    if not float(fields["years"]).is_integer() or not float(fields["months"]).is_integer():
        raise EngineError("Years and months must be whole numbers to add them to a date.")
    try:
        result = _add_months(start, sign * int(fields["years"] * 12 + fields["months"]))
        result += sign * timedelta(**{n: fields[n] for n in _FIELD_SECONDS})
        if inputs["business_days"]:
            shifted = _add_business_days(
                result.date(), inputs["business_days"], _holidays(inputs["holidays"])
            )
            result = result + timedelta(days=(shifted - result.date()).days)
    except OverflowError:
        raise EngineError("The result falls outside the years 1 to 9999.") from None
    return {**_moment(result), "days_from_start": (result.date() - start.date()).days}


_MAX_CRON_RUNS = 50


def _cron_runs(inputs: dict[str, Any]) -> dict[str, Any]:
    from croniter import CroniterBadCronError, CroniterBadDateError, CroniterError, croniter

    expression = " ".join(inputs["expression"].split())
    zone = _zone(inputs["timezone"])
    start = (
        _parse_datetime(inputs["start"], inputs["timezone"])
        if inputs["start"]
        else (datetime.now(zone))
    )
    if len(expression.split()) != 5 and not expression.startswith("@"):
        raise EngineError(
            "Give a 5-field cron expression (minute hour day-of-month month day-of-week), such "
            "as */15 9-17 * * 1-5."
        )
    try:
        schedule = croniter(expression, start.astimezone(zone))
        runs = [schedule.get_next(datetime) for _ in range(inputs["count"])]
    except CroniterBadDateError:
        raise EngineError("The expression never matches a real date (e.g. 30 February).") from None
    except (CroniterBadCronError, CroniterError, ValueError) as error:
        raise EngineError(f"Invalid cron expression: {error}.") from None
    return {
        "expression": expression,
        "timezone": inputs["timezone"].strip(),
        "runs": [run.isoformat() for run in runs],
    }


class DateTimeEngine(ChoiceEngine):
    """Timestamps, time zones, date arithmetic, ISO 8601 durations and cron schedules."""

    name = "convert.datetime"
    requires = ("croniter",)
    jobs = {
        "timestamp": _timestamp,
        "timezone": _timezone_convert,
        "difference": _date_difference,
        "add": _date_add,
        "duration": _duration,
        "cron-runs": _cron_runs,
    }


# --- numbers and units -------------------------------------------------------------------

_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_PREFIXES = {"0x": 16, "0o": 8, "0b": 2}


def _to_base(number: int, base: int) -> str:
    if number == 0:
        return "0"
    digits = []
    value = abs(number)
    while value:
        value, digit = divmod(value, base)
        digits.append(_DIGITS[digit])
    return ("-" if number < 0 else "") + "".join(reversed(digits))


def _number_base(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["value"].strip().replace("_", "").replace(" ", "").lower()
    negative = text.startswith("-")
    body = text.lstrip("+-")
    base = inputs["from_base"]
    if base == 0:
        base = _PREFIXES.get(body[:2], 10)
    if body[:2] in _PREFIXES and _PREFIXES[body[:2]] == base:
        body = body[2:]
    try:
        number = int(body, base)
    except ValueError:
        allowed = _DIGITS[:base]
        raise EngineError(
            f"'{inputs['value'].strip()}' is not a base-{base} number (digits {allowed[0]}-"
            f"{allowed[-1]})."
        ) from None
    number = -number if negative else number
    return {
        "decimal": str(number),
        "binary": _to_base(number, 2),
        "octal": _to_base(number, 8),
        "hexadecimal": _to_base(number, 16),
        "target_base": inputs["to_base"],
        "converted": _to_base(number, inputs["to_base"]),
        "bit_length": number.bit_length(),
    }


_ROMAN = ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
          (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))  # fmt: skip
_ROMAN_VALUES = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}


def _to_roman(number: int) -> str:
    parts = []
    for value, numeral in _ROMAN:
        count, number = divmod(number, value)
        parts.append(numeral * count)
    return "".join(parts)


def _roman(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["value"].strip().upper()
    if text.isdigit():
        number = int(text)
        if not 1 <= number <= 3999:
            raise EngineError("Roman numerals run from 1 to 3999.")
        return {"arabic": number, "roman": _to_roman(number)}
    if not text or any(char not in _ROMAN_VALUES for char in text):
        raise EngineError(
            f"'{inputs['value'].strip()}' is neither a whole number nor a Roman numeral (I, V, "
            "X, L, C, D, M)."
        )
    values = [_ROMAN_VALUES[char] for char in text]
    number = sum(
        -v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values)
    )
    if not 1 <= number <= 3999 or _to_roman(number) != text:
        suggestion = f" Did you mean {_to_roman(number)} ({number})?" if 1 <= number <= 3999 else ""
        raise EngineError(f"'{text}' is not a standard Roman numeral.{suggestion}")
    return {"arabic": number, "roman": text}


# category -> unit symbol -> (name, factor to the category's base unit, other spellings)
_UNITS: dict[str, dict[str, tuple[str, float, tuple[str, ...]]]] = {
    "length": {
        "nm": ("nanometre", 1e-9, ("nanometer", "nanometers", "nanometres")),
        "um": ("micrometre", 1e-6, ("µm", "micron", "microns", "micrometer", "micrometers")),
        "mm": ("millimetre", 1e-3, ("millimeter", "millimeters", "millimetres")),
        "cm": ("centimetre", 1e-2, ("centimeter", "centimeters", "centimetres")),
        "m": ("metre", 1.0, ("meter", "meters", "metres")),
        "km": ("kilometre", 1e3, ("kilometer", "kilometers", "kilometres")),
        "in": ("inch", 0.0254, ("inches", '"')),
        "ft": ("foot", 0.3048, ("feet", "'")),
        "yd": ("yard", 0.9144, ("yards",)),
        "mi": ("mile", 1609.344, ("miles",)),
        "nmi": ("nautical mile", 1852.0, ("nautical miles",)),
    },
    "mass": {
        "mg": ("milligram", 1e-6, ("milligrams",)),
        "g": ("gram", 1e-3, ("grams",)),
        "kg": ("kilogram", 1.0, ("kilograms", "kilo", "kilos")),
        "t": ("tonne", 1e3, ("tonnes", "metric ton", "metric tons")),
        "oz": ("ounce", 0.028349523125, ("ounces",)),
        "lb": ("pound", 0.45359237, ("lbs", "pounds")),
        "st": ("stone", 6.35029318, ("stones",)),
        "ton": ("US ton", 907.18474, ("short ton", "short tons", "us ton")),
    },
    "volume": {
        "ml": ("millilitre", 1e-3, ("milliliter", "milliliters", "millilitres", "cc")),
        "l": ("litre", 1.0, ("liter", "liters", "litres")),
        "m3": ("cubic metre", 1e3, ("m³", "cubic meter", "cubic meters")),
        "tsp": ("US teaspoon", 0.00492892159375, ("teaspoon", "teaspoons")),
        "tbsp": ("US tablespoon", 0.01478676478125, ("tablespoon", "tablespoons")),
        "floz": ("US fluid ounce", 0.0295735295625, ("fl oz", "fluid ounce", "fluid ounces")),
        "cup": ("US cup", 0.2365882365, ("cups",)),
        "pt": ("US pint", 0.473176473, ("pint", "pints")),
        "qt": ("US quart", 0.946352946, ("quart", "quarts")),
        "gal": ("US gallon", 3.785411784, ("gallon", "gallons", "us gal")),
        "impgal": ("imperial gallon", 4.54609, ("imperial gallon", "uk gallon", "uk gal")),
    },
    "area": {
        "mm2": ("square millimetre", 1e-6, ("mm²",)),
        "cm2": ("square centimetre", 1e-4, ("cm²",)),
        "m2": ("square metre", 1.0, ("m²", "sqm", "square meter", "square meters")),
        "ha": ("hectare", 1e4, ("hectare", "hectares")),
        "km2": ("square kilometre", 1e6, ("km²",)),
        "in2": ("square inch", 0.00064516, ("in²", "sq in")),
        "ft2": ("square foot", 0.09290304, ("ft²", "sq ft", "sqft", "square feet")),
        "yd2": ("square yard", 0.83612736, ("yd²", "sq yd")),
        "acre": ("acre", 4046.8564224, ("acres", "ac")),
        "mi2": ("square mile", 2589988.110336, ("mi²", "sq mi")),
    },
    "speed": {
        "m/s": ("metre per second", 1.0, ("mps",)),
        "km/h": ("kilometre per hour", 1 / 3.6, ("kmh", "kph")),
        "mph": ("mile per hour", 0.44704, ("mi/h",)),
        "kn": ("knot", 1852 / 3600, ("knot", "knots", "kt")),
        "ft/s": ("foot per second", 0.3048, ("fps",)),
    },
    "time": {
        "ms": ("millisecond", 1e-3, ("millisecond", "milliseconds")),
        "s": ("second", 1.0, ("sec", "second", "seconds")),
        "min": ("minute", 60.0, ("minute", "minutes")),
        "h": ("hour", 3600.0, ("hr", "hour", "hours")),
        "d": ("day", 86400.0, ("day", "days")),
        "wk": ("week", 604800.0, ("week", "weeks")),
        "yr": ("year (365.2425 days)", 31556952.0, ("year", "years")),
    },
    "pressure": {
        "pa": ("pascal", 1.0, ("pascal", "pascals")),
        "kpa": ("kilopascal", 1e3, ("kilopascal", "kilopascals")),
        "bar": ("bar", 1e5, ("bars",)),
        "psi": ("pound per square inch", 6894.757293168361, ()),
        "atm": ("standard atmosphere", 101325.0, ("atmosphere", "atmospheres")),
        "mmhg": ("millimetre of mercury", 133.322387415, ("torr",)),
    },
    "energy": {
        "j": ("joule", 1.0, ("joule", "joules")),
        "kj": ("kilojoule", 1e3, ("kilojoule", "kilojoules")),
        "cal": ("calorie", 4.184, ("calorie", "calories")),
        "kcal": ("kilocalorie", 4184.0, ("kilocalorie", "kilocalories", "Cal")),
        "wh": ("watt-hour", 3600.0, ("watt hour", "watt hours")),
        "kwh": ("kilowatt-hour", 3.6e6, ("kilowatt hour", "kilowatt hours")),
        "btu": ("British thermal unit", 1055.05585262, ()),
    },
    "temperature": {
        "C": ("degree Celsius", 1.0, ("°C", "celsius", "centigrade")),
        "F": ("degree Fahrenheit", 1.0, ("°F", "fahrenheit")),
        "K": ("kelvin", 1.0, ("kelvin", "kelvins")),
    },
}
# Temperature scales are affine: (to kelvin, from kelvin).
_TEMPERATURE = {
    "C": (lambda v: v + 273.15, lambda k: k - 273.15),
    "F": (lambda v: (v - 32) * 5 / 9 + 273.15, lambda k: (k - 273.15) * 9 / 5 + 32),
    "K": (lambda v: v, lambda k: k),
}


def _find_unit(text: str) -> tuple[str, str]:
    """(category, symbol) of a unit written as a symbol or a name, case-insensitively."""
    wanted = text.strip()
    for exact in (True, False):
        for category, units in _UNITS.items():
            for symbol, (name, _factor, aliases) in units.items():
                spellings = (symbol, name, *aliases)
                if exact and wanted in spellings:
                    return category, symbol
                if not exact and wanted.lower() in {s.lower() for s in spellings}:
                    return category, symbol
    raise EngineError(
        f"Unknown unit '{wanted}'. Known units: "
        + "; ".join(f"{c}: {', '.join(units)}" for c, units in _UNITS.items())
        + "."
    )


def _convert_unit(value: float, category: str, source: str, target: str) -> float:
    if category == "temperature":
        return _TEMPERATURE[target][1](_TEMPERATURE[source][0](value))
    units = _UNITS[category]
    return value * units[source][1] / units[target][1]


def _unit_convert(inputs: dict[str, Any]) -> dict[str, Any]:
    category, source = _find_unit(inputs["from_unit"])
    value = inputs["value"]
    if category == "temperature" and _TEMPERATURE[source][0](value) < 0:
        raise EngineError("That temperature is below absolute zero.")
    if inputs["to_unit"].strip():
        target_category, target = _find_unit(inputs["to_unit"])
        if target_category != category:
            raise EngineError(
                f"Cannot convert {category} ({source}) to {target_category} ({target})."
            )
        targets = [target]
    else:
        targets = [symbol for symbol in _UNITS[category] if symbol != source]
    digits = inputs["significant_digits"]
    return {
        "category": category,
        "value": value,
        "from_unit": source,
        "conversions": [
            {
                "unit": symbol,
                "name": _UNITS[category][symbol][0],
                "value": _round(_convert_unit(value, category, source, symbol), digits),
            }
            for symbol in targets
        ],
    }


_BYTE_UNITS = ("B", "KB", "MB", "GB", "TB", "PB", "EB")
_BYTE_SIZE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGTPE]?)(i?)(B|bytes?|bits?|b)?", re.I)


def _human_size(count: int, base: int, precision: int) -> str:
    units = _BYTE_UNITS if base == 1000 else ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    value = float(count)
    index = 0
    while abs(value) >= base and index < len(units) - 1:
        value /= base
        index += 1
    if index == 0:
        return f"{count} B"
    return f"{value:.{precision}f} {units[index]}"


def _byte_size(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["size"].strip()
    match = _BYTE_SIZE_RE.fullmatch(text)
    if not match:
        raise EngineError(
            f"'{text}' is not a size: write a number with an optional unit, such as 1536, "
            "1.5 GB, 20 MiB or 100 Mbit."
        )
    number, prefix, binary, unit = match.groups()
    base = 1024 if binary or (prefix and inputs["kb_means"] == 1024) else 1000
    exponent = " KMGTPE".index(prefix.upper()) if prefix else 0
    from decimal import Decimal

    count = Decimal(number) * Decimal(base) ** exponent
    if unit and unit.lower().startswith("bit") or unit == "b":
        count /= 8
    if count > Decimal(2) ** 80:
        raise EngineError("Give a size below 1 yobibyte.")
    total = int(count.to_integral_value())
    precision = inputs["precision"]
    return {
        "bytes": total,
        "bits": total * 8,
        "decimal": _human_size(total, 1000, precision),
        "binary": _human_size(total, 1024, precision),
    }


class NumberEngine(ChoiceEngine):
    """Number bases, Roman numerals, units of measurement and byte sizes."""

    name = "convert.numbers"
    jobs = {
        "base": _number_base,
        "roman": _roman,
        "units": _unit_convert,
        "bytes": _byte_size,
    }


# --- colours -----------------------------------------------------------------------------

# The CSS named colours (CSS Color Module Level 4).
_CSS_COLOURS = dict(
    item.split(":")
    for item in (  # noqa: SIM905 - a table, kept compact
        "aliceblue:f0f8ff antiquewhite:faebd7 aqua:00ffff aquamarine:7fffd4 azure:f0ffff "
        "beige:f5f5dc bisque:ffe4c4 black:000000 blanchedalmond:ffebcd blue:0000ff "
        "blueviolet:8a2be2 brown:a52a2a burlywood:deb887 cadetblue:5f9ea0 chartreuse:7fff00 "
        "chocolate:d2691e coral:ff7f50 cornflowerblue:6495ed cornsilk:fff8dc crimson:dc143c "
        "cyan:00ffff darkblue:00008b darkcyan:008b8b darkgoldenrod:b8860b darkgray:a9a9a9 "
        "darkgreen:006400 darkgrey:a9a9a9 darkkhaki:bdb76b darkmagenta:8b008b "
        "darkolivegreen:556b2f darkorange:ff8c00 darkorchid:9932cc darkred:8b0000 "
        "darksalmon:e9967a darkseagreen:8fbc8f darkslateblue:483d8b darkslategray:2f4f4f "
        "darkslategrey:2f4f4f darkturquoise:00ced1 darkviolet:9400d3 deeppink:ff1493 "
        "deepskyblue:00bfff dimgray:696969 dimgrey:696969 dodgerblue:1e90ff firebrick:b22222 "
        "floralwhite:fffaf0 forestgreen:228b22 fuchsia:ff00ff gainsboro:dcdcdc "
        "ghostwhite:f8f8ff gold:ffd700 goldenrod:daa520 gray:808080 green:008000 "
        "greenyellow:adff2f grey:808080 honeydew:f0fff0 hotpink:ff69b4 indianred:cd5c5c "
        "indigo:4b0082 ivory:fffff0 khaki:f0e68c lavender:e6e6fa lavenderblush:fff0f5 "
        "lawngreen:7cfc00 lemonchiffon:fffacd lightblue:add8e6 lightcoral:f08080 "
        "lightcyan:e0ffff lightgoldenrodyellow:fafad2 lightgray:d3d3d3 lightgreen:90ee90 "
        "lightgrey:d3d3d3 lightpink:ffb6c1 lightsalmon:ffa07a lightseagreen:20b2aa "
        "lightskyblue:87cefa lightslategray:778899 lightslategrey:778899 lightsteelblue:b0c4de "
        "lightyellow:ffffe0 lime:00ff00 limegreen:32cd32 linen:faf0e6 magenta:ff00ff "
        "maroon:800000 mediumaquamarine:66cdaa mediumblue:0000cd mediumorchid:ba55d3 "
        "mediumpurple:9370db mediumseagreen:3cb371 mediumslateblue:7b68ee "
        "mediumspringgreen:00fa9a mediumturquoise:48d1cc mediumvioletred:c71585 "
        "midnightblue:191970 mintcream:f5fffa mistyrose:ffe4e1 moccasin:ffe4b5 "
        "navajowhite:ffdead navy:000080 oldlace:fdf5e6 olive:808000 olivedrab:6b8e23 "
        "orange:ffa500 orangered:ff4500 orchid:da70d6 palegoldenrod:eee8aa palegreen:98fb98 "
        "paleturquoise:afeeee palevioletred:db7093 papayawhip:ffefd5 peachpuff:ffdab9 "
        "peru:cd853f pink:ffc0cb plum:dda0dd powderblue:b0e0e6 purple:800080 "
        "rebeccapurple:663399 red:ff0000 rosybrown:bc8f8f royalblue:4169e1 saddlebrown:8b4513 "
        "salmon:fa8072 sandybrown:f4a460 seagreen:2e8b57 seashell:fff5ee sienna:a0522d "
        "silver:c0c0c0 skyblue:87ceeb slateblue:6a5acd slategray:708090 slategrey:708090 "
        "snow:fffafa springgreen:00ff7f steelblue:4682b4 tan:d2b48c teal:008080 thistle:d8bfd8 "
        "tomato:ff6347 turquoise:40e0d0 violet:ee82ee wheat:f5deb3 white:ffffff "
        "whitesmoke:f5f5f5 yellow:ffff00 yellowgreen:9acd32"
    ).split()
)
_HEX_RE = re.compile(r"#?([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})")
_FUNCTION_RE = re.compile(r"(rgba?|hsla?|hsv|hsb|cmyk)\(([^()]*)\)")

Rgba = tuple[float, float, float, float]


def _channel(text: str, scale: float, what: str) -> float:
    """A number or percentage, percentages read against ``scale``."""
    try:
        if text.endswith("%"):
            return float(text[:-1]) * scale / 100
        return float(text.removesuffix("deg"))
    except ValueError:
        raise EngineError(f"'{text}' is not a number in the {what} colour.") from None


def _parse_colour(text: str) -> Rgba:
    """A CSS-style colour as (r, g, b) in 0-255 and alpha in 0-1."""
    import colorsys

    value = text.strip().lower().replace(" ", "") if "(" not in text else text.strip().lower()
    if value in _CSS_COLOURS:
        value = "#" + _CSS_COLOURS[value]
    match = _HEX_RE.fullmatch(value)
    if match:
        digits = match[1]
        if len(digits) <= 4:
            digits = "".join(ch * 2 for ch in digits)
        channels = [int(digits[i : i + 2], 16) for i in range(0, len(digits), 2)]
        alpha = channels[3] / 255 if len(channels) == 4 else 1.0
        return float(channels[0]), float(channels[1]), float(channels[2]), alpha
    match = _FUNCTION_RE.fullmatch(value)
    if not match:
        raise EngineError(
            f"'{text.strip()}' is not a colour: use #1e90ff, rgb(30 144 255), "
            "hsl(210 100% 56%), hsv(210, 88%, 100%), cmyk(88%, 44%, 0%, 0%) or a CSS name."
        )
    kind, args = match[1], [a for a in re.split(r"[\s,/]+", match[2].strip()) if a]
    expected = 4 if kind == "cmyk" else 3
    if len(args) not in (expected, expected + 1):
        raise EngineError(f"{kind}() takes {expected} values (and optionally an alpha).")
    alpha = 1.0
    if len(args) == expected + 1:
        alpha = _channel(args.pop(), 1, kind)
    if kind.startswith("rgb"):
        r, g, b = (_channel(a, 255, kind) for a in args)
    elif kind == "cmyk":
        c, m, y, k = (_channel(a, 1, kind) for a in args)
        r, g, b = (255 * (1 - part) * (1 - k) for part in (c, m, y))
    else:
        hue = _channel(args[0], 360, kind) % 360 / 360
        first, second = (_channel(a, 1, kind) for a in args[1:])
        if kind.startswith("hsl"):
            red, green, blue = colorsys.hls_to_rgb(hue, second, first)
        else:
            red, green, blue = colorsys.hsv_to_rgb(hue, first, second)
        r, g, b = red * 255, green * 255, blue * 255
    if not all(0 <= channel <= 255.0001 for channel in (r, g, b)) or not 0 <= alpha <= 1:
        raise EngineError(f"'{text.strip()}' has a value out of range.")
    return r, g, b, alpha


def _hex(colour: Rgba) -> str:
    r, g, b, alpha = colour
    text = "#" + "".join(f"{round(c):02x}" for c in (r, g, b))
    return text if alpha >= 1 else text + f"{round(alpha * 255):02x}"


def _fmt(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _colour_formats(colour: Rgba) -> dict[str, Any]:
    import colorsys

    r, g, b, alpha = (round(colour[0]), round(colour[1]), round(colour[2]), colour[3])
    h, lightness, s = colorsys.rgb_to_hls(r / 255, g / 255, b / 255)
    _, sv, v = colorsys.rgb_to_hsv(r / 255, g / 255, b / 255)
    k = 1 - max(r, g, b) / 255
    cmyk = [0.0, 0.0, 0.0] if k == 1 else [(1 - c / 255 - k) / (1 - k) for c in (r, g, b)]
    suffix = "" if alpha >= 1 else f" / {_fmt(alpha * 100)}%"
    hexa = _hex((r, g, b, alpha))
    names = [name for name, code in _CSS_COLOURS.items() if f"#{code}" == hexa]
    return {
        "hex": hexa,
        "rgb": f"rgb({r} {g} {b}{suffix})",
        "hsl": f"hsl({_fmt(h * 360)} {_fmt(s * 100)}% {_fmt(lightness * 100)}%{suffix})",
        "hsv": f"hsv({_fmt(h * 360)} {_fmt(sv * 100)}% {_fmt(v * 100)}%)",
        "cmyk": "cmyk(" + ", ".join(f"{_fmt(p * 100)}%" for p in [*cmyk, k]) + ")",
        "red": r,
        "green": g,
        "blue": b,
        "alpha": round(alpha, 3),
        "css_names": names,
    }


def _colour_convert(inputs: dict[str, Any]) -> dict[str, Any]:
    return _colour_formats(_parse_colour(inputs["color"]))


def _luminance(colour: Rgba) -> float:
    def linear(channel: float) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b, _ = colour
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def _contrast(inputs: dict[str, Any]) -> dict[str, Any]:
    background = _parse_colour(inputs["background"])
    if background[3] < 1:
        raise EngineError("The background must be opaque (no alpha below 1).")
    foreground = _parse_colour(inputs["foreground"])
    alpha = foreground[3]
    # A translucent text colour is seen blended over the background.
    blended = tuple(
        f * alpha + b * (1 - alpha) for f, b in zip(foreground[:3], background[:3], strict=True)
    )
    fg, bg = _luminance((*blended, 1.0)), _luminance(background)
    ratio = (max(fg, bg) + 0.05) / (min(fg, bg) + 0.05)
    # WCAG compares the unrounded ratio: 4.499 fails AA even though it displays as 4.5.
    return {
        "ratio": math.floor(ratio * 100) / 100,
        "aa_normal_text": ratio >= 4.5,
        "aa_large_text": ratio >= 3,
        "aaa_normal_text": ratio >= 7,
        "aaa_large_text": ratio >= 4.5,
        "ui_components": ratio >= 3,
        "foreground_luminance": round(fg, 4),
        "background_luminance": round(bg, 4),
    }


_HARMONIES = {"complementary": (0, 180), "analogous": (-30, 0, 30), "triadic": (0, 120, 240),
              "split-complementary": (0, 150, 210), "tetradic": (0, 90, 180, 270)}  # fmt: skip


def _palette(inputs: dict[str, Any]) -> dict[str, Any]:
    import colorsys

    base = _parse_colour(inputs["color"])
    rgb = [channel / 255 for channel in base[:3]]
    h, lightness, s = colorsys.rgb_to_hls(*rgb)
    scheme, count = inputs["scheme"], inputs["count"]
    if scheme in _HARMONIES:
        shifts = _HARMONIES[scheme]
        colours = [colorsys.hls_to_rgb((h + shift / 360) % 1, lightness, s) for shift in shifts]
    elif scheme == "tints":  # towards white
        colours = [tuple(c + (1 - c) * i / (count + 1) for c in rgb) for i in range(count)]
    elif scheme == "shades":  # towards black
        colours = [tuple(c * (1 - i / (count + 1)) for c in rgb) for i in range(count)]
    else:  # monochromatic: the hue at evenly spaced lightness
        colours = [colorsys.hls_to_rgb(h, (i + 1) / (count + 1), s) for i in range(count)]
    return {
        "base": _hex((*base[:3], 1.0)),
        "scheme": scheme,
        "colors": [_hex((r * 255, g * 255, b * 255, 1.0)) for r, g, b in colours],
    }


class ColourEngine(ChoiceEngine):
    """Colour notations, WCAG contrast and palettes."""

    name = "convert.colour"
    jobs = {
        "convert": _colour_convert,
        "contrast": _contrast,
        "palette": _palette,
    }


# --- minifiers ---------------------------------------------------------------------------


def _savings(original: str, minified: str) -> dict[str, Any]:
    saved = 100 * (len(original) - len(minified)) / len(original) if original else 0.0
    return {
        "minified": minified,
        "original_chars": len(original),
        "minified_chars": len(minified),
        "saved_percent": round(saved, 1),
    }


def _minify_css(inputs: dict[str, Any]) -> dict[str, Any]:
    import rcssmin

    minified = rcssmin.cssmin(inputs["css"], keep_bang_comments=inputs["keep_license_comments"])
    return _savings(inputs["css"], minified.strip())


def _minify_js(inputs: dict[str, Any]) -> dict[str, Any]:
    import rjsmin

    minified = rjsmin.jsmin(inputs["code"], keep_bang_comments=inputs["keep_license_comments"])
    return _savings(inputs["code"], minified.strip())


_BLOCK_TAGS = frozenset(
    "html head body title meta link base style script noscript template div p ul ol li dl dt "  # noqa: SIM905 - a table
    "dd table thead tbody tfoot tr td th caption colgroup col form fieldset legend h1 h2 h3 h4 "
    "h5 h6 header footer main nav section article aside figure figcaption blockquote hr pre "
    "address details summary dialog option optgroup select".split()
)
_JS_TYPES = frozenset({"", "text/javascript", "application/javascript", "module"})


def _minify_html_text(html: str, minify_inline: bool, keep_comments: bool) -> str:
    """Collapse whitespace, drop comments and minify inline CSS/JS, token by token.

    Whitespace between two tags is dropped only next to block-level tags (it can matter
    between inline ones); <pre> and <textarea> keep theirs.
    """
    from html import escape
    from html.parser import HTMLParser

    import rcssmin
    import rjsmin

    out: list[str] = []
    # after_block: the last token is a block-level tag (whitespace after it never renders);
    # text_last: the last token is collapsible text, whose trailing space a block tag drops.
    state = {"verbatim": 0, "after_block": True, "raw": "", "text_last": False}

    class Minifier(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=False)

        def _tag(self, tag: str, attrs: list[tuple[str, str | None]], close: str) -> str:
            parts = [tag]
            for name, value in attrs:
                if value is None:
                    parts.append(name)
                else:
                    parts.append(f'{name}="{escape(value, quote=True)}"')
            return "<" + " ".join(parts) + close + ">"

        def _whitespace_before(self, tag: str) -> None:
            if tag in _BLOCK_TAGS and state["text_last"]:
                out[-1] = out[-1].rstrip(" ")
            state["text_last"] = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self._whitespace_before(tag)
            out.append(self._tag(tag, attrs, ""))
            state["after_block"] = tag in _BLOCK_TAGS
            if tag in ("pre", "textarea"):
                state["verbatim"] += 1
            if tag in ("script", "style"):
                kind = (dict(attrs).get("type") or "").lower()
                state["raw"] = tag if tag == "style" or kind in _JS_TYPES else "keep"

        def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self._whitespace_before(tag)
            out.append(self._tag(tag, attrs, " /"))
            state["after_block"] = tag in _BLOCK_TAGS

        def handle_endtag(self, tag: str) -> None:
            self._whitespace_before(tag)
            out.append(f"</{tag}>")
            state["after_block"] = tag in _BLOCK_TAGS
            state["raw"] = ""
            if tag in ("pre", "textarea") and state["verbatim"]:
                state["verbatim"] -= 1

        def handle_data(self, data: str) -> None:
            raw = state["raw"]
            if raw:
                if raw == "style" and minify_inline:
                    data = rcssmin.cssmin(data)
                elif raw == "script" and minify_inline:
                    data = rjsmin.jsmin(data)
                out.append(data.strip() if raw != "keep" else data)
                return
            if state["verbatim"]:
                out.append(data)
                state["text_last"] = False
                return
            text = re.sub(r"[ \t\n\r\f]+", " ", data)
            if state["after_block"] or (out and out[-1].endswith(" ")):
                text = text.lstrip(" ")
            if text:
                out.append(text)
                state["after_block"] = False
                state["text_last"] = True

        def handle_entityref(self, name: str) -> None:
            out.append(f"&{name};")
            state["after_block"] = state["text_last"] = False

        def handle_charref(self, name: str) -> None:
            out.append(f"&#{name};")
            state["after_block"] = state["text_last"] = False

        def handle_comment(self, data: str) -> None:
            if keep_comments or data.startswith("[if") or data.startswith("<![endif"):
                out.append(f"<!--{data}-->")
                state["text_last"] = False

        def handle_decl(self, decl: str) -> None:
            out.append(f"<!{decl}>")

        def handle_pi(self, data: str) -> None:
            out.append(f"<?{data}>")

    minifier = Minifier()
    minifier.feed(html)
    minifier.close()
    return "".join(out).strip()


def _minify_html(inputs: dict[str, Any]) -> dict[str, Any]:
    minified = _minify_html_text(inputs["html"], inputs["minify_inline"], inputs["keep_comments"])
    return _savings(inputs["html"], minified)


class MinifyEngine(ChoiceEngine):
    """Minifies CSS, JavaScript and HTML."""

    name = "convert.minify"
    requires = ("rcssmin", "rjsmin")
    jobs = {"css": _minify_css, "javascript": _minify_js, "html": _minify_html}


# --- developer text ----------------------------------------------------------------------

_MAX_DIFF_LINES = 5_000


def _text_diff(inputs: dict[str, Any]) -> dict[str, Any]:
    import difflib

    def lines(text: str, what: str) -> list[str]:
        result = text.splitlines()
        if len(result) > _MAX_DIFF_LINES:
            raise EngineError(f"The {what} text has more than {_MAX_DIFF_LINES:,} lines.")
        return result

    old, new = lines(inputs["original"], "original"), lines(inputs["changed"], "changed")
    if inputs["ignore_whitespace"]:
        normal_old = [" ".join(line.split()) for line in old]
        normal_new = [" ".join(line.split()) for line in new]
    else:
        normal_old, normal_new = old, new
    matcher = difflib.SequenceMatcher(None, normal_old, normal_new, autojunk=False)
    groups = list(matcher.get_grouped_opcodes(inputs["context_lines"]))
    diff = ["--- original", "+++ changed"] if groups else []
    added = removed = 0
    for group in groups:
        first, last = group[0], group[-1]
        diff.append(f"@@ -{_diff_range(first[1], last[2])} +{_diff_range(first[3], last[4])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                diff.extend(f" {line}" for line in old[i1:i2])
                continue
            diff.extend(f"-{line}" for line in old[i1:i2])
            diff.extend(f"+{line}" for line in new[j1:j2])
            removed += i2 - i1
            added += j2 - j1
    return {
        "identical": not groups,
        "diff": "\n".join(diff),
        "added_lines": added,
        "removed_lines": removed,
        "hunks": len(groups),
    }


def _diff_range(start: int, stop: int) -> str:
    """A unified diff range, as difflib writes it."""
    length = stop - start
    beginning = start + 1 if length else start
    return f"{beginning}" if length == 1 else f"{beginning},{length}"


_REGEX_FLAGS = ("ignorecase", "multiline", "dotall", "verbose", "ascii")
_MAX_MATCH_CHARS = 200_000


def _regex_test(inputs: dict[str, Any]) -> dict[str, Any]:
    import regex

    flags = 0
    for name in inputs["flags"]:
        flags |= getattr(regex, name.upper())
    try:
        pattern = regex.compile(inputs["pattern"], flags | regex.VERSION0)
    except regex.error as error:
        where = f" at position {error.pos}" if error.pos is not None else ""
        raise EngineError(f"The pattern is invalid{where}: {error.msg}.") from None
    text = inputs["text"]
    matches: list[dict[str, Any]] = []
    budget = _MAX_MATCH_CHARS
    truncated = False
    names = {index: name for name, index in pattern.groupindex.items()}
    try:
        for match in pattern.finditer(text, timeout=_REGEX_TIMEOUT):
            budget -= len(match.group()) + sum(len(g or "") for g in match.groups())
            if len(matches) == inputs["max_matches"] or budget < 0:
                truncated = True
                break
            matches.append(
                {
                    "match": match.group(),
                    "start": match.start(),
                    "end": match.end(),
                    "groups": [
                        {
                            "group": index,
                            "name": names.get(index),
                            "value": match.group(index),
                            "start": match.start(index) if match.group(index) is not None else None,
                            "end": match.end(index) if match.group(index) is not None else None,
                        }
                        for index in range(1, pattern.groups + 1)
                    ],
                }
            )
        replaced = None
        if inputs["replacement"] is not None:
            replaced = _bounded(pattern.sub(inputs["replacement"], text, timeout=_REGEX_TIMEOUT))
    except TimeoutError:
        raise EngineError(
            "The pattern takes too long on this text (catastrophic backtracking); avoid nested "
            "quantifiers such as (a+)+."
        ) from None
    except (regex.error, IndexError) as error:
        raise EngineError(f"The replacement is invalid: {error}.") from None
    return {"count": len(matches), "truncated": truncated, "matches": matches, "replaced": replaced}


def _words(identifier: str) -> list[str]:
    """An identifier in any case style as lowercase words (``HTTPServer2`` -> http, server2)."""
    import regex

    found = regex.findall(
        r"\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}?\p{Ll}+\d*|\p{Lu}+\d*|\p{Lo}+\d*|\d+", identifier
    )
    return [word.lower() for word in found]


_CASES = {
    "camel": lambda w: w[0] + "".join(x.capitalize() for x in w[1:]),
    "pascal": lambda w: "".join(x.capitalize() for x in w),
    "snake": lambda w: "_".join(w),
    "constant": lambda w: "_".join(w).upper(),
    "kebab": lambda w: "-".join(w),
    "train": lambda w: "-".join(x.capitalize() for x in w),
    "dot": lambda w: ".".join(w),
    "title": lambda w: " ".join(x.capitalize() for x in w),
}


def _case_convert(inputs: dict[str, Any]) -> dict[str, Any]:
    lines = [line.strip() for line in inputs["identifiers"].splitlines() if line.strip()]
    if len(lines) > 1000:
        raise EngineError(f"Give at most 1,000 identifiers; there are {len(lines):,}.")
    results = []
    for line in lines:
        words = _words(line)
        if not words:
            raise EngineError(f"'{line}' has no letters or digits to build an identifier from.")
        results.append({"input": line, **{case: make(words) for case, make in _CASES.items()}})
    target = inputs["target"]
    return {"converted": "\n".join(r[target] for r in results), "identifiers": results}


_SEMVER_RE = re.compile(
    r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


def _semver(text: str) -> dict[str, Any]:
    match = _SEMVER_RE.fullmatch(text.strip())
    if not match:
        raise EngineError(
            f"'{text.strip()}' is not a semantic version such as 1.4.2, 2.0.0-rc.1 or "
            "1.0.0+build.5."
        )
    major, minor, patch, pre, build = match.groups()
    return {
        "version": text.strip().removeprefix("v"),
        "major": int(major),
        "minor": int(minor),
        "patch": int(patch),
        "prerelease": pre,
        "build": build,
    }


def _precedence(version: dict[str, Any]) -> tuple[Any, ...]:
    """Sort key of semver precedence: a release outranks its pre-releases; build is ignored."""
    core = (version["major"], version["minor"], version["patch"])
    if version["prerelease"] is None:
        return (*core, 1, ())
    identifiers = tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in version["prerelease"].split(".")
    )
    return (*core, 0, identifiers)


def _bump(version: dict[str, Any], part: str, tag: str) -> str:
    major, minor, patch = version["major"], version["minor"], version["patch"]
    pre = version["prerelease"]
    if part == "major":
        return f"{major if pre and minor == patch == 0 else major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor if pre and patch == 0 else minor + 1}.0"
    if part == "patch":
        return f"{major}.{minor}.{patch if pre else patch + 1}"
    # prerelease: next number of the same tag, or start the tag on the next patch
    if pre:
        head, _, last = pre.rpartition(".")
        if last.isdigit() and head == tag:
            return f"{major}.{minor}.{patch}-{tag}.{int(last) + 1}"
        if pre == tag:
            return f"{major}.{minor}.{patch}-{tag}.1"
        return f"{major}.{minor}.{patch}-{tag}.0"
    return f"{major}.{minor}.{patch + 1}-{tag}.0"


def _semver_tool(inputs: dict[str, Any]) -> dict[str, Any]:
    lines = [line for line in inputs["versions"].splitlines() if line.strip()]
    if len(lines) > 500:
        raise EngineError(f"Give at most 500 versions; there are {len(lines)}.")
    versions = [_semver(line) for line in lines]
    ordered = sorted(versions, key=_precedence)
    latest = ordered[-1]
    tag = inputs["prerelease_tag"]
    if not re.fullmatch(r"[0-9A-Za-z-]+", tag):
        raise EngineError("The pre-release tag may hold only letters, digits and hyphens.")
    return {
        "versions": versions,
        "sorted": [v["version"] for v in ordered],
        "latest": latest["version"],
        "next": _bump(latest, inputs["bump"], tag) if inputs["bump"] != "none" else None,
    }


class DeveloperTextEngine(ChoiceEngine):
    """Developer text utilities: diffs, regex testing, identifier cases, semantic versions."""

    name = "convert.devtext"
    requires = ("regex",)
    jobs = {
        "diff": _text_diff,
        "regex": _regex_test,
        "case": _case_convert,
        "semver": _semver_tool,
    }


ENGINES: tuple[Engine, ...] = (
    DataConvertEngine(),
    JsonToolsEngine(),
    EncodingEngine(),
    DigestEngine(),
    WebEngine(),
    DateTimeEngine(),
    NumberEngine(),
    ColourEngine(),
    MinifyEngine(),
    DeveloperTextEngine(),
)
