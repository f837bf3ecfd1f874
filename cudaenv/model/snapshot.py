"""The frozen snapshot of a machine: what the probes saw, and the JSON contract (``schema_version`` 1).

Probes build these records; diagnosis, recommendation and planning read them; renderers print them.
Versions are strings ("12.4", "550.54.15"); absent facts are ``None``; every list is a tuple.
``Snapshot.to_dict()`` is the public JSON (documented in README.md); ``Snapshot.from_dict`` reads it back, checking
the version (both are the one codec, :mod:`cudaenv.model.codec`; the doctor's whole output is
:class:`cudaenv.model.reports.DoctorReport`).
"""

from __future__ import annotations

from cudaenv.model.record import Record, factory
from cudaenv.model.toolkits import ActiveToolkit, CudaSymlink, Note, Toolkit  # noqa: F401 - the snapshot's records too

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are strings at run time: typing is not imported on the fast path
    from typing import Dict, Optional, Tuple



class Jetson(Record):
    """A Jetson (L4T) board: the driver, CUDA and torch come with its JetPack release, not from the usual indexes."""

    l4t: Optional[str] = None  # L4T release "35.4.1" (/etc/nv_tegra_release, else the L4T kernel module's version)
    jetpack: Optional[str] = None  # "5.1.2" where data/jetson.json knows the L4T release
    soc: Optional[str] = None  # "tegra234" from the device tree
    signals: Tuple[str, ...] = ()  # "/etc/nv_tegra_release", "/proc/device-tree/compatible", "l4t-driver"


class Platform(Record):
    system: str  # linux | windows | darwin
    distro: Optional[str] = None  # PRETTY_NAME from /etc/os-release: "Ubuntu 22.04.4 LTS"
    distro_id: Optional[str] = None  # ID: "ubuntu"
    distro_version: Optional[str] = None  # VERSION_ID: "22.04"
    distro_like: Tuple[str, ...] = ()  # ID_LIKE, closest first: ("ubuntu", "debian") on Pop!_OS (cudaenv.facts.distro)
    kernel: Optional[str] = None  # "5.15.153.1-microsoft-standard-WSL2"
    machine: Optional[str] = None  # x86_64 | aarch64 | AMD64
    wsl: Optional[int] = None  # None | 1 | 2
    wsl_signals: Tuple[str, ...] = ()  # what said WSL: "osrelease", "WSLInterop", "/dev/dxg", ...
    container: Optional[str] = None  # docker | podman | kubernetes | containerd | lxc | None
    container_signals: Tuple[str, ...] = ()
    nvidia_visible_devices: Optional[str] = None  # as set (container runtime)
    dev_nvidia: Tuple[str, ...] = ()  # /dev/nvidia* nodes present ("/dev/nvidia0", "/dev/nvidiactl")
    dev_dxg: bool = False  # WSL2's GPU paravirtualisation device
    pci_nvidia_devices: Tuple[str, ...] = ()  # PCI addresses of vendor 0x10de display/3D controllers in /sys
    pci_amd_devices: Tuple[str, ...] = ()  # PCI addresses of vendor 0x1002 display controllers (a ROCm signal)
    secure_boot: Optional[bool] = None  # from efivars when readable
    nouveau_loaded: bool = False  # /sys/module/nouveau present
    libcuda: Tuple[str, ...] = ()  # every libcuda.so* in the system library dirs and ld.so.conf dirs (WSL2: one outside /usr/lib/wsl/lib shadows it)
    jetson: Optional[Jetson] = None  # a Jetson/L4T board (aarch64 with a Tegra device tree or nv_tegra_release)
    pid_namespace: Optional[str] = None  # "initial" | "container" (its own PID namespace) | None (not readable)
    root_user: Optional[bool] = None  # the doctor ran as root (None under --root: another system's user is not known)
    sudo: Optional[bool] = None  # a sudo program is on PATH (None under --root)


class Driver(Record):
    version: Optional[str]  # userspace driver version (NVML/nvidia-smi), else the kernel module's
    cuda_version: Optional[str] = None  # highest CUDA the driver supports: "12.4"
    kernel_module: Optional[str] = None  # open | proprietary | None
    kernel_module_version: Optional[str] = None  # /proc/driver/nvidia/version or /sys/module/nvidia/version
    source: str = "unknown"  # nvml | nvidia-smi | proc | sys | wsl | env
    nvidia_smi: Optional[str] = None  # the nvidia-smi that answered (or was tried)
    wsl_windows_side: bool = False  # WSL2: the driver is the Windows host's


