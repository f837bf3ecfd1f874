"""Issue 13, the driver and GPU side: containers (the host's driver, host pids), Jetson boards, the GPU arch
checked without importing torch, and a report that counts what it shows. Each test failed before its fix."""

from cudaenv.diagnose import diagnose
from cudaenv.render.markdown import render_markdown
from cudaenv.render.report import render_report
from cudaenv.model.record import replace
from cudaenv.model.snapshot import Driver, GpuProcess, Jetson, Platform, Torch
from cudaenv.diagnose.view import build_view
from builders import recorded
from machine import ARCH_CU128, GTX1080TI as GTX1080TI_GPUS, PY, cuda_torch, gpu, healthy


def ids(s):
    return [f.id for f in diagnose(s)]


def one(s, fid):
    found = [f for f in diagnose(s) if f.id == fid]
    assert found, "no %s in %s" % (fid, ids(s))
    return found[0]

def check_line(text: str, label: str) -> str:
    """A checklist line with its wrapped continuation lines joined."""
    out, found = [], False
    for line in text.splitlines():
        if not found and line[10:].startswith(label):
            found = True
            out.append(line)
        elif found and line.startswith(" " * 31) and line.strip():
            out.append(line.strip())
        elif found:
            break
    return " ".join(out)


GTX1080TI = gpu(0, name="NVIDIA GeForce GTX 1080 Ti", cc="6.1", used=500, total=11264)


def in_docker(s, **platform):
    return replace(s, platform=replace(s.platform, container="docker", container_signals=("/.dockerenv",), **platform))


def old_driver(s):
    return replace(s, driver=Driver(version="535.183.01", cuda_version="12.2", kernel_module_version="535.183.01", source="nvml"))


# ------------------------------------------------------------------------------------ containers: the host's driver
def test_driver_too_old_inside_a_container_says_upgrade_it_on_the_host():
    f = one(in_docker(old_driver(healthy())), "driver-too-old-for-torch")
    fix = "\n".join(f.fix)
    assert "host" in fix and "ubuntu-drivers" not in fix and "apt-get install nvidia-driver" not in fix
    assert "580" in fix  # the driver the image's CUDA 13.0 needs
    assert "nvidia-smi" in fix  # how to tell which driver the host has
    assert "sudo reboot" not in fix  # not this container's to reboot


def test_driver_minor_compat_inside_kubernetes_names_the_node_driver():
    s = healthy(torch=cuda_torch(version="2.13.0+cu128", cuda="12.8"))
    s = replace(old_driver(s), platform=replace(s.platform, container="kubernetes"))
    f = one(s, "driver-minor-compat")
    fix = "\n".join(f.fix)
    assert "node" in fix and "ubuntu-drivers" not in fix and "570" in fix


def test_outside_a_container_the_distro_command_stays():
    f = one(old_driver(healthy()), "driver-too-old-for-torch")
    assert any("ubuntu-drivers install" in x for x in f.fix)


# ------------------------------------------------------------------------------- containers: pids of other namespaces
def test_another_containers_pid_is_not_stale_and_no_gpu_reset_is_offered():
    busy = gpu(0, used=80000)
    procs = (GpuProcess(pid=4242, name="python", used_memory_mib=70000, gpu_index=0, state="elsewhere"),)
    s = in_docker(healthy(gpus=(busy,), processes=procs), pid_namespace="container")
    found = diagnose(s)
    assert "stale-gpu-process" not in [f.id for f in found]
    assert not any("--gpu-reset" in x for f in found for x in f.fix)
    busy_f = next(f for f in found if f.id == "gpu-memory-busy")
    assert not any(x.startswith("kill 4242") for x in busy_f.fix)  # not this container's to kill
    assert "another" in busy_f.detail


def test_a_gone_pid_in_a_container_never_gets_a_gpu_reset():
    procs = (GpuProcess(pid=777, name="python", used_memory_mib=100, gpu_index=0, state="gone"),)
    found = diagnose(in_docker(healthy(processes=procs)))
    assert not any("--gpu-reset" in x for f in found for x in f.fix)


def test_the_probe_marks_pids_outside_this_pid_namespace(fake_root, fake_bin):
    from cudaenv.probes import nvidia as nv

    fake_bin.command("nvidia-smi", by_args={"--query-gpu": (recorded("smi-query-2080ti-x4.txt"), 0),
                                            "--query-compute-apps": (recorded("smi-apps-2080ti.txt"), 0)})
    fake_root.dir("proc")
    host = fake_root.host(path=fake_bin.env_path)
    inside = nv.probe_nvidia(host, [], platform=Platform(system="linux", container="docker", pid_namespace="container"))
    assert {p.state for p in inside.processes} == {"elsewhere"}
    outside = nv.probe_nvidia(host, [], platform=Platform(system="linux", pid_namespace="initial"))
    assert {p.state for p in outside.processes} == {"gone"}
    unknown = nv.probe_nvidia(host, [], platform=Platform(system="linux", container="podman"))
    assert {p.state for p in unknown.processes} == {"elsewhere"}  # a container, namespace unread: never "gone"


