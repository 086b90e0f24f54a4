"""A tool as data (``Tool``), the whole catalogue (``Catalogue``) and their vocabularies."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator, ValidationError

import engines

CATEGORIES = (
    "text-generation",
    "seo",
    "social-marketing",
    "image-generation",
    "image-understanding",
    "image-editing",
    "ocr",
    "transcription",
    "voice-audio",
    "video",
    "audiobook",
    "document-summarizing",
    "code-helpers",
    "writing-analysis",
)
CREDIT_CLASSES = {"fast_text": 1, "premium_text": 2, "image": 5, "audio": 5, "video": 10}
TOOL_PLANS = ("pro", "creator", "business", "agency")
# Binary fields (docs/architecture/files.md): an input property with ``contentMediaType``
# takes a file as a URL, a data: URI, base64 or a multipart upload (``x-accept`` may list
# several types); an output property with ``contentMediaType`` is a stored file answered as
# a URL.
MAX_FILE_BYTES = 25 * 1024 * 1024
# The longest string that can carry MAX_FILE_BYTES (base64 in a data: URI).
MAX_FILE_CHARS = 36 * 1024 * 1024


def file_schema(media_type: str) -> dict[str, Any]:
    """The JSON Schema of a stored file in a tool's output."""
    return {
        "type": "object",
        "contentMediaType": media_type,
        "additionalProperties": False,
        "required": ["id", "url", "content_type", "size"],
        "properties": {
            "id": {"type": "string"},
            "url": {"type": "string", "format": "uri"},
            "content_type": {"type": "string"},
            "size": {"type": "integer", "minimum": 0},
            "filename": {"type": ["string", "null"]},
        },
    }


# Every plan includes the tools of the plans before it.
_PLAN_ORDER = ("free", "starter", *TOOL_PLANS)
_PLAN_RANK = {plan: rank for rank, plan in enumerate(_PLAN_ORDER)}

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


