"""`checkpoint fix`'s "did not check out" errors and the written file's differences from its source in a Chinese run
(issue 33): the reasons are marked messages joined, cut and escaped as they are said (cudaenv.core.i18n.listing), so
a cut or an escape no longer turns them back into English. The English text keeps the words and the cut it had.
"""

import struct

import checkpoint_builders as cb

from cudaenv.checkpoint import fix as F
from cudaenv.checkpoint import flat
from cudaenv.core.i18n import M, tr
from cudaenv.core.text import printable

ZH = {"LANG": "zh_CN.UTF-8"}
EN = {"LANG": "C"}


def _flat(text):
    return "".join(text.split())


def test_compares_problems_are_marked_and_said_in_chinese(chinese):
    problems = flat.compare({"a": (2,), "b": (3,), "c": (1,)}, {"a": (2, 1), "b": (3,), "d": (1,)})
    assert problems == ["1 keys of the source are not in it: c", "1 keys in it are not in the source: d",
                        "1 tensors changed shape: a [2] -> [2, 1]"]  # the English as it was
    assert [tr(p) for p in problems] == ["源文件中有 1 个键不在其中：c", "其中有 1 个键不在源文件中：d",
                                         "1 个张量的形状变了：a [2] -> [2, 1]"]


def test_a_listing_is_joined_cut_and_escaped_after_it_is_said(chinese):
    from cudaenv.core.i18n import listing

    reasons = [M("%d tensors changed shape: %s", 2, "w\x1b[31m"), M("the file is empty")]
    english = listing(M("; "), reasons, F.cut_then_escaped(30))
    assert english == printable("2 tensors changed shape: w\x1b[31m; the file is empty"[:30])  # cut, then escaped
    assert tr(english) == printable("2 个张量的形状变了：w\x1b[31m；文件是空的"[:30])  # every piece said, then cut
    assert "\x1b" not in tr(english)
    escaped_first = listing(M("; "), reasons, lambda text: printable(text)[:12])
    assert escaped_first == printable("2 tensors changed shape: w\x1b[31m")[:12] and tr(escaped_first) == \
        printable("2 个张量的形状变了：w\x1b[31m")[:12]
    assert not listing(M("; "), [], printable) and tr(listing(M("; "), [], printable)) == ""
    # a listing inside a message, and a listing edited as a whole (convert_file's reasons, escaped where they are said)
    outer = M("the written file does not hold what the source holds (%s); nothing was written", english)
    assert tr(outer).startswith("写出的文件与源文件内容不一致（2 个张量的形状变了")


def test_a_written_file_with_other_keys_is_refused_in_chinese(tmp_path, cli, monkeypatch):
    src = tmp_path / "model.pt"
    src.write_bytes(cb.torch_zip(cb.cnn(prefix="module.")))

    def child(host, python, timeout, path, spec):  # writes the keys unstripped: the check must catch it
        with open(spec["output"], "wb") as fh:
            fh.write(cb.safetensors_file({k: ("F32", (1,), 4) for k in ("module.conv1.weight", "module.conv1.bias")}))
        return []

    monkeypatch.setattr(F, "_run_child", child)
    out = tmp_path / "model.safetensors"
    zh = cli("checkpoint", "fix", str(src), "-o", str(out), "--strip-prefix", "module.", env=ZH)
    en = cli("checkpoint", "fix", str(src), "-o", str(out), "--strip-prefix", "module.", env=EN)
    assert zh.code == en.code == 1 and not out.exists()
    assert _flat("写出的文件与源文件内容不一致（源文件中有 6 个键不在其中：conv1.weight, conv1.bias, bn1.weight, bn1.bias, "
                 "fc.weight；其中有 2 个键不在源文件中：module.conv1.weight, module.conv1.bias）；未写入任何内容") \
        in _flat(zh.err), zh.err
    assert "keys of the source" not in zh.err
    assert "the written file does not hold what the source holds (6 keys of the source are not in it: conv1.weight, " \
           "conv1.bias, bn1.weight, bn1.bias, fc.weight; 2 keys in it are not in the source: module.conv1.weight, " \
           "module.conv1.bias); nothing was written" in " ".join(en.err.split())


def _evil(tmp_path):
    cmd = b"touch pwned"
    pkl = b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(cmd)) + cmd + b"\x85R."
    path = tmp_path / "evil.pt"
    path.write_bytes(cb.torch_zip(None, prefix="evil", data_pkl=pkl))
    return path


def test_a_rewrite_that_did_not_check_out_says_its_reasons_in_chinese(tmp_path, cli, monkeypatch):
    from cudaenv.checkpoint.analyze import inspect_file

    evil = inspect_file(str(_evil(tmp_path)), None, with_tensors=False)  # what the written file is judged to be
    monkeypatch.setattr(F, "_inspect_written", lambda tmp, visible: evil)
    src = tmp_path / "a.pt"
    src.write_bytes(cb.torch_zip(cb.cnn("cuda:2")))
    zh = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "out.pt"), "--map-location", "cpu", env=ZH)
    en = cli("checkpoint", "fix", str(src), "-o", str(tmp_path / "out.pt"), "--map-location", "cpu", env=EN)
    assert zh.code == en.code == 1 and not (tmp_path / "out.pt").exists()
    said = zh.err.split("错误：", 1)[1]
    assert said.startswith("改写后的文件未通过检查（结论 unsafe：GLOBAL os.system 在 torch"), zh.err  # (no blank after
    # the Chinese words of the file's name)
    assert _flat("的 weights_only 白名单之外：torch.load(weights_only=False) 会导入它，还可能调用它；它能执行代码或访问系统；"
                 "GLOBAL os.system：即使加入白名单，torch 也会拦截它的模块）；未写入任何内容") in _flat(said), zh.err
    assert "weights_only allowlist" not in zh.err and "weights_only allowlist" in " ".join(en.err.split())
    assert "did not check out (verdict unsafe: " in " ".join(en.err.split())


def test_a_zip_without_data_pkl_is_noted_in_chinese(tmp_path, cli):
    import zipfile

    path = tmp_path / "plain.zip"
    with zipfile.ZipFile(str(path), "w") as zf:
        zf.writestr("x/readme.txt", "hi")
    zh = cli("checkpoint", "inspect", str(path), env=ZH)
    en = cli("checkpoint", "inspect", str(path), env=EN)
    assert "备注：没有 x/data.pkl 的 zip 归档：不是 torch 的 checkpoint" in zh.out, zh.out
    assert "a zip without x/data.pkl: not a torch checkpoint" in en.out and "a zip without" not in zh.out


def test_an_index_that_is_not_json_is_a_problem_said_in_chinese(tmp_path, chinese):
    from cudaenv.checkpoint.folder import inspect_folder

    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "model-00001-of-00001.safetensors").write_bytes(cb.safetensors_file({"w": ("F32", (4,), 16)}))
    (folder / "model.safetensors.index.json").write_text("{not json")
    problems = [p for p in inspect_folder(str(folder)).inconsistencies if p.startswith("model.safetensors.index.json")]
    assert [str(p).split(": the index is not JSON: ")[0] for p in problems] == ["model.safetensors.index.json"]
    assert tr(problems[0]).startswith("model.safetensors.index.json：索引不是 JSON：")
