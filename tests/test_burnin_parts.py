"""The burn-in hands its failing links to the localizer, so the verdict names parts to repair:
the connector whose bent pins made three links fail, not only the three links."""


def test_the_verdict_names_the_part_behind_the_failing_links(rack07_over_ssh):
    summary = rack07_over_ssh.summary()
    parts = {s["component"]: s for s in summary["suspects"] if not s.get("alternative_to")}
    assert set(parts) == {"rack07/ct12/j2", "rack07/ct05/gpu1/nvl07", "rack07/ct07/gpu0/nvl13"}
    connector = parts["rack07/ct12/j2"]
    assert connector["kind"] == "connector" and sorted(connector["links"]) == [
        "rack07/ct12/gpu2/nvl02", "rack07/ct12/gpu3/nvl00", "rack07/ct12/gpu3/nvl04"]
    assert connector["action"] and connector["mttr_hours"] > 0
    assert "rack07/ct12/j2" in summary["failing_parts"]
    assert "rack07/ct12/j2 (connector" in rack07_over_ssh.out
    assert "rack07/ct12/j2" in (rack07_over_ssh.run / "report.html").read_text()
