"""Every command family in Simplified Chinese (issue 33): `--help` and argparse's own words, list, use, link, install,
uninstall, check-installer, verify, diff, lock, fleet (text and HTML) and the user errors, at COLUMNS=80 and 60 by
display width (a Chinese character takes two columns). The exit codes are the English ones; the commands, flags, paths
and ids the reader pastes stay as they are; JSON stays English.
"""

import importlib
import importlib.util
import json
import re
from pathlib import Path

import pytest

from cudaenv.render.width import has_wide, width_of

_spec = importlib.util.spec_from_file_location("columns_matrix", str(Path(__file__).with_name("test_columns.py")))
columns_matrix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(columns_matrix)  # the 80-column matrix's commands and machine, not its tests

ZH = {"LANG": "zh_CN.UTF-8"}

# The families whose words this issue translates: each must print Chinese (the first word of the argv names it).
FAMILIES = {"list", "use", "link", "install", "uninstall", "check-installer", "verify", "diff", "lock", "fleet", "nosuchcommand"}


def _run(machine, argv, extra_env=None):
    env = machine.full_env()
    env["CUDAENV_ROOT"] = str(machine.root.path)
    env.update(extra_env or {})
    extra = ["--python", machine.python] if argv[0] in ("doctor", "fix", "lock", "verify") or argv[:2] == ("torch", "recommend") else []
    return machine.cli(*(list(argv) + extra), env=env)


@pytest.mark.parametrize("columns", [80, 60])
def test_every_command_family_in_chinese_fits_the_terminal(machine, tmp_path, columns):
    columns_matrix._machine(machine, "a10g")
    machine.env["COLUMNS"] = str(columns)
    too_long, english_only, codes = {}, [], []
    for argv in columns_matrix._commands(tmp_path):
        english = _run(machine, argv)
        zh = _run(machine, argv, ZH)
        if zh.code != english.code:
            codes.append((" ".join(argv), english.code, zh.code))
        same = set((english.out + english.err).splitlines())  # a line as English lays it out is English's rule
        streams = (("err", zh.err),) if argv[0] in ("link", "use") else (("out", zh.out), ("err", zh.err))
        for stream, text in streams:
            long = [line for line in text.splitlines()
                    if width_of(line) > columns and line not in same and not columns_matrix._one_word(line)]
            if long:
                too_long[" ".join(argv) + " (%s)" % stream] = long[:3]
        if argv[0] in FAMILIES and not has_wide(zh.out + zh.err):
            english_only.append(" ".join(argv))
    assert codes == []
    assert not too_long, json.dumps(too_long, indent=1, ensure_ascii=False)
    assert english_only == []


def _help(cli, monkeypatch, capsys, columns, argv, env):
    """`cudaenv ARGV --help` (argparse writes it to sys.stdout and exits 0) at COLUMNS=``columns``."""
    monkeypatch.setenv("COLUMNS", str(columns))  # argparse's own width (shutil reads os.environ)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        cli(*(list(argv) + ["--help"]), env=dict(env, COLUMNS=str(columns)))
    assert stop.value.code == 0
    return capsys.readouterr().out


HELPS = [(), ("doctor",), ("list",), ("use",), ("link",), ("init",), ("torch",), ("torch", "recommend"), ("torch", "guard"),
         ("torch", "mirror-check"), ("torch", "refresh"), ("fix",), ("verify",), ("explain",), ("install",), ("uninstall",),
         ("check-installer",), ("checkpoint",), ("checkpoint", "inspect"), ("checkpoint", "fix"), ("fleet",),
         ("fleet", "summarize"), ("lock",), ("diff",)]


