"""CSV, Markdown and HTML tables: the tabular jobs of the convert.data engine."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from typing import Any

from engines.base import EngineError
from engines.convert._helpers import (
    MAX_ROWS,
    _bounded,
    _dump_json,
    _flatten,
    _json_type,
    _parse_json,
)


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
