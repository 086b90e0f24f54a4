"""Decoding is bounded before it starts: pictures by their declared pixels, PDFs by the content
pypdf parses, sound by its decoded PCM and length, video by its frame size and frames x pixels.

Each bound refuses an input just over it, from headers, and takes one just under it. The
inputs are tiny files that declare big sizes (or the limit is lowered for the test): what they
would cost is measured by bench/decoders.py, not here.
"""

import ast
import dataclasses
import tempfile
import zlib
from pathlib import Path

import pytest

pytest.importorskip("PIL", reason="the media engines need requirements-models.txt")
pytest.importorskip("pypdf", reason="the document engines need requirements-models.txt")

from engines.audio import _ffmpeg  # noqa: E402
from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from engines.images import _io  # noqa: E402
from engines.images.analyze import ImageAnalyzeEngine  # noqa: E402
from engines.images.filters import ImageFilterEngine  # noqa: E402
from engines.images.process import ImageProcessEngine  # noqa: E402
from tests.engines.fixtures import png_claiming_size, rendered, solid_image  # noqa: E402

ENGINES = Path(__file__).resolve().parents[2] / "engines"


def compress(blob: Blob) -> dict:
    """The image-compressor tool of the finding (images.process, operation compress)."""
    return ImageProcessEngine().run({"image": blob}, {"operation": "compress"})


# --- pictures -----------------------------------------------------------------------------


def test_the_pixel_limit_is_sized_for_the_process_not_taken_from_pillow():
    from PIL import Image

    assert _io.MAX_PIXELS == 16_000_000
    assert _io.MAX_PIXELS < Image.MAX_IMAGE_PIXELS


def test_a_picture_declaring_more_pixels_than_the_limit_is_refused_before_decoding(monkeypatch):
    from PIL import ImageFile

    def no_decoding(self):
        raise AssertionError("pixels were decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)
    with pytest.raises(EngineError) as refused:
        compress(png_claiming_size(9_400, 9_400))  # the reported file's canvas
    assert refused.value.message == (
        "The image has 88,360,000 pixels (9400x9400); the most this tool decodes is "
        "16,000,000 (16 MP). Send a smaller image."
    )


def test_one_pixel_over_the_limit_is_refused_and_the_limit_itself_passes_the_check():
    with pytest.raises(EngineError, match=r"has 16,004,000 pixels \(4000x4001\)"):
        compress(png_claiming_size(4_000, 4_001))
    # Exactly the limit goes on to decoding, where this fake (64 bytes of pixels) fails.
    with pytest.raises(EngineError, match="truncated or corrupt"):
        compress(png_claiming_size(4_000, 4_000))


def test_a_picture_under_a_lowered_limit_decodes_and_one_over_it_does_not(monkeypatch):
    monkeypatch.setattr(_io, "MAX_PIXELS", 120)
    assert compress(solid_image(12, 10))["width"] == 12
    with pytest.raises(EngineError, match=r"has 132 pixels \(12x11\).* is 120 \(0.00012 MP\)"):
        compress(solid_image(12, 11))


def test_pillows_own_refusal_far_past_the_limit_says_the_limit():
    with pytest.raises(EngineError, match=r"more than [\d,]+ pixels; the most .* 16,000,000"):
        compress(png_claiming_size(50_000, 50_000))


def test_other_pictures_of_a_tool_are_named_in_the_refusal():
    with pytest.raises(EngineError, match="^The other image has 88,360,000 pixels"):
        ImageAnalyzeEngine().run(
            {"image": solid_image(8, 8), "other": png_claiming_size(9_400, 9_400)},
            {"operation": "compare"},
        )


@pytest.mark.parametrize(
    ("engine", "operation"),
    [(ImageAnalyzeEngine, "metadata"), (ImageAnalyzeEngine, "print_size"),
     (ImageFilterEngine, "strip_metadata")],
)  # fmt: skip
def test_tools_that_reread_the_file_header_refuse_the_same_pictures(engine, operation):
    with pytest.raises(EngineError, match="the most this tool decodes is 16,000,000"):
        engine().run({"image": png_claiming_size(9_400, 9_400)}, {"operation": operation})
    with _io.image_header(solid_image(30, 20)) as header:
        assert header.size == (30, 20)
    with (
        pytest.raises(EngineError, match="88,360,000 pixels"),
        _io.image_header(png_claiming_size(9_400, 9_400)),
    ):
        pass


def test_ocr_refuses_before_loading_its_models():
    pytest.importorskip("rapidocr", reason="OCR needs requirements-models.txt")
    from engines.documents.ocr import read_image

    with pytest.raises(EngineError, match="88,360,000 pixels"):
        read_image(png_claiming_size(9_400, 9_400), 0.5)


def test_no_engine_hands_bytes_to_pillow_but_through_the_one_check():
    """Image.open appears in engines/images/_io.py alone: every other place goes through
    open_image or image_header, so none decodes past MAX_PIXELS."""
    calls = []
    for path in sorted(ENGINES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "open"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("Image", "PILImage")
            ):
                calls.append(str(path.relative_to(ENGINES)))
    assert calls == ["images/_io.py"]


# --- PDFs ---------------------------------------------------------------------------------


def operators_pdf(operators: int, pages: int = 1) -> Blob:
    """``pages`` pages sharing one compressed content stream of ``operators`` text shows
    (two tokens each)."""
    content = b"BT /F1 1 Tf 0 0 Td\n" + b"(a) Tj\n" * operators + b"ET\n"
    packed = zlib.compress(content)
    kids = b" ".join(b"%d 0 R" % (5 + index) for index in range(pages))
    bodies = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        *[b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
          b"/Resources << /Font << /F1 4 0 R >> >> >>"] * pages,
    ]  # fmt: skip
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(bodies, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(bodies) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(bodies) + 1,
        xref,
    )
    return Blob(bytes(out), "application/pdf", "operators.pdf")


