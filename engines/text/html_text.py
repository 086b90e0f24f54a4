"""HTML to plain text, a job of ``text.transform``."""

from __future__ import annotations

import html
import html.parser
import re
from typing import Any

from engines import _text

_BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "dd", "details", "dialog", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tr",
    "ul", "caption",
})  # fmt: skip
_INDENT = "\x00"  # marks list indentation until the text is assembled
_SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe"})


class _TextCollector(html.parser.HTMLParser):
    """Turns HTML into readable plain text: blocks on their own lines, lists as bullets."""

    def __init__(self, links: bool, markdown_headings: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.links = links
        self.markdown_headings = markdown_headings
        self.out: list[str] = []
        self.title: str | None = None
        self._skip = 0
        self._pre = 0
        self._title: list[str] | None = None
        self._lists: list[list[int]] = []  # per open list: [is_ordered, next number]
        self._href: list[str | None] = []

    def _newline(self, blank: bool = False) -> None:
        """End the current line (and leave a blank one) unless the output already does."""
        tail = "".join(self.out[-3:]).rstrip(" ")
        have = len(tail) - len(tail.rstrip("\n")) if self.out else 2
        self.out.append("\n" * max((2 if blank else 1) - have, 0))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._title = []
        if tag in _SKIPPED_TAGS:
            self._skip += 1
            return
        if tag == "br":
            self.out.append("\n")
        elif tag in ("ul", "ol"):
            self._lists.append([tag == "ol", 1])
            self._newline()
        elif tag == "li":
            self._newline()
            ordered, number = self._lists[-1] if self._lists else (False, 1)
            indent = _INDENT * max(len(self._lists) - 1, 0)
            self.out.append(f"{indent}{number}. " if ordered else f"{indent}- ")
            if self._lists:
                self._lists[-1][1] += 1
        elif tag in ("td", "th"):
            self.out.append("\t")
        elif tag in _BLOCK_TAGS:
            self._newline(blank=tag in ("p", "h1", "h2", "h3", "h4", "h5", "h6", "pre"))
            if self.markdown_headings and re.fullmatch(r"h[1-6]", tag):
                self.out.append("#" * int(tag[1]) + " ")
        if tag == "pre":
            self._pre += 1
        elif tag == "a":
            self._href.append(dict(attrs).get("href"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._title is not None:
            self.title = " ".join("".join(self._title).split()) or None
            self._title = None
        if tag in _SKIPPED_TAGS:
            self._skip = max(self._skip - 1, 0)
            return
        if tag in ("ul", "ol") and self._lists:
            self._lists.pop()
        if tag == "pre":
            self._pre = max(self._pre - 1, 0)
        if tag == "a" and self._href:
            href = self._href.pop()
            if self.links and href and href.startswith(("http://", "https://", "mailto:")):
                self.out.append(f" ({href})")
        if tag in _BLOCK_TAGS and tag != "li":
            self._newline(blank=tag in ("p", "h1", "h2", "h3", "h4", "h5", "h6", "pre"))

    def handle_data(self, data: str) -> None:
        if self._title is not None:
            self._title.append(data)
        if self._skip:
            return
        if not self._pre:
            data = re.sub(r"\s+", " ", data)
            tail = "".join(self.out[-2:])
            if not tail or tail.endswith(("\n", " ", "\t", "- ", ". ", _INDENT)):
                data = data.lstrip(" ")
        self.out.append(data)

    def text(self) -> str:
        lines = "".join(self.out).split("\n")
        # Table cells start with a tab: "\tA\tB" becomes "A | B".
        lines = [line.replace("\t", " | ").strip(" |") if "\t" in line else line for line in lines]
        joined = "\n".join(line.rstrip().replace(_INDENT, "  ") for line in lines)
        return re.sub(r"\n{3,}", "\n\n", joined).strip("\n")


def _html_text(inputs: dict[str, Any]) -> dict[str, Any]:
    collector = _TextCollector(inputs["keep_links"], inputs["markdown_headings"])
    collector.feed(inputs["html"])
    collector.close()
    text = collector.text()
    return {
        "text": text,
        "title": collector.title,
        "words": len(_text.words(text)),
        "characters": len(text),
    }
