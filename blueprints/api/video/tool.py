"""The tool behind ``POST /v1/video/generate`` (Business plan, 10 credits)."""

from blueprints.api.voice.tool import VOICE_FIELDS
from catalogue import Tool
from catalogue.tool import MAX_FILE_CHARS, file_schema
from engines.audio.slideshow import ASPECT_RATIOS, RESOLUTIONS
from engines.models.productions import MAX_SCENES, MAX_SCRIPT_CHARS

GENERATE_VIDEO = Tool(
    slug="video/generate",
    name="Narrated video",
    category="video",
    summary="A narrated MP4 from a topic (the script is written for you) or your own script: "
    "one scene per paragraph, each with your picture, a generated one or a title card.",
    required_plan="business",
    credit_class="video",
    inputs={
        "type": "object",
        "additionalProperties": False,
        "oneOf": [{"required": ["topic"]}, {"required": ["script"]}],
        "properties": {
            "topic": {
                "type": "string",
                "minLength": 1,
                "maxLength": 300,
                "pattern": r"\S",
                "description": "What the video is about; the text model writes the script. "
                "Send a topic or a script, not both.",
            },
            "script": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_SCRIPT_CHARS,
                "pattern": r"\S",
                "description": "The narration, one paragraph per scene (long paragraphs are "
                f"cut into scenes of about 300 characters; at most {MAX_SCENES} scenes).",
            },
            "scene_count": {
                "type": "integer",
                "minimum": 2,
                "maximum": MAX_SCENES,
                "default": 5,
                "description": "How many scenes to write for a topic (ignored with a script).",
            },
            "voice": VOICE_FIELDS["voice"],
            "aspect_ratio": {
                "type": "string",
                "enum": list(ASPECT_RATIOS),
                "default": "16:9",
                "description": "16:9 landscape, 9:16 vertical (Reels, Shorts), 1:1 square.",
            },
            "resolution": {
                "type": "string",
                "enum": list(RESOLUTIONS),
                "default": "720p",
                "description": "Height of the short side.",
            },
            "images": {
                "type": "array",
                "maxItems": MAX_SCENES,
                "default": [],
                "items": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_FILE_CHARS,
                    "contentMediaType": "image/*",
                    "x-accept": ["image/png", "image/jpeg", "image/webp", "image/gif"],
                    "description": "A URL, a data: URI or base64 (PNG, JPEG, WebP or GIF).",
                },
                "description": "Pictures for the scenes, in order (at most one per scene). "
                "Scenes without one get a generated picture when an image provider is "
                "configured, else a title card.",
            },
        },
    },
    primary="topic",
    output={
        "type": "object",
        "additionalProperties": False,
        "required": ["video", "duration_s", "width", "height", "script", "voice", "scenes"],
        "properties": {
            "video": {**file_schema("video/mp4"), "description": "The MP4 (H.264, AAC)."},
            "duration_s": {"type": "number", "minimum": 0},
            "width": {"type": "integer"},
            "height": {"type": "integer"},
            "script": {"type": "string", "description": "The narration, scene by scene."},
            "voice": {"type": "string", "description": "The id of the narrating voice."},
            "scenes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["start", "end", "text", "visual"],
                    "properties": {
                        "start": {"type": "number", "description": "Seconds."},
                        "end": {"type": "number", "description": "Seconds."},
                        "text": {"type": "string", "description": "What is said."},
                        "visual": {
                            "type": "string",
                            "enum": ["supplied", "generated", "title_card"],
                            "description": "What is shown.",
                        },
                    },
                },
            },
        },
    },
    engine="productions.video",
    params={},
    queue=True,
    examples=[
        {
            "input": {"topic": "Three habits for better sleep", "scene_count": 3},
            "output": {
                "video": {
                    "id": "f_example",
                    "url": "https://svc.example/v1/files/f_example",
                    "content_type": "video/mp4",
                    "size": 1843920,
                    "filename": "video.mp4",
                },
                "duration_s": 17.4,
                "width": 1280,
                "height": 720,
                "script": "Good sleep starts long before bedtime.\n\nKeep the same bedtime "
                "every night, even at weekends.\n\nAnd leave your phone outside the bedroom.",
                "voice": "en_US-joe-medium",
                "scenes": [
                    {
                        "start": 0.0,
                        "end": 4.35,
                        "text": "Good sleep starts long before bedtime.",
                        "visual": "title_card",
                    },
                    {
                        "start": 4.35,
                        "end": 11.6,
                        "text": "Keep the same bedtime every night, even at weekends.",
                        "visual": "title_card",
                    },
                    {
                        "start": 11.6,
                        "end": 17.4,
                        "text": "And leave your phone outside the bedroom.",
                        "visual": "title_card",
                    },
                ],
            },
        }
    ],
)
