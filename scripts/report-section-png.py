"""A PNG of one section of a report (for the README), drawn by Debian's headless Chromium.

    .venv/bin/python scripts/report-section-png.py results/report/report.html reproduction docs/reproduction.png

Everything outside the section (from its <h2 id=...> to the next <h2>) is hidden, so the picture is
the report as a reader sees it, not a re-drawing.
"""

import sys
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

KEEP_ONLY = """
const start = document.getElementById(arguments[0]);
if (!start) { return false; }
let keep = false;
for (const node of Array.from(start.parentElement.children)) {
  if (node === start) { keep = true; }
  else if (keep && node.tagName === 'H2') { keep = false; }
  node.style.display = keep ? '' : 'none';
}
window.scrollTo(0, 0);
return document.documentElement.scrollHeight;
"""


def main(report: str, section: str, out: str) -> None:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800", "--hide-scrollbars"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(Path(report).resolve().as_uri())
        height = driver.execute_script(KEEP_ONLY, section)
        if not height:
            sys.exit(f"{report} has no section with id '{section}'; build the report of a results directory "
                     "that holds it.")
        driver.set_window_size(1280, min(int(height) + 40, 6000))
        time.sleep(0.5)  # the images decode after the resize
        driver.save_screenshot(out)
    finally:
        driver.quit()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: report-section-png.py REPORT.html SECTION_ID OUT.png")
    main(*sys.argv[1:])
