"""A collection's image after a write, made by putting the written keys in place in the image before it
(``cdc.log_values.merged_elements``), is the image sorting every element gives (``frozen_elements`` of the
updated elements): maps, sets, lists (by their timeuuid keys) and UDTs, with keys that compare equal in
their type's order though their bytes differ (varints written with leading zeros), keys written again,
added and removed; and the image after keys appended past the last one (``appended_elements``, the bytes of the
image before and the new elements joined) is that same sorted image.
"""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from logtide.cdc.log_values import appended_elements, frozen_elements, image_elements, merged_elements
from logtide.query.read import element_order_key
from logtide.schema import types as T

PAIR = T.UserType("ks", "pair", ("f", "g"), (T.INT, T.TEXT), False)
TYPES = {
    "map<int, text>": (T.MapType(T.INT, T.TEXT), st.integers(-50, 50).map(lambda i: struct.pack(">i", i)),
                       T.MapType(T.INT, T.TEXT)),
    "set<varint>": (T.SetType(T.VARINT), st.sampled_from([b"\x01", b"\x00\x01", b"\x02", b"\xff", b"\x7f", b"\x00\x7f",
                                                            b"\x80", b"\xff\x80", b"\x00"]), T.SetType(T.VARINT)),
    "list<int>": (T.ListType(T.INT), st.binary(min_size=16, max_size=16), T.MapType(T.TIMEUUID, T.INT)),
    "udt": (PAIR, st.sampled_from([struct.pack(">h", 0), struct.pack(">h", 1)]), PAIR),
}


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(TYPES)), data=st.data())
def test_new_keys_put_in_place_give_the_sorted_image(name, data):
    ctype, keys, image_type = TYPES[name]
    value = st.binary(max_size=3)
    if isinstance(ctype, T.SetType):
        value = st.just(b"")
    before = data.draw(st.lists(st.tuples(keys, value), max_size=8))
    image = frozen_elements(ctype, dict(before))  # as the read before the write gives it: in order
    written = data.draw(st.dictionaries(keys, st.one_of(value, st.none()), max_size=5))
    added = [(k, v) for k, v in written.items() if v is not None]
    removed = [k for k, v in written.items() if v is None]
    want = image_elements(image_type, image)
    for k, v in added:
        want[k] = v
    for k in removed:
        want.pop(k, None)
    elements, ordered = merged_elements(ctype, image_elements(image_type, image), added, removed)
    assert frozen_elements(ctype, elements, ordered) == frozen_elements(ctype, want)
    if ordered and not isinstance(ctype, T.UserType):
        order = element_order_key(ctype)
        assert [order(k) for k in elements] == sorted(order(k) for k in elements)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(set(TYPES) - {"udt"})), data=st.data())
def test_keys_appended_after_the_last_give_the_sorted_image_without_decoding_it(name, data):
    ctype, keys, image_type = TYPES[name]
    value = st.just(b"") if isinstance(ctype, T.SetType) else st.binary(max_size=3)
    before = data.draw(st.lists(st.tuples(keys, value), min_size=1, max_size=8))
    image = frozen_elements(ctype, dict(before))
    pairs = list(image_elements(image_type, image).items())  # in order: the last is query.read.ElementImage's
    added = list(data.draw(st.dictionaries(keys, value, min_size=1, max_size=4)).items())
    order = element_order_key(ctype)
    got = appended_elements(ctype, image, pairs[-1][0], added, order)
    if got is None:  # only when some added key does not sort after the last one: merged_elements' case
        assert min(order(k) for k, _ in added) <= order(pairs[-1][0])
        return
    assert min(order(k) for k, _ in added) > order(pairs[-1][0])
    want = dict(pairs)
    want.update(added)
    assert got == frozen_elements(ctype, want)


def test_a_list_append_and_a_map_key_past_the_last_take_the_appending_path():
    lt = T.MapType(T.TIMEUUID, T.INT)  # a list's image: the map of its timeuuid keys
    first, later = b"\x10" * 16, b"\x11" * 16  # timeuuids of increasing time
    image = frozen_elements(lt, [(first, b"\x00\x00\x00\x01")])
    got = appended_elements(T.ListType(T.INT), image, first, [(later, b"\x00\x00\x00\x02")],
                            element_order_key(T.ListType(T.INT)))
    assert got == frozen_elements(lt, [(first, b"\x00\x00\x00\x01"), (later, b"\x00\x00\x00\x02")])
    mt = T.MapType(T.INT, T.TEXT)
    image = frozen_elements(mt, [(struct.pack(">i", -3), b"a")])
    order = element_order_key(mt)
    assert appended_elements(mt, image, struct.pack(">i", -3), [(struct.pack(">i", 7), b"b")], order) == \
        frozen_elements(mt, [(struct.pack(">i", -3), b"a"), (struct.pack(">i", 7), b"b")])
    assert appended_elements(mt, image, struct.pack(">i", -3), [(struct.pack(">i", -4), b"b")], order) is None