class ToolStatus(Record):
    """How a driver tool answered: NVML (in a child process) or nvidia-smi."""

    tool: str  # "nvml" | "nvidia-smi"
    path: Optional[str] = None  # the library or program tried
    status: str = "ok"  # ok | missing | timeout | failed | not run (an image's driver under --root: read, never run)
    failure: Optional[str] = None  # driver-not-loaded | driver-library-mismatch | gpu-lost | no-devices | no-permission | None
    message: Optional[str] = None  # the first line of the failure text, verbatim
    seconds: Optional[float] = None


class Gpu(Record):
    index: int  # nvidia-smi / NVML index (PCI bus order)
    name: Optional[str] = None
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None
    memory_total_mib: Optional[int] = None
    memory_used_mib: Optional[int] = None
    compute_capability: Optional[str] = None  # "8.6"
    mig_uuids: Tuple[str, ...] = ()


class GpuProcess(Record):
    pid: int
    name: Optional[str] = None
    used_memory_mib: Optional[int] = None
    gpu_uuid: Optional[str] = None
    gpu_index: Optional[int] = None
    owner: Optional[str] = None  # user name from /proc/PID/status when readable
    state: Optional[str] = None  # "running" | "zombie" | "gone" (no such pid) | "elsewhere" (a pid of another PID namespace: a container sees host pids) | None (not checked)


class DeviceMapping(Record):
    logical: int  # cuda:N
    physical: int  # nvidia-smi index
    uuid: Optional[str] = None


class VisibleProblem(Record):
    kind: str  # a code of cudaenv.parse.visible_devices.KINDS: "out-of-range", "duplicate", "order-differs", ...
    entry: Optional[str] = None  # the entry it is about (cut to 200 characters)
    message: str = ""  # the sentence for people (also in VisibleDevices.problems)


class VisibleDevices(Record):
    cuda_visible_devices: Optional[str] = None  # None = unset (all GPUs)
    device_order: Optional[str] = None  # CUDA_DEVICE_ORDER as set
    mapping: Tuple[DeviceMapping, ...] = ()
    entries: Tuple[str, ...] = ()  # the comma-separated entries as written
    invalid_entry: Optional[str] = None  # the first entry CUDA rejected (it and all after it are ignored)
    problems: Tuple[str, ...] = ()  # human sentences: "entry 'GPU-12' matches no GPU", "duplicate entry 1"
    issues: Tuple[VisibleProblem, ...] = ()  # the same problems, structured: match on .kind, never on the sentence


class Cudnn(Record):
    version: Optional[str]  # "9.1.0"
    header: Optional[str] = None
    source: str = "unknown"  # system | toolkit | CUDNN_PATH | pip | windows | conda
    major: Optional[int] = None
    toolkit: Optional[str] = None  # the toolkit path whose include dir holds it


class TorchDevice(Record):
    name: Optional[str] = None
    capability: Optional[str] = None  # "8.6"
    total_memory_mib: Optional[int] = None


