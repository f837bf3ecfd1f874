"""`checkpoint inspect`'s verdict reasons, weights_only reasons, security lines and problems in a Chinese run (issue
33): the capability makes them as marked messages (checkpoint/analyze.py, tables.py), the renderer says them in the
reader's language. The English text and the JSON (which stays English) keep the words they had.
"""

import json
import struct

import checkpoint_builders as cb

from cudaenv.render.width import width_of

ZH = {"LANG": "zh_CN.UTF-8"}
EN = {"LANG": "C"}


def _evil(tmp_path):
    cmd = b"touch pwned"
    pkl = b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(cmd)) + cmd + b"\x85R."
    path = tmp_path / "evil.pt"
    path.write_bytes(cb.torch_zip(None, prefix="evil", data_pkl=pkl))
    return str(path)


class _Said(str):
    """A wrapped output with every blank and line end taken out; ``in`` takes them out of the sentence looked for too
    (where a line breaks depends on the length of the temporary folder's path, and a break may fall at a blank)."""

    def __contains__(self, sentence):
        return str.__contains__(self, "".join(sentence.split()))


def _joined(text):
    return _Said("".join(text.split()))


def test_a_malicious_pickle_is_judged_in_chinese(tmp_path, cli):
    path = _evil(tmp_path)
    zh = cli("checkpoint", "inspect", path, env=ZH)
    en = cli("checkpoint", "inspect", path, env=EN)
    assert zh.code == en.code == 3  # unsafe
    said = _joined(zh.out)
    assert "evil/data.pkl：GLOBAL os.system 在 torch 的 weights_only 白名单之外：torch.load(weights_only=False) 会导入它，" \
           "还可能调用它；它能执行代码或访问系统" in said, zh.out
    assert "GLOBAL os.system：即使加入白名单，torch 也会拦截它的模块" in said, zh.out
    assert "os.system（1×）：用 weights_only=False 加载时能执行代码或访问系统" in said, zh.out
    assert "内容：os.system 对象" in said, zh.out
    assert "outside torch's weights_only allowlist" not in zh.out and "blocks its module" not in zh.out
    assert all(width_of(line) <= 80 for line in zh.out.splitlines() if path not in line)  # (a long path is not broken)
    english = " ".join(line.strip() for line in en.out.splitlines())
    assert "evil/data.pkl: GLOBAL os.system is outside torch's weights_only allowlist: torch.load(weights_only=False) " \
           "imports it, and may call it; it can run code or reach the system" in english, en.out
    assert "GLOBAL os.system: torch blocks its module even when allowlisted" in english, en.out
    assert "content: os.system object" in english


def test_the_json_reasons_stay_english_in_a_chinese_run(tmp_path, cli):
    path = _evil(tmp_path)
    zh = json.loads(cli("checkpoint", "inspect", "--json", path, env=ZH).out)
    en = json.loads(cli("checkpoint", "inspect", "--json", path, env=EN).out)
    assert zh == en
    assert en["verdict_reasons"] == [{"where": "evil/data.pkl", "why": (
        "GLOBAL os.system is outside torch's weights_only allowlist: torch.load(weights_only=False) imports it, and may "
        "call it; it can run code or reach the system")}]
    assert en["weights_only_reasons"] == ["GLOBAL os.system: torch blocks its module even when allowlisted"]
    assert en["security"] == ["os.system (1×): can run code or reach the system when loaded with weights_only=False"]


def test_opcodes_structure_and_kinds_in_chinese(tmp_path, cli):
    path = tmp_path / "p4.pt"
    path.write_bytes(cb.torch_zip(cb.cnn(), protocol=4))
    said = _joined(cli("checkpoint", "inspect", str(path), env=ZH).out)
    assert "weights_only 不支持的操作码：FRAME (149)" in said and "（torch：'Unsupported operand 149'）" in said, said
    assert "键：conv1.weight：张量 float32 [8, 3, 3, 3]" in said, said
    english = cli("checkpoint", "inspect", str(path), env=EN).out
    assert "key: conv1.weight: tensor float32 [8, 3, 3, 3]" in english
    assert "opcodes weights_only does not support: FRAME (149)" in english


def _unsafe_folder(tmp_path):
    """A .bin folder of two shards, the second with a GLOBAL os.system call among its tensors."""
    folder = tmp_path / "bin"
    folder.mkdir()
    items = list(cb.cnn().items())
    evil = cb.state_dict(items[3:] + [("x", cb.Reduce(cb.glob("os", "system"), ("touch pwned",)))])
    (folder / "pytorch_model-00001-of-00002.bin").write_bytes(cb.torch_zip(cb.state_dict(items[:3]), prefix="a"))
    (folder / "pytorch_model-00002-of-00002.bin").write_bytes(cb.torch_zip(evil, prefix="b"))
    return folder


