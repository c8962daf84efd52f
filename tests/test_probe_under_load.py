"""The under-load summary: what the load held, not what an idle moment showed."""

from probes.nvml_reader import GpuReading
from probes.under_load import summarize


def sample(clock: int, power: float, temperature: int, reasons: list[str] | None) -> GpuReading:
    return GpuReading(index=0, time=0.0, sm_clock_mhz=clock, power_w=power, temperature_c=temperature,
                      clocks_event_reasons=reasons)


def test_a_sample_nvml_flags_idle_does_not_halve_the_clock_median_of_two():
    # The GPU before its first kernel (a loaded host starts the load late): NVML says gpu_idle.
    summary = summarize([sample(345, 90.0, 40, ["gpu_idle"]), sample(1980, 690.0, 71, [])])
    assert summary["sm_clock_mhz_median"] == 1980 and summary["power_w_median"] == 690.0
    assert summary["samples"] == 2 and summary["idle_samples"] == 1
    assert summary["temperature_c_max"] == 71 and summary["clocks_event_reasons"] == []


def test_a_throttled_clock_under_load_still_moves_the_median():
    # Not idle: clocks held down by a thermal slowdown are what the rack-relative check must see.
    summary = summarize([sample(1400, 600.0, 91, ["sw_thermal_slowdown"]), sample(1400, 600.0, 91, ["sw_thermal_slowdown"]),
                         sample(1980, 690.0, 71, [])])
    assert summary["sm_clock_mhz_median"] == 1400 and summary["idle_samples"] == 0
    assert summary["clocks_event_reasons"] == ["sw_thermal_slowdown"]


def test_unread_reasons_count_as_computing_and_all_idle_leaves_no_median():
    assert summarize([sample(1200, 500.0, 60, None)])["sm_clock_mhz_median"] == 1200
    idle = summarize([sample(345, 90.0, 40, ["gpu_idle"])])
    assert idle["sm_clock_mhz_median"] is None and idle["power_w_median"] is None
    assert idle["temperature_c_max"] == 40 and idle["idle_samples"] == 1
