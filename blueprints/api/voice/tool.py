"""The tool behind ``POST /v1/voice/speak`` (Creator plan, 5 credits)."""

from catalogue import Tool
from catalogue.tool import file_schema
from engines.audio.synthesis import AUDIO_FORMATS

MAX_TEXT_CHARS = 10_000

# Shared with the audiobook endpoint, which reads in the same voices.
VOICE_FIELDS = {
    "voice": {
        "type": ["string", "null"],
        "maxLength": 100,
        "default": None,
        "description": "A voice id from GET /v1/voice/voices, or a language code such as "
        "`fr` or `pt-BR` (the best local voice for it); null for the default voice.",
    },
    "format": {
        "type": "string",
        "enum": ["mp3", "ogg", "wav"],
        "default": "mp3",
        "description": "Audio format: MP3, Ogg (Opus) or WAV.",
    },
    "speed": {
        "type": "number",
        "minimum": 0.5,
        "maximum": 2.0,
        "default": 1.0,
        "description": "1 is natural pace; 0.5 half, 2 twice as fast.",
    },
}

SPEAK = Tool(
    slug="voice/speak",
    name="Voice",
    category="voice-audio",
    summary="Text read aloud in a chosen voice, format and pace, as one audio file on this "
    "service.",
    required_plan="creator",
    credit_class="audio",
    inputs={
        "type": "object",
        "additionalProperties": False,
        "required": ["text"],
        "properties": {
            "text": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_TEXT_CHARS,
                "pattern": r"\S",
                "description": "What to say (up to about 11 minutes of speech; use "
                "POST /v1/audiobooks for longer texts).",
            },
            **VOICE_FIELDS,
        },
    },
    primary="text",
    output={
        "type": "object",
        "additionalProperties": False,
        "required": ["audio", "duration_s", "voice", "engine", "format"],
        "properties": {
            "audio": {**file_schema("audio/mpeg"), "description": "The spoken audio file."},
            "duration_s": {"type": "number", "minimum": 0, "description": "Seconds of audio."},
            "voice": {"type": "string", "description": "The id of the voice used."},
            "engine": {
                "type": "string",
                "enum": ["piper", "espeak-ng", "provider"],
                "description": "What spoke: the local neural voice, eSpeak NG or the model "
                "provider.",
            },
            "format": {"type": "string", "enum": list(AUDIO_FORMATS)},
        },
    },
    engine="productions.voice",
    params={},
    queue=True,
    examples=[
        {
            "input": {
                "text": "Welcome back to the show. Today we look at how lighthouses changed "
                "the way ships cross the Atlantic.",
                "voice": "en_US-joe-medium",
                "format": "mp3",
                "speed": 1.0,
            },
            "output": {
                "audio": {
                    "id": "f_example",
                    "url": "https://svc.example/v1/files/f_example",
                    "content_type": "audio/mpeg",
                    "size": 68013,
                    "filename": "speech.mp3",
                },
                "duration_s": 5.61,
                "voice": "en_US-joe-medium",
                "engine": "piper",
                "format": "mp3",
            },
        }
    ],
)
