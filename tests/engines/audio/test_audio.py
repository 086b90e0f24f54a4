"""Audio and video editing with ffmpeg (engines/audio/) on media made by ffmpeg's own sources."""

import io
import wave

import pytest

from engines import EngineError, get_engine
from engines.audio._ffmpeg import MAX_SECONDS, probe
from engines.audio._formats import _tempo_filters
from engines.blob import Blob
from tests.engines import fixtures


@pytest.fixture(scope="module")
def stereo_mp3() -> Blob:
    """Three seconds: 440 Hz on the left channel, silence on the right."""
    return fixtures.rendered(
        "tone.mp3", "-f", "lavfi", "-i", "sine=frequency=440:duration=3",
        "-f", "lavfi", "-i", "anullsrc=r=44100:cl=mono:d=3",
        "-filter_complex", "[0][1]join=inputs=2:channel_layout=stereo", "-b:a", "128k",
    )  # fmt: skip


@pytest.fixture(scope="module")
def gappy_wav() -> Blob:
    """1 s of silence, 1 s of tone, 2 s of silence, 1 s of tone, 1 s of silence (6 s)."""
    tone, hush = "sine=frequency=300:duration=1", "anullsrc=r=44100:cl=mono:d={}"
    sources = [hush.format(1), tone, hush.format(2), tone, hush.format(1)]
    arguments = []
    for source in sources:
        arguments += ["-f", "lavfi", "-i", source]
    graph = "".join(f"[{i}]" for i in range(5)) + "concat=n=5:v=0:a=1"
    return fixtures.rendered("gappy.wav", *arguments, "-filter_complex", graph)


@pytest.fixture(scope="module")
def clip_mp4() -> Blob:
    """Two seconds of a 160x120 test picture at 10 fps with a tone, H.264 and AAC."""
    return fixtures.sample_video(2, "160x120")


def edit(operation: str, **inputs):
    return get_engine("audio.edit").run(
        {"format": None, "bitrate_kbps": 128, "sample_rate": None, **inputs},
        {"operation": operation},
    )


def facts(blob: Blob, tmp_path, need: str = "audio"):
    path = tmp_path / "result"
    path.write_bytes(blob.data)
    return probe(path, tmp_path, need=need)


# --- audio.edit --------------------------------------------------------------------------


def test_trim_keeps_the_part_between_start_and_end(stereo_mp3, tmp_path):
    output = edit("trim", audio=stereo_mp3, start_s=0.5, end_s=2.0)
    assert output["duration_s"] == pytest.approx(1.5, abs=0.06)
    assert (output["start_s"], output["end_s"], output["format"]) == (0.5, 2.0, "mp3")
    assert output["audio"].content_type == "audio/mpeg" and output["audio"].data[:3] == b"ID3"
    assert facts(output["audio"], tmp_path).audio_codec == "mp3"


def test_trim_to_the_end_when_no_end_is_given(stereo_mp3):
    output = edit("trim", audio=stereo_mp3, start_s=2.0, end_s=None)
    assert output["duration_s"] == pytest.approx(1.0, abs=0.06) and output["end_s"] == 3.0


@pytest.mark.parametrize(
    "start, end, message",
    [(5.0, None, "past the end"), (2.0, 1.0, "after the start")],
)
def test_trim_refuses_a_cut_outside_the_audio(stereo_mp3, start, end, message):
    with pytest.raises(EngineError, match=message):
        edit("trim", audio=stereo_mp3, start_s=start, end_s=end)


@pytest.mark.parametrize(
    "fmt, codec, magic",
    [
        ("wav", "pcm_s16le", b"RIFF"),
        ("flac", "flac", b"fLaC"),
        ("ogg", "vorbis", b"OggS"),
        ("opus", "opus", b"OggS"),
        ("m4a", "aac", b"ftyp"),
    ],
)
def test_convert_writes_each_format(stereo_mp3, tmp_path, fmt, codec, magic):
    output = edit("convert", audio=stereo_mp3, format=fmt)
    data = output["audio"].data
    assert magic in data[:12] and output["format"] == fmt and output["original_format"] == "mp3"
    assert facts(output["audio"], tmp_path).audio_codec == codec
    assert output["duration_s"] == pytest.approx(3.0, abs=0.1)


