"""The agency's brand (``/account/white-label``): owners and admins of an agency account set
its name, logo, colours, support link and whether "Powered by SVC" shows, with the API's
checks and messages (services/white_label.py); every other member sees it and why they
cannot change it. And sharing a run: any member shares a succeeded run of the account at
``/r/<share id>`` from its page, and stops sharing it there."""

from __future__ import annotations

from flask import flash, g, make_response, redirect, render_template, request, url_for

from blueprints.site.access import member_required, role_at_least
from blueprints.site.account.history import _own
from blueprints.site.routes import bp
from extensions import db
from services import shared_runs, white_label
from services.plans import upgrade_url
from services.white_label import REQUIRED_PLAN, BrandRefused

_PAGE = "/account/white-label"
_COLORS = ("primary_color", "accent_color")


@bp.get("/account/white-label")
@member_required()
def white_label_settings():
    """The brand's settings, a preview, and why they cannot be changed when they cannot."""
    return _page()


@bp.post("/account/white-label")
@member_required("owner", "admin")
def save_white_label():
    """Save the brand: the form's fields and an uploaded logo, checked as the API checks."""
    if not _is_agency():
        return _page(402)
    form = request.form
    changes = {
        "brand_name": form.get("brand_name", ""),
        "support_url": form.get("support_url", "").strip() or None,
        "hide_powered_by": form.get("hide_powered_by") == "on",
    }
    for name in _COLORS:
        changes[name] = None if form.get(f"{name}_default") == "on" else form.get(name, "")
    upload = request.files.get("logo")
    if upload is None or not upload.filename:
        upload = None
        if form.get("remove_logo") == "on":
            changes["logo"] = None
    try:
        white_label.save(g.account.id, changes, logo_upload=upload)
    except BrandRefused as refused:
        db.session.rollback()
        return _page(422, errors={name: " ".join(msgs) for name, msgs in refused.errors.items()})
    db.session.commit()
    flash("Your brand is saved: shared runs and widgets show it from now on.", "success")
    return redirect(_PAGE, 303)


def _is_agency() -> bool:
    return white_label.on_agency_plan(g.account)


def _page(status: int = 200, errors: dict | None = None):
    account = g.account
    settings = white_label.describe(account.id)
    form = dict(settings)
    if errors is not None:  # the values sent, shown again beside their errors
        form.update({name: request.form.get(name, "") for name in ("brand_name", "support_url")})
        form["hide_powered_by"] = request.form.get("hide_powered_by") == "on"
        for name in _COLORS:
            default = request.form.get(f"{name}_default") == "on"
            form[name] = None if default else request.form.get(name, "")
    agency = _is_agency()
    body = render_template(
        "site/account/white_label.html",
        agency=agency,
        may_edit=agency and role_at_least(g.membership, "admin"),
        upgrade=upgrade_url(REQUIRED_PLAN),
        settings=settings,
        form=form,
        errors=errors or {},
        brand=white_label.brand_for(account.id),
        logo_types=", ".join(sorted(white_label.LOGO_FORMATS.values())),
        max_logo_kb=white_label.MAX_LOGO_BYTES // 1024,
    )
    return make_response(body, status)


@bp.post("/account/runs/<run_id>/share")
@member_required()
def share_run(run_id: str):
    """Share a succeeded run: anyone with its link sees its tool, input and output."""
    run = _own(run_id)
    try:
        shared_runs.share(run)
    except shared_runs.NotShareable as refused:
        db.session.rollback()
        flash(str(refused), "error")
        return redirect(url_for("site.account_run", run_id=run_id), 303)
    db.session.commit()
    flash("The run is shared: anyone with its link can see its input and output.", "success")
    return redirect(url_for("site.account_run", run_id=run_id) + "#share", 303)


@bp.post("/account/runs/<run_id>/unshare")
@member_required()
def unshare_run(run_id: str):
    """Stop sharing a run: its link answers 404 from now on."""
    run = _own(run_id)
    shared_runs.unshare(run)
    db.session.commit()
    flash("The run is no longer shared: its link shows nothing now.", "success")
    return redirect(url_for("site.account_run", run_id=run_id) + "#share", 303)
