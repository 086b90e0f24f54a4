"""Where this app departs from plain Flask for speed, in one place.

Each departure says what it buys, measured (docs/contributing/benchmarks/api-overhead.md),
and relies on private parts of Flask, werkzeug or an extension that a dependency upgrade
may change silently: tests/test_speedups.py pins each one, so that such an upgrade fails
there, not in production. Everything else in the app uses Flask as documented.

- ``PlatformRequest``: a body of declared length read in one read, ``max_content_length``
  in one lookup, the content length without werkzeug's header mapping (private:
  ``Request._cached_data``, ``_max_content_length``, the ``stream`` cached property).
- ``PlatformJSONProvider``: answers encoded by orjson (private:
  ``DefaultJSONProvider._prepare_response_obj`` and ``_app``).
- ``PlatformFlask``: ``ensure_sync``'s answer kept per function.
- ``without_request_hooks``: an extension's request hooks taken out again after its
  ``init_app`` (flask-limiter's; private: the app's ``*_request_funcs`` lists).
- ``hook_only_where``: an extension's after-request hook run only where it has work
  (flask-login's remember cookie; private: ``LoginManager._update_remember_cookie``).
- ``append_headers``: headers built from numbers appended to werkzeug's list as they are
  (private: ``Headers._list``).

This module imports nothing of the app: it sits with ``extensions`` and ``config`` at the
bottom of the layers.
"""

from collections.abc import Callable, Iterable
from inspect import iscoroutinefunction
from types import MethodType
from typing import Any
from urllib.parse import parse_qsl

import orjson
from flask import Flask, Request, current_app
from flask.json.provider import DefaultJSONProvider
from werkzeug.datastructures import Headers, MultiDict
from werkzeug.exceptions import ClientDisconnected
from werkzeug.sansio.utils import get_content_length
from werkzeug.utils import cached_property


class PlatformRequest(Request):
    """Flask's request, reading a body of declared length in one read.

    werkzeug reads a body through a limiting stream, in chunks until the end, and finds
    the length through its header mapping: about 25 µs for a small JSON body here, a
    tenth of what an inline tool run adds to a request
    (docs/contributing/benchmarks/api-overhead.md). A body whose ``Content-Length`` is
    declared, within the limit and not chunked is read whole, straight from the server's
    input; anything else is left to werkzeug, which answers it as before.
    """

    @property
    def max_content_length(self) -> int | None:
        """Flask's (a limit set on this request, else ``MAX_CONTENT_LENGTH``), with one
        lookup of the app instead of an attribute read through its proxy (each builds and
        discards an AttributeError: blueprints/api/pipeline/keys.py)."""
        if self._max_content_length is not None or not current_app:
            return super().max_content_length
        return current_app._get_current_object().config["MAX_CONTENT_LENGTH"]

    @max_content_length.setter
    def max_content_length(self, value: int | None) -> None:
        self._max_content_length = value

    @cached_property
    def args(self) -> MultiDict[str, str]:
        """werkzeug's, except for bytes of the query string sent raw rather than %-escaped
        that are not UTF-8 (``?q=\\x80``): werkzeug's ``args`` raised UnicodeDecodeError for
        them (a 500; it holds that such a client is wrong, pallets/werkzeug#3022). They stay
        %-escaped here, as werkzeug leaves an escape that is not UTF-8 (``?q=%80``)."""
        return self.parameter_storage_class(
            parse_qsl(
                self.query_string.decode(errors="werkzeug.url_quote"),
                keep_blank_values=True,
                errors="werkzeug.url_quote",
            )
        )

    @cached_property
    def content_length(self) -> int | None:
        environ = self.environ  # werkzeug's own parsing, without its header mapping
        return get_content_length(
            environ.get("CONTENT_LENGTH"), environ.get("HTTP_TRANSFER_ENCODING")
        )

    def get_data(
        self, cache: bool = True, as_text: bool = False, parse_form_data: bool = False
    ) -> Any:
        if getattr(self, "_cached_data", None) is None and not parse_form_data:
            data = self._read_declared_body()
            if data is not None:
                if cache:
                    self._cached_data = data  # where werkzeug (forms, get_json) looks
                return data.decode(errors="replace") if as_text else data
        return super().get_data(cache, as_text, parse_form_data)  # type: ignore[call-overload]

    def _read_declared_body(self) -> bytes | None:
        """The whole body, or None where werkzeug must read it (chunked, no or bad length,
        over the limit: it answers 413, or the stream was already opened)."""
        environ = self.environ
        declared = environ.get("CONTENT_LENGTH")
        if (
            declared is None
            or not (declared.isascii() and declared.isdigit())
            or len(declared) > 18  # int() refuses over 4,300 digits; werkzeug reads it as 0
            or "HTTP_TRANSFER_ENCODING" in environ
            or "stream" in self.__dict__
        ):
            return None
        length, limit = int(declared), self.max_content_length
        if limit is not None and length > limit:
            return None
        data = environ["wsgi.input"].read(length) if length else b""
        if len(data) != length:  # the client went away before sending it all
            raise ClientDisconnected()
        return data


