"""Web and network (convert.web): URLs, query strings, HTTP statuses, MIME types, IP subnets."""

from __future__ import annotations

import contextlib
import re
from typing import Any

from engines.base import ChoiceEngine, EngineError
from engines.convert._helpers import _convert_domain

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21, "ssh": 22,
                  "sftp": 22, "smtp": 25, "imap": 143, "imaps": 993, "ldap": 389,
                  "postgresql": 5432, "postgres": 5432, "mysql": 3306, "redis": 6379,
                  "mongodb": 27017, "amqp": 5672}  # fmt: skip


def _url_parse(inputs: dict[str, Any]) -> dict[str, Any]:
    from urllib.parse import parse_qsl, unquote, urlsplit

    url = inputs["url"].strip()
    parts = urlsplit(url)
    if not parts.scheme or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme):
        raise EngineError("The URL has no scheme: write it in full, e.g. https://example.com/.")
    try:
        port = parts.port
    except ValueError:
        raise EngineError("The port is not a number from 0 to 65535.") from None
    host = parts.hostname
    if parts.netloc and host and not host.startswith("["):
        with contextlib.suppress(EngineError):  # not a domain name: shown as written
            host = _convert_domain(host)[0] if "xn--" in host else host
    scheme = parts.scheme.lower()
    default_port = _DEFAULT_PORTS.get(scheme)
    origin = f"{scheme}://{parts.hostname}" if parts.hostname else None
    if origin and port is not None and port != default_port:
        origin += f":{port}"
    return {
        "scheme": scheme,
        "username": unquote(parts.username) if parts.username is not None else None,
        "password": unquote(parts.password) if parts.password is not None else None,
        "host": host,
        "port": port if port is not None else default_port,
        "explicit_port": port is not None,
        "origin": origin,
        "path": parts.path,
        "path_segments": [unquote(s) for s in parts.path.split("/") if s],
        "query": parts.query,
        "query_params": [
            {"name": name, "value": value}
            for name, value in parse_qsl(parts.query, keep_blank_values=True)
        ],
        "fragment": parts.fragment,
    }


def _query_build(inputs: dict[str, Any]) -> dict[str, Any]:
    from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

    pairs = []
    for number, line in enumerate(inputs["params"].splitlines(), start=1):
        if not line.strip():
            continue
        name, equals, value = line.partition("=")
        if not equals or not name.strip():
            raise EngineError(f"Line {number}: write one name=value per line.")
        pairs.append((name.strip(), value.strip()))
    if len(pairs) > 500:
        raise EngineError(f"Give at most 500 parameters; there are {len(pairs)}.")
    if inputs["sort"]:
        pairs.sort(key=lambda pair: pair[0])
    escape = quote_plus if inputs["spaces"] == "plus" else quote
    query = "&".join(f"{escape(n, safe='')}={escape(v, safe='')}" for n, v in pairs)
    base = inputs["base_url"].strip()
    url = None
    if base:
        parts = urlsplit(base)
        if not parts.scheme or not parts.netloc:
            raise EngineError("The base URL must be absolute, e.g. https://example.com/search.")
        merged = "&".join(part for part in (parts.query, query) if part)
        url = urlunsplit((parts.scheme, parts.netloc, parts.path or "/", merged, parts.fragment))
    return {"query": query, "url": url, "parameters": len(pairs)}


