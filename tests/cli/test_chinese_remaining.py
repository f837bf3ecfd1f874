"""The texts a Chinese run still printed in English after the third pass of issue 33 (the closing note's list and what
a sweep of every command's scenarios in zh_CN found), each said in Chinese now; the English of each is unchanged.
"""

from builders import TOOLS

from cudaenv.core.i18n import tr
from cudaenv.render.width import width_of

ZH = {"LANG": "zh_CN.UTF-8"}


def _flat(text):
    return "".join(text.split())


# ------------------------------------------------------------------ the install plan's source note
def test_the_install_plans_source_note_in_chinese(chinese):
    from cudaenv.toolkit.install.repos import plan_commands

    _, source = plan_commands("12.4", "ubuntu", "22.04", None, "x86_64")
    assert source == ("https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html (network repository "
                      "installation: cuda-keyring_1.1-1_all.deb on Debian/Ubuntu, dnf config-manager --add-repo "
                      ".../cuda-rhel9.repo on RHEL/Rocky, zypper addrepo .../cuda-sles15.repo on SUSE; the "
                      "cuda-toolkit-X-Y meta package installs the toolkit without the driver)")  # the table's, as it was
    assert tr(source) == ("https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html（网络仓库安装："
                          "Debian/Ubuntu 上用 cuda-keyring_1.1-1_all.deb，RHEL/Rocky 上用 dnf config-manager --add-repo "
                          ".../cuda-rhel9.repo，SUSE 上用 zypper addrepo .../cuda-sles15.repo；元包 cuda-toolkit-X-Y "
                          "只装工具包，不装驱动）")
    _, wsl = plan_commands("12.4", "ubuntu", "22.04", 2, "x86_64")
    assert tr(wsl).startswith("https://docs.nvidia.com/cuda/wsl-user-guide/index.html（WSL2：使用 WSL-Ubuntu 仓库")


def test_a_source_without_a_note_is_said_as_it_is(chinese):
    from cudaenv.toolkit.install.repos import source_text

    for text in ("https://example.invalid/guide", "https://example.invalid/guide ()", "a (b) c"):
        assert source_text(text) == text and tr(source_text(text)) == text


def test_install_plan_on_a_wsl2_root_in_chinese(cli, fake_root, recorded):
    fake_root.file("etc/os-release", recorded("osrelease-ubuntu-2204.txt"))
    fake_root.file("proc/version", recorded("proc-version-wsl2.txt"))
    fake_root.file("proc/sys/kernel/osrelease", "5.15.153.1-microsoft-standard-WSL2\n")
    env = {"PATH": TOOLS, "CUDAENV_ROOT": str(fake_root.path), "COLUMNS": "80"}
    zh = cli("install", "12.4", "--plan", env=dict(env, **ZH))
    en = cli("install", "12.4", "--plan", env=dict(env, LANG="C"))
    assert zh.code == en.code == 0, zh.err
    assert _flat("来源：https://docs.nvidia.com/cuda/wsl-user-guide/index.html（WSL2：使用 WSL-Ubuntu 仓库（其中的软件包"
                 "不含驱动），安装 cuda-toolkit-12-x；不要装 cuda、cuda-12-x 或 cuda-drivers，它们会覆盖 WSL 的驱动桩库）") \
        in _flat(zh.out), zh.out
    assert "whose packages hold no driver" not in zh.out and "whose packages hold no driver" in " ".join(en.out.split())
    assert all(width_of(line) <= 80 for line in zh.out.splitlines() if " " in line.strip()), zh.out  # (a URL alone: unbroken)


# ------------------------------------------------------------------ `cudaenv fix`: what the install did
def _outcome(**kw):
    from types import SimpleNamespace

    from cudaenv.fix.apply import InstallOutcome

    torch = SimpleNamespace(installed=True, version="2.5.1+cu121", cuda="12.1", cuda_available=True)
    base = dict(argv=("/venv/bin/python", "-m", "pip", "install", "torch"), code=0, timed_out=False, seconds=42.0,
                output="", timeout=900.0, before="2.5.1+cpu", after=SimpleNamespace(torch=torch))
    return InstallOutcome(**dict(base, **kw))