def _declared_helps(argv):
    """The English helps of the options and positionals ``argv``'s --help shows (cudaenv.commands' declarations)."""
    from cudaenv.commands import COMMANDS

    if not argv:
        return [help_text for _, help_text in COMMANDS.values()]
    module = importlib.import_module(COMMANDS[argv[0]][0])
    if len(argv) > 1:
        if hasattr(module, "ACTIONS"):
            action = next(a for a in module.ACTIONS if a.name == argv[1])
            options, positional = action.options, action.positional
        else:
            options = getattr(module, argv[1].upper() + "_OPTIONS")
            positional = None
    else:
        options, positional = getattr(module, "OPTIONS", ()), getattr(module, "POSITIONAL", None)
    positionals = positional if isinstance(positional, tuple) else (positional,) if positional is not None else ()
    return [o.help for o in tuple(options) + positionals if o.help and not getattr(o, "hidden", False)]


@pytest.mark.parametrize("columns", [80, 60])
def test_help_in_chinese_for_every_command(cli, monkeypatch, capsys, columns):
    env = {"PATH": "/nonexistent", "HOME": "/nonexistent"}
    too_long, untranslated = {}, {}
    for argv in HELPS:
        english = _help(cli, monkeypatch, capsys, columns, argv, env)
        zh = _help(cli, monkeypatch, capsys, columns, argv, dict(env, **ZH))
        assert english.startswith("usage: cudaenv") and "show this help message and exit" in english, argv
        assert zh.startswith("用法：cudaenv") and "显示此帮助信息并退出" in zh and "usage:" not in zh, argv
        assert ("选项：" in zh) and ("options:" not in zh), argv  # argparse's section titles (a full-width colon)
        same = {line.strip() for line in english.splitlines()}  # a usage line English cannot break either (its indent
        long = [line for line in zh.splitlines()  # follows the prefix: "用法：" is three characters, six columns)
                if width_of(line) > columns and line.strip() not in same and not columns_matrix._one_word(line)]
        if long:
            too_long[" ".join(argv) or "cudaenv"] = long[:3]
        flat = " ".join(zh.split())
        left = [h for h in _declared_helps(argv) if " ".join(h.split())[:40] in flat]
        if left:
            untranslated[" ".join(argv) or "cudaenv"] = left
        # the flags and metavars are the reader's to type: every one of English's is in the Chinese help
        flags = set(re.findall(r"(?<![\w-])--[a-z][\w-]*", english))
        assert {f for f in flags if f not in zh} == set(), argv
    assert not too_long, json.dumps(too_long, indent=1, ensure_ascii=False)
    assert not untranslated, json.dumps(untranslated, indent=1, ensure_ascii=False)


def test_usage_errors_in_chinese_and_english(cli):
    env = {"PATH": "/nonexistent", "HOME": "/nonexistent"}
    english = cli("doctor", "--format", "xx", env=env)
    zh = cli("doctor", "--format", "xx", env=dict(env, **ZH))
    assert english.code == zh.code == 2
    assert english.err.startswith("cudaenv: error: argument --format: invalid choice: 'xx'")
    assert zh.err.startswith("cudaenv: 错误：参数 --format：无效的选择：'xx'") and "参见 `cudaenv doctor --help`" in zh.err
    zh = cli("list", "--bogus", "--lang", "zh-CN", env=env)  # the fast path's command handed to argparse, --lang after it
    assert zh.code == 2 and "无法识别的参数：--bogus" in zh.err
    zh = cli("torch", "recommend", "--variant", env=dict(env, CUDAENV_LANG="zh-CN"))
    assert zh.code == 2 and "参数 --variant：需要一个值" in zh.err
    # a user error raised by a command: its message and hint, the paths and flags as given
    zh = cli("doctor", "--root", "/nonexistent/image", env=dict(env, **ZH))
    assert zh.code == 2 and zh.err == "cudaenv: 错误：--root /nonexistent/image 不是目录\n提示：请给出镜像或 chroot 挂载所在的文件夹\n"


