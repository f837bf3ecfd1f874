"""cudaenv.pasted (issue 14 sec. 4-5): facts from pasted tool outputs, the doctor's findings on them, this machine's
context for an error; parse/collect_env.py and parse/device_query.py; any text or bytes in bounded time."""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear, recorded
from cudaenv.parse.collect_env import parse_collect_env
from cudaenv.parse.device_query import parse_device_query
from cudaenv.facts.findings import ids_where
from cudaenv.pasted import paste_findings, read_facts, snapshot_of

PASTE_FINDINGS = ids_where("pasteable")
from cudaenv.pasted.context import context_of, mentioned_devices, wanted
from cudaenv.render.pasted_context import machine_context_lines


def context_lines(s, kinds, devices=(), arch=None):
    """This machine's context as `cudaenv explain` shows it: the data (cudaenv.pasted.context), then its sentences
    (cudaenv.render.pasted_context)."""
    return machine_context_lines(context_of(s, kinds, devices, arch))

COLLECT_ENV_117 = """\
Collecting environment information...
PyTorch version: 1.13.1+cu117
Is debug build: False
CUDA used to build PyTorch: 11.7
ROCM used to build PyTorch: N/A

OS: Ubuntu 20.04.5 LTS (x86_64)
Python version: 3.10.11 (main, Apr 20 2023, 19:02:41) [GCC 11.2.0] (64-bit runtime)
Python platform: Linux-5.15.0-41-generic-x86_64-with-glibc2.31
Is CUDA available: False
CUDA runtime version: 11.7.99
GPU models and configuration: GPU 0: Tesla V100-SXM2-16GB
Nvidia driver version: 450.36.06
cuDNN version: Probably one of the following:
/usr/lib/x86_64-linux-gnu/libcudnn.so.8.5.0
/usr/lib/x86_64-linux-gnu/libcudnn_ops_infer.so.8.5.0
"""


# ------------------------------------------------------------------ the issue's example, end to end (pure)
def test_the_issues_example_driver_too_old_for_that_torch():
    facts = read_facts(COLLECT_ENV_117)
    assert facts.torch_version == "1.13.1+cu117" and facts.torch_cuda == "11.7"
    assert facts.driver_version == "450.36.06" and facts.toolkit_version == "11.7.99"
    assert facts.cudnn_version == "8.5.0" and facts.cuda_available is False and facts.platform == "linux"
    assert facts.sources == ("collect_env",)
    found = {f.id: f for f in paste_findings(facts)}
    # nvcc 11.7 matches torch's 11.7 (no mismatch); it too needs a newer driver
    assert set(found) == {"driver-too-old-for-torch", "toolkit-newer-than-driver"}
    f = found["driver-too-old-for-torch"]
    assert f.severity == "error" and "450.80.02" in f.detail and "450.36.06" in f.title


def test_nvcc_and_torch_cuda_differ_gives_the_doctors_mismatch_finding():
    text = COLLECT_ENV_117.replace("CUDA runtime version: 11.7.99", "CUDA runtime version: 12.1.105")
    ids = [f.id for f in paste_findings(read_facts(text))]
    assert "nvcc-torch-mismatch" in ids and "toolkit-newer-than-driver" in ids


def test_arch_not_in_that_torchs_list_from_device_query_and_collect_env():
    text = COLLECT_ENV_117.replace("1.13.1+cu117", "2.8.0+cu128").replace("11.7", "12.8").replace("450.36.06", "570.86.10")
    text += DEVICE_QUERY_1080TI
    facts = read_facts(text)
    assert facts.gpus[0].compute_capability == "6.1" and facts.gpus[0].name == "NVIDIA GeForce GTX 1080 Ti"
    found = {f.id: f for f in paste_findings(facts)}
    assert "gpu-arch-unsupported" in found, found
    assert "sm_61" in found["gpu-arch-unsupported"].detail or "6.1" in found["gpu-arch-unsupported"].detail