def extract(blob: Blob) -> dict:
    from engines.documents.extract import DocumentExtractEngine

    return DocumentExtractEngine().run({"document": blob}, {})


def test_a_content_stream_past_the_parsing_budget_is_refused_not_a_crash(monkeypatch):
    from engines.documents import _helpers

    monkeypatch.setitem(_helpers._PYPDF_LIMITS, "stream_parsing_work_maximum_count", 1_000)
    assert extract(operators_pdf(400))["text"].count("a") == 400  # 800 tokens and a few
    with pytest.raises(EngineError, match="past what this tool reads .* into 1,000 tokens"):
        extract(operators_pdf(600))


def test_the_real_parsing_budget_is_tighter_than_pypdfs_own():
    from pypdf import Configuration

    from engines.documents._helpers import _PYPDF_LIMITS

    default = Configuration()
    assert _PYPDF_LIMITS["stream_parsing_work_maximum_count"] == 500_000
    assert all(value <= getattr(default, key) for key, value in _PYPDF_LIMITS.items())


def test_the_content_a_document_may_have_parsed_is_bounded_across_pages(monkeypatch):
    from engines.documents import _helpers
    from engines.documents.file_statistics import DocumentStatisticsEngine

    size = len(b"BT /F1 1 Tf 0 0 Td\n" + b"(a) Tj\n" * 100 + b"ET\n")  # one page's content
    monkeypatch.setattr(_helpers, "MAX_CONTENT_BYTES", 3 * size)
    assert extract(operators_pdf(100, pages=3))["pages"] == 3
    message = r"pages 1 to 4 hold 0.0 MB of drawing instructions; the most this tool reads"
    with pytest.raises(EngineError, match=message):
        extract(operators_pdf(100, pages=4))
    statistics = DocumentStatisticsEngine()
    with pytest.raises(EngineError, match=message):
        statistics.run({"document": operators_pdf(100, pages=4), "words_per_minute": 200}, {})


# --- sound --------------------------------------------------------------------------------


def silent(filename: str, seconds: float, rate: int, layout: str) -> Blob:
    return rendered(
        filename, "-f", "lavfi", "-i", f"anullsrc=r={rate}:cl={layout}", "-t", str(seconds)
    )


