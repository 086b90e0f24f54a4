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

# --- PDF pages, metadata and passwords (pypdf) -----------------------------------------------

MAX_PDFS = 8
MAX_PARTS = 100
_PAGE_SPEC_RE = re.compile(r"^\s*(\d+)?\s*(-)?\s*(\d+)?\s*$")
_METADATA_KEYS = {
    "title": "/Title",
    "author": "/Author",
    "subject": "/Subject",
    "keywords": "/Keywords",
}


def _pdf_reader(blob: Blob, password: str | None = None) -> Any:
    """Open a PDF (empty-password encryption is lifted; ``password`` opens the rest)."""
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import DependencyError, PdfReadError

    if not blob.data:
        raise EngineError("The PDF is empty.")
    if b"%PDF-" not in blob.data[:1024]:
        raise EngineError("The file is not a PDF.")
    try:
        reader = PdfReader(io.BytesIO(blob.data), strict=False)
        if reader.is_encrypted:
            if password is not None:
                if reader.decrypt(password) == PasswordType.NOT_DECRYPTED:
                    raise EngineError("The password does not open this PDF.")
            else:
                _unlock(reader)
        len(reader.pages)  # reads the page tree: a damaged one fails here
    except EngineError:
        raise
    except DependencyError:
        raise EngineError("The PDF uses encryption this service cannot open.") from None
    except (PdfReadError, ValueError, TypeError, KeyError, IndexError, AttributeError, OSError):
        raise EngineError("The PDF is damaged and cannot be read.") from None
    return reader


def page_numbers(spec: str, count: int) -> list[list[int]]:
    """Ranges such as "1-3, 5, 8-" as lists of 0-based page indexes, one list per range.

    An open range runs to the last page ("8-") or from the first ("-3"). Raises EngineError
    for a malformed range or a page the document does not have.
    """
    ranges = []
    for part in spec.split(","):
        if not part.strip():
            continue
        match = _PAGE_SPEC_RE.match(part)
        if not match or not (match.group(1) or match.group(3)):
            raise EngineError(f"{part.strip()!r} is not a page or a range like 2-5.")
        first = int(match.group(1) or 1)
        last = int(match.group(3) or count) if match.group(2) else first
        if not 1 <= first <= last:
            raise EngineError(f"The range {part.strip()!r} runs backwards or starts at 0.")
        if last > count:
            raise EngineError(f"The document has {count} pages; there is no page {last}.")
        ranges.append(list(range(first - 1, last)))
    if not ranges:
        raise EngineError("Name at least one page, e.g. 1-3, 5.")
    return ranges


def _pdf_blob(writer: Any, filename: str) -> Blob:
    buffer = io.BytesIO()
    writer.write(buffer)
    return Blob(buffer.getvalue(), "application/pdf", filename)


def _writer_from(reader: Any, indexes: list[int] | None = None) -> Any:
    from pypdf import PdfWriter

    writer = PdfWriter()
    pages = reader.pages
    for index in range(len(pages)) if indexes is None else indexes:
        writer.add_page(pages[index])
    metadata = {key: str(value) for key, value in (reader.metadata or {}).items() if value}
    if metadata:
        writer.add_metadata(metadata)
    return writer


def _pdf_date(value: Any) -> str | None:
    return value.isoformat() if value else None


