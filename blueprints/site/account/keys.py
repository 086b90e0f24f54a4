"""The API keys and webhooks console, ``/account/api-keys/`` (docs/architecture/site.md).

The list of the account's working keys (revoked and expired ones are gone) and the form
that creates one; per key, ``/account/api-keys/<key_id>/``: its webhook (URL, secret revealed
or rotated, a test event, the deliveries log with every attempt, redelivery). The same
services as the API and the ``flask keys`` commands do the work (services.keys,
services.webhooks).

Who may do what (docs/architecture/accounts.md#roles): owners and admins manage every key; a member
manages the keys they created and sees the others without any action or secret. Another
account's key, or a key that no longer works, is a 404 as if it did not exist; a key a member
may not manage is a 403. Rolling a key, revealing and rotating a webhook secret need a login
from the last 10 minutes (``fresh_login_required``).

A raw key or a secret is only ever in the answer to the action that shows it (``no-store``):
never in the session, a redirect, a flash or a later page. Each form that shows one carries
a one-time ``form_id``: sent again (a reload re-posting it), it shows nothing and says why.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field
from datetime import datetime

from flask import abort, flash, g, make_response, redirect, render_template, request, session
from flask_login import current_user

from blueprints.site.access import fresh_login_required, member_required, role_at_least
from blueprints.site.routes import bp
from extensions import db
from jobs.webhooks import schedule
from models import DELIVERY_STATES, ApiKey, User, WebhookDelivery
from services import clock, keys, urls, webhooks
from services.webhooks import PREVIOUS_SECRET_HOURS, WebhookRefused

LIST_PATH = "/account/api-keys/"
DELIVERIES_PER_PAGE = 20
MODES = {"live": False, "sandbox": True}
# The one-time ids of the forms already sent from this session (the newest few).
_SENT = "key_forms_sent"
_SENT_KEPT = 20
_ALREADY_SENT = (
    "That form was already sent: a key or a secret is shown only once, in the answer to the "
    "form that made it. If you did not store it, roll the key or rotate the secret again."
)
_NO_WEBHOOKS = (
    "Webhooks report the end of API runs, which the {plan} plan does not include: upgrade to "
    "Pro or higher to use them."
)


# --- what the pages show ------------------------------------------------------------------


@dataclass(frozen=True)
class KeyRow:
    """A key as the pages show it."""

    id: str
    name: str
    hint: str
    mode: str
    created: str
    created_short: str
    created_by: str
    last_used: str
    last_used_short: str
    stops: str | None
    webhook: str
    webhook_state: str
    manageable: bool
    rolled: bool

    @property
    def url(self) -> str:
        return f"{LIST_PATH}{self.id}/"


@dataclass(frozen=True)
class Shown:
    """A raw key or webhook secret shown once, and what to say about it."""

    title: str
    value: str
    note: str
    warning: str


@dataclass(frozen=True)
class AttemptRow:
    number: int
    at: str
    result: str
    ok: bool
    latency: str


@dataclass(frozen=True)
class DeliveryRow:
    id: str
    event: str
    event_id: str
    created: str
    status: str
    next_attempt: str | None
    attempts: list[AttemptRow] = field(default_factory=list)


def _when(moment: datetime | None, *, seconds: bool = False, zone: bool = True) -> str:
    moment = clock.as_utc(moment)
    if moment is None:
        return "Never"
    shown = moment.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    return f"{shown} UTC" if zone else shown


def _in(moment: datetime) -> str:
    """How long until ``moment``, rounded as people say it: "in 60 minutes" (up to two
    hours, in minutes started), "in 24 hours" (up to two days), else "in 7 days"."""
    left = max(0.0, (clock.as_utc(moment) - clock.now()).total_seconds())
    if left < 2 * 3600:
        count, unit = math.ceil(left / 60), "minute"
    elif left < 2 * 86400:
        count, unit = round(left / 3600), "hour"
    else:
        count, unit = round(left / 86400), "day"
    return f"in {count} {unit}{'s' if count != 1 else ''}"


def _may_manage(key: ApiKey) -> bool:
    return role_at_least(g.membership, "admin") or key.created_by_user_id == current_user.id


def _webhook_status(key: ApiKey, latest: WebhookDelivery | None) -> tuple[str, str]:
    """(text, state) of a key's webhook for the list: none, active (with the last
    delivery's result) or disabled with its reason."""
    if not key.webhook_url:
        return "None", "none"
    if key.webhook_disabled_at is not None:
        return f"Disabled: {key.webhook_disabled_reason}", "disabled"
    if latest is None:
        return "Active, nothing sent yet", "active"
    return f"Active, last delivery {_delivery_result(latest)}", "active"