# (phrase, when to use it) for every registered status code, RFC 9110 names.
_HTTP_STATUSES: dict[int, tuple[str, str]] = {
    100: ("Continue", "Interim reply to 'Expect: 100-continue': the client may send the body."),
    101: ("Switching Protocols", "The server agrees to an Upgrade request, e.g. to WebSocket."),
    102: ("Processing", "WebDAV: the request is still being processed (deprecated)."),
    103: ("Early Hints", "Send Link headers early so the browser can preload resources."),
    200: ("OK", "Success with a body: GET results, or the outcome of a POST/PUT."),
    201: ("Created", "A resource was created; put its URL in the Location header."),
    202: ("Accepted", "Queued for asynchronous processing; return a way to poll the status."),
    203: ("Non-Authoritative Information", "A proxy returns a modified copy of the origin's 200."),
    204: ("No Content", "Success with no body, e.g. after DELETE or a PUT that returns nothing."),
    205: ("Reset Content", "Success; the client should reset the form or view that sent it."),
    206: ("Partial Content", "Answer to a Range request with only the requested bytes."),
    207: ("Multi-Status", "WebDAV: several independent results in one XML body."),
    208: ("Already Reported", "WebDAV: members already listed earlier in this response."),
    226: ("IM Used", "Delta encoding: the response is a delta applied to the current instance."),
    300: ("Multiple Choices", "Several representations exist; the client should pick one."),
    301: (
        "Moved Permanently",
        "Permanent redirect; clients may change POST to GET. Prefer 308 for APIs.",
    ),
    302: ("Found", "Temporary redirect; clients may change POST to GET. Prefer 307 or 303."),
    303: ("See Other", "After a POST, send the client to a result page to GET."),
    304: ("Not Modified", "Conditional GET: the cached copy (ETag / Last-Modified) is current."),
    305: ("Use Proxy", "Deprecated: never use."),
    307: ("Temporary Redirect", "Temporary redirect that keeps the method and body."),
    308: ("Permanent Redirect", "Permanent redirect that keeps the method and body."),
    400: ("Bad Request", "Malformed request: unparseable JSON, bad syntax, missing framing."),
    401: ("Unauthorized", "Missing or invalid credentials; send WWW-Authenticate."),
    402: ("Payment Required", "Reserved; some APIs use it when a plan or quota must be paid."),
    403: ("Forbidden", "Authenticated (or not) but not allowed; new credentials won't help."),
    404: ("Not Found", "No resource at this URL (or hiding one the caller may not see)."),
    405: ("Method Not Allowed", "The URL exists but not for this method; send an Allow header."),
    406: ("Not Acceptable", "No representation matches the Accept headers."),
    407: ("Proxy Authentication Required", "Like 401, for a proxy; send Proxy-Authenticate."),
    408: ("Request Timeout", "The client took too long to send the request; it may retry."),
    409: ("Conflict", "Conflicts with current state: duplicate key, edit conflict, wrong state."),
    410: ("Gone", "Removed on purpose and permanently; tells crawlers to drop the URL."),
    411: ("Length Required", "The request needs a Content-Length header."),
    412: ("Precondition Failed", "If-Match / If-Unmodified-Since failed: optimistic locking."),
    413: ("Content Too Large", "The body exceeds the server's limit; may send Retry-After."),
    414: ("URI Too Long", "The URL is longer than the server accepts; move data to a body."),
    415: ("Unsupported Media Type", "The body's Content-Type or encoding is not accepted."),
    416: ("Range Not Satisfiable", "The Range header lies outside the resource."),
    417: ("Expectation Failed", "The Expect header cannot be met."),
    418: ("I'm a teapot", "An April Fools' joke (RFC 2324); do not use in real APIs."),
    421: ("Misdirected Request", "The request reached a server that cannot answer for this host."),
    422: ("Unprocessable Content", "Well-formed but invalid: field validation errors."),
    423: ("Locked", "WebDAV: the resource is locked."),
    424: ("Failed Dependency", "WebDAV: failed because a request it depends on failed."),
    425: ("Too Early", "The server will not process a request that might be replayed (0-RTT)."),
    426: ("Upgrade Required", "The client must switch protocol, named in the Upgrade header."),
    428: (
        "Precondition Required",
        "The request must be conditional (If-Match) to avoid lost updates.",
    ),
    429: ("Too Many Requests", "Rate limited; say when to retry in Retry-After."),
    431: ("Request Header Fields Too Large", "Headers (often cookies) are too large."),
    451: ("Unavailable For Legal Reasons", "Blocked by a legal demand, such as a court order."),
    500: ("Internal Server Error", "An unexpected server failure; a bug, not the client's fault."),
    501: ("Not Implemented", "The server does not support this method at all."),
    502: ("Bad Gateway", "A proxy or gateway got an invalid answer from the upstream server."),
    503: ("Service Unavailable", "Overloaded or down for maintenance; send Retry-After."),
    504: ("Gateway Timeout", "A proxy or gateway got no answer in time from upstream."),
    505: ("HTTP Version Not Supported", "The HTTP version of the request is not supported."),
    506: ("Variant Also Negotiates", "Content negotiation is misconfigured on the server."),
    507: ("Insufficient Storage", "WebDAV: the server cannot store what is needed."),
    508: ("Loop Detected", "WebDAV: an infinite loop while processing the request."),
    510: ("Not Extended", "Obsolete: further extensions are required."),
    511: ("Network Authentication Required", "A captive portal requires login to the network."),
}
_STATUS_CLASSES = {1: "informational", 2: "success", 3: "redirection", 4: "client error",
                   5: "server error"}  # fmt: skip
