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
    assert set(found) == {"libcudart.so.12", "libnccl.so.2", "libcublas.so.12"}
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