def _delivery_result(delivery: WebhookDelivery) -> str:
    if not delivery.attempts:
        return delivery.status
    last = delivery.attempts[-1]
    answer = str(last["status_code"]) if last["status_code"] is not None else "no answer"
    return f"{delivery.status} ({answer})"


def _row(key: ApiKey, creator: str | None, latest: WebhookDelivery | None = None) -> KeyRow:
    webhook, state = _webhook_status(key, latest)
    stops = None
    if key.expires_at is not None:
        stops = f"{_when(key.expires_at, seconds=True)} ({_in(key.expires_at)})"
    return KeyRow(
        id=key.id,
        name=key.name,
        hint=key.hint,
        mode="Sandbox" if key.sandbox else "Live",
        created=_when(key.created_at),
        created_short=_when(key.created_at, zone=False),
        created_by=creator or "an operator",
        last_used=_when(key.last_used_at),
        last_used_short=_when(key.last_used_at, zone=False),
        stops=stops,
        webhook=webhook,
        webhook_state=state,
        manageable=_may_manage(key),
        rolled=key.expires_at is not None,
    )


def _attempt_result(attempt: dict) -> str:
    """The status code (with why it failed, if it says more), else the error."""
    code, error = attempt["status_code"], attempt.get("error")
    if code is None:
        return error or "No answer"
    return f"{code}: {error}" if error else str(code)


def _delivery_row(delivery: WebhookDelivery) -> DeliveryRow:
    attempts = [
        AttemptRow(
            number=attempt["number"],
            at=_when(datetime.fromisoformat(attempt["at"]), seconds=True),
            result=_attempt_result(attempt),
            ok=attempt["status_code"] is not None and 200 <= attempt["status_code"] < 300,
            latency=f"{attempt['latency_ms']} ms",
        )
        for attempt in delivery.attempts
    ]
    pending = delivery.status == "pending" and delivery.next_attempt_at is not None
    return DeliveryRow(
        id=delivery.id,
        event=delivery.event,
        event_id=delivery.event_id,
        created=_when(delivery.created_at, seconds=True),
        status=delivery.status,
        next_attempt=_when(delivery.next_attempt_at, seconds=True) if pending else None,
        attempts=attempts,
    )


# --- helpers ------------------------------------------------------------------------------


def _no_store(body, status: int = 200):
    response = make_response(body, status)
    response.headers["Cache-Control"] = "no-store"
    return response


def _new_form_id() -> str:
    return secrets.token_urlsafe(16)


def _first_sending(form_id: str | None) -> bool:
    """False when this one-time form was already sent from this session (a reload)."""
    if not form_id:
        return True
    sent = session.get(_SENT, [])
    if form_id in sent:
        return False
    session[_SENT] = [*sent, form_id][-_SENT_KEPT:]
    return True


def _account_key(key_id: str) -> ApiKey:
    """The current account's working key ``key_id``, else 404."""
    key = db.session.get(ApiKey, key_id) if len(key_id) <= 36 else None
    if key is None or key.account_id != g.account.id or not keys.is_working(key):
        abort(404)
    return key


def _managed_key(key_id: str) -> ApiKey:
    """``_account_key``, and 403 unless the signed-in user may manage it."""
    key = _account_key(key_id)
    if not _may_manage(key):
        abort(403, "Only the key's creator, or an owner or admin of the account, can do this.")
    return key


def _require_api_access() -> None:
    if not g.account.plan.api_access:
        abort(403, _NO_WEBHOOKS.format(plan=g.account.plan.name.capitalize()))


