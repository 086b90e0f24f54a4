"""How much memory and time one hostile-but-valid input costs each decoding tool family.

For pictures, PDFs, audio and video, small files that declare a lot of work (a 105 KB PNG
claiming 9,400 x 9,400 pixels, a PDF whose content stream expands to millions of operators,
half an hour of silence as a few KB of FLAC, a video frame of 144 megapixels in a few KB of
PNG-in-Matroska) are built in code, then each tool runs once on each input in a fresh Python
process, through the catalogue the way the API calls it (``engines.run_tool`` with the tool's
defaults). Before the run the tool is warmed on a normal input of the same kind.

Printed per tool and input: the peak RSS growth of that process (its peak RSS during the run,
``ru_maxrss`` read as /proc's VmHWM reset after warm-up, minus the RSS after imports and
warm-up), the peak RSS of the largest ffmpeg child it started (audio and video tools decode in
ffmpeg, a separate process), the wall time, and whether the tool answered or refused the input
(and with what message). Figures only: no pass/fail.

Run it: ``.venv/bin/python bench/decoders.py`` (3-4 minutes on 2 cores; a case stops after
``CASE_TIMEOUT``, 120 s, and says so); ``--only`` takes a substring of case names, ``--list``
lists them. Nothing is downloaded or written outside a temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, Python puts bench/ first on the path: the repository root goes there.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

CASE_TIMEOUT = 120  # seconds one case may take before it is reported as timed out


# --- inputs, built in code -------------------------------------------------------------------


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    checksum = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", checksum)


def solid_png(width: int, height: int, mode: str = "L") -> bytes:
    """A valid PNG of one colour, any size, compressed row by row (a few KB per 10 MP)."""
    colour_type, channels = {"L": (0, 1), "RGB": (2, 3), "RGBA": (6, 4)}[mode]
    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    row = b"\x00" + b"\x80" * (width * channels)  # filter byte, then one grey level
    packer = zlib.compressobj(9)
    body = bytearray()
    for _ in range(height):
        body += packer.compress(row)
    body += packer.flush()
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", bytes(body))
        + _png_chunk(b"IEND", b"")
    )


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF from numbered object bodies (object 1 is the catalog), with a valid xref."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _stream(data: bytes) -> bytes:
    packed = zlib.compress(data, 9)
    return (
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + (b"\nendstream")
    )


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def pdf_operator_bomb(operators: int, pages: int = 1) -> bytes:
    """``pages`` pages sharing one content stream of ``operators`` text-show operators: a few
    hundred KB that pypdf expands and parses into millions of objects per page."""
    content = b"BT /F1 1 Tf 0 0 Td\n" + b"(a) Tj\n" * operators + b"ET\n"
    return _pdf_pages(pages, (612, 792), content)


def pdf_huge_pages(pages: int) -> bytes:
    """Many pages of 14,400 x 14,400 points (200 x 200 inches, the most PDF allows), each
    with one short line of text: what a renderer at 150 dpi would make 900 MP of."""
    return _pdf_pages(pages, (14_400, 14_400))


def _pdf_pages(
    pages: int, size: tuple[int, int], content: bytes = b"BT /F1 12 Tf 72 72 Td (Hello) Tj ET\n"
) -> bytes:
    """``pages`` pages of ``size`` points sharing one content stream."""
    kids = b" ".join(b"%d 0 R" % (5 + index) for index in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        _stream(content),
        _FONT,
    ]
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents 3 0 R "
        b"/Resources << /Font << /F1 4 0 R >> >> >>" % size
    )
    return _pdf([*objects, *[page] * pages])


def _ffmpeg(arguments: list[str], target: Path) -> bytes:
    from engines.audio._ffmpeg import ffmpeg_executable

    executable = ffmpeg_executable()
    if executable is None:
        raise RuntimeError("imageio-ffmpeg is not installed")
    command = [executable, "-hide_banner", "-loglevel", "error", "-nostdin", "-y"]
    subprocess.run([*command, *arguments, str(target)], check=True, timeout=600)
    return target.read_bytes()


def silent_audio(folder: Path, seconds: int, rate: int, channels: int, name: str) -> bytes:
    """``seconds`` of digital silence as FLAC: half an hour of stereo is a few KB."""
    layout = {1: "mono", 2: "stereo", 6: "5.1", 8: "7.1"}[channels]
    return _ffmpeg(
        ["-f", "lavfi", "-i", f"anullsrc=r={rate}:cl={layout}", "-t", str(seconds),
         "-c:a", "flac", "-compression_level", "0"],
        folder / f"{name}.flac",
    )  # fmt: skip


def flat_video(folder: Path, width: int, height: int, seconds: float, fps: int, name: str):
    """A video of one colour: PNG frames in Matroska (any size; a few KB a megapixel)."""
    return _ffmpeg(
        ["-f", "lavfi", "-i", f"color=c=gray:s={width}x{height}:r={fps}:d={seconds}",
         "-c:v", "png", "-pix_fmt", "rgb24", "-f", "matroska"],
        folder / f"{name}.mkv",
    )  # fmt: skip


def h264_video(folder: Path, width: int, height: int, seconds: float, fps: int, name: str):
    """A moving test pattern in H.264 (what phones send), with a tone as its sound."""
    return _ffmpeg(
        ["-f", "lavfi", "-i", f"testsrc2=s={width}x{height}:r={fps}:d={seconds}",
         "-f", "lavfi", "-i", f"sine=d={seconds}", "-c:v", "libx264", "-preset", "ultrafast",
         "-crf", "40", "-c:a", "aac", "-shortest", "-f", "mp4"],
        folder / f"{name}.mp4",
    )  # fmt: skip


# --- what to run -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    slug: str  # the tool, as the catalogue names it
    field: str  # the input field of the file
    content_type: str
    build: Callable[[Path], bytes]  # the hostile input
    warm: Callable[[Path], bytes]  # a normal input of the same kind
    inputs: dict[str, Any] = field(default_factory=dict)
    what: str = ""


def _small_png(folder: Path) -> bytes:
    """A page of text, 1600 x 1200: it also warms OCR's detection at its full 1280 px."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1600, 1200), "white")
    font = ImageFont.load_default(size=48)
    for line in range(12):
        ImageDraw.Draw(image).text((60, 60 + 90 * line), "Warm up 123 abc", fill="black", font=font)
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def photo_jpeg(width: int, height: int) -> bytes:
    """A photo-like JPEG (gradients and grain, quality 85): what a camera sends."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(7)
    rows = np.linspace(0, 120, height, dtype=np.float32)[:, None]
    columns = np.linspace(0, 120, width, dtype=np.float32)[None, :]
    pixels = np.empty((height, width, 3), np.uint8)
    for channel, (a, b) in enumerate(((1.0, 0.3), (0.4, 1.0), (0.7, 0.7))):
        grain = rng.integers(0, 24, (height, width), dtype=np.uint8)
        pixels[..., channel] = (60 + a * rows + b * columns).astype(np.uint8) + grain
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=85)
    return buffer.getvalue()


def _small_pdf(folder: Path) -> bytes:
    return _pdf_pages(2, (612, 612))


def _small_audio(folder: Path) -> bytes:
    return silent_audio(folder, 3, 16_000, 1, "warm")


def _small_video(folder: Path) -> bytes:
    return h264_video(folder, 320, 240, 2, 10, "warm")


def click_then_silence(folder: Path, seconds: int) -> bytes:
    """A click, then silence, 48 kHz stereo FLAC: the silence remover keeps all of it after
    the click for its reversed pass."""
    return _ffmpeg(
        ["-f", "lavfi", "-i", "aevalsrc='if(lt(t,0.02),0.5,0)|if(lt(t,0.02),0.5,0)':s=48000",
         "-t", str(seconds), "-c:a", "flac", "-compression_level", "0"],
        folder / "click.flac",
    )  # fmt: skip


_PNG, _JPEG, _PDF, _FLAC = "image/png", "image/jpeg", "application/pdf", "audio/flac"
_MKV, _MP4 = "video/x-matroska", "video/mp4"


def _cases() -> list[Case]:
    gray_9400 = lambda folder: solid_png(9_400, 9_400, "L")  # noqa: E731 - the reported file
    rgba_9400 = lambda folder: solid_png(9_400, 9_400, "RGBA")  # noqa: E731
    rgb_24mp = lambda folder: solid_png(6_000, 4_000, "RGB")  # noqa: E731
    photo_16mp = lambda folder: photo_jpeg(4_896, 3_264)  # noqa: E731 - 15.98 MP
    image = dict(family="images", field="image", content_type=_PNG, warm=_small_png)
    photo = {**image, "content_type": _JPEG, "build": photo_16mp}
    photo_what = "JPEG photo, 4896x3264 (16.0 MP)"
    pdf = dict(family="pdfs", content_type=_PDF, warm=_small_pdf)
    audio = dict(family="audio", field="audio", content_type=_FLAC, warm=_small_audio)
    video = dict(family="video", field="video", warm=_small_video)
    stereo_30 = lambda folder: silent_audio(folder, 1800, 48_000, 2, "stereo")  # noqa: E731
    surround_30 = lambda folder: silent_audio(folder, 1800, 192_000, 8, "surround")  # noqa: E731
    stereo_what = "30 min of 48 kHz stereo silence, FLAC"
    return [
        # Pictures (inline tools: the web process). The reported file, the heaviest modes,
        # then the heaviest tools on a photo just under the limit.
        Case("png-gray-88mp/compressor", slug="image-compressor", build=gray_9400,
             what="PNG, 9400x9400 grey (the finding)", **image),
        Case("png-rgba-88mp/compressor", slug="image-compressor", build=rgba_9400,
             what="PNG, 9400x9400 RGBA", **image),
        Case("png-rgba-88mp/background-remover", slug="solid-background-remover",
             build=rgba_9400, what="PNG, 9400x9400 RGBA", **image),
        Case("png-gray-88mp/ocr", slug="image-to-text-ocr", build=gray_9400,
             what="PNG, 9400x9400 grey", **image),
        Case("png-rgb-24mp/colour-blindness", slug="color-blindness-simulator",
             build=rgb_24mp, what="PNG, 6000x4000 RGB (24 MP)", **image),
        Case("jpeg-16mp/rounded-corners", slug="image-rounded-corners", what=photo_what,
             **photo),
        Case("jpeg-16mp/aspect-ratio-padder", slug="image-aspect-ratio-padder",
             what=photo_what, **photo),
        Case("jpeg-16mp/duplicate-checker", slug="duplicate-image-checker", what=photo_what,
             inputs={"other": "same"}, **photo),
        Case("jpeg-16mp/colour-blindness", slug="color-blindness-simulator", what=photo_what,
             **photo),
        Case("jpeg-16mp/compressor-png", slug="image-compressor", what=photo_what,
             inputs={"format": "png"}, **photo),
        Case("jpeg-16mp/ocr", slug="image-to-text-ocr", what=photo_what, **photo),
        # PDFs (text extraction is inline). Nothing renders pages: pypdf parses their content.
        Case("pdf-1.3m-tokens/text-extractor", slug="pdf-text-extractor", field="document",
             build=lambda folder: pdf_operator_bomb(650_000),
             what="1 page: 4.5 MB of text operators in a 7 KB stream", **pdf),
        Case("pdf-480k-tokens/text-extractor", slug="pdf-text-extractor", field="document",
             build=lambda folder: pdf_operator_bomb(240_000),
             what="1 page: 1.7 MB of text operators", **pdf),
        Case("pdf-1.3m-tokens-20p/file-statistics", slug="document-file-statistics",
             field="document", build=lambda folder: pdf_operator_bomb(650_000, pages=20),
             what="20 pages sharing the 4.5 MB stream", **pdf),
        Case("pdf-huge-pages/file-statistics", slug="document-file-statistics",
             field="document", build=lambda folder: pdf_huge_pages(5_000),
             what="5,000 pages of 200x200 inches", **pdf),
        # Audio (queued: the worker). ffmpeg decodes in a child; speech-to-text in Python.
        Case("flac-30min-stereo/format-converter-wav", slug="audio-format-converter",
             build=stereo_30, inputs={"format": "wav"}, what=stereo_what, **audio),
        Case("flac-30min-7.1-192k/format-converter-wav", slug="audio-format-converter",
             build=surround_30, inputs={"format": "wav"},
             what="30 min of 192 kHz 7.1 silence, FLAC", **audio),
        Case("flac-30min-stereo/waveform", slug="audio-waveform-image", build=stereo_30,
             what=stereo_what, **audio),
        Case("flac-click-30min/silence-remover", slug="silence-remover",
             build=lambda folder: click_then_silence(folder, 1800),
             what="a click then 30 min of 48 kHz stereo silence, FLAC", **audio),
        Case("flac-40min-mono/transcriber", slug="audio-transcriber",
             build=lambda folder: silent_audio(folder, 2400, 16_000, 1, "mono40"),
             what="40 min of 16 kHz mono silence, FLAC", **audio),
        Case("flac-29min-mono/transcriber", slug="audio-transcriber",
             build=lambda folder: silent_audio(folder, 1740, 16_000, 1, "mono29"),
             what="29 min of 16 kHz mono silence, FLAC", **audio),
        Case("flac-29min-mono/voice-memo-vad", slug="voice-memo-transcriber",
             build=lambda folder: silent_audio(folder, 1740, 16_000, 1, "mono29"),
             what="29 min of 16 kHz mono silence, FLAC", **audio),
        # Video (queued: the worker). ffmpeg decodes in a child process.
        Case("mkv-144mp-frame/frame-extractor", slug="video-frame-extractor",
             content_type=_MKV, inputs={"time_s": 0},
             build=lambda folder: flat_video(folder, 12_000, 12_000, 1, 1, "huge"),
             what="1 frame of 12000x12000 RGB, PNG in Matroska", **video),
        Case("mkv-144mp-frame/contact-sheet", slug="video-contact-sheet", content_type=_MKV,
             build=lambda folder: flat_video(folder, 12_000, 12_000, 4, 1, "huge4"),
             what="4 frames of 12000x12000 RGB, PNG in Matroska", **video),
        Case("mp4-4096x4096/compressor", slug="video-compressor", content_type=_MP4,
             build=lambda folder: h264_video(folder, 4096, 4096, 1, 5, "big"),
             inputs={"max_height": None}, what="1 s of 4096x4096 H.264 at 5 fps", **video),
        Case("mp4-3840x2160/compressor", slug="video-compressor", content_type=_MP4,
             build=lambda folder: h264_video(folder, 3840, 2160, 2, 30, "uhd"),
             inputs={"max_height": None}, what="2 s of 3840x2160 H.264 at 30 fps", **video),
        Case("mkv-1000fps/compressor", slug="video-compressor", content_type=_MKV,
             build=lambda folder: flat_video(folder, 16, 16, 60, 1000, "fast"),
             inputs={"max_height": None},
             what="60 s of 16x16 at 1000 fps (60,000 frames)", **video),
    ]  # fmt: skip


# --- one case in its own process ---------------------------------------------------------------


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    return 0


def _rss_kb() -> int:
    return _status_kb("VmRSS")


def _peak_kb() -> int:
    """The process's peak RSS: ``ru_maxrss``, but of this program only. After a fork and exec
    ``ru_maxrss`` also keeps the RSS the forked copy of the parent had (the parent here holds
    the inputs it built); VmHWM is the same peak without it, and ``_reset_peak`` restarts it."""
    peak = _status_kb("VmHWM")
    return peak or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_peak() -> None:
    """Start the process's peak RSS (VmHWM) again from its current RSS (Linux)."""
    with contextlib.suppress(OSError):  # if it cannot, the warm-up's peak counts too
        Path("/proc/self/clear_refs").write_text("5")


