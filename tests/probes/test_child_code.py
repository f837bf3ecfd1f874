"""The torch probe's child loads its script compiled when the wheel was built (issue 35): compiling the 24 KB ``-c``
source was about a third of `doctor --quick`'s child (``cudaenv._child``'s ``code_loader``, hatch_build.py's
``compile_children``). Counted with an audit hook: the script is compiled in the child only where its code file cannot
be used (another interpreter's bytecode, another text, not a regular file, ``-O``), and the answer is the same.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import cudaenv._child as child
from cudaenv.probes.torch_child import child_command, child_script, parse_child_output
from machine import make_probe_torch

# put before the child's -c source: each compile of the script (a "<string>" source, as -c names it, holding the probe's
# marker) after this point is written to stderr, at once (the -S child ends through os._exit)
COUNT_COMPILES = ("import os, sys\n"
                  "def _audit(event, args):\n"
                  "    if event == 'compile' and args[1] == '<string>' and 'CUDAENV_TORCH_PROBE' in str(args[0]):\n"
                  "        os.write(2, b'COMPILED <string>\\n')\n"
                  "sys.addaudithook(_audit)\n")

# the modules loaded, written out when the -S child closes its output (its end, through os._exit)
LIST_MODULES_AT_EXIT = ("import os, sys\n_closerange = os.closerange\n"
                        "def _listed(low, high):\n    sys.stdout.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n')\n"
                        "    sys.stdout.flush()\n    _closerange(low, high)\nos.closerange = _listed\n")


def run_child(source, mode, tmp_path, flags=("-S",), pythonpath="", **env):
    run_env = {"PATH": "", "HOME": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": pythonpath}
    run_env.update(env)
    return subprocess.run([sys.executable, *flags, "-c", source, mode], capture_output=True, text=True, env=run_env,
                          cwd=str(tmp_path), timeout=60)


def compiles(run) -> int:
    return run.stderr.count("COMPILED <string>")


@pytest.fixture
def torch_site(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    make_probe_torch(site)
    return site


def test_the_wheel_carries_each_pass_compiled_for_this_interpreter():
    """The installed package (the suite runs the wheel) has both code files, in the format, with this interpreter's
    magic number, each holding its pass's very script."""
    import importlib.util
    import marshal

    for mode in ("static", "dynamic"):
        path = child.code_file(mode)
        assert path is not None and os.path.basename(path) == child.CODE_FILES[mode], path
        data = Path(path).read_bytes()
        head = b"%s %s\n" % (child.CODE_FORMAT, importlib.util.MAGIC_NUMBER.hex().encode())
        assert data.startswith(head), data[:60]
        text, code = marshal.loads(data[len(head):])
        assert text == child_script(mode) and code.co_filename == "<string>"
    assert child.code_file("site-packages") == child.code_file("static")  # the same script


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_the_child_runs_its_compiled_code_and_answers_as_the_source_does(mode, tmp_path, torch_site):
    """Counted: the child of `child_command` compiles no script (the static pass under -S, the dynamic one with its
    `import torch` of a fake torch); the plain source compiles it once; both answer the same."""
    flags = ("-S",) if mode == "static" else ()
    loaded = run_child(COUNT_COMPILES + child_command(mode), mode, tmp_path, flags, pythonpath=str(torch_site))
    plain = run_child(COUNT_COMPILES + "exec(compile(%r, '<string>', 'exec'))\n" % child_script(mode), mode, tmp_path,
                      flags, pythonpath=str(torch_site))
    assert loaded.returncode == 0 and plain.returncode == 0, (loaded.stderr, plain.stderr)
    assert compiles(loaded) == 0 and compiles(plain) == 1, (loaded.stderr, plain.stderr)
    answer = parse_child_output(loaded.stdout)
    assert answer == parse_child_output(plain.stdout) and answer["mode"] == mode, answer
    assert answer["version"] == "2.7.1+cu126", answer


def _other_magic(data: bytes) -> bytes:
    line, _, rest = data.partition(b"\n")
    return line[:-8] + b"00000000" + b"\n" + rest


@pytest.mark.parametrize("case", ["another magic number", "another text", "cut short", "a fifo", "no file", "python -O",
                                  "not the format"])
