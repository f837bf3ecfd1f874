"""verify's child details in the reader's language (issue 33): the children (``cudaenv/_child/verify_device.py``,
``verify_dist.py``) cannot import cudaenv, so each sentence they word themselves (a check's detail, the watchdog's and
torchrun's stop messages) is printed as its English with the template and values beside it (``said``, the children's
shared helper in ``cudaenv/_child/say.py``, one home with checkpoint fix's child). cudaenv says a template it knows in
the reader's language and keeps the English of any other (an older child: every recorded output here). No torch: the
children's own ``said``/``said_fields``/``emit`` make the lines; the rest of the children is not run.
"""

import ast
import importlib.util
import json
from pathlib import Path

import pytest

from builders import TOOLS, recorded
from cudaenv._child import SHARED, source
from cudaenv.core.i18n import ENGLISH, set_language, tr
from cudaenv.render.verify import render_distributed
from cudaenv.render.width import width_of
from cudaenv.verify import device_result, distributed_result, parse_device_output, parse_rank_events
from cudaenv.verify.child import CHILD_SAYS

_spec = importlib.util.spec_from_file_location("verify_helpers", str(Path(__file__).with_name("test_verify.py")))
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)  # test_verify's fake interpreter and runners, not its tests
fake_python, ok_result, vcli = _helpers.fake_python, _helpers.ok_result, _helpers.vcli

ZH = {"LANG": "zh_CN.UTF-8"}


def _child(name):
    """The namespace of a child script as cudaenv hands it out (its shared helpers first); main is not run."""
    namespace = {"__name__": "cudaenv_child_" + name[:-3]}
    exec(compile(source(name), name, "exec"), namespace)
    return namespace


def _templates(tree):
    """The literal templates of every said(...) call (both branches of ``said("a" if x else "b", ...)``)."""
    found = set()
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "said" and call.args:
            first = call.args[0]
            for node in (first.body, first.orelse) if isinstance(first, ast.IfExp) else (first,):
                assert isinstance(node, ast.Constant), ast.dump(node)
                found.add(node.value)
    return found


def test_every_template_the_verify_children_say_is_one_cudaenv_translates():
    said = _templates(ast.parse(source("verify_device.py"))) | _templates(ast.parse(source("verify_dist.py")))
    assert len(said) == 19 and said == set(CHILD_SAYS)


def test_one_home_for_said_shared_by_both_kinds_of_child():
    assert SHARED["verify_device.py"] == SHARED["verify_dist.py"] == SHARED["checkpoint_fix.py"] == ("say.py",)
    for name in ("verify_device.py", "verify_dist.py", "checkpoint_fix.py"):
        text = source(name)
        assert text.startswith(source("say.py")) and text.count("def said(") == 1


def _device_lines(cases):
    """verify_device.py's check lines for ``cases`` [(name, ok, template, values)], made by the child's own Runner.check
    (a CPU device: nothing to synchronize) and read back as the parent reads them."""
    import contextlib
    import io

    ns = _child("verify_device.py")

    class Device:
        type = "cpu"

    runner = ns["Runner"](None, Device(), 8)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for name, ok, template, values in cases:
            try:
                runner.check(name, lambda: (ok, ns["said"](template, *values)))
            except ns["_Stop"]:
                break
        ns["emit"]("done", ok=runner.ok)
    return out.getvalue()


# The H100 run of tests/recorded/verify-h100-ok.txt as the child says it now: each check's template and values
# (checked below to make exactly the recorded English).
H100 = {"allocate": ("%d x %d fp32 host->device", (256, 256)), "elementwise": ("max abs difference %.1e", (0.0,)),
        "matmul-fp32": ("relative error %.2e (limit %.0e)", (3.02e-07, 1e-4)),
        "matmul-fp16": ("relative error %.2e (limit %.0e)", (4.87e-04, 1e-2)),
        "matmul-bf16": ("relative error %.2e (limit %.0e)", (3.88e-03, 5e-2)),
        "copy-to-host": ("%d bytes device->host", (262144,)),
        "memory": ("%d MiB free of %d MiB", (80641, 81559)), "benchmark": ("timed matmul n=%d, %d MiB copy", (2048, 64))}


def _h100_said():
    """tests/recorded/verify-h100-ok.txt with each check's ``said`` beside its detail, as the child prints it now."""
    said = _child("verify_device.py")["said"]
    lines = []
    for line in recorded("verify-h100-ok.txt").splitlines():
        event = json.loads(line[len("CUDAENV_VERIFY "):]) if line.startswith("CUDAENV_VERIFY ") else None
        if event is not None and event.get("event") == "check" and event["name"] in H100:
            template, values = H100[event["name"]]
            english, *pair = said(template, *values)
            assert english == event["detail"]  # the same English as the recorded run
            event["said"] = pair
            line = "CUDAENV_VERIFY " + json.dumps(event)
        lines.append(line)
    return "\n".join(lines) + "\n"


