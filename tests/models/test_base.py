"""Ids: UUIDv7, time-ordered, unguessable."""

import time
import uuid

from models.base import new_uuid


def test_ids_are_version_7_uuids_with_the_current_time_in_milliseconds():
    before = time.time_ns() // 1_000_000
    made = new_uuid()
    after = time.time_ns() // 1_000_000
    parsed = uuid.UUID(made)
    assert str(parsed) == made  # canonical: lowercase, hyphenated
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert before <= parsed.int >> 80 <= after


def test_ids_made_later_sort_later_and_never_repeat():
    ids = []
    for _ in range(5):
        ids += [new_uuid() for _ in range(1000)]
        time.sleep(0.002)
    assert len(set(ids)) == len(ids)
    by_millisecond = [uuid.UUID(made).int >> 80 for made in ids]
    assert by_millisecond == sorted(by_millisecond)
    assert ids[-1] > ids[0]  # as strings too: the order the database's index sees


def test_the_random_part_is_random():
    randoms = {uuid.UUID(new_uuid()).int & ((1 << 62) - 1) for _ in range(1000)}
    assert len(randoms) == 1000
