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


def test_chromium_renders_the_heatmap_with_each_link_in_its_verdicts_colour(rack07_over_ssh, tmp_path):
    summary = rack07_over_ssh.summary()
    png = tmp_path / "report.png"
    pixels = screenshot(rack07_over_ssh.run / "report.html", png, tmp_path / "chromium-profile")
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
