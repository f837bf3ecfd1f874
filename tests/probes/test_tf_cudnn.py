"""The cuDNN TensorFlow opens itself (issue 29): the tensorflow wheel links no CUDA library; TSL's DsoLoader in its
libtensorflow_framework.so.2 opens libcudnn.so.N (N the cuDNN major of its build_info.py) with dlopen at run time,
searched from that object as glibc's dlopen does: LD_LIBRARY_PATH, then its DT_RUNPATH (the nvidia wheels' folders
of site-packages), the loader cache, the default folders (data/loader_search.json's ``runtime`` row for tensorflow).

Each scenario is the doctor on a model machine (tests/machine.py) whose site-packages holds tensorflow 2.21.0 with the
real wheel's build_info.py and Requires-Dist lines and a libtensorflow_framework.so.2 built here with the real
wheel's RUNPATH (tests/framework_builders.py's tensorflow_cuda): the cuDNN 9 wheel (nothing to say), none, the cuDNN
8 wheel only, a system cuDNN 9 on LD_LIBRARY_PATH."""

import os

from framework_builders import TF_CUDA12_WHEELS, dist, tensorflow, tensorflow_cuda
from machine import a10g_535

FID = "framework-cudnn-not-found"
OLD = "framework-cudnn-too-old"
OBJECT = "tensorflow/libtensorflow_framework.so.2"


def _tf(m, *wheels, extra=False):
    """tensorflow 2.21.0 with ``wheels``; ``extra``: with the other nvidia wheels its and-cuda extra brings."""
    a10g_535(m).packages(*wheels)
    tensorflow_cuda(m.package_site, m.tmp / "build")
    if extra:
        for wheel, files in TF_CUDA12_WHEELS.items():
            dist(m.package_site, wheel.split("==")[0], wheel.split("==")[1], files={f: "" for f in files})
    return str(m.package_site)  # the site folder as the interpreter reports it (its PYTHONPATH entry)


# what TSL in libtensorflow_framework.so.2 opens for a CUDA 12 build (data/loader_search.json's tensorflow row)
OPENS = ["libcudnn.so.9", "libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12", "libcufft.so.11", "libcusolver.so.11",
         "libcusparse.so.12", "libcupti.so.12", "libnccl.so.2"]


def _fw(data):
    return next(f for f in data["frameworks"] if f["package"] == "tensorflow")


def test_the_cudnn_9_wheel_is_found_through_the_runpath(machine):
    """With the and-cuda extra's wheels, each library TSL opens is found through libtensorflow_framework.so.2's
    RUNPATH, but cuSOLVER: that RUNPATH names no nvidia/cusolver/lib (TF-CUSOLVER: the real objects, loaded here)."""
    site = _tf(machine, "nvidia-cudnn-cu12==9.10.2.21", extra=True)
    _, found, data = machine.findings()
    assert not {FID, "framework-cudnn-too-old"} & set(found), found.keys()
    tf = _fw(data)
    assert (tf["cuda"], tf["cudnn"], tf["cudnn_soname"]) == ("12.5.1", "9.3", "libcudnn.so.9")
    assert (tf["cudnn_path"], tf["cudnn_via"], tf["cudnn_version"]) == (
        site + "/nvidia/cudnn/lib/libcudnn.so.9", "runpath", "9.10.2.21")
    opened = [x for x in data["libraries"] if x["consumer"] == "tensorflow"]
    assert [x["needed"] for x in opened] == OPENS
    assert {(x["loaded_by"], x["object"]) for x in opened} == {("dlopen", site + "/" + OBJECT)}
    for x in opened:
        if x["needed"] == "libcusolver.so.11":
            assert (x["path"], x["wheel_copy"]) == (None, site + "/nvidia/cusolver/lib/libcusolver.so.11"), x
        else:
            folder = TF_FOLDERS[x["needed"]]
            assert (x["path"], x["via"]) == ("%s/%s/%s" % (site, folder, x["needed"]), "runpath"), x
    assert found["library-not-found"]["title"] == "CUDA libraries the loader finds nowhere: libcusolver.so.11 (tensorflow)"