def _key_row(key: ApiKey) -> KeyRow:
    """The key's row for its own pages (with its creator's email)."""
    creator = db.session.get(User, key.created_by_user_id) if key.created_by_user_id else None
    return _row(key, creator.email if creator is not None else None)


# --- the list -----------------------------------------------------------------------------


def _list_page(
    status: int = 200,
    *,
    errors: dict | None = None,
    values: dict | None = None,
    refusal: str | None = None,
    shown: Shown | None = None,
):
    listed = keys.working_keys(g.account.id)
    latest = webhooks.latest_deliveries([key.id for key, _email in listed])
    limit = keys.key_limit(g.account)
    working = len(listed)
    page = render_template(
        "site/account/api_keys.html",
        rows=[_row(key, email, latest.get(key.id)) for key, email in listed],
        working=working,
        limit=limit,
        limit_reached=working >= limit,
        limit_message=keys.limit_message(g.account, working),
        api_access=g.account.plan.api_access,
        errors=errors or {},
        values=values or {},
        refusal=refusal,
        shown=shown,
        form_id=_new_form_id(),
    )
    return _no_store(page, status)


@bp.get("/account/api-keys/")
@member_required()
def api_keys():
    """The account's working keys and the form that creates one."""
    return _list_page()


@bp.post("/account/api-keys/")
@member_required()
def create_api_key():
    """Create a key; its raw value is in this answer and nowhere else."""
    form = request.form
    if not _first_sending(form.get("form_id")):
        flash(_ALREADY_SENT, "error")
        return redirect(LIST_PATH, 303)
    errors = {}
    try:
        name = keys.clean_name(form.get("name"))
    except keys.KeyRefused as refused:
        errors["name"] = str(refused)
    if form.get("mode") not in MODES:
        errors["mode"] = "Choose live or sandbox."
    if errors:
        return _list_page(422, errors=errors, values=form)
    try:
        key, raw = keys.create_key(
            g.account, name, sandbox=MODES[form["mode"]], created_by=current_user
        )
    except keys.KeyRefused as refused:
        db.session.rollback()
        return _list_page(409, values=form, refusal=str(refused))
    db.session.commit()
    shown = Shown(
        title=f"Your new key {key.name}",
        value=raw,
        note=f"A {'sandbox' if key.sandbox else 'live'} key, listed below as {key.hint}. "
        "Send it in the X-SVC-API-Key header (or as Authorization: Bearer).",
        warning="Copy it now and keep it somewhere safe: it cannot be shown again. Only its "
        "hash is stored.",
    )
    return _list_page(shown=shown)


# --- revoke and roll ----------------------------------------------------------------------


@bp.route("/account/api-keys/<key_id>/revoke", methods=["GET", "POST"])
@member_required()
def revoke_api_key(key_id):
    """Ask to confirm (GET), then revoke the key (POST): 401 within a second."""
    key = _managed_key(key_id)
    if request.method == "GET":
        page = render_template("site/account/api_key_revoke.html", row=_key_row(key))
        return _no_store(page)
    keys.revoke_key(key)
    db.session.commit()
    flash(f"Revoked {key.name} ({key.hint}): calls with it are refused within a second.", "success")
    return redirect(LIST_PATH, 303)


def _roll_page(key: ApiKey, status: int = 200, *, choice: str = "now", error: str | None = None):
    page = render_template(
        "site/account/api_key_roll.html",
        row=_key_row(key),
        overlaps=[(value, label) for value, (label, _time) in keys.ROLL_OVERLAPS.items()],
        choice=choice,
        error=error,
        limit=keys.key_limit(g.account),
        form_id=_new_form_id(),
    )
    return _no_store(page, status)


