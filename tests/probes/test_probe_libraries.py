"""Which CUDA library files a process loads (probes/libraries.py), on real ELF files built by the machine's C
compiler inside a fake root: torch's libtorch_cuda.so with the RUNPATH pip's torch has ($ORIGIN/../../nvidia/...),
a system toolkit on LD_LIBRARY_PATH that shadows the wheel, a library found nowhere, a CuPy with its own NCCL; then
the findings those give (diagnose/frameworks.py) in the doctor's JSON."""

import os

from elf_builders import build_library
from cudaenv.diagnose import diagnose
from cudaenv.model.snapshot import LoadedLibrary, Torch
from cudaenv.parse.elf import ElfDynamic
from cudaenv.probes.libraries import probe_libraries, resolve, search_order
from cudaenv.diagnose.view import build_view
from cudaenv.render.report import render_report

from machine import healthy

SITE = "/env/lib/python3.12/site-packages"


def _torch_tree(fake_root):
    """site-packages with torch's libtorch_cuda.so and the nvidia wheels' cudart and nccl; a CUDA 12.1 toolkit."""
    root = fake_root.path
    site = root / SITE.lstrip("/")
    cudart = build_library(site / "nvidia" / "cuda_runtime" / "lib", "libcudart.so.12", soname="libcudart.so.12")
    nccl = build_library(site / "nvidia" / "nccl" / "lib", "libnccl.so.2", soname="libnccl.so.2")
    cublas = build_library(root / "build", "libcublas.so.12", soname="libcublas.so.12")  # linked against, then not installed
    build_library(site / "torch" / "lib", "libtorch_cuda.so", soname="libtorch_cuda.so", links=[cudart, nccl, cublas],
                  runpath="$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/nccl/lib")
    tk = root / "usr/local/cuda-12.1/lib64"
    real = build_library(tk, "libcudart.so.12.1.105", soname="libcudart.so.12")
    os.symlink(real.name, tk / "libcudart.so.12")
    return site


def test_the_search_order_and_the_first_hit():
    dyn = ElfDynamic(64, "EM_X86_64", None, ("libx.so.1",), ("$ORIGIN/../lib", "$LIB/x", "rel"), ("/ignored",), (), True)
    order = search_order("/a/b", dyn, "/l1::/l2;rel", ["/etc-dir"], ["/lib64", "/usr/lib"])
    assert order == [("/l1", "LD_LIBRARY_PATH"), ("/l2", "LD_LIBRARY_PATH"), ("/a/lib", "runpath"),
                     ("/etc-dir", "ld.so.cache"), ("/lib64", "default"), ("/usr/lib", "default")]  # RPATH ignored beside RUNPATH
    old = dyn._replace(runpath=(), rpath=("$ORIGIN",))
    assert search_order("/a/b", old, None, [], [])[0] == ("/a/b", "rpath")
    files = {"/a/lib/libx.so.1", "/usr/lib/libx.so.1"}
    assert resolve("libx.so.1", order, files.__contains__) == ("/a/lib/libx.so.1", "runpath", ("/usr/lib/libx.so.1",))
    assert resolve("liby.so.1", order, files.__contains__) == (None, None, ())