class Torch(Record):
    python: Optional[str]  # the interpreter probed
    installed: bool = False
    version: Optional[str] = None  # "2.13.0+cpu"
    cuda: Optional[str] = None  # torch.version.cuda: "12.6" or None
    hip: Optional[str] = None
    cuda_available: Optional[bool] = None  # None when the dynamic pass did not run
    device_count: Optional[int] = None
    arch_list: Tuple[str, ...] = ()  # get_arch_list(): ("sm_50", ..., "compute_90")
    devices: Tuple[TorchDevice, ...] = ()
    cudnn: Optional[str] = None  # "91002" as torch reports it, normalised to "9.10.2"
    nccl: Optional[str] = None
    installer: Optional[str] = None  # pip | uv | conda | poetry | None
    python_version: Optional[str] = None  # "3.11.7"
    python_source: Optional[str] = None  # --python | VIRTUAL_ENV | CONDA_PREFIX | PATH
    location: Optional[str] = None  # site-packages dir holding torch
    requires: Tuple[str, ...] = ()  # nvidia-* requirements from the dist metadata
    nvidia_packages: Tuple[str, ...] = ()  # installed nvidia-* distributions "nvidia-cudnn-cu12==9.1.0.70"
    companions: Tuple[str, ...] = ()  # installed torchvision / torchaudio: "torchvision==0.28.0"
    dynamic: bool = False  # True when torch was imported in the child
    import_error: Optional[str] = None  # the exception text when `import torch` failed
    cuda_error: Optional[str] = None  # the warning/exception text when CUDA init failed
    externally_managed: bool = False  # PEP 668 marker on a system interpreter
    in_virtualenv: bool = False
    platform_tag: Optional[str] = None  # sysconfig.get_platform() of the target interpreter
    site_packages: Tuple[str, ...] = ()  # the target interpreter's site-packages dirs (for pip nvidia-* wheels)
    executable: Optional[str] = None  # sys.executable as the interpreter reported it (a pyenv shim resolved to the real one)
    libc: Optional[str] = None  # os.confstr("CS_GNU_LIBC_VERSION") in that interpreter: "glibc 2.36" (conda's __glibc)
    site_code_skipped: Tuple[str, ...] = ()  # doctor --quick: the .pth files with import lines and the sitecustomize/usercustomize its read did not run


class PythonEnv(Record):
    """Who made the probed interpreter's environment, read from its files (``probes/pyenv.py``): a uv or plain venv
    (``pyvenv.cfg``), a conda env (``conda-meta/``), a pixi env (``.pixi/envs/NAME`` with its manifest above)."""

    kind: str  # uv | venv | virtualenv | conda | pixi | system
    prefix: Optional[str] = None  # the environment's folder (sys.prefix)
    tool: Optional[str] = None  # what made it: uv | virtualenv | conda | mamba | pixi | ...
    tool_version: Optional[str] = None  # pyvenv.cfg's uv = 0.13.9; conda-meta/history's "# conda version: 24.11.3"
    name: Optional[str] = None  # a conda env's folder name, a pixi environment's name ("default")
    manifest: Optional[str] = None  # a pixi env's pixi.toml or pyproject.toml ([tool.pixi])
    manifest_cuda: Optional[str] = None  # its [system-requirements] cuda (or a platform's cuda = "12.0")
    channels: Tuple[str, ...] = ()  # the manifest's channels
    cuda_packages: Tuple[str, ...] = ()  # conda-meta's CUDA packages "cuda-version=12.6=h7480c83_3", "pytorch=2.7.1=cuda126_..."


class Framework(Record):
    """A CUDA consumer besides torch installed in the probed interpreter (data/frameworks.json), read without importing it."""

    package: str  # normalized distribution name: "onnxruntime-gpu"
    version: Optional[str] = None  # METADATA's Version: "1.23.2", "2.8.0+cu128"
    location: Optional[str] = None  # the site-packages folder holding it
    cuda: Optional[str] = None  # the CUDA it was built for: "12.8", or a major "12"; None when nothing says
    cudnn: Optional[str] = None  # the cuDNN it was built for, where its files say: "9"
    cuda_from: Optional[str] = None  # what said it: name | build-info | local-tag | requires | needed
    gpu_build: Optional[bool] = None  # False: a CPU-only build; None: not known
    nvidia_requires: Tuple[str, ...] = ()  # the nvidia-* projects its Requires-Dist names (any extra)
    libraries: Tuple[str, ...] = ()  # shared libraries its RECORD lists that link CUDA (site-packages relative)
    needed: Tuple[str, ...] = ()  # the CUDA libraries those libraries' NEEDED entries ask for: "libcudart.so.12"
    # the cuDNN its runtime opens itself with dlopen (data/loader_search.json's ``runtime`` rows: XLA's plugin, a CUDA jaxlib)
    cudnn_soname: Optional[str] = None  # the name it opens, of the major it was built for: "libcudnn.so.9"
    cudnn_path: Optional[str] = None  # the file it gets; None: found nowhere
    cudnn_via: Optional[str] = None  # preload (its __init__ loads the nvidia wheel's file by path) | rpath | LD_LIBRARY_PATH | runpath | ld.so.cache | default
    cudnn_version: Optional[str] = None  # that file's version: from its name, or the nvidia-cudnn wheel holding it
    cudnn_other: Tuple[str, ...] = ()  # libcudnn files of other majors its search finds instead: "/usr/lib/x86_64-linux-gnu/libcudnn.so.8"
    cudnn_wheels: Tuple[str, ...] = ()  # the nvidia-cudnn wheels installed: "nvidia-cudnn-cu12==8.9.7.29"
    cudnn_hidden: Tuple[str, ...] = ()  # files of that name in nvidia/cudnn/lib of site-packages before the preloaded one on sys.path, which Python's import of nvidia passes over


