"""documents.extract (text, chapters and format detection) on documents built by the tests."""

import io
import zipfile

import pytest

for module in ("pypdf", "docx", "ebooklib", "fpdf"):
    pytest.importorskip(module, reason="the document engine needs requirements-models.txt")

from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from engines.documents._formats import detect_format  # noqa: E402
from engines.documents.extract import DocumentExtractEngine  # noqa: E402
from tests.engines.documents.pdfs import sectioned_pdf  # noqa: E402
from tests.engines.fixtures import (  # noqa: E402
    docx_document,
    encrypted_pdf,
    epub_document,
    pdf_document,
)

engine = DocumentExtractEngine()


def extract(blob: Blob, params: dict | None = None, **inputs) -> dict:
    return engine.run({"document": blob, **inputs}, params or {})


def test_pdf_round_trips_its_pages_bookmarks_and_title():
    pdf = pdf_document(
        ["The fox runs through the forest.", "The dog sleeps by the fire."],
        title="Animals at Night",
        bookmarks=["Fox", "Dog"],
    )
    output = extract(pdf)
    assert output["format"] == "pdf"
    assert output["pages"] == 2
    assert output["text"] == "The fox runs through the forest.\n\nThe dog sleeps by the fire."
    assert output["chapters"] == [
        {"title": "Fox", "text": "The fox runs through the forest."},
        {"title": "Dog", "text": "The dog sleeps by the fire."},
    ]
    assert output["title"] == "Animals at Night"
    assert output["word_count"] == 12
    assert output["truncated"] is False


def test_pdf_chapters_sharing_a_page_each_hold_their_own_text():
    pdf = sectioned_pdf(
        [
            [("Introduction", "Why and how: the method."), ("Method", "We count.")],
            [("Results", "What we found."), ("2.1 Method notes", "The method, again.")],
            [("Annex", "Tables.")],
        ]
    )
    output = extract(pdf)
    assert output["chapters"] == [
        # "method" in a sentence is not where the chapter "Method" starts: its own line is.
        {"title": "Introduction", "text": "Introduction\nWhy and how: the method."},
        {"title": "Method", "text": "Method\nWe count."},
        {"title": "Results", "text": "Results\nWhat we found."},
        {"title": "2.1 Method notes", "text": "2.1 Method notes\nThe method, again."},
        {"title": "Annex", "text": "Annex\nTables."},
    ]


def test_pdf_bookmarks_at_one_place_without_their_titles_do_not_repeat_the_text():
    pdf = sectioned_pdf([[("Part One", None), ("Opening", "It begins."), ("Coda", None)]])
    chapters = extract(pdf)["chapters"]
    # "Part One" and the unprinted "Coda" cannot be placed apart from what precedes them.
    assert chapters == [
        {"title": "Part One", "text": ""},
        {"title": "Opening", "text": ""},
        {"title": "Coda", "text": "Opening\nIt begins."},
    ]


def test_pdf_without_bookmarks_has_no_chapters():
    output = extract(pdf_document(["Only one page here."]))
    assert output["chapters"] == []
    assert output["title"] is None


def test_pdf_max_pages_reads_only_the_first_pages_but_counts_all():
    output = extract(pdf_document(["first", "second", "third"]), max_pages=2)
    assert output["text"] == "first\n\nsecond"
    assert output["pages"] == 3


def test_pdf_encrypted_with_an_empty_password_is_read():
    output = extract(encrypted_pdf("Readable despite encryption.", ""))
    assert output["text"] == "Readable despite encryption."


def test_password_protected_pdf_is_refused():
    with pytest.raises(EngineError, match="password-protected"):
        extract(encrypted_pdf("Secret.", "hunter2"))


def test_docx_round_trips_headings_paragraphs_tables_and_properties():
    document = docx_document(
        [("Introduction", ["Hello world.", "A second paragraph."]), ("Method", ["We counted."])],
        title="Report",
        author="Ada",
        table=[["Name", "Count"], ["foxes", "3"]],
    )
    output = extract(document)
    assert output["format"] == "docx"
    assert output["text"] == (
        "Introduction\n\nHello world.\n\nA second paragraph.\n\nMethod\n\nWe counted.\n\n"
        "Name | Count\n\nfoxes | 3"
    )
    assert output["chapters"] == [
        {"title": "Introduction", "text": "Hello world.\n\nA second paragraph."},
        {"title": "Method", "text": "We counted.\n\nName | Count\n\nfoxes | 3"},
    ]
    assert (output["title"], output["author"]) == ("Report", "Ada")
    assert "pages" not in output


def test_epub_round_trips_chapters_in_spine_order_with_metadata():
    book = epub_document(
        [("The Beginning", "It was a dark night.\n\nRain fell."), ("The End", "Morning came.")],
        title="Night and Day",
        author="Ada Tester",
    )
    output = extract(book)
    assert output["format"] == "epub"
    assert output["chapters"] == [
        {"title": "The Beginning", "text": "It was a dark night.\n\nRain fell."},
        {"title": "The End", "text": "Morning came."},
    ]
    assert output["text"] == (
        "The Beginning\n\nIt was a dark night.\n\nRain fell.\n\nThe End\n\nMorning came."
    )
    assert (output["title"], output["author"]) == ("Night and Day", "Ada Tester")


