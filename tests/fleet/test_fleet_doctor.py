"""Issue 16, per node: `cudaenv doctor --output` (one report per node, written atomically, named after the host)
and `--format prometheus` (node_exporter's textfile format), on stand-in nodes (fake roots and a fake nvidia-smi)."""

import json
import os
import re
import time

import pytest

from machine import A10G, ARCH_CU121, a10g_535

from cudaenv.fleet.files import output_path, report_filename
from cudaenv.model.reports import DoctorReport
from cudaenv.render.prometheus import label_value, render_prometheus
from machine import healthy
from cudaenv.model.reports import Finding

# ------------------------------------------------------------------ a strict reader of the exposition format
_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_VALUE = r'(?:[^"\\\n]|\\[\\"n])*'
_SAMPLE = re.compile(r"^(%s)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*=\"%s\")(?:,[a-zA-Z_][a-zA-Z0-9_]*=\"%s\")*)\})? (-?[0-9.e+]+|NaN|[+-]Inf)$"
                     % (_NAME, _VALUE, _VALUE))
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="(%s)"' % _VALUE)


def parse_exposition(text):
    """{family: [(labels dict, value)]}; raises AssertionError on anything the text format does not allow: a sample
    before its TYPE, a family written twice, a line that is neither, label values not escaped, no final newline."""
    assert text.endswith("\n") and "\r" not in text
    families, helped, current, done = {}, set(), None, set()
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP "):
            name = line.split(" ")[2]
            assert re.fullmatch(_NAME, name) and name not in helped, line
            helped.add(name)
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("gauge", "counter", "untyped", "summary", "histogram") and name not in families, line
            assert name in helped, line
            if current is not None:
                done.add(current)
            current, families[name] = name, []
        else:
            m = _SAMPLE.match(line)
            assert m, "not a sample line: %r" % line
            assert m.group(1) == current and current not in done, line
            labels = {}
            for k, v in _LABEL.findall(m.group(2) or ""):
                assert k not in labels, line
                labels[k] = v.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
            assert (sorted(labels.items())) not in [sorted(l.items()) for l, _ in families[current]], line
            families[current].append((labels, float(m.group(3))))
    return families


def _node(machine, name):
    machine.root.file("etc/hostname", name + "\n")
    return a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121)


