"""Reading a simulated tray through the real NVML-reading code returns the injected faults."""

import ctypes

import pynvml
import pytest

from probes.nvml_reader import NvmlReader, XidWatcher
from probes.sim import SimComputeDevice, SimNvml

from tests.conftest import read_tray_twice


def reader_for(rack, tray):
    nvml = SimNvml(rack, tray)
    nvml.nvmlInit()
    return NvmlReader(nvml)


NVLINK5_ERRORS = ("symbol_errors", "rcv_errors", "malformed_packet_errors", "buffer_overrun_errors",
                  "local_link_integrity_errors", "effective_errors", "recovery_failed", "recovery_successful",
                  "rcv_remote_errors", "rcv_general_errors", "recovery_events")


def link_delta(before, after, gpu, port, counter):
    return after[gpu].links[port].counters[counter] - before[gpu].links[port].counters[counter]


def test_a_healthy_tray_reads_clean_over_a_window(sim_rack):
    rack = sim_rack("seed: 5\n")
    reader = reader_for(rack, "ct04")
    before = reader.read_all()
    rack.clock.advance(600)
    after = reader.read_all()
    assert [g.name for g in after] == ["NVIDIA GB200"] * 4
    for gpu_before, gpu_after in zip(before, after):
        assert not gpu_after.lost and gpu_after.errors == {}
        assert gpu_after.platform["tray_index"] == 3 and gpu_after.platform["slot"] == 4
        assert gpu_after.fabric["state"] == "completed" and gpu_after.fabric["summary"] == "healthy"
        assert not any(gpu_after.fabric["health"].values())
        assert len(gpu_after.links) == 18 and all(link.state == "up" for link in gpu_after.links)
        for b, a in zip(gpu_before.links, gpu_after.links):
            # Every NVLink 5 error counter reads and none moves (DCGM fails any increase); the BER is in spec.
            assert {name: a.counters[name] - b.counters[name] for name in NVLINK5_ERRORS} == dict.fromkeys(NVLINK5_ERRORS, 0)
            assert a.effective_ber < 1e-12
            assert a.symbol_ber_raw == 0 and a.symbol_ber == 0.0  # no symbol error: a BER of 0, within DCGM's floor
            # Blackwell has no data-link counters: NOT_SUPPORTED, as field values and as the legacy call.
            assert {"crc_errors", "replay_errors", "recovery_errors"} <= set(a.unsupported) and "crc_errors" not in a.counters
        assert "nvmlDeviceGetNvLinkErrorCounter" in gpu_after.unsupported
        assert gpu_after.nvlink_gpu == {"ecc_data_errors": 0} == gpu_before.nvlink_gpu  # the GPU's NVLink data ECC total
    # A healthy link arrives with no recovery total: DCGM 4.6 fails them as they stand
    # (MonitorNVLinkErrorFields), so a simulated healthy GPU carries none.
    assert sum(link.counters["recovery_failed"] + link.counters["recovery_successful"]
               for gpu in before for link in gpu.links) == 0


def test_link_errors_show_as_counter_deltas_and_ber(sim_rack):
    rack = sim_rack("faults:\n  - {kind: link_errors, link: ct05/gpu1/nvl07, symbol_per_s: 12, rcv_errors_per_s: 6, ber: 3.0e-11}\n")
    reader = reader_for(rack, "ct05")
    before = reader.read_all()
    rack.clock.advance(100)
    after = reader.read_all()
    assert link_delta(before, after, 1, 7, "symbol_errors") == pytest.approx(1_200, abs=1)
    assert link_delta(before, after, 1, 7, "rcv_errors") == pytest.approx(600, abs=1)
    assert link_delta(before, after, 1, 7, "effective_errors") == pytest.approx(1_200, abs=1)  # 3e-11 of 4e11 bits a second
    assert after[1].links[7].effective_ber == pytest.approx(3e-11)
    assert link_delta(before, after, 1, 6, "rcv_errors") == 0 and link_delta(before, after, 1, 6, "symbol_errors") == 0