def test_a_folder_names_the_file_and_says_its_reason_in_chinese(tmp_path, cli):
    folder = _unsafe_folder(tmp_path)
    zh = cli("checkpoint", "inspect", str(folder), env=ZH)
    assert zh.code == 3
    said = _joined(zh.out)
    assert "pytorch_model-00002-of-00002.bin：b/data.pkl：GLOBAL os.system 在 torch 的 weights_only 白名单之外" in said, zh.out
    english = " ".join(line.strip() for line in cli("checkpoint", "inspect", str(folder), env=EN).out.splitlines())
    assert "pytorch_model-00002-of-00002.bin: b/data.pkl: GLOBAL os.system is outside torch's weights_only allowlist" \
           in english, english


def _render_zh(report):
    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language
    from cudaenv.render.checkpoint import render_inspect

    english = render_inspect(report, 200)
    set_language(CHINESE)
    try:
        return render_inspect(report, 200), english
    finally:
        set_language(ENGLISH)


def test_the_readers_problems_and_notes_in_chinese(tmp_path, cli):
    """What the zip reader, the legacy reader and the walk say (reading.py, container.py, analyze.py's legacy layout,
    careful.py): marked where they are found, said in Chinese, the same English as before."""
    from cudaenv.checkpoint.analyze import inspect_file

    front = tmp_path / "pre.pt"
    front.write_bytes(b"#!junk header\n" * 7 + cb.torch_zip(cb.cnn()))
    zh = _joined(cli("checkpoint", "inspect", str(front), env=ZH).out)
    assert "问题：zip 归档之前有 98 字节：只有文件以 zip 开头（PK\\x03\\x04）时 torch.load" in zh, zh
    english = " ".join(cli("checkpoint", "inspect", str(front), env=EN).out.split())
    assert "problem: 98 bytes before the zip archive: torch.load reads a file as a zip only when it starts with one" \
           in english, english

    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(cb.legacy_file(cb.cnn())[:-10])
    said, english = _render_zh(inspect_file(str(legacy)))
    assert "the legacy data section ends at byte" in english and "past the end of the file" in english, english
    assert "旧式数据段结束于第 " in said and "超出了文件末尾" in said, said

    cut = tmp_path / "cut.pkl"
    cut.write_bytes(b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01")  # a dict whose pickle ends mid-way
    said, english = _render_zh(inspect_file(str(cut)))
    assert "the pickle is cut short at byte" in english or "without STOP" in english, english
    assert "pickle 在第 " in said and ("字节处被截断" in said or "没有 STOP" in said), said
    assert "普通 pickle，不是 torch.save 保存的文件" in said and "a plain pickle, not a torch.save file" in english


def test_a_folder_problem_and_the_visible_gpus_in_chinese(tmp_path, cli):
    folder = tmp_path / "bin"
    folder.mkdir()
    items = list(cb.cnn().items())
    (folder / "pytorch_model-00001-of-00002.bin").write_bytes(cb.torch_zip(cb.state_dict(items[:3]), prefix="a"))
    (folder / "pytorch_model-00002-of-00002.bin").write_bytes(cb.torch_zip(cb.state_dict(items[3:]), prefix="b"))
    zh = _joined(cli("checkpoint", "inspect", str(folder), env=ZH).out)
    assert "备注：没有索引文件：文件夹里每个 .bin 文件都当作一个分片" in zh, zh
    assert "结论 安全" in zh and "verdict safe" not in zh, zh
    english = " ".join(cli("checkpoint", "inspect", str(folder), env=EN).out.split())
    assert "note: no index file: every .bin file in the folder is taken as a shard" in english, english
    assert "verdict safe" in english
    one = _joined(cli("checkpoint", "inspect", str(folder / "pytorch_model-00001-of-00002.bin"), env=ZH).out)
    assert "可见 0 块 GPU（找不到 nvidia-smi）" in one, one


def test_fix_of_an_unsafe_folder_says_why_in_chinese(tmp_path, cli):
    """checkpoint fix FOLDER without --trust names the first reasons (consolidate.py), each said in the reader's
    language and escaped as it is said; the English is the one it had."""
    folder = _unsafe_folder(tmp_path)
    zh = cli("checkpoint", "fix", str(folder), "-o", str(tmp_path / "one.pt"), env=ZH)
    en = cli("checkpoint", "fix", str(folder), "-o", str(tmp_path / "one.pt"), env=EN)
    assert zh.code == en.code == 2 and not (tmp_path / "one.pt").exists() and not (tmp_path / "pwned").exists()
    said = _joined(zh.err)
    assert "pytorch_model-00002-of-00002.bin：b/data.pkl：GLOBAL os.system 在 torch 的" in said, zh.err
    assert "is outside torch's weights_only allowlist" not in zh.err
    english = " ".join(en.err.split())
    assert "is not safe to load (pytorch_model-00002-of-00002.bin: b/data.pkl: GLOBAL os.system is outside torch's " \
           "weights_only allowlist" in english, english
