"""The cuDNN XLA opens itself (issue 29): JAX's CUDA plugin links no CUDA library; its xla_cuda_plugin.so opens
libcudnn.so.N (N the cuDNN major it was built for) with dlopen at run time, after the plugin's Python code has
loaded the nvidia-cudnn wheel's file by path where it is installed (data/loader_search.json's ``runtime`` rows).

Each scenario is the doctor on a model machine (tests/machine.py) whose site-packages holds jax, jaxlib, the real
jax-cuda12-plugin METADATA and a jax-cuda12-pjrt whose xla_cuda_plugin.so is an ELF file built here with the real
wheel's RPATH (tests/framework_builders.py's jax_cuda): the cuDNN of the right major from the wheel (nothing to say),
of another major only, none, a system one on LD_LIBRARY_PATH, a CPU-only jaxlib, and a jaxlib of the time before the
plugins, tagged +cuda12.cudnn89, beside the cuDNN 9 wheel (jax-ml/jax#18027)."""

import os

from builders import calls_to
from framework_builders import dist, jax_cuda
from machine import a10g_535

FID = "framework-cudnn-not-found"
TOO_OLD = "framework-cudnn-too-old"
PLUGIN = "jax_plugins/xla_cuda12/xla_cuda_plugin.so"


def _jax(m, *wheels):
    a10g_535(m).packages(*wheels)
    jax_cuda(m.package_site, m.tmp / "build")
    return str(m.package_site)  # the site folder as the interpreter reports it (its PYTHONPATH entry)


def _fw(data, package):
    return next(f for f in data["frameworks"] if f["package"] == package)


def test_the_wheels_cudnn_of_the_right_major_is_found(machine):
    site = _jax(machine, "nvidia-cudnn-cu12==9.10.2.21")
    _, found, data = machine.findings()
    assert not {FID, TOO_OLD, "library-not-found"} & set(found), found.keys()
    pjrt = _fw(data, "jax-cuda12-pjrt")
    assert pjrt["cudnn_soname"] == "libcudnn.so.9" and pjrt["cudnn"] == "9.8"  # the plugin's floor: nvidia-cudnn-cu12>=9.8
    assert (pjrt["cudnn_path"], pjrt["cudnn_via"], pjrt["cudnn_version"]) == (
        site + "/nvidia/cudnn/lib/libcudnn.so.9", "preload", "9.10.2.21")
    assert pjrt["cudnn_wheels"] == ["nvidia-cudnn-cu12==9.10.2.21"]
    opened = {x["needed"]: x for x in data["libraries"] if x["consumer"] == "jax-cuda12-pjrt"}
    assert opened["libcudnn.so.9"]["loaded_by"] == "dlopen" and opened["libcudnn.so.9"]["object"] == site + "/" + PLUGIN
    assert {"libcublas.so.12", "libcusolver.so.11", "libnccl.so.2"} <= set(opened)  # the others XLA opens, resolved too


def test_the_right_major_through_the_plugins_rpath_without_the_preload(machine):
    """The plugin's RPATH names site-packages/nvidia/cudnn/lib too: a folder the wheel's layout has, found by the
    loader's search from the plugin even when the preload would not apply (the file put there by hand)."""
    site = _jax(machine)
    lib = machine.package_site / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcudnn.so.9").write_text("")
    _, found, data = machine.findings()
    assert FID not in found
    assert _fw(data, "jax-cuda12-pjrt")["cudnn_path"] == site + "/nvidia/cudnn/lib/libcudnn.so.9"


def test_only_another_major_is_installed(machine):
    site = _jax(machine, "nvidia-cudnn-cu12==8.9.7.29")
    _, found, data = machine.findings()
    f = found[FID]
    assert f["severity"] == "warning" and "libcudnn.so.9" in f["title"] and "jax-cuda12-pjrt" in f["title"]
    assert "nvidia-cudnn-cu12==8.9.7.29" in f["detail"] and "libcudnn.so.8" in f["detail"], f["detail"]
    assert f["fix"][0].endswith('-m pip install "nvidia-cudnn-cu12>=9.8,<10"'), f["fix"]
    pjrt = _fw(data, "jax-cuda12-pjrt")
    assert pjrt["cudnn_path"] is None and pjrt["cudnn_other"] == [site + "/nvidia/cudnn/lib/libcudnn.so.8"]
    lost = next(x for x in data["libraries"] if x["needed"] == "libcudnn.so.9")
    assert lost["path"] is None and "library-not-found" not in found, found["library-not-found"]  # said once, by the cuDNN finding
    text = machine.doctor(fmt=None).out
    assert "libcudnn.so.9: found nowhere" in text and FID in text


def test_no_cudnn_at_all(machine):
    _jax(machine)
    _, found, data = machine.findings()
    assert "No other cuDNN is installed." in found[FID]["detail"]
    assert _fw(data, "jax-cuda12-pjrt")["cudnn_wheels"] == []
    markdown = machine.doctor("--format", "markdown", fmt=None).out
    assert "opens libcudnn.so.9: found nowhere" in markdown