def test_a_query_csv_with_compute_cap_gives_the_arch_finding():
    text = COLLECT_ENV_117.replace("1.13.1+cu117", "2.8.0+cu128").replace("11.7", "12.8").replace("450.36.06", "570.86.10")
    text += ("\n$ nvidia-smi --query-gpu=index,name,compute_cap,memory.total --format=csv\n"
             "index, name, compute_cap, memory.total [MiB]\n0, NVIDIA GeForce GTX 1080 Ti, 6.1, 11264 MiB\n")
    facts = read_facts(text)
    assert "nvidia-smi --query-gpu" in facts.sources
    assert facts.gpus[0].compute_capability == "6.1" and facts.gpus[0].memory_total_mib == 11264
    assert "gpu-arch-unsupported" in [f.id for f in paste_findings(facts)]
    assert read_facts("name, value\nfoo, bar\n") is None  # a CSV without GPU fields is not a GPU list


def test_findings_are_the_doctors_own_rules_on_the_partial_snapshot():
    from cudaenv.diagnose import diagnose

    facts = read_facts(COLLECT_ENV_117)
    direct = [f for f in diagnose(snapshot_of(facts)) if f.id in PASTE_FINDINGS]
    assert list(paste_findings(facts)) == direct
    assert all(f.id in PASTE_FINDINGS for f in paste_findings(facts))


def test_text_without_tool_output_has_no_facts():
    assert read_facts("RuntimeError: CUDA error: invalid device ordinal") is None
    assert read_facts("Ubuntu release 22.04, kernel 5.15") is None  # "release 22.04" is not an nvcc
    assert paste_findings(None) == ()


# ------------------------------------------------------------------ collect_env
def test_collect_env_old_yes_no_form_and_multiline_gpus():
    text = """PyTorch version: 1.0.0
Is debug build: No
CUDA used to build PyTorch: 9.0.176

OS: Ubuntu 16.04.5 LTS
Is CUDA available: Yes
CUDA runtime version: 9.0.176
GPU models and configuration:
GPU 0: GeForce GTX 1080 Ti
GPU 1: GeForce GTX 1080 Ti

Nvidia driver version: 390.77
cuDNN version: Probably one of the following:
/usr/local/cuda-9.0/lib64/libcudnn.so.7.1.4
/usr/local/cuda-9.0/lib64/libcudnn.so.7.0.5
"""
    env = parse_collect_env(text)
    assert env.torch_version == "1.0.0" and env.torch_cuda == "9.0.176" and env.cuda_available is True
    assert env.gpus == ((0, "GeForce GTX 1080 Ti"), (1, "GeForce GTX 1080 Ti"))
    assert env.cudnn_version == "7.1.4" and env.driver_version == "390.77" and env.platform == "linux"


def test_collect_env_quoted_and_listed_cpu_build_windows():
    text = "\n".join("> - " + line for line in (
        "PyTorch version: 2.1.0+cpu", "CUDA used to build PyTorch: None", "OS: Microsoft Windows 11 Pro",
        "Is CUDA available: False", "CUDA runtime version: No CUDA", "Nvidia driver version: Could not collect"))
    env = parse_collect_env(text)
    assert env.torch_version == "2.1.0+cpu" and env.torch_cuda is None and env.cpu_build is True
    assert env.platform == "windows" and env.driver_version is None and env.toolkit_version is None
    facts = read_facts(text)
    assert facts.torch_cuda is None  # a CPU build: +cpu names no CUDA


def test_collect_env_wsl2_and_macos_platforms():
    wsl = "PyTorch version: 2.0.1\nIs CUDA available: True\nPython platform: Linux-5.15.90.1-microsoft-standard-WSL2-x86_64-with-glibc2.35\n"
    assert parse_collect_env(wsl).platform == "wsl2"
    mac = "PyTorch version: 2.2.0\nIs CUDA available: False\nOS: macOS 14.1 (arm64)\n"
    env = parse_collect_env(mac)
    assert env.platform == "macos" and env.machine == "arm64"


