"""msgspec's JSON decoder reads a snapshot only where it provably reads as the strict json parse
does (opsctl/unique_json.py): the same document, or None — never a file with a key given twice.
Decoded straight into the snapshot's Structs it is also the schema's check, so a file read the
fast way must give what the strict parse and the schema's check give."""

import inspect
import json

import msgspec
import pytest

import opsctl.localize.snapshot_schema as snapshot_schema
from opsctl.errors import InputError
from opsctl.input_checks import MAX_DEPTH
from opsctl.localize.snapshot import checked_snapshot, read_snapshot_file
from opsctl.localize.snapshot_schema import SnapshotFile
from opsctl.unique_json import decode_unique
from opsctl.yaml_input import unique_keys

LINK = {"gpu": "rack07/ct01/gpu0", "port": 5, "state": "up", "crc_errors": 18446744073709551615,
        "effective_ber": 1e-15, "failed_checks": [{"check": "nvlink.traffic", "value": [0.5, {"a": None}],
                                                   "reason": "at 12:00: 0.5x (of 1.0)"}]}
SNAPSHOT = {"rack": "rack07", "model": "gb200-nvl72", "window_seconds": 60.0, "links": [LINK],
            "gpus": [{"id": "rack07/ct01/gpu0", "reachable": True, "xids": [{"xid": 149, "time": "2026-12-04T10:00:00Z"}]}],
            "taken": "2026-12-04T10:00:01Z", "format": "ünïcode €"}
# As opsctl's writers give them: every default said (side, reachable, a tray's error of null).
WRITTEN = {**SNAPSHOT, "links": [{**LINK, "side": "gpu"},
                                 {"side": "switch", "link": "rack07/ct01/gpu0/nvl5", "symbol_errors": 0}],
           "trays": [{"tray": "ct01", "status": "complete", "error": None}, {"tray": "ct02", "status": "unread", "error": "timed out"}]}


@pytest.mark.parametrize("text", [
    json.dumps(SNAPSHOT, ensure_ascii=False), json.dumps(SNAPSHOT, ensure_ascii=False, indent=2),
    json.dumps({**SNAPSHOT, "format": "ascii"}),
    "[]", "{}", "0", "-0.0", '"a:b"', "[1e-320, 2.5e300, -17, 12345678901234567890123]",
])
def test_what_it_reads_is_what_the_strict_parse_reads(text):
    document = decode_unique(text)
    assert document is not None
    assert json.dumps(document) == json.dumps(json.loads(text, object_pairs_hook=unique_keys))


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 1}',  # the same value twice
    '{"a": "x:y", "b": 2, "a": "z"}',  # the dropped value held a ':'
    '{"links": [{"port": 1, "gpu": "g", "port": 2}]}',  # deep inside
    '{"a:b": 1, "a:b": 2}',  # the key itself holds one
    '[{"k": 1}, {"k": 1, "k": 1}]',
    '{"a": 1, "b": "\\u003a", "a": 2}',  # an escape that decodes to ':' would hide the dropped key
    json.dumps(SNAPSHOT),  # any escape (here of non-ASCII text): read by the strict parse
    '{"a": NaN}', '{"a": Infinity}', "[" + "9" * 5000 + "]", "[" * 100_000 + "]" * 100_000,
    "rack: rack07",  # YAML: not JSON at all
])
def test_what_it_cannot_vouch_for_is_left_to_the_strict_parse(text):
    assert decode_unique(text) is None


def _written(**changes):
    return json.dumps({**WRITTEN, **changes}, ensure_ascii=False)


def test_a_snapshot_as_opsctl_writes_it_is_decoded_into_the_schema_at_once():
    text = _written()
    assert decode_unique(text, SnapshotFile) == checked_snapshot(json.loads(text), "f")
    assert decode_unique(text.encode(), SnapshotFile) == checked_snapshot(json.loads(text), "f")
    fleet = json.dumps([WRITTEN, {**WRITTEN, "rack": "rack08", "links": []}], ensure_ascii=False)
    assert decode_unique(fleet, SnapshotFile) == [checked_snapshot(d, "f") for d in json.loads(fleet)]


