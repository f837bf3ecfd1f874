"""The plans and findings of the last five modules converted to message values (issue 33), in Simplified Chinese at
COLUMNS=80 and 60 by display width: `checkpoint fix` of a file and of a folder (its changes, warnings and errors), the
doctor's conda/pixi `cuda-version` finding (diagnose/versions.py), and `torch recommend`'s, `fix --dry-run`'s and
`torch refresh`'s reasons and notes (recommend/decide.py, recommend/service.py). Each command runs in English too: the
exit code is the same, the English has no Chinese in it and says the sentences it said before, and the commands, flags,
paths and ids stay as they are in Chinese.
"""

import importlib.util
import json
from pathlib import Path

import pytest

import checkpoint_builders as cb
from builders import TOOLS
from cudaenv.render.width import has_wide, width_of

_spec = importlib.util.spec_from_file_location("columns_matrix", str(Path(__file__).with_name("test_columns.py")))
columns_matrix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(columns_matrix)  # the 80-column matrix's machine and its one-word rule, not its tests

ZH = {"LANG": "zh_CN.UTF-8"}


def flat(text):
    """The text with its line breaks and indents gone (a wrapped sentence read whole)."""
    return " ".join(text.split())


def zh_flat(text):
    """The text without its blanks and line breaks: a Chinese line may break between two characters, or between a
    Latin word and a full-width bracket, where no blank was. Compared with :func:`has_said`."""
    return "".join(text.split())


def has_said(text, sentences):
    """The ``sentences`` that are not in the Chinese ``text`` (both read without blanks)."""
    flat_text = zh_flat(text)
    return [s for s in sentences if zh_flat(s) not in flat_text]


def too_wide(text, english, columns):
    """The lines of ``text`` wider than ``columns`` (display width) that are not laid out as English lays them out
    (the same line, or a line English leaves as wide: `torch refresh`'s summary lines are not wrapped in any language)
    and are not one word that nothing can wrap."""
    same, lines = set(english.splitlines()), english.splitlines()
    return [line for n, line in enumerate(text.splitlines())
            if width_of(line) > columns and line not in same and not columns_matrix._one_word(line)
            and not (n < len(lines) and width_of(lines[n]) > columns and not has_wide(lines[n]))]


def _both(cli, argv, env, columns):
    """(English, Chinese) results of ``cudaenv ARGV`` at ``columns``."""
    env = dict(env, COLUMNS=str(columns))
    return cli(*argv, env=env), cli(*argv, env=dict(env, **ZH))


