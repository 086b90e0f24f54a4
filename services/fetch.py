"""Fetch a user-given URL without letting it reach into our own network (the SSRF guard).

Every hop is checked the same way: only http and https; the host is resolved once with
``socket.getaddrinfo`` and EVERY address it resolves to must be public (``check_address``);
then the connection goes to that checked address itself, with the original ``Host`` header
and TLS server name, so a DNS answer that changes between the check and the connection
(DNS rebinding) cannot swap the target. Redirects are followed by hand (at most 3), each
hop checked again. The body is streamed under a byte limit and a total deadline. No proxy
from the environment is used: it would connect on our behalf to an unchecked address.

``post`` sends one request the same way (checked address, pinned connection) but never
follows a redirect and never reads the answer's body: webhook delivery uses it.

``FETCH_ALLOW_PRIVATE`` (development and tests) lets private targets through; the cloud
metadata addresses stay refused even then. ``check_address`` and ``resolve_public`` are
public so that a webhook URL can be checked the same way when it is saved.
"""

import ipaddress
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from pathlib import PurePosixPath
from urllib.parse import unquote, urljoin, urlsplit

import certifi
import urllib3
from flask import current_app, has_app_context
from requests.utils import requote_uri

from engines.blob import Blob

MAX_REDIRECTS = 3
USER_AGENT = "svc-fetch/1 (+fetches URLs given as tool inputs)"
# The CA bundle for https; tests point it at their own certificate authority.
CA_CERTS = certifi.where()
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024

GENERIC_TYPES = frozenset(
    {"", "application/octet-stream", "binary/octet-stream", "application/unknown", "unknown"}
)

METADATA_ADDRESSES = frozenset({IPv4Address("169.254.169.254"), IPv6Address("fd00:ec2::254")})
_THIS_NETWORK = IPv4Network("0.0.0.0/8")
_SHARED = IPv4Network("100.64.0.0/10")
# IPv6 forms that carry an IPv4 address which the network may end up reaching.
_IPV4_COMPATIBLE = IPv6Network("::/96")
_IPV4_TRANSLATED = IPv6Network("::ffff:0:0:0/96")
# The local-use NAT64 prefix 64:ff9b:1::/48 is not global, so it is refused as it stands.
_NAT64 = IPv6Network("64:ff9b::/96")
# Forms whose packets go to the embedded IPv4 address itself: it alone decides.
_TRANSLATED_FORMS = ("IPv4-mapped", "NAT64")


class FetchError(Exception):
    """The URL could not be fetched; the message is safe to show to the caller."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class FetchRefused(FetchError):
    """Refused or failed: bad scheme, non-public address, unreachable, error status (→ 422)."""


class FetchTooLarge(FetchError):
    """The body is larger than ``max_bytes`` (→ 413)."""

    def __init__(self, message: str, max_bytes: int):
        super().__init__(message)
        self.max_bytes = max_bytes


def check_address(ip: str | IPv4Address | IPv6Address) -> str | None:
    """Why ``ip`` must not be connected to, or None for a public unicast address.

    IPv6 forms that embed an IPv4 address (mapped, compatible, translated, NAT64, 6to4,
    Teredo) are refused when that IPv4 address is; the mapped and NAT64 forms, whose packets
    go to the IPv4 address, are otherwise judged by it alone.
    """
    try:
        address = _parse_ip(ip)
    except ValueError:
        return "not an IP address"
    embedded, form = _embedded_ipv4(address)
    if embedded is not None:
        reason = _reason(embedded)
        if reason:
            return f"{reason} (in {form} form)"
        if form in _TRANSLATED_FORMS:
            # A connection to this form reaches the IPv4 address, which is public.
            return None
    return _reason(address)


def is_metadata_address(ip: str | IPv4Address | IPv6Address) -> bool:
    """True for a cloud metadata service address, in any IPv6 form of it."""
    try:
        address = _parse_ip(ip)
    except ValueError:
        return False
    return address in METADATA_ADDRESSES or _embedded_ipv4(address)[0] in METADATA_ADDRESSES


def resolve_public(host: str, port: int, *, allow_private: bool = False) -> list[str]:
    """Resolve ``host`` once; every address must pass ``check_address`` (FetchRefused).

    With ``allow_private`` only the metadata addresses are refused. Returns the addresses
    in resolver order, without duplicates: connect to these, never resolve ``host`` again.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise FetchRefused(f"The host {host} could not be resolved.") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not addresses:
        raise FetchRefused(f"The host {host} could not be resolved.")
    for ip in addresses:
        reason = check_address(ip)
        if reason is None or (allow_private and not is_metadata_address(ip)):
            continue
        # The address itself is not shown: it would map internal names for the caller.
        verb = "is" if _same_ip(host, ip) else "resolves to"
        raise FetchRefused(f"{host} {verb} {reason}; only public addresses can be fetched.")
    return addresses


