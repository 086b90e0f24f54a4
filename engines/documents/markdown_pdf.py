"""Markdown (or plain text) typeset as a PDF with fpdf2."""

from __future__ import annotations

from typing import Any

from engines.base import Engine, EngineError
from engines.blob import Blob

# fpdf2's built-in fonts cover Latin-1; these common characters get their nearest equivalent
# there, anything else a question mark (counted in the output).
_TYPOGRAPHY = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": ",", "\u201c": '"', "\u201d": '"', "\u201e": '"',
    "\u2013": "-", "\u2014": "--", "\u2010": "-", "\u2011": "-", "\u2212": "-",
    "\u2026": "...", "\u2022": "-", "\u20ac": "EUR", "\u2122": "(TM)", "\u2192": "->",
    "\u2190": "<-", "\u2009": " ", "\u202f": " ", "\u200b": "",
})  # fmt: skip
_PAGE_FORMATS = {"a4": "A4", "letter": "Letter", "a5": "A5", "legal": "Legal"}


def _printable(text: str) -> tuple[str, int]:
    """Text the built-in PDF fonts can draw, and how many characters had to be replaced."""
    text = text.translate(_TYPOGRAPHY)
    kept = []
    replaced = 0
    for char in text:
        try:
            char.encode("latin-1")
            kept.append(char)
        except UnicodeEncodeError:
            kept.append("?")
            replaced += 1
    return "".join(kept), replaced


class MarkdownPdfEngine(Engine):
    """Typesets Markdown or plain text as a PDF with fpdf2.

    Input: ``text`` (Markdown: headings, paragraphs, bold and italic, links, bullet and
    numbered lists, quotes, code, rules, tables), ``title`` (document title; also shown on top
    when given), ``page_size`` (a4, letter, a5, legal), ``font`` (helvetica, times, courier)
    and ``font_size`` (8-16 pt). Output: ``pdf`` (Blob), ``pages`` and
    ``replaced_characters`` (characters outside Western European scripts, drawn as "?").
    """

    name = "documents.markdown_pdf"
    requires = ("fpdf", "markdown")

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        import markdown
        from fpdf import FPDF
        from fpdf.errors import FPDFException

        source, replaced = _printable(inputs["text"])
        if not source.strip():
            raise EngineError("There is no text to typeset.")
        html = markdown.markdown(source, extensions=["tables", "sane_lists"])
        title = _printable(inputs["title"])[0].strip()
        if title:
            html = f"<h1>{_escape(title)}</h1>" + html
        pdf = FPDF(format=_PAGE_FORMATS[inputs["page_size"]])
        pdf.set_creation_date(_epoch())  # the same text makes the same file
        pdf.set_title(title or "Document")
        pdf.set_creator("ai-tools")
        pdf.set_auto_page_break(auto=True, margin=18)
        pdf.set_margins(18, 18, 18)
        pdf.add_page()
        pdf.set_font(inputs["font"], size=inputs["font_size"])
        try:
            pdf.write_html(html, font_family=inputs["font"])
        except (FPDFException, ValueError, KeyError) as error:
            raise EngineError(f"The text could not be typeset: {error}") from None
        return {
            "pdf": Blob(bytes(pdf.output()), "application/pdf", "document.pdf"),
            "pages": pdf.pages_count,
            "replaced_characters": replaced,
        }


def _escape(text: str) -> str:
    import html

    return html.escape(text, quote=False)


def _epoch() -> Any:
    from datetime import UTC, datetime

    return datetime(2024, 1, 1, tzinfo=UTC)
