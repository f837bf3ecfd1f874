"""The Containers section's findings on hand-built snapshots (the rules are pure), its checklist rows, and one doctor
run on a fake Docker host: the toolkit missing, the runtime unregistered per engine with nvidia-ctk's own command,
CDI specs missing, stale after a driver upgrade or not covering a GPU, and the daemon-reload hazard."""

from builders import recorded
from cudaenv.diagnose import diagnose
from cudaenv.model.snapshot import ContainerHost, EngineConfig, Gpu, Platform
from cudaenv.parse.container_config import parse_cdi_spec, parse_docker_daemon, parse_toml_runtimes
from cudaenv.diagnose.view import build_view
from cudaenv.render.report import render_report

from machine import A100, healthy

CTK = "/usr/bin/nvidia-ctk"
SPEC = parse_cdi_spec(recorded("cdi-nvidia-575-one-gpu.yaml"), "/etc/cdi/nvidia.yaml")
UUID = "GPU-520e01f2-cf30-6396-abef-e8e9a5233b0e"


def found(s):
    return {f.id: f for f in diagnose(s)}


def host(containers, driver="575.64.03", gpus=None):
    s = healthy(containers=containers)
    from cudaenv.model.record import replace

    return replace(s, driver=replace(s.driver, version=driver), gpus=gpus if gpus is not None else (replace(A100, uuid=UUID),))


def test_an_engine_without_the_toolkit():
    f = found(host(ContainerHost(engines=("docker", "podman"), configs=(EngineConfig(engine="docker"),))))
    t = f["container-toolkit-missing"]
    assert t.severity == "error" and t.section == "containers" and t.title == "no NVIDIA Container Toolkit for docker, podman"
    assert t.fix[1:] == ("sudo nvidia-ctk runtime configure --runtime=docker", "sudo systemctl restart docker",
                         "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml    # podman uses CDI")
    assert "install-guide.html" in t.fix[0] and not {"container-runtime-unregistered", "cdi-spec-missing"} & set(f)


def test_runtime_unregistered_per_engine_with_its_restart():
    configs = (EngineConfig(engine="docker", path="/etc/docker/daemon.json"),
               EngineConfig(engine="docker-rootless", path="/home/ann/.config/docker/daemon.json"),
               parse_toml_runtimes(recorded("crio-conf-nvidia-ctk.toml"), "crio"))
    u = found(host(ContainerHost(engines=("docker", "crio"), nvidia_ctk=CTK, configs=configs)))["container-runtime-unregistered"]
    assert u.severity == "warning" and u.title == "the nvidia runtime is not registered with docker, docker-rootless"
    assert u.fix == ("sudo nvidia-ctk runtime configure --runtime=docker", "sudo systemctl restart docker",
                     "nvidia-ctk runtime configure --runtime=docker --config=/home/ann/.config/docker/daemon.json",
                     "sudo nvidia-ctk config --set nvidia-container-cli.no-cgroups --in-place    # rootless: no cgroups",
                     "systemctl --user restart docker")


def test_containerd_with_cdi_on_and_a_spec_needs_no_runtime():
    ctd = parse_toml_runtimes(recorded("containerd-config-cdi-no-nvidia.toml"))
    ok = found(host(ContainerHost(engines=("containerd",), nvidia_ctk=CTK, configs=(ctd,), cdi_specs=(SPEC,))))
    assert not {"container-runtime-unregistered", "cdi-spec-missing", "cdi-spec-stale", "cdi-spec-uncovered"} & set(ok)
    missing = found(host(ContainerHost(engines=("containerd",), nvidia_ctk=CTK, configs=(ctd,))))
    assert missing["cdi-spec-missing"].fix[0] == "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"
    assert "containerd" in missing["container-runtime-unregistered"].title


def test_a_spec_written_for_the_old_driver_and_one_gpu_short():
    gpus = (Gpu(index=0, uuid=UUID), Gpu(index=1, uuid="GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae"))
    f = found(host(ContainerHost(engines=("podman",), nvidia_ctk=CTK, cdi_specs=(SPEC,)), driver="580.95.05", gpus=gpus))
    stale = f["cdi-spec-stale"]
    assert stale.severity == "error" and "/etc/cdi/nvidia.yaml was written for driver 575.64.03; the driver is now 580.95.05" in stale.detail
    assert "GPUs GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae are not in it" in f["cdi-spec-uncovered"].detail


