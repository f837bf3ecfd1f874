"""``python -m torch.utils.collect_env`` output (pasted into nearly every torch bug report) -> values.

Sample (torch 2.x; older releases print ``Yes``/``No`` and full CUDA versions such as ``9.0.176``; the issue
templates quote it with ``> `` or list it with ``- ``)::

    PyTorch version: 2.0.1+cu117
    CUDA used to build PyTorch: 11.7
    OS: Ubuntu 22.04.2 LTS (x86_64)
    Python platform: Linux-5.15.90.1-microsoft-standard-WSL2-x86_64-with-glibc2.35
    Is CUDA available: True
    CUDA runtime version: 11.7.99          <- what `nvcc --version` said, not torch's CUDA
    GPU models and configuration:
    GPU 0: NVIDIA GeForce RTX 3090
    Nvidia driver version: 530.41.03
    cuDNN version: Probably one of the following:
    /usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.0
    [pip3] torch==2.0.1

Pure, never raises, linear in its input (:mod:`cudaenv.parse._lines` bounds the lines).
"""

import re
from typing import List, NamedTuple, Optional, Tuple

from cudaenv.parse._lines import is_uint, lines, Text
from cudaenv.core.version import compare_versions, parse_version


_KEYS = {
    "pytorch version": "torch",
    "cuda used to build pytorch": "torch_cuda",
    "os": "os",
    "python platform": "python_platform",
    "is cuda available": "cuda_available",
    "cuda runtime version": "runtime",
    "gpu models and configuration": "gpus",
    "nvidia driver version": "driver",
    "cudnn version": "cudnn",
    "python version": "python",
    "rocm used to build pytorch": "rocm",
    "hip runtime version": "hip",
}
_SAYS_NOTHING = ("could not collect", "n/a", "none", "no cuda", "")
_GPU_LINE = re.compile(r"^GPU (\d{1,3}): (.{1,200}?)(?: \(UUID: [^)]{1,120}\))?$")
_CUDNN_LIB = re.compile(r"(?:libcudnn(?:_\w{1,30})?\.so\.|libcudnn(?:_\w{1,30})?\.(\d{1,2})\.dylib|cudnn\w{0,30}?64_)(\d{1,2}(?:\.\d{1,4}){0,3})")
_PIP_TORCH = re.compile(r"^\[(?:pip\d?|conda)\]\s{1,20}(?:torch|pytorch)(?:==|\s{1,40})(\d{1,4}(?:\.\d{1,4}){1,3}(?:\+\w{1,20})?)(?:\s|$)")
_TORCH_VERSION = re.compile(r"^\d{1,4}(?:\.\d{1,4}){1,3}(?:\.?[a-z]{1,5}\d{0,9})?(?:\+[\w.]{1,30})?$")  # 2.8.0.dev20250528+cpu, 1.7.0a0+9ddd3df


class CollectEnv(NamedTuple):
    torch_version: Optional[str]  # "2.0.1+cu117"
    torch_cuda: Optional[str]  # "11.7" (torch.version.cuda); None for a CPU build or when not collected
    cpu_build: bool  # "CUDA used to build PyTorch: None"
    cuda_available: Optional[bool]
    toolkit_version: Optional[str]  # "CUDA runtime version": nvcc's version ("11.7.99")
    driver_version: Optional[str]
    cudnn_version: Optional[str]  # the newest cuDNN it lists ("8.9.0", or "8" from a Windows dll name)
    gpus: Tuple[Tuple[int, str], ...]  # (index, name)
    platform: Optional[str]  # linux | windows | wsl2 | macos
    machine: Optional[str]  # "x86_64", "arm64", "aarch64" from the OS line
    python_version: Optional[str]  # "3.10.11"
    rocm: Optional[str]


def _key_value(line: str) -> Tuple[Optional[str], str]:
    s = line[2:] if line.startswith(("- ", "* ")) else line
    key, sep, value = s.partition(":")
    if not sep:
        return None, ""
    return _KEYS.get(key.strip().strip("*").strip().lower()), value.strip()


