"""Text out of documents: PDF (pypdf), DOCX (python-docx), EPUB (ebooklib), HTML, Markdown, text.

Every format gives the same shape: the whole text, the chapters the document marks (EPUB
spine and table of contents, PDF bookmarks, DOCX/HTML/Markdown headings, "Chapter N" lines in
plain text), a word count and the title and author when the document names them.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from engines import _text
from engines.base import Engine, EngineError
from engines.blob import Blob

FORMATS = ("pdf", "docx", "epub", "html", "markdown", "text")

# Past this much text a document is cut (and says so): it is already a long novel.
MAX_CHARS = 2_000_000
# DOCX and EPUB are zip files: refuse archives that would inflate beyond this.
_MAX_UNZIPPED_BYTES = 300 * 1024 * 1024
_MAX_ZIP_ENTRIES = 20_000

_CONTENT_TYPES = {
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/epub+zip": "epub",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/plain": "text",
}
_EXTENSIONS = {
    "pdf": "pdf",
    "docx": "docx",
    "epub": "epub",
    "html": "html",
    "htm": "html",
    "xhtml": "html",
    "md": "markdown",
    "markdown": "markdown",
    "txt": "text",
    "text": "text",
}


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


def detect_format(blob: Blob) -> str:
    """The document's format: the bytes decide for binary formats, then type and name."""
    head = blob.data[:1024]
    if b"%PDF-" in head:
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return _zip_format(blob.data)
    if head.startswith(b"\xd0\xcf\x11\xe0"):
        raise EngineError("Old Word (.doc) files are not supported: save the file as .docx.")
    if head.startswith(b"{\\rtf"):
        raise EngineError("RTF files are not supported: save the file as .docx or .txt.")
    content_type = blob.content_type.split(";")[0].strip().lower()
    extension = (blob.filename or "").rsplit(".", 1)[-1].lower() if blob.filename else ""
    declared = _CONTENT_TYPES.get(content_type) or _EXTENSIONS.get(extension)
    if declared in ("pdf", "docx", "epub"):
        raise EngineError(f"The file is not a valid {declared.upper()} document.")
    if declared in ("html", "markdown"):
        return declared
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise EngineError("The file is not a document format this tool reads.")
    sniff = head.lstrip()[:64].lower()
    if sniff.startswith((b"<!doctype html", b"<html", b"<?xml")) and b"<html" in head.lower():
        return "html"
    return "text"


def _zip_format(data: bytes) -> str:
    names = set(_open_zip(data).namelist())
    if "word/document.xml" in names:
        return "docx"
    if "META-INF/container.xml" in names:
        return "epub"
    raise EngineError("The file is a zip archive but neither a DOCX nor an EPUB document.")


def _open_zip(data: bytes) -> zipfile.ZipFile:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError):
        raise EngineError("The file is a damaged zip archive (DOCX and EPUB are zips).") from None
    entries = archive.infolist()
    if len(entries) > _MAX_ZIP_ENTRIES or sum(e.file_size for e in entries) > _MAX_UNZIPPED_BYTES:
        raise EngineError("The document unpacks to more than this tool accepts.")
    return archive


# Too few bytes make charset-normalizer's guess a coin toss.
_MIN_BYTES_TO_GUESS = 2000


def _decode(data: bytes) -> str:
    """Text bytes as str: a BOM or valid UTF-8 wins; then a non-Latin code page when the
    bytes clearly are one, else Windows-1252 (Western European)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    if len(data) >= _MIN_BYTES_TO_GUESS:
        try:
            from charset_normalizer import from_bytes
        except ImportError:
            pass
        else:
            best = from_bytes(data[:200_000]).best()
            if best is not None:
                guess = data.decode(best.encoding, errors="replace")
                if _mostly_non_latin(guess):
                    return guess
    return data.decode("cp1252", errors="replace")


def _mostly_non_latin(text: str) -> bool:
    """True for Cyrillic, Greek, Arabic, CJK... text. charset-normalizer tells those apart
    well, but among Latin code pages it often picks a Baltic or Central European one for
    French or German text, where Windows-1252 is the likelier truth."""
    letters = [char for char in text[:20_000] if char.isalpha()]
    return sum(ord(char) > 0x24F for char in letters) > len(letters) / 2


_SPACES_RE = re.compile(r"[ \t\u00a0\u200b]+")
_BLANK_LINES_RE = re.compile(r"\n{3,}")


def _tidy(text: str) -> str:
    """One space between words, at most one blank line between paragraphs."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    lines = [_SPACES_RE.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES_RE.sub("\n\n", "\n".join(lines)).strip()


# --- PDF ----------------------------------------------------------------------------------


def _extract_pdf(data: bytes, max_pages: int) -> _Extracted:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            _unlock(reader)
        pages = reader.pages
        count = len(pages)
        texts = []
        for page in pages[:max_pages]:
            texts.append(page.extract_text() or "")
        chapters = _pdf_chapters(reader, texts)
        metadata = reader.metadata or {}
        title, author = metadata.get("/Title"), metadata.get("/Author")
    except EngineError:
        raise
    except DependencyError:
        raise EngineError("The PDF uses encryption this service cannot open.") from None
    except (PdfReadError, ValueError, TypeError, KeyError, IndexError, AttributeError, OSError):
        raise EngineError("The PDF is damaged and cannot be read.") from None
    except RecursionError:
        raise EngineError("The PDF's structure is nested too deeply to read.") from None
    return _Extracted(
        text="\n\n".join(texts),
        chapters=chapters,
        pages=count,
        title=str(title) if title else None,
        author=str(author) if author else None,
    )


def _unlock(reader: Any) -> None:
    from pypdf import PasswordType

    # Many PDFs are encrypted only to restrict printing or copying, with an empty password.
    if reader.decrypt("") == PasswordType.NOT_DECRYPTED:
        raise EngineError("The PDF is password-protected: remove the password and try again.")


def _pdf_chapters(reader: Any, texts: list[str]) -> list[dict[str, str]]:
    """Top-level bookmarks as chapters, each running to the next bookmark's page."""
    starts: list[tuple[int, str]] = []
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
            starts.append((page, title))
    starts.sort(key=lambda start: start[0])
    chapters = []
    for index, (page, title) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(texts)
        chapters.append({"title": title, "text": "\n\n".join(texts[page : max(end, page + 1)])})
    return chapters


# --- DOCX ---------------------------------------------------------------------------------


def _extract_docx(data: bytes) -> _Extracted:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    _open_zip(data)
    try:
        document = docx.Document(io.BytesIO(data))
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
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile):
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


def _heading_level(style: str) -> int:
    if style == "Title":
        return 1
    match = re.fullmatch(r"Heading (\d)", style)
    return int(match.group(1)) if match else 0


def _table_rows(table: Any) -> list[str]:
    rows = []
    for row in table.rows:
        cells = []
        for cell in row.cells:
            text = " ".join(cell.text.split())
            if not cells or cells[-1] != text:  # merged cells repeat their text
                cells.append(text)
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


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

ENGINES = (DocumentExtractEngine(),)