def test_torch_with_a_toolkit_on_ld_library_path(fake_root):
    _torch_tree(fake_root)
    host = fake_root.host(env={"LD_LIBRARY_PATH": "/usr/local/cuda-12.1/lib64:/opt/other"})
    lib = SITE + "/torch/lib/libtorch_cuda.so"
    found = {x.needed: x for x in probe_libraries(host, [("torch", lib)], conf_dirs=[])}
    assert set(found) == {"libcudart.so.12", "libnccl.so.2", "libcublas.so.12", "libcuda.so.1"}
    driver = found["libcuda.so.1"]  # libcudart's own dlopen of the driver's library, searched from the toolkit's libcudart
    assert (driver.loaded_by, driver.object, driver.path) == ("dlopen", "/usr/local/cuda-12.1/lib64/libcudart.so.12", None)
    cudart = found["libcudart.so.12"]
    assert (cudart.path, cudart.via, cudart.version) == ("/usr/local/cuda-12.1/lib64/libcudart.so.12", "LD_LIBRARY_PATH", "12.1.105")
    assert cudart.real == "/usr/local/cuda-12.1/lib64/libcudart.so.12.1.105"
    assert cudart.others == (SITE + "/nvidia/cuda_runtime/lib/libcudart.so.12",) == (cudart.wheel_copy,) and not cudart.from_wheel
    assert (found["libnccl.so.2"].path, found["libnccl.so.2"].via) == (SITE + "/nvidia/nccl/lib/libnccl.so.2", "runpath")
    assert found["libcublas.so.12"].path is None
    # without LD_LIBRARY_PATH the wheel wins
    clean = probe_libraries(fake_root.host(env={}), [("torch", lib)], conf_dirs=[])
    assert {x.needed: x.via for x in clean}["libcudart.so.12"] == "runpath"

    s = healthy(torch=Torch(python="/env/bin/python", installed=True, version="2.8.0+cu128", cuda="12.8", location=SITE),
                env=(("LD_LIBRARY_PATH", "/usr/local/cuda-12.1/lib64:/opt/other"),),
                libraries=tuple(found.values()))
    f = {x.id: x for x in diagnose(s)}
    shadow = f["library-shadowed"]
    assert "torch's libcudart.so.12 loads /usr/local/cuda-12.1/lib64/libcudart.so.12 (12.1.105) instead of " + SITE in shadow.detail
    assert shadow.fix[0] == "export LD_LIBRARY_PATH=/opt/other"
    assert "libcublas.so.12 (torch)" in f["library-not-found"].title
    assert "libcuda.so.1" not in f["library-not-found"].title and "libcuda-not-found" not in f  # no driver library here at all


def test_two_nccls_and_mixed_wheel_majors(fake_root):
    site = _torch_tree(fake_root)
    own = build_library(site / "cupy_backends" / "cuda" / "libs", "libnccl.so.2", soname="libnccl.so.2")
    build_library(site / "cupy" / "cuda", "nccl.cpython-312-x86_64-linux-gnu.so", links=[own], runpath="$ORIGIN/../../cupy_backends/cuda/libs")
    objects = [("torch", SITE + "/torch/lib/libtorch_cuda.so"), ("cupy-cuda12x", SITE + "/cupy/cuda/nccl.cpython-312-x86_64-linux-gnu.so")]
    libs = probe_libraries(fake_root.host(env={}), objects)
    s = healthy(torch=Torch(python="/env/bin/python", installed=True, version="2.8.0+cu128", cuda="12.8", location=SITE,
                            nvidia_packages=("nvidia-cudnn-cu12==9.10.2.21", "nvidia-cublas-cu11==11.11.3.6", "nvidia-nccl-cu12==2.27.3")),
                libraries=libs)
    f = {x.id: x for x in diagnose(s)}
    assert "nccl-two-copies" in f and "cupy-cuda12x resolves %s/cupy_backends/cuda/libs/libnccl.so.2" % SITE in f["nccl-two-copies"].detail
    assert f["nvidia-wheels-mixed"].fix == ("/env/bin/python -m pip uninstall -y nvidia-cublas-cu11",)
    text = render_report(s, diagnose(s), build_view(s))
    assert "torch loads" in text and "cupy-cuda12x loads" in text


def test_a_healthy_machine_without_libraries_has_no_library_finding():
    s = healthy(libraries=(LoadedLibrary(consumer="torch", object="/e/torch/lib/libtorch_cuda.so", needed="libcudart.so.12",
                                         path="/e/nvidia/cuda_runtime/lib/libcudart.so.12", via="runpath", from_wheel=True),))
    assert [x.id for x in diagnose(s) if x.section == "frameworks"] == []


