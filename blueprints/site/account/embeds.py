"""The agency's widgets, ``/account/embeds/`` (docs/architecture/agency.md).

The list with each widget's usage and the form that creates one; per widget, its snippet
(with a copy button), its settings (origins, caps, enabled, name, the key its runs use), its
runs and credits per day, rotating its public id and deleting it. services/embeds.py does
the work (the same validation and messages as ``/v1/embeds``).

Who may do what: owners and admins of an account on the Agency plan manage its widgets;
its members see them (and their usage) without any action; an account on another plan is
told what the plan includes, with an upgrade link. Another account's widget is a 404.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flask import abort, flash, g, make_response, redirect, render_template, request

from blueprints.site.access import member_required, role_at_least
from blueprints.site.routes import bp
from catalogue import load_catalogue
from extensions import db
from models import Embed
from services import embeds, keys
from services.plans import get_plan

LIST_PATH = "/account/embeds/"
MANAGERS = ("owner", "admin")
_NOT_AGENCY = (
    "Embeddable widgets are part of the Agency plan: put a tool on your clients' sites, "
    "under your brand, its runs charged to your account."
)


@dataclass(frozen=True)
class WidgetRow:
    """A widget as the pages show it."""

    id: str
    name: str
    tool: str
    tool_name: str
    origins: list[str]
    enabled: bool
    caps: str
    key: str
    key_works: bool
    today: int
    runs_30: int
    credits_30: int

    @property
    def url(self) -> str:
        return f"{LIST_PATH}{self.id}/"


def _agency() -> bool:
    return get_plan(g.account.plan_name).includes(embeds.REQUIRED_PLAN)


def _may_manage() -> bool:
    return _agency() and role_at_least(g.membership, "admin")


def _require_manager() -> None:
    if not _agency():
        abort(403, _NOT_AGENCY)
    if not role_at_least(g.membership, "admin"):
        abort(403, f"Only an owner or admin of {g.account.name} can manage its widgets.")


def _no_store(body, status: int = 200):
    response = make_response(body, status)
    response.headers["Cache-Control"] = "no-store"
    return response


def _account_embed(embed_id: str) -> Embed:
    """The current account's widget ``embed_id``, else 404."""
    embed = embeds.find(g.account.id, embed_id)
    if embed is None:
        abort(404)
    return embed


def _key_names(account_id: int) -> dict[str, str]:
    """The keys a widget may be given here (working, live), by id, as the pages name them."""
    return {key.id: f"{key.name} ({key.hint})" for key in embeds.run_keys(account_id)}


def _working_key_names(account_id: int) -> dict[str, str]:
    """Every working key by id (a widget made over the API with a sandbox key keeps it)."""
    return {
        key.id: f"{key.name} ({key.hint}{', sandbox: sample outputs' if key.sandbox else ''})"
        for key, _email in keys.working_keys(account_id)
    }


def _key_options(embed: Embed | None = None) -> list[tuple[str, str]]:
    """The live keys, and the widget's own key if it is a working sandbox key."""
    options = _key_names(g.account.id)
    if embed is not None and embed.api_key_id not in options:
        working = _working_key_names(g.account.id)
        if embed.api_key_id in working:
            options[embed.api_key_id] = working[embed.api_key_id]
    return list(options.items())


def _rows(listed: list[Embed]) -> list[WidgetRow]:
    catalogue = load_catalogue()
    working = _working_key_names(g.account.id)
    figures = embeds.totals([embed.id for embed in listed])
    rows = []
    for embed in listed:
        tool = catalogue.get(embed.tool_slug)
        today, runs_30, credits_30 = figures.get(embed.id, (0, 0, 0))
        rows.append(
            WidgetRow(
                id=embed.id,
                name=embed.name,
                tool=embed.tool_slug,
                tool_name=tool.name if tool is not None else embed.tool_slug,
                origins=list(embed.allowed_origins or []),
                enabled=embed.enabled,
                caps=f"{embed.per_minute}/min · {embed.per_visitor_daily}/visitor/day · "
                f"{embed.daily}/day",
                key=working.get(embed.api_key_id, "No working key: choose one"),
                key_works=embed.api_key_id in working,
                today=today,
                runs_30=runs_30,
                credits_30=credits_30,
            )
        )
    return rows


def _tools() -> list:
    """The tools a widget may run on this account's plan, by name."""
    plan = get_plan(g.account.plan_name)
    return sorted(
        (
            tool
            for tool in load_catalogue()
            if plan.includes(tool.required_plan) and embeds.embeddable_reason(tool) is None
        ),
        key=lambda tool: tool.name.lower(),
    )


def _tool_label(tool) -> str:
    """A tool as the picker names it: queued tools (they take a while) say so."""
    return f"{tool.name} (queued)" if tool.queue else tool.name


def _form_values(form, *, creating: bool) -> dict:
    """What the form sent, as services/embeds.clean takes it: the origins one per line
    (or separated by spaces or commas), the caps as text, enabled a checkbox."""
    origins = form.get("allowed_origins", "")
    values = {
        "name": form.get("name", ""),
        "allowed_origins": [part for part in re.split(r"[\s,]+", origins) if part],
    }
    if creating:
        values["tool"] = form.get("tool", "")
    for name in embeds.CAPS:
        text = form.get(name, "").strip()
        if text or not creating:
            values[name] = text
    if not creating:
        values["enabled"] = form.getlist("enabled")[-1:] == ["true"]
    return values