TF_FOLDERS = {f.rsplit("/", 1)[-1]: f.rsplit("/", 1)[0] for files in TF_CUDA12_WHEELS.values() for f in files}
TF_FOLDERS["libcudnn.so.9"] = "nvidia/cudnn/lib"


def test_cusolver_is_searched_from_the_framework_object_not_from_libtensorflow_cc(machine):
    """libtensorflow_cc.so.2 asks libtensorflow_framework.so.2's DsoLoader for cuSOLVER; the dlopen is the framework's,
    so its RUNPATH is searched, not libtensorflow_cc.so.2's (which names nvidia/cusolver/lib): the installed
    nvidia-cusolver-cu12 wheel's file is outside the search. The fix puts its folder on LD_LIBRARY_PATH (searched
    first) and converges; a LD_LIBRARY_PATH already set keeps its entries after it."""
    site = _tf(machine, "nvidia-cudnn-cu12==9.10.2.21", extra=True)
    machine.env["LD_LIBRARY_PATH"] = "/opt/other/lib"
    _, found, data = machine.findings()
    f = found["library-not-found"]
    folder = site + "/nvidia/cusolver/lib"
    assert "%s/%s loads (dlopen) libcusolver.so.11" % (site, OBJECT) in f["detail"], f["detail"]
    assert "installed (%s/libcusolver.so.11)" % folder in f["detail"], f["detail"]
    assert "RUNPATH of the object that calls dlopen" in f["detail"]
    assert f["fix"][0] == "export LD_LIBRARY_PATH=%s:/opt/other/lib" % folder, f["fix"]
    assert len(f["fix"]) == 2 and f["fix"][1].startswith("# and set it where the environment is set up"), f["fix"]
    assert machine.apply_fix(f["fix"][0])
    _, found, data = machine.findings()
    assert "library-not-found" not in found, found.get("library-not-found")
    lib = next(x for x in data["libraries"] if x["consumer"] == "tensorflow" and x["needed"] == "libcusolver.so.11")
    assert lib["via"] == "LD_LIBRARY_PATH" and lib["path"].endswith("/site-packages/nvidia/cusolver/lib/libcusolver.so.11"), lib


def test_no_cudnn_without_the_and_cuda_extra(machine):
    """``pip install tensorflow`` alone: the wheel is a CUDA build but brings no cuDNN; the fix keeps that tensorflow
    and adds its and-cuda extra (whose METADATA pins nvidia-cudnn-cu12<10.0,>=9.3.0.75)."""
    _tf(machine)
    _, found, data = machine.findings()
    f = found[FID]
    assert f["severity"] == "warning" and f["title"] == "tensorflow 2.21.0 needs cuDNN 9 and the loader finds no libcudnn.so.9", f["title"]
    assert "(from its build_info.py's major and the cuDNN its release is compiled with)" in f["detail"] and "libtensorflow_framework.so.2 loads (dlopen) libcudnn.so.9" in f["detail"]
    assert "Cannot dlopen some GPU libraries" in f["detail"] and "JAX" not in f["detail"], f["detail"]
    assert "No other cuDNN is installed." in f["detail"]
    assert len(f["fix"]) == 1 and f["fix"][0].endswith('-m pip install "tensorflow[and-cuda]==2.21.0"'), f["fix"]
    assert _fw(data)["cudnn_path"] is None and _fw(data)["cudnn_wheels"] == []
    text = machine.doctor(fmt=None).out
    assert "libcudnn.so.9: found nowhere" in text and FID in text
    # the other libraries TSL opens are found nowhere either (cuDNN has its finding): the same line brings them
    lost = found["library-not-found"]
    assert lost["title"] == "CUDA libraries the loader finds nowhere: %s" % ", ".join("%s (tensorflow)" % n for n in OPENS[1:]), lost["title"]
    assert lost["fix"][0].endswith('-m pip install "tensorflow[and-cuda]==2.21.0"'), lost["fix"]
    machine.apply_fix(lost["fix"][0])
    _, found, data = machine.findings()
    assert FID not in found, found.keys()
    # left: cuSOLVER, whose wheel is now installed outside the framework object's search; its fix clears it
    assert found["library-not-found"]["title"] == "CUDA libraries the loader finds nowhere: libcusolver.so.11 (tensorflow)"
    machine.apply_fix(found["library-not-found"]["fix"][0])
    _, found, _ = machine.findings()
    assert not {FID, OLD, "library-not-found"} & set(found), found.keys()


