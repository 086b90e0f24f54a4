"""A key's MCP selection: the tools its AI agents' clients are shown when they name none
(``POST /v1/mcp`` without ``?tools=``; docs/api/mcp.md), set on the key's page."""

from __future__ import annotations

from flask import current_app, flash, redirect, request

from blueprints.api.mcp.toolset import MAX_SELECTION_TEXT, SelectionError, read_selection
from blueprints.site.access import member_required
from blueprints.site.account.keys import LIST_PATH, _key_page, _managed_key, _require_api_access
from blueprints.site.routes import bp
from extensions import db


@bp.post("/account/api-keys/<key_id>/mcp")
@member_required()
def save_mcp_tools(key_id):
    """Set the key's MCP selection (empty: the default tools), checked as the endpoint
    checks ``?tools=``."""
    key = _managed_key(key_id)
    _require_api_access()
    text = " ".join((request.form.get("tools") or "").split())
    names = [name.strip() for name in text.split(",") if name.strip()]
    try:
        if len(text) > MAX_SELECTION_TEXT:
            raise SelectionError(f"At most {MAX_SELECTION_TEXT} characters.")
        toolset = read_selection(",".join(names), current_app.extensions["catalogue"])
    except SelectionError as wrong:
        return _key_page(key, 422, errors={"tools": str(wrong)}, values={"tools": text})
    key.mcp_tools = ",".join(toolset.selected) or None
    db.session.commit()
    if key.mcp_tools:
        flash(f"MCP clients of this key now see {len(toolset.selected)} tools.", "success")
    else:
        flash("MCP clients of this key now see the default tools.", "success")
    return redirect(f"{LIST_PATH}{key.id}/#mcp-title", 303)