def _checkpoints(tmp_path):
    """The files and folders checkpoint fix is shown on, and (argv, English sentences, their Chinese) for each run."""
    ok = tmp_path / "model.pt"
    ok.write_bytes(cb.torch_zip(cb.cnn(prefix="module.")))
    gpu = tmp_path / "gpu.pt"
    gpu.write_bytes(cb.torch_zip(cb.cnn(location="cuda:1")))
    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(cb.legacy_file(cb.cnn(prefix="module.")))
    nested = tmp_path / "nested.pt"
    nested.write_bytes(cb.torch_zip({"model": cb.cnn(prefix="module."), "epoch": 3}))
    st = tmp_path / "model.safetensors"
    st.write_bytes(cb.safetensors_file({"module.w": ("F32", (2, 2), 16), "module.b": ("F32", (2,), 8)}))
    hf = tmp_path / "hf"
    hf.mkdir()
    one = {"_orig_mod.module.a.weight": ("F32", (4, 4), 64), "_orig_mod.module.a.bias": ("BF16", (4,), 8)}
    two = {"_orig_mod.module.b.weight": ("F16", (8,), 16)}
    (hf / "model-00001-of-00002.safetensors").write_bytes(cb.safetensors_file(one, {"format": "pt"}))
    (hf / "model-00002-of-00002.safetensors").write_bytes(cb.safetensors_file(two, {"format": "pt"}))
    wmap = dict([(k, "model-00001-of-00002.safetensors") for k in one] + [(k, "model-00002-of-00002.safetensors") for k in two])
    (hf / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": wmap}))
    (tmp_path / "target.pt").write_bytes(b"")
    (tmp_path / "link.pt").symlink_to(tmp_path / "target.pt")
    out = str(tmp_path / "out.pt")
    return [
        (["checkpoint", "fix", str(ok), "--strip-prefix", "module.", "-o", out],
         ["stripped module. from 6 keys and 4 _metadata keys", "(rewritten without torch)", "no wrapper prefix"],
         ["去掉了 module. 前缀（6 个键和 4 个 _metadata 键）", "（不经 torch 重写）", "没有包装前缀", "6 个张量"]),
        (["checkpoint", "fix", str(ok), "--add-prefix", "model.", "-o", out],
         ["added model. to 6 keys and 5 _metadata keys"], ["加上了 model. 前缀（6 个键和 5 个 _metadata 键）"]),
        (["checkpoint", "fix", str(gpu), "--map-location", "cpu", "-o", out],
         ["6 storages cuda:1 -> cpu"], ["6 个存储 cuda:1 -> cpu"]),
        (["checkpoint", "fix", str(legacy), "--strip-prefix", "module.", "-o", out],
         ["legacy format rewritten as a torch zip"], ["旧格式已改写为 torch zip"]),
        (["checkpoint", "fix", str(nested), "--extract", "model", "-o", out],
         ["kept only the entry 'model'"], ["只保留了条目 'model'"]),
        (["checkpoint", "fix", str(ok), "--strip-prefix", "module.", "-o", str(tmp_path / "link.pt")],
         ["link.pt is a link: its target", "was written, the link kept"], ["link.pt 是链接：写入的是它的目标", "，链接保留"]),
        (["checkpoint", "fix", str(st), "--strip-prefix", "module.", "--map-location", "cpu", "-o", str(tmp_path / "o.safetensors")],
         ["rewrote the safetensors header (2 tensors, their bytes copied, no torch)", "stripped module. from 2 keys",
          "safetensors stores no device: --map-location cpu is for the loader (safe_open(..., device='cpu'))"],
         ["重写了 safetensors 文件头（2 个张量，字节原样复制，未用 torch）", "去掉了 module. 前缀（2 个键）",
          "safetensors 不保存设备：--map-location cpu 要交给加载的代码（safe_open(..., device='cpu')）"]),
        (["checkpoint", "fix", str(hf), "--strip-prefix", "_orig_mod.", "--strip-prefix", "module.", "--add-prefix", "m.",
          "-o", str(tmp_path / "one.safetensors")],
         ["merged 2 safetensors shards into one file (3 tensors, header and byte ranges, no torch)",
          "stripped _orig_mod. then module. from 3 keys", "added m. to every key", "(merged without torch)",
          "safetensors-shards, 2 files, 3 tensors"],
         ["把 2 个 safetensors 分片合并成一个文件（3 个张量，按文件头和字节范围，未用 torch）",
          "去掉了 _orig_mod.、module. 前缀（3 个键）", "给每个键加上了 m. 前缀", "（不经 torch 合并）",
          "safetensors-shards，2 个文件，3 个张量"]),
        # errors: said before anything is written
        (["checkpoint", "fix", str(nested), "--extract", "nope", "-o", out],
         ["has no top-level entry nope", "its top-level keys: model, epoch"], ["没有顶层条目 nope", "它的顶层键：model, epoch"]),
        (["checkpoint", "fix", str(ok), "-o", str(hf)], ["hf is a folder", "-o %s/fixed.pt" % hf], ["hf 是一个文件夹", "-o %s/fixed.pt" % hf]),
        (["checkpoint", "fix", str(hf), "--strip-prefix", "_orig_mod.module.a.", "--strip-prefix", "_orig_mod.module.b.",
          "-o", str(tmp_path / "two.safetensors")],
         ["two tensors would be named weight (one from model-00002-of-00002.safetensors)", "strip fewer prefixes"],
         ["会有两个张量都叫 weight（其中一个来自 model-00002-of-00002.safetensors）", "少去掉一些前缀"]),
    ]


@pytest.mark.parametrize("columns", [80, 60])
def test_checkpoint_fix_changes_warnings_and_errors_in_chinese(cli, tmp_path, columns):
    from cudaenv.core.fs import TMP_SUFFIX, _host_tag

    env = {"PATH": TOOLS}
    wide, missing = {}, []
    for argv, english_says, chinese_says in _checkpoints(tmp_path):
        # a temporary file a killed fix left beside OUT (a process that no longer exists): removed, and said
        stale = Path(argv[-1]).parent / (".x.pt.%s-999999.abcdefgh%s" % (_host_tag(), TMP_SUFFIX))
        stale.write_bytes(b"")
        en = cli(*argv, env=dict(env, COLUMNS=str(columns)))
        stale.write_bytes(b"")  # again, for the Chinese run
        zh = cli(*argv, env=dict(env, COLUMNS=str(columns), **ZH))
        assert en.code == zh.code, (argv, en.err, zh.err)
        assert not has_wide(en.out + en.err)
        english = flat(en.out + en.err)
        missing += [s for s in english_says if s not in english] + has_said(zh.out + zh.err, chinese_says)
        if en.code == 0:
            assert "removed 1 temporary file a killed fix left" in english
            assert has_said(zh.out, ["已删除被终止的 fix 遗留的 1 个临时文件"]) == []
        for stream in ("out", "err"):
            long = too_wide(getattr(zh, stream), getattr(en, stream), columns)
            if long:
                wide[" ".join(argv[:3]) + " (%s)" % stream] = long[:3]
    assert missing == [], json.dumps(missing, indent=1, ensure_ascii=False)
    assert not wide, json.dumps(wide, indent=1, ensure_ascii=False)


def test_the_file_kinds_fix_refuses_to_write_over_are_said_in_chinese(cli, tmp_path):
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(str(fifo))
    ok = tmp_path / "model.pt"
    ok.write_bytes(cb.torch_zip(cb.cnn(prefix="module.")))
    argv = ["checkpoint", "fix", str(ok), "--strip-prefix", "module.", "-o", str(fifo)]
    en, zh = _both(cli, argv, {"PATH": TOOLS}, 80)
    assert en.code == zh.code == 2
    assert "is a FIFO: fix writes only regular files" in flat(en.err)
    assert has_said(zh.err, ["pipe 是FIFO（命名管道）：fix 只写普通文件"]) == []


# ------------------------------------------------------------------ the doctor's versions finding
def _conda_envs():
    from cudaenv.model.record import replace
    from cudaenv.model.snapshot import PythonEnv

    conda = PythonEnv("conda", "/opt/conda/envs/cu", "conda", "24.11.3", "cu",
                      cuda_packages=("cuda-version=13.1=h1_0", "pytorch=2.12.0=cuda130_generic_py312_h2_200"))
    return [
        (conda, ["conda 环境的 CUDA 包是为 CUDA 13.1 构建的，高于这个驱动的 CUDA 13.0", "同一主版本内它们靠次版本兼容运行",
                 '# 驱动能运行的 CUDA 包', 'conda install --prefix /opt/conda/envs/cu', '"cuda-version<=13.0"']),
        (replace(conda, cuda_packages=("cuda-version=14.0=h1_0",)),
         ["CUDA 14 的库根本无法在它上面运行（\"CUDA driver version is insufficient\"）", "/opt/conda/envs/cu 中装有 cuda-version 14.0"]),
        (replace(conda, kind="pixi", manifest="/ws/pixi.toml"),
         ["pixi 环境的 CUDA 包", "pixi add --manifest-path /ws/pixi.toml", "# 驱动能运行的 CUDA 包，写入 manifest"]),
    ]


@pytest.mark.parametrize("columns", [80, 60])
def test_the_conda_cuda_version_finding_in_chinese(columns):
    from machine import healthy

    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language
    from cudaenv.diagnose import diagnose
    from cudaenv.diagnose.view import build_view
    from cudaenv.model.record import replace
    from cudaenv.render.report import render_report

    for env, says in _conda_envs():
        s = replace(healthy(), python_env=env)
        findings = diagnose(s)
        english = render_report(s, findings, build_view(s), width=columns)
        set_language(CHINESE)
        try:
            chinese = render_report(s, findings, build_view(s), width=columns)
        finally:
            set_language(ENGLISH)
        assert render_report(s, findings, build_view(s), width=columns) == english  # English again, as it was
        f = next(f for f in findings if f.id == "conda-cuda-above-driver")
        assert f.title in flat(english) and not has_wide(english)
        assert has_said(chinese, says) == []
        assert too_wide(chinese, english, columns) == []


# ------------------------------------------------------------------ recommend's and fix's reasons, refresh's notes
RECOMMEND = [
    (["torch", "recommend", "--driver", "550.54.15", "--compute-capability", "8.6", "--torch", "1.0.0"],
     ["torch 1.0.0 is older than the bundled tables (they start at torch 2.0.0)",
      "the oldest release with a build for this machine (sm_86) is torch 2.0.0 cu118",
      "install torch >= 2.0.0 with cu118 or newer"],
     ["torch 1.0.0 比自带的数据表还旧（表从 torch 2.0.0 开始）", "这台机器（sm_86）可用的最旧版本是 torch 2.0.0 cu118",
      "安装 torch >= 2.0.0，用 cu118 或更新的版本"]),
    (["torch", "recommend", "--driver", "550.54.15", "--compute-capability", "8.6", "--torch", "99.0"],
     ["torch 99.0 is not in the bundled table (it knows 2.0.0 to", "run `cudaenv torch refresh` to learn newer releases"],
     ["torch 99.0 不在自带的数据表中（表中有 2.0.0 到", "运行 `cudaenv torch refresh`，从索引获取更新的版本"]),
    (["torch", "recommend", "--driver", "550.54.15", "--compute-capability", "3.5", "--torch", "1.0.0"],
     ["use the CPU build (torch with the cpu variant): it runs everywhere, without the GPU",
      'build torch from source with TORCH_CUDA_ARCH_LIST="3.5" (and a CUDA toolkit that still targets it)',
      "no torch in the tables (from 2.0.0) has kernels for sm_35: only older official builds did"],
     ["用 CPU 版本（cpu 变体的 torch）：到处都能运行，但不用 GPU",
      '用 TORCH_CUDA_ARCH_LIST="3.5" 从源码编译 torch（还需要：仍支持它的 CUDA 工具包）',
      "数据表中（从 2.0.0 起）没有哪个 torch 有 sm_35 的内核：只有更早的官方版本有"]),
    (["torch", "recommend", "--driver", "550.54.15", "--compute-capability", "8.6", "--installer", "pixi", "--torch", "latest"],
     ["pixi: from the conda-forge channel: pytorch-gpu==", "What a conda or pixi solver sees here (virtual packages):",
      "__cuda 12.4 (the driver's own CUDA)", "through CUDA minor-version compatibility"],
     ["pixi: 来自 conda-forge 频道：pytorch-gpu==", "conda 或 pixi 的求解器在这里看到的（虚拟包）：",
      "（驱动自己的 CUDA）", "它在这里靠 CUDA 次版本兼容运行"]),
    (["torch", "recommend", "--driver", "550.54.15", "--compute-capability", "8.6", "--mirror", "nju", "--torch", "latest"],
     ["mirror: nju mirrors the simple index", "`cudaenv torch mirror-check --mirror nju` checks that it serves this build"],
     ["镜像源：nju 镜像了 simple 索引", "`cudaenv torch mirror-check --mirror nju` 会检查它是否提供这个版本"]),
    (["torch", "recommend", "--driver", "550.54.15", "--compute-capability", "8.6", "--variant", "cu118", "--torch", "latest"],
     ["use torch <= 2.7.1 to stay on cu118"], ["用 torch <= 2.7.1，才能继续用 cu118"]),
    (["torch", "recommend"], ["torch 2.5.1+cu121 is installed and runs on this machine: nothing to install", "is newer and fits, if you want to upgrade"],
     ["torch 2.5.1+cu121 已安装，能在这台机器上运行：无需安装", "更新且适合，如果你想升级的话"]),
    (["torch", "refresh", "--index-base", "http://127.0.0.1:9/whl", "--timeout", "1"],
     ["offline: nothing could be read from http://127.0.0.1:9/whl; the bundled tables stay in use"],
     ["离线：无法从 http://127.0.0.1:9/whl 读取任何内容；继续使用自带的数据表"]),
    (["torch", "recommend", "--driver", "550.54.15", "--compute-capability", "8.6", "--refresh", "--index-base", "http://127.0.0.1:9/whl",
      "--timeout", "1"],
     ["refused the connection; using the bundled tables"], ["离线：根目录列表：127.0.0.1:9 拒绝了连接; cu126: 127.0.0.1:9 拒绝了连接；使用自带的数据表"]),
]


@pytest.mark.parametrize("columns", [80, 60])
def test_recommend_and_refresh_reasons_in_chinese(machine, tmp_path, columns):
    columns_matrix._machine(machine, "a10g")  # torch 2.5.1+cu121 on an A10G: it fits
    env = dict(machine.full_env(), CUDAENV_ROOT=str(machine.root.path), CUDAENV_CACHE_DIR=str(tmp_path / "cache"))
    missing, wide = [], {}
    for argv, english_says, chinese_says in RECOMMEND:
        argv = argv + (["--python", machine.python] if argv[1] == "recommend" else [])
        en, zh = _both(machine.cli, argv, env, columns)
        assert en.code == zh.code, (argv, en.out, en.err, zh.err)
        assert not has_wide(en.out + en.err)
        missing += [s for s in english_says if s not in flat(en.out + en.err)]
        missing += has_said(zh.out + zh.err, chinese_says)
        for stream in ("out", "err"):
            long = too_wide(getattr(zh, stream), getattr(en, stream), columns)
            if long:
                wide[" ".join(argv[:4]) + " (%s)" % stream] = long[:3]
    assert missing == []
    assert not wide, json.dumps(wide, indent=1, ensure_ascii=False)


@pytest.mark.parametrize("columns", [80, 60])
def test_the_fix_plans_reasons_in_chinese(machine, columns):
    columns_matrix._machine(machine, "cpu-torch")  # a CPU-only torch beside an A10G: fix plans a CUDA build
    env = dict(machine.full_env(), CUDAENV_ROOT=str(machine.root.path))
    en, zh = _both(machine.cli, ["fix", "--dry-run", "--python", machine.python], env, columns)
    assert en.code == zh.code
    assert "torch 2.13.0+cpu is installed in %s" % machine.python in flat(en.out)
    assert has_said(zh.out, ["torch 2.13.0+cpu 安装在 %s 中" % machine.python, "torch 2.13.0 有这些版本："]) == []
    assert too_wide(zh.out, en.out, columns) == [] and too_wide(zh.err, en.err, columns) == []


# ------------------------------------------------------------------ the torch index: its cache's notes, a refresh
def _index_tests():
    spec = importlib.util.spec_from_file_location("torch_index_tests", str(Path(__file__).parent.parent / "index" / "test_torch_index.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its IndexServer (a real HTTP server on 127.0.0.1), not its tests
    return module


@pytest.mark.parametrize("columns", [80, 60])
def test_the_index_caches_notes_and_a_refresh_in_chinese(cli, tmp_path, columns):
    import time

    from cudaenv.index import cache
    from cudaenv.index import torch as ti

    path = tmp_path / "cache" / cache.CACHE_NAME
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "cache")}
    wi = ["torch", "recommend", "--driver", "550.54.15", "--compute-capability", "8.6"]
    stale = ti.IndexData(ti.index_base({}), time.mktime((2025, 1, 1, 0, 0, 0, 0, 0, 0)), {"cu126": {}})
    foreign = ti.IndexData("http://elsewhere.example/whl", time.time(), {})
    cases = [(stale, "is older than the bundled tables", "比自带的数据表（"),
             (foreign, "the torch index cache was read from http://elsewhere.example/whl, not", "torch 索引缓存读自 http://elsewhere.example/whl，而不是")]
    missing, wide = [], {}
    for data, english_says, chinese_says in cases:
        cache.write_cache(str(path), data)
        en, zh = _both(cli, wi, env, columns)
        assert en.code == zh.code == 0
        missing += [s for s in [english_says] if s not in flat(en.out)] + has_said(zh.out, [chinese_says, "已忽略"])
        wide.update({"recommend": too_wide(zh.out, en.out, columns)} if too_wide(zh.out, en.out, columns) else {})
    path.write_text('{"schema": 99}')
    en, zh = _both(cli, wi, env, columns)
    assert "was written by a newer cudaenv (cache schema 99; this one reads" in flat(en.out)
    assert has_said(zh.out, ["由更新的 cudaenv 写入（缓存格式 99；这个版本读"]) == []
    srv = _index_tests().IndexServer(slow=0.1)
    try:
        refresh = ["torch", "refresh", "--index-base", srv.base, "--timeout", "1"]
        en, zh = _both(cli, refresh, env, columns)
    finally:
        srv.close()
    assert en.code == zh.code == 0, (en.err, zh.err)
    english = flat(en.out)
    assert "new since the bundled table: cu134" in english and "cache written to" in english
    missing += has_said(zh.out, ["自带数据表之后新增的：cu134", "缓存已写入", "个索引页面，来自 %s" % srv.base, "变体："])
    if too_wide(zh.out, en.out, columns):
        wide["refresh"] = too_wide(zh.out, en.out, columns)
    dead = ["torch", "refresh", "--index-base", "http://127.0.0.1:9/whl", "--timeout", "1"]
    en, zh = _both(cli, dead, env, columns)
    assert en.code == zh.code == 1
    assert "root listing, cu126, " in flat(en.err) and " more: 127.0.0.1:9 refused the connection" in flat(en.err)
    missing += has_said(zh.err, ["根目录列表, cu126, 另外 ", " 个: 127.0.0.1:9 拒绝了连接", "离线：无法从 http://127.0.0.1:9/whl 读取任何内容"])
    if too_wide(zh.err, en.err, columns):
        wide["refresh (dead)"] = too_wide(zh.err, en.err, columns)
    assert missing == [], json.dumps(missing, ensure_ascii=False)
    assert not wide, json.dumps(wide, indent=1, ensure_ascii=False)
