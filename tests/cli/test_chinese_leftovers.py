"""The texts a Chinese run still printed in English after the first pass of issue 33, each said in Chinese now: a
command's failure (CommandResult.describe: rpm -qa's error, a probe's note), uninstall's "cannot read" notes and
by-hand reasons, `list`'s notes and the places it searched, the reasons of the doctor's `cudaenv use` fixes, diff's and
fleet's reasons for an unreadable report (text and HTML; JSON and Markdown stay English), verify's problems, `explain
--list`, the doctor's driver tool states and the install plan's comments. The English of each is unchanged.
"""

import json


from cudaenv.core.i18n import ENGLISH, M, set_language, tr

ZH = {"LANG": "zh_CN.UTF-8"}


def _result(**kw):
    from cudaenv.host.process import CommandResult

    return CommandResult(argv=("rpm", "-qa"), **{"returncode": None, **kw})


def test_describe_is_english_text_said_in_chinese(chinese):
    from cudaenv.model.snapshot import Note

    cases = [({"error": "missing"}, "rpm was not found", "找不到 rpm"),
             ({"error": "timeout", "timeout": 5.0}, "rpm timed out after 5 s", "rpm 在 5 s 后超时"),
             ({"returncode": -11, "signal": "SIGSEGV"}, "rpm crashed (SIGSEGV)", "rpm 崩溃（SIGSEGV）")]
    for kw, english, said in cases:
        text = _result(**kw).describe()
        assert str(text) == english  # JSON and the English run read this
        assert tr(text) == said
    note = Note("uninstall", M("rpm -qa: %s", _result(error="missing").describe()))
    assert note.message == "rpm -qa: rpm was not found" and tr(note.message) == "rpm -qa：找不到 rpm"


def test_uninstall_notes_and_by_hand_reasons_in_chinese(chinese):
    from cudaenv.toolkit.uninstall import rcfiles

    action, _, reason = rcfiles.classify('export PATH=/usr/local/cuda-12.1/bin:/opt/other/bin:$PATH \\', "",
                                         ["/usr/local/cuda-12.1"])
    assert action == "hand" and reason.startswith("it ") and "\u4e00" <= tr(reason)[0] <= "\u9fff"
    from cudaenv.render.plan import render_plan_text
    from cudaenv.toolkit.uninstall.records import Plan
    from cudaenv.model.snapshot import Note

    plan = Plan(targets=(), steps=(), notes=(Note("uninstall", M("cannot read %s: shell startup lines there were not checked",
                                                                "/home/u/.bashrc")),))
    text = render_plan_text(plan, width=200)
    assert "无法读取 /home/u/.bashrc：没有检查其中的 shell 启动行" in text


def test_list_names_its_notes_and_searched_places_in_chinese(chinese):
    from cudaenv.model.snapshot import Note
    from cudaenv.probes.toolkits.candidates import searched_places
    from cudaenv.render.toolkits import render_toolkit_table
    from cudaenv.toolkit.table import list_view

    class State:
        toolkits, cuda_symlink, active_toolkit = (), None, None

    text = render_toolkit_table(State(), list_view(State()), [Note("toolkits", M("cannot read %s", "/opt/x"))],
                                places=searched_places("linux"), width=200)
    assert "/usr/bin/nvcc 和 /usr/lib/cuda（发行版的包）" in text and "PATH 上的每个 nvcc" in text
    assert "无法读取 /opt/x" in text
    assert "distro packages" not in text and "every nvcc" not in text


def test_the_use_fix_reasons_in_chinese(chinese):
    from cudaenv.diagnose._common import use_fix

    line = use_fix("12.1", M("sets PATH and LD_LIBRARY_PATH together"))
    assert line == "source <(cudaenv use 12.1)    # sets PATH and LD_LIBRARY_PATH together; fish: cudaenv use 12.1 --shell fish | source"
    assert tr(line) == "source <(cudaenv use 12.1)    # 同时设置 PATH 和 LD_LIBRARY_PATH；fish：cudaenv use 12.1 --shell fish | source"


