"""Reading NVRM Xid lines: the registers NVIDIA's catalog decodes XIDs 144-150 by, matched to
NVML's events by GPU bus and code."""

from probes.kernel_log import attach_registers, bus_key, parse_xid_lines

LINES = [
    "[12345.6] NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 13 (0x00100011 0x00000000 0x0 0x0 0x0 0x0 0x0)",
    "[12346.0] NVRM: Xid (PCI:0009:01:00): 145, RLW_REMAP Nonfatal XC0 i0 Link -1 (0x00000004 0x00000100 0x0 0x0 0x0 0x0 0x0)",
    "[12347.0] NVRM: Xid (PCI:0009:01:00): 13, Graphics Exception: ESR 0x405840=0x80000000",
    "[12348.0] usb 1-1: new device",
]


def test_xid_lines_give_their_registers():
    found = parse_xid_lines(LINES)
    assert [(e["xid"], e["intr_info"], e["error_status"]) for e in found] == [(149, 0x100011, 0), (145, 4, 0x100), (13, None, None)]
    assert found[0]["pci"] == bus_key("00000008:01:00.0") == (8, 1, 0)


def test_each_nvlink5_event_takes_its_own_gpus_line_in_order():
    events = [{"gpu": 1, "xid": 145, "time": 2.0}, {"gpu": 0, "xid": 149, "time": 1.0}, {"gpu": 0, "xid": 149, "time": 3.0},
              {"gpu": 1, "xid": 13, "time": 4.0}]
    matched = attach_registers(events, parse_xid_lines(LINES), {0: "00000008:01:00.0", 1: "00000009:01:00.0"}, "580.65.06")
    assert matched == 2
    assert events[0]["error_status"] == 0x100 and events[0]["driver_major"] == 580
    assert events[1]["intr_info"] == 0x100011 and "intr_info" not in events[2]  # one line, one event
    assert "intr_info" not in events[3]  # not an NVLink 5 XID