# ------------------------------------------------------------------ deviceQuery
DEVICE_QUERY_1080TI = """
./deviceQuery Starting...

 CUDA Device Query (Runtime API) version (CUDART static linking)

Detected 1 CUDA Capable device(s)

Device 0: "NVIDIA GeForce GTX 1080 Ti"
  CUDA Driver Version / Runtime Version          12.8 / 12.8
  CUDA Capability Major/Minor version number:    6.1
  Total amount of global memory:                 11172 MBytes (11714691072 bytes)
  Device PCI Domain ID / Bus ID / location ID:   0 / 9 / 0
deviceQuery, CUDA Driver = CUDART, CUDA Driver Version = 12.8, CUDA Runtime Version = 12.8, NumDevs = 1
Result = PASS
"""


def test_device_query_reads_each_device():
    q = parse_device_query(DEVICE_QUERY_1080TI)
    assert q.driver_cuda == "12.8" and q.runtime_cuda == "12.8" and q.passed is True
    g = q.gpus[0]
    assert (g.index, g.name, g.compute_capability, g.memory_total_mib, g.pci_bus_id) == (
        0, "NVIDIA GeForce GTX 1080 Ti", "6.1", 11172, "00000000:09:00.0")


def test_device_query_failure():
    q = parse_device_query("./deviceQuery Starting...\n\ncudaGetDeviceCount returned 35\n"
                           "-> CUDA driver version is insufficient for CUDA runtime version\nResult = FAIL\n")
    assert q.error_code == 35 and "insufficient" in q.error and q.passed is False and q.gpus == ()
    assert parse_device_query("Device 0 is fine") is None


# ------------------------------------------------------------------ nvidia-smi era details the paste needs
def test_wsl2_banner_says_wsl2_and_the_windows_driver():
    facts = read_facts(recorded("smi-banner-wsl2.txt"))
    assert facts.platform == "wsl2" and facts.driver_version == "555.99" and facts.cuda_version == "12.5"
    assert facts.gpus[0].name.startswith("NVIDIA GeForce RTX 4070") and facts.gpus[0].memory_total_mib == 12282


def test_windows_banner_says_windows():
    facts = read_facts(recorded("smi-banner-windows-processes.txt"))
    assert facts.platform == "windows" and facts.sources == ("nvidia-smi",)


def test_proc_version_gives_the_kernel_module_flavour_anywhere_in_a_paste():
    text = "\n".join(["some log line %d" % i for i in range(80)]) + "\n" + recorded("proc-nvidia-open-565.txt")
    facts = read_facts(text)
    assert facts.kernel_module == "open" and facts.driver_version and facts.platform == "linux"


# ------------------------------------------------------------------ property tests: never a crash, never a hang
PARSERS = [parse_collect_env, parse_device_query, read_facts]


@pytest.mark.parametrize("parse", PARSERS)
@settings(max_examples=200)
@given(data=st.text(max_size=800) | st.binary(max_size=800))
def test_any_text_or_bytes_never_raises(parse, data):
    parse(data)


@settings(max_examples=100)
@given(st.lists(st.sampled_from([
    "PyTorch version: ", "GPU 0: ", "cuDNN version: ", "libcudnn.so.", "Device 0: \"", "CUDA Capability Major/Minor version number: ",
    "| NVIDIA-SMI ", "Driver Version: ", "|   0  ", " On  |", "Cuda compilation tools, release ", "NVRM version: ", "9", ".", " ",
    "\n", "> ", "|", ":", "MiB", "cudaGetDeviceCount returned ", "->"]), max_size=120).map("".join))
def test_tool_shaped_fragments_never_raise(text):
    facts = read_facts(text)
    if facts is not None:
        paste_findings(facts)