class PdfEngine(Engine):
    """Pages, metadata and passwords of PDF files, with pypdf.

    Params: ``operation``: merge (``pdf`` and ``pdf_2`` to ``pdf_8`` in order), split
    (``ranges``: one PDF per range, or one per page when empty), extract (``pages``, kept in
    the order given), remove (``pages``), rotate (``pages``, ``angle``), metadata (read),
    edit_metadata (``title``, ``author``, ``subject``, ``keywords``: null keeps, "" clears),
    protect (``password``, ``allow_printing``, ``allow_copying``) and unlock (``password``).
    Output: ``pdf`` (Blob) or ``pdfs`` [Blob] with ``pages`` counts, or the metadata.
    """

    name = "documents.pdf"
    requires = ("pypdf",)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["operation"],
        "properties": {
            "operation": {
                "enum": [
                    "merge", "split", "extract", "remove", "rotate", "metadata",
                    "edit_metadata", "protect", "unlock",
                ]
            }
        },
    }  # fmt: skip

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        operation = params["operation"]
        if operation in ("protect", "unlock") and not inputs.get("password"):
            raise EngineError("Give the password.")
        reader = _pdf_reader(inputs["pdf"], inputs["password"] if operation == "unlock" else None)
        return getattr(self, f"_{operation}")(reader, inputs)

    @staticmethod
    def _merge(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        from pypdf import PdfWriter

        readers = [reader]
        for index in range(2, MAX_PDFS + 1):
            blob = inputs.get(f"pdf_{index}")
            if blob is not None:
                try:
                    readers.append(_pdf_reader(blob))
                except EngineError as error:
                    raise EngineError(f"pdf_{index}: {error.message}") from None
        if len(readers) < 2:
            raise EngineError("Send at least two PDFs to merge (pdf and pdf_2).")
        writer = PdfWriter()
        for each in readers:
            writer.append(each)
        return {
            "pdf": _pdf_blob(writer, "merged.pdf"),
            "pages": len(writer.pages),
            "documents": len(readers),
        }

    @staticmethod
    def _split(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        count = len(reader.pages)
        spec = inputs["ranges"].strip()
        ranges = page_numbers(spec, count) if spec else [[index] for index in range(count)]
        if len(ranges) > MAX_PARTS:
            raise EngineError(f"A split makes at most {MAX_PARTS} files; name wider ranges.")
        parts = []
        for indexes in ranges:
            label = f"{indexes[0] + 1}" + (f"-{indexes[-1] + 1}" if len(indexes) > 1 else "")
            blob = _pdf_blob(_writer_from(reader, indexes), f"pages-{label}.pdf")
            parts.append({"pdf": blob, "pages": label, "page_count": len(indexes)})
        return {"parts": parts, "original_pages": count}

    @staticmethod
    def _extract(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        count = len(reader.pages)
        indexes = [index for part in page_numbers(inputs["pages"], count) for index in part]
        writer = _writer_from(reader, indexes)
        return {
            "pdf": _pdf_blob(writer, "extracted.pdf"),
            "pages": len(indexes),
            "original_pages": count,
        }

    @staticmethod
    def _remove(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        count = len(reader.pages)
        dropped = {index for part in page_numbers(inputs["pages"], count) for index in part}
        kept = [index for index in range(count) if index not in dropped]
        if not kept:
            raise EngineError("That would remove every page: keep at least one.")
        return {
            "pdf": _pdf_blob(_writer_from(reader, kept), "pages-removed.pdf"),
            "pages": len(kept),
            "original_pages": count,
            "removed": len(dropped),
        }

    @staticmethod
    def _rotate(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        count = len(reader.pages)
        spec = inputs["pages"].strip()
        chosen = (
            {index for part in page_numbers(spec, count) for index in part}
            if spec
            else set(range(count))
        )
        writer = _writer_from(reader)
        for index in sorted(chosen):
            writer.pages[index].rotate(inputs["angle"])
        return {
            "pdf": _pdf_blob(writer, "rotated.pdf"),
            "pages": count,
            "rotated": len(chosen),
        }

    @staticmethod
    def _metadata(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        info = reader.metadata or {}
        first = reader.pages[0] if len(reader.pages) else None
        width, height = (
            (float(first.mediabox.width), float(first.mediabox.height)) if first else (0, 0)
        )
        return {
            **{name: _text_or_none(info.get(key)) for name, key in _METADATA_KEYS.items()},
            "creator": _text_or_none(info.get("/Creator")),
            "producer": _text_or_none(info.get("/Producer")),
            "created": _pdf_date(_safe(lambda: info.creation_date)),
            "modified": _pdf_date(_safe(lambda: info.modification_date)),
            "pages": len(reader.pages),
            "pdf_version": reader.pdf_header.removeprefix("%PDF-"),
            "encrypted": reader.is_encrypted,
            "page_width_mm": round(width * 25.4 / 72, 1),
            "page_height_mm": round(height * 25.4 / 72, 1),
            "page_size": _paper_name(width, height),
            "bookmarks": len(
                [item for item in _safe(lambda: reader.outline) or [] if not isinstance(item, list)]
            ),
        }

    @staticmethod
    def _edit_metadata(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        writer = _writer_from(reader)
        changes = {
            key: inputs[name]
            for name, key in _METADATA_KEYS.items()
            if inputs.get(name) is not None
        }
        if not changes:
            raise EngineError("Give at least one field to change (title, author, subject...).")
        writer.add_metadata(changes)
        metadata = writer.metadata or {}
        return {
            "pdf": _pdf_blob(writer, "edited.pdf"),
            **{name: _text_or_none(metadata.get(key)) for name, key in _METADATA_KEYS.items()},
        }

    @staticmethod
    def _protect(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        from pypdf.constants import UserAccessPermissions as Allow

        writer = _writer_from(reader)
        permissions = Allow(0)
        if inputs["allow_printing"]:
            permissions |= Allow.PRINT | Allow.PRINT_TO_REPRESENTATION
        if inputs["allow_copying"]:
            permissions |= Allow.EXTRACT | Allow.EXTRACT_TEXT_AND_GRAPHICS
        writer.encrypt(
            user_password=inputs["password"],
            owner_password=None,
            algorithm="AES-256",
            permissions_flag=permissions,
        )
        return {
            "pdf": _pdf_blob(writer, "protected.pdf"),
            "pages": len(writer.pages),
            "encryption": "AES-256",
        }

    @staticmethod
    def _unlock(reader: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        was_encrypted = reader.is_encrypted
        writer = _writer_from(reader)
        return {
            "pdf": _pdf_blob(writer, "unlocked.pdf"),
            "pages": len(writer.pages),
            "was_encrypted": was_encrypted,
        }


def _safe(read: Any) -> Any:
    """A value pypdf may fail to parse in a sloppy file: None instead of an error."""
    try:
        return read()
    except Exception:
        return None


def _text_or_none(value: Any) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text or None


_PAPER_SIZES = {"A3": (842, 1191), "A4": (595, 842), "A5": (420, 595), "Letter": (612, 792),
                "Legal": (612, 1008), "Tabloid": (792, 1224)}  # fmt: skip


def _paper_name(width: float, height: float) -> str | None:
    short, long = sorted((width, height))
    for name, (paper_short, paper_long) in _PAPER_SIZES.items():
        if abs(short - paper_short) <= 3 and abs(long - paper_long) <= 3:
            return name + (" landscape" if width > height else "")
    return None


# --- Markdown to PDF (fpdf2) -------------------------------------------------------------------

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


# --- DOCX to Markdown ---------------------------------------------------------------------

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


def _open_docx(data: bytes) -> Any:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    _open_zip(data)
    try:
        return docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile):
        raise EngineError("The DOCX file is damaged and cannot be read.") from None
    except Exception as error:  # lxml's XMLSyntaxError and friends
        if type(error).__module__.startswith(("lxml", "docx")):
            raise EngineError("The DOCX file is damaged and cannot be read.") from None
        raise


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


# --- File statistics ----------------------------------------------------------------------


class DocumentStatisticsEngine(Engine):
    """Measures a PDF or DOCX file: pages, words, characters, images, tables, headings and
    reading time. DOCX pages come from the page count Word saved (null when absent)."""

    name = "documents.file_statistics"
    requires = ("pypdf", "docx", "lxml")

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        blob: Blob = inputs["document"]
        fmt = detect_format(blob)
        if fmt not in ("pdf", "docx"):
            raise EngineError("This tool reads PDF and DOCX files.")
        facts = self._pdf(blob) if fmt == "pdf" else self._docx(blob)
        text = _tidy(facts.pop("text"))
        words = len(_text.words(text))
        pages = facts["pages"]
        return {
            "format": fmt,
            **facts,
            "words": words,
            "characters": len(text),
            "words_per_page": round(words / pages, 1) if pages else None,
            "reading_minutes": round(words / inputs["words_per_minute"], 1),
        }

    @staticmethod
    def _pdf(blob: Blob) -> dict[str, Any]:
        reader = _pdf_reader(blob)
        texts, images = [], 0
        for page in reader.pages:
            texts.append(_safe(page.extract_text) or "")
            images += len(_safe(lambda page=page: page.images) or [])
        return {
            "text": "\n\n".join(texts),
            "pages": len(reader.pages),
            "images": images,
            "tables": None,
            "headings": len(
                [i for i in _safe(lambda: reader.outline) or [] if not isinstance(i, list)]
            ),
        }

    @staticmethod
    def _docx(blob: Blob) -> dict[str, Any]:
        from docx.table import Table

        document = _open_docx(blob.data)
        texts, tables, headings = [], 0, 0
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                tables += 1
                texts.extend(_table_rows(item))
            else:
                texts.append(item.text)
                headings += bool(_heading_level(item.style.name if item.style else ""))
        images = sum(1 for rel in document.part.rels.values() if rel.reltype.endswith("/image"))
        return {
            "text": "\n\n".join(texts),
            "pages": _docx_saved_pages(blob.data),
            "images": images,
            "tables": tables,
            "headings": headings,
        }


def _docx_saved_pages(data: bytes) -> int | None:
    """The page count Word wrote in docProps/app.xml the last time it saved the file."""
    archive = _open_zip(data)
    try:
        app = archive.read("docProps/app.xml").decode("utf-8", "replace")
    except KeyError:
        return None
    match = re.search(r"<Pages>(\d+)</Pages>", app)
    return int(match.group(1)) if match and int(match.group(1)) > 0 else None


ENGINES = (
    DocumentExtractEngine(),
    PdfEngine(),
    MarkdownPdfEngine(),
    DocxMarkdownEngine(),
    DocumentStatisticsEngine(),
)
