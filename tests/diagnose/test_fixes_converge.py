"""Fixes that converge (issue 27): on a model of a machine (tests/machine.py: a fake root, fake commands, an
environment), a finding's fix is applied as the user would apply it (`source <(cudaenv use X)` emits an environment
that is applied to the env mapping, `unset`/`export` change a variable, `ln -sfn` repoints the fake
/usr/local/cuda, a pip install puts that torch build or package in the interpreter, `kill` ends a process), the doctor
runs again, and the finding is gone with no new warning or error in its place.

Every finding id whose fix is a ``command`` (data/findings.json's fix_kind) has a scenario in CONVERGES that raises
it; a new such id without one fails test_every_command_fix_has_a_convergence_case.
"""

import pytest

from builders import recorded
from cudaenv.facts.findings import finding_ids, fix_kind
from machine import (
    A10G,
    ARCH_CU118,
    ARCH_CU121,
    ARCH_CU126,
    ARCH_CU128,
    ARCH_CU130,
    GTX1080TI,
    RTX2080TI_X4,
    TITANV_5880,
    a10g_535,
)

WARNED = ("warning", "error")


def warned(found):
    return {i for i, f in found.items() if f["severity"] in WARNED}


def system_13_0_with_wrappers(m):
    """This development machine's layout: /usr/local/cuda-13.0 (nvcc's 13.0.88), /usr/local/cuda pointing at it, and
    /usr/local/bin holding exec wrappers (nvcc, ptxas) to it, on PATH."""
    a10g_535(m)
    m.root.toolkit("13.0.88", version_json=False, cuda_h=False)
    m.root.link("usr/local/cuda", "/usr/local/cuda-13.0")
    wrapper = recorded("nvcc-exec-wrapper.txt")
    m.root.executable("usr/local/bin/nvcc", wrapper)
    m.root.executable("usr/local/bin/ptxas", wrapper.replace("/nvcc", "/ptxas"))
    m.path_in_root.append("/usr/local/bin")
    return m


def test_the_readme_flow_ends_without_a_toolkit_warning(machine):
    # cudaenv install 13.0 && source <(cudaenv use 13.0) && cudaenv doctor
    m = system_13_0_with_wrappers(machine)
    _, before, _ = m.findings()
    assert not warned(before) & {"cuda-link-not-active", "multiple-toolkits-on-path"}, before.keys()
    m.cudaenv_install("13.0.2")
    assert m.apply_fix("source <(cudaenv use 13.0)")
    assert m.path_in_root[0] == "/data/toolkits/13.0.2/bin"
    _, after, data = m.findings()
    assert data["active_toolkit"]["path"] == "/data/toolkits/13.0.2"
    assert "cuda-link-not-active" not in after, after.get("cuda-link-not-active")
    assert "multiple-toolkits-on-path" not in after, after.get("multiple-toolkits-on-path")


def _continues(previous, line):
    """One step of a fix spans several lines: a pip uninstall and the install after it, a toolkit's install and the
    `use` of it, a list of `kill PID`."""
    body = line.split("    # ")[0].split()
    done = " %s " % previous.split("    # ")[0]
    if " pip uninstall " in done or " install cuda-toolkit-" in done or done.startswith(" cudaenv install "):
        return True
    return previous.startswith("kill ") and body[:1] == ["kill"] and body[1:2] != ["-9"]


def _converges(m, fid):
    """Apply the first step of ``fid``'s fix the model knows (its lines in order: the first a user would take), run the
    doctor again: ``fid`` is gone and no warning or error appears that was not there before."""
    _, found, _ = m.findings()
    assert fid in found, found.keys()
    assert found[fid]["fix_kind"] == "command", found[fid]
    before = warned(found)
    applied, lines = [], list(found[fid]["fix"])
    for line in lines:
        if applied and not _continues(applied[-1], line):
            break
        if m.apply_fix(line):
            applied.append(line)
        elif applied:
            break
    assert applied, (fid, found[fid]["fix"])  # a fix the user can apply here
    _, after, _ = m.findings()
    assert fid not in after, (fid, applied, after[fid])
    assert warned(after) <= before, (fid, applied, warned(after) - before)
    return after


# ------------------------------------------------------------------ one scenario per finding id whose fix is a command
def _visible(value):
    def build(m):
        a10g_535(m)
        m.env["CUDA_VISIBLE_DEVICES"] = value
    return build


def _link_not_active(m):
    a10g_535(m)
    m.toolkit("12.1.1", on_path=True).toolkit("11.8.0")
    m.root.link("usr/local/cuda", "/usr/local/cuda-11.8")


def _two_on_path(m):
    a10g_535(m)
    m.toolkit("12.1.1", on_path=True).toolkit("11.8.0", on_path=True)
    m.root.link("usr/local/cuda", "/usr/local/cuda-12.1")


def _cuda_home(m):
    a10g_535(m)
    m.toolkit("12.1.1", on_path=True).toolkit("11.8.0")
    m.root.link("usr/local/cuda", "/usr/local/cuda-12.1")
    m.env["CUDA_HOME"] = "/usr/local/cuda-11.8"


