"""The operators' pages (``/admin/``): find accounts, see one (plan, members, keys, today's
usage, suspension), change its plan, suspend it or lift the suspension.

Only users flagged ``is_admin`` (``flask --app app accounts create ... --admin``,
``accounts set-admin``) see them; anyone else, signed in or not, gets the site's 404, so
the pages' existence is not revealed.
"""

from __future__ import annotations

from functools import wraps

from flask import abort, flash, make_response, redirect, render_template, request
from flask_login import current_user

from blueprints.site.access import current_membership
from blueprints.site.routes import bp
from extensions import db
from models import Account
from services import accounts, clock, keys
from services import members as members_service
from services.plans import UnknownPlan, all_plans

PER_PAGE = 20


@bp.before_request
def hide_admin():
    """The operators' pages answer 404 to anyone else, before anything else is checked
    (this module's hook runs before the site's CSRF check, whose 400 would tell that the
    page exists)."""
    if (request.path == "/admin" or request.path.startswith("/admin/")) and not _is_operator():
        abort(404)


def _is_operator() -> bool:
    return current_user.is_authenticated and current_user.is_admin


def operator_required(view):
    """Signed in as an operator, else 404. Sets ``g.account`` and ``g.membership`` (the
    operator's own current account, for the layout)."""

    @wraps(view)
    def wrapped(*args, **kwargs):
        if not _is_operator():
            abort(404)
        current_membership()
        return view(*args, **kwargs)

    return wrapped


@bp.get("/admin/", strict_slashes=False)
@operator_required
def admin_accounts():
    """Accounts by id, name or a member's email (all of them without a query), a page at
    a time."""
    query = request.args.get("q", "").strip()[:200]
    wanted = request.args.get("page", 1, type=int)
    page = accounts.find_accounts(query, wanted, PER_PAGE)
    if page.pages and wanted > page.pages:  # past the end: its last page
        page = accounts.find_accounts(query, page.pages, PER_PAGE)
    rows = [
        {
            "id": account.id,
            "name": account.name,
            "plan": account.plan_name,
            "owners": ", ".join(m.user.email for m in account.memberships if m.role == "owner"),
            "members": len(account.memberships),
            "suspended": account.suspended_at is not None,
        }
        for account in page.items
    ]
    return render_template("site/account/admin_accounts.html", query=query, page=page, rows=rows)


@bp.get("/admin/accounts/<int:account_id>")
@operator_required
def admin_account(account_id: int):
    """One account: plan, members, keys, today's usage and suspension."""
    return _account_page(_account(account_id))


@bp.post("/admin/accounts/<int:account_id>/plan")
@operator_required
def admin_change_plan(account_id: int):
    """Move the account to another plan (in the API within a second)."""
    account = _account(account_id)
    before, wanted = account.plan_name, request.form.get("plan", "")
    try:
        accounts.change_plan(account, wanted)
    except UnknownPlan:
        db.session.rollback()
        return _account_page(account, 422, errors={"plan": "Choose one of the plans."})
    db.session.commit()
    if account.plan_name == before:
        flash(f"{account.name} is on the {before} plan already.", "success")
    else:
        flash(f"{account.name} moved from the {before} to the {account.plan_name} plan.", "success")
    return redirect(f"/admin/accounts/{account.id}", 303)


@bp.post("/admin/accounts/<int:account_id>/suspension")
@operator_required
def admin_suspension(account_id: int):
    """Suspend the account (``action=suspend``) or lift its suspension (``lift``), with a
    reason for the log."""
    account = _account(account_id)
    action = request.form.get("action")
    if action not in ("suspend", "lift"):
        abort(400, "Choose to suspend the account or to lift its suspension.")
    reason = request.form.get("reason", "")
    change = accounts.suspend if action == "suspend" else accounts.unsuspend
    try:
        change(account, reason, current_user)
    except accounts.AccountRefused as refused:
        db.session.rollback()
        return _account_page(account, 422, errors={"reason": str(refused)}, reason=reason)
    db.session.commit()
    if action == "suspend":
        flash(
            f"{account.name} is suspended: its keys stop working within a second, and its "
            "members lose access to it at their next page.",
            "success",
        )
    else:
        flash(f"{account.name} is no longer suspended.", "success")
    return redirect(f"/admin/accounts/{account.id}", 303)


def _account(account_id: int) -> Account:
    account = db.session.get(Account, account_id)
    if account is None:
        abort(404)
    return account


def _account_page(account: Account, status: int = 200, **context):
    members = [
        {"email": m.user.email, "role": m.role, "joined": _day(m.created_at)}
        for m in members_service.members(account.id)
    ]
    seats = members_service.seats(account)
    suspended_at = clock.as_utc(account.suspended_at)
    page = render_template(
        "site/account/admin_account.html",
        account=account,
        members=members,
        seats=seats,
        plans=list(all_plans()),
        working_keys=keys.count_working(account.id),
        usage=accounts.usage_today(account.id),
        created=_day(account.created_at),
        suspended_at=suspended_at.strftime("%Y-%m-%d %H:%M UTC") if suspended_at else None,
        is_member=any(m.user_id == current_user.id for m in account.memberships),
        errors=context.pop("errors", None) or {},
        **context,
    )
    return make_response(page, status)


def _day(moment) -> str:
    return clock.as_utc(moment).strftime("%Y-%m-%d")
