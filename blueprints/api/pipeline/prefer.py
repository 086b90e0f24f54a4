"""The ``Prefer`` header of the run endpoints: ``wait=N`` and ``respond-async`` (RFC 7240)."""

from dataclasses import dataclass

from flask import request


@dataclass(frozen=True)
class Prefer:
    wait: float
    respond_async: bool
    applied: str | None


DEFAULT_WAIT = 25
MAX_WAIT = 60
_NO_PREFERENCE = Prefer(DEFAULT_WAIT, False, None)


def parse_prefer() -> Prefer:
    """The ``Prefer`` header (RFC 7240): ``wait=N`` (clamped to 60) and ``respond-async``."""
    header = request._get_current_object().environ.get("HTTP_PREFER")
    if header is None:
        return _NO_PREFERENCE
    wait, respond_async, applied = DEFAULT_WAIT, False, []
    for preference in header.split(","):
        name, _, value = preference.strip().partition("=")
        name = name.strip().lower()
        if name == "respond-async":
            respond_async = True
            applied.append("respond-async")
        elif name == "wait" and _is_count(value := value.strip()):
            wait = min(int(value), MAX_WAIT)
            applied.append(f"wait={wait}")
    return Prefer(wait, respond_async, ", ".join(applied) or None)


def _is_count(text: str) -> bool:
    """ASCII digits only, and few enough for ``int`` (str.isdigit alone takes "²", a
    latin-1 character a header may carry, and int() refuses over 4,300 digits)."""
    return 0 < len(text) <= 18 and text.isascii() and text.isdigit()