def test_a_flapping_link_goes_down_and_counts_failed_recoveries(sim_rack):
    rack = sim_rack("faults:\n  - {kind: link_flap, link: ct07/gpu0/nvl13, start_s: 10, period_s: 30, down_s: 2}\n")
    reader = reader_for(rack, "ct07")
    before = reader.read_all()
    rack.clock.advance(10.5)
    during = reader.read_all()
    assert during[0].links[13].state == "down"
    assert during[0].fabric["health"]["degraded_bw"] is True
    assert during[0].fabric["summary"] == "limited_capacity"
    rack.clock.advance(80)
    after = reader.read_all()
    assert after[0].links[13].state == "up"
    assert link_delta(before, after, 0, 13, "recovery_failed") == 3  # down at 10, 40, 70


def test_a_dropped_link_logs_its_xid_on_its_own_gpu_only(sim_rack):
    rack = sim_rack("faults:\n  - {kind: link_down, link: ct07/gpu0/nvl13, start_s: 5}\n")
    origin = SimNvml(rack, "ct07")
    other = SimNvml(rack, "ct01")
    for nvml in (origin, other):
        nvml.nvmlInit()
    handles = {n: [n.nvmlDeviceGetHandleByIndex(i) for i in range(4)] for n in (origin, other)}
    watchers = {n: XidWatcher(n, handles[n], poll_ms=50) for n in (origin, other)}
    # Drain by hand on the manual clock rather than with the polling thread.
    sets = {}
    for nvml in (origin, other):
        sets[nvml] = nvml.nvmlEventSetCreate()
        for handle in handles[nvml]:
            nvml.nvmlDeviceRegisterEvents(handle, pynvml.nvmlEventTypeXidCriticalError, sets[nvml])
    first = origin.nvmlEventSetWait(sets[origin], 60_000)
    assert first.eventData == 149 and watchers[origin]._addresses[ctypes.addressof(first.device.contents)] == 0
    with pytest.raises(pynvml.NVMLError_Timeout):
        other.nvmlEventSetWait(sets[other], 60_000)  # no echo on the rest of the domain


def test_each_nvlink5_counter_counts_at_its_injected_rate(sim_rack):
    rates = {"rcv_errors": "rcv_errors_per_s", "malformed_packet_errors": "malformed_packet_errors_per_s",
             "buffer_overrun_errors": "buffer_overrun_errors_per_s",
             "local_link_integrity_errors": "local_link_integrity_errors_per_s",
             "effective_errors": "effective_errors_per_s", "recovery_failed": "recovery_failed_per_s",
             "recovery_successful": "recovery_successful_per_s", "rcv_remote_errors": "rcv_remote_errors_per_s",
             "rcv_general_errors": "rcv_general_errors_per_s"}
    faults = "".join(f"  - {{kind: link_errors, link: ct07/gpu1/nvl{port:02d}, {key}: 0.2}}\n"
                     for port, key in enumerate(rates.values()))
    rack = sim_rack("faults:\n" + faults)
    before, after = read_tray_twice(rack, "ct07", 100.0)
    for port, counter in enumerate(rates):
        assert link_delta(before, after, 1, port, counter) == 20, counter  # 0.2/s over 100 s
        clean = [link_delta(before, after, 1, other, counter) for other in range(len(rates), 18)]
        assert clean == [0] * len(clean), counter  # in-spec noise leaves these counters alone
    assert {link.port: link.counters.get("rcv_errors") for link in after[1].links}  # read through NVML's field values
    # The recovery event total counts both halves, "irrespective of the result" (nvml.h).
    events = {port: link_delta(before, after, 1, port, "recovery_events") for port in range(18)}
    assert events == {port: 20 if counter in ("recovery_failed", "recovery_successful") else 0
                      for port, counter in enumerate([*rates, *[None] * (18 - len(rates))])}


