"""Catalogue search for API clients (``GET /v1/tools?q=``, the MCP endpoint's
``search_tools``) with the assistant's retriever."""

from __future__ import annotations

from collections.abc import Iterable

from catalogue import Tool, Workflow
from services.assistant import current_index
from services.assistant.answers import has_evidence


def search_tools(query: str, tools: list[Tool], *, limit: int) -> list[Tool]:
    """The tools of ``tools`` that match ``query``, best first (a tool named exactly
    first), at most ``limit``; none when nothing matches well enough (the assistant's
    evidence threshold)."""
    return search_catalogue(query, tools, (), limit=limit)


def search_catalogue(
    query: str, tools: Iterable[Tool], workflows: Iterable[Workflow], *, limit: int
) -> list[Tool | Workflow]:
    """The tools and workflows (of those given) that match ``query``, best first, at most
    ``limit``; none when nothing matches well enough."""
    by_id: dict[str, Tool | Workflow] = {f"tool:{tool.slug}": tool for tool in tools}
    by_id.update((f"workflow:{workflow.id}", workflow) for workflow in workflows)
    result = current_index().search(query, limit=limit, keep=lambda d: d.id in by_id)
    if not has_evidence(result):
        return []
    return [by_id[hit.document.id] for hit in result.hits]
