"""NVIDIA's XID catalog as opsctl rules it: one test per resolution bucket (its verdict is what
the bucket must give), codes outside the catalog, and XIDs 144-150 decoded from kernel log lines
in the form NVIDIA's drivers write them, in both intrInfo layouts of the catalog's decode sheet."""

import pytest

from probes.kernel_log import parse_xid_lines
from probes.xids import catalog, decode, rule

# What each immediate bucket of the catalog must give: an application fault or an informational
# XID warns (it is never a pass); every bucket that takes the GPU out of service fails.
BUCKET_VERDICTS = {
    "IGNORE": "warn", "RESTART_APP": "warn", "CHECK_UVM": "warn", "WORKFLOW_XID_45": "warn",
    "XID_154_EVAL": "warn", "XID_154": "warn",
    "RESET_GPU": "fail", "RESTART_BM": "fail", "RESTART_VM": "fail", "CONTACT_SUPPORT": "fail",
    "UPDATE_SWFW": "fail", "CHECK_MECHANICALS": "fail", "WORKFLOW_XID_48": "fail",
    "WORKFLOW_NVLINK_ERR": "fail", "WORKFLOW_NVLINK5_ERR": "fail",
}
# The first step each bucket's action names, as NVIDIA's catalog words it.
BUCKET_FIRST_STEP = {"RESET_GPU": "reset the GPU", "RESTART_BM": "reboot the machine", "RESTART_VM": "restart the VM",
                     "WORKFLOW_NVLINK_ERR": "reset the GPU", "WORKFLOW_XID_48": "reset the GPU",
                     "CONTACT_SUPPORT": "contact NVIDIA support", "CHECK_MECHANICALS": "check the mechanicals"}


def codes_of(bucket):
    return [code for code, entry in catalog()["xids"].items() if entry["immediate"] == bucket]


def test_every_bucket_the_catalog_uses_has_its_verdict_here():
    used = {entry["immediate"] for entry in catalog()["xids"].values()} - {None}
    used |= {row["immediate"] for row in catalog()["nvlink5_decode"]}
    assert used <= set(BUCKET_VERDICTS)
    assert set(catalog()["buckets"]) == set(BUCKET_VERDICTS)


@pytest.mark.parametrize("bucket", sorted(BUCKET_VERDICTS))
def test_each_bucket_gives_its_verdict(bucket):
    how = catalog()["buckets"][bucket]
    assert how["verdict"] == BUCKET_VERDICTS[bucket]
    assert f"catalog: {bucket}" in how["action"]
    if bucket in BUCKET_FIRST_STEP:
        assert BUCKET_FIRST_STEP[bucket] in how["action"]
    for code in codes_of(bucket):
        ruling = rule(code)
        if bucket == "WORKFLOW_NVLINK5_ERR":  # without its kernel log line: the code's most severe decode row
            assert ruling.verdict in ("warn", "fail") and ruling.listed
            continue
        assert (ruling.verdict, ruling.bucket, ruling.listed) == (BUCKET_VERDICTS[bucket], bucket, True), code


def test_the_catalogs_counts_per_bucket():
    """The transcription of the catalog (1-172): a bucket moved, dropped or added shows here."""
    assert sorted(catalog()["xids"]) == list(range(1, 173))
    assert len(codes_of("CONTACT_SUPPORT")) == 62 and codes_of("CHECK_MECHANICALS") == [54]
    assert codes_of("RESTART_BM") == [79] and codes_of("WORKFLOW_NVLINK_ERR") == [74]
    assert codes_of("WORKFLOW_NVLINK5_ERR") == list(range(144, 151))
    assert codes_of(None) == list(range(162, 173))  # listed without a resolution bucket


@pytest.mark.parametrize("code", [162, 167, 172])
def test_a_code_listed_without_a_bucket_is_not_a_pass_and_says_so(code):
    ruling = rule(code)
    assert (ruling.verdict, ruling.bucket, ruling.listed) == ("fail", None, False)
    assert ruling.mnemonic and "lists this XID without a resolution bucket" in ruling.action
    assert "opsctl's rule" in ruling.action


