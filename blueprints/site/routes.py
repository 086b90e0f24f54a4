from collections import Counter

from flask import Blueprint, abort, current_app, render_template, request, url_for

from blueprints.api.problem_types import BY_SLUG, PROBLEM_TYPES
from catalogue import Workflow, category_label
from extensions import login_manager
from models import User
from services.plans import all_plans
from services.users import load_session_user

bp = Blueprint("site", __name__)

# Workflows the home page shows (those that exist, in this order; then others, up to 6).
FEATURED_WORKFLOWS = (
    "content-creator",
    "podcast-repurposer",
    "meeting-recap",
    "seo-article",
    "document-to-video",
    "product-launch",
)
FEATURED_COUNT = 6
bp.add_app_template_filter(category_label, "category_label")


@login_manager.user_loader
def load_user(user_id: str) -> User | None:
    return load_session_user(user_id)


@bp.get("/")
def home():
    """The landing page: what it is, a search, the categories with their counts, featured
    workflows and where the API starts."""
    catalogue = current_app.extensions["catalogue"]
    counts = Counter(tool.category for tool in catalogue)
    return render_template(
        "site/home.html",
        tool_count=len(catalogue),
        categories=[(category, counts[category]) for category in catalogue.categories()],
        workflows=featured_workflows(),
        workflow_count=len(current_app.extensions["workflows"]),
        visitor_runs=_visitor_runs(),
    )


@bp.get("/pricing")
def pricing():
    """Plans and what each includes; ``?plan=`` highlights one (an unknown one is ignored)."""
    plans = all_plans()
    wanted = (request.args.get("plan") or "").strip().lower()
    return render_template(
        "site/pricing.html",
        plans=list(plans.values()),
        wanted=wanted if wanted in plans else None,
        visitor_runs=_visitor_runs(),
    )


def featured_workflows(limit: int = FEATURED_COUNT) -> list[Workflow]:
    found = current_app.extensions["workflows"]
    first = [found.get(wid) for wid in FEATURED_WORKFLOWS if found.get(wid) is not None]
    rest = [workflow for workflow in found if workflow not in first]
    return (first + rest)[:limit]


def _visitor_runs() -> int:
    """Tool runs a day in the browser without an account (the free plan's web runs)."""
    free = all_plans().get("free")
    return (free.web_runs_per_day or 0) if free else 0


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