def test_use_in_chinese_keeps_its_english_path_bare(tmp_path, machine):
    """`use`'s messages in Chinese when the locale asks; in English its path chooses no language (nothing imported)."""
    columns_matrix._machine(machine, "a10g")
    zh = _run(machine, ("use", "9.9", "--shell", "bash"), ZH)
    english = _run(machine, ("use", "9.9", "--shell", "bash"))
    assert zh.code == english.code == 1 and zh.out == english.out == ""
    assert zh.err.startswith("cudaenv: 错误：没有已安装的 CUDA 工具包匹配 9.9\n已安装的 CUDA 工具包：\n")
    assert english.err.startswith("cudaenv: error: no installed CUDA toolkit matches 9.9\ninstalled CUDA toolkits:\n")
    ok_zh = _run(machine, ("use", "12.1", "--shell", "bash"), ZH)
    ok = _run(machine, ("use", "12.1", "--shell", "bash"))
    assert ok.code == ok_zh.code == 0 and ok.out == ok_zh.out  # the shell code is the same
    assert ok.err.startswith("CUDA 12.1") and " at " in ok.err and ok_zh.err.startswith("CUDA 12.1") and "（" in ok_zh.err
    bad = _run(machine, ("use", "12.1", "--shell", "bash"), dict(ZH, CUDAENV_LANG="klingon"))
    assert bad.code == 0 and bad.err == ok.err  # the shell hook's use never fails on a language setting


def test_the_english_use_path_chooses_no_language(monkeypatch):
    from cudaenv import cli as cli_module

    assert not cli_module._may_not_be_english({"LANG": "en_US.UTF-8", "LC_ALL": "C"})
    assert not cli_module._may_not_be_english({"CUDAENV_LANG": "en"})
    assert not cli_module._may_not_be_english({"CUDAENV_LANG": "klingon"})
    assert cli_module._may_not_be_english({"LANG": "zh_CN.UTF-8"})
    assert cli_module._may_not_be_english({"LANG": "C", "CUDAENV_LANG": "zh-CN"})


def test_fleet_html_follows_the_locale_and_json_does_not(machine, tmp_path):
    from fleet_builders import planted

    fleet = planted(tmp_path / "fleet", 6)
    zh = _run(machine, ("fleet", "summarize", "--format", "html", str(fleet)), ZH)
    english = _run(machine, ("fleet", "summarize", "--format", "html", str(fleet)))
    assert zh.code == english.code
    assert '<html lang="zh-CN">' in zh.out and "<h1>cudaenv 集群汇总</h1>" in zh.out
    assert '<html lang="en">' in english.out and "<h1>cudaenv fleet summary</h1>" in english.out
    assert 'id="nodes-read"' in zh.out and 'id="filter"' in zh.out  # the page's ids (and its script) are the same
    as_json = [_run(machine, ("fleet", "summarize", "--json", str(fleet)), env).out for env in (ZH, None)]
    assert as_json[0] == as_json[1] and not has_wide(as_json[0])



def test_use_confirmation_in_english_is_the_capabilitys_own_message():
    """`use` prints EnvChange.message on its English path (no renderer loaded) and render.switch's words otherwise: in
    English the two are the same text, for a switch, an --off that removes and an --off with nothing to undo."""
    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language
    from cudaenv.model.snapshot import Toolkit
    from cudaenv.render.switch import use_message
    from cudaenv.toolkit.switch import plan_off, plan_switch

    tk = Toolkit("12.4.131", "/sw/cuda-12.4", "CUDAENV_TOOLKITS", lib_dir="/sw/cuda-12.4/lib64")
    env = {"PATH": "/sw/cuda-12.4/bin:/usr/bin", "LD_LIBRARY_PATH": "/sw/cuda-12.4/lib64"}
    changes = [plan_switch(tk, [tk], {"PATH": "/usr/bin"}), plan_off([tk], env), plan_off([tk], {"PATH": "/usr/bin"})]
    assert [bool(c.changes) for c in changes] == [True, True, False] and all(c.message for c in changes)
    assert [use_message(c) for c in changes] == [c.message for c in changes]
    set_language(CHINESE)
    try:
        said = [use_message(c) for c in changes]
    finally:
        set_language(ENGLISH)
    assert said == ["CUDA 12.4.131（/sw/cuda-12.4）", "已从当前 shell 中移除 CUDA 工具包的条目", "当前 shell 中没有 CUDA 工具包的条目；无需撤销"]
