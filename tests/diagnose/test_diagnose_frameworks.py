"""The Frameworks section's findings on hand-built snapshots (diagnose/frameworks.py): a CPU build on a GPU machine,
a CUDA the driver is too old for, conflicting packages, TensorFlow >= 2.11 on native Windows; each with its fix,
and a healthy machine with frameworks that fit stays clean."""

from cudaenv.diagnose import diagnose, exit_code
from cudaenv.diagnose.frameworks import verdicts
from cudaenv.diagnose.view import build_view
from cudaenv.model.reports import DoctorReport
from cudaenv.model.record import replace
from cudaenv.model.snapshot import Driver, Framework
from cudaenv.render.markdown import render_markdown
from cudaenv.render.report import render_report

from machine import PY, healthy


def fw(package, version, cuda=None, gpu=None, cuda_from=None, **kw):
    if cuda and gpu is None:
        gpu = True
    return Framework(package=package, version=version, cuda=cuda, gpu_build=gpu, cuda_from=cuda_from or ("name" if cuda else None),
                     location="/env/lib/python3.12/site-packages", **kw)


def found(s):
    return {f.id: f for f in diagnose(s) if f.section == "frameworks"}


def test_frameworks_that_fit_give_no_finding_and_show_in_every_format():
    s = healthy(frameworks=(fw("tensorflow", "2.20.0", "12.5.1", cudnn="9", cuda_from="build-info"),
                            fw("cupy-cuda13x", "14.0.0", "13"), fw("jaxlib", "0.8.1")))
    assert found(s) == {}
    assert dict(verdicts(s)) == {"tensorflow": "gpu", "cupy-cuda13x": "gpu", "jaxlib": "plugin"}
    text = render_report(s, diagnose(s), build_view(s))
    assert "Frameworks (other CUDA consumers)" in text
    assert "2.20.0, CUDA 12.5.1, cuDNN 9 (from its build-info file), needs driver >= 525.60.13" in text.replace("\n" + " " * 31, " ")
    md = render_markdown(s, diagnose(s), build_view(s))
    assert "`cupy-cuda13x`: 14.0.0, CUDA 13 (from its package name)" in md
    data = DoctorReport(s, findings=diagnose(s)).to_dict()
    assert data["frameworks"][0]["package"] == "tensorflow" and data["frameworks"][0]["cuda"] == "12.5.1"
    assert DoctorReport.from_dict(data).snapshot.frameworks == s.frameworks  # the codec reads it back


def test_a_cpu_build_on_a_gpu_machine_says_the_pip_line():
    s = healthy(frameworks=(fw("jax", "0.8.1", gpu=False), fw("onnxruntime", "1.23.2", gpu=False)))
    f = found(s)["framework-cpu-build"]
    assert f.severity == "warning" and "jax 0.8.1" in f.title and "onnxruntime 1.23.2" in f.title
    assert "none of jax-cuda12-plugin, jax-cuda13-plugin is installed" in f.detail
    # driver 580 runs CUDA 13.0: jax[cuda13]; the ONNX Runtime CPU package is swapped for the GPU one
    assert list(f.fix) == ["%s -m pip install -U \"jax[cuda13]\"" % PY, "%s -m pip uninstall -y onnxruntime" % PY,
                           "%s -m pip install -U onnxruntime-gpu" % PY]
    old = replace(s, driver=Driver(version="535.104.05", cuda_version="12.2", source="nvml"))
    assert found(old)["framework-cpu-build"].fix[0].endswith("\"jax[cuda12]\"")
    # no GPU and no driver: a CPU build is what the machine can run
    assert found(replace(s, gpus=(), driver=None)) == {}


def test_a_jaxlib_cuda_wheel_without_a_plugin_is_not_called_a_cpu_build():
    """jax 0.4.25 with jaxlib 0.4.25+cuda12.cudnn89 (the probe: tests/probes/test_probe_frameworks.py): jaxlib's tag is
    the CUDA build, shown with its cuDNN; no framework-cpu-build for jax."""
    s = healthy(frameworks=(fw("jax", "0.4.25"), fw("jaxlib", "0.4.25+cuda12.cudnn89", "12", cudnn="8.9", cuda_from="local-tag")))
    assert "framework-cpu-build" not in found(s)
    assert dict(verdicts(s))["jaxlib"] == "gpu"
    text = render_report(s, diagnose(s), build_view(s)).replace("\n" + " " * 31, " ")
    assert "0.4.25+cuda12.cudnn89, CUDA 12, cuDNN 8.9 (from its version tag)" in text, text