class PlatformJSONProvider(DefaultJSONProvider):
    """Flask's JSON, with answers (``jsonify``, a view's dict) encoded by orjson.

    The stdlib encoder took a tenth of whoami's time in Python here. The answer is what
    Flask's provider writes (keys sorted, compact, a final newline; dates, UUIDs, dataclasses
    and ``__html__`` objects through Flask's own ``default``), except that text is UTF-8
    rather than ``\\u`` escapes, and a NaN or an infinity is ``null`` rather than a token JSON
    does not have. What orjson cannot encode (an integer wider than 64 bits, keys of mixed
    types) is left to the stdlib, as are debug mode's indented answers, ``dumps`` and all
    parsing (orjson would read a wide integer as a float).
    """

    _OPTIONS = (
        orjson.OPT_SORT_KEYS
        | orjson.OPT_NON_STR_KEYS
        | orjson.OPT_PASSTHROUGH_DATETIME
        | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_APPEND_NEWLINE
    )

    def response(self, *args: Any, **kwargs: Any):
        if self.compact is False or (self.compact is None and self._app.debug):
            return super().response(*args, **kwargs)
        obj = self._prepare_response_obj(args, kwargs)
        try:
            encoded = orjson.dumps(obj, default=self.default, option=self._OPTIONS)
        except orjson.JSONEncodeError:
            return super().response(obj)
        return self._app.response_class(encoded, mimetype=self.mimetype)


class PlatformFlask(Flask):
    """Flask, remembering which hooks and views are coroutines.

    Flask asks ``ensure_sync`` about every hook and view on every request, and each answer
    takes an ``inspect`` call (a dozen a request here, about 25 µs in all). The answer never
    changes for a function, so it is kept (per function, not per bound method: MethodView
    binds a new view object on every request).
    """

    request_class = PlatformRequest
    json_provider_class = PlatformJSONProvider

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._coroutines: dict[Callable, bool] = {}

    def ensure_sync(self, func: Callable) -> Callable:
        # Not getattr(func, "__func__", func): a miss builds an AttributeError to discard.
        key = func.__func__ if type(func) is MethodType else func
        is_coroutine = self._coroutines.get(key)
        if is_coroutine is None:
            is_coroutine = self._coroutines[key] = iscoroutinefunction(func)
        return self.async_to_sync(func) if is_coroutine else func


_HOOKS = ("before_request_funcs", "after_request_funcs", "teardown_request_funcs")


def without_request_hooks(app: Flask, init_app: Callable[[Flask], None]) -> None:
    """``init_app(app)`` (flask-limiter's), without the request hooks it adds, unless
    default or application limits are configured.

    The hooks evaluate default, application and decorated limits and add their headers. This
    app sets none of those: the API spends each key's limit on the limiter's strategy and
    storage in its own pipeline (services/ratelimit.py) and writes its own headers. The hooks
    only cost time (about 60 µs a request, measured), so whatever ``init_app`` hooked in is
    taken out again.
    """
    before = {name: list(getattr(app, name).get(None, [])) for name in _HOOKS}
    init_app(app)
    if app.config.get("RATELIMIT_DEFAULT") or app.config.get("RATELIMIT_APPLICATION"):
        return
    for name in _HOOKS:
        getattr(app, name)[None] = before[name]


def hook_only_where(app: Flask, hook: Callable[[Any], Any], where: Callable[[], bool]) -> None:
    """Run the app-wide after-request ``hook`` (an extension's) only when ``where()``.

    flask-login's remember-cookie hook reads the cookie session through three proxies on
    every request (about 3 µs); under /v1 there is no cookie session to read."""
    hooks = app.after_request_funcs[None]

    def only_there(response):
        return hook(response) if where() else response

    only_there.hook, only_there.where = hook, where  # what it runs, and where
    hooks[hooks.index(hook)] = only_there


def append_headers(headers: Headers, pairs: Iterable[tuple[str, str]]) -> None:
    """Append headers whose values the caller built from numbers and quoted names (no line
    breaks), straight onto werkzeug's list: ``Headers.extend`` searches each value for line
    breaks with a regular expression, which for the five rate-limit headers cost as much as
    building them."""
    headers._list.extend(pairs)
