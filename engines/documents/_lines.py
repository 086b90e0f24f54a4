"""Where OCR lines sit on the picture: rows, reading order and the edges of their boxes."""

from __future__ import annotations

from typing import Any


def _rows(lines: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Group lines whose vertical centres fall within half a line height of each other."""
    rows: list[list[dict[str, Any]]] = []
    for line in sorted(lines, key=_centre_y):
        if rows:
            previous = rows[-1][-1]
            tolerance = _height(previous) / 2
            if abs(_centre_y(line) - _centre_y(previous)) <= tolerance:
                rows[-1].append(line)
                continue
        rows.append([line])
    return [sorted(row, key=lambda line: min(x for x, _ in line["box"])) for row in rows]


def _reading_order(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for row in _rows(lines) for line in row]


def _join_rows(lines: list[dict[str, Any]]) -> str:
    return "\n".join(" ".join(line["text"] for line in row) for row in _rows(lines))


def _centre_y(line: dict[str, Any]) -> float:
    ys = [y for _, y in line["box"]]
    return (min(ys) + max(ys)) / 2


def _height(line: dict[str, Any]) -> float:
    ys = [y for _, y in line["box"]]
    return max(max(ys) - min(ys), 1)


def _left(line: dict[str, Any]) -> float:
    return min(x for x, _ in line["box"])


def _right(line: dict[str, Any]) -> float:
    return max(x for x, _ in line["box"])