@bp.route("/account/api-keys/<key_id>/roll", methods=["GET", "POST"])
@member_required()
@fresh_login_required
def roll_api_key(key_id):
    """Choose how long the old key keeps working (GET), then roll it (POST): the new raw
    key in this answer only."""
    # Sent again (a reload of the answer that showed the new key, after which the old key
    # may have stopped): nothing to do, whatever the key has become since.
    if request.method == "POST" and not _first_sending(request.form.get("form_id")):
        flash(_ALREADY_SENT, "error")
        return redirect(LIST_PATH, 303)
    key = _managed_key(key_id)
    if key.expires_at is not None:
        abort(404)  # already rolled: its replacement is the key to roll
    if request.method == "GET":
        return _roll_page(key)
    choice = request.form.get("keep_old_for", "")
    if choice not in keys.ROLL_OVERLAPS:
        return _roll_page(key, 422, error="Choose how long the old key keeps working.")
    try:
        new_key, raw = keys.regenerate_key(key, keep_old_for=choice)
    except keys.KeyRefused as refused:
        db.session.rollback()
        return _roll_page(key, 409, choice=choice, error=str(refused))
    db.session.commit()
    if key.revoked_at is not None:
        old = f"The old key {key.hint} was revoked: calls with it are refused within a second."
    else:
        old = (
            f"The old key {key.hint} keeps working until "
            f"{_when(key.expires_at, seconds=True)} ({_in(key.expires_at)}), then stops."
        )
    shown = Shown(
        title=f"The new key for {new_key.name}",
        value=raw,
        note=f"{old} The new key, {new_key.hint}, has the same name, mode, webhook and limits.",
        warning="Copy it now and keep it somewhere safe: it cannot be shown again.",
    )
    return _list_page(shown=shown)


# --- one key and its webhook --------------------------------------------------------------


def _key_page(
    key: ApiKey,
    status: int = 200,
    *,
    errors: dict | None = None,
    values: dict | None = None,
    shown: Shown | None = None,
):
    status_filter = request.args.get("status") or None
    if status_filter is not None and status_filter not in DELIVERY_STATES:
        abort(400, f"Show deliveries by status: one of {', '.join(DELIVERY_STATES)}.")
    cursor = request.args.get("cursor") or None
    try:
        page, next_cursor = webhooks.deliveries(
            key.id, status=status_filter, limit=DELIVERIES_PER_PAGE, cursor=cursor
        )
    except ValueError:
        abort(400, "That link to older deliveries is not valid: start again from the newest.")
    manageable = _may_manage(key)
    previous_until = webhooks.previous_secret_until(key)
    rendered = render_template(
        "site/account/api_key.html",
        row=_key_row(key),
        key=key,
        manageable=manageable,
        api_access=g.account.plan.api_access,
        no_webhooks=_NO_WEBHOOKS.format(plan=g.account.plan.name.capitalize()),
        webhook=webhooks.describe(key),
        previous_until=_when(previous_until) if previous_until else None,
        deliveries=[_delivery_row(delivery) for delivery in page],
        can_redeliver=manageable and key.webhook_url and key.webhook_disabled_at is None,
        status_filter=status_filter,
        states=DELIVERY_STATES,
        next_cursor=next_cursor,
        errors=errors or {},
        values=values or {},
        shown=shown,
        form_id=_new_form_id(),
        mcp_url=urls.absolute("/v1/mcp"),
    )
    return _no_store(rendered, status)


@bp.get("/account/api-keys/<key_id>/")
@member_required()
def api_key(key_id):
    """One key: its details, its webhook and the deliveries log."""
    return _key_page(_account_key(key_id))


@bp.get("/account/api-keys/<key_id>/webhook")
@bp.get("/account/api-keys/<key_id>/webhook/reveal")
@bp.get("/account/api-keys/<key_id>/webhook/rotate")
@bp.get("/account/api-keys/<key_id>/webhook/test")
@member_required()
def webhook_form(key_id):
    """The address of a webhook form's answer, opened again: the key's page."""
    return redirect(f"{LIST_PATH}{_account_key(key_id).id}/", 303)


@bp.post("/account/api-keys/<key_id>/webhook")
@member_required()
def save_webhook(key_id):
    """Set, change or remove the key's webhook URL (a new webhook's secret shown once)."""
    key = _managed_key(key_id)
    _require_api_access()
    remove = request.form.get("action") == "remove"
    url = (request.form.get("url") or "").strip()
    if not remove and not url:
        errors = {"url": "Enter the URL that receives the events (or remove the webhook)."}
        return _key_page(key, 422, errors=errors)
    try:
        secret = webhooks.save(key, None if remove else url)
    except WebhookRefused as refused:
        db.session.rollback()
        return _key_page(key, 422, errors={"url": refused.message}, values={"url": url})
    db.session.commit()
    if secret is None:
        flash("Webhook removed." if remove else f"Events now go to {key.webhook_url}.", "success")
        return redirect(f"{LIST_PATH}{key.id}/", 303)
    shown = Shown(
        title="The webhook's signing secret",
        value=secret,
        note=f"Events now go to {key.webhook_url}, signed with this secret.",
        warning="Store it with your receiver. It is not shown again unless you sign in again "
        "recently and reveal it.",
    )
    return _key_page(key, shown=shown)


