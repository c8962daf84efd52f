"""The handover report of the seeded rack07 (burned in over ssh): self-contained HTML that
headless Chromium renders with the link heatmap in place — every cell in its verdict's colour."""

import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from opsctl.reports.pictures import HEATMAP_CELL_H, HEATMAP_CELL_W, VERDICT_COLOURS

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                  "--force-device-scale-factor=1"]


def _rgb(colour):
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def screenshot(html, png, profile, size=(1300, 2000)):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is not installed: run scripts/test, which installs Debian's chromium")
    subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
                    f"--screenshot={png}", html.as_uri()], capture_output=True, timeout=120, check=True)
    return np.asarray(Image.open(png).convert("RGB"))


def find_heatmap(pixels, columns):
    """(x, y) of the heatmap's first cell: the rows of the image holding `columns` runs of
    cell-wide verdict-coloured pixels at the cell pitch."""
    colours = np.array([_rgb(c) for c in VERDICT_COLOURS.values()])
    coloured = (pixels[:, :, None, :] == colours[None, None, :, :]).all(axis=3).any(axis=2)
    width = HEATMAP_CELL_W - 1  # cells are drawn one pixel narrower than their pitch
    for y in range(coloured.shape[0]):
        row = np.concatenate([[False], coloured[y], [False]]).astype(np.int8)
        edges = np.diff(row)
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        runs = starts[(ends - starts) == width]
        for start in runs:
            if all(start + k * HEATMAP_CELL_W in runs for k in range(columns)):
                return int(start), y
    raise AssertionError("no heatmap in the screenshot")


def test_the_report_is_self_contained(rack07_over_ssh):
    html = (rack07_over_ssh.run / "report.html").read_text()
    assert "<script" not in html and "<link" not in html and "@import" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//)""", html)
    assert not re.search(r"url\(\s*['\"]?(https?:|//)", html)
    for name in ("rack07/ct15/gpu0", "opsctl-default", "sha256", "Sign-off", "trays/ct05.json"):
        assert name in html


@pytest.mark.slow
def test_chromium_renders_the_heatmap_with_each_link_in_its_verdicts_colour(rack07_over_ssh, tmp_path):
    summary = rack07_over_ssh.summary()
    png = tmp_path / "report.png"
    pixels = screenshot(rack07_over_ssh.run / "report.html", png, tmp_path / "chromium-profile", size=(1300, 3200))
    x0, y0 = find_heatmap(pixels, columns=18)
    failing = set(summary["failing"]["links"])
    seen = {}
    for link in summary["links"]:
        tray, gpu = link["gpu"].split("/")[1:]
        row = (int(tray[2:]) - 1) * 4 + int(gpu[3:])
        x = x0 + link["port"] * HEATMAP_CELL_W + HEATMAP_CELL_W // 2
        y = y0 + row * HEATMAP_CELL_H + HEATMAP_CELL_H // 2
        colour = tuple(int(v) for v in pixels[y, x])
        expected = "fail" if link["id"] in failing else "pass"
        assert colour == _rgb(VERDICT_COLOURS[expected]), (link["id"], colour)
        seen[expected] = seen.get(expected, 0) + 1
    assert seen == {"fail": 5, "pass": 1291}
    # The verdict is at the top, in the failing colour.
    assert (pixels[:400] == np.array(_rgb(VERDICT_COLOURS["fail"]))).all(axis=2).sum() > 1000


def test_a_switch_chip_is_coloured_by_its_own_checks_not_by_a_bad_link_ending_there(rack07_over_ssh):
    from opsctl.reports.pictures import rack_view

    summary = rack07_over_ssh.summary()
    svg = rack_view(summary)
    # Each of rack07's failing links ends on some chip; those chips are healthy: drawn in pass's
    # colour, their failing links counted in the title (and drawn in the heatmap).
    chips = {link["switch"] for link in summary["links"] if link["verdict"] == "fail"}
    assert chips
    for chip in chips:
        cell = re.search(rf'fill="(#[0-9a-f]+)"[^>]*><title>{re.escape(chip)}: (\w+); (\d+) of its', svg)
        assert cell, chip
        assert cell.group(1) == VERDICT_COLOURS["pass"] and cell.group(2) == "pass" and int(cell.group(3)) >= 1


# --- reading the report's HTML ------------------------------------------------------------------
def section(html, heading):
    """The HTML of one <h2> section, up to the next."""
    start = html.index(f"<h2>{heading}</h2>")
    end = html.find("<h2>", start + 4)
    return html[start:end if end > 0 else None]


def table_rows(html):
    """Every table row of `html`: its cells' raw HTML."""
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S) for row in re.findall(r"<tr>(.*?)</tr>", html, re.S)]


def text(cell):
    return re.sub(r"<[^>]+>", "", cell).strip()


def test_each_part_to_repair_links_its_runbook_from_the_run_folder(rack07_over_ssh):
    from opsctl.reports.formatting import primary_suspects
    from opsctl.runbooks import RUNBOOK_DIR

    run = rack07_over_ssh.run
    summary = rack07_over_ssh.summary()
    rows = {text(cells[0]): cells for cells in table_rows(section((run / "report.html").read_text(), "What to repair"))}
    suspects = primary_suspects(summary)
    assert suspects
    for suspect in suspects:
        runbook = rows[suspect["component"]][-1]
        href = re.search(r'href="([^"]+)"', runbook).group(1)
        # Relative to the folder report.html lies in: opened from the run folder, the link opens
        # this checkout's runbook.
        assert not href.startswith(("/", "file:", "http")) and text(runbook) == suspect["runbook"]
        assert (run / href).resolve() == (RUNBOOK_DIR.parent / suspect["runbook"]).resolve()
        assert (run / href).is_file()