def test_convert_resamples_and_sets_the_bitrate(stereo_mp3, tmp_path):
    low = edit("convert", audio=stereo_mp3, format="mp3", bitrate_kbps=32, sample_rate=22050)
    high = edit("convert", audio=stereo_mp3, format="mp3", bitrate_kbps=256)
    assert facts(low["audio"], tmp_path).sample_rate == 22050
    assert low["bytes"] < high["bytes"] / 4


def test_opus_refuses_a_sample_rate_it_cannot_store(stereo_mp3):
    with pytest.raises(EngineError, match="Opus supports only"):
        edit("convert", audio=stereo_mp3, format="opus", sample_rate=44100)


def test_normalize_reaches_the_target_loudness(stereo_mp3):
    output = edit("normalize", audio=stereo_mp3, target_lufs=-16, true_peak_db=-1.5)
    assert output["input_lufs"] < -20  # a quiet tone (lavfi's sine is at -18 dBFS)
    assert output["output_lufs"] == pytest.approx(-16, abs=1.0)
    assert output["output_true_peak_db"] <= -1.0


def test_normalize_refuses_silence():
    silence = fixtures.rendered("hush.wav", "-f", "lavfi", "-i", "anullsrc=d=2")
    with pytest.raises(EngineError, match="silent"):
        edit("normalize", audio=silence, target_lufs=-16, true_peak_db=-1.5)


@pytest.mark.parametrize("speed, expected", [(2.0, 1.5), (0.5, 6.0), (4.0, 0.75)])
def test_speed_changes_the_length(stereo_mp3, speed, expected):
    output = edit("speed", audio=stereo_mp3, speed=speed)
    assert output["duration_s"] == pytest.approx(expected, rel=0.05)


def test_tempo_is_split_into_steps_atempo_accepts():
    assert _tempo_filters(4.0) == ["atempo=2.0", "atempo=2"]
    assert _tempo_filters(0.25) == ["atempo=0.5", "atempo=0.5"]
    assert _tempo_filters(1.25) == ["atempo=1.25"]


def test_fade_starts_and_ends_silent(gappy_wav):
    tone = edit("trim", audio=gappy_wav, start_s=1.0, end_s=2.0, format="wav")["audio"]
    output = edit("fade", audio=tone, fade_in_s=0.5, fade_out_s=0.5, format="wav")
    samples = _samples(output["audio"])
    edge = len(samples) // 50
    assert max(map(abs, samples[:edge])) < 0.1 * max(map(abs, samples))
    assert max(map(abs, samples[-edge:])) < 0.1 * max(map(abs, samples))


def test_fades_longer_than_the_audio_are_refused(stereo_mp3):
    with pytest.raises(EngineError, match="longer than the audio"):
        edit("fade", audio=stereo_mp3, fade_in_s=2, fade_out_s=2)


def test_silence_at_the_edges_is_trimmed(gappy_wav):
    output = edit("silence", audio=gappy_wav, mode="edges", threshold_db=-50, max_pause_s=0.5)
    assert output["duration_s"] == pytest.approx(4.0, abs=0.2)
    assert output["removed_s"] == pytest.approx(2.0, abs=0.2) and output["format"] == "wav"


def test_long_pauses_are_shortened(gappy_wav):
    output = edit("silence", audio=gappy_wav, mode="all", threshold_db=-50, max_pause_s=0.5)
    assert 2.2 < output["duration_s"] < 3.3


def test_volume_gain_raises_the_level(stereo_mp3, tmp_path):
    inspect = get_engine("audio.inspect")
    before = inspect.run({"audio": stereo_mp3}, {"operation": "info"})["peak_db"]
    louder = edit("volume", audio=stereo_mp3, gain_db=12, prevent_clipping=True)["audio"]
    after = inspect.run({"audio": louder}, {"operation": "info"})["peak_db"]
    assert after == pytest.approx(before + 12, abs=1.0)


