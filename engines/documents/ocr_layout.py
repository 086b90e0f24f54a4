"""OCR lines shaped by where they sit: paragraphs, business cards (and vCard), code, tables."""

from __future__ import annotations

import csv
import io
import re
import statistics
from typing import Any

from engines.documents._lines import _height, _left, _right, _rows
from engines.documents.ocr_fields import _EMAIL, _PHONE, _URL, _phones


def _layout(read: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """Lines with their words, and paragraphs: rows split where the gap exceeds a line."""
    rows = _rows(read["lines"])
    paragraphs: list[list[str]] = []
    previous_bottom = None
    for row in rows:
        top = min(min(y for _, y in line["box"]) for line in row)
        bottom = max(max(y for _, y in line["box"]) for line in row)
        height = bottom - top
        if previous_bottom is None or top - previous_bottom > max(height, 1) * 0.8:
            paragraphs.append([])
        paragraphs[-1].append(" ".join(line["text"] for line in row))
        previous_bottom = bottom
    words = sum(len(line.get("words", [])) for line in read["lines"])
    return {
        **read,
        "word_count": words,
        "paragraphs": [" ".join(rows_text) for rows_text in paragraphs],
    }


_TITLE_WORDS = re.compile(
    r"\b(ceo|cto|cfo|coo|founder|co-founder|owner|president|vp|vice|director|manager|head|lead|"
    r"engineer|developer|designer|consultant|architect|analyst|specialist|officer|partner|"
    r"coordinator|assistant|executive|advisor|attorney|lawyer|doctor|dr|sales|marketing|"
    r"accountant|agent|representative|chief|principal|associate|scientist|editor|photographer)\b",
    re.IGNORECASE,
)
_COMPANY_WORDS = re.compile(
    r"\b(inc|llc|ltd|limited|gmbh|ag|sa|sas|sarl|bv|nv|plc|corp|corporation|co|company|group|"
    r"studio|studios|labs|technologies|solutions|consulting|partners|associates|agency|bank)\b\.?",
    re.IGNORECASE,
)
_STREET = re.compile(
    r"\d.*\b(st|street|ave|avenue|rd|road|blvd|boulevard|lane|ln|way|drive|dr|suite|floor|"
    r"str|strasse|straße|rue|via|plaza|square|sq)\b|\b\d{4,5}\s+[A-Z][a-z]+|[A-Z]{1,2}\d[A-Z\d]?"
    r"\s*\d[A-Z]{2}\b",
    re.IGNORECASE,
)
_PERSON = re.compile(r"^[A-Z][a-zA-Z'\-]+\.?(?:\s+[A-Z][a-zA-Z'\-]*\.?){1,3}$")


def _business_card(read: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    rows = _rows(read["lines"])
    texts = [" ".join(line["text"] for line in row) for row in rows]
    heights = [max(_height(line) for line in row) for row in rows]
    emails = list(dict.fromkeys(_EMAIL.findall(read["text"])))
    websites = list(dict.fromkeys(_URL.findall(_EMAIL.sub(" ", read["text"]))))
    phones = _phones(texts)
    contact_rows = {
        i for i, t in enumerate(texts) if _EMAIL.search(t) or _URL.search(t) or _PHONE.search(t)
    }
    people = [
        i
        for i, t in enumerate(texts)
        if i not in contact_rows
        and _PERSON.match(t)
        and not _TITLE_WORDS.search(t)
        and not _COMPANY_WORDS.search(t)
    ]
    # The name is usually the biggest type on the card.
    name_row = max(people, key=lambda i: (heights[i], -i)) if people else None
    name = texts[name_row] if name_row is not None else None
    title = next(
        (t for i, t in enumerate(texts) if i != name_row and i not in contact_rows
         and _TITLE_WORDS.search(t)),
        None,
    )  # fmt: skip
    company = next(
        (t for i, t in enumerate(texts) if i not in contact_rows and _COMPANY_WORDS.search(t)),
        None,
    )
    if company is None and emails:
        domain = emails[0].split("@", 1)[1].split(".")[0]
        if domain.lower() not in {"gmail", "yahoo", "outlook", "hotmail", "icloud", "proton"}:
            company = domain.capitalize()
    address = next(
        (
            t
            for i, t in enumerate(texts)
            if i not in contact_rows and i != name_row and _STREET.search(t)
        ),
        None,
    )
    contact = {
        "name": name,
        "title": title,
        "company": company,
        "emails": emails,
        "phones": phones,
        "websites": websites,
        "address": address,
    }
    return {**contact, "vcard": _vcard(contact), "text": read["text"]}


def _vcard(contact: dict[str, Any]) -> str:
    """A vCard 3.0 of the contact (lines end with CRLF, as the format says)."""

    def escape(value: str) -> str:
        return re.sub(r"([,;\\])", r"\\\1", value)

    lines = ["BEGIN:VCARD", "VERSION:3.0"]
    name = contact["name"] or contact["company"] or "Unknown"
    parts = name.split()
    family, given = (parts[-1], " ".join(parts[:-1])) if len(parts) > 1 else (name, "")
    lines += [f"N:{escape(family)};{escape(given)};;;", f"FN:{escape(name)}"]
    if contact["company"]:
        lines.append(f"ORG:{escape(contact['company'])}")
    if contact["title"]:
        lines.append(f"TITLE:{escape(contact['title'])}")
    lines += [f"TEL;TYPE={p['type']}:{p['number']}" for p in contact["phones"]]
    lines += [f"EMAIL;TYPE=internet:{email}" for email in contact["emails"]]
    lines += [f"URL:{url}" for url in contact["websites"]]
    if contact["address"]:
        lines.append(f"ADR;TYPE=work:;;{escape(contact['address'])};;;;")
    lines.append("END:VCARD")
    return "\r\n".join(lines) + "\r\n"


def _char_width(lines: list[dict[str, Any]]) -> float:
    """The typical width of one character, from the widest lines (monospace code)."""
    widths = [
        (_right(line) - _left(line)) / len(line["text"]) for line in lines if len(line["text"]) >= 3
    ]
    if not widths:
        widths = [(_right(line) - _left(line)) / max(len(line["text"]), 1) for line in lines]
    return max(statistics.median(widths), 1.0)


def _code(read: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """Lines with their indentation rebuilt from the left edge of each row's box."""
    lines = read["lines"]
    if not lines:
        return {"code": "", "line_count": 0, "indent_unit": 0, "confidence": 0.0}
    char = _char_width(lines)
    margin = min(_left(line) for line in lines)
    unit = inputs.get("indent_size", 4)
    out = []
    for row in _rows(lines):
        columns = round((_left(row[0]) - margin) / char)
        indent = round(columns / unit) * unit if unit > 1 else columns
        text = row[0]["text"]
        for previous, line in zip(row, row[1:], strict=False):
            gap = max(1, round((_left(line) - _right(previous)) / char))
            text += " " * gap + line["text"]
        out.append(" " * indent + text)
    return {
        "code": "\n".join(out),
        "line_count": len(out),
        "indent_unit": unit,
        "confidence": read["confidence"],
    }


def _table(read: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """Rows from the lines' vertical centres; columns where boxes overlap across rows."""
    rows = _rows(read["lines"])
    spans = sorted((_left(line), _right(line)) for line in read["lines"])
    columns: list[list[float]] = []
    for left, right in spans:
        if columns and left <= columns[-1][1]:
            columns[-1][1] = max(columns[-1][1], right)
        else:
            columns.append([left, right])
    grid = []
    for row in rows:
        cells = [""] * len(columns)
        for line in row:
            index = next(i for i, (a, b) in enumerate(columns) if a <= _left(line) <= b)
            cells[index] = f"{cells[index]} {line['text']}".strip()
        grid.append(cells)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(grid)
    return {
        "csv": buffer.getvalue(),
        "rows": grid,
        "row_count": len(grid),
        "column_count": len(columns),
        "confidence": read["confidence"],
    }