def test_html_drops_scripts_and_styles_and_splits_at_headings():
    page = (
        b"<!doctype html><html><head><title>Guide</title><style>p{color:red}</style></head>"
        b"<body><h2>Setup</h2><p>Install &amp; run.</p><script>track()</script>"
        b"<h2>Use</h2><ul><li>one</li><li>two</li></ul></body></html>"
    )
    output = extract(Blob(page, "text/html"))
    assert output["format"] == "html"
    assert output["text"] == "Setup\n\nInstall & run.\n\nUse\n\none\n\ntwo"
    assert output["chapters"] == [
        {"title": "Setup", "text": "Install & run."},
        {"title": "Use", "text": "one\n\ntwo"},
    ]
    assert output["title"] == "Guide"


def test_markdown_chapters_follow_the_top_headings_and_ignore_code_fences():
    source = (
        b"# Book\n\nPreface.\n\n## One\n\nFirst.\n\n```\n## not a heading\n```\n\n## Two\n\nLast."
    )
    output = extract(Blob(source, "text/markdown", "book.md"))
    assert output["format"] == "markdown"
    assert output["title"] == "Book"
    assert output["chapters"] == [
        {
            "title": "Book",
            "text": "Preface.\n\nOne\n\nFirst.\n\n```\n## not a heading\n```\n\nTwo\n\nLast.",
        }
    ]


def test_plain_text_chapters_come_from_chapter_lines():
    text = "Chapter 1\nIt begins.\n\nPart of the story is here.\n\nCHAPTER TWO: The Road\nIt ends."
    output = extract(Blob(text.encode(), "text/plain"))
    assert [c["title"] for c in output["chapters"]] == ["Chapter 1", "CHAPTER TWO: The Road"]
    assert output["chapters"][1]["text"] == "It ends."


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Café crème, déjà vu — naïve.", "cp1252"),
        ("Le café crème est très bon, déjà vu à la française, naïve. " * 40, "cp1252"),
        ("Привет, как дела? Это длинный русский текст для проверки кодировки. " * 40, "cp1251"),
    ],
    ids=["short-western", "long-western", "long-cyrillic"],
)
def test_plain_text_in_a_legacy_code_page_is_decoded(text, encoding):
    output = extract(Blob(text.encode(encoding), "text/plain"))
    assert output["text"] == text.strip()


@pytest.mark.parametrize(
    ("blob", "fmt"),
    [
        (Blob(b"%PDF-1.7 ...", "application/octet-stream"), "pdf"),
        (Blob(b"# Title", "application/octet-stream", "notes.md"), "markdown"),
        (Blob(b"<p>hi</p>", "text/html; charset=utf-8"), "html"),
        (Blob(b"<!DOCTYPE html><html><body>x</body></html>", "application/octet-stream"), "html"),
        (Blob(b"just words", "application/octet-stream"), "text"),
    ],
)
def test_format_is_detected_from_bytes_type_and_name(blob, fmt):
    assert detect_format(blob) == fmt


def test_docx_and_epub_are_told_apart_by_their_contents_not_their_name():
    docx = docx_document([("A", ["b"])])
    assert detect_format(Blob(docx.data, "application/octet-stream", "misnamed.epub")) == "docx"


def _zip(files: dict[str, bytes], *, claimed_size: int | None = None) -> Blob:
    """A zip of ``files``; ``claimed_size`` rewrites the size its directory declares."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    data = buffer.getvalue()
    if claimed_size is not None:
        entry = data.index(b"PK\x01\x02")  # the central directory's first entry
        size_at = entry + 24
        data = data[:size_at] + claimed_size.to_bytes(4, "little") + data[size_at + 4 :]
    return Blob(data, "application/zip", "archive.zip")


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (Blob(b"", "application/pdf"), "empty"),
        (Blob(b"%PDF-1.4\n%%garbage", "application/pdf"), "PDF is damaged"),
        (Blob(b"PK\x03\x04broken", "application/epub+zip"), "damaged zip"),
        (_zip({"readme.txt": b"hi"}), "neither a DOCX nor an EPUB"),
        (_zip({"word/document.xml": b"<not really"}), "DOCX file is damaged"),
        (_zip({"META-INF/container.xml": b"<container/>"}), "EPUB file is damaged"),
        (_zip({"word/document.xml": b"0"}, claimed_size=4_000_000_000), "unpacks to more"),
        (Blob(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest", "application/msword"), "Old Word"),
        (Blob(b"not a pdf at all", "application/pdf"), "not a valid PDF"),
        (Blob(b"\x00\x01\x02\x03binary", "application/octet-stream"), "not a document format"),
    ],
    ids=[
        "empty",
        "corrupt-pdf",
        "corrupt-zip",
        "plain-zip",
        "corrupt-docx",
        "corrupt-epub",
        "zip-bomb",
        "legacy-doc",
        "pdf-in-name-only",
        "binary",
    ],  # fmt: skip
)
def test_unreadable_documents_are_refused(blob, message):
    with pytest.raises(EngineError, match=message):
        extract(blob)


def test_a_tool_can_limit_the_formats_it_reads():
    with pytest.raises(EngineError, match="This tool reads PDF or DOCX files, not text"):
        extract(Blob(b"words", "text/plain"), {"formats": ["pdf", "docx"]})
