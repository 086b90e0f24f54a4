"""Word documents (DOCX) converted to Markdown with python-docx."""

from __future__ import annotations

import re
from typing import Any

from engines import _text
from engines.base import Engine, EngineError
from engines.blob import Blob
from engines.documents._formats import detect_format
from engines.documents._helpers import _heading_level, _open_docx

_LIST_STYLE_RE = re.compile(r"^List (Bullet|Number)(?: (\d))?$")


class DocxMarkdownEngine(Engine):
    """Converts a Word document (DOCX) to Markdown with python-docx.

    Headings become ``#`` lines, "List Bullet" / "List Number" paragraphs list items (nested
    by their level), bold and italic runs ``**`` and ``*``, hyperlinks ``[text](url)`` and
    tables pipe tables (the first row as the header). Output: ``markdown``, ``headings``,
    ``paragraphs``, ``list_items``, ``tables``, ``images`` (pictures are not carried over,
    only counted) and ``word_count``.
    """

    name = "documents.docx_markdown"
    requires = ("docx", "lxml")

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        blob: Blob = inputs["document"]
        if detect_format(blob) != "docx":
            raise EngineError("This tool reads DOCX files (Word 2007 and later).")
        document = _open_docx(blob.data)
        counts = {"headings": 0, "paragraphs": 0, "list_items": 0, "tables": 0}
        blocks: list[str] = []
        from docx.table import Table

        for item in document.iter_inner_content():
            if isinstance(item, Table):
                blocks.append(_markdown_table(item))
                counts["tables"] += 1
                continue
            line, kind = _markdown_paragraph(item)
            if line:
                if kind == "list_items" and blocks and blocks[-1].startswith(("- ", "1. ", "  ")):
                    blocks[-1] += "\n" + line  # a list stays one block
                else:
                    blocks.append(line)
                counts[kind] += 1
        markdown_text = "\n\n".join(blocks).strip() + "\n"
        images = sum(1 for rel in document.part.rels.values() if rel.reltype.endswith("/image"))
        return {
            "markdown": markdown_text,
            **counts,
            "images": images,
            "word_count": len(_text.words(re.sub(r"[#*|\[\]()-]", " ", markdown_text))),
        }


def _markdown_paragraph(paragraph: Any) -> tuple[str, str]:
    """A paragraph as one Markdown line and what it counts as."""
    text = _markdown_runs(paragraph).strip()
    if not text:
        return "", "paragraphs"
    style = paragraph.style.name if paragraph.style else ""
    level = _heading_level(style)
    if level:
        return "#" * level + " " + _plain(paragraph.text), "headings"
    listed = _LIST_STYLE_RE.match(style)
    if listed:
        depth = int(listed.group(2) or 1) - 1
        marker = "-" if listed.group(1) == "Bullet" else "1."
        return "  " * depth + f"{marker} {text}", "list_items"
    return text, "paragraphs"


def _plain(text: str) -> str:
    return " ".join(text.split())


def _markdown_runs(paragraph: Any) -> str:
    from docx.text.hyperlink import Hyperlink

    parts = []
    for item in paragraph.iter_inner_content():
        if isinstance(item, Hyperlink):
            label = _plain(item.text)
            parts.append(f"[{label}]({item.address})" if item.address and label else label)
            continue
        text = item.text
        if not text.strip():
            parts.append(text)
            continue
        core = text.strip()
        lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
        if item.bold and item.italic:
            core = f"***{core}***"
        elif item.bold:
            core = f"**{core}**"
        elif item.italic:
            core = f"*{core}*"
        parts.append(lead + core + trail)
    return "".join(parts).replace("****", "").replace("\n", "  \n")


def _markdown_table(table: Any) -> str:
    rows = [[_plain(cell.text).replace("|", "\\|") for cell in row.cells] for row in table.rows]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines)