def test_nvlink_data_ecc_errors_count_in_their_gpus_total_only(sim_rack):
    # NVML gives the NVLink data ECC errors as the GPU's "total for all Links": the rates of two of
    # its links add up there, and no link's own counters move.
    rack = sim_rack("faults:\n  - {kind: link_errors, link: ct03/gpu2/nvl04, ecc_data_errors_per_s: 0.2}\n"
                    "  - {kind: link_errors, link: ct03/gpu2/nvl09, ecc_data_errors_per_s: 0.1}\n")
    reader = reader_for(rack, "ct03")
    before = reader.read_all()
    rack.clock.advance(100.0)
    after = reader.read_all()
    assert [a.nvlink_gpu["ecc_data_errors"] - b.nvlink_gpu["ecc_data_errors"] for b, a in zip(before, after)] == [0, 0, 30, 0]
    assert all(link_delta(before, after, 2, port, name) == 0 for port in range(18) for name in NVLINK5_ERRORS)


def test_an_nvlink4_gpu_answers_not_supported_for_the_nvlink5_fields_and_is_read_on(sim_rack, hgx_topology):
    # dcgm_fields.h: the RX remote and general errors, the recovery events and the symbol BER are
    # "NVLink5+ only"; the simulated H100 does not report the NVLink data ECC total either. Each
    # value's own return says so: recorded, and the rest of the reading goes on.
    [gpu, *_] = reader_for(sim_rack("seed: 2\n", topology=hgx_topology), None).read_all()
    assert gpu.name.startswith("NVIDIA H100") and not gpu.lost and gpu.errors == {}
    assert gpu.nvlink_gpu == {} and "NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL" in gpu.unsupported
    for link in gpu.links:
        assert {"rcv_remote_errors", "rcv_general_errors", "recovery_events", "symbol_ber"} <= set(link.unsupported)
        assert link.symbol_ber_raw is None and "rcv_remote_errors" not in link.counters
        assert link.counters["replay_errors"] == 0  # its own data-link counters read as before


def test_gpu_faults_read_through_nvml(sim_rack):
    rack = sim_rack(
        "faults:\n"
        "  - {kind: thermal_throttle, gpu: ct09/gpu2, after_busy_s: 3, clock_factor: 0.72, temperature_c: 92}\n"
        "  - {kind: power_brake, gpu: ct09/gpu3, clock_factor: 0.5}\n"
        "  - {kind: row_remap, gpu: ct09/gpu1, uncorrected_rows: 1, pending: true}\n"
        "  - {kind: ecc, gpu: ct09/gpu0, corrected_per_s: 2, uncorrected: 1}\n"
    )
    reader = reader_for(rack, "ct09")
    idle = reader.read_all()
    assert "gpu_idle" in idle[2].clocks_event_reasons and idle[2].temperature_c < 60
    assert "hw_power_brake_slowdown" in idle[3].clocks_event_reasons
    assert idle[1].remapped_rows == {"corrected": 0, "uncorrected": 1, "pending": True, "failure": False}
    assert idle[0].ecc["uncorrected_volatile"] == 1 and idle[0].remapped_rows["pending"] is True
    device = SimComputeDevice(rack, rack.trays["ct09"].gpus[2])
    a = device.random_matrix(16, 1)
    device.matmul_batch(a, a, iterations=8000, logical_n=8192, dtype="bf16")  # ~4.5 s of load
    hot = reader.read_gpu(2)
    assert {"sw_thermal_slowdown", "hw_thermal_slowdown"} <= set(hot.clocks_event_reasons)
    assert hot.temperature_c == 92 and hot.sm_clock_mhz == int(2062 * 0.72)
    assert hot.violation_s["thermal"] > 0
    assert hot.energy_j > idle[2].energy_j


def test_slow_gpu_and_silent_data_corruption_on_the_compute_device(sim_rack):
    rack = sim_rack("faults:\n  - {kind: slow_gpu, gpu: ct15/gpu0, factor: 0.86}\n  - {kind: sdc, gpu: ct15/gpu1, probability: 0.2}\n")
    slow, corrupt, healthy = (SimComputeDevice(rack, rack.trays["ct15"].gpus[i]) for i in (0, 1, 2))
    ratio = slow.tflops_now("bf16") / healthy.tflops_now("bf16")
    assert 0.82 < ratio < 0.90
    a = corrupt.random_matrix(32, 3)
    results, _ = corrupt.matmul_batch(a, a, iterations=100, logical_n=8192, dtype="bf16")
    reference = a @ a
    wrong = sum(not (r == reference).all() for r in results)
    assert 5 <= wrong <= 40
    clean, _ = healthy.matmul_batch(a, a, iterations=100, logical_n=8192, dtype="bf16")
    assert all((r == reference).all() for r in clean)


