"""`cudaenv doctor --against FILE` says why a file is not a stack file in the reader's language (issue 33): the stack
file reader's errors (cudaenv/stack/lock.py, service.py) and the small TOML reader's (tomlfile.py, Python 3.9/3.10)
are marked messages; tomllib's own message stays as Python wrote it, and the English is unchanged."""

import importlib.util
from pathlib import Path

import pytest

from cudaenv.core.i18n import tr
from cudaenv.stack import lock
from cudaenv.stack.lock import StackFileError, parse_stack
from cudaenv.stack.tomlfile import TomlError, parse_toml

_spec = importlib.util.spec_from_file_location("stack_helpers", str(Path(__file__).with_name("test_stack.py")))
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)  # test_stack's runner and machine, not its tests


# (file text, the English reason, its Chinese)
BAD = {"newer.toml": ("schema = 2\n", "schema 2: this cudaenv reads stack files of schema 1",
                      "schema 2：这个 cudaenv 读取的是 schema 1 的栈文件"),
       "nolock.toml": ("[tool.uv]\nx = 1\n", "no schema key: not a stack file written by `cudaenv lock`",
                       "没有 schema 键：不是 `cudaenv lock` 写出的栈文件"),
       "types.toml": ("schema = 1\n[require]\ntorch = 3\n", "require.torch is not a string", "require.torch 不是字符串"),
       "archs.toml": ("schema = 1\n[require]\ngpu_archs = 3\n", "require.gpu_archs is not an array of strings",
                      "require.gpu_archs 不是字符串数组"),
       "binary.toml": (b"schema = 1\n\xff\n", "not UTF-8 text: byte 11", "不是 UTF-8 文本：第 11 字节"),
       "huge.toml": ("#" * (70 * 1024), "larger than 64 KiB: not a stack file", "大于 64 KiB：不是栈文件")}


def _flat(text):
    return "".join(text.split())


def test_a_bad_stack_files_reason_in_chinese_and_english(machine, tmp_path):
    _helpers.a10g(machine)
    for name, (text, english, said) in BAD.items():
        path = tmp_path / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        r = _helpers.cudaenv(machine, "doctor", "--against", str(path))
        assert r.code == 2 and english in " ".join(r.err.split()), (name, r.err)
        machine.env["LANG"] = "zh_CN.UTF-8"
        try:
            zh = _helpers.cudaenv(machine, "doctor", "--against", str(path))
        finally:
            del machine.env["LANG"]
        assert zh.code == 2 and _flat(said) in _flat(zh.err) and english not in zh.err, (name, zh.err)
        assert str(path) in _flat(zh.err) and "`cudaenvlock`" in _flat(zh.err)  # the path and the command stay


def test_tomllibs_own_message_stays_as_python_wrote_it(chinese):
    with pytest.raises(StackFileError) as caught:
        parse_stack("schema = [1,\n")
    message = caught.value.args[0]
    assert str(message).startswith("not TOML: ") and tr(message).startswith("不是 TOML：")
    assert tr(message)[len("不是 TOML："):] == str(message)[len("not TOML: "):]  # tomllib's words, untranslated


def test_the_small_readers_errors_in_chinese(chinese, monkeypatch):
    cases = {"a = 1\na = 2\n": ("line 2: key a defined twice", "第 2 行：键 a 定义了两次"),
             "[t]\n[t]\n": ("line 2: table [t] defined twice", "第 2 行：表 [t] 定义了两次"),
             "a = \"x\n": ("line 1: a string that does not end", "第 1 行：字符串没有结束"),
             "a = [1, [2]]\n": ("line 1: nested arrays are not read here", "第 1 行：这里不读取嵌套数组"),
             "a = 1 2\n": ("line 1: text after the value", "第 1 行：值后面还有文字"),
             "a = 1.5\n": ("line 1: a value this reader does not read (strings, integers, booleans, arrays)",
                           "第 1 行：这个读取器不读取这种值（只读字符串、整数、布尔值、数组）")}
    for text, (english, said) in cases.items():
        with pytest.raises(TomlError) as caught:
            parse_toml(text)
        assert str(caught.value) == english and tr(caught.value.args[0]) == said
    monkeypatch.setattr(lock, "loads", parse_toml)  # Python 3.9 and 3.10, which have no tomllib
    with pytest.raises(StackFileError) as caught:
        parse_stack("a = 1\na = 2\n")
    assert str(caught.value) == "not TOML: line 2: key a defined twice"
    assert tr(caught.value.args[0]) == "不是 TOML：第 2 行：键 a 定义了两次"


def test_the_driver_floors_comment_in_chinese_json_english(machine, tmp_path):
    from cudaenv.stack.lock import stack_toml
    from cudaenv.stack.records import Stack

    _helpers.a10g(machine)
    path = tmp_path / "stack.toml"
    path.write_text(stack_toml(Stack(driver_min="580.65.06")))
    english = _helpers.cudaenv(machine, "doctor", "--against", str(path))
    assert english.code == 1 and "install NVIDIA driver 580.65.06 or newer (`cudaenv doctor` names the package" \
        in " ".join(english.out.split())
    machine.env["LANG"] = "zh_CN.UTF-8"
    try:
        zh = _helpers.cudaenv(machine, "doctor", "--against", str(path))
        data = _helpers.cudaenv(machine, "doctor", "--json", "--against", str(path)).json()
    finally:
        del machine.env["LANG"]
    assert zh.code == 1 and _flat("安装 NVIDIA 驱动 580.65.06 或更新的版本（`cudaenv doctor` 会给出这个系统要装的软件包）") \
        in _flat(zh.out), zh.out
    assert data["against"]["differences"][0]["commands"] == [
        "# install NVIDIA driver 580.65.06 or newer (`cudaenv doctor` names the package for this system)"]
