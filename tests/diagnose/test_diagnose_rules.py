"""Every finding id on a hand-built Snapshot (the rules are pure), plus a healthy machine with nothing above info.

End-to-end scenarios through `cudaenv doctor --json` live in test_diagnose_scenarios.py.
"""

import re

import pytest

from cudaenv.diagnose import diagnose, exit_code
from cudaenv.model.reports import Finding
from cudaenv.facts.torch import gpu_runs
from cudaenv.model.snapshot import VisibleProblem
from cudaenv.model.record import replace
from cudaenv.model.snapshot import (
    ActiveToolkit,
    CudaSymlink,
    Cudnn,
    DeviceMapping,
    Driver,
    Gpu,
    GpuProcess,
    Platform,
    Snapshot,
    ToolStatus,
    Torch,
    TorchDevice,
    Toolkit,
    VisibleDevices,
)
from cudaenv.diagnose.view import build_view

from machine import A100, PY, all_visible, cuda_torch, gpu, healthy  # noqa: F401 (shared with other modules)


def ids(s):
    return [f.id for f in diagnose(s)]


def one(s, fid) -> Finding:
    found = [f for f in diagnose(s) if f.id == fid]
    assert found, "no %s in %s" % (fid, ids(s))
    return found[0]


def no_placeholders(f: Finding):
    for cmd in f.fix:
        assert not re.search(r"<[A-Za-z ]+>", cmd) or "wsl" in cmd, cmd


# ----------------------------------------------------------------- healthy
def test_healthy_machine_has_nothing_above_info():
    found = diagnose(healthy())
    assert [f for f in found if f.severity != "info"] == []
    assert exit_code(found) == 0 and exit_code(found, strict=True) == 0
    assert {f.id for f in found} <= {"hint-launch-blocking"}


def test_findings_are_in_section_order_and_serialise():
    s = healthy(platform=replace(healthy().platform, wsl=1, wsl_signals=("osrelease",)),
                torch=cuda_torch(version="2.13.0+cpu", cuda=None, dynamic=False, arch_list=()))
    found = diagnose(s)
    order = ["environment", "driver", "containers", "visibility", "versions", "toolkits", "resources", "hints"]
    ranks = [order.index(f.section) for f in found]
    assert ranks == sorted(ranks)
    d = found[0].to_dict()
    assert set(d) == {"id", "severity", "title", "detail", "fix", "section", "fix_kind"} and isinstance(d["fix"], list)
    assert d["fix_kind"] == "host"  # WSL 1: the Windows side converts the distribution


# ----------------------------------------------------------------- environment
def test_wsl1():
    s = healthy(platform=Platform(system="linux", wsl=1, wsl_signals=("osrelease",)), driver=None, gpus=(), tools=())
    f = one(s, "wsl1-no-cuda")
    assert f.severity == "error" and any("--set-version" in x for x in f.fix)


def test_wsl2_with_a_linux_libcuda_shadowing():
    p = Platform(system="linux", wsl=2, dev_dxg=True, libcuda=("/usr/lib/wsl/lib/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"))
    s = healthy(platform=p, driver=Driver(version="560.94", cuda_version="12.6", source="nvidia-smi",
                                         nvidia_smi="/usr/lib/wsl/lib/nvidia-smi", wsl_windows_side=True))
    f = one(s, "wsl-linux-driver-installed")
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.1" in f.detail
    assert any("mv /usr/lib/x86_64-linux-gnu/libcuda.so.1" in x for x in f.fix)


def test_wsl2_clean_has_no_driver_finding():
    p = Platform(system="linux", wsl=2, dev_dxg=True, libcuda=("/usr/lib/wsl/lib/libcuda.so.1",))
    s = healthy(platform=p, driver=Driver(version="560.94", cuda_version="12.6", source="nvidia-smi",
                                         nvidia_smi="/usr/lib/wsl/lib/nvidia-smi", wsl_windows_side=True),
                torch=cuda_torch(version="2.13.0+cu126", cuda="12.6"), toolkits=(), active_toolkit=None, cuda_symlink=None)
    assert [f for f in diagnose(s) if f.severity != "info"] == []


def test_container_without_gpu():
    p = Platform(system="linux", container="docker", container_signals=("/.dockerenv",), nvidia_visible_devices="all")
    s = healthy(platform=p, driver=None, gpus=(), tools=(ToolStatus("nvidia-smi", None, status="missing"),),
                visible_devices=VisibleDevices())
    f = one(s, "container-no-gpu")
    assert f.severity == "error" and "NVIDIA_VISIBLE_DEVICES=all" in f.detail
    assert any("--gpus all" in x for x in f.fix)


def test_container_without_gpu_and_no_sign_of_wanting_one_is_a_warning():
    p = Platform(system="linux", container="docker")
    s = Snapshot(platform=p, torch=Torch(python=PY))
    assert one(s, "container-no-gpu").severity == "warning"


# ----------------------------------------------------------------- driver
def test_no_driver():
    p = Platform(system="linux", distro_id="ubuntu", pci_nvidia_devices=("0000:01:00.0",), nouveau_loaded=True)
    s = Snapshot(platform=p, tools=(ToolStatus("nvml", status="missing"), ToolStatus("nvidia-smi", status="missing")))
    f = one(s, "no-driver")
    assert "0000:01:00.0" in f.detail and "nouveau" in f.detail
    assert "sudo ubuntu-drivers install" in f.fix


@pytest.mark.parametrize(
    "failure, fid",
    [("driver-not-loaded", "driver-not-loaded"), ("driver-library-mismatch", "driver-library-mismatch"),
     ("gpu-lost", "gpu-lost"), ("no-permission", "driver-no-permission"), ("no-devices", "driver-no-devices")],
)
def test_driver_failures(failure, fid):
    tools = (ToolStatus("nvidia-smi", "/usr/bin/nvidia-smi", status="failed", failure=failure, message="the verbatim line"),)
    s = healthy(driver=Driver(version=None, kernel_module_version="550.54.15", source="proc"), gpus=(), tools=tools,
                visible_devices=VisibleDevices())
    f = one(s, fid)
    assert f.severity == "error" and "the verbatim line" in f.detail
    assert "no-driver" not in ids(s)