def test_a_lost_gpu_fails_its_calls_and_the_others_keep_answering(sim_rack):
    rack = sim_rack("faults:\n  - {kind: gpu_lost, gpu: ct02/gpu3, start_s: 5}\n")
    reader = reader_for(rack, "ct02")
    assert not reader.read_gpu(3).lost
    rack.clock.advance(6)
    readings = reader.read_all()
    assert readings[3].lost and "GPU is lost" in readings[3].errors.values()
    assert not any(r.lost for r in readings[:3])
    assert readings[0].links[0].state == "up"


def test_not_supported_calls_and_fields_are_recorded_not_fatal(sim_rack):
    rack = sim_rack("faults:\n  - {kind: not_supported, gpu: ct01/gpu0, calls: [nvmlDeviceGetTotalEnergyConsumption],"
                    " fields: [NVML_FI_DEV_NVLINK_COUNT_SYMBOL_BER]}\n")
    reading = reader_for(rack, "ct01").read_gpu(0)
    assert reading.energy_j is None and "nvmlDeviceGetTotalEnergyConsumption" in reading.unsupported
    assert all("symbol_ber" in link.unsupported for link in reading.links)
    assert reading.power_w is not None and reading.links[0].effective_ber is not None


def test_hgx_h100_reads_through_the_legacy_calls(sim_rack, hgx_topology):
    rack = sim_rack("faults:\n  - {kind: link_errors, gpu: gpu3, port: 2, crc_per_s: 180, replay_per_s: 2}\n", topology=hgx_topology)
    reader = reader_for(rack, None)
    before = reader.read_all()
    rack.clock.advance(50)
    after = reader.read_all()
    gpu = after[3]
    assert gpu.name == "NVIDIA H100 80GB HBM3" and gpu.platform is None
    assert "nvmlDeviceGetPlatformInfo" in gpu.unsupported
    assert gpu.fabric["summary"] == "not_supported"
    assert gpu.links[2].effective_ber is None and "effective_ber" in gpu.links[2].unsupported
    assert link_delta(before, after, 3, 2, "replay_errors") == 100
    assert link_delta(before, after, 3, 2, "crc_errors") == pytest.approx(9_000, abs=1)  # Hopper keeps its data-link counters
    assert "nvmlDeviceGetNvLinkErrorCounter" not in gpu.unsupported and "crc_errors" not in gpu.links[2].unsupported


def test_the_same_seed_gives_the_same_readings(sim_rack):
    text = "seed: 9\nfaults:\n  - {kind: link_errors, link: ct01/gpu0/nvl01, rcv_errors_per_s: 3.3}\n"
    readings = []
    for _ in range(2):
        rack = sim_rack(text)
        rack.clock.advance(123.4)
        readings.append([link.counters for link in reader_for(rack, "ct01").read_gpu(0).links])
    assert readings[0] == readings[1]


def test_the_xid_log_grows_with_time_and_agrees_with_a_full_recount(sim_rack):
    rack = sim_rack("faults:\n  - {kind: xid, gpu: ct01/gpu0, xid: 119, at_s: 5, repeat_s: 7, count: 50}\n"
                    "  - {kind: xid, gpu: ct01/gpu0, xid: 43, at_s: 11}\n")
    gpu = rack.trays["ct01"].gpus[0]
    expected = sorted([(5.0 + 7 * k, 119) for k in range(50)] + [(11.0, 43)])
    for until in (0, 4.9, 5, 11, 30.5, 100, 1000, 20):  # out of order too: the log is cached
        assert gpu.xid_events(until) == [e for e in expected if e[0] <= until]
        assert gpu.xid_count(until) == len(gpu.xid_events(until))
    assert gpu.xid_at(1, 11) == (11.0, 43) and gpu.xid_at(2, 11) is None