def _boolean(value: str) -> Optional[bool]:
    v = value.strip().lower()
    return True if v in ("true", "yes") else False if v in ("false", "no") else None


def _platform(os_line: Optional[str], py_platform: Optional[str]) -> Optional[str]:
    both = " ".join(x for x in (os_line, py_platform) if x)
    low = both.lower()
    if not low:
        return None
    if "microsoft-standard" in low or "wsl2" in low:
        return "wsl2"
    if "windows" in low:
        return "windows"
    if "macos" in low or "mac osx" in low or "darwin" in low:
        return "macos"
    if "linux" in low or any(d in low for d in ("ubuntu", "debian", "centos", "red hat", "fedora", "rocky", "arch", "suse", "alma")):
        return "linux"
    return None


def _machine(os_line: Optional[str]) -> Optional[str]:
    m = re.search(r"\((x86_64|amd64|arm64|aarch64|ppc64le)\)\s*$", os_line or "", re.IGNORECASE)
    return m.group(1).lower() if m else None


def parse_collect_env(text: Text) -> Optional[CollectEnv]:
    """The facts of a collect_env paste, or None when the text holds none of its key lines (see the module)."""
    values = {}
    gpus: List[Tuple[int, str]] = []
    cudnn: Optional[str] = None
    pip_torch: Optional[str] = None
    section = None
    for line in lines(text):
        key, value = _key_value(line)
        if key is not None and key not in values:
            values[key] = value
            section = key
            if key == "gpus":
                _gpu(value, gpus)
            elif key == "cudnn":
                cudnn = _newest_cudnn(value, cudnn)
            continue
        if section == "gpus" and line.startswith("GPU "):
            _gpu(line, gpus)
            continue
        if section == "cudnn" and ("cudnn" in line.lower()):
            cudnn = _newest_cudnn(line, cudnn)
            continue
        if key is None and ":" in line:
            section = None
        m = _PIP_TORCH.match(line)
        if m and pip_torch is None:
            pip_torch = m.group(1)
    if not (set(values) & {"torch", "torch_cuda", "cuda_available", "gpus", "runtime", "cudnn"}):
        return None
    torch = values.get("torch", "")
    torch = torch if _TORCH_VERSION.match(torch) else pip_torch
    built = values.get("torch_cuda", "")
    cuda = parse_version(built)
    runtime = values.get("runtime", "")
    runtime_version = parse_version(runtime.split()[0]) if runtime.split() else None
    driver = values.get("driver", "")
    os_line, py_platform = values.get("os"), values.get("python_platform")
    python = (values.get("python") or "").split()
    rocm = parse_version(values.get("rocm", "").split("-", 1)[0])  # "3.7.20315-077bcfa0"
    return CollectEnv(
        torch_version=torch,
        torch_cuda=cuda,
        cpu_build=built.strip().lower() == "none",
        cuda_available=_boolean(values.get("cuda_available", "")),
        toolkit_version=runtime_version,
        driver_version=parse_version(driver.split()[0]) if driver.split() else None,
        cudnn_version=cudnn,
        gpus=tuple(gpus),
        platform=_platform(os_line, py_platform),
        machine=_machine(os_line),
        python_version=parse_version(python[0]) if python else None,
        rocm=rocm,
    )


def _gpu(text: str, out: List[Tuple[int, str]]) -> None:
    m = _GPU_LINE.match(text.strip())
    if m and is_uint(m.group(1), 3) and len(out) < 64:
        out.append((int(m.group(1)), m.group(2).strip()))


def _newest_cudnn(text: str, best: Optional[str]) -> Optional[str]:
    value = text.strip()
    found = parse_version(value)
    if found is None:
        m = _CUDNN_LIB.search(value)
        if m:
            found = parse_version(m.group(2)) or parse_version(m.group(1) or "")
    if found is None:
        return best
    return found if best is None or compare_versions(found, best) > 0 else best