@dataclass(frozen=True, eq=False)
class Tool:
    """One tool of the catalogue. Build it through ``load_catalogue``, which checks it."""

    slug: str
    name: str
    category: str
    summary: str
    required_plan: str
    credit_class: str
    inputs: dict[str, Any]
    primary: str
    output: dict[str, Any]
    engine: str
    params: dict[str, Any]
    queue: bool
    examples: list[dict[str, Any]]
    _validator: Draft202012Validator = field(init=False, repr=False)
    _defaults: dict[str, Any] = field(init=False, repr=False)
    # Binary input fields and the media types each accepts.
    binary_inputs: dict[str, tuple[str, ...]] = field(init=False, repr=False)
    # Whether its output may hold a file (a field with a media type, at any depth).
    makes_files: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Built once per tool: validate() runs on every API request.
        object.__setattr__(self, "_validator", Draft202012Validator(self.inputs))
        defaults = {
            name: spec["default"]
            for name, spec in self.inputs.get("properties", {}).items()
            if isinstance(spec, dict) and "default" in spec
        }
        object.__setattr__(self, "_defaults", defaults)
        binary = {}
        for name, spec in self.inputs.get("properties", {}).items():
            # A file field, or a list of files (an array of file fields).
            if isinstance(spec, dict) and spec.get("type") == "array":
                spec = spec.get("items")
            if isinstance(spec, dict) and "contentMediaType" in spec:
                binary[name] = tuple(spec.get("x-accept") or [spec["contentMediaType"]])
        object.__setattr__(self, "binary_inputs", binary)
        object.__setattr__(self, "makes_files", _has_media_type(self.output))

    @property
    def credits(self) -> int:
        return CREDIT_CLASSES[self.credit_class]

    @property
    def available(self) -> bool:
        return engines.get_engine(self.engine).available()

    @property
    def unavailable_reason(self) -> str | None:
        return engines.get_engine(self.engine).unavailable_reason()

    @property
    def best_with_provider(self) -> bool:
        """It runs here on the embedded text model alone (``Engine.best_with_provider``)."""
        return engines.get_engine(self.engine).best_with_provider()

    def validate(self, data: Any) -> dict[str, list[str]]:
        """Return field errors of ``data`` against the input schema; empty when it is valid.

        Keys are field names (a dotted path below the top level, "" for the body itself).
        """
        if self._quick_check is not None:
            try:
                self._quick_check(data)
                return {}
            except fastjsonschema.JsonSchemaException:
                pass  # jsonschema names every error (and has the last word)
        return self._errors(data)

    def _errors(self, data: Any) -> dict[str, list[str]]:
        errors: dict[str, list[str]] = {}
        for error in self._validator.iter_errors(data):
            for key, message in _field_errors(error):
                messages = errors.setdefault(key, [])
                if message not in messages:
                    messages.append(message)
        return errors

    @cached_property
    def _quick_check(self) -> Callable[[Any], Any] | None:
        """The input schema compiled to Python by fastjsonschema, when it only uses keywords
        that mean the same in draft 7 (which fastjsonschema knows) and 2020-12: valid input,
        the usual case on every run request, is then accepted in about a microsecond instead
        of jsonschema's 15 to 20. Compiled on first use (about a millisecond a tool)."""
        if not _same_in_draft_7(self.inputs):
            return None
        draft_7 = {**self.inputs, "$schema": "http://json-schema.org/draft-07/schema#"}
        try:
            # Formats are annotations in jsonschema without a format checker, as here.
            return fastjsonschema.compile(
                draft_7, use_default=False, use_formats=False, detailed_exceptions=False
            )
        except Exception:  # noqa: BLE001 - such a schema is simply checked by jsonschema alone
            # Seen: a pattern with "$" in a character class (fastjsonschema rewrites "$" as
            # "\Z"), and "const" under "not" with short exceptions (a bug of its own).
            return None

    def with_defaults(self, data: dict[str, Any]) -> dict[str, Any]:
        """Return ``data`` completed with the default of every missing optional field."""
        filled = dict(data)
        for name, default in self._defaults.items():
            if name not in filled:
                filled[name] = (
                    copy.deepcopy(default) if isinstance(default, list | dict) else default
                )
        return filled

    def sample_output(self) -> dict[str, Any]:
        """The first example's output, for sandbox keys; the caller may change it."""
        return copy.deepcopy(self.examples[0]["output"])

    def to_public(self) -> dict[str, Any]:
        """The tool as the API's catalogue shows it (a fresh JSON-able dict)."""
        engine = engines.get_engine(self.engine)
        reason = engine.unavailable_reason()
        return {
            "slug": self.slug,
            "name": self.name,
            "category": self.category,
            "summary": self.summary,
            "required_plan": self.required_plan,
            "credit_class": self.credit_class,
            "credits": self.credits,
            "queue": self.queue,
            "input_schema": copy.deepcopy(self.inputs),
            "primary_field": self.primary,
            "output_schema": copy.deepcopy(self.output),
            "examples": copy.deepcopy(self.examples),
            "available": reason is None,
            "unavailable_reason": reason,
            "best_with_provider": reason is None and engine.best_with_provider(),
        }


# Keywords whose meaning is the same in JSON Schema draft 7 and 2020-12 (annotations
# included; ``x-`` extensions are annotations too). Only keywords the catalogue uses, so
# that the differential test in tests/catalogue/test_tool.py covers each of them.
_SAME_IN_DRAFT_7 = frozenset(
    {
        "type", "enum", "const", "properties", "required", "additionalProperties",
        "minLength", "maxLength", "pattern", "minimum", "maximum", "items", "minItems",
        "maxItems", "uniqueItems", "not", "description", "default", "contentMediaType",
    }
)  # fmt: skip


