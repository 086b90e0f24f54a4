"""Code and Markdown as HTML: ``code.highlight`` (Pygments) and ``code.markdown``."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from engines.base import Engine, EngineError, load_once

# --- syntax highlighting -----------------------------------------------------------------


class HighlightEngine(Engine):
    name = "code.highlight"
    requires = ("pygments",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name
        from pygments.util import ClassNotFound

        try:
            lexer = get_lexer_by_name(inputs["language"], stripnl=False)
        except ClassNotFound:
            raise EngineError(f"Unknown language '{inputs['language']}'.") from None
        formatter = HtmlFormatter(
            style=inputs["style"],
            cssclass="highlight",
            linenos="table" if inputs["line_numbers"] else False,
            wrapcode=True,
        )
        return {
            "html": highlight(inputs["code"], lexer, formatter),
            "css": formatter.get_style_defs(".highlight") if inputs["include_css"] else None,
            "language": lexer.name,
        }


# --- Markdown ----------------------------------------------------------------------------

_SAFE_SCHEMES = frozenset({"", "http", "https", "mailto"})


@load_once
def _safe_markdown_extension() -> Any:
    """Escape raw HTML, drop javascript:/data: links and on* attributes: safe to display."""
    from markdown.extensions import Extension
    from markdown.treeprocessors import Treeprocessor

    class DropUnsafeAttributes(Treeprocessor):
        def run(self, root: Any) -> None:
            for element in root.iter():
                for name, value in list(element.attrib.items()):
                    # attr_list lets authors set any attribute, event handlers included.
                    unsafe_url = (
                        name in ("href", "src")
                        and urlsplit(value.strip()).scheme.lower() not in _SAFE_SCHEMES
                    )
                    if unsafe_url or name.lower().startswith("on"):
                        del element.attrib[name]

    class Safe(Extension):
        def extendMarkdown(self, md: Any) -> None:  # noqa: N802 - Markdown's hook name
            md.preprocessors.deregister("html_block")
            md.inlinePatterns.deregister("html")
            md.treeprocessors.register(DropUnsafeAttributes(md), "drop_unsafe_attributes", 0)

    return Safe


# Python-Markdown scans to the end of the block for the closing bracket of every "[" and
# "(": unclosed ones cost time quadratic in the block's length (30,000 "[" took 95 s). The
# budget is the sum, per block, of unclosed brackets times block length (about 0.1 s per
# million).
_MARKDOWN_SCAN_BUDGET = 2_000_000
_BLOCK_SPLIT_RE = re.compile(r"\n[ \t]*\n")


def _refuse_unclosed_brackets(text: str) -> None:
    cost = 0
    for block in _BLOCK_SPLIT_RE.split(text):
        unclosed = max(block.count("[") - block.count("]"), 0)
        unclosed += max(block.count("(") - block.count(")"), 0)
        cost += unclosed * len(block)
    if cost > _MARKDOWN_SCAN_BUDGET:
        raise EngineError(
            "The Markdown has too many unclosed [ or ( to convert; close them or escape them "
            "as \\[ and \\(."
        )


class MarkdownEngine(Engine):
    name = "code.markdown"
    requires = ("markdown",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        import markdown

        _refuse_unclosed_brackets(inputs["markdown"])
        extensions: list[Any] = list(inputs["extensions"])
        if inputs["safe"]:
            extensions.append(_safe_markdown_extension()())
        # A Markdown instance keeps per-document state: one per call.
        converter = markdown.Markdown(extensions=extensions, output_format="html")
        try:
            return {"html": converter.convert(inputs["markdown"])}
        except RecursionError:
            raise EngineError("The Markdown is nested too deeply to convert.") from None