def _reports(tmp_path):
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "empty.json").write_text("")
    (folder / "cut.json").write_text('{"schema_version": 1, "platform": ')
    (folder / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    return folder


def test_fleet_says_why_a_report_is_unreadable_in_chinese_in_text_and_html(cli, tmp_path):
    folder = _reports(tmp_path)
    zh = cli("fleet", "summarize", str(folder), env=ZH)
    assert "空文件" in zh.out and "不是 JSON（被截断了？）" in zh.out and "不是 UTF-8 文本" in zh.out, zh.out
    html = cli("fleet", "summarize", str(folder), "--format", "html", env=ZH)
    assert "空文件" in html.out and "不是 UTF-8 文本" in html.out
    for machine in (["--json"], ["--format", "markdown"]):  # read by programs and maintainers: English
        out = cli("fleet", "summarize", str(folder), *machine, env=ZH).out
        assert "empty file" in out and "空文件" not in out
    english = cli("fleet", "summarize", str(folder), env={"LANG": "C"})
    assert "empty file" in english.out and "not JSON (truncated?)" in english.out


def test_diff_says_why_a_report_is_unreadable_in_chinese(cli, tmp_path):
    folder = _reports(tmp_path)
    zh = cli("diff", str(folder / "empty.json"), str(folder / "cut.json"), env=ZH)
    assert zh.code == 2 and "空文件" in zh.err, zh.err
    zh = cli("diff", str(folder), str(folder / "cut.json"), env=dict(ZH, COLUMNS="300"))
    assert "它是文件夹，不是普通文件；未读取" in "".join(line.strip() for line in zh.err.splitlines()), zh.err
    english = cli("diff", str(folder), str(folder / "cut.json"), env={"LANG": "C", "COLUMNS": "300"})
    assert "it is a folder, not a regular file; not read" in " ".join(line.strip() for line in english.err.splitlines())


def test_verify_problems_in_chinese(chinese):
    from cudaenv.verify.classify import import_hang

    problem = import_hang("/usr/bin/python3", 30.0)
    assert problem.message == "importing torch in /usr/bin/python3 hung: no answer within 30 s"
    assert tr(problem.message) == "在 /usr/bin/python3 中导入 torch 卡住了：30 秒内没有响应"


def test_explain_list_titles_in_chinese(cli):
    zh = cli("explain", "--list", env=ZH).out
    english = cli("explain", "--list", env={"LANG": "C"}).out
    assert "torch sees no GPU" in english and "torch sees no GPU" not in zh
    assert [line.split()[0] for line in zh.splitlines() if line[:1] not in (" ", "")] == \
        [line.split()[0] for line in english.splitlines() if line[:1] not in (" ", "")]  # the ids stay, in order
    assert json.loads(cli("explain", "--list", "--json", env=ZH).out)  # JSON stays JSON (and English)


def test_the_install_plans_comments_in_chinese(chinese):
    from cudaenv.toolkit.install.repos import plan_commands

    steps, _ = plan_commands("12.4", "ubuntu", "22.04", None, "x86_64")
    assert "sudo apt-get install cuda-toolkit-12-4    # the toolkit only: not `cuda`, which also installs a driver" in steps
    said = [tr(s) for s in steps]
    assert "sudo apt-get install cuda-toolkit-12-4    # 只装工具包：不要装 `cuda`，它会连驱动一起装" in said
    assert "# 或者，不需要 root：" in said and "conda install -c nvidia cuda-toolkit=12.4    # 在 conda 环境中：不需要 root" in said


def test_the_doctors_driver_tool_states_in_chinese(chinese):
    from cudaenv.render.report import TOOL_STATES
    from cudaenv.core.i18n import t

    assert [t(TOOL_STATES[k]) for k in ("missing", "not run", "timeout", "failed")] == ["未找到", "未运行", "超时", "失败"]


def test_a_cuda_visible_devices_problem_in_chinese(chinese):
    from cudaenv.model.snapshot import Gpu
    from cudaenv.parse.visible_devices import parse_visible_devices

    gpus = [Gpu(index=0, name="NVIDIA TITAN V"), Gpu(index=1, name="NVIDIA RTX 5880 Ada Generation")]
    found = parse_visible_devices("0,5", gpus, "FASTEST_FIRST").issues
    said = [tr(p.message) for p in found]
    assert "entry '5' is out of range: this machine has 2 GPUs (0..1), so it and every entry after it are ignored" in \
        [p.message for p in found]
    assert "条目 '5' 超出范围：这台机器有 2 块 GPU（0..1），所以它及其后的所有条目都被忽略" in said
    assert any(s.startswith("这些 GPU 型号不同（NVIDIA RTX 5880 Ada Generation, NVIDIA TITAN V）") for s in said), said


def test_checkpoint_inspect_prefix_lines_in_chinese(cli, tmp_path):
    import checkpoint_builders as cb

    path = tmp_path / "model.pt"
    path.write_bytes(cb.torch_zip(cb.cnn(prefix="module.")))
    zh = cli("checkpoint", "inspect", str(path), env=ZH).out
    assert "module.（顶层：全部 6 个键）" in zh and "of the top level" not in zh, zh
    english = cli("checkpoint", "inspect", str(path), env={"LANG": "C"}).out
    assert "module. on all 6 keys of the top level" in english


def test_explain_without_text_hints_in_chinese(cli):
    zh = cli("explain", "", env=ZH)
    assert zh.code == 2 and "或者用管道传入日志：cudaenv explain - <" in zh.err, zh.err


def test_a_framework_import_without_an_answer_in_chinese(chinese):
    from cudaenv.diagnose.framework_imports import _last_line

    error = M("no answer (%s)", M("timed out after %g s", 3.0))
    assert error == "no answer (timed out after 3 s)" and tr(_last_line(error)) == "没有响应（3 秒后超时）"


def test_the_holders_of_gpu_memory_in_chinese(chinese):
    from cudaenv.diagnose.resources import _who
    from cudaenv.model.snapshot import GpuProcess

    who = _who(GpuProcess(pid=4055325, owner="root", name="python3", used_memory_mib=2404, state="zombie"))
    assert who == "pid 4055325, user root, python3, 2404 MiB, zombie"
    assert "僵尸进程" in tr(who) and "user root" not in tr(who)


def test_an_unreadable_image_says_why_in_chinese(chinese, tmp_path):
    from cudaenv.core.i18n import Msg
    from cudaenv.probes.image import probe_image

    page = tmp_path / "page.tar"
    page.write_bytes(b"<html>not an image</html>\n")
    facts = probe_image(str(page), str(tmp_path))
    assert facts.readable is False and isinstance(facts.why, Msg)
    assert facts.why == "neither a docker save tarball, an OCI layout folder nor image JSON"
    assert tr(facts.why) == "既不是 docker save 的 tar 包，也不是 OCI 布局文件夹或镜像 JSON"


def test_the_xid_names_and_the_explain_line_in_chinese(chinese):
    from cudaenv.diagnose.health import xid_names
    from cudaenv.model.snapshot import GpuHealth, XidGroup

    names = xid_names(GpuHealth(xids=(XidGroup(code=79, pci=("0000:2b:00",)),)))
    assert names == "Xid 79 (GPU has fallen off the bus) on 0000:2b:00"
    assert tr(names) == "Xid 79 (GPU has fallen off the bus)（在 0000:2b:00 上）"
    glued = M("torch said: %s", "CUDA unknown error - this may be due to an incorrectly set up environment") + \
        M(" cudaenv explain reads it as %s (%s).", "cuda-unknown-error", "x")
    assert "environment cudaenv explain" in tr(glued)  # the Latin error and the next sentence keep their blank


def test_doctor_markdown_in_chinese_says_its_facts_in_chinese(cli, tmp_path):
    env = {"CUDAENV_ROOT": str(tmp_path), "PATH": str(tmp_path / "bin")}
    zh = cli("doctor", "--quick", "--format", "markdown", "--lang", "zh-CN", env=env).out
    english = cli("doctor", "--quick", "--format", "markdown", env=dict(env, **ZH)).out  # Markdown stays English by default
    assert "none (nvml: missing; nvidia-smi: missing)" in english, english
    assert "无 (nvml: 未找到; nvidia-smi: 未找到)" in zh, zh


def test_checkpoint_inspect_of_a_folder_in_chinese(cli, tmp_path):
    import checkpoint_builders as cb

    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "model-00001-of-00002.safetensors").write_bytes(cb.safetensors_file({"module.a": ("F32", (4,), 16)}))
    (folder / "model-00002-of-00002.safetensors").write_bytes(cb.safetensors_file({"module.b": ("F32", (4,), 16)}))
    zh = "".join(line.strip() for line in cli("checkpoint", "inspect", str(folder), env=ZH).out.splitlines())
    english = " ".join(line.strip() for line in cli("checkpoint", "inspect", str(folder), env={"LANG": "C"}).out.splitlines())
    assert "sharded safetensors checkpoint" in english and "2 files with tensors" in english
    assert "module. on all 2 keys of all the shards" in english
    assert "分片的" in zh and "2 个含张量的文件" in zh and "分片，96 B，1 个张量" in zh and "没有保存（safetensors）" in zh, zh
    assert "module.（所有分片：全部 2 个键）" in zh and "what to do" not in zh and "怎么办：" in zh, zh