def test_driver_not_loaded_names_secure_boot_nouveau_and_the_kernel():
    p = replace(healthy().platform, secure_boot=True, nouveau_loaded=True, dev_nvidia=())
    tools = (ToolStatus("nvidia-smi", status="failed", failure="driver-not-loaded",
                        message="NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."),)
    f = one(healthy(platform=p, driver=None, gpus=(), tools=tools), "driver-not-loaded")
    assert "Secure Boot" in f.detail and "nouveau" in f.detail and "6.8.0-45-generic" in f.detail
    assert "sudo apt-get install linux-headers-6.8.0-45-generic" in f.fix


def test_library_mismatch_shows_both_versions():
    tools = (ToolStatus("nvml", status="failed", failure="driver-library-mismatch", message="Driver/library version mismatch"),)
    s = healthy(driver=Driver(version="550.127.05", kernel_module_version="550.120", source="proc"), tools=tools)
    f = one(s, "driver-library-mismatch")
    assert "550.120" in f.detail and "550.127.05" in f.detail and "sudo reboot" in f.fix


def test_nvidia_smi_hang():
    tools = (ToolStatus("nvidia-smi", "/usr/bin/nvidia-smi", status="timeout", seconds=5.0),)
    f = one(healthy(tools=tools), "nvidia-smi-hang")
    assert f.severity == "error" and "5 s" in f.detail


# ----------------------------------------------------------------- visibility
def test_one_gpu_with_cuda_visible_devices_1():
    v = VisibleDevices(cuda_visible_devices="1", entries=("1",), invalid_entry="1", problems=("entry '1' matches no GPU",))
    s = healthy(visible_devices=v, torch=cuda_torch(cuda_available=False, device_count=0, devices=()))
    f = one(s, "visible-devices-invalid")
    assert f.severity == "error" and "no GPU" in f.detail
    assert f.fix[0] == "export CUDA_VISIBLE_DEVICES=0"
    assert "torch-cuda-unavailable" not in ids(s)  # explained by the visibility finding


def test_invalid_entry_keeps_the_ones_before_it():
    gpus = tuple(gpu(i) for i in range(4))
    v = VisibleDevices(cuda_visible_devices="0,2,-1,1", entries=("0", "2", "-1", "1"), invalid_entry="-1",
                       mapping=(DeviceMapping(0, 0), DeviceMapping(1, 2)))
    f = one(healthy(gpus=gpus, visible_devices=v, torch=cuda_torch(count=2)), "visible-devices-invalid")
    assert f.severity == "warning" and "cuda:0 = GPU 0" in f.detail and "cuda:1 = GPU 2" in f.detail
    assert f.fix[0] == "export CUDA_VISIBLE_DEVICES=0,2,1"


def test_empty_cuda_visible_devices():
    v = VisibleDevices(cuda_visible_devices="", entries=())
    f = one(healthy(visible_devices=v), "visible-devices-empty")
    assert f.severity == "error" and "unset CUDA_VISIBLE_DEVICES" in f.fix[0]


def test_four_gpus_with_cuda_visible_devices_2_3():
    gpus = tuple(gpu(i) for i in range(4))
    v = VisibleDevices(cuda_visible_devices="2,3", entries=("2", "3"), mapping=(DeviceMapping(0, 2), DeviceMapping(1, 3)))
    s = healthy(gpus=gpus, visible_devices=v, torch=cuda_torch(count=2))
    f = one(s, "torch-count-differs")
    assert f.severity == "info"
    assert "cuda:0 = GPU 2" in f.detail and "cuda:1 = GPU 3" in f.detail and "cuda:2 and above do not exist" in f.detail
    assert "visible-devices-invalid" not in ids(s)
    assert exit_code(diagnose(s), strict=True) == 0


def test_torch_count_differs_unexplained():
    gpus = tuple(gpu(i) for i in range(2))
    f = one(healthy(gpus=gpus, visible_devices=all_visible(gpus), torch=cuda_torch(count=1)), "torch-count-differs")
    assert f.severity == "warning" and "is 1 but 2 are expected" in f.detail


def test_device_order_differs_shows_both_orders():
    gpus = (gpu(0, "NVIDIA GeForce GTX 1080 Ti", "6.1", total=11264), gpu(1, "NVIDIA GeForce RTX 3090", "8.6", total=24576))
    t = cuda_torch(version="2.13.0+cu126", cuda="12.6", count=2, arch=("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"),
                   devices=(TorchDevice("NVIDIA GeForce RTX 3090", "8.6"), TorchDevice("NVIDIA GeForce GTX 1080 Ti", "6.1")))
    f = one(healthy(gpus=gpus, visible_devices=all_visible(gpus), torch=t), "device-order-differs")
    assert "0: NVIDIA GeForce GTX 1080 Ti, 1: NVIDIA GeForce RTX 3090" in f.detail
    assert "cuda:0: NVIDIA GeForce RTX 3090" in f.detail
    assert f.fix == ("export CUDA_DEVICE_ORDER=PCI_BUS_ID    # cuda:N is then nvidia-smi's GPU N (within CUDA_VISIBLE_DEVICES)",)
    with_order = healthy(gpus=gpus, visible_devices=replace(all_visible(gpus), device_order="PCI_BUS_ID"), torch=t)
    assert "device-order-differs" not in ids(with_order)


# ----------------------------------------------------------------- versions
def test_torch_missing_is_info():
    f = one(healthy(torch=Torch(python=PY)), "torch-missing")
    assert f.severity == "info" and PY in f.detail
    assert exit_code(diagnose(healthy(torch=Torch(python=PY)))) == 0


def test_torch_import_error():
    t = Torch(python=PY, installed=True, version="2.13.0+cu130", cuda="13.0", dynamic=True,
              import_error="ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory")
    f = one(healthy(torch=t), "torch-import-error")
    assert "libcudnn.so.9" in f.detail and f.severity == "error"