class LoadedLibrary(Record):
    """One CUDA library a consumer's shared library needs, resolved as the Linux dynamic loader would."""

    consumer: str  # "torch", or a framework's package name
    object: str  # the library whose NEEDED entry this is: ".../torch/lib/libtorch_cuda.so"
    needed: str  # the NEEDED entry: "libcudart.so.12"
    path: Optional[str] = None  # the file the loader takes; None when it finds none
    via: Optional[str] = None  # rpath | LD_LIBRARY_PATH | runpath | ld.so.cache | default; Windows: a step of data/dll_search.json (dll-dir, PATH, loaded, ...)
    version: Optional[str] = None  # from the file's final name: libcudart.so.12.8.90 -> "12.8.90"
    real: Optional[str] = None  # the file after following links
    others: Tuple[str, ...] = ()  # files of that name further down the search (the ones it shadows); Windows, one found nowhere: copies in a toolkit folder its search does not reach
    from_wheel: bool = False  # the file taken lies in a pip wheel (inside the interpreter's package folders)
    wheel_copy: Optional[str] = None  # the first of ``others`` that lies in a pip wheel
    loaded_by: str = "needed"  # needed: a NEEDED entry of ``object``; dlopen: ``object`` loads it at run time; plugin: NCCL's network plugin
    # Windows, via "loaded": the DLL of that name another consumer's import loaded earlier in the process is used
    # (whatever its folder); ``first_loaded_by`` that consumer, ``own`` the file this consumer's own search takes (None: none)
    first_loaded_by: Optional[str] = None
    own: Optional[str] = None


class TorchExtension(Record):
    """A compiled torch extension module (a shared library linking torch's libc10/libtorch*) checked against the
    installed torch: its undefined symbols in torch's C++ namespaces, looked up in torch's exported ones."""

    package: str  # the distribution that ships it: "flash-attn"
    version: Optional[str] = None
    object: str = ""  # the module's path: ".../flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"
    torch_needed: Tuple[str, ...] = ()  # its NEEDED entries on torch's libraries: "libc10.so", "libtorch_cuda.so"
    cuda: Optional[str] = None  # the CUDA major its NEEDED libcudart.so.N says
    torch_pin: Optional[str] = None  # the torch version its Requires-Dist pins with ==, where it does: "2.6.0"
    checked: int = 0  # its undefined symbols in torch's namespaces that were looked up
    missing: Tuple[str, ...] = ()  # those torch does not export (mangled; at most 8)
    missing_count: int = 0  # how many torch does not export
    cxx11_abi: Optional[bool] = None  # the std::string ABI its torch symbols spell (_GLIBCXX_USE_CXX11_ABI); None: not said
    torch_cxx11_abi: Optional[bool] = None  # the one torch's libc10 exports
    complete: bool = True  # False when a bound or an unreadable torch library left symbols unchecked


class FrameworkImport(Record):
    """A framework imported in a child of the probed Python (``doctor --import``), and what its own device check said."""

    package: str  # "onnxruntime-gpu"
    module: str  # what was imported: "onnxruntime"
    check: str = "import"  # the device check run: tensorflow | jax | onnxruntime | cupy | paddle | import (none)
    imported: Optional[bool] = None  # None: the child gave no answer (timed out, crashed, printed nothing)
    version: Optional[str] = None  # the module's __version__
    gpu_count: Optional[int] = None  # the GPUs its check saw (onnxruntime: 1 when the session got the CUDA provider)
    detail: Optional[str] = None  # its check's words: the devices, the session's providers
    error: Optional[str] = None  # the import's or the check's exception: "ImportError: ...: undefined symbol: ..."
    timed_out: bool = False


class XidGroup(Record):
    """One Xid code of the kernel log (``NVRM: Xid (PCI:0000:41:00): 79, ...``): how often, on which GPUs."""

    code: int  # the Xid number (data/xid.json says what it means)
    count: int = 1
    pci: Tuple[str, ...] = ()  # the PCI addresses it was logged for, as logged ("0000:41:00")
    first: str = ""  # the first such line, from "NVRM:" on (cut to 300 characters)


