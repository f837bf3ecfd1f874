"""`doctor --import` (probes/framework_import.py, the child cudaenv/_child/framework_probe.py, diagnose/
framework_imports.py): each framework imported in its own child of the probed Python (the test's interpreter) with a
timeout. The frameworks are the test's own stand-in modules on PYTHONPATH beside their dist-info (constructed, in
the shape of each framework's API the child calls): a TensorFlow that lists no GPU, an ONNX Runtime whose session
falls back to the CPU provider, a flash-attn whose import raises the undefined-symbol error, a JAX that hangs."""

from framework_builders import dist

TF = "class config:\n    @staticmethod\n    def list_physical_devices(kind):\n        return []\n__version__ = '2.20.0'\n"
ORT = ("__version__ = '1.23.2'\nSEEN = []\nclass InferenceSession:\n    def __init__(self, model, providers=None):\n"
       "        assert isinstance(model, bytes) and b'Identity' in model\n        SEEN.append(list(providers))\n"
       "    def get_providers(self):\n        return ['CPUExecutionProvider']\n")
FLASH = "raise ImportError('/env/flash_attn_2_cuda.so: undefined symbol: _ZN3c106detail14torchCheckFailEPKcS2_jRKSs')\n"
JAX = "import time\ntime.sleep(600)\n"


def _site(machine):
    from machine import make_fake_torch

    site = machine.root.dir("env/lib/python3.12/site-packages")  # inside the fake root the doctor reads
    make_fake_torch(site, "2.8.0+cu128", "12.8")
    machine.env["PYTHONPATH"] = str(site)
    dist(site, "tensorflow", "2.20.0", files={"tensorflow/__init__.py": TF})
    dist(site, "onnxruntime-gpu", "1.23.2", files={"onnxruntime/__init__.py": ORT})
    dist(site, "flash-attn", "2.7.4", requires=["torch"], files={"flash_attn/__init__.py": FLASH})
    dist(site, "jax", "0.7.0", files={"jax/__init__.py": JAX})
    dist(site, "jax-cuda12-plugin", "0.7.0")
    return site


def test_each_framework_imported_in_its_own_child(machine):
    from machine import a10g_535

    _site(machine)
    a10g_535(machine)
    machine.env["CUDAENV_IMPORT_TIMEOUT"] = "3"
    code, found, data = machine.findings("--quick", "--import")
    by = {i["module"]: i for i in data["framework_imports"]}
    assert list(by) == ["tensorflow", "jax", "onnxruntime", "flash_attn"]  # the table's order; plugins not imported
    assert by["tensorflow"]["imported"] and by["tensorflow"]["gpu_count"] == 0 and by["tensorflow"]["version"] == "2.20.0"
    assert by["onnxruntime"]["gpu_count"] == 0 and by["onnxruntime"]["detail"] == "session providers: CPUExecutionProvider"
    assert by["flash_attn"]["imported"] is False and "undefined symbol: _ZN3c10" in by["flash_attn"]["error"]
    assert by["jax"]["imported"] is None and by["jax"]["timed_out"] and "timed out after 3 s" in by["jax"]["error"]
    failed = found["framework-import-failed"]
    assert failed["title"] == "import fails: jax (jax), flash_attn (flash-attn)"
    assert "-c 'import flash_attn'    # the whole traceback" in failed["fix"][1]
    dark = found["framework-no-gpu-seen"]
    assert dark["title"] == "imported but sees no GPU: tensorflow, onnxruntime-gpu"
    assert "onnxruntime's own check (onnxruntime) found none (session providers: CPUExecutionProvider)" in dark["detail"]
    text = " ".join(machine.doctor("--quick", "--import", fmt=None).out.split())
    assert "import flash_attn fails: ImportError: /env/flash_attn_2_cuda.so: undefined symbol" in text


def test_frameworks_import_shows_that_section_alone(machine):
    """`doctor --frameworks --import` (the issue's spelling): the imports run, the text holds the Frameworks section
    and no other, every format carries only its findings, and the exit code comes from them alone (a machine whose
    other problem, CUDA_VISIBLE_DEVICES=-1, is an error, exits 0 here: the frameworks' findings are warnings)."""
    from machine import a10g_535

    _site(machine)
    a10g_535(machine)
    machine.env["CUDAENV_IMPORT_TIMEOUT"] = "3"
    machine.env["CUDA_VISIBLE_DEVICES"] = "-1"  # an error of the Visibility section
    whole, found_all, _ = machine.findings("--quick")
    assert whole == 1 and any(f["section"] != "frameworks" and f["severity"] == "error" for f in found_all.values())
    code, found, data = machine.findings("--quick", "--frameworks", "--import")
    assert {f["section"] for f in found.values()} == {"frameworks"} and "framework-import-failed" in found
    assert code == 0 and [i["module"] for i in data["framework_imports"]][:1] == ["tensorflow"]
    text = machine.doctor("--quick", "--frameworks", "--import", fmt=None).out
    assert "Frameworks (other CUDA consumers)" in text and "import flash_attn" in " ".join(text.split())
    assert not any(title in text for title in ("Environment\n", "Driver\n", "Toolkits\n", "Versions (torch)"))
    alone = machine.findings("--quick", "--frameworks")[2]
    assert alone["framework_imports"] == []  # --frameworks reads; only --import imports


