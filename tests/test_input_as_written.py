"""Input is read as written or refused (issue 28 part 6): a key given twice in JSON, or a column
twice in a CSV header, is refused as YAML refuses a repeated key (JSON's parser and csv.DictReader
would keep the last and say nothing); a spreadsheet's CSV with a UTF-8 byte-order mark is read; a
top-level inventory group that would replace a rack is refused; a TCO throughput too small to
price says so."""

import json

from opsctl.ledger import open_ledger
from tests.conftest import assert_one_line_error

SNAPSHOT = {"format": "opsctl-snapshot/1", "rack": "hgx01", "model": "hgx-h100", "window_seconds": 60,
            "links": [], "gpus": []}


def test_a_key_twice_in_json_is_refused(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger_file = tmp_path / "export.json"
    ledger_file.write_text('{"format": "opsctl-ledger/1", "runs": [{"rack": "hgx01", "kind": "burnin", '
                           '"finished_at": "2026-03-01T10:00:00Z", "verdict": "fail", "verdict": "pass"}]}')
    assert_one_line_error(opsctl("ledger", "import", ledger_file, "--db", url), 2, str(ledger_file),
                          "key 'verdict' appears twice")
    snapshot = tmp_path / "snapshot.json"
    text = json.dumps(SNAPSHOT)
    snapshot.write_text(text[:-1] + ', "rack": "rack07"}')
    assert_one_line_error(opsctl("localize", snapshot), 2, str(snapshot), "key 'rack' appears twice")
    summary = tmp_path / "summary.json"
    summary.write_text('{"format": "opsctl-burnin/1", "kind": "burnin", "rack": "hgx01", "run_id": "r1", '
                       '"finished": "2026-03-01T10:00:00Z", "verdict": "FAIL", "verdict": "PASS"}')
    assert_one_line_error(opsctl("ledger", "record-burnin", summary, "--db", url), 2, str(summary), "verdict")
    with open_ledger(url) as ledger:
        assert ledger.records("runs") == []


def test_a_column_twice_in_a_csv_header_is_refused_and_a_byte_order_mark_is_read(opsctl, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    twice = tmp_path / "runs.csv"
    twice.write_text("rack,kind,finished_at,verdict,verdict\nhgx01,burnin,2026-03-01T10:00:00Z,fail,pass\n")
    assert_one_line_error(opsctl("ledger", "import", twice, "--db", url), 2, f"{twice} line 1",
                          "column(s) verdict given twice")
    spreadsheet = tmp_path / "sheet" / "runs.csv"
    spreadsheet.parent.mkdir()
    spreadsheet.write_bytes(b"\xef\xbb\xbfrack,kind,finished_at,verdict\r\nhgx01,burnin,2026-03-01T10:00:00Z,pass\r\n")
    result = opsctl("ledger", "import", spreadsheet, "--db", url)
    assert result.code == 0, result.err
    with open_ledger(url) as ledger:
        [run] = ledger.records("runs")
    assert (run["rack"], run["verdict"]) == ("hgx01", "pass")


def test_a_top_level_group_that_would_replace_a_rack_is_refused(opsctl, tmp_path):
    path = tmp_path / "inventory.yaml"
    path.write_text("""all:
  children:
    hgx01:
      vars: {opsctl_model: hgx-h100, opsctl_transport: local, opsctl_backend: sim}
      hosts:
        hgx01-node:
hgx01:
  vars: {ansible_user: ops}
""")
    assert_one_line_error(opsctl("--inventory", path, "inventory", "list"), 2, str(path),
                          "group hgx01 is defined twice")
    # Listed under all: and defined at the top level, a group is defined once: read as Ansible reads it.
    path.write_text("""all:
  children:
    hgx01:
hgx01:
  vars: {opsctl_model: hgx-h100, opsctl_transport: local, opsctl_backend: sim}
  hosts:
    hgx01-node:
""")
    listed = opsctl("--inventory", path, "inventory", "list")
    assert listed.code == 0 and "hgx01" in listed.out, listed.err


def test_a_throughput_too_small_to_price_says_so(opsctl, tmp_path):
    path = tmp_path / "tco.yaml"
    path.write_text("cluster: {gpu: h100, gpus: 8, gpu_hour_cost: 2.5}\n"
                    "workload: {tokens_per_second_per_gpu: 5e-324, tokens: 1e9, precision: bf16}\n")
    result = opsctl("tco", "run", path, "--json")
    assert result.code == 0, result.err
    document = result.json()
    assert document["cost_per_million_tokens"] is None and document["joules_per_token"] is None
    assert any("too small to price" in w and "tokens_per_second_per_gpu" in w for w in document["warnings"])
    shown = opsctl("tco", "run", path)
    assert "too small to price" in shown.out