def test_only_the_cudnn_8_wheel(machine):
    site = _tf(machine, "nvidia-cudnn-cu12==8.9.7.29")
    _, found, data = machine.findings()
    f = found[FID]
    assert "libcudnn.so.9" in f["title"] and "nvidia-cudnn-cu12==8.9.7.29" in f["detail"], f
    assert "libcudnn.so.8 (%s/nvidia/cudnn/lib/libcudnn.so.8)" % site in f["detail"], f["detail"]
    assert _fw(data)["cudnn_other"] == [site + "/nvidia/cudnn/lib/libcudnn.so.8"]
    machine.apply_fix(f["fix"][0])  # pip moves the cuDNN wheel to one the extra's pin allows
    _, found, data = machine.findings()
    assert FID not in found and _fw(data)["cudnn_version"] == "9.10.2.21"


def _system_cudnn(m, folder, version="9.1.0"):
    """A system cuDNN (a tarball's lib folder: libcudnn.so.9 -> libcudnn.so.VERSION) on LD_LIBRARY_PATH."""
    lib = m.root.dir(folder)
    (lib / ("libcudnn.so." + version)).write_text("")
    os.symlink("libcudnn.so." + version, lib / "libcudnn.so.9")
    m.env["LD_LIBRARY_PATH"] = "/" + folder


def test_a_system_cudnn_9_on_ld_library_path(machine):
    _tf(machine)
    _system_cudnn(machine, "opt/cudnn/lib", "9.10.1")
    _, found, data = machine.findings()
    assert FID not in found, found.keys()
    tf = _fw(data)
    assert (tf["cudnn_path"], tf["cudnn_via"], tf["cudnn_version"]) == ("/opt/cudnn/lib/libcudnn.so.9", "LD_LIBRARY_PATH", "9.10.1")


def test_ld_library_path_comes_before_the_runpath(machine):
    """Unlike JAX's plugin (a DT_RPATH, and its Python code loads the wheel's file first), TensorFlow's object has a
    DT_RUNPATH and nothing preloads: a system cuDNN 9 on LD_LIBRARY_PATH is the one it gets, the wheel's passed over."""
    site = _tf(machine, "nvidia-cudnn-cu12==9.10.2.21")
    _system_cudnn(machine, "opt/cudnn-9.1/lib")
    _, found, data = machine.findings()
    assert FID not in found
    tf = _fw(data)
    assert (tf["cudnn_path"], tf["cudnn_via"]) == ("/opt/cudnn-9.1/lib/libcudnn.so.9", "LD_LIBRARY_PATH")
    lib = next(x for x in data["libraries"] if x["consumer"] == "tensorflow")
    assert site + "/nvidia/cudnn/lib/libcudnn.so.9" in lib["others"], lib
    # that system cuDNN is 9.1.0, older than the 9.3 the 2.21.0 release is compiled with: installing the extra alone
    # changes nothing (LD_LIBRARY_PATH comes first), so the fix also names the folder to take out
    f = found[OLD]
    assert f["title"] == "tensorflow 2.21.0 needs cuDNN 9.3 or newer and gets 9.1.0", f["title"]
    assert "(from LD_LIBRARY_PATH)" in f["detail"], f["detail"]
    assert f["fix"][-1] == "# and take /opt/cudnn-9.1/lib out of LD_LIBRARY_PATH: the loader looks there first", f["fix"]


