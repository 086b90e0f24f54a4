"""documents.pdf (pages, metadata and passwords) on PDFs built by the tests."""

import io

import pytest

for module in ("pypdf", "docx", "ebooklib", "fpdf"):
    pytest.importorskip(module, reason="the document engine needs requirements-models.txt")

from engines import get_engine  # noqa: E402
from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from engines.documents.pdf import page_numbers  # noqa: E402
from tests.engines.documents.pdfs import PAGES, page_texts  # noqa: E402
from tests.engines.fixtures import pdf_document  # noqa: E402


def pdf_op(operation: str, **inputs) -> dict:
    return get_engine("documents.pdf").run(inputs, {"operation": operation})


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
