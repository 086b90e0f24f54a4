"""Signing up, verifying the address, signing in and out, resetting and changing the
password, signing in again before sensitive actions, and switching accounts.

Every answer that could tell whether an email has an account says the same either way.
Attempts are limited per client address and per email (flask-limiter's strategy and
storage: Redis in a deployment, memory in the embedded default); past a limit the page
answers 429 and says when to try again, whatever the email.
"""

from __future__ import annotations

import hashlib
import math
import time

from flask import (
    abort,
    current_app,
    flash,
    g,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_login import current_user, login_user
from limits import parse

from blueprints.site.access import (
    current_membership,
    mark_fresh,
    member_required,
    safe_next,
    sign_in,
    sign_out,
)
from blueprints.site.routes import bp
from blueprints.site.visitor import is_bot
from extensions import db, limiter
from services import users
from services.mail import MailFailed

# (what, limit): per client address, and per email where one is given. Sign-ups per
# address are the setting SIGNUP_ADDRESS_LIMIT (an event behind one address may need more).
_LIMITS = {
    "login": ("30/10 minutes", "10/15 minutes"),
    "signup": ("SIGNUP_ADDRESS_LIMIT", "3/hour"),
    "reset": ("10/hour", "3/hour"),
    "resend": ("10/hour", "3/hour"),
    "reauth": ("20/10 minutes", None),
}
_HOME = "/account/"
_MAIL_FAILED = (
    "We could not send the mail just now. Try again in a few minutes; if it keeps failing, "
    "contact support."
)


class TooManyAttempts(Exception):
    def __init__(self, retry_after: int):
        self.retry_after = retry_after


def _spend(action: str, email: str | None = None) -> None:
    """Count one attempt of ``action`` from this address (and for this email); raises
    TooManyAttempts past either limit."""
    per_address, per_email = _LIMITS[action]
    per_address = current_app.config.get(per_address, per_address)
    checks = [(per_address, request.remote_addr or "unknown")]
    if per_email and email:
        digest = hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]
        checks.append((per_email, digest))
    for limit, identity in checks:
        item = parse(limit)
        if not limiter.limiter.hit(item, f"site-{action}", identity):
            reset_at, _ = limiter.limiter.get_window_stats(item, f"site-{action}", identity)
            raise TooManyAttempts(max(1, math.ceil(reset_at - time.time())))


def _too_many(template: str, exceeded: TooManyAttempts, **context):
    minutes = max(1, math.ceil(exceeded.retry_after / 60))
    message = f"Too many attempts. Try again in {minutes} minute{'s' if minutes != 1 else ''}."
    response = _form_page(template, 429, message=message, **context)
    response.headers["Retry-After"] = str(exceeded.retry_after)
    return response


def _form_page(template: str, status: int = 200, **context):
    page = render_template(template, errors=context.pop("errors", {}), **context)
    return make_response(page, status)


def _field_errors(refused: users.UserRefused) -> tuple[dict, str | None]:
    if refused.field:
        return {refused.field: str(refused)}, None
    return {}, str(refused)


# ----------------------------------------------------------------------------- sign-up


@bp.route("/account/signup", methods=["GET", "POST"])
def signup():
    """Email and password; the answer is the same whether the email has an account."""
    if current_user.is_authenticated:
        return redirect(_HOME)
    template = "site/account/signup.html"
    if request.method == "GET":
        return _form_page(template, plan=request.args.get("plan"))
    email = request.form.get("email", "")
    if request.form.get("website") or is_bot():
        return _form_page(template, 403, message="Automated sign-ups are refused.", email=email)
    password = request.form.get("password", "")
    return _mail_a_link(template, "signup", email, lambda: users.sign_up(email, password))


def _mail_a_link(template: str, action: str, email: str, send):
    """A form whose answer is "check your mail" (sign-up, a new confirmation link, a reset),
    the same whether or not the email has an account: ``send`` does the work, within the
    attempts of ``action``; its refusals are shown on ``template``."""
    try:
        _spend(action, email)
        send()
    except TooManyAttempts as exceeded:
        return _too_many(template, exceeded, email=email)
    except users.UserRefused as refused:
        errors, message = _field_errors(refused)
        return _form_page(template, 422, errors=errors, message=message, email=email)
    except MailFailed:
        return _form_page(template, 503, message=_MAIL_FAILED, email=email)
    return _form_page("site/account/check_mail.html", email=email.strip(), reason=action)


@bp.get("/account/verify/<token>")
def verify_email(token: str):
    try:
        users.verify_email(token)
    except users.UserRefused as refused:
        return _form_page("site/account/login.html", 400, message=str(refused), resend=True)
    flash("Your email address is confirmed. Sign in to continue.", "success")
    return redirect(url_for("site.login"))