@pytest.mark.parametrize("piece", ["9" * 60, " " * 60, "GPU 0: " + "a" * 50, "libcudnn.so." + "9." * 30, "| " * 40, ":" * 60,
                                   "Device 0: \"" + "x" * 60])
def test_adversarial_long_runs_take_linear_work(piece):
    assert_linear(read_facts, piece + "\n")  # many lines of it
    assert_linear(read_facts, piece, head=(piece + "\n") * 50)  # and one long line


# ------------------------------------------------------------------ this machine's context (pure part)
def test_wanted_kinds_by_error():
    assert wanted("RuntimeError: CUDA error: invalid device ordinal", ["invalid-device-ordinal"]) == {"devices"}
    load = "Attempting to deserialize object on CUDA device 2 but torch.cuda.device_count() is 1"
    assert wanted(load, []) == {"devices", "load"}
    assert wanted("CUDA error: no kernel image is available for execution on the device", []) == {"arch"}
    assert wanted("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", ["cuda-oom"]) == {"memory"}
    assert wanted("ModuleNotFoundError: No module named 'foo'", []) == frozenset()
    assert mentioned_devices("x.to('cuda:2') ... cuda:0 " + load) == (0, 2)


def _snapshot(visible=None):
    from cudaenv.parse.nvidia_smi import parse_apps_csv, parse_query_csv
    from cudaenv.parse.visible_devices import parse_visible_devices
    from cudaenv.model.record import replace
    from cudaenv.model.snapshot import Platform, Snapshot

    gpus = parse_query_csv(recorded("smi-query-2080ti-x4.txt")).gpus
    procs = parse_apps_csv(recorded("smi-apps-2080ti.txt"))
    index = {g.uuid: g.index for g in gpus}
    procs = tuple(replace(p, gpu_index=index.get(p.gpu_uuid)) for p in procs)
    return Snapshot(platform=Platform(system="linux"), gpus=gpus, visible_devices=parse_visible_devices(visible, gpus),
                    processes=procs)


def test_devices_context_under_cuda_visible_devices():
    lines = context_lines(_snapshot("2,3"), frozenset({"devices"}), (2,))
    assert lines[0].startswith("Here CUDA_VISIBLE_DEVICES=2,3: CUDA numbers the visible GPUs from 0, so only cuda:0, cuda:1 exist")
    assert "cuda:0 is GPU 2 (NVIDIA GeForce RTX 2080 Ti, 00000000:41:00.0)" in lines[0]
    assert "cuda:1 is GPU 3 (NVIDIA GeForce RTX 2080 Ti, 00000000:42:00.0)" in lines[0]
    assert lines[1] == "cuda:2 does not exist here (valid: cuda:0, cuda:1)."


def test_load_context_gives_the_torch_load_line():
    lines = context_lines(_snapshot("1"), frozenset({"devices", "load"}), (2,))
    assert any(line.startswith('Load the checkpoint here with: torch.load(path, map_location="cuda:0")') for line in lines)
    lines = context_lines(_snapshot(""), frozenset({"devices", "load"}), (2,))
    assert any('map_location="cpu"' in line for line in lines)


def test_memory_context_lists_the_holders_biggest_first():
    lines = context_lines(_snapshot(), frozenset({"memory"}))
    assert "GPU 1 (NVIDIA GeForce RTX 2080 Ti, 00000000:0B:00.0): 10987 of 11264 MiB in use now." in lines
    holders = [line for line in lines if line.startswith("pid ")]
    assert holders[0] == "pid 4055325 /usr/bin/python3 train.py --name=a,b holds 2404 MiB on GPU 1."
    assert holders[1] == "pid 4054862 python holds 990 MiB on GPU 1."


def test_no_gpu_here():
    from cudaenv.model.snapshot import Platform, Snapshot, ToolStatus

    s = Snapshot(platform=Platform(system="linux"), tools=(ToolStatus("nvidia-smi", None, "missing"),))
    lines = context_lines(s, frozenset({"devices", "load"}), (1,))
    assert lines == ("This machine: nvidia-smi is not installed, so CUDA has no device here.",
                     'Load the checkpoint here with: torch.load(path, map_location="cpu")')