def _fix_texts():
    from types import SimpleNamespace

    from cudaenv.core.i18n import M
    from cudaenv.render.fix import render_install

    still = SimpleNamespace(id="torch-cuda-unavailable", title=M("torch sees no GPU"))
    return [render_install(_outcome(), "/venv/bin/python", "pip"),
            render_install(_outcome(remaining=(still,)), "/venv/bin/python", "pip"),
            render_install(_outcome(code=1, after=SimpleNamespace(torch=SimpleNamespace(installed=False))),
                           "/venv/bin/python", "pip"),
            render_install(_outcome(code=None, timed_out=True), "/venv/bin/python", "pip"),
            render_install(_outcome(code=1), "/venv/bin/python", "uv"),
            render_install(_outcome(code=1), "/venv/bin/python", "conda"),
            render_install(_outcome(unreachable="connection refused"), "/venv/bin/python", "pip")]


def test_fixs_install_outcome_in_english_as_it_was():
    ok, still, failed, killed, uv, conda, unreachable = _fix_texts()
    assert ok == ("\nInstalled in 42 s. torch in /venv/bin/python: 2.5.1+cpu -> 2.5.1+cu121 (CUDA 12.1, "
                  "cuda.is_available() = True)\nThe doctor finds no torch problem now.\n")
    assert still.endswith("\nstill: [torch-cuda-unavailable] torch sees no GPU\n")
    assert failed == ("\nThe install failed: /venv/bin/python exited with status 1 after 42 s.\ntorch in /venv/bin/python "
                      "is now: not installed (before: 2.5.1+cpu).\npip resolves and downloads everything before it "
                      "removes the old torch, and puts the old one back when installing the new one fails; it cannot "
                      "promise that for a process that is killed.\n")
    assert "\nThe install was stopped after 900 s (CUDAENV_INSTALL_TIMEOUT)." in killed
    assert "run `/venv/bin/python -m pip install --force-reinstall torch==2.5.1+cpu` to repair it." in killed
    assert "uv does not promise to restore the previous torch after a failure: check it before use." in uv
    assert "conda may have changed part of the environment before it stopped" in conda
    assert unreachable.startswith("\nThe index cannot be reached (connection refused): the install was not run")


def test_fixs_install_outcome_in_chinese(chinese):
    ok, still, failed, killed, uv, conda, unreachable = _fix_texts()
    assert ok == ("\n安装完成，用时 42 s。/venv/bin/python 中的 torch：2.5.1+cpu -> 2.5.1+cu121（CUDA 12.1，"
                  "cuda.is_available() = True）\ndoctor 现在没有发现 torch 的问题。\n")
    assert still.endswith("\n仍有：[torch-cuda-unavailable] torch 看不到 GPU\n")
    assert failed == ("\n安装失败：/venv/bin/python 以状态 1 退出，用时 42 s。\n/venv/bin/python 中的 torch 现在是：未安装"
                      "（之前：2.5.1+cpu）。\npip 会在移除旧 torch 之前解析并下载好所有东西，新 torch 安装失败时会把旧的放回去；"
                      "但进程被终止时它无法保证这一点。\n")
    assert "\n安装在 900 s 后被停止（CUDAENV_INSTALL_TIMEOUT）。" in killed
    assert "运行 `/venv/bin/python -m pip install --force-reinstall torch==2.5.1+cpu` 修复它。" in killed
    assert "uv 不保证失败后恢复原来的 torch：使用前请先检查。" in uv
    assert "conda 在停止前可能已经改动了环境的一部分：使用前先用 `cudaenv doctor` 检查。" in conda
    assert unreachable.startswith("\n连不上索引（connection refused）：没有运行安装，什么都没有改动。\n")
    assert not [line for line in "".join(_fix_texts()).splitlines() if "the install" in line.lower()]