def type_allowed(content_type: str, allowed_types: Iterable[str] | str | None) -> bool:
    """True when ``content_type`` matches one of ``allowed_types`` (``image/*``, ``*/*``)."""
    if not allowed_types:
        return True
    if isinstance(allowed_types, str):
        allowed_types = (allowed_types,)
    essence = content_type.split(";")[0].strip().lower()
    major = essence.split("/")[0]
    for pattern in allowed_types:
        pattern = pattern.strip().lower()
        if pattern in ("*/*", essence) or pattern == f"{major}/*":
            return True
    return False


def fetch(
    url: str,
    *,
    max_bytes: int,
    timeout: float = 10,
    allowed_types: Iterable[str] | str | None = None,
    allow_private: bool | None = None,
) -> Blob:
    """GET ``url`` under the SSRF guard, at most ``max_bytes`` within ``timeout`` seconds.

    Raises FetchRefused or FetchTooLarge. ``allowed_types`` refuses a response whose declared
    Content-Type is specific and not allowed, before its body is read; a missing or generic
    type is returned as ``application/octet-stream`` for the caller to sniff
    (``services.binary.decode_binary`` does). ``allow_private`` defaults to the app's
    ``FETCH_ALLOW_PRIVATE``.
    """
    if allow_private is None:
        allow_private = private_allowed()
    deadline = time.monotonic() + timeout
    for _ in range(MAX_REDIRECTS + 1):
        target = _Target.parse(url)
        addresses = resolve_public(target.host, target.port, allow_private=allow_private)
        pool, response = _open(target, addresses, deadline, "GET", _GET_HEADERS)
        try:
            if response.status in _REDIRECTS:
                location = response.headers.get("Location")
                if not location:
                    raise FetchRefused(f"{target.shown} redirected without a Location.")
                url = urljoin(url, location.strip())
                continue
            return _read(target, response, max_bytes, deadline, allowed_types, timeout)
        finally:
            # One connection per hop, never reused: close the body's file too, or its
            # socket lingers until garbage collection.
            response.close()
            pool.close()
    raise FetchRefused(f"The URL redirected more than {MAX_REDIRECTS} times.")


def check_url(url: str, *, allow_private: bool | None = None) -> list[str]:
    """Refuse ``url`` as ``fetch`` and ``post`` would before connecting (FetchRefused).

    Returns the checked addresses its host resolves to now.
    """
    if allow_private is None:
        allow_private = private_allowed()
    target = _Target.parse(url)
    return resolve_public(target.host, target.port, allow_private=allow_private)


def private_allowed() -> bool:
    """The operator setting ``FETCH_ALLOW_PRIVATE`` (False outside an app context)."""
    return has_app_context() and bool(current_app.config.get("FETCH_ALLOW_PRIVATE"))


