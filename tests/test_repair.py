"""`opsctl repair open|close|list` as an on-call engineer uses it."""

from tests.conftest import assert_one_line_error


def test_open_close_list(opsctl, memory_tmp_path):
    db = ("--db", f"sqlite:///{memory_tmp_path / 'l.sqlite'}")
    assert opsctl("ledger", "rack", "rack07", "--handover", "2026-01-01", *db).code == 0
    opened = opsctl("repair", "open", "rack07/cart2", "--by", "ana", "--at", "2026-02-01T08:00Z",
                    "--details", "spine errors on 40 links", "--json", *db)
    assert opened.code == 0, opened.err
    repair = opened.json()
    assert (repair["action"], repair["kind"], repair["gpus_idled"]) == ("replace_cartridge", "cartridge", 72)
    listed = opsctl("repair", "list", "--open", "--json", *db).json()["repairs"]
    assert [r["key"] for r in listed] == [repair["key"]]
    closed = opsctl("repair", "close", "rack07/cart2", "--by", "bo", "--at", "2026-02-01T22:00Z",
                    "--back-in-service", "2026-02-02T01:00Z", "--replaced", "cartridge SN-C-77", "--rma", "RMA-9",
                    "--json", *db)
    assert closed.code == 0, closed.err
    assert closed.json()["restore_hours"] == 17.0 and closed.json()["closed_by"] == "bo"
    assert opsctl("repair", "list", "--open", "--json", *db).json()["repairs"] == []
    table = opsctl("repair", "list", "--rack", "rack07", *db)
    assert table.code == 0 and "RMA-9" in table.out and "cartridge SN-C-77" in table.out


def test_mistakes_are_one_line(opsctl, memory_tmp_path):
    db = ("--db", f"sqlite:///{memory_tmp_path / 'l.sqlite'}")
    assert_one_line_error(opsctl("repair", "open", "rack07/ct03", "--action", "pray", *db), 2,
                          "unknown repair action 'pray' (known: configure_gpu, reboot_machine, replace_baseboard")
    assert_one_line_error(opsctl("repair", "open", "rack07/ct33", *db), 2, "no such component in rack07")
    assert_one_line_error(opsctl("repair", "open", "rack07/ct03", "--at", "soon", *db), 2, "not a time: 'soon'")
    assert_one_line_error(opsctl("repair", "close", "rack07/ct03", *db), 2, "no open repair of rack07/ct03")
    assert opsctl("repair", "open", "rack07/ct03", "--at", "2026-03-01", *db).code == 0
    assert_one_line_error(opsctl("repair", "open", "rack07/ct03", *db), 2, "already has an open repair")
    assert_one_line_error(opsctl("repair", "close", "rack07/ct03", "--at", "2026-02-01", *db), 2,
                          "before the repair was opened")
    assert_one_line_error(opsctl("repair", "open", "rack07", *db), 2, "a whole rack: say which --action")