def test_a_cuda_13_build_on_a_535_driver():
    s = healthy(driver=Driver(version="535.104.05", cuda_version="12.2", source="nvml"),
                frameworks=(fw("cupy-cuda13x", "14.0.0", "13"), fw("vllm", "0.11.0+cu130", "13.0", cuda_from="local-tag"),
                            fw("cupy-cuda12x", "13.6.0", "12")))
    f = found(s)["framework-driver-too-old"]
    assert "cupy-cuda13x 14.0.0 (CUDA 13)" in f.title and "vllm" in f.title and "cupy-cuda12x" not in f.title
    assert "needs driver 580 or newer" in f.detail and "13.0 (from its version tag)" in f.detail
    assert any("580" in line for line in f.fix)
    # or keep the 535 driver (CUDA 12.2): CuPy's CUDA 12 wheel instead; vLLM's table row has no such line
    assert list(f.fix[-3:]) == ["# or keep this driver: cupy-cuda13x's build for CUDA 12", "%s -m pip uninstall -y cupy-cuda13x" % PY,
                                "%s -m pip install cupy-cuda12x" % PY]
    assert dict(verdicts(s))["cupy-cuda12x"] == "conflict"  # two CuPy packages: the conflict is said first
    assert "framework-conflict" in found(s)


def test_conflicting_packages_and_the_one_to_keep():
    s = healthy(frameworks=(fw("onnxruntime-gpu", "1.23.2", "12.2", cuda_from="build-info"), fw("onnxruntime", "1.23.2", gpu=False),
                            fw("cupy-cuda11x", "13.6.0", "11"), fw("cupy-cuda13x", "14.0.0", "13")))
    f = found(s)["framework-conflict"]
    assert "onnxruntime + onnxruntime-gpu" in f.title and "cupy-cuda11x + cupy-cuda13x" in f.title
    assert list(f.fix) == ["%s -m pip uninstall -y onnxruntime onnxruntime-gpu" % PY, "%s -m pip install onnxruntime-gpu" % PY,
                           "%s -m pip uninstall -y cupy-cuda11x cupy-cuda13x" % PY, "%s -m pip install cupy-cuda13x" % PY]
    assert "framework-cpu-build" not in found(s)  # onnxruntime's CPU build is the conflict's to fix
    assert exit_code(diagnose(s)) == 0  # warnings: the doctor's exit code stays 0 without --strict


def test_tensorflow_from_2_11_on_native_windows():
    win = healthy(platform=replace(healthy().platform, system="windows"))
    s = replace(win, frameworks=(fw("tensorflow", "2.15.1", gpu=False),))
    f = found(s)["framework-no-gpu-on-platform"]
    assert "tensorflow 2.15.1 has no GPU support on native windows" == f.title and "WSL2" in f.fix[0]
    assert "framework-cpu-build" not in found(s)
    assert found(replace(win, frameworks=(fw("tensorflow", "2.10.1", "11.2"),))) == {}
    assert found(replace(healthy(), frameworks=(fw("tensorflow", "2.15.1", "12.2"),))) == {}


def test_the_view_carries_each_verdict_and_minimum():
    s = healthy(frameworks=(fw("cupy-cuda12x", "13.6.0", "12"), fw("flash-attn", "2.8.3")))
    view = build_view(s)
    assert view.framework_verdicts == (("cupy-cuda12x", "gpu"), ("flash-attn", "unknown"))
    assert view.framework_min_drivers == (("cupy-cuda12x", "525.60.13"),)
    assert "its files do not say which CUDA" in render_report(s, diagnose(s), view)


def test_doctor_end_to_end_reads_the_interpreters_site_packages(machine):
    """The real interpreter reports a site-packages folder (on PYTHONPATH, inside the fake root) holding a CuPy for
    CUDA 13 and the two ONNX Runtime packages; the 535 driver's doctor says both problems in text and JSON."""
    from framework_builders import ORT_BUILD_INFO, dist

    from machine import a10g_535

    site = machine.root.dir("env/lib/python3.12/site-packages")
    dist(site, "cupy-cuda13x", "14.0.0")
    dist(site, "onnxruntime-gpu", "1.23.2", files={"onnxruntime/capi/build_and_package_info.py": ORT_BUILD_INFO % ("1.23.2", "12.2")})
    dist(site, "onnxruntime", "1.23.2")
    machine.env["PYTHONPATH"] = str(site)
    a10g_535(machine)
    code, found, data = machine.findings("--quick")
    assert [f["package"] for f in data["frameworks"]] == ["onnxruntime-gpu", "onnxruntime", "cupy-cuda13x"]
    assert "cupy-cuda13x 14.0.0 (CUDA 13)" in found["framework-driver-too-old"]["title"]
    assert "onnxruntime + onnxruntime-gpu" in found["framework-conflict"]["title"]
    text = machine.doctor("--quick", fmt=None).out
    assert "Frameworks (other CUDA consumers)" in text and "cupy-cuda13x" in text