# ------------------------------------------------------------------ `cudaenv init --install`
def test_init_install_says_what_it_did_in_chinese(cli, tmp_path):
    rc = tmp_path / ".bashrc"
    rc.write_text("# mine\n")
    env = {"HOME": str(tmp_path), "PATH": TOOLS, "SHELL": "/bin/bash", "COLUMNS": "80"}
    first = cli("init", "bash", "--install", "--rc", str(rc), env=dict(env, **ZH))
    again = cli("init", "bash", "--install", "--rc", str(rc), env=dict(env, **ZH))
    assert first.code == again.code == 0, first.err
    lines = first.err.splitlines()
    assert lines[0].startswith("cudaenv: 已把钩子加到 %s（备份：" % rc), first.err
    assert lines[1] == 'cudaenv: 打开一个新的 shell，或者运行：command -v cudaenv >/dev/null 2>&1 && eval "$(cudaenv init bash)"'
    assert again.err == "cudaenv: 钩子已经在 %s 中；没有任何改动\n" % rc
    assert "# added by `cudaenv init bash --install`; delete this block to remove it" in rc.read_text()  # (the rc file's
    # block is a script's comment: English, as the generated scripts are)
    english = cli("init", "bash", "--install", "--rc", str(rc), env=dict(env, LANG="C"))
    assert english.err == "cudaenv: the hook is already in %s; nothing changed\n" % rc


# ------------------------------------------------------------------ `cudaenv torch mirror-check`
WHEEL = "torch-2.7.1+cu126-cp311-cp311-manylinux_2_28_x86_64.whl"


def _mirror_checks():
    from cudaenv.recommend.mirrors import MirrorCheck, SourceCheck, WheelWant

    want = WheelWant(torch_version="2.7.1", variant="cu126", local="cu126", python="3.11", platform="linux-x86_64")
    base = "https://mirror.nju.edu.cn/pytorch/whl"
    page = base + "/cu126/torch/"
    good = SourceCheck(url=page, layout="simple", file=WHEEL, file_url=base + "/cu126/" + WHEEL, sha256="a" * 64,
                       served_by="mirror")
    official = SourceCheck(url="https://download.pytorch.org/whl/cu126/torch/", layout="simple", sha256="a" * 64)
    return [MirrorCheck(mirror="nju", base=base, expected_layout="simple", want=want, source=good, official=official,
                        verdict="ok", hash_match=True, commands=("pip install torch==2.7.1+cu126 --index-url %s/cu126" % base,),
                        snippet=("[pypi-options]",)),
            MirrorCheck(mirror="nju", base=base, expected_layout="simple", want=want,
                        source=SourceCheck(url=page, layout="simple", newest="2.7.0"), verdict="lagging"),
            MirrorCheck(mirror=base, base=base, expected_layout=None, want=WheelWant(torch_version="2.7.1", variant="cu126"),
                        source=SourceCheck(url=page, problem="unreachable", message="[Errno 111] Connection refused"),
                        verdict="unreachable")]


def test_mirror_check_in_english_as_it_was():
    from cudaenv.render.mirror import render_mirror_check

    ok, lagging, dead = (render_mirror_check(c) for c in _mirror_checks())
    assert ok.startswith("Mirror nju (https://mirror.nju.edu.cn/pytorch/whl): a simple index\n"
                         "  (data/torch_mirrors.json: simple)\n")
    assert "Looked for torch 2.7.1+cu126, Python 3.11, linux-x86_64 (the build `cudaenv torch recommend` picks here)" \
        in " ".join(ok.split())
    assert "  served by: the mirror itself\n" in ok and "\nOK: the mirror serves this build itself, and its sha256 " \
        "matches the official\n  index's.\n" in ok and "\nInstall from it:\n" in ok and "\npixi (in the manifest):\n" in ok
    assert "Not usable: the mirror lags: its newest build of this kind is torch 2.7.0, not 2.7.1." in " ".join(lagging.split())
    assert "Looked for torch 2.7.1, Python any, any platform" in dead and "no index page read" in dead
    assert "Not usable: the mirror cannot be reached: [Errno 111] Connection refused." in " ".join(dead.split())


def test_mirror_check_in_chinese(chinese):
    from cudaenv.render.mirror import render_mirror_check

    ok, lagging, dead = (render_mirror_check(c) for c in _mirror_checks())
    assert _flat("镜像源 nju（https://mirror.nju.edu.cn/pytorch/whl）：simple 索引（data/torch_mirrors.json：simple）") \
        in _flat(ok), ok
    assert _flat("查找的是 torch 2.7.1+cu126，Python 3.11，linux-x86_64（`cudaenv torch recommend` 在这里选的版本）") in _flat(ok)
    assert "  提供者：镜像源自己\n" in ok and _flat("可用：镜像源自己提供这个版本，而且它的 sha256 与官方索引的一致。") in _flat(ok)
    assert "\n从它安装：\n" in ok and "\npixi（写在清单文件里）：\n" in ok
    assert _flat("不可用：镜像源落后了：它这一类最新的版本是 torch 2.7.0，而不是 2.7.1。") in _flat(lagging)
    assert "查找的是 torch 2.7.1，Python 任意，任意平台" in dead and "没有读到索引页面" in dead
    assert _flat("不可用：连不上镜像源：[Errno 111] Connection refused。") in _flat(dead)  # (the quoted error as it is)
    for text in (ok, lagging, dead):
        assert all(width_of(line) <= 80 for line in text.splitlines() if " " in line.strip()), text


