"""The commands in Simplified Chinese (issue 33): chosen by the locale, ``CUDAENV_LANG`` or ``--lang``; within the
terminal's columns measured in display width (a Chinese character takes two); JSON, Prometheus and Markdown stay
English unless ``--lang`` asks; and the English output is the same whatever the locale says in English.
"""

import json
import re

import pytest

import checkpoint_builders as cb
from builders import RECORDED, recorded
from cudaenv.render.width import width_of
from machine import A10G, ARCH_CU121, GTX1080TI, ARCH_CU128, a10g_535


def _a10g(machine):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121).toolkit("12.1.1", on_path=True).toolkit("11.8.0")
    machine.root.link("usr/local/cuda", "/usr/local/cuda-11.8")
    machine.env["CUDA_VISIBLE_DEVICES"] = "0,7"
    return machine


def _pascal(machine):
    """A GTX 1080 Ti under a cu128 torch (no kernels for sm_61), a driver older than the toolkit on PATH."""
    machine.smi(query=recorded("diag-query-1080ti.txt"), banner=recorded("diag-banner-1080ti.txt"))
    machine.torch("2.7.1+cu128", "12.8", GTX1080TI, ARCH_CU128)
    machine.toolkit("11.8.0").toolkit("12.4.1", on_path=True)
    machine.root.link("usr/local/cuda", "/usr/local/cuda-12.6")
    machine.root.file("etc/os-release", recorded("osrelease-ubuntu-2204.txt"))
    return machine


def _one_word(line):
    words = line.split()
    if words[-1:] == ["\\"]:
        words = words[:-1]
    return len(words) == 1 or (len(words) == 2 and words[0] in ("-", "*"))


def _run(machine, *argv, env_extra=None):
    env = machine.full_env()
    env["CUDAENV_ROOT"] = str(machine.root.path)
    env.update(env_extra or {})
    extra = ["--python", machine.python] if argv[0] in ("doctor", "fix") else []
    return machine.cli(*(list(argv) + extra), env=env)


@pytest.mark.parametrize("kind", ["a10g", "pascal"])
@pytest.mark.parametrize("columns", [80, 60])
def test_the_doctor_in_chinese_fits_the_terminal(machine, kind, columns):
    (_a10g if kind == "a10g" else _pascal)(machine)
    machine.env["COLUMNS"] = str(columns)
    too_long = {}
    ckpt = machine.tmp / "模型.pt"  # a Chinese file name: two columns a character in the paths printed
    ckpt.write_bytes(cb.torch_zip(cb.cnn(location="cuda:2", prefix="module.")))
    log = machine.tmp / "error.log"
    log.write_text(recorded("err-cuda-oom.txt") + "\n" + recorded("err-invalid-device-ordinal.txt"))
    for argv in (("doctor",), ("doctor", "--quick"), ("fix", "--dry-run"), ("torch", "recommend", "--python", machine.python),
                 ("checkpoint", "inspect", str(ckpt)), ("explain", "--all", "--file", str(log)), ("doctor", "--timeout", "0")):
        r = _run(machine, *argv, env_extra={"LANG": "zh_CN.UTF-8"})
        english = _run(machine, *argv)
        for stream, text in (("out", r.out), ("err", r.err)):
            same = set((english.out + english.err).splitlines())  # a line as English lays it out is English's rule
            long = [line for line in text.splitlines() if width_of(line) > columns and not _one_word(line) and line not in same]
            if long:
                too_long[" ".join(argv) + " (%s)" % stream] = long[:3]
    assert not too_long, json.dumps(too_long, indent=1, ensure_ascii=False)


