"""parse/pyenvs.py: pyvenv.cfg (a real uv venv's and a stdlib venv's), conda-meta/history, conda-meta file names and
the CUDA a pixi manifest declares (pixi.toml and pyproject.toml, [system-requirements], a feature's, a platform's);
any text in without a crash, in linear work."""

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear, recorded
from cudaenv.parse.pyenvs import parse_conda_history, parse_pixi_manifest, parse_pyvenv_cfg
from cudaenv.parse.toolkit_files import parse_conda_meta_record


def test_a_real_uv_venv_says_uv_and_its_version():
    cfg = parse_pyvenv_cfg(recorded("pyvenv-uv.txt"))
    assert cfg["uv"] == "0.13.9" and cfg["home"] == "/usr/bin" and cfg["version_info"] == "3.11.2"


def test_a_stdlib_venv_names_no_tool():
    cfg = parse_pyvenv_cfg(recorded("pyvenv-stdlib.txt"))
    assert "uv" not in cfg and "virtualenv" not in cfg and cfg["version"] == "3.11.7"


def test_the_first_history_block_gives_the_tool_and_the_command():
    h = parse_conda_history(recorded("conda-history.txt"))
    assert (h.tool, h.tool_version) == ("conda", "24.11.3")
    assert h.command.startswith("/opt/conda/bin/conda create -n cu126")


def test_an_empty_history_says_nothing():
    assert parse_conda_history("") == parse_conda_history("garbage\n+x::y-1-2\n")
    assert parse_conda_history("").tool is None


def test_conda_meta_file_names():
    assert parse_conda_meta_record("pytorch-2.7.1-cuda126_generic_py312_h1234_200.json") == (
        "pytorch", "2.7.1", "cuda126_generic_py312_h1234_200")
    assert parse_conda_meta_record("cuda-version-12.6-h7480c83_3.json") == ("cuda-version", "12.6", "h7480c83_3")
    assert parse_conda_meta_record("history") is None
    assert parse_conda_meta_record("pytorch-latest-x.json") is None  # no version
    assert parse_conda_meta_record("a-1.json") is None


PIXI_TOML = """\
[workspace]
name = "train"
channels = ["conda-forge", 'nvidia']
platforms = ["linux-64"]

[system-requirements]
cuda = "12"   # the driver's CUDA must be at least this

[feature.gpu.system-requirements]
cuda = "12.6"

[dependencies]
pytorch-gpu = "*"
cuda = "13"
"""


def test_a_pixi_toml_declares_cuda_and_channels():
    m = parse_pixi_manifest(PIXI_TOML)
    assert m.pixi and m.cuda == "12" and m.feature_cuda == (("gpu", "12.6"),)
    assert m.channels == ("conda-forge", "nvidia") and m.platform_cuda is None


def test_a_platform_entry_declares_cuda_since_pixi_071():
    m = parse_pixi_manifest('[workspace]\nplatforms = [{ platform = "linux-64", cuda = "12.0" }, "osx-arm64"]\n')
    assert m.platform_cuda == "12.0" and m.cuda is None


def test_pyproject_reads_only_the_tool_pixi_tables():
    text = ('[project]\nname = "x"\n\n[system-requirements]\ncuda = "99"\n\n[tool.pixi.workspace]\nchannels = ["conda-forge"]\n'
            'platforms = ["linux-64"]\n\n[tool.pixi.system-requirements]\ncuda = "12.4"\n\n[tool.ruff]\ncuda = "1"\n')
    m = parse_pixi_manifest(text, pyproject=True)
    assert m.pixi and m.cuda == "12.4" and m.channels == ("conda-forge",)


def test_a_pyproject_without_tool_pixi_is_no_manifest():
    m = parse_pixi_manifest('[project]\nname = "x"\n[system-requirements]\ncuda = "12"\n', pyproject=True)
    assert not m.pixi and m.cuda is None


@settings(max_examples=150)
@given(st.text(), st.booleans())
def test_any_text_never_raises(text, pyproject):
    parse_pyvenv_cfg(text)
    parse_conda_history(text)
    parse_conda_meta_record(text)
    m = parse_pixi_manifest(text, pyproject=pyproject)
    assert m.cuda is None or isinstance(m.cuda, str)


def test_linear_work_on_hostile_runs():
    assert_linear(lambda t: parse_pixi_manifest(t), "[system-requirements]\ncuda = \"12\"\n[a.b.c\n", size=5_000)
    assert_linear(parse_conda_history, "# cmd: x\n==> y\n# a version: 1\n", size=5_000)
    assert_linear(parse_pyvenv_cfg, "a = b\n=\n", size=5_000)