def test_the_device_childs_details_keep_their_english_and_translate(chinese):
    text = _device_lines([("elementwise", True, "max abs difference %.1e", (3.5e-07,)),
                          ("matmul-fp16", False, "relative error %.2e (limit %.0e)", (0.25, 1e-2)),
                          ("memory", True, "%d MiB free of %d MiB", (80641, 81559))])
    events = [e for e in (json.loads(line.split(" ", 1)[1]) for line in text.splitlines()) if e["event"] == "check"]
    assert [e["said"][0] for e in events] == ["max abs difference %.1e", "relative error %.2e (limit %.0e)",
                                              "%d MiB free of %d MiB"]
    report = parse_device_output(text)
    details = [c.detail for c in report.checks]
    assert details == ["max abs difference 3.5e-07", "relative error 2.50e-01 (limit 1e-02)", "80641 MiB free of 81559 MiB"]
    assert [tr(d) for d in details] == ["最大绝对误差 3.5e-07", "相对误差 2.50e-01（上限 1e-02）", "80641 MiB 空闲，共 81559 MiB"]
    result = device_result(0, report, ok_result(code=1))
    assert result.error.message == "matmul-fp16 gave a wrong result: relative error 2.50e-01 (limit 1e-02)"
    assert tr(result.error.message) == "matmul-fp16 的结果不正确：相对误差 2.50e-01（上限 1e-02）"
    assert json.loads(json.dumps(result.to_dict()))["checks"][0]["detail"] == "max abs difference 3.5e-07"  # JSON: English


def test_what_cudaenv_cannot_say_again_stays_the_childs_english(chinese):
    base = {"event": "check", "name": "elementwise", "ok": True, "seconds": 0.1, "detail": "max abs difference 1.0e-07"}
    for said in (["max abs difference %.1e", [2e-07]],  # values that make other English
                 ["a newer child's sentence %s", ["x"]], ["max abs difference %.1e"], "not a list", None,
                 ["max abs difference %.1e", [{"a": 1}]], ["max abs difference %.1e", ["text"]]):
        event = dict(base, said=said) if said is not None else base
        detail = parse_device_output("CUDAENV_VERIFY " + json.dumps(event)).checks[0].detail
        assert detail == "max abs difference 1.0e-07" and tr(detail) == "max abs difference 1.0e-07"


def test_the_watchdogs_message_is_said_in_chinese_and_classified_as_before(chinese):
    ns = _child("verify_device.py")
    fields = ns["said_fields"](ns["said"]("no progress for %s s in stage %s (a hung kernel or a wedged GPU)", "12",
                                          "matmul-fp32"), "message")
    line = "CUDAENV_VERIFY " + json.dumps(dict(event="error", stage="matmul-fp32", type="Timeout", **fields))
    result = device_result(0, parse_device_output(line), ok_result(code=3))
    english = "no progress for 12 s in stage matmul-fp32 (a hung kernel or a wedged GPU)"
    assert result.error.message == english and result.error.stage == "matmul-fp32"
    old = device_result(0, parse_device_output(line.replace(', "said": ' + json.dumps(fields["said"]), "")), ok_result(code=3))
    assert old.error.message == english and old.error.id == result.error.id  # the same classification as an older child
    assert tr(result.error.message) == "12 s 内没有进展（matmul-fp32 阶段）：内核卡住了，或者 GPU 卡死了"
    assert tr(old.error.message) == english


def _rank_lines(rank, checks, error=None):
    """A verify_dist.py rank's JSON lines, made with the child's own check() and said()."""
    import io

    ns = _child("verify_dist.py")
    out = ns["_OUT"]["fh"] = io.StringIO()  # the rank's results file
    ns["emit"]("start", rank=rank, local_rank=rank, world_size=2, backend="gloo", pid=100 + rank)
    for name, template, values in checks:
        ns["check"](name, lambda: (True, ns["said"](template, *values)))
    if error is not None:
        ns["emit"]("error", stage="all-reduce", type="Terminated", **ns["said_fields"](ns["said"](*error), "message"))
    else:
        ns["emit"]("done", ok=True)
    return out.getvalue()


def test_a_ranks_details_and_its_stop_said_in_chinese(chinese):
    texts = {0: _rank_lines(0, [("init", "%s, world size %d", ("gloo", 2)), ("barrier", "all %d ranks arrived", (2,))]),
             1: _rank_lines(1, [("init", "%s, world size %d", ("gloo", 2))],
                            ("rank %s was stopped by torchrun in stage %s (another rank failed first)", "1", "all-reduce"))}
    folded = parse_rank_events(texts[0])
    assert [c.detail for c in folded["checks"]] == ["gloo, world size 2", "all 2 ranks arrived"]
    assert [tr(c.detail) for c in folded["checks"]] == ["gloo，world size 2", "全部 2 个 rank 都已到达"]
    report = distributed_result("p", "gloo", 2, texts, ok_result(code=1), 120)
    message = report.ranks[1].error.message
    assert message == "Terminated: rank 1 was stopped by torchrun in stage all-reduce (another rank failed first)"
    assert tr(message) == "Terminated: rank 1 在 all-reduce 阶段被 torchrun 停止（另一个 rank 先失败了）"
    text = render_distributed(report, width=80)
    assert "rank1在all-reduce阶段被torchrun停止" in "".join(text.split())  # read across its line breaks
    set_language(ENGLISH)
    assert "rank 1 was stopped by torchrun in stage all-reduce" in " ".join(render_distributed(report, width=80).split())


