"""The API changelog: ``docs/changelog.yaml`` loaded, checked and rendered once.

The file is a YAML list of entries::

    - date: 2026-11-21            # YYYY-MM-DD
      title: The v1 API
      kind: added                 # added, changed, deprecated, removed, fixed or security
      endpoints: ["GET /v1/public/whoami"]   # may be empty
      body: |
        Markdown.
      id: v1-api                  # optional: the anchor; else <date>-<slug of the title>
      sunset: 2027-06-01          # deprecated entries only: at least 6 months after date
      replacement: "GET /v1/me"   # deprecated entries only

A file that breaks a rule is refused as a whole (``ChangelogError`` naming the file, the
entry and the rule), so a bad deprecation never reaches the API.

**Naming endpoints.** An endpoint is ``"<METHOD> <path>"``: the HTTP method in capitals, one
space, and the path as the OpenAPI document (``/v1/openapi.json``) writes it, which is the
Flask rule with each ``<converter:name>`` variable written ``{name}`` (flask-smorest's
``FlaskPlugin.flaskpath2openapi``): ``GET /v1/tools/{slug}`` for the rule
``/v1/tools/<slug:slug>``. A request matches an endpoint when its method and the template
of the rule it matched are equal to it, exactly (no prefixes, no patterns); a deprecated
``GET`` covers ``HEAD`` too, which Flask answers with the same view.

A deprecation (``kind: deprecated``) drives its endpoints: ``blueprints/api/deprecation.py``
adds the ``Deprecation``, ``Sunset`` and ``Link`` headers before the sunset, answers 410
``endpoint_sunset`` from it, and marks the OpenAPI operations ``deprecated``.
"""

import calendar
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from email.utils import format_datetime
from functools import lru_cache
from pathlib import Path

import markdown
import nh3
import yaml
from flask import current_app
from markupsafe import Markup

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "docs" / "changelog.yaml"
# Where the site shows the changelog (blueprints/site/changelog.py); anchors are entry ids.
PAGE_PATH = "/api/changelog/"
FEED_PATH = "/api/changelog/feed.atom"

KINDS = ("added", "changed", "deprecated", "removed", "fixed", "security")
MIN_SUNSET_MONTHS = 6
_FIELDS = {"id", "date", "title", "kind", "endpoints", "body", "sunset", "replacement"}
_METHODS = "GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS"
_ENDPOINT = re.compile(rf"^(?:{_METHODS}) /[^\s<>]*$")
_ID = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")


class ChangelogError(ValueError):
    """The changelog file breaks a rule; the message names the file, entry and rule."""


@dataclass(frozen=True)
class Entry:
    id: str
    date: date
    title: str
    kind: str
    endpoints: tuple[str, ...]
    body: str
    html: Markup = field(repr=False)
    sunset: date | None = None
    replacement: str | None = None

    @property
    def anchor(self) -> str:
        return self.id

    @property
    def url_path(self) -> str:
        """The entry on the changelog page (to join to the service's address)."""
        return f"{PAGE_PATH}#{self.id}"


@dataclass(frozen=True)
class Deprecation:
    """One deprecated endpoint, with its headers made once."""

    endpoint: str
    entry: Entry
    deprecated_at: datetime  # 00:00 UTC of the entry's date
    sunset_at: datetime  # 00:00 UTC of the sunset date: 410 from then on
    replacement: str
    deprecation_header: str  # RFC 9745: "@<unix seconds>"
    sunset_header: str  # RFC 8594: an IMF-fixdate

    @property
    def method(self) -> str:
        return self.endpoint.split(" ", 1)[0]

    @property
    def path(self) -> str:
        return self.endpoint.split(" ", 1)[1]


@dataclass(frozen=True)
class Changelog:
    entries: tuple[Entry, ...]  # newest first
    deprecations: dict[str, Deprecation]  # by endpoint, "GET /v1/tools/{slug}"

    @property
    def updated(self) -> date | None:
        return self.entries[0].date if self.entries else None


def current() -> Changelog:
    """The changelog of the current app."""
    return of_app(current_app)


def of_app(app) -> Changelog:
    """The changelog of ``app``: its ``CHANGELOG_PATH``, else ``docs/changelog.yaml``."""
    return load(app.config.get("CHANGELOG_PATH") or DEFAULT_PATH)


def load(path: str | Path) -> Changelog:
    """The changelog in ``path``, read and checked once per process (``forget`` clears)."""
    return _load(str(Path(path).resolve()))


def forget() -> None:
    """Read the files again on next use (tests that rewrite one)."""
    _load.cache_clear()


@lru_cache(maxsize=16)
def _load(path: str) -> Changelog:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ChangelogError(f"{path}: cannot be read: {error}") from error
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ChangelogError(f"{path}: not valid YAML: {error}") from error
    return parse(document, source=path)


def parse(document, *, source: str = "changelog") -> Changelog:
    """Check ``document`` (the YAML's data) and build the changelog from it."""
    if document is None:
        document = []
    if not isinstance(document, list):
        raise ChangelogError(f"{source}: must be a list of entries, not {_kind(document)}")
    entries = [_entry(raw, f"{source}: entry {number}") for number, raw in enumerate(document, 1)]
    seen: dict[str, int] = {}
    for number, entry in enumerate(entries, 1):
        if entry.id in seen:
            raise ChangelogError(
                f"{source}: entry {number} ({entry.title!r}) has the id {entry.id!r} of entry "
                f"{seen[entry.id]}; give one of them an explicit `id`"
            )
        seen[entry.id] = number
    deprecations: dict[str, Deprecation] = {}
    for number, entry in enumerate(entries, 1):
        if entry.kind != "deprecated":
            continue
        for endpoint in entry.endpoints:
            if endpoint in deprecations:
                raise ChangelogError(
                    f"{source}: entry {number} ({entry.title!r}) deprecates {endpoint}, which "
                    f"{deprecations[endpoint].entry.id!r} already deprecates"
                )
            deprecations[endpoint] = _deprecation(endpoint, entry)
    # Newest first; entries of one day keep the file's order reversed (later = newer).
    ordered = [entry for _, entry in sorted(enumerate(entries), key=_newest, reverse=True)]
    return Changelog(tuple(ordered), deprecations)


