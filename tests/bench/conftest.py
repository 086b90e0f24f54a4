"""What the bench tests share."""

import fcntl
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def site_bench_alone():
    """bench/site.py remakes its fixed database (``bench_site``) and empties its Redis db
    (11) as it starts: two test processes (pytest-xdist) running it at once broke each
    other's runs. Held, no other test process runs it until this test ends."""
    with (Path(tempfile.gettempdir()) / "svc-bench-site.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