def _run(tool: Any, blob: Any, case: Case) -> dict[str, Any]:
    import engines

    inputs = {key: blob if value == "same" else value for key, value in case.inputs.items()}
    return engines.run_tool(tool, tool.with_defaults({case.field: blob, **inputs}))


def child(name: str, hostile: Path, warm: Path) -> None:
    from catalogue import load_catalogue
    from engines.base import EngineError, ProviderUnavailable
    from engines.blob import Blob

    case = next(case for case in _cases() if case.name == name)
    tool = load_catalogue().get(case.slug)
    warm_content = _PNG if case.family == "images" else case.content_type
    if case.family == "video":
        warm_content = _MP4
    _run(tool, Blob(warm.read_bytes(), warm_content, warm.name), case)
    blob = Blob(hostile.read_bytes(), case.content_type, hostile.name)
    gc.collect()
    _reset_peak()  # the peak from here on: imports and warm-up may have peaked higher
    before = _rss_kb()
    start = time.perf_counter()
    try:
        output = _run(tool, blob, case)
        outcome = "answered"
        sizes = [len(value.data) for value in output.values() if isinstance(value, Blob)]
        if sizes:
            outcome += f" ({sum(sizes) / 1e6:.1f} MB out)"
    except EngineError as error:
        outcome = f"refused: {error.message}"
    except ProviderUnavailable as error:
        outcome = f"unavailable: {error.message}"
    seconds = time.perf_counter() - start
    peak = _peak_kb()
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(
        json.dumps(
            {
                "growth_mb": max(0, peak - before) / 1024,
                "base_mb": before / 1024,
                "ffmpeg_mb": children / 1024,
                "seconds": seconds,
                "outcome": outcome,
            }
        )
    )