@bp.post("/account/api-keys/<key_id>/webhook/reveal")
@member_required()
@fresh_login_required
def reveal_webhook_secret(key_id):
    """Show the webhook's signing secret (in this answer only)."""
    key = _managed_key(key_id)
    _require_api_access()
    note = "The secret that signs every delivery."
    previous_until = webhooks.previous_secret_until(key)
    if previous_until is not None:
        note += f" The previous one also signs them until {_when(previous_until)}."
    shown = Shown(
        title="The webhook's signing secret",
        value=key.webhook_secret,
        note=note,
        warning="Keep it secret: anyone holding it can forge deliveries to your receiver.",
    )
    return _key_page(key, shown=shown)


@bp.post("/account/api-keys/<key_id>/webhook/rotate")
@member_required()
@fresh_login_required
def rotate_webhook_secret(key_id):
    """Give the webhook a new secret (shown once); the old one signs beside it for 24 h."""
    if not _first_sending(request.form.get("form_id")):
        flash(_ALREADY_SENT, "error")  # a reload of the answer that showed the new secret
        return redirect(LIST_PATH, 303)
    key = _managed_key(key_id)
    _require_api_access()
    secret = webhooks.rotate(key)
    db.session.commit()
    until = _when(webhooks.previous_secret_until(key))
    shown = Shown(
        title="The webhook's new signing secret",
        value=secret,
        note=f"For {PREVIOUS_SECRET_HOURS} hours, until {until}, every delivery carries two "
        "signatures in webhook-signature, one made with this secret and one with the old "
        "one, so your receiver keeps accepting deliveries while you deploy the new secret.",
        warning="Store it with your receiver now: it is not shown again unless you sign in "
        "again recently and reveal it.",
    )
    return _key_page(key, shown=shown)


@bp.post("/account/api-keys/<key_id>/webhook/test")
@member_required()
def send_test_event(key_id):
    """Send a webhook.test event now and say how it went."""
    key = _managed_key(key_id)
    _require_api_access()
    try:
        outcome = webhooks.send_test(key)
    except WebhookRefused as refused:
        db.session.rollback()
        flash(refused.message.replace("with PUT /v1/webhook ", ""), "error")
        return redirect(f"{LIST_PATH}{key.id}/", 303)
    attempt = outcome.attempt or {}
    if outcome.delivery.status == "succeeded":
        flash(
            f"Test event delivered: your receiver answered {attempt['status_code']} in "
            f"{attempt['latency_ms']} ms.",
            "success",
        )
    else:
        answer = attempt.get("error") or f"it answered {attempt.get('status_code')}"
        flash(f"The test event was not delivered: {answer}", "error")
    return redirect(f"{LIST_PATH}{key.id}/#deliveries", 303)


@bp.post("/account/api-keys/<key_id>/deliveries/<delivery_id>/redeliver")
@member_required()
def redeliver_delivery(key_id, delivery_id):
    """Send a delivery's event again now (the same webhook-id)."""
    key = _managed_key(key_id)
    _require_api_access()
    delivery = webhooks.find(key.id, delivery_id) if len(delivery_id) <= 36 else None
    if delivery is None:
        abort(404)
    try:
        webhooks.redeliver(delivery, key)
    except WebhookRefused as refused:
        db.session.rollback()
        flash(refused.message.replace("with PUT /v1/webhook ", ""), "error")
        return redirect(f"{LIST_PATH}{key.id}/#deliveries", 303)
    db.session.commit()
    schedule(delivery.id)
    flash(f"The {delivery.event} event is on its way again (attempt queued now).", "success")
    return redirect(f"{LIST_PATH}{key.id}/#deliveries", 303)
