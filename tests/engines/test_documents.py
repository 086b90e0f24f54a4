"""The document engines (text extraction; PDF pages, metadata and passwords; Markdown to PDF; DOCX
to Markdown; file statistics) on documents built by the tests."""

import io
import zipfile

import pytest

for module in ("pypdf", "docx", "ebooklib", "fpdf"):
    pytest.importorskip(module, reason="the document engine needs requirements-models.txt")

from engines import get_engine  # noqa: E402
from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from engines.documents import DocumentExtractEngine, detect_format, page_numbers  # noqa: E402
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


# --- documents.pdf -----------------------------------------------------------------------


def pdf_op(operation: str, **inputs) -> dict:
    return get_engine("documents.pdf").run(inputs, {"operation": operation})


def page_texts(blob: Blob, password: str | None = None) -> list[str]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(blob.data))
    if password is not None:
        reader.decrypt(password)
    return [page.extract_text().strip() for page in reader.pages]


PAGES = ["Page one text.", "Page two text.", "Page three text.", "Page four text."]


@pytest.fixture(scope="module")
def four_pages() -> Blob:
    return pdf_document(PAGES, title="Four", bookmarks=["One", "Two", "Three", "Four"])


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("1-3, 5", [[0, 1, 2], [4]]),
        ("4-", [[3, 4, 5]]),
        ("-2", [[0, 1]]),
        (" 6 ,", [[5]]),
    ],
)
def test_page_numbers_read_ranges(spec, expected):
    assert page_numbers(spec, 6) == expected


@pytest.mark.parametrize(
    "spec, message",
    [("7", "no page 7"), ("3-1", "backwards"), ("0", "starts at 0"), ("a-b", "not a page"),
     ("", "at least one page")],
)  # fmt: skip
def test_page_numbers_refuse_what_the_document_lacks(spec, message):
    with pytest.raises(EngineError, match=message):
        page_numbers(spec, 6)


def test_merge_keeps_pages_in_order(four_pages):
    second = pdf_document(["Appendix."])
    output = pdf_op("merge", pdf=four_pages, pdf_2=None, pdf_3=second)
    assert (output["pages"], output["documents"]) == (5, 2)
    assert page_texts(output["pdf"]) == [*PAGES, "Appendix."]


def test_merge_needs_two_readable_pdfs(four_pages):
    with pytest.raises(EngineError, match="at least two"):
        pdf_op("merge", pdf=four_pages)
    with pytest.raises(EngineError, match="pdf_2: The file is not a PDF"):
        pdf_op("merge", pdf=four_pages, pdf_2=Blob(b"hello", "application/pdf"))


def test_split_makes_one_file_per_range_or_page(four_pages):
    output = pdf_op("split", pdf=four_pages, ranges="1-2, 4")
    assert [(part["pages"], part["page_count"]) for part in output["parts"]] == [
        ("1-2", 2),
        ("4", 1),
    ]
    assert page_texts(output["parts"][1]["pdf"]) == ["Page four text."]
    assert output["parts"][0]["pdf"].filename == "pages-1-2.pdf"
    assert len(pdf_op("split", pdf=four_pages, ranges="")["parts"]) == 4


def test_extract_keeps_the_order_given(four_pages):
    output = pdf_op("extract", pdf=four_pages, pages="3, 1")
    assert page_texts(output["pdf"]) == ["Page three text.", "Page one text."]
    assert (output["pages"], output["original_pages"]) == (2, 4)


def test_remove_drops_pages_but_never_all(four_pages):
    output = pdf_op("remove", pdf=four_pages, pages="2-3")
    assert page_texts(output["pdf"]) == ["Page one text.", "Page four text."]
    assert output["removed"] == 2
    with pytest.raises(EngineError, match="every page"):
        pdf_op("remove", pdf=four_pages, pages="1-")


def test_rotate_turns_only_the_pages_named(four_pages):
    from pypdf import PdfReader

    output = pdf_op("rotate", pdf=four_pages, pages="2", angle=90)
    reader = PdfReader(io.BytesIO(output["pdf"].data))
    assert [page.rotation for page in reader.pages] == [0, 90, 0, 0]
    everything = pdf_op("rotate", pdf=four_pages, pages="", angle=180)
    assert everything["rotated"] == 4


def test_metadata_reads_title_size_and_bookmarks(four_pages):
    output = pdf_op("metadata", pdf=four_pages)
    assert (output["title"], output["author"], output["pages"]) == ("Four", None, 4)
    assert (output["page_size"], output["page_width_mm"]) == ("A4", 210.0)
    assert output["bookmarks"] == 4 and output["encrypted"] is False
    assert output["created"].startswith("20") and output["pdf_version"] == "1.3"


def test_edit_metadata_sets_keeps_and_clears(four_pages):
    output = pdf_op(
        "edit_metadata", pdf=four_pages, title="", author="Ada", subject=None, keywords=None
    )
    read = pdf_op("metadata", pdf=output["pdf"])
    assert (read["title"], read["author"]) == (None, "Ada") == (output["title"], output["author"])
    with pytest.raises(EngineError, match="at least one field"):
        pdf_op(
            "edit_metadata", pdf=four_pages, title=None, author=None, subject=None, keywords=None
        )