def _system_cudnn(m, version):
    """A system cuDNN (a tarball's lib folder: libcudnn.so.9 -> libcudnn.so.VERSION) on LD_LIBRARY_PATH, no wheel."""
    _jax(m)
    folder = m.root.dir("opt/cudnn/lib")
    (folder / ("libcudnn.so." + version)).write_text("")
    os.symlink("libcudnn.so." + version, folder / "libcudnn.so.9")
    m.env["LD_LIBRARY_PATH"] = "/opt/cudnn/lib"


def test_a_system_cudnn_of_the_right_major_on_ld_library_path(machine):
    _system_cudnn(machine, "9.10.1")
    _, found, data = machine.findings()
    assert FID not in found and TOO_OLD not in found, found.keys()
    pjrt = _fw(data, "jax-cuda12-pjrt")
    assert (pjrt["cudnn_path"], pjrt["cudnn_via"], pjrt["cudnn_version"]) == ("/opt/cudnn/lib/libcudnn.so.9", "LD_LIBRARY_PATH", "9.10.1")


def test_a_system_cudnn_of_the_right_major_but_an_older_minor(machine):
    """cuDNN 9.1 where the plugin was built for 9.8: JAX's start-up check stops ("Outdated cuDNN installation found");
    the fix's wheel is then taken first, by the plugin's preload."""
    _system_cudnn(machine, "9.1.0")
    _, found, data = machine.findings()
    f = found[TOO_OLD]
    assert FID not in found and "cuDNN 9.8 or newer and gets 9.1.0" in f["title"], f["title"]
    assert "LD_LIBRARY_PATH" in f["detail"] and f["fix"][0].endswith('"nvidia-cudnn-cu12>=9.8,<10"'), f
    machine.apply_fix(f["fix"][0])
    _, found, data = machine.findings()
    assert TOO_OLD not in found and _fw(data, "jax-cuda12-pjrt")["cudnn_via"] == "preload"


def test_an_older_torchs_cudnn_pin_is_older_than_jax_needs(machine):
    """torch 2.5's pin nvidia-cudnn-cu12==9.1.0.70 in the same environment as jax[cuda12] (whose plugin wants >=9.8):
    pip keeps one cuDNN wheel, the older one here."""
    _jax(machine, "nvidia-cudnn-cu12==9.1.0.70")
    _, found, data = machine.findings()
    assert "9.1.0.70" in found[TOO_OLD]["title"] and FID not in found
    assert "the nvidia-cudnn wheel its Python code loads first" in found[TOO_OLD]["detail"]


def test_a_cpu_only_jaxlib_opens_no_cudnn(machine):
    a10g_535(machine).packages("jax==0.10.2", "jaxlib==0.10.2")
    _, found, data = machine.findings()
    assert FID not in found and "framework-cpu-build" in found
    assert all(f["cudnn_soname"] is None for f in data["frameworks"])
    assert not [x for x in data["libraries"] if x["needed"].startswith("libcudnn")]


def test_a_jaxlib_built_for_cudnn_8_9_beside_the_cudnn_9_wheel(machine):
    """jaxlib 0.4.25+cuda12.cudnn89 (the CUDA jaxlib before the plugin packages) with the nvidia-cudnn-cu12 9 wheel:
    its XLA opens libcudnn.so.8, which nothing provides (jax-ml/jax#18027)."""
    from elf_builders import build_library

    a10g_535(machine).packages("jax==0.4.25", "nvidia-cudnn-cu12==9.10.2.21")
    so = build_library(machine.tmp / "build", "xla_extension.so", runpath="$ORIGIN/../nvidia/cudnn/lib", old_dtags=True)
    dist(machine.package_site, "jaxlib", "0.4.25+cuda12.cudnn89", binary={"jaxlib/xla_extension.so": so.read_bytes()})
    _, found, data = machine.findings()
    f = found[FID]
    assert "libcudnn.so.8" in f["title"] and "jaxlib 0.4.25+cuda12.cudnn89" in f["title"], f["title"]
    assert "its version tag" in f["detail"] and "nvidia-cudnn-cu12==9.10.2.21" in f["detail"]
    assert f["fix"][0].endswith('"nvidia-cudnn-cu12>=8.9,<9"'), f["fix"]
    assert f["fix"][1].startswith("# or move to the current build") and f["fix"][1].endswith("install -U 'jax[cuda12]'"), f["fix"]
    assert "framework-cpu-build" not in found