def _toolkits(*specs, env=(), on_path=None, home=None):
    """A Snapshot's toolkit part: ``specs`` are versions under /usr/local/cuda-X.Y; ``on_path`` the one whose nvcc PATH
    finds; ``env`` the CUDA_HOME-style variables."""
    from cudaenv.model.snapshot import ActiveToolkit, Platform, Snapshot, Toolkit

    tks = tuple(Toolkit(version=v, path="/usr/local/cuda-%s" % v[:4].rstrip("."), source="/usr/local/cuda-*",
                        nvcc="/usr/local/cuda-%s/bin/nvcc" % v[:4].rstrip("."), on_path=v == on_path) for v in specs)
    active = None
    if on_path:
        nvcc = "/usr/local/cuda-%s/bin/nvcc" % on_path[:4].rstrip(".")
        active = ActiveToolkit(path=nvcc[:-len("/bin/nvcc")], nvcc=nvcc, version=on_path, via="PATH", nvcc_on_path=(nvcc,))
    return Snapshot(platform=Platform(system="linux"), toolkits=tks, active_toolkit=active, env=tuple(sorted(env)))


def test_nvcc_context_says_another_nvcc_ran_when_a_toolkit_here_compiles_for_the_arch():
    s = _toolkits("12.4.131", "11.7.99", on_path="11.7.99")
    lines = context_lines(s, frozenset({"nvcc"}), arch="compute_89")
    assert lines[0] == ("Toolkits here: CUDA 12.4 (/usr/local/cuda-12.4): compiles for compute_89; "
                        "CUDA 11.7 (/usr/local/cuda-11.7): cannot compile for compute_89.")
    assert lines[1].startswith("The nvcc on PATH (/usr/local/cuda-11.7/bin/nvcc), which make, CMake and a plain nvcc use, "
                               "and torch.utils.cpp_extension too: CUDA 11.7 (/usr/local/cuda-11.7), which cannot")
    assert lines[-1].startswith("CUDA 12.4 (/usr/local/cuda-12.4) compiles for compute_89, but the build picks CUDA 11.7 "
                                "(/usr/local/cuda-11.7) through PATH: another nvcc than that one ran.")
    assert "cudaenv use 12.4" in lines[-1]


def test_nvcc_context_names_cuda_home_which_cpp_extension_uses_before_path():
    s = _toolkits("12.4.131", "11.7.99", on_path="12.4.131", env=[("CUDA_HOME", "/usr/local/cuda-11.7")])
    lines = context_lines(s, frozenset({"nvcc"}), arch="compute_89")
    assert ("CUDA_HOME=/usr/local/cuda-11.7, which torch.utils.cpp_extension uses: CUDA 11.7 (/usr/local/cuda-11.7), "
            "which cannot compile for compute_89.") in lines
    assert any(line.startswith("The nvcc on PATH (/usr/local/cuda-12.4/bin/nvcc), which make, CMake and a plain nvcc use: "
                               "CUDA 12.4") for line in lines), lines
    assert lines[-1].startswith("CUDA 12.4 (/usr/local/cuda-12.4) compiles for compute_89, but the build picks CUDA 11.7 "
                                "(/usr/local/cuda-11.7) through CUDA_HOME: another nvcc than that one ran.")


def test_nvcc_context_when_what_this_shell_picks_compiles_for_it_the_failing_nvcc_was_elsewhere():
    s = _toolkits("12.4.131", on_path="12.4.131")
    lines = context_lines(s, frozenset({"nvcc"}), arch="compute_89")
    assert lines[-1].startswith("The toolkit this environment picks compiles for compute_89, so the nvcc that failed was "
                                "another one")


