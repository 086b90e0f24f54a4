"""video.render: scenes and narration into an MP4, probed back with the same ffmpeg."""

import re
import subprocess
import tempfile

import pytest

for module in ("imageio_ffmpeg", "PIL"):
    pytest.importorskip(module, reason="the video engine needs requirements-models.txt")

import imageio_ffmpeg  # noqa: E402

from engines.audio.slideshow import VideoRenderEngine, frame_size, scene_durations  # noqa: E402
from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from tests.engines.fixtures import solid_image, text_image, tone_wav  # noqa: E402

engine = VideoRenderEngine()


def probe(video: Blob) -> dict:
    """Duration, size and codecs from ``ffmpeg -i`` (the package ships no ffprobe)."""
    with tempfile.NamedTemporaryFile(suffix=".mp4") as file:
        file.write(video.data)
        file.flush()
        result = subprocess.run(
            [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", file.name],
            capture_output=True,
            text=True,
            timeout=30,
        )
    info = result.stderr
    hours, minutes, seconds = re.search(r"Duration: (\d+):(\d+):([\d.]+)", info).groups()
    video_stream = re.search(r"Video: (\w+).*?, (\d+)x(\d+)", info)
    audio_stream = re.search(r"Audio: (\w+)", info)
    return {
        "duration": int(hours) * 3600 + int(minutes) * 60 + float(seconds),
        "video_codec": video_stream.group(1),
        "size": (int(video_stream.group(2)), int(video_stream.group(3))),
        "audio_codec": audio_stream.group(1) if audio_stream else None,
    }


@pytest.fixture(scope="module")
def narrated():
    scenes = [
        {"image": None, "text": "Foxes are clever animals that live in forests"},
        {"image": text_image("A FOX"), "text": "Here is one"},
    ]
    inputs = {"scenes": scenes, "narration": tone_wav(3.0), "aspect_ratio": "16:9"}
    return engine.run({**inputs, "resolution": "240p"}, {})


def test_narrated_video_is_an_mp4_as_long_as_its_narration(narrated):
    video = narrated["video"]
    assert video.data[4:8] == b"ftyp"
    assert (video.content_type, video.filename) == ("video/mp4", "video.mp4")
    probed = probe(video)
    assert probed["duration"] == pytest.approx(3.0, abs=0.1)
    assert narrated["duration_s"] == 3.0
    assert (probed["video_codec"], probed["audio_codec"]) == ("h264", "aac")
    assert narrated["has_audio"] is True


def test_video_size_follows_the_aspect_ratio_and_resolution(narrated):
    assert (narrated["width"], narrated["height"]) == (426, 240)
    assert probe(narrated["video"])["size"] == (426, 240)


def test_scenes_share_the_narration_by_word_count(narrated):
    # 8 words and 3 words over 3 seconds.
    assert narrated["scenes"] == [{"start": 0.0, "end": 2.18}, {"start": 2.18, "end": 3.0}]


def test_a_silent_vertical_video_lasts_the_reading_time_and_has_no_audio():
    scenes = [{"image": solid_image(50, 50), "text": ""}, {"image": None, "text": "Short title"}]
    output = engine.run({"scenes": scenes, "aspect_ratio": "9:16", "resolution": "240p"}, {})
    probed = probe(output["video"])
    assert probed["size"] == (240, 426) == (output["width"], output["height"])
    assert probed["audio_codec"] is None and output["has_audio"] is False
    assert output["duration_s"] == 4.0  # two scenes at the 2-second minimum
    assert probed["duration"] == pytest.approx(4.0, abs=0.1)


@pytest.mark.parametrize(
    ("aspect_ratio", "resolution", "size"),
    [
        ("16:9", "720p", (1280, 720)),
        ("9:16", "1080p", (1080, 1920)),
        ("1:1", "480p", (480, 480)),
        ("16:9", "360p", (640, 360)),
    ],
)
def test_frame_sizes(aspect_ratio, resolution, size):
    assert frame_size(aspect_ratio, resolution) == size


def test_scene_durations_without_narration_use_reading_time_and_given_durations():
    scenes = [{"text": "word " * 10}, {"text": "", "duration_s": 7}, {"text": "word " * 100}]
    assert scene_durations(scenes, None) == [4.0, 7.0, 15.0]


def test_the_params_can_fix_the_look():
    output = engine.run(
        {"scenes": [{"image": None, "text": "Square"}]},
        {"aspect_ratio": "1:1", "resolution": "240p", "fps": 10},
    )
    assert (output["width"], output["height"]) == (240, 240)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"scenes": []}, "at least one scene"),
        ({"scenes": [{"image": None, "text": "x"}] * 101}, "at most 100 scenes"),
        (
            {
                "scenes": [
                    {"image": None, "text": "a"},
                    {"image": Blob(b"junk", "image/png"), "text": "b"},
                ]
            },
            "Scene 2: The file is not an image",
        ),
        (
            {
                "scenes": [{"image": None, "text": "a"}],
                "narration": Blob(b"junk" * 100, "audio/wav"),
            },
            "narration is not audio",
        ),
        ({"scenes": [{"image": None, "text": "a", "duration_s": 3600}]}, "longer than 30 minutes"),
    ],
    ids=["no-scenes", "too-many-scenes", "bad-image", "bad-narration", "too-long"],
)
def test_refusals(inputs, message):
    with pytest.raises(EngineError, match=message):
        engine.run({"resolution": "240p", **inputs}, {})


def test_no_temporary_files_are_left_behind(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    scenes = [{"image": None, "text": "Gone"}]
    engine.run({"scenes": scenes, "narration": tone_wav(0.5), "resolution": "240p"}, {})
    with pytest.raises(EngineError):
        engine.run(
            {"scenes": [{"image": None, "text": "a"}], "narration": Blob(b"x", "audio/wav")}, {}
        )
    assert list(tmp_path.iterdir()) == []
