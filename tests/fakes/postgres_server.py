"""A private PostgreSQL server for tests that restart or crash the database.

The machine's PostgreSQL is shared by every test: these tests start their own cluster
(``initdb`` in a temporary folder, on a free loopback port) with the same binaries, so a
restart or an immediate stop (a crash: no checkpoint, the WAL replayed on start) hits only
them. PostgreSQL refuses to run as root, so when the tests run as root the server runs as
the ``postgres`` user through ``runuser``.
"""

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time

import sqlalchemy as sa


def _bindir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError("PostgreSQL's initdb is not installed")
    return os.path.dirname(os.path.realpath(initdb))


class PrivatePostgres:
    """``start()``, then ``url``; ``restart()``, ``crash()`` (``pg_ctl stop -m immediate``),
    ``stop()``, ``start()`` again; ``close()`` removes it."""

    def __init__(self):
        self.bindir = _bindir()
        self.root = tempfile.mkdtemp(prefix="svc-pg-")
        self.data = os.path.join(self.root, "data")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync")

    def _run(self, program: str, *args: str) -> None:
        command = [os.path.join(self.bindir, program), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120, cwd=self.root)

    def start(self) -> "PrivatePostgres":
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=on"
        log = os.path.join(self.root, "server.log")
        self._run("pg_ctl", "-D", self.data, "-o", options, "-l", log, "-w", "-t", "60", "start")
        return self

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def crash(self) -> None:
        """Stop as a crash does: no checkpoint, unflushed WAL lost."""
        self.stop("immediate")

    def restart(self) -> None:
        self.stop()
        self.start()

    def wait_until_ready(self, seconds: float = 30) -> None:
        engine = sa.create_engine(self.url)
        deadline = time.monotonic() + seconds
        try:
            while True:
                try:
                    with engine.connect() as connection:
                        connection.execute(sa.text("SELECT 1"))
                    return
                except sa.exc.OperationalError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
        finally:
            engine.dispose()

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
