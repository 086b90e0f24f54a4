"""The ``llm.chat`` engine: model-backed text tools, each with its own prompt and output format.

A tool's params hold its system prompt and a prompt template whose ``{field}`` placeholders
are filled from the tool's validated inputs. Values are inserted once, as they are: a value
such as ``{__class__}`` stays literal text, and a template may only name plain fields (no
attribute or index access, conversions or format specs; ``{{`` and ``}}`` are literal braces).

The answer comes from the text generation chain (``engines.models.chain``: the configured
provider, then the embedded model) and is shaped by ``format``: ``text`` and ``markdown`` give
``{"text"}``, ``list`` gives ``{"items"}`` (parsed from bullet or numbered lines), ``json``
gives the JSON object the model wrote. A json tool's model is held to its output schema (a
grammar, on the embedded model), and so is a list tool's on the embedded model.

The embedded model's answer must also pass the checks (``engines.models.checks``): it does
not loop, and it passes the tool's own ``checks``. (A configured provider is the model the
operator chose: its answers are held to the format and schema alone, as they always were.)
An answer that cannot be shaped or fails a check is asked for once more: a provider is told
what was wrong; the embedded model is asked again afresh, sampled cooler and with stronger
penalties against repetition (its context is too small to hold the failed answer too). A
second failure is ProviderUnavailable("the model returned malformed output"), or, when the
embedded model wrote it, ModelUnfit: the run is refused rather than answered with an output
that is not fit to use.
"""

from __future__ import annotations

import json
import logging
import re
import string
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator

from engines.base import Engine, ModelUnfit, ProviderUnavailable, ToolSpec, text_listener
from engines.models import chain, checks
from engines.models.providers import Completion

log = logging.getLogger(__name__)

FORMATS = ("text", "markdown", "json", "list")
DEFAULT_FORMAT = "text"
DEFAULT_TEMPERATURE = 0.7
DEFAULT_MAX_TOKENS = 800

# Literal text, doubled braces, or a placeholder naming one field.
TEMPLATE_PATTERN = r"^(?:[^{}]|\{\{|\}\}|\{[A-Za-z_][A-Za-z0-9_]*\})*$"

_INSTRUCTIONS = {
    "text": "Answer in plain text, without Markdown formatting.",
    "markdown": "Format the answer in Markdown.",
    "list": (
        'Answer with a list: one item per line, each line starting with "- ". '
        "Write nothing before or after the list."
    ),
    "json": "Answer with a single JSON object and nothing else: no prose, no code fences.",
}
_REPAIRS = {
    "text": "Your answer was empty. Answer the request again.",
    "markdown": "Your answer was empty. Answer the request again.",
    "list": 'Your answer had no list items. Reply again with only the list, one "- " item a line.',
    "json": "Your answer was not a valid JSON object{detail}. Reply again with only the object.",
}
MALFORMED = "the model returned malformed output"

_BULLET_RE = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)]|\(\d{1,3}\)|[a-zA-Z][.)])\s+(?P<item>.*\S)")
_FENCE_RE = re.compile(r"^```[\w-]*\n(?P<body>.*)\n```$", re.DOTALL)


