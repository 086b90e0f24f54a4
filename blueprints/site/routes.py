from flask import Blueprint, abort, render_template, request, url_for

from blueprints.api.problem_types import BY_SLUG, PROBLEM_TYPES
from catalogue import load_catalogue
from extensions import db, login_manager
from models import User
from services.plans import all_plans

bp = Blueprint("site", __name__)


@login_manager.user_loader
def load_user(user_id: str) -> User | None:
    return db.session.get(User, int(user_id)) if user_id.isdigit() else None


@bp.get("/")
def home():
    """The landing page."""
    catalogue = load_catalogue()
    return render_template(
        "site/home.html", tool_count=len(catalogue.tools), categories=catalogue.categories()
    )


@bp.get("/pricing")
def pricing():
    """Plans and what each includes; ``?plan=`` highlights one."""
    return render_template(
        "site/pricing.html", plans=list(all_plans().values()), wanted=request.args.get("plan")
    )


@bp.get("/docs")
def api_docs():
    """Interactive API reference, from vendored assets."""
    return render_template(
        "docs/api_docs.html",
        openapi_url=url_for("api-docs.openapi_json"),
        brand_name="SVC",
    )


@bp.get("/docs/problems/")
def problems():
    """Every problem code the API answers, with its statuses: what each problem ``type``
    URI leads to."""
    return render_template("site/problems.html", problems=list(PROBLEM_TYPES.values()))


@bp.get("/docs/problems/<slug>")
def problem(slug: str):
    """One problem code: what it means and what to do about it."""
    found = BY_SLUG.get(slug)
    if found is None:
        abort(404)
    return render_template("site/problem.html", problem=found)
