"""80 columns everywhere a person reads (issue 27): every command of a small scenario matrix runs at COLUMNS=80 and
COLUMNS=60, and no line of what it prints is longer. Outputs meant for files (Markdown, Prometheus, JSON, shell code)
are exempt.
"""

import json

import pytest

import checkpoint_builders as cb
from builders import recorded
from fleet_builders import planted
from machine import A10G, ARCH_CU121, a10g_535


def _machine(machine, kind):
    if kind == "a10g":
        a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121).toolkit("12.1.1", on_path=True).toolkit("11.8.0")
        machine.root.link("usr/local/cuda", "/usr/local/cuda-11.8")
        machine.env["CUDA_VISIBLE_DEVICES"] = "0,7"
    elif kind == "cpu-torch":
        a10g_535(machine).torch("2.13.0+cpu", None)
    return machine


def _commands(tmp_path):
    ckpt = tmp_path / "model.pt"
    items = [("layer%d.some_rather_long_parameter_name.weight" % i, cb.Tensor(cb.Storage(str(i), 4, "cpu"), (4,)))
             for i in range(64)]
    ckpt.write_bytes(cb.torch_zip(cb.state_dict(items)))
    log = tmp_path / "error.log"
    log.write_text(recorded("err-runfile-corrupt.txt") + "\nnvcc fatal   : Unsupported gpu architecture 'compute_61'\n")
    fleet = planted(tmp_path / "fleet", 6)
    not_run = tmp_path / "cuda_12.4.1_550.54.15_linux.run"
    not_run.write_text("<!DOCTYPE html>\n<html><head><title>Access Denied</title></head></html>\n")
    return [
        ("doctor",), ("doctor", "--quick"), ("list",), ("torch", "recommend"), ("fix", "--dry-run"),
        ("install", "--plan", "12.4"), ("install", "11.8"), ("uninstall", "11.8"), ("uninstall", "--check", "11.8"),
        ("uninstall", "9.9"), ("link", "12.1"), ("explain", str(log)), ("checkpoint", "inspect", str(ckpt)),
        ("check-installer", str(not_run)), ("fleet", "summarize", str(fleet)), ("nosuchcommand",),
        ("torch", "recommend", "--variant", "cu999"),
        ("doctor", "--verbose"), ("doctor", "--verbose", "--quick"), ("explain", "--list"),
        ("diff", str(fleet / "node-01.json"), str(fleet / "node-03.json")), ("diff", str(fleet / "node-01.json"), str(log)), ("fleet", "summarize", "--all", str(fleet)),
        ("checkpoint", "fix", str(ckpt), "--strip-prefix", "layer1.", "-o", str(tmp_path / "fixed.pt")),
        ("torch", "recommend", "--all"), ("install", "--list"), ("uninstall", "--check", "13.0.9"),
        ("lock", str(tmp_path / "cuda-stack.toml")), ("doctor", "--against", str(tmp_path / "cuda-stack.toml")),
        ("verify", "--toolkit", "--arch", "6.1"), ("verify",), ("install", "13.0", "--plan"), ("checkpoint", "inspect", str(log)),
        ("use", "9.9"), ("use", "12.1"), ("use", "9.9", "--shell", "bash"), ("use", "1", "--shell", "bash"), ("link", "9.9"), ("torch", "recommend", "--compute-capability", "6.1", "--driver", "470.82.01"),
        ("torch", "recommend", "--os", "windows", "--jetson"), ("verify", "--cpu"), ("uninstall", "--all"), ("uninstall", "--driver"),
    ]


def _one_word(line):
    """A line that is one word (a path, a URL, a quoted program) longer than the terminal, alone after its indent or
    bullet: nothing can wrap it, and it is never cut (it must stay whole to be pasted)."""
    words = line.split()
    if words[-1:] == ["\\"]:  # a shell continuation after a path too long for any line
        words = words[:-1]
    if len(words) == 1 or (len(words) == 2 and words[0] in ("-", "*", "hint:", "note:")):
        return True
    # one shell word (a quoted `python -c "..."` program) continued onto its own line: it cannot be cut either
    from cudaenv.render.text import shell_words

    code, comment = shell_words(" ".join(words))
    return len(code) == 1 and not comment and code[0][:1] in "\"'"


@pytest.mark.parametrize("kind", ["a10g", "cpu-torch"])
@pytest.mark.parametrize("columns", [80, 60])
def test_every_command_fits_the_terminal(machine, tmp_path, kind, columns):
    _machine(machine, kind)
    machine.env["COLUMNS"] = str(columns)
    too_long = {}
    for argv in _commands(tmp_path):
        env = machine.full_env()
        env["CUDAENV_ROOT"] = str(machine.root.path)
        extra = ["--python", machine.python] if argv[0] in ("doctor", "fix", "lock", "verify") or argv[:2] == ("torch", "recommend") else []
        r = machine.cli(*(list(argv) + extra), env=env)
        # `link` and `use` print on stdout the commands to run (shell code): exempt; their words on stderr are not
        for stream, text in (("err", r.err),) if argv[0] in ("link", "use") else (("out", r.out), ("err", r.err)):
            long = [line for line in text.splitlines() if len(line) > columns and not _one_word(line)]
            if long:
                too_long[" ".join(argv) + " (%s)" % stream] = long[:3]
    assert not too_long, json.dumps(too_long, indent=1, ensure_ascii=False)
