"""The site assistant (docs/architecture/assistant.md): hybrid retrieval over the tools,
workflows and docs (``documents``, ``retriever``), and answers from it (``answers``)."""

from __future__ import annotations

from flask import current_app

from catalogue import category_label
from services import changelog
from services.assistant import documents as _documents
from services.assistant.retriever import Index, index_for

# What each index was built from, kept so that an id is never reused for another object.
_sources: dict[str, tuple] = {}


def current_index() -> Index:
    """The index of the current app's catalogue, workflows, changelog and docs: built on
    first use, then kept for the process (every app on the same catalogue shares it)."""
    app = current_app._get_current_object()
    tools = app.extensions["catalogue"]
    workflows = app.extensions["workflows"]
    log = changelog.of_app(app)
    docs = _documents.DOCS
    key = f"{id(tools)}:{id(workflows)}:{id(log)}:{docs}"
    _sources.setdefault(key, (tools, workflows, log))

    def build():
        return _documents.build_documents(
            tools, workflows, log.entries, _documents.guide_sections(docs), category_label
        )

    return index_for(build, key)
