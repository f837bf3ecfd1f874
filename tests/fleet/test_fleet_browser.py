"""Issue 16: the HTML summary in a real headless browser (Debian's `chromium`): the page renders, its inline
script runs without an error (it fills in the shown-node count and applies a filter given in the URL's #),
and the numbers it shows are the summary's. Opt-in: marked `browser`, run by `nox -s browser`; skipped where
chromium is not installed. Writes a screenshot next to the page (the README's picture is made the same way).
"""

import re
import shutil
import subprocess

import pytest

from fleet_builders import planted

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(*args, timeout=120):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-extensions", "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_html_summary_in_headless_chromium(cli, tmp_path):
    r = cli("fleet", "summarize", "--format", "html", str(planted(tmp_path / "r")), env={"PATH": "/nonexistent"})
    page = tmp_path / "fleet.html"
    page.write_text(r.out, encoding="utf-8")
    dom = _chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert '<b id="nodes-read">20</b>' in html and re.search(r'<b id="deviating" class="bad">4</b>', html)
    assert '<span id="shown">20</span>' in html  # written by the page's script: it ran
    assert html.count('<tr class="deviates">') == 3 + 3  # node-03, -04, -09 and the three deviating configurations
    assert "Uncaught" not in dom.stderr and "Refused to" not in dom.stderr, dom.stderr[-2000:]
    filtered = _chromium("--dump-dom", page.as_uri() + "#node-07")
    assert '<span id="shown">1</span>' in filtered.stdout
    shot = tmp_path / "fleet.png"
    done = _chromium("--screenshot=%s" % shot, "--window-size=1280,900", "--hide-scrollbars", page.as_uri())
    assert done.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", done.stderr[-2000:]