@dataclass(frozen=True)
class Answer:
    """What a ``post`` got back: the status and the headers (names in lower case)."""

    status: int
    headers: dict[str, str]


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    timeout: float = 10,
    allow_private: bool | None = None,
) -> Answer:
    """POST ``body`` to ``url`` once, under the SSRF guard, within ``timeout`` seconds.

    A redirect is not followed: the 3xx is the answer. The answer's body is never read.
    Raises FetchRefused when the URL or its address is refused, when no address answers,
    on a TLS failure, or when the answer takes longer than ``timeout``.
    """
    if allow_private is None:
        allow_private = private_allowed()
    started = time.monotonic()
    deadline = started + timeout
    target = _Target.parse(url)
    addresses = resolve_public(target.host, target.port, allow_private=allow_private)
    sent = {"User-Agent": USER_AGENT, **headers, "Content-Length": str(len(body))}
    pool, response = _open(target, addresses, deadline, "POST", sent, body)
    try:
        if time.monotonic() > deadline:
            raise FetchRefused(f"{target.shown} took longer than {timeout:g} s to answer.")
        return Answer(response.status, {name.lower(): v for name, v in response.headers.items()})
    finally:
        response.close()
        pool.close()


@dataclass(frozen=True)
class _Target:
    url: str
    https: bool
    host: str  # ASCII (IDNA), without brackets
    port: int
    request_target: str  # path and query
    host_header: str

    @classmethod
    def parse(cls, url: str) -> "_Target":
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError:
            raise FetchRefused("The URL is malformed.") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise FetchRefused("Only http and https URLs can be fetched.")
        if parts.username is not None or parts.password is not None:
            raise FetchRefused("The URL must not carry a user name or password.")
        if not parts.hostname:
            raise FetchRefused("The URL has no host.")
        try:
            host = parts.hostname.encode("idna").decode("ascii")
        except UnicodeError:
            raise FetchRefused(f"The host {parts.hostname} is not a valid name.") from None
        default_port = 443 if scheme == "https" else 80
        port = port or default_port
        bracketed = f"[{host}]" if ":" in host else host
        path = requote_uri(parts.path or "/") + (
            f"?{requote_uri(parts.query)}" if parts.query else ""
        )
        return cls(
            url=url,
            https=scheme == "https",
            host=host,
            port=port,
            request_target=path,
            host_header=bracketed if port == default_port else f"{bracketed}:{port}",
        )

    @property
    def shown(self) -> str:
        return f"{'https' if self.https else 'http'}://{self.host_header}"


_GET_HEADERS = {"User-Agent": USER_AGENT, "Accept": "*/*", "Accept-Encoding": "identity"}


def _open(
    target: _Target,
    addresses: list[str],
    deadline: float,
    method: str,
    headers: dict[str, str],
    body: bytes | None = None,
):
    """Connect to the first checked address that answers and send the request."""
    failure = "no address answered"
    for ip in addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            failure = "timed out"
            break
        pool = _pool(target, ip, remaining)
        try:
            response = pool.urlopen(
                method,
                target.request_target,
                body=body,
                headers={"Host": target.host_header, **headers},
                redirect=False,
                retries=False,
                assert_same_host=False,
                preload_content=False,
            )
        except urllib3.exceptions.SSLError as error:
            pool.close()
            raise FetchRefused(f"{target.shown}: TLS failed ({_first_line(error)}).") from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            pool.close()
            failure = _describe(error)
            continue
        return pool, response
    raise FetchRefused(f"{target.shown} could not be reached: {failure}.")


def _pool(target: _Target, ip: str, remaining: float):
    timeout = urllib3.Timeout(connect=remaining, read=remaining)
    if not target.https:
        return urllib3.HTTPConnectionPool(ip, target.port, timeout=timeout, maxsize=1)
    return urllib3.HTTPSConnectionPool(
        ip,
        target.port,
        timeout=timeout,
        maxsize=1,
        cert_reqs="CERT_REQUIRED",
        ca_certs=CA_CERTS,
        # TLS speaks to the name, TCP to the checked address.
        server_hostname=target.host,
        assert_hostname=target.host,
    )


