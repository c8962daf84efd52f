"""The localizer's decision point for a link is the rulebook's limit (DCGM's health rules): a
link just above a limit is named, just below it — and under in-spec noise — nothing is. The
snapshots hold GPU-end readings only, as a real NVL72 gives them, over windows of 60-600 s."""

import pytest

from opsctl.localize import localize_snapshot

TARGET = "rack07/ct05/gpu1/nvl07"


def snapshot(topology, window_s, fault=None, noise_crc_per_s=0.0):
    """Every link of the rack read at its GPU end, clean but for `noise_crc_per_s` of CRC
    errors everywhere and `fault` on TARGET."""
    links = []
    for link_id, link in sorted(topology.links.items()):
        row = {"gpu": link.gpu, "port": link.port, "state": "up", "crc_errors": int(noise_crc_per_s * window_s),
               "replay_errors": 0, "recovery_errors": 0}
        if link_id == TARGET and fault:
            row.update(fault)
        links.append(row)
    return {"rack": topology.rack, "model": topology.model.name, "window_seconds": window_s, "links": links, "gpus": []}


def named(topology, window_s, fault=None, noise_crc_per_s=0.0):
    result = localize_snapshot(snapshot(topology, window_s, fault, noise_crc_per_s), topology)
    return {s["component"]: s["score"] for s in result["suspects"] if "alternative_to" not in s}


WINDOWS = (60.0, 600.0)
NVLINK5 = ("symbol_errors", "rcv_errors", "malformed_packet_errors", "buffer_overrun_errors",
           "local_link_integrity_errors", "effective_errors", "link_down_events")


@pytest.mark.parametrize("window_s", WINDOWS)
@pytest.mark.parametrize("crc_per_s, expected", [(30.0, False), (99.9, False), (100.0, True), (120.0, True)])
def test_crc_errors_are_named_from_dcgms_100_per_second(rack07_topology, window_s, crc_per_s, expected):
    found = named(rack07_topology, window_s, {"crc_errors": round(crc_per_s * window_s)})
    assert (TARGET in found) == expected and len(found) == int(expected)


@pytest.mark.parametrize("window_s", WINDOWS)
@pytest.mark.parametrize("counter", ["replay_errors", "recovery_errors", *NVLINK5])
@pytest.mark.parametrize("count", [0, 1])
def test_one_count_of_a_fail_counter_names_the_link(rack07_topology, window_s, counter, count):
    # DCGM_LIMIT_MAX_NVLINK_ERROR = 1: one replay in 60 s, or one NVLink 5 error, is a failed link.
    found = named(rack07_topology, window_s, {counter: count})
    if count:
        # The score says how sure: a localizer made ten times less sensitive falls below this.
        assert list(found) == [TARGET] and found[TARGET] > 0.85
    else:
        assert found == {}


@pytest.mark.parametrize("ber, expected", [(1.0e-12, False), (2.0e-12, True)])
def test_effective_ber_is_named_above_1e_12(rack07_topology, ber, expected):
    assert (TARGET in named(rack07_topology, 60.0, {"effective_ber": ber})) == expected


def test_a_successful_recovery_alone_is_a_warning_not_a_fault(rack07_topology):
    assert named(rack07_topology, 60.0, {"recovery_successful": 3}) == {}


def test_a_link_read_down_is_named(rack07_topology):
    assert list(named(rack07_topology, 60.0, {"state": "down"})) == [TARGET]


@pytest.mark.parametrize("window_s", WINDOWS)
def test_in_spec_noise_on_every_link_names_nothing_and_hides_no_fault(rack07_topology, window_s):
    assert named(rack07_topology, window_s, noise_crc_per_s=30.0) == {}
    assert list(named(rack07_topology, window_s, {"replay_errors": 1}, noise_crc_per_s=30.0)) == [TARGET]