def _newest(item: tuple[int, Entry]) -> tuple[date, int]:
    return item[1].date, item[0]


def _entry(raw, where: str) -> Entry:
    if not isinstance(raw, dict):
        raise ChangelogError(f"{where}: must be a mapping, not {_kind(raw)}")
    title = raw.get("title")
    if not isinstance(title, str) or not title.strip():
        raise ChangelogError(f"{where}: `title` must be a non-empty string")
    title = title.strip()
    where = f"{where} ({title!r})"
    unknown = sorted(set(map(str, raw)) - _FIELDS)
    if unknown:
        raise ChangelogError(
            f"{where}: unknown field(s) {', '.join(unknown)}; an entry has "
            f"{', '.join(sorted(_FIELDS))}"
        )
    when = _date(raw.get("date"), "date", where)
    kind = raw.get("kind")
    if kind not in KINDS:
        raise ChangelogError(f"{where}: `kind` is {kind!r}; it must be one of {', '.join(KINDS)}")
    endpoints = raw.get("endpoints", [])
    if endpoints is None:
        endpoints = []
    if not isinstance(endpoints, list):
        raise ChangelogError(f"{where}: `endpoints` must be a list (it may be empty)")
    for endpoint in endpoints:
        _check_endpoint(endpoint, "endpoints", where)
    if len(set(endpoints)) != len(endpoints):
        raise ChangelogError(f"{where}: `endpoints` names an endpoint twice")
    body = raw.get("body")
    if not isinstance(body, str) or not body.strip():
        raise ChangelogError(f"{where}: `body` must be non-empty Markdown text")
    entry_id = raw.get("id")
    if entry_id is None:
        entry_id = f"{when.isoformat()}-{slugify(title)}"
    elif not isinstance(entry_id, str) or not _ID.match(entry_id):
        raise ChangelogError(
            f"{where}: `id` {entry_id!r} must be lower-case letters, digits and hyphens"
        )
    sunset = replacement = None
    if kind == "deprecated":
        if not endpoints:
            raise ChangelogError(f"{where}: a deprecation names the endpoints it deprecates")
        if "sunset" not in raw:
            raise ChangelogError(f"{where}: a deprecation needs a `sunset` date")
        sunset = _date(raw["sunset"], "sunset", where)
        earliest = add_months(when, MIN_SUNSET_MONTHS)
        if sunset < earliest:
            raise ChangelogError(
                f"{where}: sunset {sunset.isoformat()} is less than {MIN_SUNSET_MONTHS} months "
                f"after the deprecation on {when.isoformat()}; the policy allows "
                f"{earliest.isoformat()} at the earliest"
            )
        replacement = raw.get("replacement")
        if replacement is None:
            raise ChangelogError(
                f"{where}: a deprecation needs a `replacement` (the endpoint to use instead)"
            )
        _check_endpoint(replacement, "replacement", where)
        if replacement in endpoints:
            raise ChangelogError(f"{where}: `replacement` is one of the deprecated endpoints")
    else:
        for name in ("sunset", "replacement"):
            if name in raw:
                raise ChangelogError(f"{where}: `{name}` belongs to deprecated entries only")
    return Entry(
        id=entry_id,
        date=when,
        title=title,
        kind=kind,
        endpoints=tuple(endpoints),
        body=body,
        html=render_markdown(body),
        sunset=sunset,
        replacement=replacement,
    )


def _check_endpoint(value, name: str, where: str) -> None:
    if not isinstance(value, str) or not _ENDPOINT.match(value):
        hint = " (write path variables as {name}, not <name>)" if "<" in str(value) else ""
        raise ChangelogError(
            f"{where}: `{name}` item {value!r} is not '<METHOD> <path>' such as "
            f"'GET /v1/tools/{{slug}}'{hint}"
        )


def _date(value, name: str, where: str) -> date:
    # YAML reads an unquoted 2026-11-21 as a date; a quoted one is a string.
    if isinstance(value, datetime):
        raise ChangelogError(f"{where}: `{name}` must be a date (YYYY-MM-DD), not a time")
    if isinstance(value, date):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise ChangelogError(f"{where}: `{name}` must be a date as YYYY-MM-DD, not {value!r}")


def _kind(value) -> str:
    return type(value).__name__


def add_months(day: date, months: int) -> date:
    """``day`` plus ``months`` calendar months (the 31st becomes the month's last day)."""
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def slugify(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(slug) > 60:
        slug = slug[:60].rsplit("-", 1)[0]
    return slug or "entry"


def render_markdown(text: str) -> Markup:
    """Markdown to HTML, then cleaned by nh3 (no script, style or event attributes)."""
    html = markdown.markdown(text, extensions=["fenced_code", "tables"], output_format="html")
    return Markup(nh3.clean(html))


def midnight_utc(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def _deprecation(endpoint: str, entry: Entry) -> Deprecation:
    deprecated_at = midnight_utc(entry.date)
    sunset_at = midnight_utc(entry.sunset)
    return Deprecation(
        endpoint=endpoint,
        entry=entry,
        deprecated_at=deprecated_at,
        sunset_at=sunset_at,
        replacement=entry.replacement,
        deprecation_header=f"@{int(deprecated_at.timestamp())}",
        sunset_header=format_datetime(sunset_at, usegmt=True),
    )