def _read(target, response, max_bytes, deadline, allowed_types, timeout) -> Blob:
    if not 200 <= response.status < 300:
        raise FetchRefused(f"{target.shown} answered HTTP {response.status}.")
    declared = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if declared not in GENERIC_TYPES and not type_allowed(declared, allowed_types):
        expected = [allowed_types] if isinstance(allowed_types, str) else allowed_types
        raise FetchRefused(f"{target.shown} sent {declared}; expected {' or '.join(expected)}.")
    length = response.headers.get("Content-Length", "")
    if length.isdigit() and int(length) > max_bytes:
        raise FetchTooLarge(_too_large(int(length), max_bytes), max_bytes)
    chunks, total = [], 0
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise FetchRefused(f"{target.shown} took longer than {timeout:g} s.")
            # Each read may wait only for what is left of the deadline (a slow drip).
            sock = getattr(response.connection, "sock", None)
            if sock is not None:
                sock.settimeout(remaining)
            chunk = response.read1(_CHUNK, decode_content=True)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise FetchTooLarge(_too_large(None, max_bytes), max_bytes)
            chunks.append(chunk)
    except (urllib3.exceptions.TimeoutError, TimeoutError):
        raise FetchRefused(f"{target.shown} took longer than {timeout:g} s.") from None
    except (urllib3.exceptions.HTTPError, OSError) as error:
        raise FetchRefused(f"{target.shown} failed mid-body: {_describe(error)}.") from None
    name = unquote(PurePosixPath(urlsplit(target.url).path).name) or None
    return Blob(b"".join(chunks), declared or "application/octet-stream", name)


def _too_large(length: int | None, max_bytes: int) -> str:
    size = f" ({length} bytes)" if length is not None else ""
    return f"The file at the URL is larger{size} than the {max_bytes} bytes accepted."


def _describe(error: Exception) -> str:
    # NewConnectionError is a kind of timeout error in urllib3: ask for it first.
    if isinstance(error, urllib3.exceptions.NewConnectionError | ConnectionError):
        return "connection refused or unreachable"
    if isinstance(error, urllib3.exceptions.TimeoutError | TimeoutError):
        return "timed out"
    return _first_line(error)


def _first_line(error: Exception) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0][:200]


def _same_ip(host: str, ip: str) -> bool:
    try:
        return _parse_ip(host) == _parse_ip(ip)
    except ValueError:
        return False


def _parse_ip(ip) -> IPv4Address | IPv6Address:
    if isinstance(ip, IPv4Address | IPv6Address):
        address = ip
    else:
        address = ipaddress.ip_address(str(ip).strip().strip("[]"))
    if isinstance(address, IPv6Address) and address.scope_id:
        address = IPv6Address(str(address).split("%")[0])
    return address


def _embedded_ipv4(address) -> tuple[IPv4Address | None, str | None]:
    """The IPv4 address an IPv6 form carries, and the form's name."""
    if not isinstance(address, IPv6Address):
        return None, None
    low32 = IPv4Address(int(address) & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped, "IPv4-mapped"
    if address in _NAT64:
        return low32, "NAT64"
    if address in _IPV4_TRANSLATED:
        return low32, "IPv4-translated"
    if address in _IPV4_COMPATIBLE and int(address) > 1:
        return low32, "IPv4-compatible"
    if address.sixtofour is not None:
        return address.sixtofour, "6to4"
    if address.teredo is not None:
        return address.teredo[1], "Teredo"
    return None, None


def _reason(address: IPv4Address | IPv6Address) -> str | None:
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, IPv4Address):
        if address in _THIS_NETWORK:
            return "a 'this network' address"
        if address in _SHARED:
            return "a shared (carrier-grade NAT) address"
    elif address.is_site_local:
        return "a site-local address"
    if address.is_private:
        return "a private address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "not a globally routable address"
    return None