def _dangling(m):
    a10g_535(m)
    m.toolkit("12.1.1", on_path=True)
    m.root.link("usr/local/cuda", "/usr/local/cuda-11.8")


def _device_order(m):
    m.smi(query=recorded("smi-query-titanv-5880.txt"))
    m.torch("2.13.0+cu126", "12.6", TITANV_5880, ARCH_CU126, order=[1, 0])


def _four_2080ti(m, torch="2.7.1+cu118", cuda="11.8", arch=ARCH_CU118):
    m.gpu_specs = RTX2080TI_X4
    m.smi(query=recorded("smi-query-2080ti-x4.txt"))
    m.torch(torch, cuda, RTX2080TI_X4, arch)


def _torch_count(m):
    _four_2080ti(m)
    m.env["CUDA_VISIBLE_DEVICES"] = "0,1"


def _import_error(m):
    a10g_535(m).torch("2.5.1+cu121", "12.1", init_raises="OSError('libcudnn.so.9: cannot open shared object file')")


def _cpu_torch(m):
    a10g_535(m).torch("2.13.0+cpu", None)


def _driver_too_old(m):
    a10g_535(m).torch("2.13.0+cu130", "13.0", A10G, ARCH_CU130,
                      warning="The NVIDIA driver on your system is too old (found version 12020).")


def _arch(m):
    m.gpu_specs = GTX1080TI
    m.smi(query=recorded("diag-query-1080ti.txt"), banner=recorded("diag-banner-1080ti.txt"))
    m.torch("2.13.0+cu130", "13.0", GTX1080TI, ARCH_CU130)


def _nvcc_torch(m):
    a10g_535(m).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121).toolkit("11.8.0", on_path=True).toolkit("12.1.1")


def _nvcc_torch_no_toolkit(m):
    # no CUDA 12.1 installed: the fix installs it from NVIDIA's repository, then uses it
    a10g_535(m).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121).toolkit("11.8.0", on_path=True)
    m.root.file("etc/os-release", recorded("osrelease-ubuntu-2204.txt"))


def _ld_other_toolkit(m):
    a10g_535(m)
    m.toolkit("12.1.1", on_path=True).toolkit("11.8.0")
    m.env["LD_LIBRARY_PATH"] = "/usr/local/cuda-11.8/lib64:/opt/intel/lib"


def _ld_missing_toolkit(m):
    a10g_535(m)
    m.toolkit("12.1.1", on_path=True)
    m.env["LD_LIBRARY_PATH"] = "/usr/local/cuda-10.2/lib64"


def _toolkit_too_new(m):
    a10g_535(m)
    m.toolkit("13.0.2", on_path=True).toolkit("12.1.1")


def _toolkit_too_new_none_older(m):
    # driver 580 (CUDA 13.0) and only a CUDA 13.2 toolkit: the fix installs 13.0 into cudaenv's store and uses it
    m.smi(banner=recorded("smi-banner-580-a100x2.txt"))
    m.toolkit("13.2.0", on_path=True)


def _framework_conflict(m):
    a10g_535(m).packages("onnxruntime-gpu==1.23.2", "onnxruntime==1.23.2")


def _framework_cpu(m):
    a10g_535(m).packages("jax==0.8.1", "jaxlib==0.8.1")


def _memory_busy(m):
    m.gpu_specs = RTX2080TI_X4
    apps = "".join(line + "\n" for line in recorded("smi-apps-2080ti.txt").splitlines() if not line.startswith("777,"))
    m.smi(query=recorded("smi-query-2080ti-x4.txt"), apps=apps)
    for pid, name in ((4054862, "python"), (4055325, "python3")):
        m.root.file("proc/%d/status" % pid, "Name:\t%s\nState:\tS (sleeping)\nUid:\t1000\t1000\t1000\t1000\n" % name)


def _launch_blocking(m):
    a10g_535(m).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121)
    m.env["CUDA_LAUNCH_BLOCKING"] = "1"


def _wheels_mixed(m):
    a10g_535(m).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121)
    m.packages("nvidia-cudnn-cu12==9.10.2.21", "nvidia-cublas-cu12==12.1.3.1", "nvidia-cublas-cu11==11.11.3.6")