def test_a_broken_import_of_a_pinned_torch_reinstalls_that_build_first():
    # issue 27: torch 2.8.0+cu128 without its cuDNN wheel was "fixed" by installing torch 2.14.1, six releases later
    t = cuda_torch(version="2.8.0+cu128", cuda="12.8", dynamic=False, cuda_available=None, devices=(), arch=(),
                   import_error="ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory")
    f = one(healthy(torch=t), "torch-import-error")
    assert f.fix[0] == PY + " -m pip install --force-reinstall torch==2.8.0+cu128 --index-url https://download.pytorch.org/whl/cu128"
    assert "2.14.1" not in "\n".join(f.fix[:1])
    # a build that cannot run here (cu128 on a driver too old for 12.x) is not reinstalled: the fitting build is named
    old = Driver(version="470.82.01", cuda_version="11.4", source="nvml")
    f = one(healthy(torch=t, driver=old), "torch-import-error")
    assert not any("--force-reinstall torch==2.8.0+cu128" in x for x in f.fix) and any("cu118" in x for x in f.fix), f.fix


def test_cpu_torch_beside_a_gpu():
    t = Torch(python=PY, installed=True, version="2.13.0+cpu", cuda=None, dynamic=True, cuda_available=False, device_count=0,
              installer="pip")
    f = one(healthy(torch=t), "torch-cpu-only")
    assert f.severity == "error" and "2.13.0+cpu" in f.title and "580.95.05" in f.detail
    joined = "\n".join(f.fix)
    assert PY in joined and "torch==2.13.0" in joined and "https://download.pytorch.org/whl/cu13" in joined
    assert "torch-cuda-unavailable" not in ids(healthy(torch=t))


def test_cu128_torch_beside_a_535_driver():
    d = Driver(version="535.104.05", cuda_version="12.2", source="nvidia-smi")
    t = cuda_torch(version="2.9.0+cu128", cuda="12.8", arch=("sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"))
    s = healthy(driver=d, torch=t, toolkits=(), active_toolkit=None, cuda_symlink=None)
    f = one(s, "driver-minor-compat")
    assert "525.60.13" in f.detail and "570.26" in f.detail and "535.104.05" in f.detail
    assert "driver-too-old-for-torch" not in ids(s)
    # the A100 runs the build's sm_80 cubin: nothing JITs torch's PTX, so it is a note, not a warning
    assert f.severity == "info" and "Every GPU here has a cubin" in f.detail
    # an arch list nobody knows (not imported, no table row): the warning stays
    unknown = replace(t, version="2.99.0+cu128", dynamic=False, arch_list=(), devices=())
    s2 = healthy(driver=d, torch=unknown, toolkits=(), active_toolkit=None, cuda_symlink=None)
    assert one(s2, "driver-minor-compat").severity == "warning"


def test_driver_too_old_for_torch_names_the_minimum_and_the_newest_variant():
    d = Driver(version="470.82.01", cuda_version="11.4", source="nvidia-smi")
    t = cuda_torch(version="2.13.0+cu130", cuda="13.0")
    s = healthy(driver=d, torch=t, toolkits=(), active_toolkit=None, cuda_symlink=None)
    f = one(s, "driver-too-old-for-torch")
    assert f.severity == "error" and "580" in f.detail and "470.82.01" in f.detail and "11.8" in f.detail
    assert any("ubuntu-drivers" in x for x in f.fix)
    assert "torch-cuda-unavailable" not in ids(s)


def test_gtx_1080_ti_with_an_arch_list_from_sm_75():
    g = gpu(0, "NVIDIA GeForce GTX 1080 Ti", "6.1", total=11264)
    t = cuda_torch(version="2.13.0+cu130", cuda="13.0", devices=(TorchDevice("NVIDIA GeForce GTX 1080 Ti", "6.1"),))
    f = one(healthy(gpus=(g,), visible_devices=all_visible((g,)), torch=t), "gpu-arch-unsupported")
    assert f.severity == "error" and "6.1" in f.detail and "sm_75" in f.detail and "no kernel image" in f.detail
    assert "cu126" in "\n".join(f.fix)


def test_torch_cuda_unavailable_says_what_torch_saw():
    t = cuda_torch(cuda_available=False, device_count=0, devices=(),
                   cuda_error="CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment")
    f = one(healthy(torch=t), "torch-cuda-unavailable")
    assert "CUDA unknown error" in f.detail and PY in f.fix[0]


def _recorded_errors():
    from builders import RECORDED

    return sorted(p.name for p in RECORDED.glob("err-*.txt"))


@pytest.mark.parametrize("name", _recorded_errors())
def test_the_doctor_reads_torchs_cuda_error_as_explain_does(name):
    """torch's CUDA error is classified by the error table (cudaenv.explain.classify_error), never by the doctor's own
    substrings: on every recorded error text the finding names explain's id, and adds the check of that row."""
    from builders import recorded
    from cudaenv.explain import classify_error

    text = recorded(name)
    t = cuda_torch(cuda_available=False, device_count=0, devices=(), cuda_error=text)
    f = one(healthy(torch=t), "torch-cuda-unavailable")
    m = classify_error(text)
    assert m is not None and "cudaenv explain reads it as %s (%s)." % (m.id, m.title) in f.detail
    extra = list(f.fix[1:-1])  # between "shows the real CUDA error" and the CUDA_VISIBLE_DEVICES check
    from cudaenv.diagnose.versions import LOADER_IDS

    if m.id in LOADER_IDS:  # cuda-library-missing, libcudart-missing, libcuda-not-found, library-not-found
        library = dict(m.values)["library"]
        assert extra == ["ldconfig -p | grep %s    # %s must be on the loader path"
                         % (library, "the driver's libcuda" if library.startswith("libcuda.") else library)]
    elif m.id in ("driver-no-permission", "cuda-unknown-error"):
        assert extra == ["ls -l /dev/nvidia*    # every node must be readable and writable by you"]
    else:
        assert extra == [], (m.id, extra)


