"""Text out of documents: PDF (pypdf), DOCX (python-docx), EPUB (ebooklib), HTML, Markdown, text.

Every format gives the same shape: the whole text, the chapters the document marks (EPUB
spine and table of contents, PDF bookmarks, DOCX/HTML/Markdown headings, "Chapter N" lines in
plain text), a word count and the title and author when the document names them.
"""

from __future__ import annotations

import io
import math
import re
import zipfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from engines import _text
from engines.base import Engine, EngineError
from engines.blob import Blob
from engines.documents._formats import FORMATS, _decode, _open_zip, _tidy, detect_format
from engines.documents._helpers import (
    _heading_level,
    _open_docx,
    _table_rows,
    _unlock,
    page_texts,
    pdf_errors,
)

# Past this much text a document is cut (and says so): it is already a long novel.
MAX_CHARS = 2_000_000


@dataclass
class _Extracted:
    text: str
    chapters: list[dict[str, str]] = field(default_factory=list)
    pages: int | None = None
    title: str | None = None
    author: str | None = None


class DocumentExtractEngine(Engine):
    """Extracts the text and chapters of a document.

    Input: ``document`` (Blob); its format comes from the content type, the file name or the
    bytes themselves. Optional ``max_pages`` (PDF, default 1000). Output: ``text``, ``format``,
    ``chapters`` ([{title, text}], empty when the document marks none), ``pages`` (PDF page
    count; absent for other formats), ``word_count``, ``character_count``, ``title``,
    ``author`` (null when unknown) and ``truncated``. Password-protected, corrupt and unknown
    files raise EngineError; a scanned PDF with no text layer gives empty text.
    """

    name = "documents.extract"
    requires = ("pypdf", "docx", "ebooklib", "lxml")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"formats": {"type": "array", "items": {"enum": list(FORMATS)}}},
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        blob: Blob = inputs["document"]
        if not blob.data:
            raise EngineError("The document is empty.")
        fmt = detect_format(blob)
        allowed = params.get("formats", FORMATS)
        if fmt not in allowed:
            raise EngineError(f"This tool reads {_names(allowed)} files, not {fmt}.")
        extract = _EXTRACTORS[fmt]
        if fmt == "pdf":
            extracted = extract(blob.data, inputs.get("max_pages", 1000))
        else:
            extracted = extract(blob.data)
        text = _tidy(extracted.text)
        truncated = len(text) > MAX_CHARS
        if truncated:
            text = text[:MAX_CHARS]
        chapters = [
            {"title": chapter["title"], "text": _tidy(chapter["text"])[:MAX_CHARS]}
            for chapter in extracted.chapters
        ]
        output: dict[str, Any] = {
            "text": text,
            "format": fmt,
            "chapters": chapters,
            "word_count": len(_text.words(text)),
            "character_count": len(text),
            "title": extracted.title or None,
            "author": extracted.author or None,
            "truncated": truncated,
        }
        if extracted.pages is not None:
            output["pages"] = extracted.pages
        return output


def _names(formats: Any) -> str:
    names = [name.upper() if name in ("pdf", "docx", "epub", "html") else name for name in formats]
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


# --- PDF ----------------------------------------------------------------------------------


def _extract_pdf(data: bytes, max_pages: int) -> _Extracted:
    from pypdf import PdfReader

    with pdf_errors():
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            _unlock(reader)
        count = len(reader.pages)
        texts = page_texts(reader, max_pages)
        chapters = _pdf_chapters(reader, texts)
        metadata = reader.metadata or {}
        title, author = metadata.get("/Title"), metadata.get("/Author")
    return _Extracted(
        text="\n\n".join(texts),
        chapters=chapters,
        pages=count,
        title=str(title) if title else None,
        author=str(author) if author else None,
    )


def _pdf_chapters(reader: Any, texts: list[str]) -> list[dict[str, str]]:
    """Top-level bookmarks as chapters, each running to where the next one starts.

    A bookmark points at a page, often at a height on it: several chapters can share a page
    (a report's short sections). Each starts at the line that is its title on its page, after
    where the previous one starts, else at the top of its page; so chapters never repeat each
    other's text, and one whose start cannot be told from the previous one's leaves that one
    empty.
    """
    starts: list[tuple[int, float, str]] = []
    try:
        outline = reader.outline
    except Exception:  # a broken outline must not cost the text
        return []
    for item in outline:
        if isinstance(item, list):
            continue  # children of the previous top-level entry
        try:
            page = reader.get_destination_page_number(item)
        except Exception:
            continue
        title = str(getattr(item, "title", "") or "").strip()
        if page is not None and 0 <= page < len(texts) and title:
            starts.append((page, -_height(item), title))
    starts.sort(key=lambda start: start[:2])
    text = "\n\n".join(texts)
    page_starts = [0]
    for page_text in texts:
        page_starts.append(page_starts[-1] + len(page_text) + 2)
    offsets: list[int] = []
    for page, _, title in starts:
        begin = max(page_starts[page], offsets[-1] if offsets else 0)
        after = max(page_starts[page], offsets[-1] + 1 if offsets else 0)
        found = _title_offset(text, title, after, page_starts[page + 1])
        offsets.append(begin if found is None else found)
    ends = [*offsets[1:], len(text)]
    return [
        {"title": title, "text": text[offset:end]}
        for (_, _, title), offset, end in zip(starts, offsets, ends, strict=False)
    ]


