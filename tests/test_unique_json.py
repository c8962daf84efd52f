"""msgspec's JSON decoder reads a snapshot only where it provably reads as the strict json parse
does (opsctl/unique_json.py): the same document, or None — never a file with a key given twice."""

import json

import pytest

from opsctl.errors import InputError
from opsctl.localize.snapshot import read_snapshot_file
from opsctl.unique_json import decode_unique
from opsctl.yaml_input import unique_keys

LINK = {"gpu": "rack07/ct01/gpu0", "port": 5, "state": "up", "crc_errors": 18446744073709551615,
        "effective_ber": 1e-15, "failed_checks": [{"check": "nvlink.traffic", "value": [0.5, {"a": None}],
                                                   "reason": "at 12:00: 0.5x (of 1.0)"}]}
SNAPSHOT = {"rack": "rack07", "model": "gb200-nvl72", "window_seconds": 60.0, "links": [LINK],
            "gpus": [{"id": "rack07/ct01/gpu0", "reachable": True, "xids": [{"xid": 149, "time": "2026-12-04T10:00:00Z"}]}],
            "taken": "2026-12-04T10:00:01Z", "note": "ünïcode €"}


@pytest.mark.parametrize("text", [
    json.dumps(SNAPSHOT, ensure_ascii=False), json.dumps(SNAPSHOT, ensure_ascii=False, indent=2),
    json.dumps({**SNAPSHOT, "note": "ascii"}),
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


def test_a_snapshot_with_a_key_twice_is_refused_as_before(tmp_path):
    path = tmp_path / "snapshot.json"
    text = json.dumps(SNAPSHOT, ensure_ascii=False)
    path.write_text(text.replace('"port": 5,', '"port": 5, "port": 6,'))
    with pytest.raises(InputError, match="key 'port' appears twice"):
        read_snapshot_file(path)
    path.write_text(text)
    assert read_snapshot_file(path) == [json.loads(text)]