def test_the_locale_the_setting_and_the_flag_choose_chinese(machine):
    _pascal(machine)
    english = _run(machine, "doctor")
    assert "Problems: 1 error" in english.out and "问题" not in english.out
    for extra, argv in (({"LANG": "zh_CN.UTF-8"}, ()), ({"LC_ALL": "zh_Hans.UTF-8", "LANG": "en_US.UTF-8"}, ()),
                        ({"CUDAENV_LANG": "zh-CN"}, ()), ({}, ("--lang", "zh-CN"))):
        r = _run(machine, "doctor", *argv, env_extra=extra)
        assert r.code == english.code == 1
        assert "问题：1 个错误" in r.out and "gpu-arch-unsupported" in r.out, extra  # the ids stay as they are
        assert "显存" in r.out and "Problems" not in r.out
    # --lang before the command too, and English back on demand
    r = _run(machine, "--lang", "zh-CN", "doctor")
    assert "问题：" in r.out
    assert _run(machine, "doctor", "--lang", "en", env_extra={"LANG": "zh_CN.UTF-8"}).out == english.out
    assert _run(machine, "doctor", env_extra={"LANG": "en_US.UTF-8"}).out == english.out


def test_output_for_programs_and_upstream_stays_english(machine):
    _pascal(machine)
    zh = {"LANG": "zh_CN.UTF-8"}
    for fmt in ("json", "prometheus", "markdown"):
        r = _run(machine, "doctor", "--format", fmt, env_extra=zh)
        assert not any(width_of(c) == 2 for c in r.out), fmt
        if fmt == "markdown":
            assert r.out == _run(machine, "doctor", "--format", fmt).out
        if fmt == "json":  # the findings' words as in English (the report also holds run times)
            english = json.loads(_run(machine, "doctor", "--json").out)["findings"]
            assert json.loads(r.out)["findings"] == english and english
    md = _run(machine, "doctor", "--format", "markdown", "--lang", "zh-CN")
    assert "`gpu-arch-unsupported`" in md.out and "**发现的问题**" in md.out  # asked for, for a Chinese forum


def test_a_wrong_language_is_a_usage_error(machine):
    _pascal(machine)
    r = _run(machine, "doctor", "--lang", "tlh")
    assert r.code == 2 and "--lang tlh is not a language cudaenv speaks" in r.err
    r = _run(machine, "doctor", env_extra={"CUDAENV_LANG": "klingon"})
    assert r.code == 2 and "CUDAENV_LANG=klingon is not a language cudaenv speaks" in r.err


def test_explain_in_chinese_keeps_the_error_and_the_commands(tmp_path, cli):
    log = tmp_path / "error.log"
    log.write_text(recorded("err-cuda-oom.txt"))
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path), "COLUMNS": "80"}
    english = cli("explain", "--file", str(log), env=env)
    r = cli("explain", "--file", str(log), env=dict(env, LANG="zh_CN.UTF-8"))
    assert r.code == english.code == 0
    assert r.out.startswith("cuda-oom: GPU 显存不足\n") and english.out.startswith("cuda-oom: the GPU ran out of memory\n")
    matched = [line for line in english.out.splitlines() if line.startswith("  matched: ")][0][len("  matched: "):]
    assert "  匹配：" + matched in r.out  # the quoted error as it was
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in r.out and "怎么办：" in r.out
    assert all(width_of(line) <= 80 for line in r.out.splitlines())
    assert cli("explain", "--json", "--file", str(log), env=dict(env, LANG="zh_CN.UTF-8")).out == cli("explain", "--json", "--file", str(log), env=env).out
    # a quoted assertion and the code in the advice stay as they are inside the Chinese sentences
    other = tmp_path / "assert.log"
    other.write_text(recorded("err-device-side-assert.txt"))
    r = cli("explain", "--file", str(other), env=dict(env, LANG="zh_CN.UTF-8"))
    assert r.out.startswith("device-side-assert: GPU 内核里的一个检查失败了\n"), r.out
    assert "失败的断言是 `srcIndex < srcSelectDimSize`。" in r.out and "CUDA_LAUNCH_BLOCKING=1" in r.out


