"""Inputs for the media and document engines, generated on the spot (nothing is downloaded).

Each helper returns a ``Blob`` as the API would hand it to an engine.
"""

from __future__ import annotations

import io
import math
import struct
import wave
import zlib

from engines.blob import Blob


def text_image(
    lines: str | list[str],
    *,
    size: tuple[int, int] = (900, 200),
    font_size: int = 80,
    fmt: str = "PNG",
    background: str | tuple[int, ...] = "white",
    mode: str = "RGB",
) -> Blob:
    """Black text, one entry per line, drawn with Pillow's own scalable font."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new(mode, size, background)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=font_size)
    for index, line in enumerate([lines] if isinstance(lines, str) else lines):
        draw.text((30, 30 + index * font_size * 1.4), line, fill="black", font=font)
    return image_blob(image, fmt)


def image_blob(image, fmt: str = "PNG", **options) -> Blob:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    extension = {"JPEG": "jpg"}.get(fmt, fmt.lower())
    return Blob(buffer.getvalue(), f"image/{fmt.lower()}", f"fixture.{extension}")


def solid_image(width: int, height: int, color="steelblue", mode="RGB", fmt="PNG") -> Blob:
    from PIL import Image

    return image_blob(Image.new(mode, (width, height), color), fmt)


def png_claiming_size(width: int, height: int) -> Blob:
    """A valid little PNG whose header claims a huge canvas: a decompression bomb."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        checksum = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", checksum)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grayscale
    data = zlib.compress(b"\x00" * 64)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data)
    return Blob(png + chunk(b"IEND", b""), "image/png", "bomb.png")


def tone_wav(seconds: float, *, rate: int = 16_000, frequency: float = 440.0) -> Blob:
    """A quiet sine tone as 16-bit mono WAV (a stand-in narration with an exact length)."""
    frames = int(seconds * rate)
    samples = (int(3000 * math.sin(2 * math.pi * frequency * i / rate)) for i in range(frames))
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"".join(struct.pack("<h", s) for s in samples))
    return Blob(buffer.getvalue(), "audio/wav", "tone.wav")


def wav_seconds(blob: Blob) -> float:
    with wave.open(io.BytesIO(blob.data)) as audio:
        return audio.getnframes() / audio.getframerate()


def pdf_document(
    pages: list[str], *, title: str | None = None, bookmarks: list[str] | None = None
) -> Blob:
    """One page per text, with an outline entry per page when ``bookmarks`` names them."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=14)
    if title:
        pdf.set_title(title)
    for index, text in enumerate(pages):
        pdf.add_page()
        if bookmarks:
            pdf.start_section(bookmarks[index])
        pdf.multi_cell(0, 8, text)
    return Blob(bytes(pdf.output()), "application/pdf", "fixture.pdf")


def encrypted_pdf(text: str, password: str) -> Blob:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_document([text]).data)))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return Blob(buffer.getvalue(), "application/pdf", "locked.pdf")


def docx_document(
    sections: list[tuple[str, list[str]]],
    *,
    title: str | None = None,
    author: str | None = None,
    table: list[list[str]] | None = None,
) -> Blob:
    """A heading 1 and its paragraphs per section, then an optional table."""
    import docx

    document = docx.Document()
    if title:
        document.core_properties.title = title
    if author:
        document.core_properties.author = author
    for heading, paragraphs in sections:
        document.add_heading(heading, level=1)
        for paragraph in paragraphs:
            document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for row, values in zip(grid.rows, table, strict=True):
            for cell, value in zip(row.cells, values, strict=True):
                cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    content_type = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    return Blob(buffer.getvalue(), content_type, "fixture.docx")


def epub_document(
    chapters: list[tuple[str, str]], *, title: str = "A Test Book", author: str = "Ada Tester"
) -> Blob:
    """An EPUB 3 (with an NCX too) with one XHTML file per chapter, in spine order."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("fixture-book")
    book.set_title(title)
    book.set_language("en")
    book.add_author(author)
    items = []
    for index, (heading, text) in enumerate(chapters, start=1):
        item = epub.EpubHtml(title=heading, file_name=f"chapter{index}.xhtml", lang="en")
        paragraphs = "".join(f"<p>{p}</p>" for p in text.split("\n\n"))
        item.content = f"<html><body><h1>{heading}</h1>{paragraphs}</body></html>"
        book.add_item(item)
        items.append(item)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    buffer = io.BytesIO()
    epub.write_epub(buffer, book, {"raise_exceptions": True})
    return Blob(buffer.getvalue(), "application/epub+zip", "fixture.epub")


def rendered(filename: str, *arguments: str) -> Blob:
    """A file ffmpeg renders from its lavfi sources (``sine``, ``anullsrc``, ``testsrc``...)
    with ``arguments``; the file name's extension picks the format."""
    import subprocess
    import tempfile
    from pathlib import Path

    from engines.audio._ffmpeg import ffmpeg_executable

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / filename
        command = [ffmpeg_executable(), "-hide_banner", "-loglevel", "error", "-y", *arguments]
        subprocess.run([*command, str(path)], check=True, timeout=60)
        return Blob(path.read_bytes(), "application/octet-stream", filename)


def sample_video(seconds: float = 2, size: str = "160x120", *, audio: bool = True) -> Blob:
    """A test picture at 10 fps (with a 440 Hz tone), H.264 and AAC in MP4."""
    picture = ["-f", "lavfi", "-i", f"testsrc=size={size}:rate=10:duration={seconds}"]
    sound = ["-f", "lavfi", "-i", f"sine=duration={seconds}", "-c:a", "aac"] if audio else []
    encode = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-shortest"]
    blob = rendered("clip.mp4", *picture, *sound, *encode)
    return Blob(blob.data, "video/mp4", "clip.mp4")