def test_the_daemon_reload_hazard_and_its_workaround():
    systemd = parse_docker_daemon('{"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}, "exec-opts": ["native.cgroupdriver=systemd"]}')
    h = ContainerHost(engines=("docker",), nvidia_ctk=CTK, configs=(systemd,), dev_char_links=False)
    r = found(host(h))["container-cgroup-reload"]
    assert "Failed to initialize NVML: Unknown Error" in r.detail and r.fix[0] == "sudo nvidia-ctk system create-dev-char-symlinks --create-all"
    assert "71-nvidia-dev-char.rules" in r.fix[1]
    from cudaenv.model.record import replace

    assert "container-cgroup-reload" not in found(host(replace(h, dev_char_links=True)))
    assert "container-cgroup-reload" not in found(host(replace(h, configs=(parse_docker_daemon(recorded("docker-daemon-nvidia-cgroupfs.json")),))))


def test_the_checklist_shows_the_section_only_on_a_container_host():
    assert "Containers" not in render_report(healthy(), diagnose(healthy()), build_view(healthy()))
    ctd = parse_toml_runtimes(recorded("containerd-config-cdi-no-nvidia.toml"))
    s = host(ContainerHost(engines=("containerd",), packages=("nvidia-container-toolkit=1.17.8-1",), configs=(ctd,), cdi_specs=(SPEC,)))
    text = render_report(s, diagnose(s), build_view(s))
    flat = " ".join(text.split())  # the checklist wraps its facts at 80 columns
    assert "\nContainers\n" in text and "ok container runtime containerd; nvidia-container-toolkit=1.17.8-1; containerd: runc" in flat
    assert "ok CDI /etc/cdi/nvidia.yaml (driver 575.64.03, 3 device names)" in flat


def test_doctor_on_a_docker_host(machine):
    machine.bin.command("docker")
    machine.bin.command("nvidia-ctk")
    machine.root.file("etc/docker/daemon.json", '{"exec-opts": ["native.cgroupdriver=systemd"]}')
    machine.root.dir("dev/char")
    code, found_, data = machine.findings("--quick")
    assert found_["container-runtime-unregistered"]["fix"][:2] == ["sudo nvidia-ctk runtime configure --runtime=docker", "sudo systemctl restart docker"]
    assert found_["container-cgroup-reload"]["severity"] == "warning"
    assert data["containers"]["engines"] == ["docker"] and data["containers"]["configs"][0]["cgroup_driver"] == "systemd"


def test_no_platform_container_host_section_inside_a_container():
    s = healthy(platform=Platform(system="linux", container="docker"))
    assert "Containers" not in render_report(s, diagnose(s), build_view(s))


def test_the_reload_hazard_from_an_engines_default_cgroup_driver():
    """No cgroup driver set: Docker's default is systemd on a cgroup v2 host (moby/moby#40846), cgroupfs on v1; CRI-O's
    is systemd; Podman finds GPUs through CDI (no hazard) and registers no runtime."""
    from cudaenv.model.record import replace

    bare = ContainerHost(engines=("docker",), nvidia_ctk=CTK, configs=(EngineConfig(engine="docker", runtimes=("nvidia",)),),
                         dev_char_links=False, cgroup_v2=True)
    r = found(host(bare))["container-cgroup-reload"]
    assert "docker manages container cgroups through systemd" in r.detail
    assert "(docker sets no cgroup driver: systemd is the default on this cgroup v2 host)" in r.detail
    assert "container-cgroup-reload" not in found(host(replace(bare, cgroup_v2=False)))
    assert "container-cgroup-reload" not in found(host(replace(bare, cgroup_v2=None)))
    crio = ContainerHost(engines=("crio",), nvidia_ctk=CTK, configs=(EngineConfig(engine="crio", runtimes=("nvidia",)),),
                         dev_char_links=False)
    assert "(crio sets no cgroup driver: systemd is the default)" in found(host(crio))["container-cgroup-reload"].detail
    podman = ContainerHost(engines=("podman",), nvidia_ctk=CTK, dev_char_links=False, cgroup_v2=True, cdi_specs=(SPEC,),
                           configs=(EngineConfig(engine="podman", cgroup_driver="systemd", cdi=True, cdi_spec_dirs=("/opt/cdi",)),))
    assert not {"container-cgroup-reload", "container-runtime-unregistered"} & set(found(host(podman)))
    missing = found(host(replace(podman, cdi_specs=())))["cdi-spec-missing"]
    assert "none of /etc/cdi, /var/run/cdi, /opt/cdi holds one" in missing.detail
