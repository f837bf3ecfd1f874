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