def test_without_import_nothing_is_imported(machine):
    from machine import a10g_535

    _site(machine)
    a10g_535(machine)
    code, found, data = machine.findings("--quick")
    assert data["framework_imports"] == [] and "framework-import-failed" not in found


def test_the_childs_model_is_an_onnx_identity_graph():
    """The bytes the child hands ONNX Runtime: a ModelProto (ir_version 7, opset 13) whose graph is y = Identity(x),
    read back field by field with a small protobuf reader."""
    import runpy

    from cudaenv import _child

    ns = runpy.run_path(_child.__path__[0] + "/framework_probe.py", run_name="not_main")
    model = ns["identity_model"]()

    def fields(data):
        out, at = [], 0
        while at < len(data):
            key, at = _varint(data, at)
            if key & 7 == 0:
                value, at = _varint(data, at)
            else:
                size, at = _varint(data, at)
                value, at = data[at:at + size], at + size
            out.append((key >> 3, value))
        return out

    def _varint(data, at):
        shift = value = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value, at

    top = dict(fields(model))
    assert top[1] == 7 and dict(fields(top[8])) == {1: b"", 2: 13}
    graph = fields(top[7])
    node = dict(fields(dict(graph)[1]))
    assert node == {1: b"x", 2: b"y", 4: b"Identity"}
    assert [k for k, _ in graph] == [1, 2, 11, 12]


def _fake_python(tmp_path, text, code=0):
    """A fake interpreter: a script that ignores its arguments and prints ``text`` (a recorded child output)."""
    out = tmp_path / "out.txt"
    out.write_text(text)
    script = tmp_path / "python3"
    script.write_text("#!/bin/sh\ncat %s\nexit %d\n" % (out, code))
    script.chmod(0o755)
    return str(script)


def test_a_real_onnxruntime_answer_read_through_a_fake_interpreter(tmp_path):
    """The child's real output under the CPU onnxruntime 1.32.0 (recorded on this machine): imported, and the session
    asked for the CUDA provider got the CPU one."""
    from builders import recorded
    from cudaenv.host import Host
    from cudaenv.model.snapshot import Framework
    from cudaenv.probes.framework_import import probe_framework_imports

    python = _fake_python(tmp_path, recorded("framework-probe-onnxruntime-cpu.txt"))
    notes = []
    got = probe_framework_imports(Host(env={"PATH": "/usr/bin:/bin"}), python, [Framework(package="onnxruntime-gpu")], notes, 10)
    assert len(got) == 1 and notes == []
    ort = got[0]
    assert (ort.module, ort.check, ort.imported, ort.version, ort.gpu_count) == ("onnxruntime", "onnxruntime", True, "1.32.0", 0)
    assert ort.detail == "session providers: CPUExecutionProvider" and ort.error is None
    silent = probe_framework_imports(Host(env={"PATH": "/usr/bin:/bin"}), _fake_python(tmp_path, "garbage\n", 139),
                                     [Framework(package="cupy-cuda12x")], notes, 10)
    assert silent[0].imported is None and silent[0].error == "no answer (SIGSEGV)"  # a crash in the import (exit 139)


def test_the_child_under_a_real_onnxruntime(tmp_path):
    """Where onnxruntime is importable in the test interpreter: the hand-built model makes a real session."""
    import importlib.util
    import sys

    import pytest

    if importlib.util.find_spec("onnxruntime") is None:
        pytest.skip("onnxruntime is not installed in the test interpreter")
    from cudaenv.host import Host
    from cudaenv.model.snapshot import Framework
    from cudaenv.probes.framework_import import probe_framework_imports

    got = probe_framework_imports(Host(env={}), sys.executable, [Framework(package="onnxruntime")], [], 120)[0]
    assert got.imported and got.error is None and got.gpu_count in (0, 1) and got.detail.startswith("session providers: ")