def test_protect_then_unlock_round_trips(four_pages):
    locked = pdf_op("protect", pdf=four_pages, password="pw", allow_printing=True,
                    allow_copying=False)  # fmt: skip
    assert locked["encryption"] == "AES-256"
    with pytest.raises(EngineError, match="password-protected"):
        pdf_op("metadata", pdf=locked["pdf"])
    with pytest.raises(EngineError, match="does not open"):
        pdf_op("unlock", pdf=locked["pdf"], password="wrong")
    unlocked = pdf_op("unlock", pdf=locked["pdf"], password="pw")
    assert unlocked["was_encrypted"] is True and page_texts(unlocked["pdf"]) == PAGES


def test_protect_needs_a_password(four_pages):
    with pytest.raises(EngineError, match="Give the password"):
        pdf_op("protect", pdf=four_pages, password="", allow_printing=True, allow_copying=True)


def test_a_damaged_pdf_is_refused():
    with pytest.raises(EngineError, match="damaged"):
        pdf_op("metadata", pdf=Blob(b"%PDF-1.4\n" + b"broken" * 20, "application/pdf"))


# --- documents.markdown_pdf --------------------------------------------------------------


def markdown_pdf(text: str, **inputs) -> dict:
    settings = {"title": "", "page_size": "a4", "font": "helvetica", "font_size": 11, **inputs}
    return get_engine("documents.markdown_pdf").run({"text": text, **settings}, {})


def test_markdown_becomes_a_pdf_with_its_structure():
    text = "# Plan\n\nShip **on Friday** \u2014 \u201cfinally\u201d.\n\n- Freeze\n- Deploy\n"
    output = markdown_pdf(text, title="Launch")
    (page,) = page_texts(output["pdf"])
    assert page.splitlines()[:3] == ["Launch", "Plan", 'Ship on Friday -- "finally".']
    assert "Freeze" in page and "Deploy" in page and output["replaced_characters"] == 0


def test_the_same_markdown_makes_the_same_pdf():
    assert markdown_pdf("Hello")["pdf"].data == markdown_pdf("Hello")["pdf"].data


def test_characters_outside_latin_1_are_counted_and_replaced():
    output = markdown_pdf("Привет and 你好")
    assert output["replaced_characters"] == 8 and "???" in page_texts(output["pdf"])[0]


def test_long_text_flows_onto_more_pages_and_letter_paper_is_letter():
    from pypdf import PdfReader

    output = markdown_pdf(
        "\n\n".join(f"Paragraph {n} " * 30 for n in range(60)), page_size="letter"
    )
    reader = PdfReader(io.BytesIO(output["pdf"].data))
    assert output["pages"] == len(reader.pages) > 3
    assert round(float(reader.pages[0].mediabox.width)) == 612


def test_blank_markdown_is_refused():
    with pytest.raises(EngineError, match="no text"):
        markdown_pdf("\u4f60\u200b"[:0] + " \n ")


# --- documents.docx_markdown and documents.file_statistics -------------------------------


def test_docx_becomes_markdown():
    import docx

    document = docx.Document()
    document.add_heading("Goals", level=1)
    paragraph = document.add_paragraph("Ship ")
    paragraph.add_run("now").bold = True
    paragraph.add_run(" please").italic = True
    document.add_paragraph("First", style="List Bullet")
    document.add_paragraph("Nested", style="List Bullet 2")
    document.add_paragraph("Step", style="List Number")
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, [["A", "B"], ["1", "2|3"]], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    blob = Blob(buffer.getvalue(), "application/octet-stream", "plan.docx")
    output = get_engine("documents.docx_markdown").run({"document": blob}, {})
    assert output["markdown"] == (
        "# Goals\n\nShip **now** *please*\n\n- First\n  - Nested\n1. Step\n\n"
        "| A | B |\n| --- | --- |\n| 1 | 2\\|3 |\n"
    )
    assert (output["headings"], output["list_items"], output["tables"]) == (1, 3, 1)


def test_docx_to_markdown_refuses_a_pdf():
    with pytest.raises(EngineError, match="reads DOCX"):
        get_engine("documents.docx_markdown").run({"document": pdf_document(["x"])}, {})


def test_statistics_of_a_pdf(four_pages):
    output = get_engine("documents.file_statistics").run(
        {"document": four_pages, "words_per_minute": 6}, {}
    )
    assert (output["format"], output["pages"], output["words"]) == ("pdf", 4, 12)
    assert (output["words_per_page"], output["reading_minutes"]) == (3.0, 2.0)
    assert (output["headings"], output["tables"], output["images"]) == (4, None, 0)


def test_statistics_of_a_docx():
    blob = docx_document([("Goals", ["Ship the beta now."])], table=[["a", "b"], ["c", "d"]])
    output = get_engine("documents.file_statistics").run(
        {"document": blob, "words_per_minute": 238}, {}
    )
    assert (output["format"], output["headings"], output["tables"]) == ("docx", 1, 1)
    assert output["words"] == 9 and output["pages"] == 1  # as python-docx's template says


def test_statistics_refuse_other_formats():
    with pytest.raises(EngineError, match="PDF and DOCX"):
        get_engine("documents.file_statistics").run(
            {"document": Blob(b"just text", "text/plain"), "words_per_minute": 238}, {}
        )
