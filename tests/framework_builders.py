"""Installed packages of the CUDA consumers besides torch, as pip lays them out in a site-packages folder: a
``NAME-VERSION.dist-info`` with METADATA and RECORD, and the package's own files (a build-info file, shared
libraries). Constructed from the packages' published layouts (the sources of data/frameworks.json), not copied from
a wheel: the real-wheel reads are the ``slow`` tests' and the ELF files are built by the machine's compiler."""

from pathlib import Path
from typing import Dict, Sequence


def dist(site: Path, name: str, version: str, requires: Sequence[str] = (), files: Dict[str, str] = None,
         binary: Dict[str, bytes] = None) -> Path:
    """Install ``name`` ``version`` into ``site``: dist-info (METADATA, RECORD naming every file) and ``files``."""
    site.mkdir(parents=True, exist_ok=True)
    folder = site / ("%s-%s.dist-info" % (name.replace("-", "_"), version))
    folder.mkdir()
    meta = ["Metadata-Version: 2.1", "Name: %s" % name, "Version: %s" % version]
    meta += ["Requires-Dist: %s" % r for r in requires]
    (folder / "METADATA").write_text("\n".join(meta) + "\n\nA long description.\nName: not-a-header\n")
    record = []
    for rel, text in (files or {}).items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        record.append("%s,sha256=x,%d" % (rel, len(text)))
    for rel, data in (binary or {}).items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        record.append("%s,sha256=x,%d" % (rel, len(data)))
    record.append("%s/RECORD,," % folder.name)
    (folder / "RECORD").write_text("\n".join(record) + "\n")
    return folder


TF_BUILD_INFO = ("# constructed in the shape TensorFlow's gen_build_info.py writes\nimport collections\n"
                 "build_info = collections.OrderedDict([('cuda_compute_capabilities', ['sm_75', 'compute_90']), "
                 "('cuda_version', '%s'), ('cudnn_version', '%s'), ('is_cuda_build', %s), ('is_rocm_build', False)])\n")
ORT_BUILD_INFO = "package_name = 'onnxruntime-gpu'\n__version__ = '%s'\ncuda_version = '%s'\ncudnn_version = '9'\n"


def tensorflow(site: Path, version="2.20.0", cuda="12.5.1", cudnn="9", cuda_build=True, and_cuda=True):
    requires = ['nvidia-cublas-cu12==12.5.3.2; extra == "and-cuda"', 'nvidia-cudnn-cu12==9.3.0.75; extra == "and-cuda"'] if and_cuda else []
    return dist(site, "tensorflow", version, requires, {
        "tensorflow/python/platform/build_info.py": TF_BUILD_INFO % (cuda, cudnn, cuda_build)})


# the nvidia wheels jax[cuda12] brings besides cuDNN, with the library files XLA opens (the jax-cuda12 runtime row of
# data/loader_search.json); versions as the with-cuda extra's floors allow
JAX_CUDA12_WHEELS = {
    "nvidia-cuda-runtime-cu12==12.9.79": ("nvidia/cuda_runtime/lib/libcudart.so.12",),
    "nvidia-cublas-cu12==12.9.1.4": ("nvidia/cublas/lib/libcublas.so.12", "nvidia/cublas/lib/libcublasLt.so.12"),
    "nvidia-cufft-cu12==11.4.1.4": ("nvidia/cufft/lib/libcufft.so.11",),
    "nvidia-cusolver-cu12==11.7.5.82": ("nvidia/cusolver/lib/libcusolver.so.11",),
    "nvidia-cusparse-cu12==12.5.10.65": ("nvidia/cusparse/lib/libcusparse.so.12",),
    "nvidia-nccl-cu12==2.27.7": ("nvidia/nccl/lib/libnccl.so.2",),
}


# the nvidia wheels tensorflow[and-cuda] 2.21.0 brings besides cuDNN whose libraries TSL opens (the tensorflow runtime
# row of data/loader_search.json), at the floors of its setup.py (tests/recorded/wheel-tensorflow-2.21.0-setup-pins.txt),
# each with its library file where the wheel puts it (empty stand-ins)
TF_CUDA12_WHEELS = {
    "nvidia-cuda-runtime-cu12==12.5.82": ("nvidia/cuda_runtime/lib/libcudart.so.12",),
    "nvidia-cublas-cu12==12.5.3.2": ("nvidia/cublas/lib/libcublas.so.12", "nvidia/cublas/lib/libcublasLt.so.12"),
    "nvidia-cufft-cu12==11.2.3.61": ("nvidia/cufft/lib/libcufft.so.11",),
    "nvidia-cusolver-cu12==11.6.3.83": ("nvidia/cusolver/lib/libcusolver.so.11",),
    "nvidia-cusparse-cu12==12.5.1.3": ("nvidia/cusparse/lib/libcusparse.so.12",),
    "nvidia-cuda-cupti-cu12==12.5.82": ("nvidia/cuda_cupti/lib/libcupti.so.12",),
    "nvidia-nccl-cu12==2.27.7": ("nvidia/nccl/lib/libnccl.so.2",),
}