def test_a_cuda_error_the_table_does_not_know_gets_no_guess():
    # torch's "Error 304: OS call failed or operation not supported on this OS" has no row in the error table:
    # the doctor used to guess device-node permissions from the words "error 304" / "permission"; it says only
    # what torch said (and explain, given the same text, recognises nothing either)
    from cudaenv.explain import classify_error

    said = ("CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
            "calling NumCudaDevices() that might have already set an error? Error 304: OS call failed or operation not "
            "supported on this OS")
    assert classify_error(said) is None
    f = one(healthy(torch=cuda_torch(cuda_available=False, device_count=0, devices=(), cuda_error=said)), "torch-cuda-unavailable")
    assert "Error 304" in f.detail and "cudaenv explain reads it" not in f.detail
    assert not any("/dev/nvidia" in x or "ldconfig" in x for x in f.fix)
    libcuda = "CUDA initialization: libcuda.so.1: cannot open shared object file: No such file or directory"
    f = one(healthy(torch=cuda_torch(cuda_available=False, device_count=0, devices=(), cuda_error=libcuda)), "torch-cuda-unavailable")
    assert "ldconfig -p | grep libcuda.so.1    # the driver's libcuda must be on the loader path" in f.fix


def test_the_doctors_checks_follow_the_tables_advice():
    """The ids the doctor keys its checks on are rows of the table, and each row's own advice says that check."""
    from cudaenv.diagnose.versions import DEVICE_NODE_IDS, LOADER_IDS
    from cudaenv.explain import describe

    for error_id in DEVICE_NODE_IDS:
        assert any("ls -l /dev/nvidia*" in a for a in describe(error_id).advice), error_id
    for error_id in LOADER_IDS:
        assert any("ldconfig -p | grep" in a for a in describe(error_id).advice), error_id


@pytest.mark.parametrize(
    "arch, cap, expected",
    [
        (("sm_80",), (8, 6), "cubin sm_80"),
        (("sm_80",), (9, 0), None),
        (("sm_90",), (10, 0), None),
        (("sm_90", "compute_90"), (10, 0), "PTX compute_90"),
        (("sm_90", "compute_90"), (12, 0), "PTX compute_90"),
        (("sm_90a",), (9, 0), "cubin sm_90a"),
        (("sm_86",), (8, 0), None),
        (("sm_75", "sm_120"), (6, 1), None),
        (("sm_60",), (6, 1), "cubin sm_60"),
        (("sm_100", "sm_120"), (12, 1), "cubin sm_120"),
        (("compute_120",), (10, 0), None),
        # arch-specific (a) and family-specific (f) targets, CUDA C++ Programming Guide "Feature Availability"
        (("sm_90a",), (9, 1), None),  # sm_90a is Hopper 9.0's own: no later minor
        (("sm_100a",), (10, 3), None),  # B300 (10.3) cannot run B200's arch-specific cubin
        (("sm_100a", "sm_100f"), (10, 3), "cubin sm_100f"),  # ... but the 10.x family cubin
        (("sm_100f",), (10, 0), "cubin sm_100f"),
        (("sm_100f",), (12, 0), None),  # a family is one major
        (("sm_120f",), (12, 1), "cubin sm_120f"),
        (("compute_90a",), (10, 0), None),  # arch-specific PTX is no forward-compatible PTX
        (("compute_90a",), (9, 0), "PTX compute_90a"),
        (("compute_100f",), (10, 3), "PTX compute_100f"),
        (("compute_100f",), (12, 0), None),
        (("compute_90", "sm_90"), (9, 0), "cubin sm_90"),  # a cubin wins over PTX
        (("sm_80", "sm_86"), (8, 6), "cubin sm_86"),  # the exact cubin over a compatible one
    ],
)
def test_arch_support(arch, cap, expected):
    how = gpu_runs(arch, cap)
    assert (how.describe() if how else None) == expected


# ----------------------------------------------------------------- toolkits
def _two_toolkits(active="11.8", link="12.1", **flags):
    tks = (
        Toolkit(version="11.8.0", path="/usr/local/cuda-11.8", source="/usr/local/cuda-*", active=active == "11.8",
                on_path=active == "11.8" or flags.get("both_on_path", False), nvcc="/usr/local/cuda-11.8/bin/nvcc",
                is_link_target=link == "11.8", in_ld_library_path=flags.get("ld") == "11.8"),
        Toolkit(version="12.1.1", path="/usr/local/cuda-12.1", source="/usr/local/cuda-*", active=active == "12.1",
                on_path=active == "12.1" or flags.get("both_on_path", False), nvcc="/usr/local/cuda-12.1/bin/nvcc",
                is_link_target=link == "12.1", in_ld_library_path=flags.get("ld") == "12.1"),
    )
    act = "/usr/local/cuda-%s" % active
    return dict(
        toolkits=tks,
        cuda_symlink=CudaSymlink(path="/usr/local/cuda", target="/usr/local/cuda-%s" % link, resolved="/usr/local/cuda-%s" % link),
        active_toolkit=ActiveToolkit(path=act, nvcc=act + "/bin/nvcc", version=[t.version for t in tks if t.path == act][0]),
    )


def test_link_to_12_1_while_path_has_11_8():
    s = healthy(driver=Driver(version="550.54.15", cuda_version="12.4", source="nvml"),
                torch=cuda_torch(version="2.5.1+cu121", cuda="12.1", arch=("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")),
                **_two_toolkits(active="11.8", link="12.1"))
    found = {f.id: f for f in diagnose(s)}
    f = found["cuda-link-not-active"]
    assert "/usr/local/cuda-12.1" in f.detail and "/usr/local/cuda-11.8/bin/nvcc" in f.detail
    assert any("cudaenv use 12.1" in x for x in f.fix)
    assert "nvcc-torch-mismatch" in found  # nvcc 11.8 against torch's 12.1
    assert any("cudaenv use 12.1" in x for x in found["nvcc-torch-mismatch"].fix)


def test_nvcc_torch_mismatch_suggests_installing_when_no_toolkit_fits():
    s = healthy(torch=cuda_torch(version="2.7.1+cu126", cuda="12.6", arch=("sm_50", "sm_80", "sm_90")))
    f = one(s, "nvcc-torch-mismatch")
    assert "cuda-toolkit-12-6" in f.fix[0]


