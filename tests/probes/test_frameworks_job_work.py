"""The doctor's Frameworks job as counted work (issue 35: `doctor --quick` beside every framework within 1.3 x the same
without them): what it imports once its head start has run beside the static torch child, which METADATA files it
parses, and which loader files it reads when there is nothing to resolve. The timings are bench/run.py's."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import cudaenv
from framework_builders import dist
from cudaenv.host import Host
from cudaenv.parse import frameworks as pf
from cudaenv.probes import extensions, libraries
from cudaenv.probes.frameworks import table_packages

# The job after its head start (probes.collect._frameworks_beside) on a site with torch's libraries and one compiled
# extension: the modules it imports then, whether pathlib is loaded, and what it found. Run with -S in a child: the
# test process has imported everything already.
JOB = """
import json, sys
from cudaenv.host import Host
from cudaenv.model.snapshot import Torch
from cudaenv.probes import collect

root, site = sys.argv[1], sys.argv[2]
torch = Torch(python="/env/bin/python", installed=True, version="2.8.0+cu128", cuda="12.8", location=site,
              site_packages=(site,))
at_wait = []

class Static:  # the static torch pass's job, answered
    def result(self):
        at_wait.append(sorted(sys.modules))
        return torch

found = collect._frameworks_beside(Host(root, env={}, system="linux"), [], Static())
print(json.dumps({"at_wait": at_wait[0], "after": sorted(sys.modules), "frameworks": [f.package for f in found[0]],
                  "extensions": [(e.package, e.checked, e.missing_count) for e in found[2]]}))
"""


SITE = "/env/lib/python3.12/site-packages"


def _site_with_an_extension(base: Path) -> Path:
    from elf_builders import build_library, exporting, needing
    from machine import make_fake_torch

    site = base / "root" / SITE.lstrip("/")
    make_fake_torch(site, "2.8.0+cu128", "12.8")
    names = ["_ZN2at6native%dop%dEv" % (len("op%d" % i), i) for i in range(40)]
    lib = site / "torch" / "lib"
    c10 = build_library(lib, "libc10.so", soname="libc10.so", code=exporting(names[:20]))
    cpu = build_library(lib, "libtorch_cpu.so", soname="libtorch_cpu.so", code=exporting(names[20:39]))
    module = build_library(base / "build", "_C.so", links=[c10, cpu], code=needing(names))  # the last one: missing
    dist(site, "flash-attn", "2.7.4", requires=["torch"], binary={"flash_attn/_C.so": module.read_bytes()})
    dist(site, "tensorflow", "2.20.0")
    return site


def test_after_its_head_start_the_job_imports_nothing(tmp_path):
    """Issue 35: the job's modules, tables and patterns are ready before it waits for the static child (its head
    start, beside the child); after that wait it imports no module at all, and never pathlib, urllib.parse or
    ipaddress (about 2.6 ms of a fresh interpreter: its ELF files are opened through probes.elf.open_file, no Path built).
    The answers are the probes' own (a fake root: its torch has no libtorch_cuda.so, so no loader file is read)."""
    _site_with_an_extension(tmp_path)
    before = subprocess.run([sys.executable, "-S", "-c", "import sys; print(' '.join(sorted(sys.modules)))"],
                            capture_output=True, text=True, cwd=str(tmp_path), timeout=60).stdout.split()
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(Path(cudaenv.__file__).resolve().parent.parent)}
    run = subprocess.run([sys.executable, "-S", "-c", JOB, str(tmp_path / "root"), SITE], capture_output=True, text=True, env=env,
                         cwd=str(tmp_path), timeout=120)  # (not the checkout: -c puts the working folder first on sys.path)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert sorted(out["frameworks"]) == ["flash-attn", "tensorflow"]
    assert out["extensions"] == [["flash-attn", 40, 1]]
    for module in ("cudaenv.probes.frameworks", "cudaenv.probes.extensions", "cudaenv.probes.elf", "cudaenv.probes.libraries",
                   "cudaenv.parse.elf_symbols", "cudaenv.parse.symbols", "cudaenv.parse.frameworks", "cudaenv.parse.ldcache",
                   "cudaenv.core.resources"):
        assert module in out["at_wait"], module
    heavy = {"pathlib", "urllib.parse", "ipaddress"} - set(before)
    assert heavy and not heavy & set(out["after"])
    assert set(out["after"]) - set(out["at_wait"]) == set()


def test_only_the_metadata_that_spells_torch_is_parsed(tmp_path, monkeypatch):
    """Counted work (issue 35): of 30 packages outside the table, the extension check parses the METADATA of the 2
    that name torch (in any case) and finds both; the 28 others are read, never parsed (was: all 30 parsed)."""
    site = tmp_path / "site-packages"
    for i in range(28):
        dist(site, "plain%02d" % i, "1.0", requires=["numpy>=1.21", "requests"])
    dist(site, "needs-torch", "0.1", requires=["torch>=2.0"])
    dist(site, "uses-it", "0.1", requires=["Torch (==2.6.0)"])
    parsed = []
    real = pf.parse_metadata

    def counting(text):
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(pf, "parse_metadata", counting)
    found = extensions._candidates(Host(env={}), [str(site)], table_packages(), [])
    assert sorted(name for name, _ in found) == ["needs-torch", "uses-it"]
    assert len(parsed) == 2 and all("orch" in text for text in parsed)


@settings(max_examples=200)
@given(st.lists(st.sampled_from([b"Name: x", b"Version: 1.0", b"Requires-Dist: torch", b"", b" ", b"\r", b"\xff\xfe",
                                 b"Summary: \xc3", b"\xa9", b"Name: y"]), max_size=10).map(b"\n".join),
       st.integers(min_value=1, max_value=200))
def test_the_metadata_header_read_says_what_the_whole_read_says(data, limit):
    """Issue 35: the header block read (bytes cut at the first blank line, then decoded) gives parse_metadata the
    answer of the whole bounded read decoded, for any bytes and any limit (a cut inside a character included)."""
    from cudaenv.probes.frameworks import read_metadata_head

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "METADATA")
        with open(path, "wb") as fh:
            fh.write(data + b"\n\nA description\nName: not-a-header\n")
        host = Host(env={})
        assert pf.parse_metadata(read_metadata_head(host, path, limit)) == pf.parse_metadata(host.read_text(path, limit=limit) or "")
        assert read_metadata_head(host, os.path.join(folder, "missing"), limit) == ""


def test_nothing_to_resolve_reads_no_loader_file(monkeypatch):
    """Counted work (issue 35): where no object can be read (torch without libtorch_cuda.so: a CPU build), the
    library resolution reads neither ld.so.cache nor the loader's configuration (was: ld.so.cache read and parsed
    whole, about 1,200 entries here, before the first object)."""
    from cudaenv.probes import ldconf

    reads = []
    monkeypatch.setattr(libraries, "probe_ld_cache", lambda host, *a: reads.append("cache"))
    monkeypatch.setattr(ldconf, "ld_conf_dirs", lambda host: reads.append("conf") or [])
    assert libraries.probe_libraries(Host(env={}), [("torch", "/nonexistent/torch/lib/libtorch_cuda.so")]) == ()
    assert reads == []
