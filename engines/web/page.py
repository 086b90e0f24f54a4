"""HTML page parsing for the audits: head tags, links with their text, images, headings."""

from __future__ import annotations

import html
import html.parser
from typing import Any
from urllib.parse import urljoin

# --- HTML page parsing -------------------------------------------------------------------


class _PageParser(html.parser.HTMLParser):
    """Collects what the audits read: head tags, links with their text, images, headings."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lang: str | None = None
        self.base: str | None = None
        self.titles: list[str] = []
        self.metas: list[dict[str, str]] = []
        self.link_tags: list[dict[str, str]] = []
        self.anchors: list[dict[str, Any]] = []
        self.images: list[dict[str, Any]] = []
        self.h1 = 0
        self._title: list[str] | None = None
        self._anchor: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name.lower(): (value or "") for name, value in attrs}
        if tag == "html" and self.lang is None:
            self.lang = values.get("lang")
        elif tag == "base" and self.base is None:
            self.base = values.get("href")
        elif tag == "title":
            self._title = []
        elif tag == "meta":
            self.metas.append(values)
        elif tag == "link":
            self.link_tags.append(values)
        elif tag == "h1":
            self.h1 += 1
        elif tag == "a":
            self._anchor = {**values, "_text": [], "_images": []}
            self.anchors.append(self._anchor)
        elif tag == "img":
            image = {**values, "_in_link": self._anchor is not None}
            self.images.append(image)
            if self._anchor is not None:
                self._anchor["_images"].append(values.get("alt", ""))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "a":
            self._anchor = None

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._title is not None:
            self.titles.append(" ".join("".join(self._title).split()))
            self._title = None
        elif tag == "a":
            self._anchor = None

    def handle_data(self, data: str) -> None:
        if self._title is not None:
            self._title.append(data)
        if self._anchor is not None:
            self._anchor["_text"].append(data)


def _parse(document: str) -> _PageParser:
    parser = _PageParser()
    parser.feed(document)
    parser.close()
    return parser


def _meta(page: _PageParser, key: str, attribute: str = "name") -> list[str]:
    return [m.get("content", "").strip() for m in page.metas if m.get(attribute, "").lower() == key]


def _rels(tag: dict[str, str]) -> set[str]:
    return set(tag.get("rel", "").lower().split())


def _base_url(page: _PageParser, page_url: str) -> str:
    if page.base:
        return urljoin(page_url, page.base)
    return page_url