@pytest.mark.parametrize("columns", [80, 60])
def test_every_recorded_error_is_explained_in_chinese_within_the_columns(tmp_path, cli, columns):
    """Every recorded error of tests/recorded in one log, explained with --all: each row's title, explanation and
    advice in Chinese (every row of the error table has a translation), no line wider than the terminal."""
    log = tmp_path / "all.log"
    log.write_text("\n".join(recorded(p.name) for p in sorted(RECORDED.glob("err-*.txt"))))
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path), "COLUMNS": str(columns)}
    english = cli("explain", "--all", "--file", str(log), env=env)
    r = cli("explain", "--all", "--file", str(log), env=dict(env, LANG="zh_CN.UTF-8"))
    assert r.code == english.code

    def titles(out):  # "cuda-oom: the GPU ran out of memory": {id: title}
        return dict(line.split(": ", 1) for line in out.splitlines() if re.match(r"[a-z0-9]+(-[a-z0-9]+)*: ", line))

    zh, en = titles(r.out), titles(english.out)
    assert sorted(zh) == sorted(en) and len(en) >= 50, r.out  # the recorded errors cover most of the table
    assert {i: title for i, title in zh.items() if not any(width_of(c) == 2 for c in title)} == {}
    assert r.out.count("  怎么办：") == english.out.count("  What to do:") >= 50
    same = set(english.out.splitlines())
    assert [line for line in r.out.splitlines() if width_of(line) > columns and not _one_word(line) and line not in same] == []


def test_checkpoint_advice_in_chinese_keeps_its_commands(machine):
    _pascal(machine)
    ckpt = machine.tmp / "it's on cuda 2.pt"
    ckpt.write_bytes(cb.torch_zip(cb.cnn(location="cuda:2", prefix="module.")))
    english = _run(machine, "checkpoint", "inspect", str(ckpt))
    r = _run(machine, "checkpoint", "inspect", str(ckpt), env_extra={"LANG": "zh_CN.UTF-8"})
    assert r.code == english.code == 1
    assert "怎么办：" in r.out and "保存设备：cuda:2 ×" in r.out, r.out + english.out
    joined, english_joined = (" ".join(out.split()).replace(" \\ ", " ") for out in (r.out, english.out))
    for flags in ("--map-location cpu", "--strip-prefix module."):  # nvidia-smi -L shows no GPU here
        assert "cudaenv checkpoint fix " + flags in english_joined, english_joined
        command = english_joined[english_joined.index("cudaenv checkpoint fix " + flags):].split(" -- ")[0]
        assert command in joined, command  # the command to paste is the English one, whole


def _frameworks_on_a_docker_host(machine):
    """The 535 driver's A10G with other CUDA consumers (a CuPy for CUDA 13, both ONNX Runtime packages, a CPU-only
    TensorFlow) in the interpreter's site-packages, on a Docker host whose nvidia runtime is not registered."""
    from framework_builders import ORT_BUILD_INFO, dist, tensorflow

    site = machine.root.dir("env/lib/python3.12/site-packages")
    dist(site, "cupy-cuda13x", "14.0.0")
    dist(site, "onnxruntime-gpu", "1.23.2", files={"onnxruntime/capi/build_and_package_info.py": ORT_BUILD_INFO % ("1.23.2", "12.2")})
    dist(site, "onnxruntime", "1.23.2")
    tensorflow(site, cuda_build=False, and_cuda=False)
    machine.env["PYTHONPATH"] = str(site)
    a10g_535(machine)
    machine.bin.command("docker")
    machine.bin.command("nvidia-ctk")
    machine.root.file("etc/docker/daemon.json", '{"exec-opts": ["native.cgroupdriver=systemd"]}')
    machine.root.dir("dev/char")
    return machine


FRAMEWORK_AND_CONTAINER_IDS = ("framework-conflict", "framework-driver-too-old", "framework-cpu-build",
                               "container-runtime-unregistered", "container-cgroup-reload")