# --- the whole run -----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run the cases whose name holds this")
    parser.add_argument("--list", action="store_true", help="list the cases and stop")
    parser.add_argument(
        "--child", nargs=3, metavar=("CASE", "INPUT", "WARM"), help=argparse.SUPPRESS
    )
    arguments = parser.parse_args()
    if arguments.child:
        name, hostile, warm = arguments.child
        child(name, Path(hostile), Path(warm))
        return 0
    cases = [case for case in _cases() if arguments.only in case.name]
    if arguments.list:
        for case in cases:
            print(f"{case.name:44} {case.what}")
        return 0
    print(f"{'case':44} {'input':>9} {'growth':>8} {'ffmpeg':>8} {'time':>7}  outcome")
    with tempfile.TemporaryDirectory(prefix="bench-decoders-") as temporary:
        folder = Path(temporary)
        built: dict[Any, Path] = {}
        for number, case in enumerate(cases):
            paths = []
            for kind, builder in (("input", case.build), ("warm", case.warm)):
                key = (builder.__code__, case.what if kind == "input" else case.family)
                if key not in built:
                    path = folder / f"{kind}{number}"
                    path.write_bytes(builder(folder))
                    built[key] = path
                paths.append(built[key])
            command = [sys.executable, __file__, "--child", case.name, *map(str, paths)]
            env = {**os.environ, "PYTHONWARNINGS": "ignore"}
            try:
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=CASE_TIMEOUT, env=env
                )
            except subprocess.TimeoutExpired:
                print(f"{case.name:44} timed out after {CASE_TIMEOUT} s")
                continue
            lines = done.stdout.strip().splitlines()
            if done.returncode != 0 or not lines:
                why = (done.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"{case.name:44} failed (exit {done.returncode}): {why[:120]}")
                continue
            figures = json.loads(lines[-1])
            size = paths[0].stat().st_size
            print(
                f"{case.name:44} {_bytes(size):>9} {figures['growth_mb']:6.0f}MB"
                f" {figures['ffmpeg_mb']:6.0f}MB {figures['seconds']:6.1f}s"
                f"  {figures['outcome'][:150]}",
                flush=True,
            )
    print(
        "\ngrowth: peak RSS of the tool's Python process minus its RSS after warm-up; ffmpeg: "
        "peak RSS of its largest ffmpeg child (warm-up included)."
    )
    return 0


def _bytes(size: int) -> str:
    return f"{size / 1e6:.1f}MB" if size >= 1e6 else f"{size / 1e3:.0f}KB"


if __name__ == "__main__":
    sys.exit(main())
