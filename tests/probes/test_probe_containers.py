"""probes/containers.py in fake roots: engines by their programs or config files, the toolkit's programs and dpkg
packages, each engine's config (recorded real formats), the CDI specs, /dev/char links; nothing inside a container,
nothing on a machine without an engine or the toolkit."""

from builders import recorded, stanza
from cudaenv.model.snapshot import Platform
from cudaenv.probes.containers import probe_containers

HOST = Platform(system="linux")


def probe(host, platform=HOST):
    notes = []
    return probe_containers(host, notes, platform), notes


def test_docker_host_with_the_toolkit_and_a_cdi_spec(fake_root, fake_bin):
    fake_bin.command("docker")
    fake_bin.command("nvidia-ctk")
    fake_root.file("etc/docker/daemon.json", recorded("docker-daemon-nvidia-cgroupfs.json"))
    fake_root.file("etc/cdi/nvidia.yaml", recorded("cdi-nvidia-575-one-gpu.yaml"))
    fake_root.file("etc/cdi/README.txt", "not a spec")
    fake_root.file("var/lib/dpkg/status", stanza("nvidia-container-toolkit", "1.17.8-1") + "\n"
                   + stanza("libnvidia-container1", "1.17.8-1") + "\n" + stanza("docker.io", "26.1.3"))
    fake_root.link("dev/char/195:0", "../nvidia0")
    h, notes = probe(fake_root.host(path=fake_bin.env_path))
    assert h.engines == ("docker",) and h.nvidia_ctk == str(fake_bin.path / "nvidia-ctk") and h.nvidia_container_cli is None
    assert h.packages == ("nvidia-container-toolkit=1.17.8-1", "libnvidia-container1=1.17.8-1")
    (docker,) = h.configs
    assert (docker.engine, docker.path, docker.runtimes, docker.cgroup_driver) == ("docker", "/etc/docker/daemon.json", ("nvidia",), "cgroupfs")
    assert [(s.path, s.driver_versions) for s in h.cdi_specs] == [("/etc/cdi/nvidia.yaml", ("575.64.03",))]
    assert h.dev_char_links is True and notes == []


def test_kubernetes_node_by_its_files_alone(fake_root):
    fake_root.file("etc/containerd/config.toml", recorded("containerd-config-cdi-no-nvidia.toml"))
    fake_root.file("etc/crio/crio.conf.d/99-nvidia.toml", recorded("crio-conf-nvidia-ctk.toml"))
    fake_root.dir("dev/char")
    h, _ = probe(fake_root.host())
    assert h.engines == ("containerd", "crio") and h.packages == ()
    assert [(c.engine, c.runtimes, c.cdi) for c in h.configs] == [
        ("containerd", ("runc",), True), ("crio", ("crun", "nvidia", "nvidia-cdi", "nvidia-legacy"), None)]
    assert h.cdi_specs == () and h.dev_char_links is False


def test_rootless_docker_config_and_a_docker_without_daemon_json(fake_root, fake_bin):
    fake_bin.command("dockerd")
    fake_root.file("home/ann/.config/docker/daemon.json", '{"features": {"cdi": true}}')
    h, _ = probe(fake_root.host(path=fake_bin.env_path, env={"HOME": "/home/ann"}))
    assert [(c.engine, c.path, c.runtimes, c.cdi) for c in h.configs] == [
        ("docker", None, (), None), ("docker-rootless", "/home/ann/.config/docker/daemon.json", (), True)]
    assert h.dev_char_links is None


def test_nothing_without_an_engine_or_the_toolkit_and_nothing_in_a_container(fake_root, fake_bin):
    assert probe(fake_root.host()) == (None, [])
    fake_bin.command("docker")
    boxed = Platform(system="linux", container="docker")
    assert probe(fake_root.host(path=fake_bin.env_path), boxed) == (None, [])
    fake_bin.command("nvidia-container-cli")
    assert probe(fake_root.host(path=fake_bin.env_path))[0].nvidia_container_cli == str(fake_bin.path / "nvidia-container-cli")


def test_podman_reads_its_containers_conf_in_order_and_the_cdi_folders_it_names(fake_root, fake_bin):
    fake_bin.command("podman")
    fake_root.file("usr/share/containers/containers.conf", '[engine]\ncgroup_manager = "systemd"\n')
    fake_root.file("etc/containers/containers.conf", recorded("podman-containers-conf-cdi.conf"))
    fake_root.file("home/ann/.config/containers/containers.conf", '[engine]\ncdi_spec_dirs = ["/opt/cdi"]\n')
    fake_root.file("opt/cdi/nvidia.yaml", recorded("cdi-nvidia-575-one-gpu.yaml"))
    fake_root.file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
    h, notes = probe(fake_root.host(path=fake_bin.env_path, env={"HOME": "/home/ann"}))
    (podman,) = h.configs
    assert (podman.engine, podman.path, podman.cgroup_driver, podman.cdi, podman.cdi_spec_dirs) == (
        "podman", "/home/ann/.config/containers/containers.conf", "systemd", True, ("/opt/cdi",))
    assert [s.path for s in h.cdi_specs] == ["/opt/cdi/nvidia.yaml"] and h.cgroup_v2 is True and notes == []


def test_cgroup_v1_and_containers_conf_without_podman(fake_root, fake_bin):
    fake_bin.command("docker")
    fake_root.file("etc/containers/containers.conf", recorded("podman-containers-conf-cdi.conf"))  # skopeo's, say
    assert probe(fake_root.host(path=fake_bin.env_path))[0].cgroup_v2 is None  # no /sys/fs/cgroup: not known
    fake_root.dir("sys/fs/cgroup/memory")
    h, _ = probe(fake_root.host(path=fake_bin.env_path))
    assert h.cgroup_v2 is False and [c.engine for c in h.configs] == ["docker"]