def _torch_with_libraries(m, shadowed):
    """torch 2.8.0+cu128 with real ELF files (tests/elf_builders.py) in a site folder inside the fake root:
    libtorch_cuda.so needs the wheel's libcudart.so.12 (RUNPATH) and libcublas.so.12; ``shadowed``: a CUDA 12.1
    toolkit's libcudart on LD_LIBRARY_PATH takes its place, else libcublas.so.12 is nowhere."""
    from elf_builders import build_library
    from machine import make_fake_torch

    a10g_535(m).packages()
    site = m.package_site
    m.site = make_fake_torch(site, "2.8.0+cu128", "12.8", A10G, ARCH_CU128)
    cudart = build_library(site / "nvidia" / "cuda_runtime" / "lib", "libcudart.so.12", soname="libcudart.so.12")
    cublas = build_library(m.tmp / "build", "libcublas.so.12", soname="libcublas.so.12")
    links = [cudart] + ([cublas] if not shadowed else [])
    if shadowed:
        links.append(build_library(site / "nvidia" / "cublas" / "lib", "libcublas.so.12", soname="libcublas.so.12"))
    build_library(site / "torch" / "lib", "libtorch_cuda.so", soname="libtorch_cuda.so", links=links,
                  runpath="$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/cublas/lib")
    if shadowed:
        lib64 = m.root.dir("usr/local/cuda-12.1/lib64")
        real = build_library(lib64, "libcudart.so.12.1.105", soname="libcudart.so.12")
        (lib64 / "libcudart.so.12").symlink_to(real.name)
        m.env["LD_LIBRARY_PATH"] = "/usr/local/cuda-12.1/lib64"


def _library_shadowed(m):
    _torch_with_libraries(m, shadowed=True)


def _library_missing(m):
    _torch_with_libraries(m, shadowed=False)


def _nccl_plugin_missing(m):
    """torch 2.8.0+cu128 with real ELF files: libtorch_cuda.so needs the wheels' libcudart.so.12 and libnccl.so.2, and
    the job's NCCL_NET_PLUGIN=ofi names a plugin installed nowhere (NCCL's dlopen from libnccl.so.2 finds nothing)."""
    from elf_builders import build_library
    from machine import make_fake_torch

    a10g_535(m).packages()
    site = m.package_site
    m.site = make_fake_torch(site, "2.8.0+cu128", "12.8", A10G, ARCH_CU128)
    cudart = build_library(site / "nvidia" / "cuda_runtime" / "lib", "libcudart.so.12", soname="libcudart.so.12")
    nccl = build_library(site / "nvidia" / "nccl" / "lib", "libnccl.so.2", soname="libnccl.so.2")
    build_library(site / "torch" / "lib", "libtorch_cuda.so", soname="libtorch_cuda.so", links=[cudart, nccl],
                  runpath="$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/nccl/lib")
    m.env["NCCL_NET_PLUGIN"] = "ofi"


def _extension_mismatch(m):
    """torch 2.8.0+cu128 whose libc10.so (built here) no longer exports a name flash-attn's module (built against an
    older libc10) needs: the rebuild line (modelled as pip's reinstall of that package) makes the finding go."""
    from elf_builders import build_library, exporting, needing
    from framework_builders import dist
    from machine import make_fake_torch

    a10g_535(m).packages()
    site = m.package_site
    make_fake_torch(site, "2.8.0+cu128", "12.8", A10G, ARCH_CU128)  # beside the packages (PYTHONPATH has that folder)
    build_library(site / "torch" / "lib", "libc10.so", soname="libc10.so", code=exporting(["_ZN3c104HalfC1Ef"]))
    old = build_library(m.tmp / "old", "libc10.so", soname="libc10.so", code=exporting(["_ZN3c104HalfC1Ef", "_ZN3c104cuda9SetDeviceEi"]))
    ext = build_library(m.tmp / "build", "flash_attn_2_cuda.so", links=[old], code=needing(["_ZN3c104HalfC1Ef", "_ZN3c104cuda9SetDeviceEi"]))
    dist(site, "flash-attn", "2.7.4", requires=["torch"], binary={"flash_attn_2_cuda.so": ext.read_bytes()})


def _jax_cudnn_other_major(m):
    """jax[cuda12] (the real plugin METADATA, an xla_cuda_plugin.so with the real RPATH: tests/framework_builders.py)
    beside the cuDNN 8.9 wheel: XLA's dlopen of libcudnn.so.9 finds none; the pip line installs the cuDNN 9 wheel."""
    from framework_builders import jax_cuda

    a10g_535(m).packages("nvidia-cudnn-cu12==8.9.7.29")
    jax_cuda(m.package_site, m.tmp / "build")


def _jax_cudnn_older_minor(m):
    """jax[cuda12] beside an older torch's cuDNN pin (nvidia-cudnn-cu12==9.1.0.70; the plugin wants >=9.8): the pip line
    installs the cuDNN 9 wheel the model's pip has (9.10.2.21)."""
    from framework_builders import jax_cuda

    a10g_535(m).packages("nvidia-cudnn-cu12==9.1.0.70")
    jax_cuda(m.package_site, m.tmp / "build")


def _jax_libraries_missing(m):
    """jax-cuda12-plugin installed without its with-cuda extra (jax[cuda12] brings it), the cuDNN 9 wheel alone: XLA's
    dlopen of cuBLAS, cuFFT ... from the plugin finds none; the fix installs jax[cuda12] (the model's pip lays out the
    extra's nvidia wheels)."""
    from framework_builders import jax_cuda

    a10g_535(m).packages("nvidia-cudnn-cu12==9.10.2.21")
    jax_cuda(m.package_site, m.tmp / "build", wheels=False)


