"""The ``vision.chat`` engine: image understanding tools, each with its own prompt.

It works like ``llm.chat`` and shares its pieces: the system prompt, the prompt template
(``{field}`` placeholders filled once from the text inputs), the formats (text, markdown, list,
json held to the tool's output schema) and the one repair of a malformed answer. The user
message also carries the images: the input fields ``params["images"]`` names, in that order,
each sent as an ``image_url`` part holding a ``data:`` URI of the input's bytes (with the
``detail`` the tool asks for). When a tool takes several images, a short text part before each
one names it ("Image 2: after") so that its prompt can refer to them.

Messages with images go to the image understanding chain, which is the configured provider
only: with no provider the engine is unavailable.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from typing import Any

from engines.base import Engine, EngineError, ToolSpec
from engines.blob import Blob
from engines.models import chain, llm

# What OpenAI-compatible vision models take (GIF: its first frame).
IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
MAX_IMAGE_BYTES = 20 * 1024 * 1024
DETAILS = ("auto", "low", "high")
DEFAULT_DETAIL = "auto"


def image_part(blob: Blob, field: str, detail: str = DEFAULT_DETAIL) -> dict[str, Any]:
    """An ``image_url`` message part carrying ``blob`` as a data: URI; EngineError if unfit."""
    content_type = blob.content_type.split(";")[0].strip().lower()
    if content_type not in IMAGE_TYPES:
        raise EngineError(
            f"{field}: {content_type or 'this file'} cannot be read by the vision model; send "
            "a PNG, JPEG, WebP or GIF image."
        )
    if not blob.data:
        raise EngineError(f"{field}: the image is empty.")
    if len(blob.data) > MAX_IMAGE_BYTES:
        raise EngineError(
            f"{field}: the image is {len(blob.data):,} bytes, over the vision model's "
            f"{MAX_IMAGE_BYTES:,}: send a smaller or more compressed image."
        )
    uri = f"data:{content_type};base64,{base64.b64encode(blob.data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": uri, "detail": detail}}


def user_content(inputs: Mapping[str, Any], params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The user message's parts: the rendered prompt, then each image (named when several)."""
    fields = params["images"]
    detail = params.get("detail", DEFAULT_DETAIL)
    parts: list[dict[str, Any]] = [{"type": "text", "text": llm.render(params["prompt"], inputs)}]
    for index, field in enumerate(fields, start=1):
        blob = inputs.get(field)
        if not isinstance(blob, Blob):
            raise EngineError(
                f"{field}: send an image (a URL, a data: URI, base64 or a multipart upload)."
            )
        if len(fields) > 1:
            parts.append({"type": "text", "text": f"Image {index}: {field.replace('_', ' ')}"})
        parts.append(image_part(blob, field, detail))
    return parts


def generate(
    inputs: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    output_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run one image understanding tool: build the messages, ask the chain, shape the answer."""
    messages: list[dict[str, Any]] = [
        llm.system_message(params["system"], params.get("format", llm.DEFAULT_FORMAT)),
        {"role": "user", "content": user_content(inputs, params)},
    ]
    return llm.converse(messages, params, output_schema=output_schema, inputs=inputs)


def check_params(params: Mapping[str, Any], inputs: Mapping[str, Any]) -> list[str]:
    """Problems beyond ``params_schema``: ``images`` must be exactly the binary inputs, and the
    template may name only the other inputs."""
    properties = inputs.get("properties", {})
    binary = [name for name, spec in properties.items() if "contentMediaType" in spec]
    images = list(params.get("images", []))
    problems = [] if sorted(images) == sorted(binary) else ["images must list every image input."]
    problems += llm.check_params(params, inputs)
    try:
        names = llm.placeholders(params.get("prompt", ""))
    except ValueError:
        names = []
    problems += [
        f"prompt placeholder {{{name}}} is an image; images are sent as image parts."
        for name in dict.fromkeys(names)
        if name in images
    ]
    return problems


def _params_schema() -> dict[str, Any]:
    schema = copy.deepcopy(llm.LlmChatEngine.params_schema)
    schema["required"] = [*schema["required"], "images"]
    schema["properties"].update(
        {
            "images": {
                "type": "array",
                "minItems": 1,
                "maxItems": 4,
                "uniqueItems": True,
                "items": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
            },
            "detail": {"enum": list(DETAILS), "default": DEFAULT_DETAIL},
        }
    )
    return schema


class VisionChatEngine(Engine):
    """A vision model answering a tool's own prompt about its images (see the module docstring)."""

    name = "vision.chat"
    params_schema = _params_schema()

    def waits_on_network(self) -> bool:
        return True  # a provider only: without one, its runs are refused before they queue

    def unavailable_reason(self) -> str | None:
        return chain.unavailable_reason(chain.VISION)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        return generate(inputs, params)

    def run_tool(self, tool: ToolSpec, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run ``tool`` with its output schema, which json tools hold their model to."""
        return generate(inputs, tool.params, output_schema=tool.output)


ENGINES = (VisionChatEngine(),)