def test_the_loader_cache_is_read_not_guessed_from_the_configuration(fake_root):
    """/etc/ld.so.cache names a CUDA 12.4 libcudart in /opt, a folder /etc/ld.so.conf no longer lists (the cache was
    built before the configuration changed, as the loader still reads it): the cache's file is the one taken. An entry
    whose file is gone is passed over. Without a cache file the configured folders stand in."""
    from elf_builders import ld_cache

    root = fake_root.path
    lib = build_library(root / "opt/cuda-12.4/lib64", "libcudart.so.12", soname="libcudart.so.12")
    nccl = build_library(root / "build", "libnccl.so.2", soname="libnccl.so.2")
    build_library(root / "env/torch/lib", "libtorch_cuda.so", soname="libtorch_cuda.so", links=[lib, nccl])
    fake_root.file("etc/ld.so.conf", "/usr/lib/other\n")
    (root / "etc/ld.so.cache").write_bytes(ld_cache([
        (0x303, "libcudart.so.12", "/opt/cuda-12.4/lib64/libcudart.so.12", 0),
        (0x303, "libnccl.so.2", "/opt/gone/libnccl.so.2", 0)]))
    host = fake_root.host(env={})
    found = {x.needed: x for x in probe_libraries(host, [("torch", "/env/torch/lib/libtorch_cuda.so")])}
    assert (found["libcudart.so.12"].path, found["libcudart.so.12"].via) == ("/opt/cuda-12.4/lib64/libcudart.so.12", "ld.so.cache")
    assert found["libnccl.so.2"].path is None  # the stale entry's file is gone, and no other folder has it
    (root / "etc/ld.so.cache").unlink()
    fake_root.file("etc/ld.so.conf", "/opt/cuda-12.4/lib64\n")
    found = {x.needed: x for x in probe_libraries(host, [("torch", "/env/torch/lib/libtorch_cuda.so")])}
    assert (found["libcudart.so.12"].path, found["libcudart.so.12"].via) == ("/opt/cuda-12.4/lib64/libcudart.so.12", "ld.so.cache")


def test_cudnn_sub_libraries_dlopened_from_cudnn_itself(fake_root):
    """torch NEEDs libcudnn.so.9 (the pip wheel's, through its RUNPATH); cuDNN 9 loads its sub-libraries with dlopen,
    searched from libcudnn.so.9 (its own RUNPATH $ORIGIN), not from torch: the wheel lacks libcudnn_cnn.so.9 and a
    system copy on LD_LIBRARY_PATH wins for libcudnn_ops.so.9."""
    root = fake_root.path
    site = root / SITE.lstrip("/")
    wheel = site / "nvidia" / "cudnn" / "lib"
    for name in ("libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9",
                 "libcudnn_heuristic.so.9", "libcudnn_ops.so.9", "libcudnn_adv.so.9"):
        build_library(wheel, name, soname=name)
    cudnn = build_library(wheel, "libcudnn.so.9", soname="libcudnn.so.9", runpath="$ORIGIN")
    build_library(site / "torch" / "lib", "libtorch_cuda.so", soname="libtorch_cuda.so", links=[cudnn],
                  runpath="$ORIGIN/../../nvidia/cudnn/lib")
    build_library(root / "usr/local/cudnn/lib", "libcudnn_ops.so.9", soname="libcudnn_ops.so.9")
    host = fake_root.host(env={"LD_LIBRARY_PATH": "/usr/local/cudnn/lib"})
    libs = probe_libraries(host, [("torch", SITE + "/torch/lib/libtorch_cuda.so")], conf_dirs=[], ld_cache=None)
    by = {x.needed: x for x in libs}
    assert by["libcudnn.so.9"].loaded_by == "needed" and by["libcudnn.so.9"].via == "runpath"
    sub = [x for x in libs if x.loaded_by == "dlopen"]
    assert [x.needed for x in sub] == ["libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9",
                                       "libcudnn_heuristic.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9"]
    assert all(x.object == SITE + "/nvidia/cudnn/lib/libcudnn.so.9" for x in sub)
    assert (by["libcudnn_graph.so.9"].path, by["libcudnn_graph.so.9"].via) == (SITE + "/nvidia/cudnn/lib/libcudnn_graph.so.9", "runpath")
    assert by["libcudnn_cnn.so.9"].path is None
    assert (by["libcudnn_ops.so.9"].path, by["libcudnn_ops.so.9"].wheel_copy) == ("/usr/local/cudnn/lib/libcudnn_ops.so.9", SITE + "/nvidia/cudnn/lib/libcudnn_ops.so.9")

    s = healthy(torch=Torch(python="/env/bin/python", installed=True, version="2.8.0+cu128", cuda="12.8", location=SITE),
                env=(("LD_LIBRARY_PATH", "/usr/local/cudnn/lib"),), libraries=libs)
    f = {x.id: x for x in diagnose(s)}
    assert "libcudnn_cnn.so.9 (torch)" in f["library-not-found"].title
    assert SITE + "/nvidia/cudnn/lib/libcudnn.so.9 loads (dlopen) libcudnn_cnn.so.9" in f["library-not-found"].detail
    assert "torch's libcudnn_ops.so.9 loads /usr/local/cudnn/lib/libcudnn_ops.so.9" in f["library-shadowed"].detail
    text = " ".join(render_report(s, diagnose(s), build_view(s)).split())
    assert "libcudnn_cnn.so.9: not found (dlopen by libcudnn.so.9)" in text