def test_toolkit_newer_than_driver():
    s = healthy(driver=Driver(version="535.104.05", cuda_version="12.2", source="nvml"),
                torch=cuda_torch(version="2.13.0+cu126", cuda="12.6", arch=("sm_80",)))
    f = one(s, "toolkit-newer-than-driver")
    assert f.severity == "error" and "580" in f.detail and "535.104.05" in f.detail
    s2 = healthy(driver=Driver(version="575.57.08", cuda_version="12.9", source="nvml"),
                 torch=Torch(python=PY), **_two_toolkits(active="12.1", link="12.1"))
    assert "toolkit-newer-than-driver" not in ids(s2)
    s3 = healthy(driver=Driver(version="530.30.02", cuda_version="12.1", source="nvml"), torch=Torch(python=PY),
                 toolkits=(Toolkit(version="12.4.1", path="/usr/local/cuda-12.4", source="x", active=True, on_path=True),),
                 active_toolkit=ActiveToolkit(path="/usr/local/cuda-12.4", version="12.4.1"), cuda_symlink=None)
    f3 = one(s3, "toolkit-newer-than-driver")
    assert f3.severity == "warning"
    assert "driver 530.30.02" in f3.detail and "CUDA 12.4 ships driver 550.54.15" in f3.detail  # 12.4.1's (12.4.0: .14)
    assert f3.fix[0].startswith("nvcc -arch=sm_80 ") and "# build real code for this GPU" in f3.fix[0], f3.fix
    assert "# upgrade the driver to 550.54.15 or newer:" in f3.fix, f3.fix


def test_toolkit_newer_than_a_host_driver_offers_an_older_toolkit_that_fits():
    # issue 27: in a container the host's driver is out of reach; only the host upgrade was offered
    s = healthy(driver=Driver(version="550.54.15", cuda_version="12.4", source="nvml"))
    s = replace(s, platform=replace(s.platform, container="docker"))
    f = one(s, "toolkit-newer-than-driver")
    fix = "\n".join(f.fix)
    assert "host" in fix and "cudaenv install 12.4 --plan" in fix and "cudaenv use 12.4" in fix, fix
    s = replace(s, driver=Driver(version="580.95.05", cuda_version="13.0", source="nvml"),
                toolkits=(Toolkit(version="13.2.1", path="/usr/local/cuda-13.2", source="x", active=True, on_path=True),),
                active_toolkit=ActiveToolkit(path="/usr/local/cuda-13.2", version="13.2.1"), cuda_symlink=None)
    fix = "\n".join(one(s, "toolkit-newer-than-driver").fix)
    assert "cudaenv install 13.0    #" in fix and "--plan" not in fix, fix


def test_dangling_cuda_link():
    s = healthy(cuda_symlink=CudaSymlink(path="/usr/local/cuda", target="/usr/local/cuda-12.4", dangling=True))
    f = one(s, "cuda-link-dangling")
    assert "/usr/local/cuda-12.4" in f.title and any("ln -sfn /usr/local/cuda-13.0 /usr/local/cuda" in x for x in f.fix)


def test_multiple_toolkits_on_path():
    s = healthy(torch=Torch(python=PY), driver=Driver(version="575.57.08", cuda_version="12.9", source="nvml"),
                **_two_toolkits(active="12.1", link="12.1", both_on_path=True))
    f = one(s, "multiple-toolkits-on-path")
    assert "/usr/local/cuda-11.8" in f.detail and "cudaenv use 12.1" in f.fix[0]


def test_cuda_home_mismatch():
    kw = _two_toolkits(active="12.1", link="12.1")
    tks = (replace(kw["toolkits"][0], is_cuda_home=True), kw["toolkits"][1])
    kw["toolkits"] = tks
    s = healthy(torch=Torch(python=PY), driver=Driver(version="575.57.08", cuda_version="12.9", source="nvml"),
                env=(("CUDA_HOME", "/usr/local/cuda-11.8"),), **kw)
    f = one(s, "cuda-home-mismatch")
    assert "CUDA_HOME=/usr/local/cuda-11.8" in f.detail and f.fix[0].startswith("export CUDA_HOME=/usr/local/cuda-12.1")
    s2 = healthy(env=(("CUDA_HOME", "/opt/nowhere"),))
    assert "is not a CUDA toolkit" in one(s2, "cuda-home-mismatch").title


def test_ld_library_path_mismatch_gives_the_cleaned_value():
    s = healthy(torch=Torch(python=PY), driver=Driver(version="575.57.08", cuda_version="12.9", source="nvml"),
                env=(("LD_LIBRARY_PATH", "/usr/local/cuda-11.8/lib64:/opt/other/lib"),),
                **_two_toolkits(active="12.1", link="12.1", ld="11.8"))
    f = one(s, "ld-library-path-mismatch")
    assert f.fix[0] == "export LD_LIBRARY_PATH=/opt/other/lib"


def test_cudnn_mismatch():
    c8 = Cudnn(version="8.9.7", header="/usr/include/cudnn_version.h", source="system", major=8)
    c9 = Cudnn(version="9.1.0", header="/usr/local/cuda-13.0/include/cudnn_version.h", source="toolkit", major=9,
               toolkit="/usr/local/cuda-13.0")
    assert "several cuDNN majors" in one(healthy(cudnn=(c8, c9)), "cudnn-mismatch").title
    c8_in_13 = replace(c8, header="/usr/local/cuda-13.0/include/cudnn_version.h", source="toolkit", toolkit="/usr/local/cuda-13.0")
    assert "does not fit" in one(healthy(cudnn=(c8_in_13,)), "cudnn-mismatch").title
    pip9 = Cudnn(version="9.10.2", header="/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/include/cudnn_version.h",
                 source="pip", major=9)
    assert "cudnn-mismatch" not in ids(healthy(cudnn=(c8, pip9)))


# ----------------------------------------------------------------- resources
def test_gpu_memory_busy_lists_pids_owners_and_kill_commands():
    g = replace(A100, memory_used_mib=80000)
    procs = (GpuProcess(pid=4242, name="python train.py", used_memory_mib=79000, gpu_index=0, owner="alice", state="running"),)
    f = one(healthy(gpus=(g,), processes=procs), "gpu-memory-busy")
    assert "pid 4242" in f.detail and "alice" in f.detail and "80000 of 81920" in f.title
    assert f.fix[0].startswith("kill 4242")


