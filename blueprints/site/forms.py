"""A tool's run form, made from its input JSON Schema, and the form's values read back as the
typed inputs the run takes (validated afterwards by the same code as the API's:
services/inputs.py).

Enums become selects (checkboxes for a list of enum values), bounds become min/max, booleans
checkboxes, lists of text one item per line, objects and lists of objects JSON, file fields
uploads with ``accept`` and the size limit. The primary field comes first, then the other
required ones; the rest are "advanced".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from flask import current_app, g, session
from flask_wtf.csrf import generate_csrf
from itsdangerous import URLSafeTimedSerializer
from werkzeug.datastructures import FileStorage, MultiDict

from catalogue import Tool
from catalogue.tool import MAX_FILE_BYTES

# File types whose usual name is not their media subtype in capitals.
_TYPE_NAMES = {
    "jpeg": "JPEG",
    "webp": "WebP",
    "mpeg": "MP3",
    "openxmlformats-officedocument.wordprocessingml.document": "DOCX",
    "epub+zip": "EPUB",
    "plain": "text",
    "quicktime": "MOV",
    "matroska": "MKV",
    "icon": "ICO",
}
# A text field is a textarea when it may be longer than this (or has no limit).
_SHORT_TEXT = 120


@dataclass(frozen=True)
class Option:
    value: str
    label: str


@dataclass(frozen=True)
class FormField:
    name: str
    label: str
    # text, textarea, number, checkbox, select, checkboxes, lines, json, file
    kind: str
    description: str
    required: bool
    advanced: bool
    nullable: bool
    default: Any = None
    options: tuple[Option, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    step: str | None = None
    max_length: int | None = None
    accept: str | None = None
    # For number fields: "integer" or "number".
    number_type: str | None = None
    multiple: bool = False
    # For a select over integers: the values to read back.
    typed_options: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"field-{self.name}"

    @property
    def accept_label(self) -> str:
        """The accepted file types as people name them: "PNG, JPEG, WebP" or "any image"."""
        names = []
        for media_type in (self.accept or "").split(","):
            kind, _, subtype = media_type.strip().partition("/")
            if subtype == "*":
                name = f"any {kind}"
            else:
                subtype = subtype.removeprefix("x-").removeprefix("vnd.")
                name = _TYPE_NAMES.get(subtype, subtype.split(".")[-1].split("+")[0].upper())
            if name not in names:
                names.append(name)
        return ", ".join(names)

    @property
    def size_limit(self) -> str:
        return f"{MAX_FILE_BYTES // (1024 * 1024)} MB"

    def shown(self, value: Any) -> Any:
        """``value`` (a typed input) as this field shows it."""
        if value is None:
            return ""
        if self.kind == "checkbox":
            return bool(value)
        if self.kind == "checkboxes":
            return [str(item) for item in value] if isinstance(value, list) else []
        if self.kind == "lines":
            return "\n".join(str(item) for item in value) if isinstance(value, list) else value
        if self.kind == "json":
            return value if isinstance(value, str) else json.dumps(value, indent=2)
        if self.kind == "file":
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)


def _types(spec: dict) -> list[str]:
    kind = spec.get("type", "string")
    return [kind] if isinstance(kind, str) else list(kind)


def field_label(name: str) -> str:
    """A field's name as people read it: ``duration_s`` → "Duration (seconds)"."""
    text = str(name).replace("_", " ").strip()
    for suffix, unit in ((" s", " (seconds)"), (" kbps", " (kbit/s)"), (" px", " (px)")):
        if text.endswith(suffix):
            text = text[: -len(suffix)] + unit
    return text[:1].upper() + text[1:]


def _number_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _field(tool: Tool, name: str, spec: dict, required: bool) -> FormField:
    types = _types(spec)
    nullable = "null" in types
    main = next((t for t in types if t != "null"), "string")
    common = {
        "name": name,
        "label": field_label(name),
        "description": spec.get("description", ""),
        "required": required,
        "advanced": not required and name != tool.primary,
        "nullable": nullable,
        "default": spec.get("default"),
    }
    if "contentMediaType" in spec:
        accepted = tool.binary_inputs.get(name) or (spec["contentMediaType"],)
        return FormField(**common, kind="file", accept=",".join(accepted))
    if "enum" in spec:
        values = [value for value in spec["enum"] if value is not None]
        options = tuple(Option(str(value), str(value)) for value in values)
        if nullable or (not required and "default" not in spec):
            options = (Option("", "(none)"),) + options
        typed = {str(value): value for value in values}
        return FormField(**common, kind="select", options=options, typed_options=typed)
    if main == "boolean":
        return FormField(**common, kind="checkbox")
    if main in ("integer", "number"):
        integer = main == "integer"
        return FormField(
            **common,
            kind="number",
            number_type=main,
            minimum=spec.get("minimum"),
            maximum=spec.get("maximum"),
            step="1" if integer else "any",
        )
    if main == "array":
        items = spec.get("items") or {}
        if isinstance(items, dict) and "enum" in items:
            options = tuple(Option(str(value), str(value)) for value in items["enum"])
            typed = {str(value): value for value in items["enum"]}
            return FormField(**common, kind="checkboxes", options=options, typed_options=typed)
        if (
            isinstance(items, dict)
            and _types(items) == ["string"]
            and "contentMediaType" not in items
        ):
            return FormField(**common, kind="lines")
        return FormField(**common, kind="json")
    if main == "object":
        return FormField(**common, kind="json")
    limit = spec.get("maxLength")
    long = name == tool.primary or limit is None or limit > _SHORT_TEXT
    return FormField(**common, kind="textarea" if long else "text", max_length=limit)