# ------------------------------------------------------------------ dlopen beyond cuDNN 9 (issue 29): the driver, NVRTC, NCCL's plugin
def _platform(**kw):
    from cudaenv.model.snapshot import Platform

    return Platform(system="linux", **kw)


def test_libcudart_loads_the_drivers_libcuda_through_the_loader_cache_not_runpath(fake_root):
    """WSL 2: libcuda.so.1 lives in /usr/lib/wsl/lib, which only the loader's configuration (ld.wsl.conf) names:
    found there via the cache step; with the configuration gone it is found nowhere (torch's RUNPATH into the wheel
    does not help: the search is libcudart's own, and libcudart has no RUNPATH), and libcuda-not-found names the
    folder and the ld.so.conf.d line."""
    _torch_tree(fake_root)
    wsl = fake_root.path / "usr/lib/wsl/lib"
    wsl.mkdir(parents=True)
    build_library(wsl, "libcuda.so.1", soname="libcuda.so.1")
    lib = SITE + "/torch/lib/libtorch_cuda.so"
    seen = {x.needed: x for x in probe_libraries(fake_root.host(env={}), [("torch", lib)], conf_dirs=["/usr/lib/wsl/lib"], ld_cache=None)}
    driver = seen["libcuda.so.1"]
    assert (driver.path, driver.via, driver.loaded_by) == ("/usr/lib/wsl/lib/libcuda.so.1", "ld.so.cache", "dlopen")
    assert driver.object == SITE + "/nvidia/cuda_runtime/lib/libcudart.so.12"
    lost = probe_libraries(fake_root.host(env={}), [("torch", lib)], conf_dirs=[], ld_cache=None)
    assert {x.needed: x.path for x in lost}["libcuda.so.1"] is None
    s = healthy(platform=_platform(wsl=2, libcuda=("/usr/lib/wsl/lib/libcuda.so.1",)), libraries=lost)
    f = {x.id: x for x in diagnose(s)}
    got = f["libcuda-not-found"]
    assert got.severity == "error" and got.fix_kind == "host" and "/usr/lib/wsl/lib" in got.title
    assert got.fix[0].endswith("tee /etc/ld.so.conf.d/ld.wsl.conf && sudo ldconfig") and got.fix[0].startswith("echo /usr/lib/wsl/lib | ")
    assert "libcudart.so.12 loads the driver's library itself" in got.detail
    assert "libcuda" not in (f["library-not-found"].title if "library-not-found" in f else "")
    # on LD_LIBRARY_PATH it is found, and the finding goes
    onpath = probe_libraries(fake_root.host(env={"LD_LIBRARY_PATH": "/usr/lib/wsl/lib"}), [("torch", lib)], conf_dirs=[], ld_cache=None)
    assert {x.needed: x.via for x in onpath}["libcuda.so.1"] == "LD_LIBRARY_PATH"
    s = healthy(platform=_platform(wsl=2, libcuda=("/usr/lib/wsl/lib/libcuda.so.1",)), libraries=onpath)
    assert "libcuda-not-found" not in {x.id for x in diagnose(s)}


