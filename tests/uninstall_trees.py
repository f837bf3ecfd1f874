"""Fake roots that look like real CUDA installs, for the uninstall tests (loaded by path from them).

The dpkg status stanzas for the CUDA packages follow the layout of a real status file (see
tests/recorded/dpkg-status-real, recorded on a Debian 12 machine): they are BUILT here in that format, with
the package names NVIDIA's repository uses (cuda-nvcc-12-4, cuda-cudart-12-4, cuda-toolkit-12-4, seen in
apt output in NVIDIA/nvidia-container-toolkit#883 for 12-8), not recorded from a machine with CUDA debs.
"""

import hashlib
import os
from pathlib import Path
from typing import Dict

WEIRD = "/opt/we ird'q\"$HOME`echo pwned`;x/cuda-11.8"

RUNFILE_UNINSTALLER = """#!/bin/sh
# stands for NVIDIA's cuda-uninstaller: removes what it installed and leaves the rest, like the real one
d=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$d/lib64" "$d/include" "$d/version.json" "$d/bin/nvcc"
printf 'cuda-uninstaller\\t%s\\n' "$d" >> "$UNINSTALL_LOG"
rm -f "$0"
"""


RECORDED = Path(__file__).parent / "recorded"


def recorded(name: str) -> str:
    """A recorded real output minus its provenance header (tests/ is not importable: conftest's rule)."""
    text = (RECORDED / name).read_text(encoding="utf-8")
    marker = "\n# ---\n"
    return text.split(marker, 1)[1] if text.startswith("# source:") and marker in text else text


def stanza(name, version, depends="", status="install ok installed", arch="amd64"):
    text = (
        "Package: %s\nStatus: %s\nPriority: optional\nSection: devel\nInstalled-Size: 100\n"
        "Maintainer: cudatools <cudatools@nvidia.com>\nArchitecture: %s\nVersion: %s\n" % (name, status, arch, version)
    )
    if depends:
        text += "Depends: %s\n" % depends
    return text + "Description: CUDA %s\n %s package\n" % (name, name)


def real_stanzas(recorded):
    return recorded("dpkg-status-real").strip() + "\n"


def runfile_118(root, where="usr/local", name=None):
    base = root.toolkit("11.8.89", where=where, name=name, runfile=False)
    (base / "bin" / "cuda-uninstaller").write_text(RUNFILE_UNINSTALLER)
    (base / "bin" / "cuda-uninstaller").chmod(0o755)
    root.file(str(base.relative_to(root.path)) + "/extras/demo_suite/README", "left behind by the uninstaller\n")
    return base


def deb_124(root, recorded):
    base = root.toolkit("12.4.131")
    root.file("usr/local/cuda-12.4/nvvm/bin/cicc", "x")
    root.file("usr/local/cuda-12.4/extras/mine.txt", "a file the user put there\n")
    status = real_stanzas(recorded) + "\n"
    status += stanza("cuda-nvcc-12-4", "12.4.131-1") + "\n"
    status += stanza("cuda-cudart-12-4", "12.4.127-1") + "\n"
    status += stanza("cuda-toolkit-12-4", "12.4.1-1", "cuda-nvcc-12-4 (>= 12.4.131), cuda-cudart-12-4") + "\n"
    status += stanza("cuda-toolkit-12-4-config-common", "12.4.127-1") + "\n"
    status += stanza("cuda-nvcc-12-1", "12.1.105-1", status="deinstall ok config-files") + "\n"
    status += stanza("nvidia-driver-550", "550.54.15-0ubuntu1") + "\n"
    status += stanza("libnvidia-compute-550", "550.54.15-0ubuntu1") + "\n"
    root.file("var/lib/dpkg/status", status)
    lists = {
        "cuda-nvcc-12-4": ["/usr", "/usr/local", "/usr/local/cuda-12.4", "/usr/local/cuda-12.4/bin", "/usr/local/cuda-12.4/bin/nvcc",
                           "/usr/local/cuda-12.4/nvvm", "/usr/local/cuda-12.4/nvvm/bin", "/usr/local/cuda-12.4/nvvm/bin/cicc",
                           "/usr/local/cuda-12.4/include", "/usr/local/cuda-12.4/include/cuda.h", "/usr/local/cuda-12.4/version.json"],
        "cuda-cudart-12-4:amd64": ["/usr/local/cuda-12.4", "/usr/local/cuda-12.4/lib64", "/usr/local/cuda-12.4/lib64/libcudart.so.12",
                                   "/usr/share/doc/cuda-cudart-12-4/copyright"],
        "cuda-toolkit-12-4": ["/usr/share/doc/cuda-toolkit-12-4"],
        "cuda-toolkit-12-4-config-common": ["/etc/ld.so.conf.d/988_cuda-12.conf"],
        "nvidia-driver-550": ["/usr/share/doc/nvidia-driver-550"],
    }
    root.dir("var/lib/dpkg/info")
    for name, paths in lists.items():
        root.file("var/lib/dpkg/info/%s.list" % name, "/.\n" + "\n".join(paths) + "\n")
    root.file("var/lib/dpkg/info/libc6:amd64.list", recorded("dpkg-list-libc6-amd64"))
    root.file("etc/ld.so.conf.d/988_cuda-12.conf", "/usr/local/cuda-12.4/targets/x86_64-linux/lib\n")
    return base