# ------------------------------------------------------------------ explain: why a match is less sure
def test_explains_confidence_and_its_reasons_in_chinese(cli):
    text = "RuntimeError: CUDA error: all CUDA-capable devices are busy unavailable"  # "or" missing: medium
    zh = cli("explain", "--offline", text, env=dict(ZH, COLUMNS="80"))
    en = cli("explain", "--offline", text, env={"LANG": "C", "COLUMNS": "80"})
    assert "confidence: medium (found with one word missing or mistyped)" in " ".join(en.out.split()), en.out
    assert _flat("可信度：中（找到时缺了一个词或有一个词拼错）") in _flat(zh.out), zh.out
    assert "mistyped" not in zh.out and "medium" not in zh.out


def test_every_ranking_note_is_said_by_the_renderer_in_chinese(chinese):
    """The ranking notes are data of explain/rank.py ((kind, value) pairs); render/explain.py says each, in Chinese
    here and in English in the JSON."""
    from cudaenv.explain import classify_all
    from cudaenv.explain.rank import NOTE_KINDS
    from cudaenv.render.explain import RANK_NOTES, rank_note, with_notes

    assert set(RANK_NOTES) == set(NOTE_KINDS)  # every kind has its sentence
    said = set()
    for text in ("RuntimeError: CUDA error: all CUDA-capable devices are busy unavailable",
                 "UserWarning: CUDA initialization: Found no NVIDIA driver on your system.",
                 "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at some "
                 "other API call, so the stacktrace below might be incorrect."):
        for m in classify_all(text):
            said.update(rank_note(n) for n in m.why)
            assert all(kind in NOTE_KINDS and isinstance(value, str) for kind, value in m.why)  # data, not sentences
            assert m.notes == () and with_notes(m).notes == tuple(  # the JSON's notes: English, in any language
                RANK_NOTES[k] % ((v,) if "%s" in RANK_NOTES[k] else ()) for k, v in m.why)
    assert "找到时缺了一个词或有一个词拼错" in said and "found with one word missing or mistyped" not in said


# ------------------------------------------------------------------ verify: the failed line's colon
def test_verifys_failed_line_takes_a_chinese_colon(chinese):
    from types import SimpleNamespace

    from cudaenv.core.i18n import M
    from cudaenv.render.verify import render_devices

    report = SimpleNamespace(info={}, python="/venv/bin/python", problem=SimpleNamespace(
        message=M("torch is not installed in %s", "/venv/bin/python"), error=None, id="torch-missing"))
    text = render_devices(report, width=80)
    assert "\n失败：/venv/bin/python 中没有安装 torch\n" in text, text
    assert "失败: " not in text
    from cudaenv.core.i18n import ENGLISH, set_language

    set_language(ENGLISH)
    assert "\nFAILED: torch is not installed in /venv/bin/python\n" in render_devices(report, width=80)


# ------------------------------------------------------------------ full-width punctuation around Chinese words
def test_the_doctors_driver_line_without_a_driver_in_chinese(cli, fake_root):
    env = {"PATH": TOOLS, "CUDAENV_ROOT": str(fake_root.path), "COLUMNS": "80"}
    zh = cli("doctor", "--quick", env=dict(env, **ZH))
    en = cli("doctor", "--quick", env=dict(env, LANG="C"))
    driver = [line for line in zh.out.splitlines() if line.split()[1:2] == ["驱动"]]
    assert driver and driver[0].endswith("无（nvml：未找到；nvidia-smi：未找到）"), zh.out
    assert any(line.endswith("none (nvml: missing; nvidia-smi: missing)") for line in en.out.splitlines()), en.out