def _height(bookmark: Any) -> float:
    """How high on its page a bookmark points (PDF heights grow upwards); the top if it
    does not say."""
    try:
        return float(bookmark.top)
    except (AttributeError, TypeError, ValueError):
        return math.inf


def _title_offset(text: str, title: str, begin: int, end: int) -> int | None:
    """Where ``title`` is a line of its own in ``text[begin:end]``, maybe numbered ("2.1
    Method"). Only a whole line: the title's words in a sentence are not where it starts."""
    words = r"\s+".join(re.escape(word) for word in title.split())
    heading = rf"^[ \t]*(?:\d+(?:\.\d+)*\.?[ \t]+)?{words}[ \t]*$"
    found = re.compile(heading, re.IGNORECASE | re.MULTILINE).search(text, begin, end)
    return found.start() if found else None


# --- DOCX ---------------------------------------------------------------------------------


def _extract_docx(data: bytes) -> _Extracted:
    from docx.table import Table

    document = _open_docx(data)
    try:
        blocks: list[tuple[int, str]] = []  # (heading level or 0, text)
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                blocks.extend((0, row) for row in _table_rows(item))
                continue
            text = item.text.strip()
            if text:
                blocks.append((_heading_level(item.style.name if item.style else ""), text))
        properties = document.core_properties
        title, author = properties.title, properties.author
    except (KeyError, ValueError, zipfile.BadZipFile):
        raise EngineError("The DOCX file is damaged and cannot be read.") from None
    except Exception as error:  # lxml's XMLSyntaxError and friends
        if type(error).__module__.startswith(("lxml", "docx")):
            raise EngineError("The DOCX file is damaged and cannot be read.") from None
        raise
    return _Extracted(
        text="\n\n".join(text for _, text in blocks),
        chapters=_chapters_at_top_heading(blocks),
        title=title,
        author=author,
    )


def _chapters_at_top_heading(blocks: list[tuple[int, str]]) -> list[dict[str, str]]:
    """Split at the highest heading level used (text before the first heading stays only in
    the full text)."""
    levels = [level for level, _ in blocks if level]
    if not levels:
        return []
    top = min(levels)
    chapters: list[dict[str, Any]] = []
    for level, text in blocks:
        if level == top:
            chapters.append({"title": text, "parts": []})
        elif chapters:
            chapters[-1]["parts"].append(text)
    return [{"title": c["title"], "text": "\n\n".join(c["parts"])} for c in chapters]


# --- EPUB ---------------------------------------------------------------------------------


def _extract_epub(data: bytes) -> _Extracted:
    import ebooklib
    from ebooklib import epub

    _open_zip(data)
    try:
        book = epub.read_epub(io.BytesIO(data), {"ignore_ncx": False})
    except Exception as error:  # ebooklib raises bare KeyError, EpubException, lxml errors
        raise EngineError("The EPUB file is damaged and cannot be read.") from error
    toc_titles = _toc_titles(book.toc)
    chapters = []
    for idref, *_ in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        if isinstance(item, epub.EpubNav):
            continue
        blocks = _html_blocks(_decode(item.get_content()))
        if not blocks:
            continue  # a cover picture or a blank page
        headings = [text for level, text in blocks if level]
        title = toc_titles.get(item.get_name()) or (headings[0] if headings else None)
        title = title or f"Chapter {len(chapters) + 1}"
        if blocks[0][0] and blocks[0][1] == title:
            blocks = blocks[1:]  # the chapter's own heading is its title, not its text
        chapters.append({"title": title, "text": "\n\n".join(text for _, text in blocks)})
    return _Extracted(
        text="\n\n".join(f"{chapter['title']}\n\n{chapter['text']}" for chapter in chapters),
        chapters=chapters,
        title=_first_metadata(book, "title"),
        author=_first_metadata(book, "creator"),
    )


