"""The ``images.generate`` engine: image generation tools, each with its own prompt.

A tool's params hold a prompt template (the ``llm.chat`` rules: ``{field}`` placeholders
filled once from the validated inputs), a ``style`` preset and a ``negative`` prompt that the
provider receives with it, and the default ``size`` (``WIDTHxHEIGHT``) and ``count``. Three
input fields are the engine's own rather than the template's: ``size`` and ``count`` override
the defaults within the bounds the tool's input schema declares (and the engine's own,
``SIDE_RANGE`` and ``MAX_COUNT``), and ``avoid`` adds to the negative prompt.

The images come from the configured provider (``engines.models.chain.generate_images``): with none,
the engine is unavailable. The output holds the images (Blobs the API stores and answers as
file URLs) and what was asked for: the prompt, the style, the negative prompt and the size.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engines.base import Engine, EngineError
from engines.models import chain, llm

SIZE_FIELD = "size"
COUNT_FIELD = "count"
AVOID_FIELD = "avoid"
ENGINE_FIELDS = (SIZE_FIELD, COUNT_FIELD, AVOID_FIELD)

MAX_COUNT = 4
SIDE_RANGE = (256, 4096)
# The longest prompt every common image model takes (DALL-E 3: 4,000 characters).
MAX_PROMPT_CHARS = 4000
SIZE_PATTERN = r"^[1-9][0-9]{2,3}x[1-9][0-9]{2,3}$"
DEFAULT_SIZE = "1024x1024"
DEFAULT_COUNT = 1

_SIZE_RE = re.compile(SIZE_PATTERN)


@dataclass(frozen=True)
class ImageRequest:
    """What one run asks the provider for."""

    prompt: str
    style: str
    negative_prompt: str
    size: str
    count: int


def check_size(size: str) -> str:
    """``size`` when it is ``WIDTHxHEIGHT`` with both sides in ``SIDE_RANGE``; else EngineError."""
    low, high = SIDE_RANGE
    if not isinstance(size, str) or not _SIZE_RE.match(size):
        raise EngineError(f"Size {size!r} is not WIDTHxHEIGHT in pixels, such as 1024x1024.")
    if not all(low <= int(side) <= high for side in size.split("x")):
        raise EngineError(f"Size {size} is out of range: each side must be {low} to {high} pixels.")
    return size


def check_count(count: Any) -> int:
    """``count`` when it is a whole number from 1 to ``MAX_COUNT``; else EngineError."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise EngineError(f"Count must be a whole number from 1 to {MAX_COUNT}; got {count!r}.")
    return count


def request_for(inputs: Mapping[str, Any], params: Mapping[str, Any]) -> ImageRequest:
    """The provider request for one run: the rendered prompt and the bounded options."""
    prompt = llm.render(params["prompt"], inputs).strip()
    if len(prompt) > MAX_PROMPT_CHARS:
        raise EngineError(
            f"The prompt is {len(prompt):,} characters, over the {MAX_PROMPT_CHARS:,} image "
            "models take: shorten the text inputs."
        )
    negative = [params.get("negative", "").strip(), str(inputs.get(AVOID_FIELD) or "").strip()]
    return ImageRequest(
        prompt=prompt,
        style=params.get("style", "").strip(),
        negative_prompt=", ".join(part for part in negative if part),
        size=check_size(_given(inputs, SIZE_FIELD, params.get("size", DEFAULT_SIZE))),
        count=check_count(_given(inputs, COUNT_FIELD, params.get("count", DEFAULT_COUNT))),
    )


def _given(inputs: Mapping[str, Any], field: str, default: Any) -> Any:
    value = inputs.get(field)
    return default if value is None else value


def generate(inputs: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Run one image generation tool: build the request, ask the provider, answer the images."""
    request = request_for(inputs, params)
    images = chain.generate_images(
        request.prompt,
        n=request.count,
        size=request.size,
        style=request.style or None,
        negative_prompt=request.negative_prompt or None,
    )
    return {
        "images": images[: request.count],
        "prompt": request.prompt,
        "style": request.style,
        "negative_prompt": request.negative_prompt,
        "size": request.size,
    }


def check_params(params: Mapping[str, Any], inputs: Mapping[str, Any]) -> list[str]:
    """Problems of a tool's params and inputs beyond ``params_schema``.

    Placeholders must be inputs and not the engine's own fields; a ``size`` input must list
    valid sizes including the default; a ``count`` input must stay within ``MAX_COUNT``.
    """
    problems = llm.check_params(params, inputs)
    try:
        names = set(llm.placeholders(params.get("prompt", "")))
    except ValueError:
        names = set()
    problems += [
        f"prompt placeholder {{{name}}} is an engine field, not a template field."
        for name in sorted(names & set(ENGINE_FIELDS))
    ]
    properties = inputs.get("properties", {})
    size = properties.get(SIZE_FIELD)
    if size is not None:
        sizes = size.get("enum", [])
        if not sizes or not all(isinstance(s, str) and _SIZE_RE.match(s) for s in sizes):
            problems.append("input size must be an enum of WIDTHxHEIGHT sizes.")
        if size.get("default") != params.get("size", DEFAULT_SIZE):
            problems.append("input size's default must be the params' size.")
    count = properties.get(COUNT_FIELD)
    if count is not None:
        if count.get("type") != "integer" or count.get("minimum", 0) < 1:
            problems.append("input count must be an integer with a minimum of at least 1.")
        if count.get("maximum", MAX_COUNT + 1) > MAX_COUNT:
            problems.append(f"input count must have a maximum of at most {MAX_COUNT}.")
        if count.get("default") != params.get("count", DEFAULT_COUNT):
            problems.append("input count's default must be the params' count.")
    return problems


class ImageGenerateEngine(Engine):
    """Images from the configured provider for a tool's own prompt (see the module docstring)."""

    name = "images.generate"
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["prompt"],
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "pattern": llm.TEMPLATE_PATTERN},
            "style": {"type": "string", "maxLength": 500},
            "negative": {"type": "string", "maxLength": 500},
            "size": {"type": "string", "pattern": SIZE_PATTERN, "default": DEFAULT_SIZE},
            "count": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_COUNT,
                "default": DEFAULT_COUNT,
            },
        },
    }

    def waits_on_network(self) -> bool:
        return True  # a provider only: without one, its runs are refused before they queue

    def unavailable_reason(self) -> str | None:
        return chain.unavailable_reason(chain.IMAGES)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        return generate(inputs, params)


ENGINES = (ImageGenerateEngine(),)
