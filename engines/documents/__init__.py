"""Documents and OCR engines (``documents.*``, ``ocr.text``), one module per family of jobs."""

from engines.base import Engine
from engines.documents.docx_markdown import DocxMarkdownEngine
from engines.documents.extract import DocumentExtractEngine
from engines.documents.file_statistics import DocumentStatisticsEngine
from engines.documents.markdown_pdf import MarkdownPdfEngine
from engines.documents.ocr import OcrEngine
from engines.documents.pdf import PdfEngine

ENGINES: tuple[Engine, ...] = (
    DocumentExtractEngine(),
    PdfEngine(),
    MarkdownPdfEngine(),
    DocxMarkdownEngine(),
    DocumentStatisticsEngine(),
    OcrEngine(),
)