def measure(blob: Blob, need: str = "audio") -> _ffmpeg.Media:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.media"
        path.write_bytes(blob.data)
        return _ffmpeg.probe(path, Path(folder), need=need)


def test_sound_decoding_to_more_pcm_than_the_limit_is_refused_from_the_header():
    assert _ffmpeg.MAX_PCM_BYTES == 30 * 60 * 48_000 * 2 * 2
    # 113 s of 192 kHz 7.1 is 347 MB of 16-bit samples; the file is a few KB of FLAC.
    with pytest.raises(EngineError) as refused:
        measure(silent("surround.flac", 113, 192_000, "7.1"))
    assert refused.value.message.startswith(
        "The audio decodes to 347.1 MB of sound (1:53 at 192,000 Hz, 8 channels); the most "
        "this tool decodes is 345.6 MB (30 minutes of 48 kHz stereo)."
    )
    assert measure(silent("surround.flac", 112, 192_000, "7.1")).channels == 8


def test_an_edit_whose_result_reaches_the_size_limit_is_cut_and_refused(monkeypatch):
    from engines.audio.edit import AudioEditEngine

    monkeypatch.setattr(_ffmpeg, "MAX_RESULT_BYTES", 150_000)
    inputs = {"format": "wav", "bitrate_kbps": None, "sample_rate": None}
    small = AudioEditEngine().run(
        {"audio": silent("short.flac", 2, 16_000, "mono"), **inputs}, {"operation": "convert"}
    )
    assert small["bytes"] < 150_000 and small["duration_s"] == 2
    with pytest.raises(EngineError, match="larger than 0.1 MB, the most this tool returns"):
        AudioEditEngine().run(
            {"audio": silent("long.flac", 5, 16_000, "mono"), **inputs}, {"operation": "convert"}
        )


def test_ffmpeg_reads_no_more_than_the_length_limit_whatever_the_header_says():
    opened = _ffmpeg._input(Path("input.media"))
    assert opened[:2] == ["-t", str(_ffmpeg.MAX_SECONDS + 1)]
    assert ["-max_pixels", str(_ffmpeg.MAX_VIDEO_PIXELS)] == opened[2:4]


# --- speech to text -------------------------------------------------------------------------


def test_a_recording_longer_than_transcription_takes_is_refused_before_decoding(monkeypatch):
    pytest.importorskip("av", reason="speech needs requirements-models.txt")
    from engines.audio import transcription

    monkeypatch.setattr(transcription, "_whisper", lambda: pytest.fail("the model was run"))
    assert transcription.MAX_AUDIO_SECONDS == 30 * 60
    with pytest.raises(EngineError) as refused:
        transcription.TranscribeEngine().run(
            {"audio": silent("long.flac", 30 * 60 + 5, 16_000, "mono")}, {}
        )
    assert refused.value.message == (
        "The audio lasts 30:05; the most this tool transcribes is 30:00 (30 minutes). "
        "Send a shorter recording."
    )


def test_decoding_stops_past_the_limit_when_the_header_understates_it():
    pytest.importorskip("av", reason="speech needs requirements-models.txt")
    from engines.audio.transcription import decode_audio

    wav = silent("short.wav", 1.5, 16_000, "mono")
    # Declared 1.5 s passes a 1 s limit's one second of slack: counting the samples stops it.
    with pytest.raises(EngineError, match="lasts 00:01; the most this tool transcribes is 00:01"):
        decode_audio(wav, max_seconds=1)
    samples = decode_audio(wav, max_seconds=2)
    assert len(samples) == 24_000 and samples.dtype.name == "float32"