def _errors(refused: embeds.EmbedRefused) -> dict[str, str]:
    return {name: " ".join(messages) for name, messages in refused.errors.items()}


def _chosen_key(errors: dict[str, str], embed: Embed | None = None) -> str | None:
    key_id = request.form.get("api_key_id", "")
    if key_id not in dict(_key_options(embed)):
        errors["api_key_id"] = "Choose one of the account's live keys."
        return None
    return key_id


# --- the list -----------------------------------------------------------------------------


def _list_page(status: int = 200, *, errors: dict | None = None, values: dict | None = None):
    listed = embeds.of_account(g.account.id)
    page = render_template(
        "site/account/embeds.html",
        rows=_rows(listed),
        agency=_agency(),
        manage=_may_manage(),
        not_agency=_NOT_AGENCY,
        tool_options=[(tool.slug, _tool_label(tool)) for tool in _tools()] if _may_manage() else [],
        key_options=_key_options() if _may_manage() else [],
        caps=embeds.CAPS,
        cap_labels=embeds.CAP_LABELS,
        errors=errors or {},
        values=values or {},
    )
    return _no_store(page, status)


@bp.get("/account/embeds/")
@member_required()
def embeds_page():
    """The account's widgets, their usage, and the form that creates one."""
    return _list_page()


@bp.post("/account/embeds/")
@member_required()
def create_embed():
    """Create a widget (owners and admins of an Agency account)."""
    _require_manager()
    errors: dict[str, str] = {}
    key_id = _chosen_key(errors)
    try:
        values = embeds.clean(_form_values(request.form, creating=True), g.account, creating=True)
    except embeds.EmbedRefused as refused:
        errors.update(_errors(refused))
    if errors:
        return _list_page(422, errors=errors, values=request.form)
    embed = embeds.create(g.account, key_id, values)
    db.session.commit()
    flash(f"Widget {embed.name} created: paste its snippet into a page on its origins.", "success")
    return redirect(f"{LIST_PATH}{embed.id}/", 303)


# --- one widget ---------------------------------------------------------------------------


def _widget_page(embed: Embed, status: int = 200, *, errors=None, values=None):
    (row,) = _rows([embed])
    days = embeds.daily_usage(embed.id)
    page = render_template(
        "site/account/embed.html",
        row=row,
        embed=embed,
        manage=_may_manage(),
        agency=_agency(),
        not_agency=_NOT_AGENCY,
        snippet=embeds.snippet(embed),
        embed_url=embeds.embed_url(embed),
        key_options=_key_options(embed),
        caps=embeds.CAPS,
        cap_labels=embeds.CAP_LABELS,
        days=[day for day in days if day.runs],
        total_runs=sum(day.runs for day in days),
        total_credits=sum(day.credits for day in days),
        errors=errors or {},
        values=values,
    )
    return _no_store(page, status)


@bp.get("/account/embeds/<embed_id>/")
@member_required()
def embed_page(embed_id):
    """One widget: its snippet, settings and usage."""
    return _widget_page(_account_embed(embed_id))


@bp.post("/account/embeds/<embed_id>/")
@member_required()
def save_embed(embed_id):
    """Save a widget's origins, caps, state, name and key."""
    embed = _account_embed(embed_id)
    _require_manager()
    errors: dict[str, str] = {}
    key_id = _chosen_key(errors, embed)
    try:
        values = embeds.clean(_form_values(request.form, creating=False), g.account, creating=False)
    except embeds.EmbedRefused as refused:
        errors.update(_errors(refused))
    if errors:
        return _widget_page(embed, 422, errors=errors, values=request.form)
    embeds.update(embed, values)
    embeds.set_key(embed, key_id)
    db.session.commit()
    flash(f"Saved {embed.name}.", "success")
    return redirect(f"{LIST_PATH}{embed.id}/", 303)


@bp.route("/account/embeds/<embed_id>/rotate", methods=["GET", "POST"])
@member_required()
def rotate_embed(embed_id):
    """Ask to confirm (GET), then give the widget a new public id (POST)."""
    embed = _account_embed(embed_id)
    _require_manager()
    if request.method == "GET":
        return _no_store(
            render_template("site/account/embed_confirm.html", embed=embed, action="rotate")
        )
    embeds.update(embed, {"rotate_public_id": True})
    db.session.commit()
    flash(
        f"{embed.name} has a new public id: pages with the old snippet show nothing now. "
        "Paste the new snippet below where the widget belongs.",
        "success",
    )
    return redirect(f"{LIST_PATH}{embed.id}/", 303)


@bp.route("/account/embeds/<embed_id>/delete", methods=["GET", "POST"])
@member_required()
def delete_embed(embed_id):
    """Ask to confirm (GET), then delete the widget (POST)."""
    embed = _account_embed(embed_id)
    _require_manager()
    if request.method == "GET":
        return _no_store(
            render_template("site/account/embed_confirm.html", embed=embed, action="delete")
        )
    name = embed.name
    embeds.delete(embed)
    db.session.commit()
    flash(
        f"Deleted {name}: pages that showed it show nothing now. Its past runs stay in your usage.",
        "success",
    )
    return redirect(LIST_PATH, 303)