def test_the_installed_toolkits_flags_in_chinese(chinese):
    from cudaenv.model.snapshot import Toolkit
    from cudaenv.render.switch import render_installed

    toolkits = [Toolkit(path="/usr/local/cuda-12.1", version="12.1.1", source="/usr/local/cuda-*", active=True,
                        is_link_target=True),
                Toolkit(path="/usr/local/cuda-11.8", version="11.8.0", source="/usr/local/cuda-*")]
    text = render_installed(toolkits)
    assert "  12.1.1     /usr/local/cuda-12.1  （当前使用，/usr/local/cuda）" in text.splitlines(), text
    from cudaenv.core.i18n import ENGLISH, set_language

    set_language(ENGLISH)
    assert "  12.1.1     /usr/local/cuda-12.1  (active, /usr/local/cuda)" in render_installed(toolkits).splitlines()


def test_a_gpus_label_inside_a_finding_in_chinese(chinese):
    from cudaenv.diagnose._common import gpu_label
    from cudaenv.model.snapshot import Gpu

    label = gpu_label(Gpu(index=1, name="NVIDIA GeForce RTX 2080 Ti", compute_capability="7.5"))
    assert label == "GPU 1 (NVIDIA GeForce RTX 2080 Ti, compute 7.5)"  # JSON and English as they were
    assert tr(label) == "GPU 1（NVIDIA GeForce RTX 2080 Ti，算力 7.5）"
    assert gpu_label(Gpu(index=0)) == tr(gpu_label(Gpu(index=0))) == "GPU 0"


def _help(cli, monkeypatch, capsys, env):
    """`cudaenv fleet summarize --help` (argparse writes it to sys.stdout and exits 0) at 80 columns."""
    import pytest

    monkeypatch.setenv("COLUMNS", "80")  # argparse's own width (shutil reads os.environ)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        cli("fleet", "summarize", "--help", env=dict(env, COLUMNS="80"))
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_helps_section_headings_take_a_chinese_colon(cli, monkeypatch, capsys):
    zh = _help(cli, monkeypatch, capsys, ZH)
    en = _help(cli, monkeypatch, capsys, {"LANG": "C"})
    assert "\n位置参数：\n" in zh and "\n选项：\n" in zh and "选项:" not in zh, zh
    assert "\npositional arguments:\n" in en and "\noptions:\n" in en
    assert "  --format {text,json,markdown,html}\n" in zh  # an option's line is not a heading


def test_fleets_section_counts_take_full_width_brackets(cli, tmp_path):
    from fleet_builders import planted

    folder = str(planted(tmp_path / "r"))
    zh = cli("fleet", "summarize", "--all", folder, env={"PATH": "/nonexistent", "COLUMNS": "80", **ZH})
    en = cli("fleet", "summarize", "--all", folder, env={"PATH": "/nonexistent", "COLUMNS": "80", "LANG": "C"})
    assert "\n所有节点（20）\n" in zh.out and "节点 (" not in zh.out, zh.out
    assert "\nEvery node (20)\n" in en.out


def test_fleets_none_in_chinese(cli, tmp_path):
    import json

    from fleet_builders import node_report

    folder = tmp_path / "r"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / (name + ".json")).write_text(json.dumps(node_report(name).to_dict()))
    (folder / "c.json").write_text(json.dumps(node_report("c", driver=None).to_dict()))
    zh = cli("fleet", "summarize", str(folder), env={"PATH": "/nonexistent", "COLUMNS": "80", **ZH})
    en = cli("fleet", "summarize", str(folder), env={"PATH": "/nonexistent", "COLUMNS": "80", "LANG": "C"})
    assert "无 (1)" in zh.out and "none" not in zh.out, zh.out
    assert "none (1)" in en.out, en.out


def test_an_unknown_shell_in_chinese(cli):
    zh = cli("init", "tcsh", env=ZH)
    en = cli("init", "tcsh", env={"LANG": "C"})
    assert zh.code == en.code == 2 and zh.err.startswith("cudaenv: 错误：未知的 shell 'tcsh'\n"), zh.err
    assert en.err.startswith("cudaenv: error: unknown shell 'tcsh'\n")


