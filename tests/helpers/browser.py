"""Headless Chromium for the tests of pages meant for a browser (the run report, the flow
page): find it (skip with the reason when it is missing), measure how a page lays out at a
width, and take a screenshot for a person to look at."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed (make browser installs it as root with apt-get)")
    return found


# Measures a page shown in the harness's iframe: every text's boxes (an SVG text by its
# element), the pairs that overlap, whether the page is wider than its frame, each chart's
# title, axis labels, dated x ticks, bars, lines and percentile lines (their rendered y), and
# each table's headers in view without scrolling; written into the harness as JSON for
# --dump-dom.
LAYOUT_CHECK = """
function check(win, doc) {
  var boxes = [];
  var walker = doc.createTreeWalker(doc.body, NodeFilter.SHOW_TEXT);
  var node;
  while ((node = walker.nextNode())) {
    var text = node.textContent.trim();
    var parent = node.parentElement;
    if (!text || parent.closest("title, style")) continue;
    var rects;
    if (parent instanceof win.SVGElement) {
      rects = [parent.getBoundingClientRect()];
    } else {
      var range = doc.createRange();
      range.selectNodeContents(node);
      rects = Array.from(range.getClientRects());
    }
    rects.forEach(function (b) {
      if (b.width > 0 && b.height > 0) boxes.push({text: text.slice(0, 40), b: b});
    });
  }
  var overlaps = [];
  for (var i = 0; i < boxes.length; i++) {
    for (var j = i + 1; j < boxes.length; j++) {
      var a = boxes[i].b, c = boxes[j].b;
      var x = Math.min(a.right, c.right) - Math.max(a.left, c.left);
      var y = Math.min(a.bottom, c.bottom) - Math.max(a.top, c.top);
      if (x > 1 && y > 1) overlaps.push(boxes[i].text + " | " + boxes[j].text);
    }
  }
  var charts = Array.from(doc.querySelectorAll("svg")).map(function (svg) {
    var title = svg.querySelector(":scope > title");
    var xl = svg.querySelector("text.x-label"), yl = svg.querySelector("text.y-label");
    var percentiles = {};
    svg.querySelectorAll("line[data-percentile]").forEach(function (line) {
      percentiles[line.getAttribute("data-percentile")] = line.getBoundingClientRect().top;
    });
    return {id: svg.id, title: title ? title.textContent : "",
            x: xl ? xl.textContent : "", y: yl ? yl.textContent : "",
            x_marks: Array.from(svg.querySelectorAll("text.x-mark")).map(function (t) {
              return t.textContent; }),
            bars: svg.querySelectorAll("rect.bar").length,
            lines: svg.querySelectorAll("polyline").length, percentiles: percentiles};
  });
  // each table's header cells that show whole without scrolling: inside the page's width
  // and the box the table scrolls in
  var columns = {};
  doc.querySelectorAll("table[id]").forEach(function (table) {
    var edge = Math.min(win.innerWidth, table.parentElement.getBoundingClientRect().right);
    columns[table.id] = Array.from(table.rows[0].cells).filter(function (cell) {
      var b = cell.getBoundingClientRect();
      return b.width > 0 && b.right <= edge + 1;
    }).map(function (cell) { return cell.textContent.trim(); });
  });
  var out = document.createElement("pre");
  out.id = "layout-check";
  out.textContent = JSON.stringify({
    width: win.innerWidth, texts: boxes.length, overlaps: overlaps.slice(0, 20),
    wider: doc.documentElement.scrollWidth > win.innerWidth + 1, charts: charts,
    columns: columns,
    text: doc.body.innerText.slice(0, 20000)});
  document.body.appendChild(out);
}
"""


def layout_of(chromium: str, page: Path, width: int, workdir: Path) -> dict[str, Any]:
    """How `page` lays out in a frame `width` px wide, measured in headless Chromium."""
    harness = page.with_name(f"{page.stem}-at-{width}.html")
    harness.write_text(
        f'<!doctype html><html><body style="margin:0"><iframe id="page" src="{page.name}"'
        f' style="width:{width}px;height:1000px;border:0"></iframe><script>{LAYOUT_CHECK}'
        'document.getElementById("page").addEventListener("load", function () {'
        ' var f = document.getElementById("page"); check(f.contentWindow, f.contentDocument);'
        "});</script></body></html>",
        encoding="utf-8",
    )
    dom = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={workdir / 'profile'}",
         "--allow-file-access-from-files", "--virtual-time-budget=10000",
         "--window-size=1400,1000", "--dump-dom", harness.as_uri()],
        capture_output=True, text=True, timeout=90, check=True,
    ).stdout  # fmt: skip
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', dom, re.DOTALL)
    assert found, dom[-2000:]
    return dict(json.loads(unescape(found.group(1))))


def screenshot(chromium: str, page: Path, width: int, workdir: Path) -> Path:
    shot = workdir / f"{page.stem}-{width}.png"
    subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={workdir / 'profile'}",
         f"--screenshot={shot}", f"--window-size={width},2400", page.as_uri()],
        capture_output=True, timeout=90, check=True,
    )  # fmt: skip
    assert shot.stat().st_size > 10_000
    shutil.copy(shot, Path("/tmp") / f"haul-{shot.name}")  # for a person to look at
    return shot


def laid_out_well(layout: dict[str, Any], width: int) -> None:
    assert layout["width"] == width
    assert layout["texts"] > 20
    assert layout["overlaps"] == [], layout["overlaps"]
    assert not layout["wider"], "the page is wider than the screen"
    for chart in layout["charts"]:
        assert chart["title"] and chart["x"] and chart["y"], chart