def test_the_child_compiles_the_source_when_the_code_file_cannot_be_used(case, tmp_path, torch_site):
    """Each file the loader must refuse (or none, or -O, whose compile differs): the script is compiled in the child,
    once, and the answer is the compiled file's answer; a fifo is not waited on."""
    import marshal

    text = child_script("static")
    good = Path(child.code_file("static")).read_bytes()
    path = tmp_path / "torch_probe.static.code"
    flags = ("-S",)
    if case == "another magic number":
        path.write_bytes(_other_magic(good))
    elif case == "another text":
        head = good.partition(b"\n")[0] + b"\n"
        other = text + "\n# edited after the build\n"
        path.write_bytes(head + marshal.dumps((other, compile(other, "<string>", "exec", dont_inherit=True))))
    elif case == "cut short":
        path.write_bytes(good[:len(good) // 2])
    elif case == "a fifo":
        os.mkfifo(str(path))
    elif case == "python -O":
        path.write_bytes(good)
        flags = ("-S", "-O")
    elif case == "not the format":
        path.write_bytes(b"#!/bin/sh\n" + good)
    expected = parse_child_output(run_child(child_command("static"), "static", tmp_path, pythonpath=str(torch_site)).stdout)
    run = run_child(COUNT_COMPILES + child.code_loader(text, str(path)), "static", tmp_path, flags,
                    pythonpath=str(torch_site))
    assert run.returncode == 0, run.stderr
    assert compiles(run) == 1, run.stderr
    assert parse_child_output(run.stdout) == expected and expected["installed"], run.stdout


def test_the_compiled_code_is_the_script_compiled_as_python_c_compiles_it(tmp_path):
    """``compile_code`` (what hatch_build.py writes) holds the text and its code under ``<string>``, after the format
    line that names the magic number it is given; the loader takes it only for that text."""
    import marshal

    data = child.compile_code("x = 1\n", b"\x01\x02\x03\x04")
    head, _, rest = data.partition(b"\n")
    assert head == child.CODE_FORMAT + b" 01020304"
    text, code = marshal.loads(rest)
    assert text == "x = 1\n" and code.co_filename == "<string>" and code.co_names == ("x",)


def test_the_quick_child_without_torch_imports_no_importlib_util(tmp_path):
    """Counted: where no sys.path folder has torch, the -S child asks sys.meta_path's finders itself (the scan found
    nothing the path finder would find): importlib.util and its helpers (contextlib, collections, functools, about
    3 ms) stay unloaded, and the answer says torch is not installed."""
    empty = tmp_path / "empty"
    empty.mkdir()
    run = run_child(LIST_MODULES_AT_EXIT + child_command("static"), "static", tmp_path, pythonpath=str(empty))
    assert run.returncode == 0, run.stderr
    answer = parse_child_output(run.stdout)
    assert answer is not None and answer["installed"] is False and not answer.get("probe_error"), run.stdout
    loaded = run.stdout.rsplit("MODULES ", 1)[1].split()
    for name in ("importlib.util", "contextlib", "collections", "functools", "json", "ast"):
        assert name not in loaded, name


HOOKED = """import sys, importlib.machinery
class _Hook:
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            return importlib.machinery.ModuleSpec("torch", None, origin=%r)
        return None
sys.meta_path.insert(0, _Hook())
"""

LEGACY = """import sys
class _Legacy:
    def find_module(self, name, path=None):
        return None
sys.meta_path.insert(0, _Legacy())
"""


def test_a_torch_only_an_import_hook_finds_is_found_through_its_finder(tmp_path):
    """An import hook on sys.meta_path (an editable install's finder) that finds torch where no sys.path folder has it:
    the child asks it, as importlib.util.find_spec would, and reads that torch."""
    hooked = tmp_path / "hooked" / "torch"
    hooked.mkdir(parents=True)
    (hooked / "__init__.py").write_text("")
    (hooked / "version.py").write_text("__version__ = '2.6.0+cpu'\ncuda = None\n")
    run = run_child(HOOKED % str(hooked / "__init__.py") + child_command("static"), "static", tmp_path)
    answer = parse_child_output(run.stdout)
    assert answer is not None and not answer.get("probe_error"), (run.stdout, run.stderr)
    assert answer["installed"] and answer["version"] == "2.6.0+cpu", answer


def test_a_finder_without_find_spec_leaves_the_search_to_importlib(tmp_path):
    """A legacy finder (``find_module`` only) on sys.meta_path: the search is importlib.util's, as before (counted: it
    is imported), and the child still answers."""
    empty = tmp_path / "empty"
    empty.mkdir()
    run = run_child(LEGACY + LIST_MODULES_AT_EXIT + child_command("static"), "static", tmp_path, pythonpath=str(empty))
    answer = parse_child_output(run.stdout)
    assert answer is not None and answer["installed"] is False and not answer.get("probe_error"), (run.stdout, run.stderr)
    assert "importlib.util" in run.stdout.rsplit("MODULES ", 1)[1].split()