# -------------------------------------------------------------------------------------------------- Jetson
def jetson():
    s = healthy(torch=cuda_torch(version="2.13.0+cu126", cuda="12.6"))
    return replace(s, platform=replace(s.platform, machine="aarch64", distro="Ubuntu 22.04.5 LTS",
                                       jetson=Jetson(l4t="36.4.3", jetpack="6.2", soc="tegra234", signals=("/etc/nv_tegra_release",))),
                   driver=Driver(version="36.4.3", kernel_module="open", kernel_module_version="36.4.3", source="proc"))


def test_jetson_is_never_told_to_upgrade_the_driver_to_a_desktop_series():
    found = diagnose(jetson())
    text = "\n".join([f.detail for f in found] + [x for f in found for x in f.fix])
    assert "525.60.13" not in text and "ubuntu-drivers" not in text
    assert "driver-too-old-for-torch" not in [f.id for f in found]
    report = render_report(jetson(), found, build_view(jetson()))
    assert "525.60.13" not in report and "L4T 36.4.3 (JetPack 6.2)" in check_line(report, "driver")
    assert "| Driver | Jetson L4T 36.4.3 (JetPack 6.2) |" in render_markdown(jetson(), found, build_view(jetson()))


# ------------------------------------------------------------------------ GPU arch without importing torch
def quick_1080ti(**torch):
    t = Torch(python=PY, installed=True, version="2.8.0+cu128", cuda="12.8", dynamic=False, **torch)
    s = healthy(gpus=(GTX1080TI,), torch=t)
    return replace(s, visible_devices=replace(s.visible_devices))


def test_quick_doctor_checks_the_arch_from_the_tables():
    f = one(quick_1080ti(), "gpu-arch-unsupported")
    assert f.severity == "error" and "6.1" in f.detail and "sm_70" in f.detail and "not imported" in f.detail


def test_a_failed_import_still_checks_the_arch():
    s = quick_1080ti(import_error="ImportError: libcudnn.so.9: cannot open shared object file")
    assert "gpu-arch-unsupported" in ids(s)
    text = render_report(s, diagnose(s), build_view(s))
    assert "--quick" not in text  # --quick was not given
    arch = check_line(text, "GPU arch")
    assert arch.split()[0] == "error"


def test_no_table_row_says_so_instead_of_guessing():
    t = Torch(python=PY, installed=True, version="1.4.0+cu92", cuda="9.2", dynamic=False)
    s = healthy(gpus=(GTX1080TI,), torch=t)
    assert "gpu-arch-unsupported" not in ids(s)
    line = check_line(render_report(s, diagnose(s), build_view(s)), "GPU arch")
    assert "not checked" in line and "1.4.0" in line


def test_quick_on_a_supported_gpu_is_ok():
    s = healthy(torch=Torch(python=PY, installed=True, version="2.8.0+cu128", cuda="12.8", dynamic=False))
    assert "gpu-arch-unsupported" not in ids(s)
    line = check_line(render_report(s, diagnose(s), build_view(s)), "GPU arch")
    assert line.split()[0] == "ok" and "--quick" in line


# ---------------------------------------------------------------------------------------------- the report
def test_a_failed_import_renders_the_device_count_as_not_known():
    t = cuda_torch(import_error="ImportError: undefined symbol: ncclCommRegister", device_count=None, cuda_available=None, devices=())
    s = healthy(torch=t)
    for text in (render_report(s, diagnose(s), build_view(s)), render_markdown(s, diagnose(s), build_view(s))):
        assert "None" not in text
        line = next(x for x in text.splitlines() if "torch devices" in x)
        assert "not known" in line and "import" in line


def test_problems_line_counts_the_infos_it_shows():
    s = healthy(torch=None)  # torch-missing is info
    s = replace(s, processes=(GpuProcess(pid=1, state="zombie", gpu_index=0),))  # stale-gpu-process: a warning
    text = render_report(s, diagnose(s), build_view(s))
    assert "Problems: 0 errors, 1 warning, 1 info" in text


# ------------------------------------------------------------------------------------- end to end (doctor CLI)
def test_doctor_quick_on_a_1080_ti_with_torch_2_8_cu128(machine):
    """Issue 13: `doctor --quick` said "not checked"; the build's arch list is in data/torch_arch.json."""
    machine.smi(query=recorded("diag-query-1080ti.txt"), banner=recorded("diag-banner-1080ti.txt"))
    machine.torch("2.8.0+cu128", "12.8", GTX1080TI_GPUS, ARCH_CU128)
    code, found, _ = machine.findings("--quick")
    f = found["gpu-arch-unsupported"]
    assert code == 1 and "6.1" in f["detail"] and "--quick" in f["detail"]


def test_doctor_with_a_failed_import_on_a_1080_ti(machine):
    machine.smi(query=recorded("diag-query-1080ti.txt"), banner=recorded("diag-banner-1080ti.txt"))
    machine.torch("2.8.0+cu128", "12.8", GTX1080TI_GPUS, ARCH_CU128, init_raises="ImportError('libcudnn.so.9: cannot open shared object file')")
    code, found, _ = machine.findings()
    assert "torch-import-error" in found and "import torch failed" in found["gpu-arch-unsupported"]["detail"]
    text = machine.doctor(fmt=None).out
    assert "None" not in check_line(text, "torch devices") and "not known" in check_line(text, "torch devices")
