"""parse/container_config.py on recorded engine configs and a CDI spec as nvidia-ctk writes it; damaged and hostile
input gives what could be read, never an exception, in linear work."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear, recorded
from cudaenv.parse.container_config import (gpu_devices, parse_cdi_spec, parse_containers_conf, parse_docker_daemon,
                                            parse_toml_runtimes)


def test_cdi_spec_from_nvidia_ctk():
    spec = parse_cdi_spec(recorded("cdi-nvidia-575-one-gpu.yaml"), "/etc/cdi/nvidia.yaml")
    assert (spec.kind, spec.devices, spec.driver_versions) == (
        "nvidia.com/gpu", ("0", "GPU-520e01f2-cf30-6396-abef-e8e9a5233b0e", "all"), ("575.64.03",))
    assert gpu_devices(spec) == ("0", "GPU-520e01f2-cf30-6396-abef-e8e9a5233b0e") and spec.readable


def test_cdi_spec_as_json():
    doc = {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [{"name": "0"}, {"name": "all"}],
           "containerEdits": {"mounts": [{"hostPath": "/usr/lib64/libcuda.so.550.54.15"}]}}
    spec = parse_cdi_spec(json.dumps(doc), "/var/run/cdi/nvidia.json")
    assert (spec.kind, spec.devices, spec.driver_versions) == ("nvidia.com/gpu", ("0", "all"), ("550.54.15",))
    assert parse_cdi_spec("{not json").readable is False and parse_cdi_spec("[1]").readable is False


def test_docker_daemon_json_forms():
    a = parse_docker_daemon(recorded("docker-daemon-nvidia-cgroupfs.json"))
    assert (a.runtimes, a.cgroup_driver, a.cdi) == (("nvidia",), "cgroupfs", None)
    assert parse_docker_daemon(recorded("docker-daemon-nvidia-runtime-args.json")).runtimes == ("nvidia",)
    b = parse_docker_daemon('{"exec-opts": ["native.cgroupdriver=systemd"], "features": {"cdi": true}, "default-runtime": "nvidia"}')
    assert (b.runtimes, b.cgroup_driver, b.cdi, b.default_runtime) == ((), "systemd", True, "nvidia")
    assert parse_docker_daemon("").runtimes == () and parse_docker_daemon("{").readable is False
    assert parse_docker_daemon('["x"]').readable is False and parse_docker_daemon('{"runtimes": 3}').runtimes == ()


def test_containerd_and_crio_tables():
    ctd = parse_toml_runtimes(recorded("containerd-config-cdi-no-nvidia.toml"))
    assert (ctd.runtimes, ctd.cgroup_driver, ctd.cdi) == (("runc",), "cgroupfs", True)
    crio = parse_toml_runtimes(recorded("crio-conf-nvidia-ctk.toml"), "crio")
    assert crio.engine == "crio" and crio.runtimes == ("crun", "nvidia", "nvidia-cdi", "nvidia-legacy")
    v3 = parse_toml_runtimes('[plugins."io.containerd.cri.v1.runtime".containerd.runtimes."nvidia"]\n  SystemdCgroup = true\n')
    assert (v3.runtimes, v3.cgroup_driver) == (("nvidia",), "systemd")


@settings(max_examples=150)
@given(st.one_of(st.text(), st.binary()))
def test_any_input_never_raises(data):
    assert isinstance(parse_cdi_spec(data).devices, tuple)
    assert isinstance(parse_docker_daemon(data).runtimes, tuple)
    assert isinstance(parse_toml_runtimes(data).runtimes, tuple)


@pytest.mark.parametrize("parse, unit", [
    (parse_cdi_spec, "  - containerPath: /usr/lib/libcuda.so.575.64.03\n    hostPath: /usr/lib/libcuda.so.575.64.03\n"),
    (parse_cdi_spec, "- name: GPU-520e01f2\n"),
    (parse_toml_runtimes, '[plugins."a".containerd.runtimes.nvidia]\nSystemdCgroup = true\n'),
    (parse_toml_runtimes, "[" + "a." * 200 + "\n"),
])
def test_linear_on_hostile_files(parse, unit):
    assert_linear(parse, unit)


def test_podman_containers_conf():
    real = parse_containers_conf(recorded("podman-containers-conf-cdi.conf"))
    assert (real.engine, real.cdi, real.cdi_spec_dirs, real.hooks_dirs, real.cgroup_driver) == (
        "podman", True, ("/etc/cdi", "/var/run/cdi"), (), None)
    # containers.conf(5)'s forms: a multi-line array with comments, cgroup_manager; keys outside [engine] do not count
    text = ('[containers]\ncgroup_manager = "cgroupfs"\n[engine]\n# cdi_spec_dirs = ["/nope"]\ncgroup_manager = "systemd"\n'
            'cdi_spec_dirs = [\n  "/opt/cdi",  # the site\'s\n  "/etc/cdi",\n]\nhooks_dir = ["/usr/share/containers/oci/hooks.d"]\n')
    c = parse_containers_conf(text)
    assert (c.cgroup_driver, c.cdi_spec_dirs, c.hooks_dirs) == ("systemd", ("/opt/cdi", "/etc/cdi"), ("/usr/share/containers/oci/hooks.d",))
    crio = parse_toml_runtimes('[crio.runtime]\ncgroup_manager = "cgroupfs"\n', "crio")
    assert crio.cgroup_driver == "cgroupfs"


@settings(max_examples=150)
@given(st.one_of(st.text(), st.binary()))
def test_any_containers_conf_never_raises(data):
    c = parse_containers_conf(data)
    assert len(c.cdi_spec_dirs) <= 64 and len(c.hooks_dirs) <= 64


def test_containers_conf_linear():
    assert_linear(parse_containers_conf, '"/a", ', head="[engine]\ncdi_spec_dirs = [\n")