def form_fields(tool: Tool) -> list[FormField]:
    """The tool's form, primary field first, then the required ones, then the advanced."""
    properties = tool.inputs.get("properties", {})
    required = set(tool.inputs.get("required", ()))
    fields = [
        _field(tool, name, spec, name in required or name == tool.primary)
        for name, spec in properties.items()
        if isinstance(spec, dict)
    ]
    return sorted(fields, key=lambda f: (f.name != tool.primary, f.advanced))


@dataclass
class ReadForm:
    """A submitted form: the typed inputs, the uploads, the errors of values that could not
    be typed, and what was typed (to show the form again as it was sent)."""

    body: dict[str, Any]
    uploads: dict[str, FileStorage]
    errors: dict[str, list[str]]
    shown: dict[str, Any]


def read_form(fields: list[FormField], form: MultiDict, files: MultiDict) -> ReadForm:
    """The run's inputs from a submitted form. An empty optional field is left out (its
    default applies), or null where null is what empty means."""
    read = ReadForm({}, {}, {}, {})
    for spec in fields:
        name = spec.name
        if spec.kind == "file":
            upload = files.get(name)
            if upload is not None and upload.filename:
                read.uploads[name] = upload
            continue
        if spec.kind == "checkbox":
            values = form.getlist(name)
            if values:
                read.body[name] = values[-1] == "true"
                read.shown[name] = read.body[name]
            continue
        if spec.kind == "checkboxes":
            chosen = [value for value in form.getlist(name) if value in spec.typed_options]
            read.shown[name] = chosen
            if chosen or name in form or f"{name}.present" in form:
                read.body[name] = [spec.typed_options[value] for value in chosen]
            continue
        raw = form.get(name)
        if raw is None:
            continue
        read.shown[name] = raw
        if raw.strip() == "" and not (spec.kind in ("text", "textarea") and spec.required):
            if spec.nullable:
                read.body[name] = None
            continue
        try:
            read.body[name] = _typed(spec, raw)
        except ValueError as error:
            read.errors[name] = [str(error)]
    return read


def _typed(spec: FormField, raw: str) -> Any:
    if spec.kind == "select":
        if raw not in spec.typed_options:
            raise ValueError("Choose one of the listed values.")
        return spec.typed_options[raw]
    if spec.kind == "number":
        try:
            number = float(raw.strip())
        except ValueError:
            raise ValueError(
                "Must be a whole number." if spec.number_type == "integer" else "Must be a number."
            ) from None
        if not math.isfinite(number):
            raise ValueError("Must be a finite number.")
        if spec.number_type == "integer":
            if not number.is_integer():
                raise ValueError("Must be a whole number.")
            return int(number)
        return number
    if spec.kind == "lines":
        return [line.strip() for line in raw.splitlines() if line.strip()]
    if spec.kind == "json":
        try:
            return json.loads(raw)
        except ValueError:
            raise ValueError("Must be JSON (see the field's description).") from None
    return raw.replace("\r\n", "\n")


def example_values(tool: Tool) -> dict[str, Any]:
    """The first example's inputs, as the form shows them (files are not filled)."""
    if not tool.examples:
        return {}
    example = dict(tool.examples[0].get("input") or {})
    if "input" in example:
        example[tool.primary] = example.pop("input")
    return example


def csrf_token() -> str:
    """Flask-WTF's CSRF token for this session, as ``generate_csrf`` makes it (the same
    salt and serializer, so Flask-WTF's check accepts it), signed once per session token
    and process rather than on every page: the site sets no time limit on its tokens
    (``WTF_CSRF_TIME_LIMIT`` None), so a token signed earlier stays as good. A session
    without a token yet gets one from Flask-WTF itself."""
    config = current_app.config
    field = config.get("WTF_CSRF_FIELD_NAME", "csrf_token")
    if field not in g and field in session and config.get("WTF_CSRF_TIME_LIMIT") is None:
        secret = config.get("WTF_CSRF_SECRET_KEY") or current_app.secret_key
        setattr(g, field, _signed_token(secret, session[field]))
    return generate_csrf()


@lru_cache(maxsize=4096)
def _signed_token(secret_key: str, raw: str) -> str:
    return URLSafeTimedSerializer(secret_key, salt="wtf-csrf-token").dumps(raw)
