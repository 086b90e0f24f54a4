"""Mail to people: verification, password reset and invitation links.

``MAIL_URL`` says where mail goes:

- ``smtp://user:password@host:587`` (STARTTLS when the server offers it; required with
  ``?starttls=required``), ``smtps://user:password@host:465`` (TLS from the start), or
  ``smtp://host:25`` without credentials;
- ``log:`` (the embedded default, and whenever ``MAIL_URL`` is unset): each mail is written
  to the app's log, so ``make run`` works with nothing configured.

``MAIL_FROM`` is the sender (default ``SVC <no-reply@localhost>``). A mail is sent while the
request waits, with a 10 s timeout; a failure raises ``MailFailed`` (its message names no
credential) and the caller decides what the person is told.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import make_msgid
from urllib.parse import parse_qs, unquote, urlsplit

from flask import current_app

log = logging.getLogger(__name__)
_TIMEOUT = 10.0


class MailFailed(Exception):
    """The mail could not be handed to the server; the message is safe to log and show."""


def send_mail(to: str, subject: str, text: str) -> None:
    """Send a plain-text mail to ``to`` through ``MAIL_URL`` (or write it to the log)."""
    config = current_app.config
    url = config.get("MAIL_URL") or "log:"
    message = EmailMessage()
    message["From"] = config.get("MAIL_FROM") or "SVC <no-reply@localhost>"
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = make_msgid(domain="svc")
    message.set_content(text)
    parts = urlsplit(url)
    if parts.scheme == "log":
        log.info("mail to %s: %s\n%s", to, subject, text)
        return
    if parts.scheme not in ("smtp", "smtps"):
        raise MailFailed(f"MAIL_URL has the scheme {parts.scheme!r}: use smtp, smtps or log.")
    try:
        _deliver(parts, message)
    except (OSError, smtplib.SMTPException) as error:
        # The server's address is in the configuration already; its credentials are not in
        # the error (smtplib's exceptions carry codes and the server's text).
        failed = f"The mail server at {parts.hostname} refused or failed: {error}"
        raise MailFailed(failed) from None


def _deliver(parts, message: EmailMessage) -> None:
    host, port = parts.hostname or "localhost", parts.port
    starttls = parse_qs(parts.query).get("starttls", ["auto"])[0]
    context = ssl.create_default_context()
    if parts.scheme == "smtps":
        server = smtplib.SMTP_SSL(host, port or 465, timeout=_TIMEOUT, context=context)
    else:
        server = smtplib.SMTP(host, port or 25, timeout=_TIMEOUT)
    with server:
        if parts.scheme == "smtp":
            server.ehlo()
            if starttls == "required" or (starttls == "auto" and server.has_extn("starttls")):
                server.starttls(context=context)
                server.ehlo()
        if parts.username:
            server.login(unquote(parts.username), unquote(parts.password or ""))
        server.send_message(message)