def test_a_runbook_this_install_lacks_is_shown_as_its_path(tmp_path, monkeypatch):
    from opsctl.reports import html_report

    assert html_report.runbook_link("runbooks/link.md", tmp_path).startswith("<a ")
    monkeypatch.setattr(html_report, "RUNBOOK_DIR", tmp_path / "site-packages" / "runbooks")  # a wheel: no runbooks/
    shown = html_report.runbook_link("runbooks/link.md", tmp_path)
    assert "<a" not in shown and "runbooks/link.md" in shown
    assert html_report.runbook_link(None, tmp_path) == "–"


def test_what_to_repair_lists_every_part_the_localizer_names_and_the_repair_plan(rack07_over_ssh):
    from opsctl.reports.html_report import render_html

    summary = rack07_over_ssh.summary()
    gpu = {"component": "rack07/ct03/gpu3", "kind": "gpu", "score": 1.0, "links": [], "action": "RMA the GPU",
           "mttr_hours": 3.85, "gpus_idled": 4, "runbook": "runbooks/silent-data-corruption.md",
           "evidence": [f"failed check {n}" for n in range(5)]}
    runner_up = {**gpu, "component": "rack07/ct03/j0", "kind": "connector", "score": 0.02, "alternative_to": "rack07/ct03/gpu3"}
    summary["suspects"] = [s for s in summary["suspects"] if s["component"] != gpu["component"]] + [gpu, runner_up]
    summary["repair_plan"] = {"gpus_out": 6, "gpu_ids": [f"rack07/ct03/gpu{n}" for n in range(4)] + ["rack07/ct15/gpu0",
                              "rack07/ct17/gpu1"], "spare_gpus": 8, "train_gpus": 64, "gpus_lost_to_training": 0,
                              "advice": "the 8 hot spares cover the repairs"}

    html = render_html(summary, rack07_over_ssh.run)

    repair = section(html, "What to repair")
    listed = [text(cells[0]) for cells in table_rows(repair)[1:]]
    assert listed == [s["component"] for s in summary["suspects"] if not s.get("alternative_to")]
    assert "rack07/ct03/gpu3" in listed and "rack07/ct03/j0" not in listed  # the runner-up is an alternative only
    assert re.search(r"<li><span class=mono>rack07/ct03/j0</span>.*instead of", repair)
    gpu_row = table_rows(repair)[listed.index("rack07/ct03/gpu3") + 1]
    assert "failed check 0; failed check 1; failed check 2; and 2 more" in text(gpu_row[6])  # a GPU's evidence, not links
    plan = text(re.search(r'<p id="repair-plan">(.*?)</p>', repair, re.S).group(1))
    assert plan.startswith("All repairs together take 6 GPUs out at once (ct03 (all 4), ct15/gpu0, ct17/gpu1).")
    assert "Hot spares: 8; GPUs a training job needs: 64; GPUs lost to training meanwhile: 0." in plan
    assert "The 8 hot spares cover the repairs." in plan

    del summary["repair_plan"]
    assert 'id="repair-plan"' not in render_html(summary, rack07_over_ssh.run)


def test_the_inventory_names_the_chassis_slot_tray_and_switch_firmware(rack07_over_ssh):
    import json

    from probes.sim.switch import CHIP_FIRMWARE

    run = rack07_over_ssh.run
    inventory = section((run / "report.html").read_text(), "Inventory and firmware")
    platform = json.loads((run / "trays" / "ct05.json").read_text())["gpus"][0]["platform"]
    serial = platform["chassis_serial"]
    assert serial and f"chassis serial <b class=mono>{serial}</b>" in inventory
    trays = {text(cells[0]): [text(c) for c in cells] for cells in table_rows(inventory) if text(cells[0]).startswith("rack07/")
             and "/gpu" not in text(cells[0])}
    assert trays["rack07/ct05"][:7] == ["rack07/ct05", "compute", "rack07-ct05", serial, "5", "4", "570.133.20"]
    assert trays["rack07/ct18"][3:6] == [serial, "18", "17"]
    for tray in ("st1", "st9"):
        assert trays[f"rack07/{tray}"][1] == "switch" and trays[f"rack07/{tray}"][7] == f"{CHIP_FIRMWARE} (sw0, sw1)"
    gpu = next(cells for cells in table_rows(inventory) if text(cells[0]) == "rack07/ct05/gpu2")
    assert text(gpu[6]) == str(platform["module_id"] + 2)  # module ids 1–4 on a tray of four


def test_bar_charts_start_at_zero():
    from opsctl.reports.pictures import bar_chart

    svg = bar_chart("bf16 GEMM", "TFLOPS", [("rack07/ct01/gpu0", 1950.0, "pass"), ("rack07/ct01/gpu1", 1700.0, "fail")],
                    median=1940.0, threshold=1836.0)
    bars = {float(value): (float(y), float(h)) for y, h, value in
            re.findall(r'<rect x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)"[^>]*><title>[^:]+: ([\d.]+) TFLOPS', svg)}
    (y1, h1), (y2, h2) = bars[1950.0], bars[1700.0]
    assert y1 + h1 == y2 + h2  # one baseline
    assert abs(h1 / h2 - 1950 / 1700) < 0.01  # heights in proportion to the values: the axis starts at 0
    ticks = re.findall(r'<text x="\d+" y="([\d.]+)" font-size="9" text-anchor="end"[^>]*>([\d.]+)</text>', svg)
    assert ticks[0][1] == "0" and abs(float(ticks[0][0]) - 4 - (y1 + h1)) < 0.1  # the 0 tick sits on the baseline
