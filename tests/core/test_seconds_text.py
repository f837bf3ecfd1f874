"""One way to write seconds for people (issue 25): ``cudaenv.core.text.seconds_text``, used by every note, message
and line that names a duration. Before, ``host/process.fmt_seconds``, ``probes/nvidia._secs`` and
``index/client.seconds_text`` wrote one timeout of 12.3 s as "12", "12.3" and "12 s"."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudaenv.core.text import seconds_text

TIMEOUT = 12.3


@pytest.mark.parametrize("value, text", [
    (12.3, "12 s"), (12.7, "13 s"), (2.0, "2 s"), (2.01819, "2 s"), (0.5, "0.5 s"), (1.5, "1.5 s"), (0.25, "0.25 s"),
    (9.94, "9.9 s"), (9.96, "10 s"), (0.001, "0.01 s"), (0, "0 s"), (-3, "0 s"), (300, "300 s"),
])
def test_the_rule(value, text):
    assert seconds_text(value) == text
    assert seconds_text(value, unit="") == text[:-2]


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_any_float_gives_a_short_figure_and_its_unit(value):
    text = seconds_text(value)
    assert text.endswith(" s") and len(text) <= 12, text


class _TimesOut:
    """A runner that runs nothing: every command timed out after its timeout."""

    def __call__(self, argv, timeout, env, cwd=None, **streaming):
        from cudaenv.host.process import CommandResult

        return CommandResult(tuple(argv), None, error="timeout", timeout=timeout)


def _nvidia_smi_notes(fake_root, fake_bin):
    from cudaenv.host import Host
    from cudaenv.probes import nvidia

    fake_bin.command("nvidia-smi", stdout="")
    host = Host(root=fake_root.path, env={"PATH": fake_bin.env_path}, system="linux", timeout=TIMEOUT,
                runner=_TimesOut(), root_is_this_machine=True)
    notes: list = []
    nvidia.probe_nvidia(host, notes)
    return [n.message for n in notes if n.probe == "nvidia-smi"]


def test_every_writer_of_a_timeout_writes_12_3_s_the_same(fake_root, fake_bin):
    """The host's result line, the driver probe's note, verify's hang, the index client's error and fix's lines."""
    from cudaenv.host.process import CommandResult, Deadline
    from cudaenv.index.client import _words
    from cudaenv.verify.classify import import_hang

    said = {
        "host": CommandResult(("nvidia-smi",), None, error="timeout", timeout=TIMEOUT).describe(),
        "nvidia": " ".join(_nvidia_smi_notes(fake_root, fake_bin)),
        "verify": import_hang("/usr/bin/python3", TIMEOUT).message,
        "index": _words("https://download.pytorch.org/whl/", TimeoutError("timed out"), Deadline(TIMEOUT)),
    }
    for where, text in said.items():
        assert "12 s" in text and "12.3" not in text and "12 s s" not in text, (where, text)
