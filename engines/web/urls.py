"""``seo.url``: canonical URL normalisation, UTM links built and parsed."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from engines.base import ChoiceEngine, EngineError
from engines.web._helpers import _absolute_url

# --- seo.url -----------------------------------------------------------------------------

TRACKING_PARAMETERS = frozenset(
    {
        "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "yclid", "twclid",
        "ttclid", "li_fat_id", "igshid", "mc_cid", "mc_eid", "_ga", "_gl", "_hsenc", "_hsmi",
        "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "rb_clickid", "s_cid", "ref_src",
        "srsltid", "spm",
    }
)  # fmt: skip
_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = "-._~"


def _is_tracking(name: str) -> bool:
    lower = name.lower()
    return lower.startswith(("utm_", "pk_", "mtm_")) or lower in TRACKING_PARAMETERS


def _normalise_path(path: str) -> str:
    # Decode only what never needs encoding, upper-case the remaining escapes.
    path = re.sub(
        r"%[0-9A-Fa-f]{2}",
        lambda m: (
            c
            if (c := unquote(m.group())).isalnum() and c.isascii() or c in _UNRESERVED
            else m.group().upper()
        ),
        path,
    )
    segments: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if len(segments) > 1:
                segments.pop()
        elif segment != ".":
            segments.append(segment)
    result = "/".join(segments)
    return result if result.startswith("/") else "/" + result


def _canonical(inputs: dict[str, Any]) -> dict[str, Any]:
    raw = inputs["url"].strip()
    if "://" not in raw:
        raw = "https://" + raw
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as error:
        raise EngineError(f"The URL cannot be parsed: {error}.") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise EngineError("Give an http(s) URL with a host, such as https://example.com/page.")
    scheme = "https" if inputs["force_https"] else parts.scheme.lower()
    host = parts.hostname.rstrip(".").encode("idna").decode("ascii").lower()
    if inputs["www"] == "remove":
        host = host.removeprefix("www.")
    elif inputs["www"] == "add" and not host.startswith("www."):
        host = "www." + host
    # A default port goes, including http's :80 on a URL moved to https.
    default_ports = {_DEFAULT_PORTS[scheme], _DEFAULT_PORTS[parts.scheme.lower()]}
    netloc = host if port is None or port in default_ports else f"{host}:{port}"
    path = _normalise_path(parts.path)
    if inputs["remove_index"]:
        path = re.sub(r"/index\.(?:html?|php|aspx?)$", "/", path)
    last = path.rsplit("/", 1)[-1]
    if inputs["trailing_slash"] == "add" and "." not in last and not path.endswith("/"):
        path += "/"
    elif inputs["trailing_slash"] == "remove" and path != "/":
        path = path.rstrip("/") or "/"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    removed = [name for name, _ in pairs if inputs["strip_tracking"] and _is_tracking(name)]
    kept = [(n, v) for n, v in pairs if not (inputs["strip_tracking"] and _is_tracking(n))]
    if inputs["sort_query"]:
        kept.sort()
    fragment = "" if inputs["remove_fragment"] else parts.fragment
    url = urlunsplit((scheme, netloc, path, urlencode(kept, quote_via=quote), fragment))
    return {"url": url, "changed": url != inputs["url"].strip(), "removed_parameters": removed}


UTM_FIELDS = ("source", "medium", "campaign", "term", "content", "id")


def _utm_build(inputs: dict[str, Any]) -> dict[str, Any]:
    url = _absolute_url(inputs["url"], "url")
    values = {field: _clean_utm(inputs[field], inputs["lowercase"]) for field in UTM_FIELDS}
    missing = [f"utm_{f}" for f in ("source", "medium", "campaign") if not values[f]]
    if missing:
        raise EngineError(
            f"Give {', '.join(missing)}: every campaign link needs source, medium and campaign."
        )
    parts = urlsplit(url)
    kept = [
        (n, v)
        for n, v in parse_qsl(parts.query, keep_blank_values=True)
        if not n.lower().startswith("utm_")
    ]
    utm = [(f"utm_{f}", values[f]) for f in UTM_FIELDS if values[f]]
    query = urlencode(kept + utm, quote_via=quote)
    warnings = []
    if parts.fragment:
        warnings.append("The URL has a #fragment; the parameters go before it, as they must.")
    if any(v != inputs[f].strip() for f, v in values.items() if v):
        warnings.append(
            "Values were trimmed, spaces became underscores"
            + (" and case was lowered." if inputs["lowercase"] else ".")
        )
    return {
        "url": urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment)),
        "parameters": dict(utm),
        "warnings": warnings,
    }


def _clean_utm(value: str, lowercase: bool) -> str:
    value = "_".join(value.split())
    return value.lower() if lowercase else value


def _utm_parse(inputs: dict[str, Any]) -> dict[str, Any]:
    url = _absolute_url(inputs["url"], "url")
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    utm: dict[str, str | None] = dict.fromkeys(UTM_FIELDS)
    other, tracking = [], []
    for name, value in pairs:
        lower = name.lower()
        if lower.startswith("utm_") and lower[4:] in utm:
            utm[lower[4:]] = value
        elif _is_tracking(name):
            tracking.append({"name": name, "value": value})
        else:
            other.append({"name": name, "value": value})
    issues = [f"utm_{f} is missing." for f in ("source", "medium", "campaign") if not utm[f]]
    issues += [
        f'utm_{f} has capitals; analytics treats "{v}" and "{v.lower()}" as different.'
        for f, v in utm.items()
        if v and v != v.lower()
    ]
    issues += [f"utm_{f} contains spaces." for f, v in utm.items() if v and " " in v]
    clean_query = urlencode([(o["name"], o["value"]) for o in other], quote_via=quote)
    return {
        "base_url": urlunsplit(
            (parts.scheme, parts.netloc, parts.path, clean_query, parts.fragment)
        ),
        "utm": utm,
        "click_ids": tracking,
        "other_parameters": other,
        "issues": issues,
    }


class UrlEngine(ChoiceEngine):
    name = "seo.url"
    jobs = {"canonical": _canonical, "utm_build": _utm_build, "utm_parse": _utm_parse}
