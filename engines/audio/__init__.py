"""Local audio, video and speech engines: ffmpeg edits and facts, speech, narrated slideshows."""

from __future__ import annotations

from engines.audio.analysis import AudioInspectEngine
from engines.audio.edit import AudioEditEngine
from engines.audio.slideshow import VideoRenderEngine
from engines.audio.synthesis import SynthesizeEngine
from engines.audio.transcription import TranscribeEngine
from engines.audio.video_edit import VideoEditEngine
from engines.audio.video_inspect import VideoInspectEngine
from engines.base import Engine

ENGINES: tuple[Engine, ...] = (
    AudioEditEngine(),
    AudioInspectEngine(),
    VideoEditEngine(),
    VideoInspectEngine(),
    VideoRenderEngine(),
    TranscribeEngine(),
    SynthesizeEngine(),
)