def test_gpu_memory_busy_names_every_full_gpu():
    # issue 27: four full GPUs were reported as GPU 0 alone (the id is reported once)
    gpus = tuple(gpu(i, used=80000) for i in range(4))
    procs = tuple(GpuProcess(pid=100 + i, name="python train.py", used_memory_mib=79000, gpu_index=i, state="running")
                  for i in range(4))
    f = one(healthy(gpus=gpus, visible_devices=all_visible(gpus), processes=procs), "gpu-memory-busy")
    assert "0, 1, 2, 3" in f.title and all("GPU %d" % i in f.detail for i in range(4)), (f.title, f.detail)
    assert [x.split()[1] for x in f.fix if x.startswith("kill 1")] == ["100", "101", "102", "103"]
    assert any(x.endswith("-i 0,1,2,3") for x in f.fix)


def test_stale_gpu_process():
    procs = (GpuProcess(pid=999, name="python", used_memory_mib=4000, gpu_index=0, state="gone"),
             GpuProcess(pid=1001, name="python", used_memory_mib=2000, gpu_index=0, state="zombie"))
    f = one(healthy(processes=procs), "stale-gpu-process")
    assert "pid 999" in f.detail and "pid 1001" in f.detail
    assert any("ps -o ppid= -p 1001" in x for x in f.fix) and any("--gpu-reset -i 0" in x for x in f.fix)


# ----------------------------------------------------------------- hints
def test_hints_for_multi_gpu_and_launch_blocking():
    gpus = tuple(gpu(i) for i in range(2))
    s = healthy(gpus=gpus, visible_devices=all_visible(gpus), torch=cuda_torch(count=2, nccl="2.27.3"))
    found = ids(s)
    assert {"hint-launch-blocking", "hint-distributed-debug", "hint-nccl-debug"} <= set(found)
    s2 = healthy(env=(("CUDA_LAUNCH_BLOCKING", "1"),))
    assert "launch-blocking-set" in ids(s2) and "hint-launch-blocking" not in ids(s2)
    assert all(f.severity == "info" for f in diagnose(s) if f.section == "hints")


def test_every_id_is_reported_once_and_fixes_have_no_placeholders():
    t = Torch(python=PY, installed=True, version="2.13.0+cpu", cuda=None, dynamic=True, cuda_available=False, device_count=0)
    s = healthy(torch=t, cuda_symlink=CudaSymlink(path="/usr/local/cuda", target="cuda-9", dangling=True))
    found = diagnose(s)
    assert len({f.id for f in found}) == len(found)
    for f in found:
        no_placeholders(f)


def test_duplicate_entry_gives_the_deduplicated_value():
    gpus = tuple(gpu(i) for i in range(2))
    msg = "duplicate entry '0' (device 0 twice): CUDA treats the whole list as invalid and sees no GPU"
    v = VisibleDevices(cuda_visible_devices="0,0", entries=("0", "0"), invalid_entry="0", problems=(msg,),
                       issues=(VisibleProblem("duplicate", "0", msg),))
    f = one(healthy(gpus=gpus, visible_devices=v, torch=cuda_torch(count=0, cuda_available=False, devices=())),
            "visible-devices-invalid")
    assert f.severity == "error" and "duplicate entry" in f.detail and f.fix[0] == "export CUDA_VISIBLE_DEVICES=0"


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_text = st.one_of(st.none(), st.text(max_size=12), st.sampled_from(["12.4", "535.104.05", "N/A", "ERR!", "13", "", "6.1"]))


@settings(max_examples=150)
@given(driver=_text, cuda=_text, tcuda=_text, cap=_text, tk=_text, cvd=_text, arch=st.lists(st.text(max_size=10), max_size=4),
       used=st.one_of(st.none(), st.integers(-5, 10 ** 6)), total=st.one_of(st.none(), st.integers(-5, 10 ** 6)))
def test_rules_never_raise_on_odd_values(driver, cuda, tcuda, cap, tk, cvd, arch, used, total):
    g = Gpu(index=0, name="x", compute_capability=cap, memory_used_mib=used, memory_total_mib=total)
    entries = tuple((cvd or "").split(","))
    s = healthy(
        driver=Driver(version=driver, cuda_version=cuda, source="nvml"),
        gpus=(g,),
        visible_devices=VisibleDevices(cuda_visible_devices=cvd, entries=entries, invalid_entry=entries[0] if cvd else None),
        torch=cuda_torch(version="2.13.0+x", cuda=tcuda, arch=tuple(arch)),
        toolkits=(Toolkit(version=tk, path="/usr/local/cuda-x", source="x", active=True, on_path=True, in_ld_library_path=True),),
        active_toolkit=ActiveToolkit(path="/usr/local/cuda-x", version=tk),
        env=(("LD_LIBRARY_PATH", "/usr/local/cuda-x/lib64"), ("CUDA_HOME", "/nowhere")),
    )
    found = diagnose(s)
    for f in found:
        assert f.severity in ("error", "warning", "info") and f.title and f.detail
    from cudaenv.render.markdown import render_markdown
    from cudaenv.render.report import render_report

    for verbose in (False, True):  # the renderers take whatever the rules and the probes made
        text = render_report(s, found, build_view(s), verbose=verbose)
        assert text.startswith("cudaenv doctor") and render_markdown(s, found, build_view(s), verbose=verbose).startswith("### CUDA")


def test_wsl2_without_the_windows_driver():
    p = Platform(system="linux", wsl=2, wsl_signals=("osrelease", "/dev/dxg"), dev_dxg=True)
    s = Snapshot(platform=p, tools=(ToolStatus("nvml", status="missing"), ToolStatus("nvidia-smi", status="missing")),
                 torch=Torch(python=PY))
    f = one(s, "no-driver")
    assert "Windows" in f.title and "wsl --update" in f.fix
    with_lib = replace(s, platform=replace(p, libcuda=("/usr/lib/wsl/lib/libcuda.so.1",)))
    assert "no-driver" not in ids(with_lib)


