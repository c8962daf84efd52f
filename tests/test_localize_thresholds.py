"""The localizer's decision point for a link is the rulebook's limit (DCGM's health rules): a
link just above a limit is named, just below it — and under in-spec noise — nothing is. The
snapshots hold GPU-end readings only, as a real rack gives them, over windows of 60-600 s: an
HGX H100's links (NVLink 4) with the data-link counters, an NVL72's (NVLink 5) with the NVLink 5
counters and no data-link counter, which Blackwell does not have (NVML change log, v565)."""

import pytest

from opsctl.localize import localize_snapshot

TARGETS = {"hgx-h100": "hgx01/gpu1/nvl07", "gb200-nvl72": "rack07/ct05/gpu1/nvl07"}
NVLINK5 = ("symbol_errors", "rcv_errors", "malformed_packet_errors", "buffer_overrun_errors",
           "local_link_integrity_errors", "effective_errors", "link_down_events", "rcv_remote_errors",
           "rcv_general_errors", "recovery_events", "recovery_successful")


def snapshot(topology, window_s, fault=None, noise_crc_per_s=0.0, noise_ber=1e-15):
    """Every link of the rack read at its GPU end, clean but for in-spec noise everywhere — CRC
    errors at `noise_crc_per_s` on NVLink 4, an effective BER of `noise_ber` on NVLink 5 — and
    `fault` on the rack's target link."""
    links = []
    for link_id, link in sorted(topology.links.items()):
        row = {"gpu": link.gpu, "port": link.port, "state": "up"}
        if topology.model.is_nvl72:
            row.update({**dict.fromkeys(NVLINK5, 0), "effective_ber": noise_ber, "symbol_ber_raw": 0})
        else:
            row.update({"crc_errors": int(noise_crc_per_s * window_s), "replay_errors": 0, "recovery_errors": 0})
        if link_id == TARGETS[topology.model.name] and fault:
            row.update(fault)
        links.append(row)
    return {"rack": topology.rack, "model": topology.model.name, "window_seconds": window_s, "links": links, "gpus": []}


def named(topology, window_s, fault=None, **noise):
    result = localize_snapshot(snapshot(topology, window_s, fault, **noise), topology)
    return {s["component"]: s["score"] for s in result["suspects"] if "alternative_to" not in s}


WINDOWS = (60.0, 600.0)


@pytest.mark.parametrize("window_s", WINDOWS)
@pytest.mark.parametrize("crc_per_s, expected", [(30.0, False), (99.9, False), (100.0, True), (120.0, True)])
def test_crc_errors_are_named_from_dcgms_100_per_second(hgx_topology, window_s, crc_per_s, expected):
    found = named(hgx_topology, window_s, {"crc_errors": round(crc_per_s * window_s)})
    assert (TARGETS["hgx-h100"] in found) == expected and len(found) == int(expected)


@pytest.mark.parametrize("window_s", WINDOWS)
@pytest.mark.parametrize("counter", ["replay_errors", "recovery_errors"])
@pytest.mark.parametrize("count", [0, 1])
def test_one_replay_or_recovery_names_an_nvlink4_link(hgx_topology, window_s, counter, count):
    # DCGM MonitorNVLink4Fields: DCGM_LIMIT_MAX_NVLINK_ERROR = 1, one replay in 60 s is a failed link.
    found = named(hgx_topology, window_s, {counter: count})
    if count:
        # The score says how sure: a localizer made ten times less sensitive falls below this.
        assert list(found) == [TARGETS["hgx-h100"]] and found[TARGETS["hgx-h100"]] > 0.85
    else:
        assert found == {}


@pytest.mark.parametrize("window_s", WINDOWS)
@pytest.mark.parametrize("counter", NVLINK5)
@pytest.mark.parametrize("count", [0, 1])
def test_one_count_of_an_nvlink5_error_counter_names_the_link(rack07_topology, window_s, counter, count):
    # DCGM 4.6 MonitorNVLink5Fields: any increase fails (DCGM_LIMIT_MAX_NVLINK_ERROR = 1); a recovery,
    # successful or not, is one of its recovery events.
    found = named(rack07_topology, window_s, {counter: count})
    if count:
        assert list(found) == [TARGETS["gb200-nvl72"]] and found[TARGETS["gb200-nvl72"]] > 0.85
    else:
        assert found == {}


@pytest.mark.parametrize("ber, expected", [(1.0e-12, False), (2.0e-12, True)])
def test_effective_ber_is_named_above_1e_12(rack07_topology, ber, expected):
    assert (TARGETS["gb200-nvl72"] in named(rack07_topology, 60.0, {"effective_ber": ber})) == expected


def test_a_successful_recovery_alone_names_the_link(rack07_topology):
    # DCGM 4.6 MonitorNVLink5Fields fails any recovery event in its window, "irrespective of the
    # result" (NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS): a snapshot that carries only the
    # successful half of the split is judged the same.
    assert list(named(rack07_topology, 60.0, {"recovery_successful": 3})) == [TARGETS["gb200-nvl72"]]


@pytest.mark.parametrize("raw, expected", [(15 << 8 | 238, False), (1 << 8 | 237, True), (10 << 8 | 238, False),
                                           (0 << 8 | 9, False), (3 << 8 | 11, True), (73710, False)])
def test_symbol_ber_is_named_worse_than_dcgms_floor(rack07_topology, raw, expected):
    # DCGM 4.6 IsSymbolBerThresholdExceeded on the packed value, DCGM_SYMBOL_BER_FLOOR_EXP_AGGREGATED = 238;
    # 73710 is DCGM's own test's passing Blackwell value (15e-238, bits above the 12 read set).
    found = named(rack07_topology, 60.0, {"symbol_ber_raw": raw})
    assert list(found) == ([TARGETS["gb200-nvl72"]] if expected else [])


@pytest.mark.parametrize("topology", ["hgx_topology", "rack07_topology"])
def test_a_link_read_down_is_named(request, topology):
    topology = request.getfixturevalue(topology)
    assert list(named(topology, 60.0, {"state": "down"})) == [TARGETS[topology.model.name]]


@pytest.mark.parametrize("window_s", WINDOWS)
def test_in_spec_noise_on_every_link_names_nothing_and_hides_no_fault(hgx_topology, rack07_topology, window_s):
    assert named(hgx_topology, window_s, noise_crc_per_s=30.0) == {}
    assert list(named(hgx_topology, window_s, {"replay_errors": 1}, noise_crc_per_s=30.0)) == [TARGETS["hgx-h100"]]
    # On NVLink 5 every counted error fails: the only in-spec noise is a BER below 1e-12.
    assert named(rack07_topology, window_s, noise_ber=9e-13) == {}
    assert list(named(rack07_topology, window_s, {"rcv_errors": 1}, noise_ber=9e-13)) == [TARGETS["gb200-nvl72"]]


def test_a_blackwell_link_without_data_link_counters_is_read_not_missing(rack07_topology):
    # Its rows carry no crc_errors, replay_errors or recovery_errors: every link is still observed
    # and judged on the counters NVLink 5 has, and the healthy rack is healthy.
    result = localize_snapshot(snapshot(rack07_topology, 60.0), rack07_topology)
    assert result["suspects"] == [] and result["healthy"] and result["observed"]["links"] == 1296