def _tf_cudnn_missing(m):
    """tensorflow 2.21.0 installed without its and-cuda extra (the real build_info.py and METADATA, a
    libtensorflow_framework.so.2 with the real RUNPATH: tests/framework_builders.py): TSL's dlopen of libcudnn.so.9
    finds none; the pip line reinstalls that tensorflow with its and-cuda extra, which brings the cuDNN 9 wheel."""
    from framework_builders import tensorflow_cuda

    a10g_535(m).packages()
    tensorflow_cuda(m.package_site, m.tmp / "build")


def windows(build):
    """A scenario on the Windows model machine (tests/windows_machine.py) instead of the Linux one."""
    build.windows = True
    return build


@windows
def _dll_only_on_path(m):
    """torch 2.8.0+cu128 whose torch\\lib lacks cufft64_11.dll (a damaged install) on a machine with the CUDA 12.4
    toolkit's bin on PATH: torch's own search finds none, its PATH fallback takes the toolkit's; the reinstall of the
    same build from the PyTorch index puts the DLL back in torch\\lib."""
    from windows_machine import TORCH_BUNDLED

    m.torch("2.8.0+cu128", bundled=[d for d in TORCH_BUNDLED if d != "cufft64_11.dll"]).toolkit("12.4.131")


@windows
def _dll_not_found_windows(m):
    """The same torch without a toolkit anywhere: cufft64_11.dll is found nowhere (library-not-found, in Windows words)."""
    from windows_machine import TORCH_BUNDLED

    m.torch("2.8.0+cu128", bundled=[d for d in TORCH_BUNDLED if d != "cufft64_11.dll"])


@windows
def _cupy_cuda_path_windows(m):
    """cupy-cuda12x (the real 14.2.0 wheel's modules) with CUDA_PATH on the CUDA 11.8 toolkit while 12.4 is installed
    too: CuPy adds CUDA_PATH's bin only, so cublas64_12.dll and the other CUDA 12 imports are found nowhere; the fix
    points CUDA_PATH at the 12.4 toolkit."""
    m.toolkit("12.4.131").toolkit("11.8.89", on_path=False, dlls=("cudart64_110.dll", "nvcc.exe")).cupy("cupy-cuda12x")


@windows
def _paddle_flags_windows(m):
    """paddlepaddle-gpu 2.6.2 for CUDA 11.8 and cuDNN 8.9 beside a CUDA 12.4 toolkit on PATH: NVIDIA's installer put
    CUDA 11.8 in D:\\CUDA\\v11.8 (CUDA_PATH_V11_8; cuDNN's DLLs copied into its bin), which no folder of Paddle's
    search is, so each of its DLLs is found nowhere; the fix sets FLAGS_cudnn_dir and FLAGS_cuda_dir to that bin
    (PADDLE-FLAGS: import paddle reads them from the environment)."""
    m.paddle("2.6.2", cuda="11.8", cudnn="8.9.7").toolkit("12.4.131")
    for name in ("cudnn64_8.dll", "cublas64_11.dll", "curand64_10.dll", "cusolver64_11.dll", "cusparse64_11.dll", "cufft64_10.dll"):
        m.put("D:\\CUDA\\v11.8\\bin\\" + name)
    m.env["CUDA_PATH_V11_8"] = "D:\\CUDA\\v11.8"


CONVERGES = {
    "visible-devices-empty": [_visible("")],
    "visible-devices-invalid": [_visible("7"), _visible("0,0")],
    "device-order-differs": [_device_order],
    "torch-count-differs": [_torch_count],
    "torch-missing": [a10g_535],
    "torch-import-error": [_import_error],
    "torch-cpu-only": [_cpu_torch],
    "driver-too-old-for-torch": [_driver_too_old],
    "gpu-arch-unsupported": [_arch],
    "nvcc-torch-mismatch": [_nvcc_torch, _nvcc_torch_no_toolkit],
    "cuda-link-dangling": [_dangling],
    "cuda-link-not-active": [_link_not_active],
    "multiple-toolkits-on-path": [_two_on_path],
    "cuda-home-mismatch": [_cuda_home],
    "ld-library-path-mismatch": [_ld_other_toolkit],
    "ld-library-path-missing-toolkit": [_ld_missing_toolkit],
    "toolkit-newer-than-driver": [_toolkit_too_new, _toolkit_too_new_none_older],
    "framework-conflict": [_framework_conflict],
    "framework-cpu-build": [_framework_cpu],
    "gpu-memory-busy": [_memory_busy],
    "library-shadowed": [_library_shadowed],
    "library-not-found": [_library_missing, _dll_not_found_windows, _cupy_cuda_path_windows, _paddle_flags_windows,
                          _jax_libraries_missing],
    "framework-cudnn-not-found": [_jax_cudnn_other_major, _tf_cudnn_missing],
    "framework-cudnn-too-old": [_jax_cudnn_older_minor],
    "dll-only-on-path": [_dll_only_on_path],
    "nccl-net-plugin-not-found": [_nccl_plugin_missing],
    "nvidia-wheels-mixed": [_wheels_mixed],
    "extension-abi-mismatch": [_extension_mismatch],
    "launch-blocking-set": [_launch_blocking],
}



