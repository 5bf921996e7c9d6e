"""OverlapMap: the last writer of every byte range, with partial overwrites split."""

import random

from pypto.runtime.overlap_map import OverlapMap


def test_empty_map_has_no_writers():
    assert OverlapMap().writers(0, 100) == []


def test_touching_ranges_do_not_overlap():
    m = OverlapMap()
    m.assign(100, 200, 1)
    assert m.writers(0, 100) == [] and m.writers(200, 300) == []
    assert m.writers(199, 200) == [1] and m.writers(0, 101) == [1]


def test_every_overlapping_writer_is_returned_in_address_order():
    m = OverlapMap()
    m.assign(0, 10, 1)
    m.assign(20, 30, 2)
    m.assign(40, 50, 3)
    assert m.writers(5, 45) == [1, 2, 3]
    assert m.writers(12, 18) == []


def test_a_new_writer_replaces_only_the_bytes_it_covers():
    m = OverlapMap()
    m.assign(0, 100, 1)
    m.assign(40, 60, 2)
    assert m.writers(0, 40) == [1]
    assert m.writers(40, 60) == [2]
    assert m.writers(60, 100) == [1]
    assert len(m) == 3


def test_covering_writer_replaces_all_it_covers():
    m = OverlapMap()
    for k in range(10):
        m.assign(k * 10, k * 10 + 10, k)
    m.assign(5, 95, 99)
    assert m.writers(0, 100) == [0, 99, 9]
    assert len(m) == 3


def test_empty_range_is_ignored():
    m = OverlapMap()
    m.assign(10, 10, 1)
    m.assign(0, 20, 2)
    assert m.writers(10, 10) == [] and len(m) == 1


def test_matches_a_byte_by_byte_model():
    rng = random.Random(0)
    m = OverlapMap()
    model: dict[int, int] = {}
    for writer in range(300):
        start = rng.randrange(200)
        end = start + rng.randrange(1, 40)
        query = sorted(rng.sample(range(240), 2))
        assert set(m.writers(*query)) == {model[b] for b in range(*query) if b in model}
        m.assign(start, end, writer)
        model.update(dict.fromkeys(range(start, end), writer))


def test_ten_thousand_disjoint_writers_stay_fast():
    m = OverlapMap()
    for k in range(10_000):
        m.assign(k * 64, k * 64 + 64, k)
        assert m.writers(k * 64, k * 64 + 64) == [k]
    assert len(m) == 10_000