# CUDA 13's: one nvidia/cu13/lib folder for the toolkit's libraries (the jax-cuda13 plugin's RPATH and preloads)
JAX_CUDA13_WHEELS = {
    "nvidia-cuda-runtime==13.0.96": ("nvidia/cu13/lib/libcudart.so.13",),
    "nvidia-cublas==13.1.0.3": ("nvidia/cu13/lib/libcublas.so.13", "nvidia/cu13/lib/libcublasLt.so.13"),
    "nvidia-cufft==12.0.0.61": ("nvidia/cu13/lib/libcufft.so.12",),
    "nvidia-cusolver==12.0.4.66": ("nvidia/cu13/lib/libcusolver.so.12",),
    "nvidia-cusparse==12.6.3.3": ("nvidia/cu13/lib/libcusparse.so.12",),
    "nvidia-nccl-cu13==2.28.3": ("nvidia/nccl/lib/libnccl.so.2",),
}


def jax_cuda(site: Path, build: Path, major=12, plugin=True, pjrt=True, wheels=True) -> None:
    """``pip install "jax[cuda12]"`` without its cuDNN wheel: jax and jaxlib, the jax-cuda12-plugin with its real
    METADATA (tests/recorded/wheel-jax-cuda12-plugin-0.10.2-METADATA.txt: it requires nvidia-cudnn-cu12>=9.8 in its
    with-cuda extra), the jax-cuda12-pjrt whose xla_cuda_plugin.so is an ELF file built here with the real wheel's
    DT_RPATH (tests/recorded/wheel-jax-cuda12-pjrt-0.12.0.1-dynamic.txt) and no NEEDED CUDA library, and (``wheels``)
    the other nvidia wheels of that extra (:data:`JAX_CUDA12_WHEELS`, empty stand-ins for their library files).
    ``major`` 13: the same of ``jax[cuda13]`` (tests/recorded/wheel-jax-cuda13-*: nvidia-cudnn-cu13>=9.12.0.46, an RPATH
    on nvidia/cu13/lib, :data:`JAX_CUDA13_WHEELS`)."""
    from builders import recorded
    from elf_builders import build_library

    dist(site, "jax", "0.10.2", requires=["jaxlib<=0.10.2,>=0.10.2"])
    dist(site, "jaxlib", "0.10.2", requires=["scipy>=1.14", "numpy>=2.0", "ml_dtypes>=0.5.0"])
    if plugin:
        info = dist(site, "jax-cuda%d-plugin" % major, "0.10.2", requires=["jax-cuda%d-pjrt==0.10.2" % major])
        for name in ("METADATA", "RECORD"):  # the real wheel's (its RECORD names modules not laid out here)
            (info / name).write_text(recorded("wheel-jax-cuda%d-plugin-0.10.2-%s.txt" % (major, name)))
    if pjrt:
        release = {12: "0.12.0.1", 13: "0.12.1"}[major]
        dynamic = recorded("wheel-jax-cuda%d-pjrt-%s-dynamic.txt" % (major, release))
        rpath = next(line for line in dynamic.splitlines() if "(RPATH)" in line).split("[", 1)[1].rstrip("]")
        so = build_library(build, "xla_cuda_plugin.so", runpath=rpath, old_dtags=True)
        info = dist(site, "jax-cuda%d-pjrt" % major, release, files={"jax_plugins/xla_cuda%d/__init__.py" % major: "# the plugin's module\n"},
                    binary={"jax_plugins/xla_cuda%d/xla_cuda_plugin.so" % major: so.read_bytes()})
        if major == 12:  # the real wheel's METADATA and RECORD (recorded for CUDA 12)
            for name in ("METADATA", "RECORD"):
                (info / name).write_text(recorded("wheel-jax-cuda12-pjrt-0.12.0.1-%s.txt" % name))
    for spec, files in ({12: JAX_CUDA12_WHEELS, 13: JAX_CUDA13_WHEELS}[major] if wheels else {}).items():
        name, version = spec.split("==")
        dist(site, name, version, files={f: "" for f in files})


def tensorflow_cuda(site: Path, build: Path, version="2.21.0") -> Path:
    """``pip install tensorflow`` (without its and-cuda extra: no nvidia wheel) of the real tensorflow 2.21.0 wheel's
    layout: its build_info.py (tests/recorded/wheel-tensorflow-2.21.0-build_info.txt: CUDA 12.5.1, cuDNN 9), its
    METADATA's Requires-Dist lines (the and-cuda extra's nvidia-cudnn-cu12<10.0,>=9.3.0.75 among them) and a
    tensorflow/libtensorflow_framework.so.2 built here with the real wheel's DT_RUNPATH, as readelf printed it
    (tests/recorded/wheel-tensorflow-2.21.0-dynamic.txt), and no NEEDED CUDA library. Returns the library's path."""
    from builders import recorded
    from elf_builders import build_library

    dynamic = recorded("wheel-tensorflow-2.21.0-dynamic.txt")
    runpath = next(line for line in dynamic.splitlines() if "(RUNPATH)" in line).split("[", 1)[1].rstrip("]")
    so = build_library(build, "libtensorflow_framework.so.2", soname="libtensorflow_framework.so.2", runpath=runpath)
    requires = [line.split(":", 1)[1].strip() for line in recorded("wheel-tensorflow-2.21.0-METADATA-requires.txt").splitlines()
                if line.startswith("Requires-Dist:")]
    dist(site, "tensorflow", version, requires, {"tensorflow/python/platform/build_info.py": recorded("wheel-tensorflow-2.21.0-build_info.txt")},
         binary={"tensorflow/libtensorflow_framework.so.2": so.read_bytes()})
    return site / "tensorflow" / "libtensorflow_framework.so.2"