def test_a_watcher_drains_what_it_collected(sim_rack):
    rack = sim_rack("faults:\n  - {kind: xid, gpu: ct01/gpu2, xid: 79, at_s: 1}\n")
    nvml = SimNvml(rack, "ct01")
    nvml.nvmlInit()
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(4)]
    watcher = XidWatcher(nvml, handles).start(poll=False)
    rack.clock.advance(2)
    assert not watcher.alive  # poll=False runs no thread
    watcher.stop()
    events, errors = watcher.drain()
    assert [(e["gpu"], e["xid"]) for e in events] == [(2, 79)] and errors == []
    assert watcher.drain() == ([], [])


def test_a_gpu_lost_before_the_reader_starts_does_not_take_the_tray_down(sim_rack):
    rack = sim_rack("faults:\n  - {kind: gpu_lost, gpu: ct02/gpu1, start_s: 0}\n")
    reader = reader_for(rack, "ct02")
    readings = reader.read_all()
    assert readings[1].lost and "nvmlDeviceGetHandleByIndex" in readings[1].errors
    assert [r.lost for r in readings] == [False, True, False, False]
    assert readings[0].links and readings[2].temperature_c is not None
    assert reader.read_under_load(1).lost and reader.read_link_traffic(1) == {}
    watcher = XidWatcher(reader.nvml, reader.handles).start(poll=False)
    watcher.stop()
    assert watcher.drain()[1] == [{"gpu": 1, "error": "cannot watch XIDs: NVML gave no handle"}]


@pytest.mark.slow
def test_a_hung_gpu_blocks_its_nvml_calls_until_the_hang_ends(sim_rack):
    import threading

    from probes.sim.clock import WallClock

    rack = sim_rack("faults:\n  - {kind: gpu_hang, gpu: ct01/gpu1, start_s: 0, end_s: 1.5}\n")
    rack.clock = WallClock()  # a real stuck call, measured in real time
    rack.epoch = rack.clock.now()
    reader = reader_for(rack, "ct01")
    assert reader.read_gpu(0).temperature_c is not None  # the others answer at once
    done = threading.Event()
    threading.Thread(target=lambda: (reader.read_gpu(1, links=False), done.set()), daemon=True).start()
    assert not done.wait(0.7)  # still blocked in the driver
    assert done.wait(5)  # and back once the hang ends
    device = SimComputeDevice(rack, rack.trays["ct01"].gpus[1])
    assert device.tflops_now("bf16") > 0


def test_temperature_falls_back_to_the_older_call(sim_rack):
    # A driver without nvmlDeviceGetTemperatureV still answers nvmlDeviceGetTemperature.
    rack = sim_rack("faults:\n  - {kind: not_supported, gpu: ct03/gpu1, calls: [nvmlDeviceGetTemperatureV]}\n")
    nvml = SimNvml(rack, "ct03")
    nvml.nvmlInit()
    readings = NvmlReader(nvml, now=rack.now).read_all()
    assert readings[1].temperature_c is not None and readings[1].temperature_c == pytest.approx(readings[0].temperature_c, abs=15)
    assert "nvmlDeviceGetTemperatureV" not in readings[1].unsupported


def test_a_gpu_without_the_legacy_counter_call_is_asked_once_not_on_every_link(sim_rack):
    # A GB200 answers NOT_SUPPORTED to nvmlDeviceGetNvLinkErrorCounter (NVML change log, v565): 3
    # counters × 18 links of every reading would each cost a driver call for the same answer.
    class Counting(SimNvml):
        calls = 0

        def nvmlDeviceGetNvLinkErrorCounter(self, device, link, counter):
            Counting.calls += 1
            return super().nvmlDeviceGetNvLinkErrorCounter(device, link, counter)

    nvml = Counting(sim_rack(), "ct02")
    nvml.nvmlInit()
    reader = NvmlReader(nvml)
    first, second = reader.read_all(), reader.read_all()
    assert Counting.calls == 4  # once per GPU, in the first reading
    assert all("nvmlDeviceGetNvLinkErrorCounter" in gpu.unsupported for gpu in first + second)
    assert all({"crc_errors", "replay_errors", "recovery_errors"} <= set(link.unsupported) for gpu in second for link in gpu.links)