def test_every_command_fix_has_a_convergence_case():
    """A finding whose fix the user applies in this shell converges on the model machine: a new id without a scenario
    here fails (and so does a scenario for an id whose fix is not a command)."""
    commands = {i for i in finding_ids() if fix_kind(i) == "command"}
    assert set(CONVERGES) == commands, commands ^ set(CONVERGES)


@pytest.mark.parametrize("fid,build", [(i, b) for i, builds in CONVERGES.items() for b in builds],
                         ids=lambda x: x if isinstance(x, str) else x.__name__.strip("_"))
def test_a_command_fix_converges(machine, fid, build):
    if getattr(build, "windows", False):
        from windows_machine import WindowsMachine

        machine = WindowsMachine(machine.root)
    build(machine)
    _converges(machine, fid)


def _ort_after_torch(m):
    """torch 2.8 for CUDA 12.8 (its CUDA and cuDNN DLLs in torch\\lib) and onnxruntime-gpu with no toolkit or cuDNN
    on the machine: ONNX Runtime's own search finds none of its DLLs; the usual program (torch first) works only
    because torch loaded them (dll-import-order)."""
    m.torch("2.8.0+cu128").onnxruntime_gpu("1.23.2")


@pytest.mark.parametrize("pick", ["import torch before", "preload_dlls"])
def test_a_user_code_fix_converges_on_windows(machine, pick):
    """issue 29: dll-import-order's fix is the user's program (fix_kind user-code): importing torch before onnxruntime,
    or calling onnxruntime.preload_dlls() before the first session. Applied as the user does (the program changed, and
    `doctor --import-order` told its order: WindowsMachine.apply_user_code), the finding is gone and no warning or
    error appears that was not there before."""
    from windows_machine import WindowsMachine

    m = WindowsMachine(machine.root)
    _ort_after_torch(m)
    _, found, _ = m.findings()
    f = found["dll-import-order"]
    assert f["fix_kind"] == "user-code"
    before = warned(found)
    line = next(x for x in f["fix"] if pick in x)
    assert m.apply_user_code(line), line
    _, after, data = m.findings()
    assert data["import_order"] == list(m.import_order)
    assert "dll-import-order" not in after, after.get("dll-import-order")
    assert warned(after) <= before, warned(after) - before
    # the program that does not keep the order: onnxruntime alone finds none of its DLLs
    m.import_order = ("onnxruntime",)
    assert "cudart64_12.dll (onnxruntime-gpu)" in m.findings()[1]["library-not-found"]["title"]


def test_the_link_fix_never_points_the_system_link_into_a_users_install(machine):
    # a system 12.1 behind /usr/local/cuda, then cudaenv install 13.0 && source <(cudaenv use 13.0)
    a10g_535(machine).toolkit("12.1.1")
    machine.root.link("usr/local/cuda", "/usr/local/cuda-12.1")
    machine.cudaenv_install("13.0.2")
    assert machine.apply_fix("source <(cudaenv use 13.0)")
    _, found, _ = machine.findings()
    fix = "\n".join(found["cuda-link-not-active"]["fix"])
    assert "ln -sfn" not in fix and "cudaenv link" not in fix and "sudo" not in fix, fix
    assert "cudaenv use 12.1" in fix
    _converges(machine, "cuda-link-not-active")


@pytest.mark.parametrize("installed", [None, "2.13.0+cpu", "2.7.1+cu128"])
def test_a_torch_install_fix_converges(machine, installed):
    # no torch, a CPU torch, a cu128 torch on a 535 driver (minor-version compatibility): the planned build, installed
    a10g_535(machine)
    if installed:
        from machine import ARCH_CU128

        machine.torch(installed, "12.8" if "cu" in installed else None, machine.gpu_specs, ARCH_CU128)
    _, found, _ = machine.findings()
    fid = next(i for i in ("torch-missing", "torch-cpu-only", "driver-minor-compat") if i in found)
    if fid == "driver-minor-compat":
        assert found[fid]["severity"] == "info"  # the A10G has its sm_86 cubin: nothing to fix in the build
        return
    _converges(machine, fid)
    _, after, data = machine.findings()
    assert data["torch"]["cuda_available"] is True and not warned(after)