def test_ringtone_is_a_faded_m4r_clip(stereo_mp3, tmp_path):
    output = edit("ringtone", audio=stereo_mp3, start_s=1.0, length_s=30, format="m4r")
    assert output["audio"].filename == "ringtone.m4r" and output["audio"].data[4:8] == b"ftyp"
    assert output["duration_s"] == pytest.approx(2.0, abs=0.1)
    assert (output["start_s"], output["end_s"]) == (1.0, 3.0)


@pytest.mark.parametrize("layout, channels", [("mono", 1), ("left", 1), ("stereo", 2)])
def test_channels_are_mixed_or_picked(stereo_mp3, tmp_path, layout, channels):
    output = edit("channels", audio=stereo_mp3, channels=layout, format="wav")
    assert facts(output["audio"], tmp_path).channels == channels == output["channels"]
    assert output["original_channels"] == 2


def test_the_right_channel_of_a_tone_on_the_left_is_silent(stereo_mp3):
    right = edit("channels", audio=stereo_mp3, channels="right", format="wav")["audio"]
    left = edit("channels", audio=stereo_mp3, channels="left", format="wav")["audio"]
    assert max(map(abs, _samples(right))) < 50 < max(map(abs, _samples(left)))


def test_a_mono_file_has_no_right_channel(gappy_wav):
    with pytest.raises(EngineError, match="mono"):
        edit("channels", audio=gappy_wav, channels="right")


def test_cleanup_gates_the_quiet_parts_of_a_voice_track(gappy_wav):
    output = edit("cleanup", audio=gappy_wav, strength="strong", format="wav")
    assert output["duration_s"] == pytest.approx(6.0, abs=0.1) and output["strength"] == "strong"


def test_join_plays_the_clips_in_turn(stereo_mp3, gappy_wav):
    output = edit("join", audio=stereo_mp3, audio_2=gappy_wav, crossfade_s=0)
    assert output["duration_s"] == pytest.approx(9.0, abs=0.15) and output["clips"] == 2
    crossed = edit("join", audio=stereo_mp3, audio_2=gappy_wav, crossfade_s=1)
    assert crossed["duration_s"] == pytest.approx(8.0, abs=0.15)


def test_join_needs_two_clips_longer_than_the_crossfade(stereo_mp3):
    with pytest.raises(EngineError, match="at least two clips"):
        edit("join", audio=stereo_mp3, crossfade_s=0)
    with pytest.raises(EngineError, match="longer than the crossfade"):
        edit("join", audio=stereo_mp3, audio_2=stereo_mp3, crossfade_s=5)


@pytest.mark.parametrize(
    "blob",
    [
        Blob(b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 40, "audio/wav"),
        Blob(b"#EXTM3U\n#EXTINF:1,\nhttp://127.0.0.1/secret.mp3\n", "audio/mpeg"),
        Blob(b"", "audio/wav"),
    ],
    ids=["corrupt", "playlist", "empty"],
)
def test_what_is_not_audio_is_refused(blob):
    with pytest.raises(EngineError):
        edit("convert", audio=blob, format="mp3")


def test_a_video_without_sound_is_refused_as_audio():
    silent = fixtures.sample_video(1, audio=False)
    with pytest.raises(EngineError, match="no audio stream"):
        edit("convert", audio=silent, format="mp3")


def test_media_longer_than_the_limit_is_refused(monkeypatch, stereo_mp3):
    monkeypatch.setattr("engines.audio._ffmpeg.MAX_SECONDS", 2)
    with pytest.raises(EngineError, match="longer than 0 minutes"):
        edit("convert", audio=stereo_mp3, format="wav")
    assert MAX_SECONDS == 30 * 60


# --- audio.inspect -----------------------------------------------------------------------


