"""The frameworks and their libraries read from real wheels installed in the test interpreter, never imported
(`nox -s wheels` installs onnxruntime-gpu, cupy-cuda12x and nvidia-cuda-runtime-cu12 with --no-deps; this machine has
no GPU): ONNX Runtime's CUDA from its build_and_package_info.py and its 280 MB CUDA provider's NEEDED entries read
in kilobytes, CuPy's major from its name and its modules' NEEDED entries, an extension's libcudart resolved into the
nvidia wheel through its RUNPATH. Skipped where the wheels are absent (the default suite), failed under the session
(CUDAENV_REAL_WHEELS=1)."""

import importlib.util
import os
import sysconfig

import pytest

from cudaenv.host import Host
from cudaenv.parse.elf import Budget, parse_elf_dynamic
from cudaenv.probes.elf import probe_needed
from cudaenv.probes.frameworks import probe_frameworks
from cudaenv.probes.libraries import probe_libraries

SITE = sysconfig.get_paths()["purelib"]


def _need(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]  # found, not imported
    if missing and os.environ.get("CUDAENV_REAL_WHEELS") == "1":
        pytest.fail("nox -s wheels did not install %s" % ", ".join(missing))
    if missing:
        pytest.skip("the real wheels are not installed here (nox -s wheels)")


def test_onnxruntime_gpu_and_cupy_read_from_their_files():
    _need("onnxruntime", "cupy")
    host = Host(env={})
    found = {f.package: f for f in probe_frameworks(host, [SITE], [], None, lambda p: probe_needed(host, p))}
    ort, cupy = found["onnxruntime-gpu"], found["cupy-cuda12x"]
    assert ort.cuda_from == "build-info" and ort.gpu_build and int(ort.cuda.split(".")[0]) >= 11
    assert "onnxruntime/capi/libonnxruntime_providers_cuda.so" in ort.libraries
    assert any(n.startswith("libcudart.so.%s" % ort.cuda.split(".")[0]) for n in ort.needed)
    assert (cupy.cuda, cupy.cuda_from, cupy.gpu_build) == ("12", "name", True)
    assert any(n.startswith("libcublas.so.12") for n in cupy.needed)
    provider = os.path.join(SITE, "onnxruntime", "capi", "libonnxruntime_providers_cuda.so")
    with open(provider, "rb") as f:
        guarded = Budget(f, 1 << 30)
        dyn = parse_elf_dynamic(guarded)
    assert dyn.needed and guarded.read_bytes < 256 * 1024 < os.path.getsize(provider), guarded.read_bytes


def test_a_library_resolved_into_the_nvidia_runtime_wheel(tmp_path):
    """A module beside site-packages' nvidia/ with torch's RUNPATH layout finds the wheel's real libcudart.so.12."""
    _need("nvidia")
    from elf_builders import build_library

    wheel = os.path.join(SITE, "nvidia", "cuda_runtime", "lib")
    assert os.path.isfile(os.path.join(wheel, "libcudart.so.12"))
    stand_in = build_library(tmp_path / "build", "libcudart.so.12", soname="libcudart.so.12")  # linked against, not installed
    module = build_library(tmp_path / "ext", "ext.so", links=[stand_in], runpath=wheel)
    found = {x.needed: x for x in probe_libraries(Host(env={}), [("ext", str(module))], conf_dirs=[], ld_cache=None)}
    cudart = found["libcudart.so.12"]
    assert (cudart.path, cudart.via, cudart.from_wheel) == (os.path.join(wheel, "libcudart.so.12"), "runpath", True)
    driver = found["libcuda.so.1"]  # the real libcudart has no NEEDED libcuda: it loads it itself, from its own search
    assert (driver.loaded_by, driver.object) == ("dlopen", os.path.join(wheel, "libcudart.so.12"))
    real = parse_elf_dynamic(open(os.path.join(wheel, "libcudart.so.12"), "rb").read())
    assert real.soname == "libcudart.so.12" and real.runpath == () and not any(n.startswith("libcuda.") for n in real.needed)