class MalformedOutput(Exception):
    """The model's answer does not have the requested shape; ``detail`` says how."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail)
        self.detail = detail


class FailedChecks(MalformedOutput):
    """The answer has the shape but fails the checks; ``detail`` says which."""


# --- the prompt template -----------------------------------------------------------------


def placeholders(template: str) -> list[str]:
    """The field names a template uses, in order; ValueError for anything but plain names."""
    names = []
    for _literal, field, spec, conversion in string.Formatter().parse(template):
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise ValueError(
                f"Placeholder {{{field}{'!' + conversion if conversion else ''}"
                f"{':' + spec if spec else ''}}} must name a single input field."
            )
        names.append(field)
    return names


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(_as_text(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def render(template: str, values: Mapping[str, Any]) -> str:
    """Fill a template's placeholders with ``values`` (each inserted once, never re-parsed).

    Raises ValueError when the template names a field ``values`` lacks (a catalogue bug that
    ``check_params`` finds before any run).
    """
    parts = []
    for literal, field, spec, conversion in string.Formatter().parse(template):
        parts.append(literal)
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise ValueError(f"Placeholder {{{field}}} must name a single input field.")
        if field not in values:
            raise ValueError(f"The prompt names {{{field}}}, which is not an input of the tool.")
        parts.append(_as_text(values[field]))
    return "".join(parts)


def check_params(
    params: Mapping[str, Any],
    inputs: Mapping[str, Any],
    output: Mapping[str, Any] | None = None,
) -> list[str]:
    """Problems of a tool's params beyond ``params_schema``: placeholders that are not
    inputs, and (given the ``output`` schema) checks that name no input or output."""
    found = []
    if output is not None and params.get("checks"):
        found = checks.check_declared(params["checks"], inputs, output)
    try:
        names = placeholders(params.get("prompt", ""))
    except ValueError as error:
        return [str(error), *found]
    known = set(inputs.get("properties", {}))
    return [
        f"prompt placeholder {{{name}}} is not an input field."
        for name in dict.fromkeys(names)
        if name not in known
    ] + found


# --- shaping the answer ------------------------------------------------------------------


def parse_list(text: str) -> list[str]:
    """Items of a bullet or numbered list; without any, the non-empty lines."""
    lines = [line for line in text.splitlines() if line.strip()]
    bullets = [match.group("item").strip() for line in lines if (match := _BULLET_RE.match(line))]
    if bullets:
        return bullets
    return [line.strip() for line in lines if not line.strip().startswith("```")]


def _balanced_objects(text: str):
    """Each balanced ``{...}`` span in ``text`` (strings and escapes respected), in order."""
    start = text.find("{")
    while start != -1:
        depth = 0
        in_string = False
        escaped = False
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    yield text[start : index + 1]
                    break
        start = text.find("{", start + 1)


def extract_json_object(text: str) -> dict[str, Any]:
    """The first balanced ``{...}`` in ``text`` that parses as a JSON object."""
    for candidate in _balanced_objects(text):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise MalformedOutput()


def _strip_fence(text: str) -> str:
    match = _FENCE_RE.match(text)
    return match.group("body").strip() if match else text


def _json_items(text: str) -> list[str] | None:
    """The items of a list answer written as ``{"items": [...]}`` (the embedded model's,
    held to the output schema), else None."""
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    items = value.get("items") if isinstance(value, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        return None
    return [item.strip() for item in items if item.strip()]


def shape(answer: str, format: str, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The tool output for ``answer``; MalformedOutput when it does not have the shape."""
    text = answer.strip()
    if format == "json":
        value = extract_json_object(text)
        if schema is not None:
            error = next(iter(Draft202012Validator(schema).iter_errors(value)), None)
            if error is not None:
                where = ".".join(str(p) for p in error.absolute_path) or "the object"
                raise MalformedOutput(f" matching the schema ({where}: {error.message})")
        return value
    if format == "list":
        items = _json_items(text)
        if items is None:
            items = parse_list(text)
        if not items:
            raise MalformedOutput()
        return {"items": items}
    if format == "markdown":
        text = _strip_fence(text)
    if not text:
        raise MalformedOutput()
    return {"text": text}


# --- the engine --------------------------------------------------------------------------