def test_output_folder_writes_hostname_json_with_host_time_and_version(machine, tmp_path):
    _node(machine, "gpu-node-07")
    out = tmp_path / "reports"
    before = time.time()
    r = machine.doctor("--output", str(out) + "/")
    assert r.code == 0 and r.out == "", r
    assert sorted(os.listdir(out)) == ["gpu-node-07.json"]  # no temporary file left beside it
    data = json.loads((out / "gpu-node-07.json").read_text())
    assert data["hostname"] == "gpu-node-07"
    stamp = time.mktime(time.strptime(data["generated_at"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert before - 2 <= stamp <= time.time() + 2
    assert data["cudaenv_version"] and data["schema_version"] == 1
    report = DoctorReport.from_dict(data)
    assert report.hostname == "gpu-node-07" and report.snapshot.driver.version == "535.247.01"
    # the same as what --json prints, but for the time
    printed = machine.doctor().json()
    for key in ("generated_at", "tools"):  # the time, and how long nvidia-smi took
        printed.pop(key), data.pop(key)
    assert printed == data


def test_output_file_and_existing_folder_without_slash(machine, tmp_path):
    _node(machine, "n1")
    r = machine.doctor("--output", str(tmp_path / "here.json"))
    assert r.code == 0 and json.loads((tmp_path / "here.json").read_text())["hostname"] == "n1"
    (tmp_path / "d").mkdir()
    machine.doctor("--output", str(tmp_path / "d"), fmt="--format=prometheus")
    assert os.listdir(tmp_path / "d") == ["n1.prom"]
    parse_exposition((tmp_path / "d" / "n1.prom").read_text())


def test_output_replaces_an_old_report_in_one_step(machine, tmp_path):
    _node(machine, "n2")
    out = tmp_path / "out"
    out.mkdir()
    (out / "n2.json").write_text("old")
    machine.doctor("--output", str(out) + "/")
    assert json.loads((out / "n2.json").read_text())["hostname"] == "n2"
    assert os.listdir(out) == ["n2.json"]


def test_output_unwritable_is_a_usage_error(machine, tmp_path):
    _node(machine, "n3")
    (tmp_path / "file").write_text("")
    env = {"PATH": machine.bin.env_path, "CUDAENV_ROOT": str(machine.root.path), "HOME": machine.env["HOME"]}
    r = machine.cli("doctor", "--json", "--python", machine.python, "--output", str(tmp_path / "file" / "sub") + "/", env=env)
    assert r.code == 2 and "cannot write" in r.err and "Traceback" not in r.err


@pytest.mark.parametrize("raw, name", [
    ("node17", "node17.json"), ("gpu-a_1.x", "gpu-a_1.x.json"), ("../../etc/passwd", "_.._etc_passwd~"),
    ("a/b c\x1b[2J", "a_b_c__2J~"), ("", "unknown-host.json"), (None, "unknown-host.json"), ("...", "~"), ("ünï", "_n_~"),
])
def test_report_filename_is_safe(raw, name):
    got = report_filename(raw, "json")
    assert got == name if name.endswith(".json") else (got.startswith(name) and len(got) == len(name) + 16 + 5), got
    assert "/" not in report_filename(raw, "prometheus") and not got.startswith(".")


def test_no_two_host_names_share_a_report_file():
    # issue 27: gpu-é1, gpu-ü1 and gpu-_1 were all gpu-_1.json: 3 nodes, 1 report
    names = ["gpu-é1", "gpu-ü1", "gpu-_1", "gpu-?1", "gpu-_1~" + "0" * 16, "GPU-_1", "x" * 300, "x" * 301, ".x", "_x"]
    files = [report_filename(n, "json") for n in names]
    assert len(set(files)) == len(names), files
    assert all(len(f) <= 230 and "/" not in f and not f.startswith(".") for f in files)


def test_a_hostname_that_is_a_json_object_is_no_node_name(tmp_path):
    from cudaenv.fleet.summary import summarize

    good = {"schema_version": 1, "platform": {"system": "linux"}, "hostname": {"evil": "object"}, "findings": []}
    path = tmp_path / "node7.json"
    path.write_text(json.dumps(good))
    summary = summarize([str(path)])
    names = [n.name for n in summary.nodes]
    assert names == ["node7"], names


def test_hostile_hostname_never_leaves_the_folder(machine, tmp_path):
    _node(machine, "../../evil\x1b]0;x\x07")
    out = tmp_path / "r"
    machine.doctor("--output", str(out) + "/")
    (name,) = os.listdir(out)
    assert name.startswith("_.._evil") and name.endswith(".json")
    assert json.loads((out / name).read_text())["hostname"] == "../../evil\x1b]0;x\x07"  # the JSON keeps it as read


def test_no_root_hostname_is_this_machines():
    import socket

    from cudaenv.host import Host

    assert Host().hostname() == (socket.gethostname()[:255] or None)


def test_rooted_hostname_reads_first_line_only(fake_root):
    assert fake_root.host().hostname() is None  # no /etc/hostname
    fake_root.file("etc/hostname", "\n  n9  \nsecond\n")
    assert fake_root.host().hostname() == "n9"
    (fake_root / "etc/hostname").unlink()
    os.mkfifo(fake_root / "etc/hostname")
    assert fake_root.host().hostname() is None  # a FIFO is never opened for reading


def test_output_path():
    assert output_path("r/", "n", "json") == (os.path.join("r/", "n.json"), True)
    assert output_path("x.prom", "n", "prometheus") == ("x.prom", False)


# ------------------------------------------------------------------ prometheus
def test_prometheus_exact_output():
    s = healthy()
    report = DoctorReport(s, findings=(Finding("torch-cpu-only", "error", "t", "d"), Finding("driver-old", "warning", "t", "d"),
                                       Finding("driver-old", "warning", "again", "d")),
                          hostname="n1", generated_at="2026-12-03T05:00:00Z")
    assert render_prometheus(report) == """\
# HELP cudaenv_info The cudaenv that wrote this report (version, schema_version) and the node's host name.
# TYPE cudaenv_info gauge
cudaenv_info{version="",schema_version="1",hostname="n1"} 1
# HELP cudaenv_report_timestamp_seconds When the doctor ran, in seconds since the epoch (UTC).
# TYPE cudaenv_report_timestamp_seconds gauge
cudaenv_report_timestamp_seconds 1796274000
# HELP cudaenv_driver_info The NVIDIA driver (1 when one answered): its version and the highest CUDA it supports.
# TYPE cudaenv_driver_info gauge
cudaenv_driver_info{version="580.95.05",cuda="13.0",kernel_module="open"} 1
# HELP cudaenv_gpu_count GPUs the driver reports.
# TYPE cudaenv_gpu_count gauge
cudaenv_gpu_count 1
# HELP cudaenv_gpu_info One per GPU the driver reports: its index, model and compute capability.
# TYPE cudaenv_gpu_info gauge
cudaenv_gpu_info{index="0",name="NVIDIA A100-SXM4-80GB",compute_capability="8.0"} 1
# HELP cudaenv_toolkit_info One per CUDA toolkit found: its version, folder and whether it is the active one.
# TYPE cudaenv_toolkit_info gauge
cudaenv_toolkit_info{version="13.0.2",path="/usr/local/cuda-13.0",active="true"} 1
# HELP cudaenv_cudnn_info One per cuDNN found: its version and where it comes from.
# TYPE cudaenv_cudnn_info gauge
# HELP cudaenv_torch_info The torch of the inspected Python (1 when installed): its build, its CUDA and whether CUDA worked.
# TYPE cudaenv_torch_info gauge
cudaenv_torch_info{version="2.13.0+cu130",cuda="13.0",cuda_available="true"} 1
# HELP cudaenv_findings How many findings the doctor has on this node, by severity.
# TYPE cudaenv_findings gauge
cudaenv_findings{severity="error"} 1
cudaenv_findings{severity="warning"} 2
cudaenv_findings{severity="info"} 0
# HELP cudaenv_finding A finding of the doctor on this node (1 per finding id).
# TYPE cudaenv_finding gauge
cudaenv_finding{id="torch-cpu-only",severity="error"} 1
cudaenv_finding{id="driver-old",severity="warning"} 1
# HELP cudaenv_healthy 1 when the doctor found no error on this node, 0 otherwise.
# TYPE cudaenv_healthy gauge
cudaenv_healthy 0
"""
    fams = parse_exposition(render_prometheus(report))
    assert fams["cudaenv_gpu_count"] == [({}, 1.0)]
    assert fams["cudaenv_finding"][0] == ({"id": "torch-cpu-only", "severity": "error"}, 1.0)


def test_prometheus_label_values_escaped():
    assert label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    from cudaenv.model.snapshot import Gpu
    from cudaenv.model.record import replace

    s = replace(healthy(), gpus=(Gpu(0, name='G"P\\U\n\x1b[31m\u202e'),))
    text = render_prometheus(DoctorReport(s, hostname='h"\n', generated_at="bad"))
    fams = parse_exposition(text)
    assert fams["cudaenv_gpu_info"][0][0]["name"] == 'G"P\\U\n\\x1b[31m\\u202e'  # the format's newline; printable's escapes
    assert fams["cudaenv_info"][0][0]["hostname"] == 'h"\n'
    assert "cudaenv_report_timestamp_seconds" not in fams  # an unreadable time is left out, never invented


def test_prometheus_from_the_doctor_on_a_stand_in_node(machine):
    _node(machine, "n5")
    r = machine.doctor(fmt="--format=prometheus")
    assert r.code == 0
    fams = parse_exposition(r.out)
    data = machine.doctor().json()
    assert fams["cudaenv_gpu_count"] == [({}, float(len(data["gpus"])))]
    assert fams["cudaenv_driver_info"][0][0]["version"] == data["driver"]["version"] == "535.247.01"
    assert {l["id"] for l, _ in fams["cudaenv_finding"]} == {f["id"] for f in data["findings"]}
    assert fams["cudaenv_info"][0][0]["hostname"] == "n5"
