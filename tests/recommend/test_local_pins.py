"""Issue 13: every install from a variant index pins the local tag, so no second index can win.

Two real PEP 503 indexes on 127.0.0.1: A is the variant index (torch 2.14.1+cpu), B stands in for PyPI or a
company mirror in the user's pip configuration (torch 2.14.1 and 2.14.1+cu130). The real pip chooses.
"""

import base64
import functools
import hashlib
import os
import subprocess
import sys
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cudaenv.recommend import recommend
from cudaenv.render.recommend import render_requirements
from cudaenv.model.snapshot import Driver, Gpu, Platform, Snapshot, Torch


def _wheel(folder: Path, name: str, version: str) -> Path:
    dist = "%s-%s.dist-info" % (name, version)
    files = {name + "/__init__.py": "__version__ = %r\n" % version,
             dist + "/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version),
             dist + "/WHEEL": "Wheel-Version: 1.0\nGenerator: cudaenv-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = ["%s,sha256=%s,%d" % (p, base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b"=").decode(), len(t))
              for p, t in files.items()] + [dist + "/RECORD,,"]
    files[dist + "/RECORD"] = "\n".join(record) + "\n"
    path = folder / ("%s-%s-py3-none-any.whl" % (name, version))
    with zipfile.ZipFile(path, "w") as zf:
        for p, t in files.items():
            zf.writestr(p, t)
    return path


def _serve(www: Path):
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *a: None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, "http://127.0.0.1:%d" % httpd.server_address[1]


def _index(root: Path, versions):
    project = root / "torch"
    project.mkdir(parents=True)
    links = "".join('<a href="%s">%s</a>\n' % (w.name.replace("+", "%2B"), w.name) for w in (_wheel(project, "torch", v) for v in versions))
    (project / "index.html").write_text("<html><body>%s</body></html>" % links)


@pytest.fixture
def two_indexes(tmp_path):
    _index(tmp_path / "a", ["2.14.1+cpu"])
    _index(tmp_path / "b", ["2.14.1", "2.14.1+cu130"])
    servers = [_serve(tmp_path / "a"), _serve(tmp_path / "b")]
    yield servers[0][1], servers[1][1]
    for httpd, _ in servers:
        httpd.shutdown()
        httpd.server_close()


def _pip_download(requirement, a, b, dest):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "-d", str(dest),
                           "--index-url", a + "/", "--extra-index-url", b + "/", requirement],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return sorted(p.name for p in dest.iterdir())


def _cpu_machine():
    return Snapshot(platform=Platform(system="linux", machine="x86_64"),
                    torch=Torch(python="/venv/bin/python", installed=False, python_version="3.12.3"))


def test_the_cpu_plan_pins_the_local_tag_and_pip_takes_it_from_the_variant_index(two_indexes, tmp_path):
    a, b = two_indexes
    rec = recommend(_cpu_machine(), torch_version="2.14.1")
    assert rec.variant == "cpu" and rec.packages == ("torch==2.14.1+cpu",)
    assert rec.commands == ("/venv/bin/python -m pip install torch==2.14.1+cpu --index-url https://download.pytorch.org/whl/cpu",)
    # what the pin prevents: unpinned, the second index's +cu130 build wins
    assert _pip_download("torch==2.14.1", a, b, tmp_path / "plain") == ["torch-2.14.1+cu130-py3-none-any.whl"]
    assert _pip_download(rec.packages[0], a, b, tmp_path / "pinned") == ["torch-2.14.1+cpu-py3-none-any.whl"]


def test_cuda_plans_pin_torch_and_its_companions():
    snap = Snapshot(platform=Platform(system="linux", machine="x86_64"), driver=Driver(version="560.35.03"),
                    gpus=(Gpu(0, name="NVIDIA GeForce RTX 3090", compute_capability="8.6"),),
                    torch=Torch(python="/v/bin/python", installed=True, version="2.13.0+cu126", python_version="3.12.3",
                                companions=("torchvision==0.28.0+cu126", "torchaudio==2.11.0+cu126")))
    rec = recommend(snap, torch_version="2.14.1")
    assert rec.variant == "cu126"
    assert rec.packages[:2] == ("torch==2.14.1+cu126", "torchvision==0.29.1+cu126")
    assert rec.packages[2] == "torchaudio==2.11.0"  # not rebuilt for 2.14: no +cu126 build of it exists for 2.14
    assert "torch==2.14.1+cu126 torchvision==0.29.1+cu126" in rec.commands[0]
    assert "torch==2.14.1+cu126" in render_requirements(rec)


def test_torch_recommend_and_doctor_print_the_pinned_form(cli, fake_root, tmp_path):
    from builders import TOOLS

    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "c")}
    js = cli("torch", "recommend", "--root", str(fake_root.path), "--torch", "2.11.0", "--driver", "570.86.15",
             "--compute-capability", "8.6", "--json", env=env).json()
    assert js["packages"] == ["torch==2.11.0+%s" % js["variant"]], js
    assert "torch==2.11.0+%s " % js["variant"] in js["commands"][0]