# ------------------------------------------------------------------ fixes beyond this shell: the kind says so
def _snapshots():
    """One hand-built snapshot per finding id whose fix needs the host, a reboot or the user's code (the rules are
    pure): (id, snapshot) pairs."""
    from cudaenv.model.record import replace
    from cudaenv.model.snapshot import (ContainerHost, CdiSpec, Cudnn, Driver, EngineConfig, Framework, FrameworkImport, Gpu,
                                        GpuCondition, GpuHealth, GpuProcess, LoadedLibrary, PciDevice, Platform, PythonEnv,
                                        Snapshot, ToolStatus,
                                        VisibleDevices, XidGroup)
    from machine import A100, all_visible, cuda_torch, gpu, healthy

    h = healthy()
    no_gpu = dict(driver=None, gpus=(), visible_devices=VisibleDevices())

    def failed(failure, message="the verbatim line"):
        tools = (ToolStatus("nvidia-smi", "/usr/bin/nvidia-smi", status="failed", failure=failure, message=message),)
        return healthy(driver=Driver(version=None, kernel_module_version="550.54.15", source="proc"), gpus=(), tools=tools,
                       visible_devices=VisibleDevices())

    def boxed(env=(), libcuda=()):
        p = replace(h.platform, container="docker", nvidia_visible_devices="all", libcuda=tuple(libcuda))
        return replace(h, platform=p, env=tuple(env), driver=replace(h.driver, version="550.54.15", kernel_module_version="550.54.15"))

    def engine(containers, driver="575.64.03", gpus=None):
        uuid = "GPU-520e01f2-cf30-6396-abef-e8e9a5233b0e"
        return replace(healthy(containers=containers), driver=replace(h.driver, version=driver),
                       gpus=gpus if gpus is not None else (replace(A100, uuid=uuid),))

    spec = CdiSpec(path="/etc/cdi/nvidia.yaml", kind="nvidia.com/gpu", devices=("0", "GPU-520e01f2-cf30-6396-abef-e8e9a5233b0e", "all"),
                   driver_versions=("575.64.03",))
    systemd = EngineConfig(engine="docker", path="/etc/docker/daemon.json", runtimes=("nvidia",), cgroup_driver="systemd")
    d535 = Driver(version="535.104.05", cuda_version="12.2", source="nvml")
    two = (gpu(0), gpu(1))
    nccl = (LoadedLibrary(consumer="torch", object="/e/torch/lib/libtorch_cuda.so", needed="libnccl.so.2",
                          path="/e/nvidia/nccl/lib/libnccl.so.2", via="runpath", from_wheel=True),
            LoadedLibrary(consumer="cupy-cuda12x", object="/e/cupy/cuda/nccl.so", needed="libnccl.so.2",
                          path="/e/cupy_backends/cuda/libs/libnccl.so.2", via="runpath", from_wheel=True))
    return [
        ("wsl1-no-cuda", healthy(platform=Platform(system="linux", wsl=1, wsl_signals=("osrelease",)), driver=None, gpus=(), tools=())),
        ("wsl-linux-driver-installed", healthy(
            platform=Platform(system="linux", wsl=2, dev_dxg=True, libcuda=("/usr/lib/wsl/lib/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1")),
            driver=Driver(version="560.94", cuda_version="12.6", source="nvidia-smi", nvidia_smi="/usr/lib/wsl/lib/nvidia-smi",
                          wsl_windows_side=True))),
        ("container-no-gpu", healthy(platform=Platform(system="linux", container="docker", nvidia_visible_devices="all"),
                                     tools=(ToolStatus("nvidia-smi", None, status="missing"),), **no_gpu)),
        ("container-no-compute", boxed(env=(("NVIDIA_DRIVER_CAPABILITIES", "utility"),))),
        ("container-image-needs-newer-driver", boxed(env=(("CUDA_VERSION", "13.0.1"),),
                                                     libcuda=("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",))),
        ("nvidia-smi-hang", healthy(tools=(ToolStatus("nvidia-smi", "/usr/bin/nvidia-smi", status="timeout", seconds=5.0),))),
        ("nvidia-smi-crashed", healthy(tools=(ToolStatus("nvidia-smi", "/usr/bin/nvidia-smi", status="failed", failure="crashed",
                                                         message="nvidia-smi was killed by signal 11 (SIGSEGV)"),))),
        ("driver-library-mismatch", failed("driver-library-mismatch")),
        ("driver-not-loaded", failed("driver-not-loaded")),
        ("gpu-lost", failed("gpu-lost")),
        ("driver-no-permission", failed("no-permission")),
        ("driver-no-devices", failed("no-devices")),
        ("no-driver", Snapshot(platform=Platform(system="linux", distro_id="ubuntu", pci_nvidia_devices=("0000:01:00.0",)),
                               tools=(ToolStatus("nvml", status="missing"), ToolStatus("nvidia-smi", status="missing")))),
        ("gpu-xid", healthy(health=GpuHealth(log="dmesg", xids=(XidGroup(code=79, pci=("0000:07:00",)),)))),
        ("gpu-unreachable", healthy(health=GpuHealth(log="dmesg", unreachable=("0000:61:00.0",)))),
        ("container-toolkit-missing", engine(ContainerHost(engines=("docker",), configs=(EngineConfig(engine="docker"),)))),
        ("container-runtime-unregistered", engine(ContainerHost(engines=("docker",), nvidia_ctk="/usr/bin/nvidia-ctk",
                                                                configs=(EngineConfig(engine="docker", path="/etc/docker/daemon.json"),)))),
        ("cdi-spec-missing", engine(ContainerHost(engines=("podman",), nvidia_ctk="/usr/bin/nvidia-ctk"))),
        ("cdi-spec-stale", engine(ContainerHost(engines=("podman",), nvidia_ctk="/usr/bin/nvidia-ctk", cdi_specs=(spec,)),
                                  driver="580.95.05")),
        ("cdi-spec-uncovered", engine(ContainerHost(engines=("podman",), nvidia_ctk="/usr/bin/nvidia-ctk", cdi_specs=(spec,)),
                                      gpus=(Gpu(index=0, uuid="GPU-520e01f2-cf30-6396-abef-e8e9a5233b0e"),
                                            Gpu(index=1, uuid="GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae")))),
        ("container-cgroup-reload", engine(ContainerHost(engines=("docker",), nvidia_ctk="/usr/bin/nvidia-ctk", configs=(systemd,),
                                                         dev_char_links=False))),
        ("torch-cuda-unavailable", healthy(torch=cuda_torch(cuda_available=False, device_count=0, devices=(),
                                                            cuda_error="CUDA initialization: CUDA unknown error"))),
        ("driver-minor-compat", healthy(driver=d535, torch=cuda_torch(version="2.9.0+cu128", cuda="12.8", arch=("sm_70",)))),
        ("cudnn-mismatch", healthy(cudnn=(Cudnn("8.9.7", "/usr/include/cudnn_version_v8.h", "system", 8),
                                          Cudnn("9.6.0", "/usr/include/cudnn_version_v9.h", "system", 9)))),
        ("framework-no-gpu-on-platform", healthy(platform=replace(h.platform, system="windows"),
                                                 frameworks=(Framework(package="tensorflow", version="2.15.1", gpu_build=False),))),
        ("framework-driver-too-old", healthy(driver=d535, frameworks=(Framework(package="vllm", version="0.11.0+cu130", cuda="13.0",
                                                                               gpu_build=True, cuda_from="local-tag"),))),
        ("nccl-two-copies", healthy(libraries=nccl)),
        ("dll-two-copies", healthy(  # issue 29: torch's own cuDNN and the one ONNX Runtime's PATH search takes (Windows)
            platform=Platform(system="windows"),
            libraries=(LoadedLibrary(consumer="torch", object="C:\\e\\torch\\lib\\torch_cuda.dll", needed="cudnn64_9.dll",
                                     path="C:\\e\\torch\\lib\\cudnn64_9.dll", via="dll-dir", from_wheel=True),
                       LoadedLibrary(consumer="onnxruntime-gpu", object="C:\\e\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll",
                                     needed="cudnn64_9.dll", path="C:\\e\\torch\\lib\\cudnn64_9.dll", via="loaded",
                                     first_loaded_by="torch", own="C:\\Program Files\\NVIDIA\\CUDNN\\v9.6\\bin\\12.6\\cudnn64_9.dll")))),
        ("dll-import-order", healthy(  # issue 29: ONNX Runtime gets cudart64_12.dll only from torch, imported first (Windows)
            platform=Platform(system="windows"),
            libraries=(LoadedLibrary(consumer="torch", object="C:\\e\\torch\\lib\\torch_cuda.dll", needed="cudart64_12.dll",
                                     path="C:\\e\\torch\\lib\\cudart64_12.dll", via="dll-dir", from_wheel=True),
                       LoadedLibrary(consumer="onnxruntime-gpu", object="C:\\e\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll",
                                     needed="cudart64_12.dll", path="C:\\e\\torch\\lib\\cudart64_12.dll", via="loaded",
                                     first_loaded_by="torch")))),
        ("libcuda-not-found", healthy(  # issue 29: WSL 2's /usr/lib/wsl/lib left out of the loader's configuration
            platform=Platform(system="linux", wsl=2, dev_dxg=True, libcuda=("/usr/lib/wsl/lib/libcuda.so.1",)),
            libraries=(LoadedLibrary(consumer="torch", object="/e/nvidia/cuda_runtime/lib/libcudart.so.12", needed="libcuda.so.1",
                                     loaded_by="dlopen"),))),
        ("framework-import-failed", healthy(framework_imports=(FrameworkImport(
            package="flash-attn", module="flash_attn", imported=False,
            error="ImportError: /e/flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"),))),
        ("framework-no-gpu-seen", healthy(framework_imports=(FrameworkImport(
            package="onnxruntime-gpu", module="onnxruntime", check="onnxruntime", imported=True, gpu_count=0,
            detail="session providers: CPUExecutionProvider"),))),
        ("stale-gpu-process", healthy(processes=(GpuProcess(pid=999, name="python", used_memory_mib=4000, gpu_index=0, state="gone"),))),
        ("pixi-cuda-above-driver", healthy(python_env=PythonEnv("pixi", "/ws/.pixi/envs/default", "pixi", None, "default",
                                                                "/ws/pixi.toml", "13.1"))),
        ("conda-cuda-above-driver", healthy(python_env=PythonEnv("conda", "/opt/conda/envs/cu", "conda", "24.11.3", "cu",
                                                                 cuda_packages=("cuda-version=13.1=h1_0",)))),
        ("hint-launch-blocking", h),
        ("hint-distributed-debug", healthy(gpus=two, visible_devices=all_visible(two), torch=cuda_torch(count=2))),
        ("hint-nccl-debug", healthy(gpus=two, visible_devices=all_visible(two), torch=cuda_torch(count=2))),
        # issue 30: each GPU's condition (nvidia-smi -q) and its PCIe link (lspci, sysfs)
        ("gpu-row-remap-failed", healthy(gpu_conditions=(GpuCondition(pci_bus_id="00000000:07:00.0", remap_failed=True),))),
        ("gpu-ecc-uncorrectable", healthy(gpu_conditions=(GpuCondition(pci_bus_id="00000000:07:00.0", ecc_volatile_uncorrected=2),))),
        ("gpu-memory-repair-pending", healthy(gpu_conditions=(GpuCondition(pci_bus_id="00000000:07:00.0", remap_pending=True),))),
        ("gpu-clocks-slowdown", healthy(gpu_conditions=(GpuCondition(pci_bus_id="00000000:07:00.0", slowdowns=("HW Slowdown",)),))),
        ("gpu-pci-unreadable", healthy(pci_devices=(PciDevice(address="07:00.0", revision="ff"),))),
        ("gpu-pcie-link-downgraded", healthy(pci_devices=(PciDevice(address="0000:07:00.0", link_width=8, link_cap_width=16,
                                                                    source="sysfs"),))),
    ]