def generate(
    inputs: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    output_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run one model-backed tool: render the prompt, ask the chain, shape and check the answer.

    With ``output_schema`` (json format), the model is asked for an object matching it (a
    provider or the embedded model that supports JSON schemas constrains its output to it)
    and an answer that does not match is repaired like a malformed one.
    """
    format = params.get("format", DEFAULT_FORMAT)
    messages: list[dict[str, Any]] = [
        system_message(params["system"], format),
        {"role": "user", "content": render(params["prompt"], inputs)},
    ]
    return converse(messages, params, output_schema=output_schema, inputs=inputs)


def system_message(system: str, format: str) -> dict[str, Any]:
    """The system message: the tool's own prompt, then how to write ``format``."""
    return {"role": "system", "content": f"{system.strip()}\n\n{_INSTRUCTIONS[format]}"}


def _json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": dict(schema)}}


def accept(
    answer: Completion,
    params: Mapping[str, Any],
    *,
    output_schema: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The tool output for ``answer``, the embedded model's once it passed the checks (see
    the module docstring); MalformedOutput when it cannot be shaped, FailedChecks when it
    fails a check."""
    format = params.get("format", DEFAULT_FORMAT)
    if answer.embedded and (
        answer.finish_reason == "loop" or checks.looping(answer.text, truncated=answer.truncated)
    ):
        raise FailedChecks("repeats itself in a loop")
    output = shape(answer.text, format, output_schema if format == "json" else None)
    if answer.embedded and (
        found := checks.problems(output, inputs or {}, params.get("checks") or {})
    ):
        raise FailedChecks("; ".join(found))
    return output


def converse(
    messages: list[dict[str, Any]],
    params: Mapping[str, Any],
    *,
    output_schema: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Ask the chain for ``messages``, then shape and check the answer by ``params`` (its
    format and checks; ``inputs``: what the checks compare with); an answer that fails is
    asked for once more (see the module docstring)."""
    format = params.get("format", DEFAULT_FORMAT)
    temperature = float(params.get("temperature", DEFAULT_TEMPERATURE))
    max_tokens = int(params.get("max_tokens", DEFAULT_MAX_TOKENS))
    response_format: dict[str, Any] | None = None
    if format == "json":
        response_format = (
            _json_schema(output_schema) if output_schema is not None else {"type": "json_object"}
        )
    # The embedded model is held to a list tool's schema too: a provider writes plain lines.
    held = _json_schema(output_schema) if format == "list" and output_schema else response_format
    # A run's followers read free text as it is written. What they read is final only once
    # it has passed the checks: an answer asked for again restarts their text, and one
    # refused in the end fails the run (``done`` never comes with text that did not pass).
    listener = text_listener() if format in ("text", "markdown") else None
    options = {"max_tokens": max_tokens, "response_format": response_format, "on_text": listener}
    answer = chain.reply(messages, temperature=temperature, **options, embedded_format=held)
    try:
        return accept(answer, params, output_schema=output_schema, inputs=inputs)
    except MalformedOutput as malformed:
        failed = malformed
    if answer.embedded:
        log.warning("The embedded model's answer %s: asked again.", _said(failed, format))
        answer = chain.insist_embedded(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            response_format=held,
            on_text=listener,
        )
    else:
        repair = _REPAIRS[format].format(detail=failed.detail)
        messages = [
            *messages,
            {"role": "assistant", "content": answer.text},
            {"role": "user", "content": repair},
        ]
        if listener is not None:
            listener.restart()
        answer = chain.reply(
            messages, temperature=min(temperature, 0.2), **options, embedded_format=held
        )
    try:
        return accept(answer, params, output_schema=output_schema, inputs=inputs)
    except MalformedOutput as malformed:
        if answer.embedded:
            log.warning("The embedded model's answer %s again: refused.", _said(malformed, format))
            raise ModelUnfit() from None
        raise ProviderUnavailable(MALFORMED) from None


def _said(failed: MalformedOutput, format: str) -> str:
    """What was wrong with an answer, for the log."""
    if isinstance(failed, FailedChecks):
        return failed.detail
    return f"is not a valid {format} answer{failed.detail}"


class LlmChatEngine(Engine):
    """A text model answering a tool's own prompt (see the module docstring)."""

    name = "llm.chat"
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["system", "prompt"],
        "properties": {
            "system": {"type": "string", "minLength": 1},
            "prompt": {"type": "string", "minLength": 1, "pattern": TEMPLATE_PATTERN},
            "format": {"enum": list(FORMATS), "default": DEFAULT_FORMAT},
            "temperature": {
                "type": "number",
                "minimum": 0,
                "maximum": 2,
                "default": DEFAULT_TEMPERATURE,
            },
            "max_tokens": {
                "type": "integer",
                "minimum": 1,
                "maximum": 8192,
                "default": DEFAULT_MAX_TOKENS,
            },
            "checks": checks.CHECKS_SCHEMA,
        },
    }

    def unavailable_reason(self) -> str | None:
        return chain.unavailable_reason(chain.TEXT)

    def best_with_provider(self) -> bool:
        return chain.embedded_only()

    def waits_on_network(self) -> bool:
        return chain.provider_first()

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        return generate(inputs, params)

    def run_tool(self, tool: ToolSpec, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run ``tool`` with its output schema, which json tools hold their model to."""
        return generate(inputs, tool.params, output_schema=tool.output)


ENGINES = (LlmChatEngine(),)