@pytest.mark.parametrize("code", [173, 185, 999])
def test_a_code_outside_the_catalog_is_not_a_pass_and_says_it_has_no_row(code):
    ruling = rule(code)
    assert (ruling.verdict, ruling.mnemonic, ruling.listed) == ("fail", None, False)
    assert ruling.meaning == "no row in NVIDIA's XID catalog (it lists XIDs 1-172)"
    assert "opsctl's rule" in ruling.action


# NVRM Xid lines as NVIDIA's drivers write them on GB200 (quoted in leptonai/gpud pull requests
# #1160 and #1174, github.com/leptonai/gpud/pull/1174): the first register is intrInfo, the
# second errorStatus. Those of 149 and 145 carry the pre-R575 intrInfo layout (`intrinfo_v1`), the
# SAW_MVB one the R575 layout (`intrinfo_v2`).
REAL_LINES = [
    ("NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000 0x00000000 "
     "0x00000000 0x00000000 0x00000000)", "NETIR_LINK_EVT/NETIR_LINK_DOWN", "IGNORE", "INVESTIGATE_SW/USER", "warn"),
    ("NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000 0x00000000 "
     "0x00000000 0x00000000 0x00000000)", "NETIR_LINK_EVT/NETIR_LINK_DOWN", "RESET_GPU", "INVESTIGATE_PEER_DEVICE", "fail"),
    ("NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 "
     "0x00000000 0x00000000)", "NETIR/NETIR_INT", "RESET_GPU", "SYMPATHETIC_REPORT_SOLO", "fail"),
    ("NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 "
     "0x00000000 0x00100000 0x00000004)", "RLW_RXPIPE", "IGNORE", "CONTACT_SUPPORT", "warn"),
    ("NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 0x00000000 0x00000000 "
     "0x00000000 0x00000000)", "SAW_MVB", "IGNORE", "CONTACT_SUPPORT", "warn"),
]


@pytest.mark.parametrize("line, unit, bucket, investigatory, verdict", REAL_LINES)
@pytest.mark.parametrize("driver", [570, 575, 580, None])
def test_a_real_nvlink5_line_decodes_under_any_driver_branch(line, unit, bucket, investigatory, verdict, driver):
    [entry] = parse_xid_lines([f"[ 1234.567890] {line}"])
    ruling = rule(entry["xid"], entry["intr_info"], entry["error_status"], driver)
    assert (ruling.bucket, ruling.investigatory, ruling.verdict) == (bucket, investigatory, verdict)
    assert ruling.decoded is not None and f"unit {unit}," in ruling.decoded
    assert ("R575+ layout" if entry["xid"] == 144 else "pre-R575 layout") in ruling.decoded


def test_the_two_layouts_never_decode_one_register_to_two_units():
    """Each row's register, spelled in either layout, decodes to that row's action under either
    branch: trying both layouts cannot mislead. (Where the sheet gives two units one mask —
    TLW pipes 0 and 1 before R575, XID 150's two rows — it gives them the same actions.)"""
    for row in catalog()["nvlink5_decode"]:
        status = int(str(row["error_status"] or "0x0").split("/")[0], 16)
        for version in ("intrinfo_v1", "intrinfo_v2"):
            value = int(row[version].replace("-", "0"), 2)
            for driver in (570, 580):
                found = decode(row["xid"], value, status, driver)
                assert found is not None, (row, version, driver)
                assert (found["immediate"], found["investigatory"]) == (row["immediate"], row["investigatory"]), \
                    (row, version, driver)


def test_a_line_no_row_fits_takes_the_codes_most_severe_row():
    [entry] = parse_xid_lines(["NVRM: Xid (PCI:0000:04:00): 147, TREX Fatal XC0 i0 Link 00 (0x0000ffff 0x00000040 0x0 0x0)"])
    ruling = rule(147, entry["intr_info"], entry["error_status"], 580)
    assert ruling.decoded is None and "most severe row for XID 147" in ruling.action
