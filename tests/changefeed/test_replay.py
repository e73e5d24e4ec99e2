"""The pure feed checks: replay, the oldImage chain and the barrier property catch what they should."""

from __future__ import annotations

import pytest

from logtide.changefeed.replay import Break, barrier_breaks, image_chain_breaks, key_text, order_breaks, replay


def up(key, new=None, old=None, ts=None, update=None):
    r = {"key": key, "update": update or {}}
    if new is not None:
        r["newImage"] = new
    if old is not None:
        r["oldImage"] = old
    if ts is not None:
        r["ts"] = ts
    return r


def erase(key, old=None, ts=None):
    r = {"key": key, "erase": {}}
    if old is not None:
        r["oldImage"] = old
    if ts is not None:
        r["ts"] = ts
    return r


def test_key_text_is_compact_json():
    assert key_text({"key": [1, "é", [1, 2]]}) == '[1,"é",[1,2]]'


def test_replay_images():
    feed = [up([1], {"v": 1}), up([2], {"v": 2}), up([1], {"v": 3}, {"v": 1}), erase([2], {"v": 2}),
            {"resolved": [1000, 0]}, up([3], None)]
    assert replay(feed) == {"[1]": {"v": 3}}


def test_replay_updates_merges_written_columns():
    feed = [up([1], update={"v": 1}), up([1], update={"w": "a"}), up([2], update={"v": 2}), erase([2])]
    assert replay(feed, "UPDATES") == {"[1]": {"v": 1, "w": "a"}}


def test_replay_refuses_feeds_without_values():
    with pytest.raises(ValueError):
        replay([], "KEYS_ONLY")


def test_image_chain_holds():
    feed = [up([1], {"v": 1}), up([1], {"v": 2}, {"v": 1}), erase([1], {"v": 2}), up([1], {"v": 5})]
    assert image_chain_breaks(feed) == []


def test_image_chain_break_found():
    feed = [up([1], {"v": 1}), up([1], {"v": 2}, {"v": 9})]
    assert [b.index for b in image_chain_breaks(feed)] == [1]


def test_image_chain_after_erase_needs_no_old_image():
    assert [b.index for b in image_chain_breaks([erase([1], {"v": 1}), up([1], {"v": 2}, {"v": 1})])] == [1]


def test_first_record_of_a_key_may_have_an_old_image():
    assert image_chain_breaks([up([1], {"v": 2}, {"v": 1})]) == []


def test_barrier_property_holds():
    part = [up([1], ts=[900, 1]), {"resolved": [1000, 0]}, up([1], ts=[1000, 2]), {"resolved": [2000, 0]}]
    assert barrier_breaks(part) == []


def test_record_older_than_a_barrier_found():
    part = [{"resolved": [1000, 0]}, up([1], ts=[999, 7])]
    assert barrier_breaks(part) == [Break(1, "ts [999, 7] after barrier [1000, 0]")]


def test_barrier_going_back_found():
    assert [b.index for b in barrier_breaks([{"resolved": [2000, 0]}, {"resolved": [1000, 0]}])] == [1]


def test_record_without_timestamp_found():
    assert [b.index for b in barrier_breaks([up([1])])] == [0]


def test_timestamps_in_commit_order_hold():
    assert order_breaks([up([1], ts=[5, 1]), {"resolved": [6, 0]}, up([2], ts=[5, 2]), up([1], ts=[7, 3])]) == []


def test_timestamp_going_back_found():
    assert order_breaks([up([1], ts=[5, 2]), up([2], ts=[5, 1])]) == [Break(1, "ts [5, 1] after ts [5, 2]")]