def alternatives_124(root):
    root.file("var/lib/dpkg/alternatives/cuda", "auto\n/usr/local/cuda\n\n/usr/local/cuda-12.4\n124\n")
    root.link("etc/alternatives/cuda", "/usr/local/cuda-12.4")
    root.link("usr/local/cuda", "/etc/alternatives/cuda")


RC_BASHRC = """# ~/.bashrc
alias ll='ls -l'
export PATH=/usr/local/cuda-11.8/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda-12.4/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export EDITOR=vim
"""
RC_ZSHRC = """export PATH=/usr/local/cuda-11.80/bin:$PATH
if [ -d /usr/local/cuda-11.8 ]; then
  export CUDA_HOME=/usr/local/cuda-11.8
fi
"""
RC_ENVIRONMENT = 'PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/cuda-11.8/bin"\n'


def rc_files(root):
    root.file("root/.bashrc", RC_BASHRC)
    root.file("root/.zshrc", RC_ZSHRC)
    root.file("etc/environment", RC_ENVIRONMENT)
    root.file("etc/profile.d/cuda.sh", "export PATH=/usr/local/cuda-11.8/bin:$PATH\n")
    root.file("root/.config/fish/config.fish", "set -gx PATH /opt/other/bin $PATH\n")


def ldconf_118(root):
    root.file("etc/ld.so.conf.d/cuda-11-8.conf", "/usr/local/cuda-11.8/lib64\n")
    root.file("etc/ld.so.conf.d/mixed.conf", "# local libs\n/opt/mylib/lib\n/usr/local/cuda-11.8/extras/CUPTI/lib64\n")
    root.file("etc/ld.so.conf.d/x86_64-linux-gnu.conf", "/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n")


def conda_env(root, prefix="opt/conda/envs/cu121"):
    import json

    root.executable(prefix + "/bin/nvcc", "#!/bin/sh\necho 'Cuda compilation tools, release 12.1, V12.1.105'\n")
    root.file(prefix + "/lib/libcudart.so.12", "")
    for name, ver in (("cuda-nvcc", "12.1.105"), ("cuda-cudart", "12.1.105"), ("libcublas", "12.1.3.1"), ("python", "3.11.8"), ("numpy", "1.26.4")):
        root.file("%s/conda-meta/%s-%s-0.json" % (prefix, name, ver), json.dumps({"name": name, "version": ver, "files": []}))
    return "/" + prefix


def pip_venv(root, log, prefix="root/venvs/old"):
    site = prefix + "/lib/python3.11/site-packages"
    root.file(site + "/nvidia/cuda_nvcc/bin/nvcc", "")
    for dist, ver in (("nvidia_cuda_nvcc_cu12", "12.4.131"), ("nvidia_cudnn_cu12", "9.1.0.70")):
        name = dist.replace("_", "-")
        root.file("%s/%s-%s.dist-info/METADATA" % (site, dist, ver), "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, ver))
    root.file(site + "/torch/version.py", "__version__ = '2.3.0+cu121'\n")
    root.file(site + "/torch-2.3.0.dist-info/METADATA", "Name: torch\nVersion: 2.3.0\n")
    root.executable(prefix + "/bin/python3", "#!/bin/sh\nprintf 'python3' >> %s\nfor a in \"$@\"; do printf '\\t%%s' \"$a\" >> %s; done\nprintf '\\n' >> %s\n" % (log, log, log))
    return "/" + site + "/nvidia/cuda_nvcc"


def stub_bin(folder: Path, log: Path, names=("apt-get", "dnf", "update-alternatives", "ldconfig", "conda", "nvidia-uninstall")) -> str:
    """Commands that only log their arguments (tab-separated, one call per line)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        p = folder / name
        p.write_text("#!/bin/sh\nprintf '%%s' %s >> \"$UNINSTALL_LOG\"\nfor a in \"$@\"; do printf '\\t%%s' \"$a\" >> \"$UNINSTALL_LOG\"; done\nprintf '\\n' >> \"$UNINSTALL_LOG\"\n" % name)
        p.chmod(0o755)
    return "%s:/usr/bin:/bin" % folder


def snapshot_tree(root: Path) -> Dict[str, str]:
    """path (relative) -> hash of the content, or 'link:TARGET', or 'dir'."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def read_log(log: Path):
    if not log.exists():
        return []
    return [tuple(line.split("\t")) for line in log.read_text().splitlines()]
