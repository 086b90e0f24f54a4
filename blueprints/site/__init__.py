"""The public site: server-rendered pages (Jinja, htmx) over the same services as the API."""

from flask import Flask, make_response, render_template, request
from flask_wtf.csrf import CSRFError, CSRFProtect
from werkzeug.exceptions import HTTPException

# The modules of the site's views, each adding its routes to ``bp``.
from blueprints.site import (  # noqa: F401
    account,
    assistant,
    catalogue,
    changelog,
    guide,
    runs,
    tools,
    white_label,
)
from blueprints.site.routes import bp
from services import urls

__all__ = ["bp", "register_site", "render_error"]

csrf = CSRFProtect()

# Site pages load nothing from elsewhere and run no inline script. Swagger UI (``/docs``)
# writes style attributes, so that one page allows them.
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)
_DOCS_CSP = _CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")


def register_site(app: Flask) -> None:
    """The site's blueprint, with CSRF checked on its forms and its headers on its pages.
    Both are the blueprint's own hooks (and the error pages'): an API request runs neither."""
    app.config.setdefault("WTF_CSRF_TIME_LIMIT", None)  # a form left open still posts
    app.config["WTF_CSRF_CHECK_DEFAULT"] = False  # checked by the site's hook alone
    csrf.init_app(app)
    # Its app-wide hook would only return at once (the default check is off): not run on
    # every API request at all.
    hooks = app.before_request_funcs[None]
    hooks[:] = [hook for hook in hooks if getattr(hook, "__name__", "") != "csrf_protect"]
    app.register_blueprint(bp)
    # Agency widgets in other sites' iframes: a blueprint of their own (no session, no CSRF).
    from blueprints.site.embed import bp as embed_bp

    app.register_blueprint(embed_bp)
    app.register_error_handler(CSRFError, _csrf_error)
    # Absolute URLs in pages, on PUBLIC_BASE_URL like every other (services/urls.py).
    app.add_template_global(urls.absolute_url_for, "public_url")
    app.add_template_global(urls.base_url, "public_base_url")


@bp.before_request
def check_csrf():
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        csrf.protect()


@bp.after_request
def site_headers(response):
    return _with_site_headers(response)


def _with_site_headers(response):
    if response.headers.get("Content-Security-Policy"):
        return response  # a file's own, stricter one
    docs = request.path.startswith("/docs") and not request.path.startswith(
        ("/docs/problems", "/docs/guide")
    )
    response.headers["Content-Security-Policy"] = _DOCS_CSP if docs else _CSP
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "strict-origin-when-cross-origin")
    return response


def render_error(error: HTTPException, message: str | None = None):
    """A site page's error in the site's look (the API answers problem+json instead). To
    htmx, which asked for a part of a page, the error page's content replaces the page's."""
    code = error.code or 500
    page = render_template("site/error.html", error=error, code=code, message=message)
    response = make_response(page, code)
    if request.headers.get("HX-Request"):
        response.headers.update(
            {"HX-Retarget": "#main", "HX-Reselect": "#main", "HX-Reswap": "outerHTML"}
        )
    return _with_site_headers(response)


def _csrf_error(error: CSRFError):
    return render_error(
        error,
        "This form had expired or did not come from this site. Reload the page and send it again.",
    )