@pytest.mark.parametrize("columns", [80, 60])
def test_frameworks_and_a_container_host_in_chinese_fit_the_terminal(machine, columns):
    """The Frameworks and Containers sections, their findings (titles, details, fixes) and the verbose facts in
    Chinese within the columns; the commands to paste as in English."""
    _frameworks_on_a_docker_host(machine)
    machine.env["COLUMNS"] = str(columns)
    english = json.loads(_run(machine, "doctor", "--json").out)
    found = {f["id"]: f for f in english["findings"]}
    assert set(FRAMEWORK_AND_CONTAINER_IDS) <= set(found), sorted(found)
    too_long = {}
    for argv in (("doctor",), ("doctor", "--verbose"), ("fix", "--dry-run")):
        r = _run(machine, *argv, env_extra={"LANG": "zh_CN.UTF-8"})
        en = _run(machine, *argv)
        assert r.code == en.code
        same = set((en.out + en.err).splitlines())
        long = [line for line in (r.out + r.err).splitlines() if width_of(line) > columns and not _one_word(line) and line not in same]
        if long:
            too_long[" ".join(argv)] = long[:3]
        if argv == ("doctor",):
            doctor, doctor_en = r.out, en.out
    assert not too_long, json.dumps(too_long, indent=1, ensure_ascii=False)
    for fid in FRAMEWORK_AND_CONTAINER_IDS:  # each finding's heading line: the id, then its title in Chinese
        title = found[fid]["title"]
        assert title in " ".join(doctor_en.split()) and title not in " ".join(doctor.split()), fid
    flat, bare = " ".join(doctor.split()), "".join(doctor.split())  # a Chinese line breaks between two characters
    for words in ("不能同时安装的软件包：onnxruntime + onnxruntime-gpu", "有 GPU 的机器上装了仅 CPU 版本：tensorflow 2.20.0",
                  "nvidia 运行时没有注册到 docker", "下一次 systemctl daemon-reload 时，运行中的 GPU 容器会失去 GPU", "已安装"):
        assert "".join(words.split()) in bare, words
    for cmd in ("sudo nvidia-ctk runtime configure --runtime=docker", "sudo systemctl restart docker",
                "sudo nvidia-ctk system create-dev-char-symlinks --create-all"):
        assert cmd in flat.replace(" \\ ", " "), cmd  # the commands as they are (a long one wraps with a backslash)


@pytest.mark.parametrize("columns", [80, 60])
def test_a_pasted_kernel_log_is_explained_in_chinese(tmp_path, cli, columns):
    """A pasted kernel log's Xids: the facts read from it, the doctor's gpu-xid finding (its Xid table's meanings and
    first steps) and the fix in Chinese, within the columns; the Xid names and commands as NVIDIA and the shell write them."""
    log = tmp_path / "kern.log"
    log.write_text(recorded("kernel-log-xid69-31.txt"))
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path), "COLUMNS": str(columns)}
    english = cli("explain", "--offline", "--file", str(log), env=env)
    r = cli("explain", "--offline", "--file", str(log), env=dict(env, LANG="zh_CN.UTF-8"))
    assert r.code == english.code
    assert "The doctor's findings on those facts:" in english.out and "Xid 69" in english.out
    flat = "".join(r.out.split())  # a Chinese line breaks between two characters: compare without the blanks
    for words in ("内核日志：Xid 69（在 0000:08:00 上），7 次", "doctor 对这些信息的判断：", "警告 gpu-xid: 内核日志中有 GPU 故障（Xid 69, 31）",
                  "图形引擎拒绝了一条命令", "Graphics Engine class error", "nvidia-bug-report.sh"):
        assert "".join(words.split()) in flat, words
    assert "The doctor's findings" not in r.out and "rarely hardware" not in r.out
    assert [line for line in r.out.splitlines() if width_of(line) > columns and not _one_word(line)] == []


def test_explain_variants_are_said_in_chinese(tmp_path, cli):
    """The variants of data/explain_rules.json (a Mac, an AMD GPU, a container, a cut strict=False print...) replace a
    row's title, explanation and advice; their texts are in the catalog too (tools/po.py once read a key the table
    does not have, and a Chinese run printed every variant in English)."""
    log = tmp_path / "mac.log"
    log.write_text("Running on a MacBook Pro M2\n"
                   'Traceback (most recent call last):\n  File "infer.py", line 12, in <module>\n    model = model.cuda()\n'
                   "AssertionError: Torch not compiled with CUDA enabled\n")
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path), "COLUMNS": "200"}
    english = cli("explain", "--file", str(log), env=env)
    assert english.out.startswith("torch-cpu-only: there is no CUDA on a Mac: use the Apple GPU (mps) or the CPU\n")
    r = cli("explain", "--file", str(log), env=dict(env, LANG="zh_CN.UTF-8"))
    assert r.out.startswith("torch-cpu-only: Mac 上没有 CUDA：请用 Apple GPU（mps）或 CPU\n"), r.out
    assert "macOS 版 torch 编译时不带 CUDA" in r.out and "Pick the device" not in r.out
