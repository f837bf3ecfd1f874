"""What `checkpoint fix` through torch (``cudaenv/_child/checkpoint_fix.py`` in the user's Python) says it changed, in
the reader's language (issue 33). The child cannot import cudaenv: it prints its English and, beside it, which template
it said with which values (its ``say``); cudaenv.checkpoint.fix.child_changes makes each a marked message that prints the
same English and translates. No torch here: the child's own ``say`` makes the lines, the rest of the child is not run.
"""

import ast
import json

import pytest

from cudaenv._child import source
from cudaenv.checkpoint.fix import CHILD_CHANGES, child_changes
from cudaenv.core.i18n import tr


def _child():
    """The child's module namespace (it imports json and sys at the top; torch only inside main)."""
    namespace = {"__name__": "cudaenv_child_checkpoint_fix"}
    exec(compile(source("checkpoint_fix.py"), "checkpoint_fix.py", "exec"), namespace)
    return namespace


def _line(changes):
    """What the child prints for ``changes`` (its main's success line), read back as _run_child reads it."""
    printed = json.dumps({"ok": True, "changes": [c[0] for c in changes], "said": [c[1:] for c in changes]})
    return json.loads(printed)


def test_every_template_the_child_says_is_one_cudaenv_translates():
    tree = ast.parse(source("checkpoint_fix.py"))
    said = {call.args[1].value for call in ast.walk(tree) if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "say" and len(call.args) > 1 and isinstance(call.args[1], ast.Constant)}
    assert len(said) == 15 and said == set(CHILD_CHANGES)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "append" and isinstance(n.func.value, ast.Name) and n.func.value.id == "changes"]
    assert len(calls) == 1  # say's own: every change goes through it


def test_the_childs_changes_print_their_english_and_translate(chinese):
    say = _child()["say"]
    changes = []
    say(changes, "storages mapped to %s", "cpu")
    say(changes, "merged %d .bin shards (%d keys) with torch.load(weights_only=%s)", 3, 120, True)
    say(changes, "stripped %s from %d keys", ["_orig_mod.", "module."], 120)
    say(changes, "kept only the entry %r", "model")
    say(changes, "read %d safetensors file%s (%d tensors) with safetensors.safe_open", 1, "", 4)
    say(changes, "consolidated with the folder's own zero_to_fp32.py (get_fp32_state_dict_from_zero_checkpoint)")
    got = child_changes(_line(changes))
    assert got == ["storages mapped to cpu", "merged 3 .bin shards (120 keys) with torch.load(weights_only=True)",
                   "stripped _orig_mod. then module. from 120 keys", "kept only the entry 'model'",
                   "read 1 safetensors file (4 tensors) with safetensors.safe_open",
                   "consolidated with the folder's own zero_to_fp32.py (get_fp32_state_dict_from_zero_checkpoint)"]
    assert [tr(c) for c in got] == [
        "存储已映射到 cpu", "合并了 3 个 .bin 分片（120 个键），用的是 torch.load(weights_only=True)",
        "去掉了 _orig_mod.、module. 前缀（120 个键）", "只保留了条目 'model'",
        "读取了 1 个 safetensors 文件（4 个张量），用的是 safetensors.safe_open",
        "用文件夹自带的 zero_to_fp32.py 合并（get_fp32_state_dict_from_zero_checkpoint）"]


def test_what_cudaenv_cannot_say_again_stays_the_childs_english(chinese):
    english = ["storages mapped to cpu", "a sentence of a newer child", "added m. to 3 keys"]
    for said in ([["storages mapped to %s", ["cuda:0"]], ["nope %s", ["x"]], ["added %s to %d keys", ["m."]]],  # values differ
                 [["storages mapped to %s"]], None, "not a list", [[["a list"], []]] * 3):
        got = child_changes({"ok": True, "changes": english, "said": said})
        assert got == english and [tr(c) for c in got] == english
    assert child_changes({"ok": True, "changes": english}) == english  # an older child, without "said"


@pytest.mark.torch
def test_the_real_child_through_torch_says_its_changes_in_chinese(tmp_path, cli):
    """`checkpoint fix --to safetensors` run by the real child in this interpreter (torch and safetensors; `nox -s
    torch`): the English it prints is what it printed before, and a Chinese run says the same changes in Chinese."""
    import sys

    from builders import TOOLS

    torch = pytest.importorskip("torch")
    pytest.importorskip("safetensors.torch")
    emb = torch.randn(10, 4)
    src = tmp_path / "model.pt"
    torch.save({"model": {"module.emb.weight": emb, "module.head.weight": emb, "module.half": emb[:5]}, "epoch": 3}, src)
    argv = ["checkpoint", "fix", str(src), "--to", "safetensors", "--extract", "model", "--strip-prefix", "module.",
            "--python", sys.executable]
    en = cli(*(argv + ["-o", str(tmp_path / "en.safetensors")]), env={"PATH": TOOLS, "COLUMNS": "80"})
    zh = cli(*(argv + ["-o", str(tmp_path / "zh.safetensors")]), env={"PATH": TOOLS, "COLUMNS": "80", "LANG": "zh_CN.UTF-8"})
    assert en.code == zh.code == 0, (en.err, zh.err)
    english, chinese = " ".join(en.out.split()), "".join(zh.out.split())
    for said in ("kept only the entry 'model'", "stripped module. from 3 keys", "written as safetensors (2 tensors)",
                 "1 tied tensors written once, their other names in the metadata (cudaenv.aliases): head.weight = emb.weight",
                 "1 views of shared memory copied (safetensors stores no sharing): half"):
        assert said in english
    for said in ("只保留了条目'model'", "去掉了module.前缀（3个键）", "已写成safetensors（2个张量）",
                 "1个绑定的张量只写入一次，它们的其他名字记在元数据（cudaenv.aliases）中：head.weight=emb.weight",
                 "复制了1个共享内存的视图（safetensors不保存共享关系）：half"):
        assert said in chinese