def test_the_plugins_preload_of_the_wheel_comes_before_ld_library_path(machine):
    """The plugin's Python code loads the wheel's libcudnn.so.9 by path before XLA's dlopen by name, so a system
    cuDNN 9 on LD_LIBRARY_PATH is not the one used (and is kept as the file passed over)."""
    site = _jax(machine, "nvidia-cudnn-cu12==9.10.2.21")
    folder = machine.root.dir("opt/cudnn-9.1/lib")
    (folder / "libcudnn.so.9").write_text("")
    machine.env["LD_LIBRARY_PATH"] = "/opt/cudnn-9.1/lib"
    _, found, data = machine.findings()
    assert FID not in found
    pjrt = _fw(data, "jax-cuda12-pjrt")
    assert (pjrt["cudnn_path"], pjrt["cudnn_via"]) == (site + "/nvidia/cudnn/lib/libcudnn.so.9", "preload")
    lib = next(x for x in data["libraries"] if x["needed"] == "libcudnn.so.9")
    assert "/opt/cudnn-9.1/lib/libcudnn.so.9" in lib["others"], lib


def test_the_plugins_other_libraries_missing_are_brought_by_jax_cuda(machine):
    """Without the plugin's with-cuda extra, XLA's dlopen of cuBLAS, cuFFT, cuSOLVER ... finds nothing: library-not-found
    names them, and its fix is JAX's own install line (a reinstall of the pjrt package would bring none of them)."""
    a10g_535(machine).packages("nvidia-cudnn-cu12==9.10.2.21")
    jax_cuda(machine.package_site, machine.tmp / "build", wheels=False)
    _, found, _ = machine.findings()
    f = found["library-not-found"]
    assert "libcublas.so.12 (jax-cuda12-pjrt)" in f["title"] and "libcudnn" not in f["title"] and FID not in found
    assert f["fix"][0].endswith('-m pip install -U "jax[cuda12]"'), f["fix"]


def test_the_cuda13_plugin_wants_the_cu13_cudnn_wheel(machine):
    """jax[cuda13] without its cuDNN wheel (the real jax-cuda13-plugin METADATA: nvidia-cudnn-cu13>=9.12.0.46; the real
    RPATH of nvidia/cu13/lib): the finding asks for the cu13 wheel; installed, the plugin's preload finds it."""
    from framework_builders import jax_cuda

    a10g_535(machine).packages()
    jax_cuda(machine.package_site, machine.tmp / "build", major=13)
    _, found, data = machine.findings()
    assert "library-not-found" not in found, found.get("library-not-found")  # cuBLAS 13 ... from nvidia/cu13/lib
    assert found[FID]["fix"] == [found[FID]["fix"][0].split(" -m pip ")[0] + ' -m pip install "nvidia-cudnn-cu13>=9.12.0.46,<10"']
    machine.packages("nvidia-cudnn-cu13==9.13.0.50")
    _, found, data = machine.findings()
    assert FID not in found
    pjrt = _fw(data, "jax-cuda13-pjrt")
    assert (pjrt["cudnn_via"], pjrt["cudnn_version"], pjrt["cudnn"]) == ("preload", "9.13.0.50", "9.12.0.46")


def test_the_runtime_rows_names_and_cudnn_major_pure():
    """data/loader_search.json's runtime rows: the cuDNN of the build comes from the first cudnn_from record that says
    (the plugin's floor), else the row's default major; a jaxlib without a CUDA tag opens nothing known."""
    from cudaenv.model.snapshot import Framework
    from cudaenv.probes.libraries import runtime_cudnn, runtime_names, runtime_rows

    rows = {r["consumer"]: r for r in runtime_rows()}
    pjrt, jaxlib = rows["jax-cuda12-pjrt"], rows["jaxlib"]
    plugin = Framework(package="jax-cuda12-plugin", cudnn="9.8")
    assert runtime_cudnn(pjrt, [plugin]) == "9.8" and runtime_cudnn(pjrt, []) == "9"
    assert runtime_names(pjrt, "9.8")[0] == "libcudnn.so.9" and "libcusolver.so.11" in runtime_names(pjrt, "9.8")
    assert runtime_cudnn(jaxlib, [Framework(package="jaxlib", version="0.10.2")]) is None
    assert runtime_names(jaxlib, None) == [] and runtime_names(jaxlib, "8.9") == ["libcudnn.so.8"]
    assert all(name in rows["jax-cuda13-pjrt"]["preload"] for name in runtime_names(rows["jax-cuda13-pjrt"], "9.12.0.46"))


def test_the_frameworks_job_lists_the_site_packages_once(machine, monkeypatch):
    """Counted work (review): the frameworks, the extension check and the cuDNN wheels beside JAX's plugin are read
    from one listing of the site-packages; each listed the folder again before (three listings a doctor)."""
    from cudaenv.probes import frameworks

    site = _jax(machine, "nvidia-cudnn-cu12==9.10.2.21")
    listed = calls_to(monkeypatch, frameworks, "_dist_infos")
    _, found, data = machine.findings()
    assert not {FID, TOO_OLD} & set(found), found.keys()
    assert _fw(data, "jax-cuda12-pjrt")["cudnn_wheels"] == ["nvidia-cudnn-cu12==9.10.2.21"]
    assert listed.count(site) == 1, listed