def test_verify_toolkit_stages_in_chinese(chinese):
    from cudaenv.render.verify import render_toolkit
    from cudaenv.verify.toolkit_check import Stage, ToolkitReport

    report = ToolkitReport("/usr/local/cuda-12.4/bin/nvcc", "12.4", ok=True, compiled=True, ran=True, stages=(
        Stage("compile", True, 1.5, M("compiled for %s", M("nvcc's default architecture"))),
        Stage("run", True, 0.1, M("%d device(s) ran the kernel", 1))),
        devices=({"ok": True, "device": 0, "name": "NVIDIA A10G", "capability": "8.6"},))
    text = render_toolkit(report, width=100)
    assert "已编译，目标：nvcc 的默认架构" in text and "1 个设备运行了内核" in text and "设备 0：NVIDIA A10G（8.6）运行了内核" in text, text
    set_language(ENGLISH)
    english = render_toolkit(report, width=100)
    assert "compiled for nvcc's default architecture" in english and "device 0: NVIDIA A10G (8.6) ran the kernel" in english


def test_an_install_method_not_known_in_chinese(machine):  # (no "unknown" in its tmp_path)
    machine.toolkit("12.1.1", on_path=True)
    env = dict(machine.full_env(), CUDAENV_ROOT=str(machine.root.path))
    for argv in (("list",), ("uninstall", "12")):
        english = machine.cli(*argv, env=env).out
        zh = machine.cli(*argv, env=dict(env, **ZH)).out
        assert "unknown" in english and "unknown" not in zh and "未知" in zh, (argv, zh)