class GpuHealth(Record):
    """What the kernel log and the PCI bus say about GPUs that fail (read when a driver tool failed or NVML opens
    fewer GPUs than the PCI bus holds; from a paste in ``explain``)."""

    log: Optional[str] = None  # "journalctl -k" | "dmesg" | "paste" | None (no kernel log could be read)
    xids: Tuple[XidGroup, ...] = ()  # by code, in the order first logged
    fallen_off_bus: Tuple[str, ...] = ()  # PCI addresses of "GPU has fallen off the bus" lines
    unreachable: Tuple[str, ...] = ()  # NVIDIA PCI devices (/sys) that NVML or nvidia-smi did not list
    dcgmi: Optional[str] = None  # DCGM's dcgmi, where installed (the hand-off: dcgmi diag -r 1)


class GpuCondition(Record):
    """One GPU's condition as ``nvidia-smi -q`` reports it (ECC, retired pages, remapped rows, clock slowdowns, the
    persistence mode); None where the GPU or the driver does not say (``N/A``)."""

    pci_bus_id: Optional[str] = None  # "00000000:10:1C.0", as nvidia-smi -q heads the GPU's block
    ecc_mode: Optional[str] = None  # "Enabled" | "Disabled"
    ecc_volatile_uncorrected: Optional[int] = None  # uncorrectable ECC errors since the driver loaded
    ecc_aggregate_uncorrected: Optional[int] = None  # ... over the GPU's life
    retired_pages: Optional[int] = None  # pages retired for single- and double-bit ECC errors
    retirement_pending: Optional[bool] = None  # a page waits to be retired at the next reset ("Pending Page Blacklist")
    remapped_uncorrectable: Optional[int] = None  # rows remapped for uncorrectable errors (A100 and later)
    remap_pending: Optional[bool] = None  # a row remap waits for a GPU reset
    remap_failed: Optional[bool] = None  # a remap could not be done ("Remapping Failure Occurred")
    slowdowns: Tuple[str, ...] = ()  # the active clock reasons of HW_SLOWDOWNS ("HW Power Brake Slowdown", ...)
    persistence_mode: Optional[str] = None  # "Enabled" | "Disabled"


class PciDevice(Record):
    """An NVIDIA GPU as ``lspci`` (``-nn``, ``-vv``) describes it: ``rev ff`` (its config space reads all ones) and its
    PCIe link, capable against current (``LnkCap`` / ``LnkSta``); from a paste in ``explain``, or the link alone from
    sysfs in the doctor."""

    address: Optional[str] = None  # "01:00.0" / "0000:41:00.0" as lspci printed it; None for link lines pasted alone
    name: Optional[str] = None  # "NVIDIA Corporation GA100 [A100 SXM4 40GB]"
    revision: Optional[str] = None  # "a1"; "ff" when the config space reads all ones
    link_cap_speed: Optional[float] = None  # GT/s the link can run (LnkCap)
    link_cap_width: Optional[int] = None  # lanes it can use
    link_speed: Optional[float] = None  # GT/s it runs now (LnkSta)
    link_width: Optional[int] = None
    driver: Optional[str] = None  # "Kernel driver in use"
    source: str = "lspci"  # lspci (a paste) | sysfs (the doctor: /sys/bus/pci/devices/ADDR/*_link_*)


class EngineConfig(Record):
    """One container engine's GPU setup as its config file says it (Docker's daemon.json, containerd's or CRI-O's TOML)."""

    engine: str  # docker | docker-rootless | containerd | crio
    path: Optional[str] = None  # the file read
    readable: bool = True  # False: the file is there but is not what its format says
    runtimes: Tuple[str, ...] = ()  # the runtimes it registers ("nvidia", "runc")
    default_runtime: Optional[str] = None
    cgroup_driver: Optional[str] = None  # systemd | cgroupfs | None (the engine's default)
    cdi: Optional[bool] = None  # CDI switched on in the file (features.cdi, enable_cdi); None: not said
    cdi_spec_dirs: Tuple[str, ...] = ()  # Podman's containers.conf: the folders it looks for CDI specs in, as set
    hooks_dirs: Tuple[str, ...] = ()  # Podman's containers.conf: its OCI hooks folders (the toolkit's legacy hook), as set