def _same_in_draft_7(schema: Any) -> bool:
    """Whether ``schema`` validates the same under draft 7 as under 2020-12."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for keyword, value in schema.items():
        if keyword.startswith("x-"):
            continue
        if keyword not in _SAME_IN_DRAFT_7:
            return False
        if keyword == "properties" and not all(map(_same_in_draft_7, value.values())):
            return False
        # ``items`` as a list is draft 7's prefixItems; only the one-schema form agrees.
        if keyword in ("items", "not", "additionalProperties") and not _same_in_draft_7(value):
            return False
    return True


def _path(parts: Any) -> str:
    return ".".join(str(part) for part in parts)


def _field_errors(error: ValidationError) -> list[tuple[str, str]]:
    """Turn one jsonschema error into (field, human message) pairs."""
    path = list(error.absolute_path)
    key = _path(path)
    kind = error.validator
    value = error.validator_value
    instance = error.instance
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = set(error.schema.get("properties", {}))
        return [(_path([*path, name]), "Unknown field.") for name in instance if name not in known]
    if kind == "required" and isinstance(instance, dict):
        return [
            (_path([*path, name]), "Missing required field.")
            for name in value
            if name not in instance
        ]
    if kind == "type":
        types = [value] if isinstance(value, str) else list(value)
        return [(key, f"Must be {' or '.join(_TYPE_NAMES.get(t, t) for t in types)}.")]
    messages = {
        "maxLength": lambda: f"Longer than {value} characters.",
        "minLength": lambda: (
            "Must not be empty." if value == 1 else f"Shorter than {value} characters."
        ),
        "pattern": lambda: "Must not be blank." if value == r"\S" else f"Must match {value}.",
        "maximum": lambda: f"Must be at most {value}.",
        "minimum": lambda: f"Must be at least {value}.",
        "exclusiveMaximum": lambda: f"Must be less than {value}.",
        "exclusiveMinimum": lambda: f"Must be greater than {value}.",
        "enum": lambda: "Must be one of: " + ", ".join(str(v) for v in value) + ".",
        "const": lambda: f"Must be {value}.",
        "maxItems": lambda: f"Must have at most {value} items.",
        "minItems": lambda: f"Must have at least {value} items.",
        "uniqueItems": lambda: "Must not contain duplicates.",
    }
    make = messages.get(kind)
    return [(key, make() if make else error.message[:1].upper() + error.message[1:] + ".")]


@dataclass(frozen=True)
class Catalogue:
    """Every tool, by slug (sorted)."""

    tools: dict[str, Tool]
    _categories: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        used = {tool.category for tool in self.tools.values()}
        object.__setattr__(self, "_categories", tuple(c for c in CATEGORIES if c in used))

    def get(self, slug: str) -> Tool | None:
        return self.tools.get(slug)

    def categories(self) -> tuple[str, ...]:
        """The categories that have at least one tool, in ``CATEGORIES`` order."""
        return self._categories

    def filter(self, category: str | None = None, plan: str | None = None) -> list[Tool]:
        """Tools of ``category`` that ``plan`` may run, sorted by slug.

        Raises ValueError for an unknown category or plan; free and starter get no tools.
        """
        if category is not None and category not in CATEGORIES:
            raise ValueError(f"Unknown category {category!r}.")
        if plan is not None and plan not in _PLAN_ORDER:
            raise ValueError(f"Unknown plan {plan!r}.")
        if category is None and plan is None:
            return list(self.tools.values())
        rank = _PLAN_RANK[plan] if plan is not None else len(_PLAN_ORDER)
        return [
            tool
            for tool in self.tools.values()
            if (category is None or tool.category == category)
            and _PLAN_RANK[tool.required_plan] <= rank
        ]

    def search(
        self, q: str | None = None, category: str | None = None, plan: str | None = None
    ) -> list[Tool]:
        """Tools of ``category`` that ``plan`` may run (as ``filter``) whose name, summary or
        slug holds every word of ``q``, ignoring case: the site's /tools/ filter, as people
        type. (The API's ``GET /v1/tools?q=`` ranks by meaning instead, with the site
        assistant's retriever: services/assistant/search.py.)

        Without words in ``q``, ``filter``'s list (sorted by slug). With words, the best
        matches first: the whole query in the name (the earlier in it, the better), then
        every word in the name, then in the name or slug, then anywhere (slug order within
        each). ``q`` may be any text: only
        its first ``MAX_QUERY_CHARS`` characters and ``MAX_QUERY_WORDS`` words are read.
        Raises ValueError for an unknown category or plan.
        """
        tools = self.filter(category=category, plan=plan)
        words = query_words(q)
        if not words:
            return tools
        key = (tuple(words), category, plan)
        cached = self._searches.get(key)
        if cached is None:
            cached = self._search(words, tools, everything=category is None and plan is None)
            if len(self._searches) >= _SEARCHES_KEPT:
                self._searches.clear()
            self._searches[key] = cached
        return list(cached)

    def _search(self, words: list[str], tools: list[Tool], everything: bool) -> tuple[Tool, ...]:
        index = self._search_index
        entries = list(index.values()) if everything else [index[t.slug] for t in tools]
        # Every word somewhere: in the three fields together, which a word (it holds no
        # white space) cannot straddle.
        for word in words:
            entries = [entry for entry in entries if word in entry[3]]
        phrase = " ".join(words)
        ranked = []
        for name, slug, _, _, tool in entries:
            rank = 0 if phrase in name else 1
            for word in words:
                if word in name:
                    continue
                if word in slug:
                    rank = 2
                else:  # in the summary
                    rank = 3
                    break
            # Within the first tier, a name that starts with the query comes first ("Image
            # Resizer" before "Audio Waveform Image").
            at = name.find(phrase) if rank == 0 else 0
            ranked.append((rank, at, slug, tool))
        ranked.sort(key=lambda match: match[:3])
        return tuple(match[3] for match in ranked)

    @cached_property
    def _search_index(self) -> dict[str, tuple[str, str, str, str, Tool]]:
        """Each tool's name, slug, summary and the three together as ``search`` compares
        them (case-folded), and the tool, in slug order; built once."""
        index = {}
        for tool in self.tools.values():
            name, slug, summary = _folded(tool.name), _folded(tool.slug), _folded(tool.summary)
            index[tool.slug] = (name, slug, summary, f"{name}\n{slug}\n{summary}", tool)
        return index

    @cached_property
    def _searches(self) -> dict[tuple, tuple[Tool, ...]]:
        """The last searches' results (people search the same words, and type the same
        first letters): at most ``_SEARCHES_KEPT``, forgotten all at once past it."""
        return {}

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools.values())

    def __contains__(self, slug: object) -> bool:
        return slug in self.tools


# What ``Catalogue.search`` reads of a query: longer ones are cut, not refused.
MAX_QUERY_CHARS = 200
MAX_QUERY_WORDS = 12
_SEARCHES_KEPT = 512


def _folded(text: str) -> str:
    """``text`` as search compares it: case-folded, with runs of white space as one space."""
    return " ".join(text.casefold().split())


def query_words(q: str | None) -> list[str]:
    """The words ``Catalogue.search`` looks for in ``q`` (case-folded, each once, in order)."""
    if not q:
        return []
    words = _folded(q[:MAX_QUERY_CHARS]).split()
    return list(dict.fromkeys(words))[:MAX_QUERY_WORDS]


def _has_media_type(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "contentMediaType" in schema or any(map(_has_media_type, schema.values()))
    if isinstance(schema, list):
        return any(map(_has_media_type, schema))
    return False


# Category slugs as people read them (any other: its words, capitalized).
CATEGORY_LABELS = {
    "seo": "SEO",
    "ocr": "OCR",
    "voice-audio": "Voice and audio",
    "social-marketing": "Social media marketing",
    "document-summarizing": "Document summaries",
    "code-helpers": "Code helpers",
}


def category_label(category: str) -> str:
    """``image-editing`` → "Image editing"; see CATEGORY_LABELS."""
    return CATEGORY_LABELS.get(category) or category.replace("-", " ").capitalize()