# Worth retrying unchanged (possibly after Retry-After).
_RETRYABLE = {408, 425, 429, 500, 502, 503, 504}


def _http_status(inputs: dict[str, Any]) -> dict[str, Any]:
    query = inputs["query"].strip().lower()
    if re.fullmatch(r"[1-5]xx", query):
        codes = [code for code in _HTTP_STATUSES if code // 100 == int(query[0])]
    elif query.isdigit():
        if int(query) not in _HTTP_STATUSES:
            raise EngineError(f"{query} is not a registered HTTP status code.")
        codes = [int(query)]
    else:
        words = query.split()
        codes = [
            code
            for code, (phrase, usage) in _HTTP_STATUSES.items()
            if all(word in f"{phrase} {usage}".lower() for word in words)
        ]
        if not codes:
            raise EngineError(f"No status code mentions '{inputs['query'].strip()}'.")
    return {
        "statuses": [
            {
                "code": code,
                "phrase": _HTTP_STATUSES[code][0],
                "class": _STATUS_CLASSES[code // 100],
                "when_to_use": _HTTP_STATUSES[code][1],
                "retryable": code in _RETRYABLE,
            }
            for code in codes
        ]
    }


# Types Python's table lacks or gets wrong for today's web.
_OOXML = "application/vnd.openxmlformats-officedocument"
_EXTRA_MIME_TYPES = {
    ".webp": "image/webp",
    ".avif": "image/avif",
    ".heic": "image/heic",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".otf": "font/otf",
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".md": "text/markdown",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".jsonld": "application/ld+json",
    ".webmanifest": "application/manifest+json",
    ".opus": "audio/ogg",
    ".ogg": "audio/ogg",
    ".flac": "audio/flac",
    ".mkv": "video/x-matroska",
    ".7z": "application/x-7z-compressed",
    ".gz": "application/gzip",
    ".rar": "application/vnd.rar",
    ".epub": "application/epub+zip",
    ".ics": "text/calendar",
    ".csv": "text/csv",
    ".svg": "image/svg+xml",
    ".docx": f"{_OOXML}.wordprocessingml.document",
    ".xlsx": f"{_OOXML}.spreadsheetml.sheet",
    ".pptx": f"{_OOXML}.presentationml.presentation",
}


def _mime_table() -> Any:
    """Python's built-in table (never the machine's files, so answers do not vary)."""
    import mimetypes

    table = mimetypes.MimeTypes()
    for extension, mime_type in _EXTRA_MIME_TYPES.items():
        table.add_type(mime_type, extension)
    return table


def _mime_lookup(inputs: dict[str, Any]) -> dict[str, Any]:
    query = inputs["query"].strip().lower()
    table = _mime_table()
    if "/" in query:
        mime_type = query.split(";")[0].strip()
        extensions = sorted(set(table.guess_all_extensions(mime_type, strict=False)))
        if not extensions:
            raise EngineError(f"No file extension is known for the media type '{mime_type}'.")
        return {
            "mime_type": mime_type,
            "extensions": extensions,
            "encoding": None,
            "category": mime_type.split("/")[0],
        }
    name = query if "." in query else f"file.{query}"
    name = name if not name.startswith(".") else f"file{name}"
    mime_type, encoding = table.guess_type(name, strict=False)
    if mime_type is None:
        raise EngineError(f"No media type is known for '{inputs['query'].strip()}'.")
    return {
        "mime_type": mime_type,
        "extensions": sorted(set(table.guess_all_extensions(mime_type, strict=False))),
        "encoding": encoding,
        "category": mime_type.split("/")[0],
    }


def _ip_network(text: str) -> Any:
    import ipaddress

    try:
        return ipaddress.ip_interface(text.strip())
    except ValueError:
        raise EngineError(
            f"'{text.strip()}' is not an IP network: write it like 192.168.1.0/24, "
            "10.0.0.5/255.255.255.0 or 2001:db8::/48."
        ) from None


_MAX_SUBNETS = 256


def _subnet(inputs: dict[str, Any]) -> dict[str, Any]:
    interface = _ip_network(inputs["cidr"])
    network = interface.network
    v4 = network.version == 4
    total = network.num_addresses
    # IPv4 /31 and /32 (RFC 3021) and every IPv6 prefix use all addresses for hosts.
    whole = not v4 or network.prefixlen >= 31
    first = network.network_address if whole else network.network_address + 1
    last = network.broadcast_address if whole else network.broadcast_address - 1
    subnets = None
    if inputs["split_prefix"]:
        new_prefix = inputs["split_prefix"]
        if not network.prefixlen < new_prefix <= network.max_prefixlen:
            raise EngineError(
                f"To split a /{network.prefixlen}, the new prefix must be from "
                f"{network.prefixlen + 1} to {network.max_prefixlen}."
            )
        if 2 ** (new_prefix - network.prefixlen) > _MAX_SUBNETS:
            raise EngineError(
                f"A /{network.prefixlen} splits into {2 ** (new_prefix - network.prefixlen):,} "
                f"/{new_prefix} subnets; at most {_MAX_SUBNETS} are listed."
            )
        subnets = [str(s) for s in network.subnets(new_prefix=new_prefix)]
    return {
        "network": str(network),
        "version": network.version,
        "prefix_length": network.prefixlen,
        "netmask": str(network.netmask),
        "wildcard_mask": str(network.hostmask),
        "network_address": str(network.network_address),
        "broadcast_address": str(network.broadcast_address) if v4 else None,
        "first_host": str(first),
        "last_host": str(last),
        "total_addresses": str(total),
        "usable_hosts": str(total if whole else total - 2),
        "private": network.is_private,
        "contains_input_host": str(interface.ip)
        if interface.ip != network.network_address
        else None,
        "subnets": subnets,
    }


def _ip_inspect(inputs: dict[str, Any]) -> dict[str, Any]:
    import ipaddress

    text = inputs["ip"].strip()
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise EngineError(f"'{text}' is not an IPv4 or IPv6 address.") from None
    v6 = address.version == 6
    mapped = address.ipv4_mapped if v6 else None
    return {
        "version": address.version,
        "compressed": address.compressed,
        "exploded": address.exploded,
        "integer": str(int(address)),
        "hex": f"0x{int(address):0{8 if not v6 else 32}x}",
        "reverse_pointer": address.reverse_pointer,
        "private": address.is_private,
        "global": address.is_global,
        "loopback": address.is_loopback,
        "link_local": address.is_link_local,
        "multicast": address.is_multicast,
        "reserved": address.is_reserved,
        "unspecified": address.is_unspecified,
        "ipv4_mapped": str(mapped) if mapped else None,
    }


class WebEngine(ChoiceEngine):
    """URLs, query strings, HTTP status codes, MIME types, IP addresses and subnets."""

    name = "convert.web"
    jobs = {
        "url-parse": _url_parse,
        "query-build": _query_build,
        "http-status": _http_status,
        "mime-type": _mime_lookup,
        "subnet": _subnet,
        "ip-inspect": _ip_inspect,
    }
