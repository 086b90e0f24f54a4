"""Catalogue search for API clients (``GET /v1/tools?q=``) with the assistant's retriever."""

from __future__ import annotations

from catalogue import Tool
from services.assistant import current_index
from services.assistant.answers import has_evidence


def search_tools(query: str, tools: list[Tool], *, limit: int) -> list[Tool]:
    """The tools of ``tools`` that match ``query``, best first (a tool named exactly
    first), at most ``limit``; none when nothing matches well enough (the assistant's
    evidence threshold)."""
    by_id = {f"tool:{tool.slug}": tool for tool in tools}
    result = current_index().search(query, limit=limit, keep=lambda d: d.id in by_id)
    if not has_evidence(result):
        return []
    return [by_id[hit.document.id] for hit in result.hits]