@pytest.mark.parametrize("repeat", [
    ('"port": 5,', '"port": 5, "port": 5,'),  # a required-looking field, the same value again
    ('"side": "gpu"', '"side": "gpu", "side": "gpu"'),  # a field that defaults to UNSET
    ('"symbol_errors": 0', '"symbol_errors": null, "symbol_errors": null'),  # twice its default: both left out
    ('"error": null', '"error": "x:y", "error": null'),  # the dropped one held a ':'
    ('"reachable": true', '"reachable": false, "reachable": true'),
    ('"value": [0.5, {"a": null}]', '"value": [0.5, {"a": null, "a": null}]'),  # inside a failed check's value
])
def test_a_key_given_twice_in_the_schema_is_left_to_the_strict_parse(repeat, tmp_path):
    text = _written()
    assert repeat[0] in text
    twice = text.replace(repeat[0], repeat[1], 1)
    assert decode_unique(twice, SnapshotFile) is None
    path = tmp_path / "snapshot.json"
    path.write_text(twice)
    with pytest.raises(InputError, match="appears twice"):
        read_snapshot_file(path)


def test_a_default_given_where_none_is_expected_is_read_the_strict_way(tmp_path):
    """A counter of null is its default, left out when written back: the fast read declines a
    file it cannot vouch for, and the strict parse reads it."""
    text = _written().replace('"symbol_errors": 0', '"symbol_errors": null')
    assert decode_unique(text, SnapshotFile) is None
    path = tmp_path / "snapshot.json"
    path.write_text(text)
    assert read_snapshot_file(path) == [(str(path), checked_snapshot(json.loads(text), "f"))]


def test_every_struct_of_the_snapshot_leaves_its_defaults_out():
    """The count's premise: a Struct written back names only keys its input gave."""
    structs = [value for value in vars(snapshot_schema).values()
               if inspect.isclass(value) and issubclass(value, msgspec.Struct) and value is not msgspec.Struct]
    assert {s.__name__ for s in structs} >= {"Snapshot", "Link", "Gpu", "Tray", "XidEvent", "FailedCheck"}
    assert all(s.__struct_config__.omit_defaults for s in structs)


def test_a_snapshot_with_a_key_twice_is_refused_as_before(tmp_path):
    path = tmp_path / "snapshot.json"
    text = json.dumps(SNAPSHOT, ensure_ascii=False)
    path.write_text(text.replace('"port": 5,', '"port": 5, "port": 6,'))
    with pytest.raises(InputError, match="key 'port' appears twice"):
        read_snapshot_file(path)
    path.write_text(text)
    assert read_snapshot_file(path) == [(str(path), checked_snapshot(json.loads(text), "f"))]


def _nested(levels):
    value = "x"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("listed", [False, True])
def test_a_failed_checks_value_is_held_to_the_nesting_limit_as_the_strict_parse_holds_it(listed, tmp_path):
    """The schema bounds every level but a failed check's value, which sits 5 levels down (6 in a
    list of snapshots): the fast read takes the deepest value the strict parse takes, and leaves
    one level more to it, which refuses it."""
    path = tmp_path / "snapshot.json"
    deepest = MAX_DEPTH - 5 - listed
    for levels, readable in ((deepest, True), (deepest + 1, False)):
        document = {**WRITTEN, "links": [{**LINK, "failed_checks": [{"check": "nvlink.traffic", "value": _nested(levels)}]}]}
        text = json.dumps([document, {**document, "rack": "rack08", "links": []}] if listed else document, ensure_ascii=False)
        path.write_text(text)
        if readable:
            [(source, snapshot), *_] = read_snapshot_file(path)
            assert snapshot == checked_snapshot(json.loads(text)[0] if listed else json.loads(text), source)
        else:
            with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH} levels"):
                read_snapshot_file(path)


def test_a_file_is_named_by_its_path_and_each_of_a_list_by_its_place(tmp_path):
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps([WRITTEN, {**WRITTEN, "rack": "rack08"}], ensure_ascii=False))
    assert [source for source, _ in read_snapshot_file(path)] == [f"{path}[0]", f"{path}[1]"]
    path.write_text(json.dumps([WRITTEN], ensure_ascii=False))
    assert [source for source, _ in read_snapshot_file(path)] == [str(path)]
    path.write_text("[]")
    with pytest.raises(InputError, match="holds no snapshot"):
        read_snapshot_file(path)


def test_bytes_that_are_not_utf8_are_left_to_the_strict_read_which_names_the_byte(tmp_path):
    text = _written()
    bad = text.encode().replace(b'"ct02"', b'"ct\xff2"')
    assert decode_unique(bad, SnapshotFile) is None
    assert decode_unique(text.encode(), SnapshotFile) is not None
    path = tmp_path / "snapshot.json"
    path.write_bytes(bad)
    with pytest.raises(InputError, match="not UTF-8 text"):
        read_snapshot_file(path)