def test_uninstall_check_says_what_is_left_in_chinese(machine):
    machine.toolkit("12.1.1", on_path=True)
    machine.root.link("usr/local/cuda", "/usr/local/cuda-12.1")
    env = dict(machine.full_env(), CUDAENV_ROOT=str(machine.root.path))
    english = machine.cli("uninstall", "12", "--check", env=env).out
    zh = machine.cli("uninstall", "12", "--check", env=dict(env, **ZH)).out
    assert "the folder is still there (" in english and "(points at it)" in english, english
    assert "文件夹仍然存在（" in zh and "（指向它）" in zh and "still there" not in zh, zh


def test_the_doctors_spinner_in_chinese_fits_its_width(chinese):
    import io

    from cudaenv.render.spinner import Spinner
    from cudaenv.render.width import width_of

    stream = io.StringIO()
    spinner = Spinner(stream, enabled=True, width=30)
    spinner.update(M("importing torch in %s", "/home/user/.venvs/torch/bin/python"))
    spinner._draw("|")
    line = stream.getvalue()[1:]
    assert line.startswith("| 正在 /home") and width_of(line) == 30, line
    set_language(ENGLISH)
    english = io.StringIO()
    spinner = Spinner(english, enabled=True, width=30)
    spinner.update(M("importing torch in %s", "/home/user/.venvs/torch/bin/python"))
    spinner._draw("|")
    assert english.getvalue() == "\r" + "| importing torch in /home/user/.venvs/torch/bin/python"[:30]  # as it always was


def test_a_chinese_aside_after_an_advice_command_stays_attached():
    from cudaenv.render.text import wrap_advice

    lines = wrap_advice("安装为这台机器挑选的 CUDA 版本：cudaenv torch recommend（或 cudaenv fix）", "    - ", "      ", 80)
    assert lines == ["    - 安装为这台机器挑选的 CUDA 版本：cudaenv torch recommend（或 cudaenv fix）"]  # not "torch    recommend"
    note = wrap_advice('echo "[$CUDA_VISIBLE_DEVICES]"    （括号里为空表示它隐藏了所有 GPU）', "    - ", "      ", 80)
    assert note == ['    - echo "[$CUDA_VISIBLE_DEVICES]"    （括号里为空表示它隐藏了所有 GPU）']  # a note set off keeps its gap