def test_info_reports_format_and_levels(stereo_mp3):
    output = get_engine("audio.inspect").run({"audio": stereo_mp3}, {"operation": "info"})
    assert output["duration_s"] == pytest.approx(3.0, abs=0.05)
    assert (output["codec"], output["sample_rate"], output["channels"]) == ("mp3", 44100, 2)
    assert output["channel_layout"] == "stereo" and output["has_video"] is False
    assert 120 <= output["bitrate_kbps"] <= 140 and output["bytes"] == len(stereo_mp3.data)
    assert output["peak_db"] == pytest.approx(-18.1, abs=0.5)  # lavfi's sine: 1/8 of full scale
    assert output["rms_db"] < output["peak_db"] and output["loudness_lufs"] < -15


def test_info_of_digital_silence_has_no_levels():
    silence = fixtures.rendered("quiet.wav", "-f", "lavfi", "-i", "anullsrc=d=1")
    output = get_engine("audio.inspect").run({"audio": silence}, {"operation": "info"})
    assert (output["peak_db"], output["rms_db"], output["loudness_lufs"]) == (None, None, None)


def test_waveform_is_a_png_of_the_size_asked(stereo_mp3):
    from PIL import Image

    output = get_engine("audio.inspect").run(
        {"audio": stereo_mp3, "width": 500, "height": 100, "color": "#ff0000",
         "background": "#000000"},
        {"operation": "waveform"},
    )  # fmt: skip
    image = Image.open(io.BytesIO(output["image"].data)).convert("RGB")
    assert image.size == (500, 100) and output["duration_s"] == pytest.approx(3.0, abs=0.05)
    colors = {color for _, color in image.getcolors(10_000)}
    assert (0, 0, 0) in colors and any(r > 200 and g < 60 for r, g, _ in colors)


def test_waveform_refuses_a_malformed_color(stereo_mp3):
    with pytest.raises(EngineError, match="#rrggbb"):
        get_engine("audio.inspect").run(
            {"audio": stereo_mp3, "width": 500, "height": 100, "color": "#ff0000",
             "background": "#12"},
            {"operation": "waveform"},
        )  # fmt: skip


# --- video.edit --------------------------------------------------------------------------


def video(operation: str, **inputs):
    return get_engine("video.edit").run(inputs, {"operation": operation})


def test_video_trim(clip_mp4, tmp_path):
    output = video("trim", video=clip_mp4, start_s=0.5, end_s=1.5)
    assert output["video"].data[4:8] == b"ftyp" and output["has_audio"] is True
    assert output["duration_s"] == pytest.approx(1.0, abs=0.1)
    assert (output["width"], output["height"]) == (160, 120)
    assert output["original_bytes"] == len(clip_mp4.data)


def test_video_to_gif_limits_width_and_frames(clip_mp4):
    from PIL import Image

    output = video("gif", video=clip_mp4, start_s=0, duration_s=1, fps=5, width=80)
    image = Image.open(io.BytesIO(output["image"].data))
    assert image.format == "GIF" and image.size == (80, 60) == (output["width"], output["height"])
    assert output["frames"] == image.n_frames == 5


def test_mute_drops_the_sound_and_keeps_the_picture(clip_mp4, tmp_path):
    output = video("mute", video=clip_mp4)
    media = facts(output["video"], tmp_path, need="video")
    assert media.audio_codec is None and media.video_codec == "h264"
    assert output["has_audio"] is False and output["duration_s"] == pytest.approx(2.0, abs=0.1)


def test_extract_audio(clip_mp4, tmp_path):
    output = video("extract_audio", video=clip_mp4, format="wav", bitrate_kbps=128)
    assert output["audio"].data[:4] == b"RIFF" and output["format"] == "wav"
    assert output["duration_s"] == pytest.approx(2.0, abs=0.1)


def test_compress_scales_down_never_up(clip_mp4):
    small = video("compress", video=clip_mp4, max_height=60, quality="smallest")
    assert (small["width"], small["height"]) == (80, 60) and small["quality"] == "smallest"
    kept = video("compress", video=clip_mp4, max_height=720, quality="balanced")
    assert (kept["width"], kept["height"]) == (160, 120)


