"""Model-backed engines (text, vision, image generation, productions) and the provider chains."""

from engines.base import Engine
from engines.models.imagegen import ImageGenerateEngine
from engines.models.llm import LlmChatEngine
from engines.models.productions import (
    AudiobookEngine,
    ImageSetEngine,
    NarratedVideoEngine,
    VoiceEngine,
)
from engines.models.vision import VisionChatEngine

ENGINES: tuple[Engine, ...] = (
    LlmChatEngine(),
    VisionChatEngine(),
    ImageGenerateEngine(),
    ImageSetEngine(),
    VoiceEngine(),
    NarratedVideoEngine(),
    AudiobookEngine(),
)