def test_arch_check_looks_at_the_visible_gpus_only():
    gpus = (gpu(0, "NVIDIA GeForce GTX 1080 Ti", "6.1", total=11264), gpu(1))
    v = VisibleDevices(cuda_visible_devices="1", entries=("1",), mapping=(DeviceMapping(0, 1),))
    t = cuda_torch(version="2.13.0+cu130", cuda="13.0")
    assert "gpu-arch-unsupported" not in ids(healthy(gpus=gpus, visible_devices=v, torch=t))
    assert "gpu-arch-unsupported" in ids(healthy(gpus=gpus, visible_devices=all_visible(gpus), torch=replace(t, device_count=2)))


def test_visible_devices_invalid_only_for_an_invalid_entry_not_for_the_order_warning():
    # Two different models with CUDA_VISIBLE_DEVICES=1: the probe notes the order problem, but entry 1 is valid.
    from cudaenv.diagnose import diagnose
    from cudaenv.parse.visible_devices import parse_visible_devices
    from cudaenv.model.snapshot import Gpu, Platform, Snapshot

    gpus = (Gpu(index=0, name="NVIDIA TITAN V", compute_capability="7.0"),
            Gpu(index=1, name="NVIDIA RTX 5880 Ada Generation", compute_capability="8.9"))
    vis = parse_visible_devices("1", gpus)
    assert vis.problems and not vis.invalid_entry
    ids = {f.id for f in diagnose(Snapshot(platform=Platform(system="linux"), gpus=gpus, visible_devices=vis))}
    assert "visible-devices-invalid" not in ids
    bad = parse_visible_devices("1,7", gpus)
    ids = {f.id for f in diagnose(Snapshot(platform=Platform(system="linux"), gpus=gpus, visible_devices=bad))}
    assert "visible-devices-invalid" in ids


def test_doctor_and_recommend_share_one_gpu_runs():
    """Issue 11: the doctor's arch_support and facts.torch.gpu_runs answered sm_90a differently; one copy is left."""
    from pathlib import Path

    import cudaenv
    import cudaenv.diagnose.versions as versions
    from cudaenv.facts import torch as tf

    assert not hasattr(versions, "arch_support") and versions.tf.gpu_runs is tf.gpu_runs
    package = Path(cudaenv.__file__).parent
    scanned = [package / "diagnose" / "versions.py"] + sorted((package / "recommend").glob("*.py"))
    assert len(scanned) > 3 and all(p.is_file() for p in scanned), scanned  # a path that moved fails, never scans nothing
    for path in scanned:
        text = path.read_text(encoding="utf-8")
        assert "def gpu_runs" not in text and "def arch_support" not in text, path
    defining = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py")
                      if "def gpu_runs(" in p.read_text(encoding="utf-8") or "def arch_support(" in p.read_text(encoding="utf-8"))
    assert defining == ["facts/torch.py"]
    # the recommend side reads data rows through the same function: sm_90a-only builds do not run a 9.x GPU other than 9.0
    assert tf.gpu_runs(tf.arch_list_of(("9.0a",)), "9.0").kind == "exact"
    assert tf.gpu_runs(tf.arch_list_of(("9.0a",)), "9.1") is None


@pytest.mark.parametrize("distro, rebuild, initramfs", [
    ("ubuntu", ["sudo apt-get install linux-headers-6.8.0-45-generic", "sudo dkms autoinstall    # dkms status shows what is built"],
     "sudo update-initramfs -u"),
    ("debian", ["sudo apt-get install linux-headers-6.8.0-45-generic", "sudo dkms autoinstall    # dkms status shows what is built"],
     "sudo update-initramfs -u"),
    ("rocky", ["sudo dnf install kernel-devel-6.8.0-45-generic", "sudo akmods --force || sudo dkms autoinstall"], "sudo dracut --force"),
    ("fedora", ["sudo dnf install kernel-devel-6.8.0-45-generic", "sudo akmods --force || sudo dkms autoinstall"], "sudo dracut --force"),
    ("arch", None, "sudo mkinitcpio -P"),
    ("gentoo", None, "sudo update-initramfs -u    # Fedora/RHEL: sudo dracut --force"),
])
def test_driver_not_loaded_fix_is_the_distros_row(distro, rebuild, initramfs):
    """The kernel-module rebuild and the initramfs line come from data/driver_install.json: Arch got apt-get before."""
    from cudaenv.facts import driver_install

    p = replace(healthy().platform, nouveau_loaded=True, dev_nvidia=(), distro_id=distro)
    tools = (ToolStatus("nvidia-smi", status="failed", failure="driver-not-loaded", message="couldn't communicate with the NVIDIA driver"),)
    f = one(healthy(platform=p, driver=None, gpus=(), tools=tools), "driver-not-loaded")
    steps = list(driver_install.chore_steps("module_rebuild", distro, kernel="6.8.0-45-generic"))
    assert rebuild is None or steps == rebuild
    at = f.fix.index(steps[0])
    assert list(f.fix[at:at + len(steps)]) == steps
    assert initramfs in f.fix and f.fix.index(initramfs) == f.fix.index(next(x for x in f.fix if "blacklist-nouveau" in x)) + 1
    if distro not in ("ubuntu", "debian", "gentoo"):
        assert not any("apt-get" in x or "update-initramfs" in x for x in f.fix), f.fix


def test_a_kernel_release_with_shell_text_is_not_pasted_into_the_fix():
    p = replace(healthy().platform, dev_nvidia=(), kernel="6.8.0$(touch /tmp/x)")
    tools = (ToolStatus("nvidia-smi", status="failed", failure="driver-not-loaded", message="couldn't communicate"),)
    f = one(healthy(platform=p, driver=None, gpus=(), tools=tools), "driver-not-loaded")
    assert "sudo apt-get install linux-headers-$(uname -r)" in f.fix and not any("touch" in x for x in f.fix)