@bp.route("/account/verify", methods=["GET", "POST"])
def resend_verification():
    """Another verification link (the same answer whether the email has an account)."""
    template = "site/account/resend.html"
    if request.method == "GET":
        return _form_page(template)
    email = request.form.get("email", "")
    return _mail_a_link(template, "resend", email, lambda: users.resend_verification(email))


# ----------------------------------------------------------------------------- sign-in


@bp.route("/account/login", methods=["GET", "POST"])
def login():
    template = "site/account/login.html"
    target = safe_next(request.values.get("next"), _HOME)
    if request.method == "GET":
        if current_user.is_authenticated:
            return redirect(target)
        return _form_page(template, next=target)
    email = request.form.get("email", "")
    try:
        _spend("login", email)
        signed_in = users.authenticate(email, request.form.get("password", ""))
    except TooManyAttempts as exceeded:
        return _too_many(template, exceeded, email=email, next=target)
    except users.UserRefused as refused:
        return _form_page(template, 401, message=str(refused), email=email, next=target)
    except MailFailed:
        return _form_page(template, 503, message=_MAIL_FAILED, email=email, next=target)
    sign_in(signed_in.user, remember=bool(request.form.get("remember")))
    session["account_id"] = signed_in.memberships[0].account_id
    return redirect(target)


@bp.post("/account/logout")
def logout():
    """Sign out: this session ends on the server, so its cookies sign no one in again."""
    sign_out()
    flash("You are signed out.", "success")
    return redirect(url_for("site.login"))


@bp.route("/account/reauth", methods=["GET", "POST"])
@member_required()
def reauth():
    """The password again, before revealing or rolling keys and secrets."""
    template = "site/account/reauth.html"
    target = safe_next(request.values.get("next"), _HOME)
    if request.method == "GET":
        return _form_page(template, next=target)
    try:
        _spend("reauth")
        users.check_current_password(current_user, request.form.get("password", ""))
    except TooManyAttempts as exceeded:
        return _too_many(template, exceeded, next=target)
    except users.UserRefused as refused:
        errors, message = _field_errors(refused)
        return _form_page(template, 401, errors=errors, message=message, next=target)
    mark_fresh()
    return redirect(target)


# ----------------------------------------------------------------------------- reset


@bp.route("/account/reset", methods=["GET", "POST"])
def reset_request():
    template = "site/account/reset_request.html"
    if request.method == "GET":
        return _form_page(template)
    email = request.form.get("email", "")
    return _mail_a_link(template, "reset", email, lambda: users.request_reset(email))


@bp.route("/account/reset/<token>", methods=["GET", "POST"])
def reset_password(token: str):
    template = "site/account/reset.html"
    try:
        user = users.user_for_reset(token)
    except users.UserRefused as refused:
        return _form_page("site/account/reset_request.html", 400, message=str(refused))
    if request.method == "GET":
        return _form_page(template, email=user.email, token=token)
    try:
        users.reset_password(token, request.form.get("password", ""))
    except users.UserRefused as refused:
        errors, message = _field_errors(refused)
        return _form_page(
            template, 422, errors=errors, message=message, email=user.email, token=token
        )
    sign_out()
    flash("Your password is changed, and every session was signed out. Sign in with it.", "success")
    return redirect(url_for("site.login"))


# ----------------------------------------------------------------------------- settings


@bp.route("/account/settings", methods=["GET", "POST"])
@member_required()
def settings():
    """The user's own settings: the password, and signing out everywhere else."""
    template = "site/account/settings.html"
    if request.method == "GET":
        return _form_page(template)
    if request.form.get("action") == "sign-out-others":
        users.end_other_sessions(current_user)
        db.session.commit()
        _stay_signed_in()
        flash("Every other session of yours is signed out.", "success")
        return redirect(url_for("site.settings"))
    try:
        users.change_password(
            current_user,
            request.form.get("current_password", ""),
            request.form.get("new_password", ""),
        )
    except users.UserRefused as refused:
        errors, message = _field_errors(refused)
        return _form_page(template, 422, errors=errors, message=message)
    _stay_signed_in()
    flash("Your password is changed. Your other sessions are signed out.", "success")
    return redirect(url_for("site.settings"))


def _stay_signed_in() -> None:
    """Sign this session in again under the user's new session token (the others end)."""
    account_id = session.get("account_id")
    login_user(current_user._get_current_object(), fresh=True)
    session["account_id"] = account_id
    mark_fresh()


@bp.post("/account/switch")
@member_required()
def switch_account():
    """Make another of the user's accounts the current one."""
    wanted = request.form.get("account_id", type=int)
    current_membership()
    if wanted not in {m.account_id for m in g.memberships}:
        abort(404)
    session["account_id"] = wanted
    return redirect(safe_next(request.form.get("next"), _HOME))