def test_the_block_features_are_the_libraries_own():
    pytest.importorskip("faster_whisper", reason="speech needs requirements-models.txt")
    import numpy as np
    from faster_whisper.feature_extractor import FeatureExtractor

    from engines.audio.transcription import _block_features

    for seconds in (0.001, 65.0077):  # one block, as the library does it; three, one partial
        waveform = np.random.default_rng(3).normal(0, 0.1, int(16_000 * seconds))
        waveform = waveform.astype(np.float32)
        expected = FeatureExtractor()(waveform)
        features = _block_features(FeatureExtractor())(waveform)
        assert features.shape == expected.shape
        assert np.allclose(features, expected, rtol=0, atol=1e-6)  # the last bit may differ


# --- video --------------------------------------------------------------------------------


def frames(size: str, count: int = 1, rate: int = 1) -> Blob:
    """``count`` grey PNG frames of ``size`` in Matroska: a few KB at any size."""
    return rendered(
        "frames.mkv", "-f", "lavfi", "-i", f"color=c=gray:s={size}:r={rate}",
        "-frames:v", str(count), "-c:v", "png", "-pix_fmt", "gray",
    )  # fmt: skip


def test_video_frames_larger_than_4k_are_refused_and_4k_passes():
    from engines.audio.video_inspect import VideoInspectEngine

    assert measure(frames("4096x2160"), need="video").width == 4096
    with pytest.raises(EngineError) as refused:
        VideoInspectEngine().run(
            {"video": frames("4096x2162"), "time_s": 0}, {"operation": "frame"}
        )
    assert refused.value.message == (
        "The video is 4096x2162 (8,855,552 pixels a frame); the most this tool decodes is "
        "8,847,360 pixels (4096x2160) and 4096 a side. Send a smaller video."
    )
    with pytest.raises(EngineError, match="is 4098x16 "):
        measure(frames("4098x16"), need="video")


def test_the_frame_rate_ffmpeg_writes_in_thousands_is_read():
    assert measure(frames("16x16", count=20, rate=1000), need="video").fps == 1000


def test_video_work_past_frames_times_pixels_is_refused_before_encoding(monkeypatch):
    from engines.audio.video_edit import VideoEditEngine

    half_hour = _ffmpeg.Media("mp4", 1800.0, None, width=1920, height=1080, fps=30.0)
    _ffmpeg.check_video_work(half_hour, 1800.0)  # exactly the limit
    with pytest.raises(EngineError, match="30:00 of 1920x1080 video at 60 fps is 224 billion"):
        _ffmpeg.check_video_work(dataclasses.replace(half_hour, fps=60.0), 1800.0)
    monkeypatch.setattr(_ffmpeg, "MAX_VIDEO_WORK", 16 * 16 * 1000 * 15)
    clip = frames("16x16", count=20, rate=1000)  # 0.02 s: 5,120 pixels
    inputs = {"video": clip, "max_height": None, "quality": "balanced"}
    assert VideoEditEngine().run(inputs, {"operation": "compress"})["width"] == 16
    monkeypatch.setattr(_ffmpeg, "MAX_VIDEO_WORK", 5_000)
    with pytest.raises(EngineError, match="billion pixels to decode"):
        VideoEditEngine().run(inputs, {"operation": "compress"})


def test_a_header_understating_the_frame_size_meets_the_decoders_own_limit():
    """The decoder is told MAX_VIDEO_PIXELS too: of PNG frames ffmpeg learns the size only by
    decoding the first one, and it refuses the frame instead of allocating it."""
    with pytest.raises(EngineError, match=r"is 4000x4000 \(16,000,000 pixels a frame\)"):
        measure(frames("4000x4000"), need="video")


def test_the_block_voice_activity_model_gives_the_libraries_probabilities():
    pytest.importorskip("faster_whisper", reason="speech needs requirements-models.txt")
    import numpy as np
    from faster_whisper import vad

    from engines.audio.transcription import _block_vad

    audio = np.random.default_rng(5).normal(0, 0.05, 512 * 12_345).astype(np.float32)
    expected = vad.SileroVADModel.__call__(vad.get_vad_model(), audio.copy())  # all at once
    _block_vad()
    assert type(vad.get_vad_model()).__name__ == "_BlockVad"
    assert np.array_equal(vad.get_vad_model()(audio.copy()), expected)  # 13 runs, not 2