def test_a_runfile_that_fails_check_installer_says_its_problems_in_chinese(cli, tmp_path):
    runfile = tmp_path / "cuda_12.4.1_550.54.15_linux.run"
    runfile.write_bytes(b"")
    env = {"PATH": TOOLS, "CUDAENV_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path), "COLUMNS": "80"}
    zh = cli("install", "12.4", "--runfile", str(runfile), env=dict(env, **ZH))
    en = cli("install", "12.4", "--runfile", str(runfile), env=dict(env, LANG="C"))
    assert zh.code == en.code == 1
    assert _flat("%s 未通过 check-installer：文件是空的" % runfile) in _flat(zh.err), zh.err
    assert "%s failed check-installer: the file is empty" % runfile in " ".join(en.err.split()), en.err


def test_a_pasted_gpu_line_in_chinese(chinese, recorded):
    from cudaenv.pasted import read_facts
    from cudaenv.render.pasted import fact_lines

    lines = fact_lines(read_facts(recorded("smi-banner-550-single.txt")))
    gpu = [line for line in lines if line.startswith("GPU 0")]
    assert gpu and gpu[0].startswith("GPU 0：") and ", " not in gpu[0] and "，已用 " in gpu[0], lines


def test_an_uninstall_steps_tags_in_chinese(chinese):
    from cudaenv.core.i18n import M
    from cudaenv.model.snapshot import Toolkit
    from cudaenv.render.plan import render_plan_text
    from cudaenv.toolkit.uninstall.records import Plan, Step

    targets = tuple(Toolkit(path="/usr/local/cuda-%s" % v, version=v, source="/usr/local/cuda-*") for v in ("12.4", "11.8"))
    step = Step(id="rm", kind="remove", description=M("remove %s", "/usr/local/cuda-12.4"), needs_root=True,
                destructive=True, commands=(("rm", "-rf", "/usr/local/cuda-12.4"),))
    text = render_plan_text(Plan(targets=targets, steps=(step,)), width=80)
    assert "\n1. [root，删除] " in text and "[root, " not in text, text
    assert "（未知）；CUDA 11.8" in text, text
    from cudaenv.core.i18n import ENGLISH, set_language

    set_language(ENGLISH)
    english = render_plan_text(Plan(targets=targets, steps=(step,)), width=80)
    assert "\n1. [root, removes] remove /usr/local/cuda-12.4\n" in english and "(unknown); CUDA 11.8" in english


# ------------------------------------------------------------------ install's stub, verify's "no GPU here"
def test_installs_stub_notes_in_chinese(chinese, tmp_path):
    from cudaenv.toolkit.install.stub import build_stub

    path, why = build_stub(None, str(tmp_path), str(tmp_path))  # no include/cuda.h: nothing is run
    assert path is None and why == "no lib64/stubs/libcuda.so: the toolkit has no include/cuda.h to build it from"
    assert tr(why) == "没有 lib64/stubs/libcuda.so：工具包里没有用来生成它的 include/cuda.h"


def test_verifys_no_gpu_here_in_chinese(chinese, monkeypatch):
    from types import SimpleNamespace

    import cudaenv.diagnose
    import cudaenv.probes.collect
    from cudaenv.core.i18n import M
    from cudaenv.render.verify import render_error
    from cudaenv.verify.run import machine_problem

    snapshot = SimpleNamespace(gpus=(), driver=None, platform=SimpleNamespace(dev_nvidia=False))
    monkeypatch.setattr(cudaenv.probes.collect, "collect_snapshot", lambda host, python, quick: snapshot)
    monkeypatch.setattr(cudaenv.diagnose, "diagnose", lambda s: [])
    symptom = SimpleNamespace(id="torch-cpu-only", message=M("torch is not installed in %s", "/p"))
    problem = machine_problem(None, "/p", symptom)
    assert problem.message == ("nothing can run on a GPU here: no NVIDIA driver answers (nvidia-smi, NVML) and there is "
                               "no /dev/nvidia* device")
    text = "\n".join(render_error(problem.error, width=200))
    assert "错误 no-gpu：这台机器上没有 NVIDIA GPU" in text, text
    assert "这里没有任何东西能在 GPU 上运行：没有 NVIDIA 驱动响应（nvidia-smi、NVML），也没有 /dev/nvidia* 设备" in text
    assert "torch：/p 中没有安装 torch" in text and "cudaenv verify --cpu    (在 CPU 上做同样的检查)" in text


# ------------------------------------------------------------------ the doctor's probe notes
def test_the_probe_notes_in_chinese(cli, fake_root, fake_bin):
    script = fake_bin.path / "nvidia-smi"  # answers, but with no GPU list (constructed: not any real output)
    script.write_text("#!/bin/sh\necho 'something unexpected'\n")
    script.chmod(0o755)
    env = {"PATH": fake_bin.env_path, "CUDAENV_ROOT": str(fake_root.path), "COLUMNS": "80"}
    zh = cli("doctor", "--quick", "--verbose", env=dict(env, **ZH))
    en = cli("doctor", "--quick", "--verbose", env=dict(env, LANG="C"))
    said = _flat(zh.out)
    assert _flat("platform：没有 /etc/os-release 或 /usr/lib/os-release") in said, zh.out
    assert _flat("nvidia-smi：nvidia-smi 没有给出 GPU 列表：something unexpected") in said, zh.out
    assert "nvidia-smi: nvidia-smi gave no GPU list: something unexpected" in " ".join(en.out.split()), en.out


# ------------------------------------------------------------------ a report of another schema (fleet, diff)
def test_a_report_of_another_schema_in_chinese(cli, tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "a.json").write_text("[1]")
    (folder / "b.json").write_text('{"schema_version": 9}')
    env = {"PATH": "/nonexistent", "COLUMNS": "80"}
    zh = cli("fleet", "summarize", str(folder), env=dict(env, **ZH))
    en = cli("fleet", "summarize", str(folder), env=dict(env, LANG="C"))
    said = _flat(zh.out)
    assert _flat("a.json：不是 doctor 报告：不是 cudaenv 报告：JSON list，不是对象") in said, zh.out
    assert _flat("b.json：不是 doctor 报告：schema_version 9：这个 cudaenv 只读 schema 1 的报告（请升级 cudaenv）") in said
    english = " ".join(en.out.split())
    assert "a.json: not a doctor report: not a cudaenv report: a JSON list, not an object" in english, en.out
    assert "b.json: not a doctor report: schema_version 9: this cudaenv reads schema 1 reports only (upgrade cudaenv)" \
        in english
    diff = cli("diff", str(folder / "a.json"), str(folder / "b.json"), env=dict(env, **ZH))
    assert diff.code == 2 and "not a cudaenv report" not in diff.err and "不是 cudaenv 报告" in diff.err, diff.err


def test_a_newer_minor_schema_is_noted_in_chinese(chinese):
    from cudaenv.model.schema import SCHEMA_MINOR, SCHEMA_VERSION, check_schema

    notes = []
    check_schema({"schema_version": "%d.%d" % (SCHEMA_VERSION, SCHEMA_MINOR + 1)}, notes)
    assert tr(notes[0]).startswith("schema_version %d.%d 比这个 cudaenv 的 %d.%d 新" % (
        SCHEMA_VERSION, SCHEMA_MINOR + 1, SCHEMA_VERSION, SCHEMA_MINOR)), notes


def test_the_torch_probes_timeout_note_in_chinese(chinese):
    """The torch probe's note when its child times out or cannot run is said whole in Chinese: what timed out (the
    probe, its pass, the interpreter) and the setting that waits longer were English values inside the marked note."""
    from types import SimpleNamespace

    from cudaenv.core.i18n import ENGLISH, set_language
    from cudaenv.host.process import CommandResult
    from cudaenv.probes.torch import _run_child

    for error, english, chinese_text in (
            ("timeout", "the torch probe (dynamic pass) in /venv/bin/python timed out after 30 s (set "
                        "CUDAENV_TORCH_TIMEOUT to wait longer)",
             "dynamic 阶段的 torch 探测，解释器 /venv/bin/python 在 30 秒后超时（设置 CUDAENV_TORCH_TIMEOUT 可以等待更久）"),
            ("missing", "the torch probe (dynamic pass) in /venv/bin/python could not run: ",
             "dynamic 阶段的 torch 探测，解释器 /venv/bin/python 无法运行：")):
        result = CommandResult(argv=("/venv/bin/python",), returncode=None, error=error, timeout=30.0)
        notes = []
        assert _run_child(None, "/venv/bin/python", "dynamic", 30.0, notes, started=SimpleNamespace(result=lambda: result)) is None
        message = notes[0].message
        assert message.startswith(english), message
        assert tr(message).startswith(chinese_text), tr(message)
        assert "probe" not in tr(message) and "wait longer" not in tr(message)
    set_language(ENGLISH)