def test_a_cpu_build_or_no_framework_library_opens_nothing(machine):
    """A tensorflow whose build_info.py says is_cuda_build False opens no cuDNN; nor does one whose
    libtensorflow_framework.so.2 is not there (nothing to search from)."""
    a10g_535(machine).packages()
    tensorflow(machine.package_site, cuda_build=False)
    _, found, data = machine.findings()
    assert FID not in found and _fw(data)["cudnn_soname"] is None
    assert not [x for x in data["libraries"] if x["consumer"] == "tensorflow"]


def test_the_tensorflow_row_pure():
    """The row's cuDNN comes from the tensorflow record (its build_info.py's cudnn_version); none said: nothing opened."""
    from cudaenv.model.snapshot import Framework
    from cudaenv.probes.libraries import runtime_cudnn, runtime_names, runtime_rows

    row = next(r for r in runtime_rows() if r["consumer"] == "tensorflow")
    assert row["object"] == OBJECT and "preload" not in row
    assert runtime_cudnn(row, [Framework(package="tensorflow", cudnn="9")]) == "9"
    assert runtime_names(row, "9") == ["libcudnn.so.9"] and runtime_names(row, "8") == ["libcudnn.so.8"]
    assert runtime_cudnn(row, [Framework(package="tensorflow")]) is None and runtime_names(row, None) == []


def test_the_real_20000_character_runpath_is_read_whole(tmp_path):
    """The tensorflow wheel's RUNPATH is one string of about 20,000 bytes (the same folders repeated): read whole, its
    entries in order, not dropped as a string past the 4 KiB bound of a library name."""
    from builders import recorded

    from cudaenv.parse.elf import parse_elf_dynamic

    line = next(x for x in recorded("wheel-tensorflow-2.21.0-dynamic.txt").splitlines() if "(RUNPATH)" in x)
    runpath = line.split("[", 1)[1].rstrip("]")
    assert len(runpath) > 16 * 1024
    dyn = parse_elf_dynamic(tensorflow_cuda(tmp_path / "site", tmp_path / "build").read_bytes())
    assert dyn.runpath == tuple(runpath.split(":")) and dyn.rpath == () and dyn.needed[:1] != ("libcudnn.so.9",)
    assert "$ORIGIN/../nvidia/cudnn/lib" in dyn.runpath and dyn.soname == "libtensorflow_framework.so.2"


def test_the_fix_without_a_version_read_names_none():
    """A tensorflow record without a version (a METADATA that says none) gets the extra without a pin, not ``==``;
    with one, that version."""
    from cudaenv.diagnose.framework_cudnn import cudnn_fix
    from cudaenv.model.record import replace
    from cudaenv.model.snapshot import Framework, Platform, Snapshot

    s = Snapshot(platform=Platform(system="linux"))
    fw = Framework(package="tensorflow", cuda="12.5.1", cudnn="9", cudnn_soname="libcudnn.so.9")
    assert cudnn_fix(s, fw) == ['python3 -m pip install "tensorflow[and-cuda]"'], cudnn_fix(s, fw)
    assert cudnn_fix(s, replace(fw, version="2.20.0")) == ['python3 -m pip install "tensorflow[and-cuda]==2.20.0"']