def test_nvcc_context_when_no_toolkit_here_compiles_for_it():
    lines = context_lines(_toolkits("11.7.99", on_path="11.7.99"), frozenset({"nvcc"}), arch="compute_89")
    assert lines[-1] == ("No toolkit here compiles for compute_89 (compute_89 needs CUDA 11.8 or newer; the newest "
                         "here is CUDA 11.7 (/usr/local/cuda-11.7)).")
    too_new = context_lines(_toolkits("13.0.48", on_path="13.0.48"), frozenset({"nvcc"}), arch="sm_61")  # dropped in 13
    assert "CUDA 13.0 (/usr/local/cuda-13.0): cannot compile for sm_61" in too_new[0]
    assert too_new[-1].startswith("No toolkit here compiles for sm_61")
    assert context_lines(_toolkits(), frozenset({"nvcc"}), arch="compute_89")[0].startswith(
        "cudaenv found no CUDA toolkit on this machine")
    assert context_lines(_toolkits("12.4.131"), frozenset({"nvcc"}), arch=None) == ()  # no architecture: nothing to say


# ------------------------------------------------------------------ the command
def _env(machine, **extra):
    env = dict(machine.env, PATH=machine.bin.env_path, CUDAENV_ROOT=str(machine.root.path), PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def test_cli_invalid_ordinal_names_the_visible_gpus(machine, cli):
    machine.smi(query=recorded("smi-query-2080ti-x4.txt"), apps=recorded("smi-apps-2080ti.txt"))
    r = cli("explain", "--json", "RuntimeError: CUDA error: invalid device ordinal (x.to('cuda:2'))",
            env=_env(machine, CUDA_VISIBLE_DEVICES="2,3"))
    assert r.code == 0, r
    context = r.json()["context"]
    assert any("only cuda:0, cuda:1 exist" in line and "GPU 3 (NVIDIA GeForce RTX 2080 Ti, 00000000:42:00.0)" in line
               for line in context), context
    assert "cuda:2 does not exist here (valid: cuda:0, cuda:1)." in context
    r = cli("explain", "RuntimeError: CUDA error: invalid device ordinal", env=_env(machine, CUDA_VISIBLE_DEVICES="2,3"))
    assert "On this machine:" in r.out and "only cuda:0, cuda:1 exist" in r.out.replace("\n    ", " ")


def test_cli_offline_reads_nothing_of_this_machine(machine, cli, fake_bin):
    log = machine.tmp / "ran"
    fake_bin.command("nvidia-smi", stdout="")
    (fake_bin.path / "nvidia-smi").write_text("#!/bin/sh\necho ran >> %s\n" % log)
    text = "RuntimeError: CUDA error: invalid device ordinal"
    r = cli("explain", "--offline", "--json", text, env=_env(machine))
    assert r.code == 0 and r.json()["context"] == [] and not log.exists()
    r2 = cli("explain", "--offline", "--json", text, env=_env(machine, CUDA_VISIBLE_DEVICES="7"))
    assert r2.out == r.out  # a pure function of the text
    cli("explain", "--json", text, env=_env(machine))
    assert log.exists()  # without --offline the nvidia-smi probe ran


def test_cli_no_kernel_image_names_capability_arch_list_and_the_build_that_fits(machine, cli):
    machine.smi(query=recorded("diag-query-1080ti.txt"))
    machine.torch("2.8.0+cu128", "12.8", gpus=[("NVIDIA GeForce GTX 1080 Ti", (6, 1), 11264)], arch=["sm_70"])
    r = cli("explain", "--json", "--python", machine.python,
            "RuntimeError: CUDA error: no kernel image is available for execution on the device", env=_env(machine))
    assert r.code == 0, r
    context = r.json()["context"]
    text = "\n".join(context)
    assert "GPU 0 (NVIDIA GeForce GTX 1080 Ti, 00000000:09:00.0) has compute capability 6.1 (sm_61)." in context
    assert "torch 2.8.0+cu128 in %s has kernels for: sm_70" % machine.python in text
    assert "torch 2.8.0+cu128 has no kernels for" in text
    assert "cu126" in text, text  # the doctor's recommendation: the build that has sm_61


def test_cli_oom_lists_the_processes_holding_memory(machine, cli):
    machine.smi(query=recorded("smi-query-2080ti-x4.txt"), apps=recorded("smi-apps-2080ti.txt"))
    r = cli("explain", "--json", recorded("err-cuda-oom.txt"), env=_env(machine))
    context = r.json()["context"]
    assert "pid 4055325 /usr/bin/python3 train.py --name=a,b holds 2404 MiB on GPU 1." in context, context


NVCC_FATAL = ("nvcc fatal   : Unsupported gpu architecture 'compute_89'\n"
              "ninja: build stopped: subcommand failed.\nRuntimeError: Error building extension 'fused'")


def test_cli_nvcc_arch_names_the_toolkit_here_that_compiles_for_it(machine, cli):
    machine.toolkit("12.4.131").toolkit("11.7.99", on_path=True)
    env = _env(machine, PATH=":".join(machine.path_in_root + [machine.bin.env_path]))
    r = cli("explain", "--json", NVCC_FATAL, env=env)
    assert r.code == 0, r
    data = r.json()
    assert data["match"]["id"] == "nvcc-arch-unsupported"
    context = data["context"]
    assert any(line.startswith("Toolkits here: CUDA 12.4 (/usr/local/cuda-12.4): compiles for compute_89") for line in context), context
    assert any("another nvcc than that one ran" in line and "cudaenv use 12.4" in line for line in context), context
    home = cli("explain", "--json", NVCC_FATAL, env=dict(env, CUDA_HOME="/usr/local/cuda-11.7")).json()["context"]
    assert any(line.startswith("CUDA_HOME=/usr/local/cuda-11.7, which torch.utils.cpp_extension uses") for line in home), home
    assert cli("explain", "--offline", "--json", NVCC_FATAL, env=env).json()["context"] == []
    text = cli("explain", NVCC_FATAL, env=env).out
    assert "On this machine:" in text and "another nvcc than that one ran" in text.replace("\n    ", " ")


def test_cli_pasted_tool_output_fills_facts_and_findings(cli):
    r = cli("explain", "--json", "--offline", COLLECT_ENV_117 + recorded("err-driver-too-old-for-torch.txt"))
    data = r.json()
    assert r.code == 0
    assert data["facts"]["driver_version"] == "450.36.06" and data["facts"]["sources"] == ["collect_env"]
    assert set(data["facts"]) >= {"driver_version", "cuda_version", "gpus", "toolkit_version", "torch_version", "torch_cuda",
                                  "cuda_available", "cudnn_version", "platform", "kernel_module", "sources"}
    assert [f["id"] for f in data["findings"]] == ["driver-too-old-for-torch", "toolkit-newer-than-driver"]
    assert data["findings"][0]["severity"] == "error"


def test_explain_json_round_trips_with_its_findings(cli):
    """The findings are a field of ExplainReport (written by the one codec), so from_dict reads them back."""
    from cudaenv.explain import ExplainReport
    from cudaenv.model.reports import Finding

    r = cli("explain", "--json", "--offline", COLLECT_ENV_117 + recorded("err-driver-too-old-for-torch.txt"))
    data = r.json()
    notes = []
    report = ExplainReport.from_dict(data, notes)
    assert notes == [] and report.recognised and report.match.id == "driver-too-old-for-torch"
    assert [f.id for f in report.findings] == ["driver-too-old-for-torch", "toolkit-newer-than-driver"]
    assert all(isinstance(f, Finding) for f in report.findings) and report.findings[0].fix
    assert report.to_dict() == data  # every key, findings last, read back and written again the same
    assert list(data)[0] == "schema_version" and list(data)[-1] == "findings"


def test_cli_tool_output_alone_is_understood_in_text(cli):
    r = cli("explain", "--offline", COLLECT_ENV_117)
    assert r.code == 0, r
    assert r.out.startswith("From the pasted collect_env:")
    assert "ERROR driver-too-old-for-torch" in r.out and "did not recognise" not in r.out


def test_cli_offline_and_probe_contradict(cli):
    r = cli("explain", "--offline", "--probe", "invalid device ordinal")
    assert r.code == 2 and "--offline" in r.err


def test_cli_plain_error_keeps_facts_null_and_no_findings(cli):
    r = cli("explain", "--json", "--offline", "something odd happened")
    assert r.code == 1 and r.json()["facts"] is None and r.json()["findings"] == []


def test_cli_escapes_what_the_paste_says(cli):
    text = COLLECT_ENV_117.replace("Tesla V100-SXM2-16GB", "Tesla\x1b[31m V100")
    r = cli("explain", "--offline", text)
    assert "\x1b" not in r.out


# ------------------------------------------------------------------ paste readers (issue 28)
def test_a_query_csv_block_ends_where_other_output_begins():
    """The rows after a --query-gpu block (nvcc --list-gpu-code's sm_NN lines, a prompt) are not more GPUs.
    Constructed from nvidia-smi's CSV form (tests/recorded/smi-query-*) and nvcc's --list-gpu-code lines."""
    text = ("$ nvidia-smi --query-gpu=name,compute_cap --format=csv\nname, compute_cap\nNVIDIA GeForce RTX 4090, 8.9\n"
            "$ nvcc --list-gpu-code\nsm_50\nsm_52\nsm_60, sm_61\n")
    facts = read_facts(text)
    assert [g.name for g in facts.gpus] == ["NVIDIA GeForce RTX 4090"]


OLD_BANNER = """+------------------------------------------------------+
| NVIDIA-SMI 5.325.15   Driver Version: 325.15         |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  GeForce GTX 680     Off  | 0000:01:00.0     N/A |                  N/A |
| 30%   35C  N/A     N/A /  N/A |      9MB /  2047MB   |     N/A      Default |
+-------------------------------+----------------------+----------------------+
"""  # constructed: the R325 table's layout (its own major before the driver's version, memory in MB)


def test_an_old_banner_is_not_wsl2_and_its_memory_in_mb_is_read():
    facts = read_facts(OLD_BANNER)
    assert facts.platform != "wsl2" and facts.driver_version == "325.15"
    assert (facts.gpus[0].memory_used_mib, facts.gpus[0].memory_total_mib) == (9, 2047)


def test_the_journals_api_mismatch_gives_the_kernel_modules_version():
    facts = read_facts("Aug 26 14:08:07 host kernel: NVRM: API mismatch: the client has the version 367.44, but\n"
                       "                                      NVRM: this kernel module has the version 367.35.  Please\n")
    assert facts.kernel_module_version == "367.35" and facts.driver_version == "367.44"
    assert "kernel log" in facts.sources and facts.to_dict()["kernel_module_version"] == "367.35"


def test_a_printed_torch_version_is_read_and_judged():
    facts = read_facts("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
                       ">>> print(torch.__version__)\n2.1.0+cu118\n")
    assert facts.torch_version == "2.1.0+cu118" and facts.torch_cuda == "11.8" and "torch version" in facts.sources
    assert read_facts("- PyTorch Version (e.g., 1.0): 1.7.1\n- OS (e.g., Linux): Ubuntu 18.04").torch_version == "1.7.1"


def test_the_kernel_modules_version_is_said_beside_the_drivers():
    from cudaenv.render.pasted import fact_lines

    facts = read_facts("kernel: NVRM: API mismatch: the client has the version 367.44, but this kernel module has the version 367.35.")
    assert fact_lines(facts)[0].startswith("driver 367.44, kernel module 367.35 loaded on linux")