def test_verify_in_chinese_at_80_columns_and_english_unchanged(cli, tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = fake_python(tmp_path / "old", {"--device 0": ("verify-h100-ok.txt", 0)})
    new = fake_python(tmp_path / "new", {"--device 0": (_h100_said(), 0)})
    english_old = vcli(cli, tmp_path, "verify", "--device", "0", "--python", old)
    english_new = vcli(cli, tmp_path, "verify", "--device", "0", "--python", new)
    assert english_old.code == english_new.code == 0
    # the English of both children is the same (the two paths are as long, so they wrap alike; a long tmp_path may
    # wrap inside them, hence the comparison without the blanks and line ends)
    assert "".join(english_new.out.split()).replace(new, old) == "".join(english_old.out.split())
    assert [len(line) for line in english_new.out.splitlines()] == [len(line) for line in english_old.out.splitlines()]
    assert "max abs difference 0.0e+00" in english_new.out and "80641 MiB free of 81559 MiB" in english_new.out
    zh = vcli(cli, tmp_path, "verify", "--device", "0", "--python", new, env={"PATH": TOOLS, **ZH})
    assert zh.code == 0
    for said in ("最大绝对误差 0.0e+00", "256 x 256 fp32，主机->设备", "相对误差 3.02e-07（上限 1e-04）",
                 "262144 字节，设备->主机", "80641 MiB 空闲，共 81559 MiB", "计时的矩阵乘法 n=2048，64 MiB 拷贝"):
        assert said in zh.out, zh.out
    assert "max abs difference" not in zh.out and "torch.cuda.synchronize" in zh.out  # code stays
    assert all(width_of(line) <= 80 for line in zh.out.splitlines()), zh.out
    zh_old = vcli(cli, tmp_path, "verify", "--device", "0", "--python", old, env={"PATH": TOOLS, **ZH})
    assert "max abs difference 0.0e+00" in zh_old.out  # an older child's English stays English


def test_a_torch_that_sees_no_gpu_on_a_machine_without_one_is_said_in_chinese(cli, tmp_path):
    from cudaenv.verify import MARKER

    info = MARKER + json.dumps({"event": "info", "torch": "2.13.0+cu130", "cuda": "13.0", "cuda_available": False, "device_count": 0})
    select = MARKER + json.dumps({"event": "error", "stage": "select", "type": "RuntimeError", "message": "No CUDA GPUs are available"})
    py = fake_python(tmp_path, {"--device 0": (info + "\n" + select + "\n", 1)})
    zh = vcli(cli, tmp_path, "verify", "--python", py, env={"PATH": TOOLS, **ZH})
    english = vcli(cli, tmp_path, "verify", "--python", py)
    assert zh.code == english.code == 1
    assert "nvidia-smi和NVML也看不到GPU（cudaenvdoctor会说明缺的是驱动还是GPU）" in "".join(zh.out.split()), zh.out
    assert "show no GPU either" not in zh.out
    assert "nvidia-smi and NVML show no GPU either" in " ".join(english.out.split())


def test_the_ranks_bandwidth_in_chinese_from_an_older_childs_output(chinese):
    texts = {0: recorded("verify-dist-nccl-rank0-ok.jsonl"), 1: recorded("verify-dist-nccl-rank1-ok.jsonl")}
    report = distributed_result("p", "nccl", 2, texts, ok_result(), 120)
    text = render_distributed(report, width=80)
    assert "all-reduce 9.84 GB/s" in text and "GB/s all-reduce" not in text, text
    set_language(ENGLISH)
    assert "9.84 GB/s all-reduce" in render_distributed(report, width=80)


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed in the test interpreter")
def test_the_real_child_through_torch_says_its_details_in_chinese(cli):
    """`verify --cpu` run by the real child with this interpreter's torch (`nox -s torch`): every detail it prints in
    English is said in Chinese, and the JSON keeps the English."""
    import sys

    env = {"PATH": TOOLS, "HOME": "/tmp"}
    english = cli("verify", "--cpu", "--json", "--python", sys.executable, env=env)
    assert english.code == 0, english
    details = [c["detail"] for c in english.json()["devices"]["devices"][0]["checks"]]
    assert any(d.startswith("max abs difference ") for d in details)
    zh = cli("verify", "--cpu", "--python", sys.executable, env=dict(env, **ZH))
    assert zh.code == 0
    for said in ("256 x 256 fp32，在 CPU 内存中", "最大绝对误差", "相对误差", "拷贝了 262144 字节", "CPU 上没有需要等待的操作",
                 "计时的矩阵乘法 n=512，16 MiB 拷贝"):
        assert said in zh.out, zh.out
    assert not any(d in zh.out for d in details), zh.out
    zh_json = cli("verify", "--cpu", "--json", "--python", sys.executable, env=dict(env, **ZH))
    assert [c["detail"][:8] for c in zh_json.json()["devices"]["devices"][0]["checks"]] == [d[:8] for d in details]