def test_torch_loads_nvrtc_lazily_and_nvrtc_loads_its_own_builtins(fake_root):
    """torch/lib/libcaffe2_nvrtc.so (a lazy object) needs libnvrtc.so.12 from the nvidia-cuda-nvrtc-cu12 wheel, whose
    version (12.9.86) is read from its dist-info name; libnvrtc.so.12 then loads libnvrtc-builtins.so.12.9 from its own
    $ORIGIN. With only a 12.4 builtins beside it (a wheel half-replaced), 12.9's is found nowhere: library-not-found."""
    from cudaenv.probes.libraries import lazy_objects

    site = _torch_tree(fake_root)
    nvrtc_dir = site / "nvidia" / "cuda_nvrtc" / "lib"
    nvrtc = build_library(nvrtc_dir, "libnvrtc.so.12", soname="libnvrtc.so.12", runpath="$ORIGIN")
    builtins = build_library(nvrtc_dir, "libnvrtc-builtins.so.12.9", soname="libnvrtc-builtins.so.12.9")
    (site / "nvidia_cuda_nvrtc_cu12-12.9.86.dist-info").mkdir()
    build_library(site / "torch" / "lib", "libcaffe2_nvrtc.so", soname="libcaffe2_nvrtc.so", links=[nvrtc],
                  runpath="$ORIGIN/../../nvidia/cuda_nvrtc/lib")
    host = fake_root.host(env={})
    objects = lazy_objects(host, "torch", SITE)
    assert objects == [("torch", SITE + "/torch/lib/libcaffe2_nvrtc.so")]
    found = {x.needed: x for x in probe_libraries(host, objects, conf_dirs=[], ld_cache=None)}
    assert (found["libnvrtc.so.12"].via, found["libnvrtc.so.12"].from_wheel) == ("runpath", True)
    got = found["libnvrtc-builtins.so.12.9"]
    assert (got.path, got.via, got.loaded_by) == (SITE + "/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.9", "runpath", "dlopen")
    builtins.rename(nvrtc_dir / "libnvrtc-builtins.so.12.4")
    lost = probe_libraries(host, objects, conf_dirs=[], ld_cache=None)
    assert {x.needed: x.path for x in lost}["libnvrtc-builtins.so.12.9"] is None
    f = {x.id: x for x in diagnose(healthy(libraries=lost))}
    assert "libnvrtc-builtins.so.12.9 (torch)" in f["library-not-found"].title
    assert "libnvrtc.so.12 loads (dlopen) libnvrtc-builtins.so.12.9" in f["library-not-found"].detail
    # no dist-info and a file name without the minor: the builtins' name cannot be known, so it is left out
    (site / "nvidia_cuda_nvrtc_cu12-12.9.86.dist-info").rmdir()
    assert not any(x.needed.startswith("libnvrtc-builtins") for x in probe_libraries(host, objects, conf_dirs=[], ld_cache=None))


def test_a_toolkits_nvrtc_names_its_builtins_by_its_file_version(fake_root):
    root = fake_root.path
    tk = root / "usr/local/cuda-12.4/lib64"
    real = build_library(tk, "libnvrtc.so.12.4.127", soname="libnvrtc.so.12", runpath="$ORIGIN")
    os.symlink(real.name, tk / "libnvrtc.so.12")
    build_library(tk, "libnvrtc-builtins.so.12.4", soname="libnvrtc-builtins.so.12.4")
    ext = build_library(root / "ext", "ext.so", links=[real])
    found = {x.needed: x for x in probe_libraries(fake_root.host(env={"LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64"}),
                                                  [("ext", "/ext/ext.so")], conf_dirs=[], ld_cache=None)}
    assert ext.exists() and found["libnvrtc.so.12"].version == "12.4.127"
    assert found["libnvrtc-builtins.so.12.4"].path == "/usr/local/cuda-12.4/lib64/libnvrtc-builtins.so.12.4"