def test_video_speed(clip_mp4):
    output = video("speed", video=clip_mp4, speed=2.0)
    assert output["duration_s"] == pytest.approx(1.0, abs=0.15) and output["has_audio"] is True


@pytest.mark.parametrize(
    "transform, size", [("rotate_90", (120, 160)), ("flip_vertical", (160, 120))]
)
def test_rotate_and_flip(clip_mp4, transform, size):
    output = video("transform", video=clip_mp4, transform=transform)
    assert (output["width"], output["height"]) == size


def test_subtitles_are_burned_into_the_picture(clip_mp4, tmp_path):
    srt = "1\n00:00:00,000 --> 00:00:02,000\nHELLO THERE\n"
    plain = video("transform", video=clip_mp4, transform="flip_horizontal")
    subtitled = video("subtitles", video=clip_mp4, subtitles=srt, font_size="large")
    assert subtitled["cues"] == 1
    before = _frame(plain["video"], tmp_path).transpose(0)  # undo the flip
    after = _frame(subtitled["video"], tmp_path)
    bottom = (0, 80, 160, 120)
    from PIL import ImageChops

    changed = ImageChops.difference(before.crop(bottom), after.crop(bottom)).getbbox()
    assert changed is not None


def test_subtitles_without_cues_are_refused(clip_mp4):
    with pytest.raises(EngineError, match="no cues"):
        video("subtitles", video=clip_mp4, subtitles="just words", font_size="medium")


def test_an_audio_file_is_not_a_video(stereo_mp3):
    with pytest.raises(EngineError, match="no video stream"):
        video("mute", video=stereo_mp3)


# --- video.inspect -----------------------------------------------------------------------


def test_video_info(clip_mp4):
    output = get_engine("video.inspect").run({"video": clip_mp4}, {"operation": "info"})
    assert (output["width"], output["height"], output["fps"]) == (160, 120, 10.0)
    assert (output["video_codec"], output["audio_codec"]) == ("h264", "aac")
    assert output["duration_s"] == pytest.approx(2.0, abs=0.05) and output["rotation"] == 0


def test_frame_extractor(clip_mp4):
    from PIL import Image

    output = get_engine("video.inspect").run(
        {"video": clip_mp4, "time_s": 1.0}, {"operation": "frame"}
    )
    image = Image.open(io.BytesIO(output["image"].data))
    assert image.format == "PNG" and image.size == (160, 120) and output["time_s"] == 1.0
    with pytest.raises(EngineError, match="past the end"):
        get_engine("video.inspect").run({"video": clip_mp4, "time_s": 5}, {"operation": "frame"})


def test_contact_sheet(clip_mp4):
    from PIL import Image

    output = get_engine("video.inspect").run(
        {"video": clip_mp4, "columns": 3, "rows": 2, "tile_width": 80},
        {"operation": "contact_sheet"},
    )
    image = Image.open(io.BytesIO(output["image"].data))
    assert image.size == (output["width"], output["height"]) == (3 * 86 + 6, 2 * 66 + 6)
    assert output["frames"] == 6 and output["times_s"] == [0.17, 0.5, 0.83, 1.17, 1.5, 1.83]


# --- helpers -----------------------------------------------------------------------------


def _samples(blob: Blob) -> list[int]:
    import array

    with wave.open(io.BytesIO(blob.data)) as audio:
        assert audio.getsampwidth() == 2
        frames = audio.readframes(audio.getnframes())
    return list(array.array("h", frames))


def _frame(blob: Blob, tmp_path):
    from PIL import Image

    output = get_engine("video.inspect").run({"video": blob, "time_s": 1.0}, {"operation": "frame"})
    return Image.open(io.BytesIO(output["image"].data)).convert("RGB")


def test_fixture_tone_wav_is_read_as_audio(tmp_path):
    assert facts(fixtures.tone_wav(1.0), tmp_path).duration == pytest.approx(1.0, abs=0.01)