def _image_cases():
    """issue 30: doctor --image's findings, from the image rule (cudaenv.diagnose.image, not diagnose()): (id, snapshot,
    image) triples."""
    from cudaenv.model.record import replace
    from cudaenv.model.reports import ImageFacts
    from machine import healthy

    h = healthy()
    old = replace(h, driver=replace(h.driver, version="535.247.01", cuda_version="12.2", kernel_module_version="535.247.01"))
    branch = replace(h, driver=replace(h.driver, version="470.82.01", cuda_version="11.4", kernel_module_version="470.82.01"))
    return [
        ("image-unreadable", h, ImageFacts("nope.tar", "unknown", readable=False, why="no such file")),
        ("image-no-cuda", h, ImageFacts("b.json", "config-json")),
        ("image-no-driver", healthy(driver=None), ImageFacts("c.json", "config-json", cuda_version="12.4.1")),
        ("image-forward-compat", branch, ImageFacts("c.json", "config-json", cuda_version="12.0.0",
                                                    require_cuda="cuda>=12.0 brand=tesla,driver>=470,driver<471")),
        ("image-needs-newer-driver", old, ImageFacts("c.json", "config-json", cuda_version="13.0.1", require_cuda="cuda>=13.0")),
    ]


@pytest.mark.parametrize("fid,snapshot,image", _image_cases(), ids=lambda x: x if isinstance(x, str) else "")
def test_an_images_fix_says_what_it_needs(fid, snapshot, image):
    from cudaenv.diagnose import image as image_rules
    from cudaenv.diagnose.view import build_view
    from cudaenv.render.report import render_report
    from cudaenv.render.text import FIX_NEEDS

    found = {f.id: f for f in image_rules.check(snapshot, image)}
    assert fid in found, sorted(found)
    f = found[fid]
    assert f.fix and f.fix_kind == fix_kind(fid) and f.fix_kind in ("host", "reboot", "user-code")
    assert "fix (%s):" % FIX_NEEDS[f.fix_kind] in render_report(snapshot, tuple(found.values()), build_view(snapshot, image=image))


def test_every_finding_id_has_a_case():
    """Each finding id is here: converged on the model machine (a command) or checked for the kind of its fix."""
    beyond = {fid for fid, _ in _snapshots()} | {fid for fid, _, _ in _image_cases()}
    assert not beyond & set(CONVERGES)
    assert beyond | set(CONVERGES) == set(finding_ids())


@pytest.mark.parametrize("fid,snapshot", _snapshots(), ids=lambda x: x if isinstance(x, str) else "")
def test_a_fix_beyond_this_shell_says_what_it_needs(fid, snapshot):
    from cudaenv.diagnose import diagnose
    from cudaenv.diagnose.view import build_view
    from cudaenv.render.report import render_report
    from cudaenv.render.text import FIX_NEEDS

    found = {f.id: f for f in diagnose(snapshot)}
    assert fid in found, sorted(found)
    f = found[fid]
    assert f.fix and f.fix_kind == fix_kind(fid), (f.fix_kind, fix_kind(fid))
    assert f.fix_kind in ("host", "reboot", "user-code")
    text = render_report(snapshot, tuple(found.values()), build_view(snapshot))
    if f.section != "hints":  # a hint shows its command alone
        assert "fix (%s):" % FIX_NEEDS[f.fix_kind] in text
