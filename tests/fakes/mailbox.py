"""A real SMTP server on loopback (aiosmtpd) that keeps what it receives, for the tests of
the mails the site sends: ``MAIL_URL`` points at it and tests follow the links in the mails."""

from __future__ import annotations

import email
import email.policy
import re
import socket
import threading
import time
from dataclasses import dataclass

from aiosmtpd.controller import Controller

_LINK = re.compile(r"https?://[^\s<>\"]+")


@dataclass(frozen=True)
class Mail:
    sender: str
    to: list[str]
    subject: str
    text: str

    @property
    def links(self) -> list[str]:
        return _LINK.findall(self.text)


class _Handler:
    def __init__(self, box: Mailbox):
        self.box = box

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        body = message.get_body(preferencelist=("plain",))
        mail = Mail(
            envelope.mail_from,
            list(envelope.rcpt_tos),
            str(message["Subject"]),
            body.get_content() if body is not None else "",
        )
        with self.box.arrived:
            self.box.mails.append(mail)
            self.box.arrived.notify_all()
        return "250 Message accepted for delivery"


class Mailbox:
    def __init__(self):
        self.mails: list[Mail] = []
        self.arrived = threading.Condition()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=port)
        self._controller.start()
        self.url = f"smtp://127.0.0.1:{port}"

    def wait_for(self, to: str, subject_contains: str = "", timeout: float = 10.0) -> Mail:
        """The newest mail to ``to`` whose subject contains the text, waiting for it."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for mail in reversed(self.mails):
                    if (
                        to.lower() in (a.lower() for a in mail.to)
                        and subject_contains in mail.subject
                    ):
                        return mail
                left = deadline - time.monotonic()
                if left <= 0:
                    subjects = [(m.to, m.subject) for m in self.mails]
                    raise AssertionError(f"no mail to {to} ({subject_contains!r}); got {subjects}")
                self.arrived.wait(left)

    def to(self, address: str) -> list[Mail]:
        return [m for m in self.mails if address.lower() in (a.lower() for a in m.to)]

    def stop(self) -> None:
        self._controller.stop()