def _toc_titles(toc: Any) -> dict[str, str]:
    """File name -> title of the first table-of-contents entry pointing into it."""
    titles: dict[str, str] = {}

    def visit(entries: Any) -> None:
        for entry in entries:
            if isinstance(entry, tuple):
                section, children = entry
                visit([section])
                visit(children)
                continue
            href = getattr(entry, "href", None)
            title = getattr(entry, "title", None)
            if href and title:
                titles.setdefault(href.split("#")[0], title.strip())

    visit(toc)
    return titles


def _first_metadata(book: Any, name: str) -> str | None:
    values = book.get_metadata("DC", name)
    return str(values[0][0]).strip() if values and values[0][0] else None


# --- HTML, Markdown, plain text -------------------------------------------------------------

_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption",
    "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li",
    "main", "nav", "ol", "p", "pre", "section", "table", "tbody", "td", "tfoot", "th", "thead",
    "tr", "ul",
}  # fmt: skip
_SKIPPED_TAGS = {"head", "script", "style", "template", "noscript", "svg", "math", "iframe"}
_HEADING_TAGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


class _HtmlText(HTMLParser):
    """Collects an HTML document's text as blocks, marking headings with their level."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[int, str]] = []
        self.title: str | None = None
        self._parts: list[str] = []
        self._skipping: list[str] = []
        self._heading = 0
        self._in_title = False
        self._title_parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping.append(tag)
        if tag == "title":
            self._in_title = True
        if self._skipping:
            return
        if tag in _BLOCK_TAGS:
            self._flush()
        if tag in _HEADING_TAGS:
            self._heading = _HEADING_TAGS[tag]
        elif tag in ("td", "th"):
            self._parts.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._skipping and tag == self._skipping[-1]:
            self._skipping.pop()
            return
        if self._skipping:
            return
        if tag in _BLOCK_TAGS:
            self._flush()
        if tag in _HEADING_TAGS:
            self._heading = 0

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_parts.append(data)
        if not self._skipping:
            self._parts.append(data)

    def _flush(self) -> None:
        text = " ".join("".join(self._parts).split()).strip(" |")
        self._parts = []
        if text:
            self.blocks.append((self._heading, text))

    def close(self) -> None:
        super().close()
        self._flush()
        title = " ".join("".join(self._title_parts).split())
        self.title = title or None


def _html_blocks(markup: str) -> list[tuple[int, str]]:
    parser = _HtmlText()
    parser.feed(markup)
    parser.close()
    return parser.blocks


def _extract_html(data: bytes) -> _Extracted:
    parser = _HtmlText()
    parser.feed(_decode(data))
    parser.close()
    return _Extracted(
        text="\n\n".join(text for _, text in parser.blocks),
        chapters=_chapters_at_top_heading(parser.blocks),
        title=parser.title,
    )


_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def _extract_markdown(data: bytes) -> _Extracted:
    text = _decode(data)
    blocks: list[tuple[int, str]] = []
    paragraph: list[str] = []
    fenced = False

    def flush() -> None:
        if paragraph:
            blocks.append((0, "\n".join(paragraph)))
            paragraph.clear()

    for line in text.splitlines():
        if _FENCE_RE.match(line):
            fenced = not fenced
            paragraph.append(line)
            continue
        heading = None if fenced else _ATX_RE.match(line)
        if heading:
            flush()
            blocks.append((len(heading.group(1)), heading.group(2).strip()))
        elif not fenced and paragraph and len(paragraph) == 1 and _SETEXT_RE.match(line):
            title = paragraph.pop()
            blocks.append((1 if line.strip()[0] == "=" else 2, title.strip()))
        elif not line.strip() and not fenced:
            flush()
        else:
            paragraph.append(line)
    flush()
    titles = [text for level, text in blocks if level == 1]
    return _Extracted(
        text=text, chapters=_chapters_at_top_heading(blocks), title=titles[0] if titles else None
    )


# "Chapter 3", "PART TWO: The Road", "Book IV", "Prologue" alone on a line.
_CHAPTER_LINE_RE = re.compile(
    r"^[ \t]*((?:chapter|part|book)[ \t]+(?:\d+|[a-z]+)(?:[ \t]*[:.\u2013\u2014-][^\n]{0,60})?"
    r"|prologue|epilogue)[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)


def _extract_text(data: bytes) -> _Extracted:
    text = _decode(data)
    marks = list(_CHAPTER_LINE_RE.finditer(text))
    chapters = []
    if len(marks) >= 2:
        for index, mark in enumerate(marks):
            end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
            chapters.append({"title": mark.group(1).strip(), "text": text[mark.end() : end]})
    return _Extracted(text=text, chapters=chapters)


_EXTRACTORS: dict[str, Any] = {
    "pdf": _extract_pdf,
    "docx": _extract_docx,
    "epub": _extract_epub,
    "html": _extract_html,
    "markdown": _extract_markdown,
    "text": _extract_text,
}