class CdiSpec(Record):
    """A CDI spec file (/etc/cdi, /var/run/cdi) as ``nvidia-ctk cdi generate`` writes it."""

    path: str
    readable: bool = True
    kind: Optional[str] = None  # "nvidia.com/gpu"
    devices: Tuple[str, ...] = ()  # the device names: "0", "GPU-<uuid>", "all"
    driver_versions: Tuple[str, ...] = ()  # the driver versions its library paths name ("575.64.03")


class ContainerHost(Record):
    """The container side of a host with an engine or the NVIDIA Container Toolkit, read from files only (no daemon
    is asked anything): which engines, the toolkit's programs and packages, each engine's runtimes, the CDI specs."""

    engines: Tuple[str, ...] = ()  # docker | podman | containerd | crio: a program on PATH or its config file
    nvidia_ctk: Optional[str] = None
    nvidia_container_cli: Optional[str] = None
    packages: Tuple[str, ...] = ()  # the toolkit's installed packages "nvidia-container-toolkit=1.17.8-1" (dpkg)
    configs: Tuple[EngineConfig, ...] = ()
    cdi_specs: Tuple[CdiSpec, ...] = ()
    dev_char_links: Optional[bool] = None  # /dev/char holds links to the /dev/nvidia* nodes (None: no /dev/char)
    cgroup_v2: Optional[bool] = None  # /sys/fs/cgroup/cgroup.controllers is there (the unified hierarchy); None: no /sys/fs/cgroup


class Snapshot(Record):
    """What the probes saw; its JSON (``to_dict()``, schema_version first, ``env`` as an object) is the contract."""

    _json_envelope = True
    _json_maps = ("env",)

    platform: Platform
    driver: Optional[Driver] = None
    gpus: Tuple[Gpu, ...] = ()
    visible_devices: VisibleDevices = factory(VisibleDevices)
    toolkits: Tuple[Toolkit, ...] = ()
    cuda_symlink: Optional[CudaSymlink] = None
    active_toolkit: Optional[ActiveToolkit] = None
    cudnn: Tuple[Cudnn, ...] = ()
    env: Tuple[Tuple[str, str], ...] = ()  # CUDA_*, NVIDIA_*, NCCL_*, TORCH_*, PYTORCH_*, LD_LIBRARY_PATH
    torch: Optional[Torch] = None
    frameworks: Tuple[Framework, ...] = ()  # other CUDA consumers in the probed interpreter (TensorFlow, JAX, ONNX Runtime, ...)
    libraries: Tuple[LoadedLibrary, ...] = ()  # the CUDA libraries torch's and the frameworks' libraries load (Linux)
    import_order: Tuple[str, ...] = ()  # Windows: the modules the user's program imports, in order (doctor --import-order), whose loads `libraries` replays; () the usual program (torch first)
    extensions: Tuple[TorchExtension, ...] = ()  # compiled torch extensions checked against the installed torch (Linux)
    framework_imports: Tuple[FrameworkImport, ...] = ()  # doctor --import: each framework imported in a child, its GPUs
    processes: Tuple[GpuProcess, ...] = ()
    tools: Tuple[ToolStatus, ...] = ()  # how NVML and nvidia-smi answered
    notes: Tuple[Note, ...] = ()
    health: Optional[GpuHealth] = None  # the kernel log's Xids and unreachable GPUs, when a GPU looked sick
    gpu_conditions: Tuple[GpuCondition, ...] = ()  # each GPU's ECC, retired pages, remapped rows and slowdowns (nvidia-smi -q)
    pci_devices: Tuple[PciDevice, ...] = ()  # NVIDIA GPUs' PCIe links (sysfs), or as a pasted lspci describes them (explain)
    containers: Optional[ContainerHost] = None  # a host with a container engine or the NVIDIA Container Toolkit
    python_env: Optional[PythonEnv] = None  # who made the probed interpreter's environment (uv, conda, pixi)
    root: str = "/"
    cudaenv_version: Optional[str] = None

    @property
    def env_map(self) -> Dict[str, str]:
        return dict(self.env)

    def notes_for(self, probe: str) -> Tuple[Note, ...]:
        return tuple(n for n in self.notes if n.probe == probe)
