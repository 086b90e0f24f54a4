"""``seo.jsonld``: schema.org JSON-LD for Google's rich results, checked for what they require."""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable
from typing import Any

from engines.base import ChoiceEngine, EngineError
from engines.web._helpers import _absolute_url, _lines

# --- seo.jsonld --------------------------------------------------------------------------


def _script(data: dict[str, Any]) -> str:
    # "</" inside a string would close the script element early.
    body = json.dumps(data, indent=2, ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="application/ld+json">\n{body}\n</script>'


def _optional_url(inputs: dict[str, Any], field: str) -> str | None:
    value = inputs.get(field, "").strip()
    return _absolute_url(value, field) if value else None


def _date(value: str, field: str, with_time: bool = False) -> str | None:
    value = value.strip()
    if not value:
        return None
    try:
        if with_time and "T" in value:
            datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        else:
            datetime.date.fromisoformat(value)
    except ValueError:
        example = "2024-05-01 or 2024-05-01T19:30:00+02:00" if with_time else "2024-05-01"
        raise EngineError(f"{field} must be an ISO 8601 date such as {example}.") from None
    return value


def _duration(minutes: int) -> str | None:
    if not minutes:
        return None
    hours, rest = divmod(minutes, 60)
    return "PT" + (f"{hours}H" if hours else "") + (f"{rest}M" if rest else "")


def _seconds_duration(seconds: int) -> str | None:
    if not seconds:
        return None
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return "PT" + "".join(f"{v}{u}" for v, u in ((hours, "H"), (minutes, "M"), (secs, "S")) if v)


def _prune(value: Any) -> Any:
    """Drop empty values so the markup carries only what was given."""
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [v for v in (_prune(v) for v in value) if v not in (None, "", [], {})]
    return value


def _address(inputs: dict[str, Any]) -> dict[str, Any] | None:
    address = _prune(
        {
            "@type": "PostalAddress",
            "streetAddress": inputs["street_address"].strip(),
            "addressLocality": inputs["city"].strip(),
            "addressRegion": inputs["region"].strip(),
            "postalCode": inputs["postal_code"].strip(),
            "addressCountry": inputs["country"].strip(),
        }
    )
    return address if len(address) > 1 else None


def _rating(inputs: dict[str, Any]) -> dict[str, Any] | None:
    value, count = inputs["rating_value"], inputs["rating_count"]
    if value is None:
        return None
    if not count:
        raise EngineError("rating_count must be at least 1 when rating_value is given.")
    if value > inputs.get("best_rating", 5):
        raise EngineError("rating_value cannot exceed best_rating.")
    return {
        "@type": "AggregateRating",
        "ratingValue": value,
        "ratingCount": count,
        "bestRating": inputs.get("best_rating", 5),
    }


def _faq(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    pairs: list[list[str]] = []
    for line in inputs["faq"].splitlines():
        match = re.match(r"^\s*([QA])\s*[:.)]\s*(.*)$", line, re.IGNORECASE)
        if match and match.group(1).upper() == "Q":
            pairs.append([match.group(2).strip(), ""])
        elif match and pairs:
            pairs[-1][1] = (pairs[-1][1] + " " + match.group(2)).strip()
        elif pairs and line.strip():
            pairs[-1][1] = (pairs[-1][1] + " " + line.strip()).strip()
    pairs = [p for p in pairs if p[0]]
    if not pairs:
        raise EngineError('Write each question on a line starting "Q:" and its answer after "A:".')
    unanswered = [q for q, a in pairs if not a]
    if unanswered:
        raise EngineError(f'"{unanswered[0]}" has no answer; add a line starting "A:".')
    data = {
        "@context": "https://schema.org",
        "@type": "FAQPage",
        "mainEntity": [
            {"@type": "Question", "name": q, "acceptedAnswer": {"@type": "Answer", "text": a}}
            for q, a in pairs
        ],
    }
    warnings = ["Google shows FAQ rich results only for well-known government and health sites."]
    return data, warnings


def _howto(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    steps = _lines(inputs["steps"])
    if len(steps) < 2:
        raise EngineError("Give at least two steps, one per line.")
    data = {
        "@context": "https://schema.org",
        "@type": "HowTo",
        "name": inputs["name"].strip(),
        "description": inputs["description"].strip(),
        "image": _optional_url(inputs, "image"),
        "totalTime": _duration(inputs["total_minutes"]),
        "supply": [{"@type": "HowToSupply", "name": s} for s in _lines(inputs["supplies"])],
        "tool": [{"@type": "HowToTool", "name": t} for t in _lines(inputs["tools"])],
        "step": [
            {"@type": "HowToStep", "position": i, "text": re.sub(r"^\d+[.)]\s*", "", step)}
            for i, step in enumerate(steps, start=1)
        ],
    }
    warnings = [] if inputs["description"].strip() else ["Add a description of the result."]
    return data, warnings


def _article(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    headline = inputs["headline"].strip()
    warnings = []
    if len(headline) > 110:
        warnings.append("Keep the headline under 110 characters for Google's article features.")
    images = [_absolute_url(url, "Each image") for url in _lines(inputs["images"])]
    if not images:
        warnings.append(
            "Add images (16:9, 4:3 and 1:1, at least 1200 px wide) to be eligible for rich results."
        )
    published = _date(inputs["date_published"], "date_published", with_time=True)
    if not published:
        warnings.append("Add date_published so Google can show the date.")
    if not inputs["author_name"].strip():
        warnings.append("Add the author's name.")
    data = {
        "@context": "https://schema.org",
        "@type": inputs["article_type"],
        "headline": headline,
        "description": inputs["description"].strip(),
        "image": images,
        "datePublished": published,
        "dateModified": _date(inputs["date_modified"], "date_modified", with_time=True),
        "author": {
            "@type": inputs["author_type"],
            "name": inputs["author_name"].strip(),
            "url": _optional_url(inputs, "author_url"),
        },
        "publisher": {
            "@type": "Organization",
            "name": inputs["publisher_name"].strip(),
            "logo": {"@type": "ImageObject", "url": _optional_url(inputs, "publisher_logo")},
        },
        "mainEntityOfPage": _optional_url(inputs, "url"),
    }
    return data, warnings


def _product(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    offer = None
    if inputs["price"] is not None:
        offer = {
            "@type": "Offer",
            "price": f"{inputs['price']:.2f}",
            "priceCurrency": inputs["currency"],
            "availability": f"https://schema.org/{inputs['availability']}",
            "itemCondition": f"https://schema.org/{inputs['condition']}",
            "url": _optional_url(inputs, "url"),
            "priceValidUntil": _date(inputs["price_valid_until"], "price_valid_until"),
        }
    rating = _rating(inputs)
    if offer is None and rating is None:
        raise EngineError("Google needs an offer or a rating: give a price or rating_value.")
    images = [_absolute_url(url, "Each image") for url in _lines(inputs["images"])]
    warnings = [] if images else ["Add at least one image; product results show one."]
    if not (inputs["sku"].strip() or inputs["gtin"].strip()):
        warnings.append("Add a GTIN or SKU so Google can match the product.")
    gtin = re.sub(r"\D", "", inputs["gtin"])
    if inputs["gtin"].strip() and len(gtin) not in (8, 12, 13, 14):
        raise EngineError("gtin must have 8, 12, 13 or 14 digits.")
    data = {
        "@context": "https://schema.org",
        "@type": "Product",
        "name": inputs["name"].strip(),
        "description": inputs["description"].strip(),
        "image": images,
        "sku": inputs["sku"].strip(),
        "gtin": gtin,
        "brand": {"@type": "Brand", "name": inputs["brand"].strip()},
        "offers": offer,
        "aggregateRating": rating,
    }
    return data, warnings


_DAY_CODES = {
    "mo": "Monday", "tu": "Tuesday", "we": "Wednesday", "th": "Thursday", "fr": "Friday",
    "sa": "Saturday", "su": "Sunday",
}  # fmt: skip
_DAY_ORDER = list(_DAY_CODES)
_HOURS_RE = re.compile(
    r"^([A-Za-z]{2})(?:\s*-\s*([A-Za-z]{2}))?((?:\s*,\s*[A-Za-z]{2})*)\s+"
    r"(\d{1,2}:\d{2})\s*-\s*(\d{1,2}:\d{2})$"
)


def _opening_hours(text: str) -> list[dict[str, Any]]:
    specs = []
    for line in _lines(text):
        match = _HOURS_RE.match(line)
        if not match or any(
            d and d.lower() not in _DAY_CODES for d in (match.group(1), match.group(2))
        ):
            raise EngineError(
                f'"{line}": write opening hours as "Mo-Fr 09:00-17:30" or "Sa 10:00-14:00".'
            )
        first, last, more, opens, closes = match.groups()
        start = _DAY_ORDER.index(first.lower())
        end = _DAY_ORDER.index(last.lower()) if last else start
        days = (
            _DAY_ORDER[start : end + 1]
            if end >= start
            else _DAY_ORDER[start:] + _DAY_ORDER[: end + 1]
        )
        days += [d.strip().lower() for d in more.split(",") if d.strip()]
        if any(d not in _DAY_CODES for d in days):
            raise EngineError(f'"{line}": days are Mo, Tu, We, Th, Fr, Sa, Su.')
        specs.append(
            {
                "@type": "OpeningHoursSpecification",
                "dayOfWeek": [_DAY_CODES[d] for d in days],
                "opens": opens.zfill(5),
                "closes": closes.zfill(5),
            }
        )
    return specs


def _local_business(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    address = _address(inputs)
    if address is None or "streetAddress" not in address or "addressLocality" not in address:
        raise EngineError("Google needs the address: give street_address and city at least.")
    warnings = []
    if not inputs["telephone"].strip():
        warnings.append("Add a telephone number.")
    geo = None
    if inputs["latitude"] is not None and inputs["longitude"] is not None:
        geo = {
            "@type": "GeoCoordinates",
            "latitude": inputs["latitude"],
            "longitude": inputs["longitude"],
        }
    elif inputs["latitude"] is not None or inputs["longitude"] is not None:
        raise EngineError("Give both latitude and longitude, or neither.")
    data = {
        "@context": "https://schema.org",
        "@type": inputs["business_type"],
        "name": inputs["name"].strip(),
        "image": _optional_url(inputs, "image"),
        "url": _optional_url(inputs, "url"),
        "telephone": inputs["telephone"].strip(),
        "priceRange": inputs["price_range"].strip(),
        "address": address,
        "geo": geo,
        "openingHoursSpecification": _opening_hours(inputs["opening_hours"]),
    }
    return data, warnings


def _breadcrumbs(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    items = []
    lines = _lines(inputs["trail"])
    for position, line in enumerate(lines, start=1):
        name, _, url = (
            (part.strip() for part in line.rpartition("|")) if "|" in line else (line, "", "")
        )
        if not name:
            raise EngineError(f'Line {position}: write "Name | URL".')
        item: dict[str, Any] = {"@type": "ListItem", "position": position, "name": name}
        if url:
            item["item"] = _absolute_url(url, f"The URL of {name}")
        elif position < len(lines):
            raise EngineError(
                f'"{name}" needs a URL; only the last crumb (the current page) may omit it.'
            )
        items.append(item)
    if not items:
        raise EngineError('List the crumbs one per line, "Name | URL", from the home page down.')
    warnings = ["One crumb is not a trail; start from the home page."] if len(items) == 1 else []
    return {
        "@context": "https://schema.org",
        "@type": "BreadcrumbList",
        "itemListElement": items,
    }, warnings


_ATTENDANCE = {
    "offline": "OfflineEventAttendanceMode",
    "online": "OnlineEventAttendanceMode",
    "mixed": "MixedEventAttendanceMode",
}


def _event(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    start = _date(inputs["start_date"], "start_date", with_time=True)
    if not start:
        raise EngineError("Google needs start_date, such as 2025-09-12T19:00:00+01:00.")
    mode = inputs["attendance_mode"]
    locations: list[dict[str, Any]] = []
    if mode in ("offline", "mixed"):
        address = _address(inputs)
        if not inputs["venue_name"].strip() or address is None:
            raise EngineError("An in-person event needs venue_name and an address.")
        locations.append(
            {"@type": "Place", "name": inputs["venue_name"].strip(), "address": address}
        )
    if mode in ("online", "mixed"):
        online = _optional_url(inputs, "online_url")
        if not online:
            raise EngineError("An online event needs online_url.")
        locations.append({"@type": "VirtualLocation", "url": online})
    offer = None
    if inputs["price"] is not None:
        offer = {
            "@type": "Offer",
            "price": f"{inputs['price']:.2f}",
            "priceCurrency": inputs["currency"],
            "availability": f"https://schema.org/{inputs['availability']}",
            "url": _optional_url(inputs, "ticket_url"),
            "validFrom": _date(inputs["tickets_on_sale"], "tickets_on_sale", with_time=True),
        }
    warnings = [] if offer else ["Add a price (0 for free events) to show ticket details."]
    if not inputs["image"].strip():
        warnings.append("Add an image; event results show one.")
    data = {
        "@context": "https://schema.org",
        "@type": "Event",
        "name": inputs["name"].strip(),
        "description": inputs["description"].strip(),
        "startDate": start,
        "endDate": _date(inputs["end_date"], "end_date", with_time=True),
        "eventAttendanceMode": f"https://schema.org/{_ATTENDANCE[mode]}",
        "eventStatus": f"https://schema.org/{inputs['status']}",
        "location": locations[0] if len(locations) == 1 else locations,
        "image": _optional_url(inputs, "image"),
        "organizer": {
            "@type": "Organization",
            "name": inputs["organizer_name"].strip(),
            "url": _optional_url(inputs, "organizer_url"),
        },
        "performer": {"@type": "PerformingGroup", "name": inputs["performer"].strip()},
        "offers": offer,
    }
    return data, warnings


def _organization(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    same_as = [_absolute_url(url, "Each same_as profile") for url in _lines(inputs["same_as"])]
    warnings = [f"Add {f}." for f in ("url", "logo") if not inputs[f].strip()]
    contact = None
    if inputs["telephone"].strip() or inputs["email"].strip():
        contact = {
            "@type": "ContactPoint",
            "contactType": inputs["contact_type"],
            "telephone": inputs["telephone"].strip(),
            "email": inputs["email"].strip(),
        }
    data = {
        "@context": "https://schema.org",
        "@type": inputs["organization_type"],
        "name": inputs["name"].strip(),
        "legalName": inputs["legal_name"].strip(),
        "url": _optional_url(inputs, "url"),
        "logo": _optional_url(inputs, "logo"),
        "description": inputs["description"].strip(),
        "foundingDate": _date(inputs["founding_date"], "founding_date"),
        "address": _address(inputs),
        "contactPoint": contact,
        "sameAs": same_as,
    }
    return data, warnings


def _recipe(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    images = [_absolute_url(url, "Each image") for url in _lines(inputs["images"])]
    if not images:
        raise EngineError("Google needs at least one image URL for a recipe.")
    ingredients = _lines(inputs["ingredients"])
    steps = _lines(inputs["instructions"])
    warnings = [
        f"Add {name}."
        for name, v in (("ingredients", ingredients), ("instructions", steps))
        if not v
    ]
    total = inputs["prep_minutes"] + inputs["cook_minutes"]
    data = {
        "@context": "https://schema.org",
        "@type": "Recipe",
        "name": inputs["name"].strip(),
        "description": inputs["description"].strip(),
        "image": images,
        "author": {"@type": "Person", "name": inputs["author_name"].strip()},
        "prepTime": _duration(inputs["prep_minutes"]),
        "cookTime": _duration(inputs["cook_minutes"]),
        "totalTime": _duration(total),
        "recipeYield": inputs["recipe_yield"].strip(),
        "recipeCategory": inputs["category"].strip(),
        "recipeCuisine": inputs["cuisine"].strip(),
        "keywords": inputs["keywords"].strip(),
        "nutrition": {"@type": "NutritionInformation", "calories": f"{inputs['calories']} calories"}
        if inputs["calories"]
        else None,
        "recipeIngredient": ingredients,
        "recipeInstructions": [
            {"@type": "HowToStep", "text": re.sub(r"^\d+[.)]\s*", "", s)} for s in steps
        ],
        "aggregateRating": _rating(inputs),
    }
    return data, warnings


def _video(inputs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    thumbnails = [_absolute_url(url, "Each thumbnail") for url in _lines(inputs["thumbnail_urls"])]
    if not thumbnails:
        raise EngineError("Google needs at least one thumbnail URL for a video.")
    uploaded = _date(inputs["upload_date"], "upload_date", with_time=True)
    if not uploaded:
        raise EngineError("Google needs upload_date, such as 2024-05-01T08:00:00+00:00.")
    content, embed = _optional_url(inputs, "content_url"), _optional_url(inputs, "embed_url")
    warnings = (
        [] if content or embed else ["Add content_url or embed_url so Google can fetch the video."]
    )
    if not inputs["description"].strip():
        warnings.append("Add a description.")
    data = {
        "@context": "https://schema.org",
        "@type": "VideoObject",
        "name": inputs["name"].strip(),
        "description": inputs["description"].strip(),
        "thumbnailUrl": thumbnails,
        "uploadDate": uploaded,
        "duration": _seconds_duration(inputs["duration_seconds"]),
        "contentUrl": content,
        "embedUrl": embed,
        "expires": _date(inputs["expires"], "expires", with_time=True),
    }
    return data, warnings


_SCHEMAS: dict[str, Callable[[dict[str, Any]], tuple[dict[str, Any], list[str]]]] = {
    "faq": _faq,
    "howto": _howto,
    "article": _article,
    "product": _product,
    "local_business": _local_business,
    "breadcrumbs": _breadcrumbs,
    "event": _event,
    "organization": _organization,
    "recipe": _recipe,
    "video": _video,
}


class JsonLdEngine(ChoiceEngine):
    """Builds the chosen schema.org type, drops empty values, and wraps it in its tag."""

    name = "seo.jsonld"
    choice = "schema"
    jobs = _SCHEMAS

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        data, warnings = self.jobs[params[self.choice]](inputs)
        data = _prune(data)
        return {"json_ld": data, "script": _script(data), "warnings": warnings}
