"""PDFs and readers shared by the document engine tests."""

import io

from engines.blob import Blob


def page_texts(blob: Blob, password: str | None = None) -> list[str]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(blob.data))
    if password is not None:
        reader.decrypt(password)
    return [page.extract_text().strip() for page in reader.pages]


PAGES = ["Page one text.", "Page two text.", "Page three text.", "Page four text."]


def sectioned_pdf(pages: list[list[tuple[str, str | None]]]) -> Blob:
    """A page per list of sections, each with a bookmark where it starts: a (heading, body)
    section prints its heading as a line above its body; a (bookmark, None) one prints
    nothing, its bookmark pointing at where the next section starts."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for sections in pages:
        pdf.add_page()
        for heading, body in sections:
            pdf.start_section(heading)
            for line in [heading, body] if body is not None else []:
                pdf.multi_cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    return Blob(bytes(pdf.output()), "application/pdf", "sections.pdf")
