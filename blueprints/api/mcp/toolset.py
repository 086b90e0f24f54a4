"""The tools an MCP client is shown: by default a handful that reach the whole catalogue
(search, describe, run, read a run; the same for workflows), or a selection of catalogue
tools listed directly under their slugs, with their own input and output schemas.

Clients cap how many tools they take (VS Code and the OpenAI API at 128, Cursor at 40) and
agents choose worse among many, so hundreds of tools are never listed at once: a selection
holds at most ``MAX_SELECTED``. A list is the same for every key, so each is built once per
catalogue and kept as JSON (``list_result``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import orjson

from catalogue import CATEGORIES, Catalogue, Tool

MAX_SELECTED = 40
SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX = 8, 25
# The bytes of one selection's tool names (a query string) that are read at most.
MAX_SELECTION_TEXT = 4000

_ANY_OBJECT = {"type": "object", "additionalProperties": True}
_RUN_ID = {"type": "string", "description": "A run's id (a tool run's or a workflow run's)."}

SEARCH_TOOLS = {
    "name": "search_tools",
    "title": "Search the tools",
    "description": (
        "Find the tools and workflows that do what you need, best match first: say the task "
        "in a few words (e.g. 'summarize a PDF', 'remove image background'). Each result has "
        "its slug (or workflow id), name, summary, credits per run, the plan it needs and "
        "whether this API key can run it. Then call describe_tool for its inputs, and "
        "run_tool (or run_workflow) to run it."
    ),
    "inputSchema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["query"],
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 500},
            "category": {"type": "string", "enum": list(CATEGORIES)},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": SEARCH_LIMIT_MAX,
                "default": SEARCH_LIMIT_DEFAULT,
            },
        },
    },
    "outputSchema": {
        "type": "object",
        "required": ["results"],
        "properties": {
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["kind", "slug", "name", "summary", "credits", "plan", "can_run"],
                    "properties": {
                        "kind": {"type": "string", "enum": ["tool", "workflow"]},
                        "slug": {"type": "string"},
                        "name": {"type": "string"},
                        "summary": {"type": "string"},
                        "category": {"type": "string"},
                        "credits": {"type": "integer"},
                        "plan": {"type": "string"},
                        "can_run": {"type": "boolean"},
                        "queued": {"type": "boolean"},
                    },
                },
            }
        },
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}

DESCRIBE_TOOL = {
    "name": "describe_tool",
    "title": "Describe a tool",
    "description": (
        "A tool's (or workflow's) input and output JSON schemas, its plan and credits, and a "
        "worked example of its input and output. Call it before run_tool: the input of "
        "run_tool is an object of exactly these input fields."
    ),
    "inputSchema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["slug"],
        "properties": {
            "slug": {"type": "string", "description": "A tool's slug or a workflow's id."}
        },
    },
    "outputSchema": _ANY_OBJECT,
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}

RUN_TOOL = {
    "name": "run_tool",
    "title": "Run a tool",
    "description": (
        "Run one tool and get its output. `input` is an object of the tool's own fields "
        "(see describe_tool); a file field takes a URL, a data: URI or base64. It costs the "
        "tool's credits against this key's daily quota. A long run that is not over in time "
        "answers its run_id: read its result later with get_run."
    ),
    "inputSchema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["slug", "input"],
        "properties": {
            "slug": {"type": "string", "description": "The tool's slug (from search_tools)."},
            "input": {
                "type": "object",
                "description": "The tool's own input fields, as describe_tool gives them.",
            },
        },
    },
    "outputSchema": _ANY_OBJECT,
    "annotations": {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": True},
}

GET_RUN = {
    "name": "get_run",
    "title": "Read a run",
    "description": (
        "The state of a tool or workflow run (queued, running, succeeded, failed, canceled) "
        "and, once it has succeeded, its output: for a run that outlived the call that "
        "started it."
    ),
    "inputSchema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["run_id"],
        "properties": {"run_id": _RUN_ID},
    },
    "outputSchema": _ANY_OBJECT,
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}

RUN_WORKFLOW = {
    "name": "run_workflow",
    "title": "Run a workflow",
    "description": (
        "Run a multi-step workflow (search_tools finds them; describe_tool gives its input) "
        "and get its output. It costs the credits of its steps; a workflow that is not over "
        "in time answers its run_id: read its result later with get_run."
    ),
    "inputSchema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["workflow_id", "input"],
        "properties": {
            "workflow_id": {"type": "string"},
            "input": {"description": "The workflow's input, as describe_tool gives it."},
        },
    },
    "outputSchema": _ANY_OBJECT,
    "annotations": {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": True},
}

DEFAULT_TOOLS = (SEARCH_TOOLS, DESCRIBE_TOOL, RUN_TOOL, GET_RUN, RUN_WORKFLOW)
META_TOOLS = {tool["name"]: tool for tool in DEFAULT_TOOLS}


class SelectionError(ValueError):
    """A selection that names what is not a tool of the catalogue, or too many."""


@dataclass(frozen=True)
class Toolset:
    """What one request lists and may call: the default tools, or ``selected`` slugs."""

    selected: tuple[str, ...] = ()

    def has(self, name: str) -> bool:
        return name in self.selected if self.selected else name in META_TOOLS


def read_selection(text: str | None, catalogue: Catalogue) -> Toolset:
    """The toolset a comma-separated list of tool slugs names, and of default tools by
    their names (``get_run``, for the runs that outlive a call); none or empty: the default
    tools. SelectionError for an unknown name or more than ``MAX_SELECTED``."""
    if not text:
        return Toolset()
    names = [name.strip() for name in text[:MAX_SELECTION_TEXT].split(",") if name.strip()]
    unknown = [name for name in names if catalogue.get(name) is None and name not in META_TOOLS]
    if unknown:
        raise SelectionError(
            f"Not tools of the catalogue: {', '.join(unknown[:10])}. Name tools by their slugs "
            "(GET /v1/tools lists them), separated by commas."
        )
    selected = tuple(dict.fromkeys(names))  # in the given order, once each
    if len(selected) > MAX_SELECTED:
        raise SelectionError(
            f"{len(selected)} tools selected; at most {MAX_SELECTED} can be listed at once "
            "(clients cap their tools, and agents choose worse among many)."
        )
    return Toolset(selected)


def tool_definition(tool: Tool) -> dict:
    """A catalogue tool as an MCP tool: its slug, its own schemas."""
    plan = tool.required_plan.capitalize()
    unit = "credit" if tool.credits == 1 else "credits"
    return {
        "name": tool.slug,
        "title": tool.name,
        "description": f"{tool.summary} ({tool.credits} {unit} per run; {plan} plan.)",
        "inputSchema": copy.deepcopy(tool.inputs),
        "outputSchema": copy.deepcopy(tool.output),
        "annotations": {"readOnlyHint": False, "destructiveHint": False},
    }


# Each selection's list, built once: (the catalogue it was built from, its JSON).
_lists: dict[tuple[int, tuple[str, ...]], tuple[Catalogue, bytes]] = {}
_MAX_LISTS = 256


def list_result(toolset: Toolset, catalogue: Catalogue) -> bytes:
    """The ``tools/list`` result of ``toolset``, as JSON (built once per selection)."""
    key = (id(catalogue), toolset.selected)
    kept = _lists.get(key)
    if kept is not None and kept[0] is catalogue:
        return kept[1]
    if toolset.selected:
        tools = [
            META_TOOLS.get(name) or tool_definition(catalogue.get(name))
            for name in toolset.selected
        ]
    else:
        tools = list(DEFAULT_TOOLS)
    made = orjson.dumps({"tools": tools})
    if len(_lists) >= _MAX_LISTS:
        _lists.clear()
    _lists[key] = (catalogue, made)
    return made
