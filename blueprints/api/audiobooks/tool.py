"""The tool behind ``POST /v1/audiobooks`` (Business plan, 5 credits per chapter)."""

from blueprints.api.voice.tool import VOICE_FIELDS
from catalogue import Tool
from catalogue.tool import MAX_FILE_CHARS, file_schema
from engines.models.productions import MAX_BOOK_CHARS, MAX_CHAPTERS

CHAPTER_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["index", "title", "audio", "duration_s", "characters"],
    "properties": {
        "index": {"type": "integer", "minimum": 1, "description": "1 for the first chapter."},
        "title": {"type": "string"},
        "audio": {**file_schema("audio/mpeg"), "description": "The chapter read aloud."},
        "duration_s": {"type": "number", "minimum": 0},
        "characters": {"type": "integer", "minimum": 0, "description": "Length of its text."},
    },
}

AUDIOBOOK = Tool(
    slug="audiobooks",
    name="Audiobook",
    category="audiobook",
    summary="A book read aloud chapter by chapter: plain text (chapters from headings or "
    '"Chapter N" lines) or an EPUB, one audio file per chapter.',
    required_plan="business",
    credit_class="audio",
    inputs={
        "type": "object",
        "additionalProperties": False,
        "oneOf": [{"required": ["text"]}, {"required": ["book"]}],
        "properties": {
            "text": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_BOOK_CHARS,
                "pattern": r"\S",
                "description": "The book as text. Markdown headings or lines such as "
                '"Chapter 2" start chapters. Send text or book, not both.',
            },
            "book": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_FILE_CHARS,
                "contentMediaType": "application/epub+zip",
                "x-accept": ["application/epub+zip", "text/plain", "text/markdown"],
                "description": "The book as a file: a URL, a data: URI, base64 or a multipart "
                "upload (EPUB, or a text or Markdown file).",
            },
            "title": {
                "type": ["string", "null"],
                "maxLength": 200,
                "default": None,
                "description": "The book's title (an EPUB's own title otherwise).",
            },
            **VOICE_FIELDS,
        },
    },
    primary="text",
    output={
        "type": "object",
        "additionalProperties": False,
        "required": ["title", "chapters", "duration_s", "voice", "format"],
        "properties": {
            "title": {"type": ["string", "null"]},
            "chapters": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_CHAPTERS,
                "items": CHAPTER_SCHEMA,
            },
            "duration_s": {"type": "number", "minimum": 0, "description": "The whole book."},
            "voice": {"type": "string", "description": "The id of the reading voice."},
            "format": {"type": "string", "enum": ["mp3", "ogg", "wav"]},
        },
    },
    engine="productions.audiobook",
    params={},
    queue=True,
    examples=[
        {
            "input": {
                "text": "# The Keeper\n\nThe lighthouse keeper woke before dawn, as he had "
                "every day for forty years.\n\n# The Storm\n\nBy noon the sky over the bay "
                "had turned the colour of slate.",
                "title": "The Last Lighthouse",
                "format": "mp3",
            },
            "output": {
                "title": "The Last Lighthouse",
                "chapters": [
                    {
                        "index": 1,
                        "title": "The Keeper",
                        "audio": {
                            "id": "f_example1",
                            "url": "https://svc.example/v1/files/f_example1",
                            "content_type": "audio/mpeg",
                            "size": 71253,
                            "filename": "chapter-01.mp3",
                        },
                        "duration_s": 5.92,
                        "characters": 71,
                    },
                    {
                        "index": 2,
                        "title": "The Storm",
                        "audio": {
                            "id": "f_example2",
                            "url": "https://svc.example/v1/files/f_example2",
                            "content_type": "audio/mpeg",
                            "size": 58101,
                            "filename": "chapter-02.mp3",
                        },
                        "duration_s": 4.81,
                        "characters": 60,
                    },
                ],
                "duration_s": 10.73,
                "voice": "en_US-joe-medium",
                "format": "mp3",
            },
        }
    ],
)
