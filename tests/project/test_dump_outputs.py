"""tools/dump_outputs.py, the before/after dump of every command's output, still runs the commands it shows.

The dump is the check of a refactoring that must not change what people read (run it before and after, then
``diff -r``); this runs two of its machines through the refusing runner, so that a command the dump calls cannot
break (or start reading the real machine) unnoticed.
"""

import importlib.util
import json
import re
import shutil

from builders import REPO


def _tool():
    spec = importlib.util.spec_from_file_location("cudaenv_dump_outputs", str(REPO / "tools" / "dump_outputs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _parts(text):
    """(exit code, stdout, stderr) of one dump file."""
    m = re.match(r"\$ cudaenv .*\n\[exit (\d+)\]\n--- stdout\n(.*?)--- stderr\n(.*)\Z", text, re.S)
    assert m, text[:300]
    return int(m.group(1)), m.group(2), m.group(3)


def _base(tmp_path_factory, name):
    """A short folder for the machines: a long path wraps in the 80-column text, where <TMP> cannot replace it."""
    base = tmp_path_factory.getbasetemp() / name
    base.mkdir()
    return base


def test_the_dump_runs_every_command_of_a_healthy_machine(tmp_path, tmp_path_factory, bare_python, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "out"
    base = _base(tmp_path_factory, "dump-a")
    written = _tool().dump(out, base, only={"healthy", "any"}, python=bare_python)
    files = {p.relative_to(out).as_posix(): p.read_text(encoding="utf-8") for p in written}
    assert len(files) > 100
    for name, text in files.items():
        code, stdout, stderr = _parts(text)
        assert "Traceback (most recent call last):\n" not in stdout + stderr, name
        assert str(base) not in text, name  # the temporary folder is written <TMP>: two runs compare
        assert code in (0, 1, 2, 3), name
    code, stdout, _ = _parts(files["healthy/doctor.txt"])
    assert code == 0 and "535.247.01 (CUDA 12.2)" in stdout and "<TMP>/healthy/root" in stdout
    code, stdout, _ = _parts(files["healthy/doctor.json"])
    report = json.loads(stdout)
    assert report["schema_version"] == 1 and report["generated_at"] == "<CLOCK>" and "hostname" in report
    code, stdout, _ = _parts(files["healthy/uninstall-12.json"])
    assert code == 0 and json.loads(stdout)["targets"][0]["path"] == "/usr/local/cuda-12.1"
    assert "--- uninstall.sh\n#!" in files["healthy/uninstall-script.txt"]
    code, stdout, stderr = _parts(files["healthy/use-99.txt"])
    assert code == 1 and stdout == "" and "99.1" in stderr
    code, stdout, _ = _parts(files["any/help-uninstall.txt"])
    assert code == 0 and "--remove-link" in stdout
    code, _, stderr = _parts(files["any/init-install-again.txt"])
    assert code == 0 and "already in" in stderr


def test_two_dumps_of_the_same_code_are_identical(tmp_path, tmp_path_factory, bare_python, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    tool = _tool()
    texts = []
    base = _base(tmp_path_factory, "dump-b")
    for n in (1, 2):
        shutil.rmtree(base)
        base.mkdir()
        written = tool.dump(tmp_path / ("out%d" % n), base, only={"pascal"}, python=bare_python)
        texts.append({p.name: p.read_text(encoding="utf-8") for p in written})
    assert texts[0].keys() == texts[1].keys() and len(texts[0]) > 40
    import difflib
    diffs = ["".join(difflib.unified_diff(texts[0][k].splitlines(True), texts[1][k].splitlines(True), k, k))
             for k in texts[0] if texts[0][k] != texts[1][k]]
    assert diffs == []