@pytest.mark.parametrize("distro, removes", [("ubuntu", "sudo apt-get remove --purge 'nvidia-driver-*'"), ("fedora", None)])
def test_wsl2_linux_driver_removal_is_the_distros_row(distro, removes):
    p = Platform(system="linux", wsl=2, dev_dxg=True, distro_id=distro,
                 libcuda=("/usr/lib/wsl/lib/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"))
    s = healthy(platform=p, driver=Driver(version="560.94", cuda_version="12.6", source="nvidia-smi",
                                         nvidia_smi="/usr/lib/wsl/lib/nvidia-smi", wsl_windows_side=True))
    fix = one(s, "wsl-linux-driver-installed").fix
    if removes:
        assert any(x.startswith(removes) for x in fix) and any(x.startswith("dpkg -l | grep") for x in fix)
    else:
        assert not any("apt-get" in x for x in fix) and any("package manager" in x for x in fix)


def test_sudo_is_printed_only_where_it_is_needed_and_present():
    # issue 27: gpu-memory-busy (and the link fixes) printed sudo for root in a container without sudo
    g = replace(A100, memory_used_mib=80000)
    stale = GpuProcess(pid=999, name="python", used_memory_mib=4000, gpu_index=0, state="gone")
    base = healthy(gpus=(g,), processes=(stale,), cuda_symlink=CudaSymlink(path="/usr/local/cuda", target="/usr/local/cuda-12.4",
                                                                         dangling=True))
    for root_user, sudo, printed in ((None, None, True), (False, True, True), (True, False, False), (True, True, False),
                                     (False, False, False)):
        s = replace(base, platform=replace(base.platform, root_user=root_user, sudo=sudo))
        fixes = [x for fid in ("gpu-memory-busy", "stale-gpu-process", "cuda-link-dangling") for x in one(s, fid).fix]
        assert any(x.startswith("sudo ") for x in fixes) == printed, (root_user, sudo, fixes)
        assert any("fuser -v /dev/nvidia0" in x or "fuser -v /dev/nvidia*" in x for x in fixes)


def test_pixi_manifest_cuda_above_the_driver():
    # issue 31: a pixi env whose manifest declares cuda = "13.1" on a driver of CUDA 13.0 (pixi refuses it here)
    from cudaenv.model.snapshot import PythonEnv

    env = PythonEnv("pixi", "/ws/.pixi/envs/default", "pixi", None, "default", "/ws/pixi.toml", "13.1", ("conda-forge",))
    f = one(replace(healthy(), python_env=env), "pixi-cuda-above-driver")
    assert f.severity == "error" and "CUDA 13.1, above this driver's CUDA 13.0" in f.title
    assert f.fix[0] == '# in /ws/pixi.toml: set cuda = "13" under [system-requirements] (the driver\'s CUDA 13.0), then: pixi install'
    no_placeholders(f)
    for ok in ("13", "12.6", None):  # at or below the driver, or nothing declared
        assert "pixi-cuda-above-driver" not in ids(replace(healthy(), python_env=replace(env, manifest_cuda=ok)))
    assert "pixi-cuda-above-driver" not in ids(replace(healthy(), python_env=replace(env, kind="conda")))


def test_conda_env_cuda_version_above_the_driver():
    # issue 31: conda-meta's cuda-version against the driver's CUDA (13.0 on the healthy machine)
    from cudaenv.model.snapshot import PythonEnv

    env = PythonEnv("conda", "/opt/conda/envs/cu", "conda", "24.11.3", "cu", cuda_packages=("cuda-version=13.1=h1_0",
                                                                                            "pytorch=2.12.0=cuda130_generic_py312_h2_200"))
    f = one(replace(healthy(), python_env=env), "conda-cuda-above-driver")
    assert f.severity == "warning" and "built for CUDA 13.1, above this driver's CUDA 13.0" in f.title
    assert f.fix[0] == 'conda install --prefix /opt/conda/envs/cu "cuda-version<=13.0"    # CUDA packages the driver runs'
    no_placeholders(f)
    major = replace(env, cuda_packages=("cuda-version=14.0=h1_0",))
    assert one(replace(healthy(), python_env=major), "conda-cuda-above-driver").severity == "error"
    pixi = replace(env, kind="pixi", manifest="/ws/pixi.toml")
    assert one(replace(healthy(), python_env=pixi), "conda-cuda-above-driver").fix[0].startswith(
        'pixi add --manifest-path /ws/pixi.toml "cuda-version<=13.0"')
    for ok in (("cuda-version=13.0=h1_0",), ("cuda-version=12.6=h1_0",), ()):
        assert "conda-cuda-above-driver" not in ids(replace(healthy(), python_env=replace(env, cuda_packages=ok)))
    assert "conda-cuda-above-driver" not in ids(replace(healthy(), python_env=replace(env, kind="uv")))


def test_a_cpu_torch_in_a_pixi_env_is_fixed_with_pixi_and_the_manifest_lines_first():
    # issue 31: the doctor's fix in a pixi env is pixi's, with the [system-requirements] its manifest lacks said first
    from cudaenv.model.snapshot import PythonEnv

    env = PythonEnv("pixi", "/ws/.pixi/envs/default", "pixi", None, "default", "/ws/pixi.toml", None, ("conda-forge",))
    s = replace(healthy(), python_env=env, torch=cuda_torch(version="2.12.1+cpu", cuda=None, arch=(), installer=None,
                                                             cuda_available=False, device_count=0, devices=()))
    f = one(s, "torch-cpu-only")
    assert f.fix[0] == '# first add to /ws/pixi.toml: [system-requirements]; cuda = "13"'
    assert f.fix[1] == "pixi add --manifest-path /ws/pixi.toml pytorch-gpu==2.12.1 cuda-version==13.0"


def test_the_facts_view_has_a_conda_envs_solver_packages():
    # issue 31: --verbose's "solver sees" line, for a conda or pixi env only
    from cudaenv.model.snapshot import PythonEnv

    env = PythonEnv("conda", "/opt/conda/envs/cu", "conda", "24.11.3", "cu")
    solver = dict(build_view(replace(healthy(), python_env=env)).solver)
    assert (solver["__cuda"], solver["__cuda_arch"], solver["__linux"]) == ("13.0", "8.0", "6.8.0")
    assert build_view(replace(healthy(), python_env=replace(env, kind="uv"))).solver == ()
