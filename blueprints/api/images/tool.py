"""The tool behind ``POST /v1/images/generate`` (Creator plan, 5 credits per image)."""

from catalogue import Tool
from catalogue.tool import file_schema
from engines.models.productions import IMAGE_SIZES, MAX_IMAGES

GENERATE_IMAGES = Tool(
    slug="images/generate",
    name="Image generation",
    category="image-generation",
    summary="Images from a text prompt, in a size and style, with things to avoid; each image "
    "is a file on this service.",
    required_plan="creator",
    credit_class="image",
    inputs={
        "type": "object",
        "additionalProperties": False,
        "required": ["prompt"],
        "properties": {
            "prompt": {
                "type": "string",
                "minLength": 1,
                "maxLength": 4000,
                "pattern": r"\S",
                "description": "What the image shows: subject, setting, light, composition.",
            },
            "size": {
                "type": "string",
                "enum": list(IMAGE_SIZES),
                "default": "1024x1024",
                "description": "Width x height in pixels. Models support some sizes only "
                "(gpt-image-1: 1024x1024, 1536x1024, 1024x1536; dall-e-3 adds 1792 wide or "
                "tall); another size is a 422 with the provider's message.",
            },
            "count": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_IMAGES,
                "default": 1,
                "description": "How many images (5 credits each).",
            },
            "style": {
                "type": ["string", "null"],
                "maxLength": 200,
                "default": None,
                "description": 'A style, e.g. "watercolor", "flat vector illustration", '
                '"35 mm photograph".',
            },
            "negative_prompt": {
                "type": ["string", "null"],
                "maxLength": 1000,
                "default": None,
                "description": "What the image must not show.",
            },
        },
    },
    primary="prompt",
    output={
        "type": "object",
        "additionalProperties": False,
        "required": ["images", "size"],
        "properties": {
            "images": {
                "type": "array",
                "minItems": 1,
                "items": file_schema("image/png"),
                "description": "The images, as files on this service (usually PNG).",
            },
            "size": {"type": "string", "description": "Width x height in pixels."},
        },
    },
    engine="productions.images",
    params={},
    queue=True,
    examples=[
        {
            "input": {
                "prompt": "A lighthouse on a rocky coast at dawn, waves breaking below",
                "size": "1536x1024",
                "count": 2,
                "style": "watercolor",
                "negative_prompt": "people, boats",
            },
            "output": {
                "images": [
                    {
                        "id": "f_example1",
                        "url": "https://svc.example/v1/files/f_example1",
                        "content_type": "image/png",
                        "size": 2104332,
                        "filename": "image-1.png",
                    },
                    {
                        "id": "f_example2",
                        "url": "https://svc.example/v1/files/f_example2",
                        "content_type": "image/png",
                        "size": 1987120,
                        "filename": "image-2.png",
                    },
                ],
                "size": "1536x1024",
            },
        }
    ],
)