def test_nccls_network_plugin_named_by_nccl_net_plugin(fake_root):
    """NCCL_NET_PLUGIN=ofi: libnccl.so.2 tries "ofi" then libnccl-net-ofi.so from its own search; nowhere is
    nccl-net-plugin-not-found (a silent fallback to NCCL's own transports), whose first fix line converges; on
    LD_LIBRARY_PATH it is found. Unset: libnccl-net.so, whose absence is normal (nothing reported); =none: none."""
    _torch_tree(fake_root)
    lib = SITE + "/torch/lib/libtorch_cuda.so"

    def probe(env):
        return probe_libraries(fake_root.host(env=env), [("torch", lib)], conf_dirs=[], ld_cache=None)

    lost = probe({"NCCL_NET_PLUGIN": "ofi"})
    plugin = [x for x in lost if x.loaded_by == "plugin"]
    assert [(x.needed, x.path, x.object) for x in plugin] == [("ofi", None, SITE + "/nvidia/nccl/lib/libnccl.so.2")]
    s = healthy(env=(("NCCL_NET_PLUGIN", "ofi"),), libraries=lost)
    f = {x.id: x for x in diagnose(s)}
    got = f["nccl-net-plugin-not-found"]
    assert got.fix_kind == "command" and got.fix[0].startswith("unset NCCL_NET_PLUGIN")
    assert "it tries ofi then libnccl-net-ofi.so" in got.detail
    assert "ofi" not in (f["library-not-found"].title if "library-not-found" in f else "")
    assert "nccl-net-plugin-not-found" not in {x.id for x in diagnose(healthy(libraries=probe({})))}
    assert not [x for x in probe({}) if x.loaded_by == "plugin"] and not [x for x in probe({"NCCL_NET_PLUGIN": "none"}) if x.loaded_by == "plugin"]
    ofi = fake_root.path / "opt/aws-ofi-nccl/lib"
    build_library(ofi, "libnccl-net-ofi.so", soname="libnccl-net-ofi.so")
    found = [x for x in probe({"NCCL_NET_PLUGIN": "ofi", "LD_LIBRARY_PATH": "/opt/aws-ofi-nccl/lib"}) if x.loaded_by == "plugin"]
    assert [(x.needed, x.path, x.via) for x in found] == [("libnccl-net-ofi.so", "/opt/aws-ofi-nccl/lib/libnccl-net-ofi.so", "LD_LIBRARY_PATH")]
    default = fake_root.path / "usr/lib"
    build_library(default, "libnccl-net.so", soname="libnccl-net.so")
    assert [(x.needed, x.via) for x in probe({}) if x.loaded_by == "plugin"] == [("libnccl-net.so", "default")]


def test_each_file_is_read_once(fake_root):
    """Two consumers resolve the same wheel's libcudart.so.12: its dynamic section (for its own dlopen of libcuda.so.1)
    is read once, not once per consumer (counted reads)."""
    from collections import Counter

    from cudaenv.probes.elf import probe_elf_dynamic

    site = _torch_tree(fake_root)
    cudart = site / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.12"
    build_library(site / "cupy" / "cuda", "runtime.so", links=[cudart], runpath="$ORIGIN/../../nvidia/cuda_runtime/lib")
    host = fake_root.host(env={})
    reads = Counter()

    def read(path):
        reads[path] += 1
        return probe_elf_dynamic(host, path)

    objects = [("torch", SITE + "/torch/lib/libtorch_cuda.so"), ("cupy-cuda12x", SITE + "/cupy/cuda/runtime.so")]
    libs = probe_libraries(host, objects, conf_dirs=[], ld_cache=None, read=read)
    assert sum(1 for x in libs if x.needed == "libcuda.so.1") == 2  # one line per consumer
    assert reads[SITE + "/nvidia/cuda_runtime/lib/libcudart.so.12"] == 1 and max(reads.values()) == 1
