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
from cudaenv.host import Host
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


MAGIC = sys.modules["_frozen_importlib_external"].MAGIC_NUMBER


def run_child(source, mode, tmp_path, flags=("-S",), pythonpath="", **env):
    run_env = {"PATH": "", "HOME": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": pythonpath}
    run_env.update(env)
    return subprocess.run([sys.executable, *flags, "-c", source, mode], capture_output=True, text=True, env=run_env,
                          cwd=str(tmp_path), timeout=60)


def compiles(run) -> int:
    return run.stderr.count("COMPILED <string>")


def host():
    return Host(env={}, system="linux")


@pytest.fixture
def torch_site(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    make_probe_torch(site)
    return site


def test_the_wheel_carries_each_pass_compiled_for_this_interpreter():
    """The installed package (the suite runs the wheel) has both code files, in the format, with this interpreter's
    magic number, each holding its pass's very script and that script's code."""
    import marshal

    for mode in ("static", "dynamic"):
        path = child.code_file(mode)
        assert path is not None and os.path.basename(path) == child.CODE_FILES[mode], path
        head, _, body = Path(path).read_bytes().partition(b"\n")
        fields = head.split(b" ")
        assert b" ".join(fields[:2]) == child.CODE_FORMAT and fields[2] == MAGIC.hex().encode(), head
        text = marshal.loads(body)
        assert text == child_script(mode) and fields[3] == b"%d" % len(text), head
        assert marshal.loads(body[int(fields[4]):]).co_filename == "<string>"
        assert child.code_usable(path, text, MAGIC)
    assert child.code_file("site-packages") == child.code_file("static")  # the same script


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_the_child_of_this_interpreter_runs_the_compiled_code_and_answers_as_the_source_does(mode, tmp_path, torch_site):
    """Counted: this interpreter's child is handed the loader's few lines, not the 24 KB script, and compiles no
    script (the static pass under -S, the dynamic one with its `import torch` of a fake torch); the plain source
    compiles it once; both answer the same."""
    flags = ("-S",) if mode == "static" else ()
    command = child_command(mode, sys.executable, host())
    assert len(command) < 2000 and "_cudaenv_code(" in command, command[:200]
    loaded = run_child(COUNT_COMPILES + command, mode, tmp_path, flags, pythonpath=str(torch_site))
    plain = run_child(COUNT_COMPILES + "exec(compile(%r, '<string>', 'exec'))\n" % child_script(mode), mode, tmp_path,
                      flags, pythonpath=str(torch_site))
    assert loaded.returncode == 0 and plain.returncode == 0, (loaded.stderr, plain.stderr)
    assert compiles(loaded) == 0 and compiles(plain) == 1, (loaded.stderr, plain.stderr)
    answer = parse_child_output(loaded.stdout)
    assert answer == parse_child_output(plain.stdout) and answer["mode"] == mode, answer
    assert answer["version"] == "2.7.1+cu126", answer


def _with_magic(data: bytes, magic: bytes) -> bytes:
    head, _, body = data.partition(b"\n")
    fields = head.split(b" ")
    fields[2] = magic.hex().encode()
    return b" ".join(fields) + b"\n" + body


@pytest.mark.parametrize("case", ["another magic number", "python -O"])
def test_the_child_compiles_the_files_text_where_it_cannot_run_its_code(case, tmp_path, torch_site):
    """The loader's own check (the interpreter's file may change between cudaenv's check and the child's start;
    ``-O`` compiles otherwise): another magic number, or -O, and the child compiles the file's text, once, and
    answers as the compiled code does."""
    good = Path(child.code_file("static")).read_bytes()
    path = tmp_path / "torch_probe.static.code"
    path.write_bytes(_with_magic(good, b"\x00\x00\r\n") if case == "another magic number" else good)
    flags = ("-S", "-O") if case == "python -O" else ("-S",)
    expected = parse_child_output(run_child(child_command("static", sys.executable, host()), "static", tmp_path,
                                            pythonpath=str(torch_site)).stdout)
    run = run_child(COUNT_COMPILES + child.code_loader(str(path)), "static", tmp_path, flags, pythonpath=str(torch_site))
    assert run.returncode == 0, run.stderr
    assert compiles(run) == 1, run.stderr
    assert parse_child_output(run.stdout) == expected and expected["installed"], run.stdout


@pytest.mark.parametrize("case", ["another magic number", "another text", "not the format", "a fifo", "no file"])
def test_a_code_file_that_does_not_fit_is_never_handed_to_the_child(case, tmp_path):
    """``code_usable``: the file must name this interpreter's magic number and the script's length, in the format,
    as a regular file (a fifo is not waited on); else the child gets the source."""
    text = child_script("static")
    good = Path(child.code_file("static")).read_bytes()
    path = tmp_path / "code"
    if case == "another magic number":
        path.write_bytes(_with_magic(good, b"\x00\x00\r\n"))
    elif case == "another text":
        text += "\n# edited after the build\n"
        path.write_bytes(good)
    elif case == "not the format":
        path.write_bytes(b"#!/bin/sh\n" + good)
    elif case == "a fifo":
        os.mkfifo(str(path))
    assert child.code_usable(child.code_file("static"), child_script("static"), MAGIC)  # the file as built fits
    assert not child.code_usable(str(path), text, MAGIC)


def test_another_interpreter_or_a_rooted_host_gets_the_source(tmp_path):
    """Only the interpreter cudaenv runs in (the same file, links followed) gets the loader: another program, a
    missing one, or a host rooted in an image get the script itself."""
    other = tmp_path / "python3"
    other.write_text("#!/bin/sh\n")
    link = tmp_path / "link-to-this"
    os.symlink(sys.executable, str(link))
    assert child_command("static", str(link), host()) != child_script("static")  # a link to it: the same file
    for python in (str(other), str(tmp_path / "missing")):
        assert child_command("static", python, host()) == child_script("static"), python
    rooted = Host(env={}, system="linux", root=str(tmp_path))
    assert child_command("static", sys.executable, rooted) == child_script("static")


def test_the_compiled_code_is_the_script_compiled_as_python_c_compiles_it():
    """``compile_code`` (what hatch_build.py writes): the format line with the magic number it is given, the text's
    length and the text part's, the text, then its code under ``<string>``."""
    import marshal

    data = child.compile_code("x = 1\n", b"\x01\x02\x03\x04")
    head, _, body = data.partition(b"\n")
    fields = head.split(b" ")
    assert b" ".join(fields[:2]) == child.CODE_FORMAT and fields[2:4] == [b"01020304", b"6"], head
    assert marshal.loads(body) == "x = 1\n"
    code = marshal.loads(body[int(fields[4]):])
    assert code.co_filename == "<string>" and code.co_names == ("x",)


def test_the_quick_child_without_torch_imports_no_importlib_util(tmp_path):
    """Counted: where no sys.path folder has torch, the -S child asks sys.meta_path's finders itself (the scan found
    nothing the path finder would find): importlib.util and its helpers (contextlib, collections, functools, about
    3 ms) stay unloaded, and the answer says torch is not installed."""
    empty = tmp_path / "empty"
    empty.mkdir()
    run = run_child(LIST_MODULES_AT_EXIT + child_command("static", sys.executable, host()), "static", tmp_path, pythonpath=str(empty))
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
    run = run_child(HOOKED % str(hooked / "__init__.py") + child_command("static", sys.executable, host()), "static", tmp_path)
    answer = parse_child_output(run.stdout)
    assert answer is not None and not answer.get("probe_error"), (run.stdout, run.stderr)
    assert answer["installed"] and answer["version"] == "2.6.0+cpu", answer


def test_a_finder_without_find_spec_leaves_the_search_to_importlib(tmp_path):
    """A legacy finder (``find_module`` only) on sys.meta_path: the search is importlib.util's, as before (counted: it
    is imported), and the child still answers."""
    empty = tmp_path / "empty"
    empty.mkdir()
    run = run_child(LEGACY + LIST_MODULES_AT_EXIT + child_command("static", sys.executable, host()), "static", tmp_path, pythonpath=str(empty))
    answer = parse_child_output(run.stdout)
    assert answer is not None and answer["installed"] is False and not answer.get("probe_error"), (run.stdout, run.stderr)
    assert "importlib.util" in run.stdout.rsplit("MODULES ", 1)[1].split()