def test_an_older_cudnn_9_wheel_than_the_release_is_compiled_with(machine):
    """tensorflow 2.21.0 is compiled with cuDNN 9.3 (data/frameworks.json's build-cudnn row: its .bazelrc's
    HERMETIC_CUDNN_VERSION, its and-cuda extra's nvidia-cudnn-cu12>=9.3.0.75); a 9.1 wheel (pinned by another
    package) is of its major and older: XLA refuses it when TensorFlow first uses cuDNN. The fix, pip's install of
    the extra at the installed version, moves the wheel to one the pin allows and clears the finding."""
    site = _tf(machine, "nvidia-cudnn-cu12==9.1.0.70")
    _, found, data = machine.findings()
    f = found[OLD]
    assert FID not in found and f["severity"] == "warning"
    assert f["title"] == "tensorflow 2.21.0 needs cuDNN 9.3 or newer and gets 9.1.0.70", f["title"]
    assert "%s/nvidia/cudnn/lib/libcudnn.so.9 (from its RUNPATH)" % site in f["detail"], f["detail"]
    assert "Loaded runtime CuDNN library" in f["detail"] and "DNN library initialization failed" in f["detail"]
    assert "JAX" not in f["detail"], f["detail"]
    assert len(f["fix"]) == 1 and f["fix"][0].endswith('-m pip install "tensorflow[and-cuda]==2.21.0"'), f["fix"]
    tf = _fw(data)
    assert (tf["cudnn"], tf["cudnn_version"], tf["cudnn_via"]) == ("9.3", "9.1.0.70", "runpath")
    machine.apply_fix(f["fix"][0])
    _, found, data = machine.findings()
    assert OLD not in found and FID not in found, found.keys()
    assert _fw(data)["cudnn_version"] == "9.10.2.21"


def test_a_release_without_a_sourced_build_cudnn_gets_no_verdict(machine):
    """Fail closed: tensorflow 2.20.0 has no build-cudnn row (its build_info.py says only cuDNN 9), so a 9.1 wheel
    gets no too-old verdict; the record keeps the major it read."""
    a10g_535(machine).packages("nvidia-cudnn-cu12==9.1.0.70")
    tensorflow_cuda(machine.package_site, machine.tmp / "build", version="2.20.0")
    _, found, data = machine.findings()
    assert OLD not in found and FID not in found, found.keys()
    assert (_fw(data)["cudnn"], _fw(data)["cudnn_version"]) == ("9", "9.1.0.70")


def test_the_build_cudnn_row_pure():
    """A release's row applies only to that version, built with that CUDA, of that cuDNN major."""
    from cudaenv.probes.frameworks import build_cudnn

    assert build_cudnn("tensorflow", "2.21.0", "12.5.1", "9") == "9.3"
    assert build_cudnn("tensorflow", "2.20.0", "12.5.1", "9") is None
    assert build_cudnn("tensorflow", "2.21.0", "12.3", "9") is None  # another build of that version: not the row's
    assert build_cudnn("tensorflow", "2.21.0", "12.5.1", "8") is None
    assert build_cudnn("tensorflow", None, "12.5.1", "9") is None
    assert build_cudnn("jax", "2.21.0", "12.5.1", "9") is None


def test_the_libraries_of_the_build_cuda_major_pure():
    """The names besides cuDNN come from the row's opens_by_cuda for the CUDA major the build says (12.5.1 -> 12:
    cuFFT and cuSOLVER carry their own major 11); a major without a list opens only cuDNN; a build without a CUDA
    read the same."""
    from cudaenv.model.snapshot import Framework
    from cudaenv.probes.libraries import runtime_entries, runtime_names, runtime_rows

    class Files:  # the object is there; nothing else is asked
        def join(self, *parts):
            return "/".join(parts)

        def is_file(self, path):
            return path.endswith(OBJECT)

    rows = [r for r in runtime_rows() if r["consumer"] == "tensorflow"]

    def names(cuda):
        fw = Framework(package="tensorflow", version="2.21.0", location="/site", cuda=cuda, cudnn="9.3", gpu_build=True)
        (consumer, path, row, cudnn), = runtime_entries(Files(), [fw], rows)
        assert (consumer, path, cudnn) == ("tensorflow", "/site/" + OBJECT, "9.3")
        return runtime_names(row, cudnn)

    assert names("12.5.1") == OPENS
    assert names("13.0") == ["libcudnn.so.9"] and names(None) == ["libcudnn.so.9"]
    assert rows[0]["opens"] == ["libcudnn.so.{cudnn}"]  # the table's row is not changed by a read
