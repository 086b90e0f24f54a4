"""Every run the quota counted has its run and ledger rows: through a SIGKILLed web worker
under load and a PostgreSQL crash (on private servers), the same fault runs as
``bench/faults.py kill-web`` and ``pg-crash``, with a shorter load."""

import sys

import pytest

from tests.helpers import ROOT, needs_pg, needs_redis

sys.path.insert(0, str(ROOT / "bench"))
import faults_records  # noqa: E402

pytestmark = [needs_pg, needs_redis]


@pytest.mark.parametrize("fault", ["kill-web", "pg-crash"])
def test_no_answered_run_is_lost(fault):
    result = faults_records.records_under_fault(fault, seconds=6, clients=12)
    print("\n".join(result.lines()))
    assert result.ok > 0, result.lines()
    assert result.missing_after_replay == (0, 0), result.lines()
    assert result.replay_seconds < 60
    # Counted calls are recorded calls: the 200s, and runs journaled whose answer died with
    # their worker; a run that died before its journal entry gave its call back.
    assert result.calls_counted == result.ledger_rows >= result.ok
