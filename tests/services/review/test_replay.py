"""The replay reader cache: one open reader per log folder, reopened when the version moves."""

from __future__ import annotations

from server.recording.signals import held_controls
from server.services.review.replay import ReaderCache


def test_a_new_version_replaces_the_folders_reader(recorded):
    cache = ReaderCache(size=2)
    first, second, third = (r.log_dir for r in recorded["cartpole"][:3])
    with cache.reader(first, version=1) as (reader_v1, length):
        assert length == 9  # 8 steps after the first timestep
    with cache.reader(first, version=1) as (again, _):
        assert again is reader_v1  # same version: served from the cache
    with cache.reader(first, version=2) as (reader_v2, _):
        assert reader_v2 is not reader_v1
    assert list(cache._entries) == [str(first)]  # the old version is closed, not kept
    with cache.reader(second) as _, cache.reader(third) as _:
        pass
    assert list(cache._entries) == [str(second), str(third)]  # least recently used evicted
    cache.close()
    assert not cache._entries


def test_a_device_pushed_is_input_for_the_quality_signals():
    raw = {"keys": [], "buttons": {}, "axes": [], "devices": {"mouse": [0.5, 0.1, -0.2]}}
    assert held_controls(raw) == {"mouse axis 0+", "mouse axis 2-"}
    assert held_controls({**raw, "devices": {"spacemouse": [0.1] * 6}}) == frozenset()
    assert held_controls({**raw, "devices": {"mouse": "junk"}}) == frozenset()
