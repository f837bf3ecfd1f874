"""`cudaenv list`: the table, its marks and legend, the JSON, the empty case, and this machine."""

import os

import pytest

from builders import TOOLS
from cudaenv.render.toolkits import render_toolkit_table, toolkits_to_json
from cudaenv.toolkit.table import list_view
from cudaenv.probes.toolkits import ToolkitState
from cudaenv.model.snapshot import ActiveToolkit, CudaSymlink, Note, Toolkit

BIN = TOOLS


def run_list(cli, fake_root, *extra, env=None):
    full = {"PATH": BIN}
    full.update(env or {})
    return cli("list", "--root", str(fake_root.path), *extra, env=full)


def test_table_marks_active_and_link_target(cli, fake_root):
    fake_root.toolkit("12.4.131", runfile=True)
    fake_root.toolkit("11.8.89", version_json=False)
    fake_root.link("usr/local/cuda", "/usr/local/cuda-12.4")
    result = run_list(cli, fake_root, env={"PATH": "/usr/local/cuda-11.8/bin:" + BIN})
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert lines[0].split() == ["VERSION", "INSTALLED", "BY", "PATH"]
    row124 = next(line for line in lines if "/usr/local/cuda-12.4" in line and "12.4.131" in line)
    row118 = next(line for line in lines if "/usr/local/cuda-11.8" in line and "11.8" in line)
    assert row124.startswith(" ->") and "runfile" in row124
    assert row118.startswith("*") and "unknown" in row118
    assert lines.index(row124) < lines.index(row118)  # newest first
    assert any(line.startswith("*") and "active: the nvcc on PATH (/usr/local/cuda-11.8/bin/nvcc)" in line for line in lines)
    assert any(line.startswith("->") and "/usr/local/cuda points here" in line for line in lines)
    assert all(len(line) <= 80 for line in lines)
    assert result.err == ""


def test_json_output(cli, fake_root):
    fake_root.toolkit("12.4.131")
    fake_root.link("usr/local/cuda", "cuda-12.4")
    result = run_list(cli, fake_root, "--json", env={"CUDA_HOME": "/usr/local/cuda", "CUDAENV_TOOLKITS": "/nowhere"})
    assert result.code == 0, result
    data = result.json()
    assert list(data)[:4] == ["schema_version", "toolkits", "cuda_symlink", "active_toolkit"]
    assert data["schema_version"] == 1
    (tk,) = data["toolkits"]
    assert tk["version"] == "12.4.131" and tk["path"] == "/usr/local/cuda-12.4" and tk["is_link_target"] is True
    assert tk["sources"] == ["/usr/local/cuda-*", "CUDA_HOME", "/usr/local/cuda"]
    assert data["cuda_symlink"] == {
        "path": "/usr/local/cuda", "target": "cuda-12.4", "resolved": "/usr/local/cuda-12.4", "dangling": False, "alternatives": False,
    }
    assert data["active_toolkit"]["via"] == "CUDA_HOME"
    assert data["notes"] == [{"probe": "toolkits", "message": "CUDAENV_TOOLKITS entry /nowhere does not exist"}]


def test_no_toolkit_is_a_helpful_line_and_exit_0(cli, fake_root):
    fake_root.dir("usr/local")
    result = run_list(cli, fake_root)
    assert result.code == 0
    assert result.out.startswith("No CUDA toolkit found.")
    assert "/usr/local/cuda-*" in result.out and "CUDAENV_TOOLKITS=/sw/cuda" in result.out
    assert all(len(line) <= 80 for line in result.out.splitlines())


def test_dangling_link_notes_and_pip_from_venv(cli, fake_root):
    fake_root.toolkit("12.4.131")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-11.3")
    fake_root.dir("usr/local/cuda-12.0")
    sp = "home/u/venv/lib/python3.11/site-packages"
    fake_root.file(sp + "/nvidia/cuda_runtime/lib/libcudart.so.12", "")
    fake_root.file(sp + "/nvidia_cuda_runtime_cu12-12.6.77.dist-info/METADATA", "Name: nvidia-cuda-runtime-cu12\nVersion: 12.6.77\n")
    result = run_list(cli, fake_root, env={"VIRTUAL_ENV": "/home/u/venv"})
    assert result.code == 0, result
    out = result.out
    assert "/usr/local/cuda -> /usr/local/cuda-11.3 is dangling" in out
    assert "no toolkit is active" in out
    assert "pip, no nvcc" in out and "12.6.77" in out
    tail = out[out.index("is dangling"):]
    assert "note: /usr/local/cuda-12.0 holds no toolkit" in tail  # notes come after the table and legend


def test_long_paths_fit_80_columns():
    long = "/very/long/path/" + "x" * 120 + "/cuda-12.4"
    state = ToolkitState(
        (Toolkit("12.4.131", long, "CUDAENV_TOOLKITS", active=True),),
        CudaSymlink("/usr/local/cuda", long, long),
        ActiveToolkit(long, long + "/bin/nvcc", "12.4.131", "PATH", (long + "/bin/nvcc",)),
    )
    text = render_toolkit_table(state, list_view(state), [Note("toolkits", "a note " * 30)])
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert "..." in text and "12.4.131" in text


def test_json_of_an_empty_state():
    assert toolkits_to_json(ToolkitState()) == {
        "schema_version": 1, "toolkits": [], "cuda_symlink": None, "active_toolkit": None, "notes": [],
    }


def test_windows_table(cli, fake_root):
    where = "C/Program Files/NVIDIA GPU Computing Toolkit/CUDA"
    fake_root.toolkit("12.1.105", where=where, name="v12.1")
    env = {"PATH": "C:\\Windows", "CUDAENV_SYSTEM": "windows", "CUDA_PATH": "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.1"}
    result = run_list(cli, fake_root, env=env)
    assert result.code == 0, result
    assert "windows-installer" in result.out and "v12.1" in result.out
    assert "CUDA_PATH points here" in result.out


@pytest.mark.real_machine
def test_real_machine_list(cli_subprocess):
    if not os.path.exists("/usr/local/cuda-13.0/bin/nvcc"):
        pytest.skip("no /usr/local/cuda-13.0 toolkit here")
    result = cli_subprocess("list", env={"PATH": "/usr/local/bin:/usr/bin:/bin"})
    assert result.code == 0, result
    row = next(line for line in result.out.splitlines() if line.endswith("/usr/local/cuda-13.0"))
    assert row.split()[1] == "13.0.88" and row.split()[2] == "pip-wheels"  # issue 13: from the nvcc wheel's dist-info
    assert row.startswith("*->")
    assert "/usr/local/cuda-13.0/bin/nvcc" in result.out and "/usr/local/cuda points here" in result.out
    data = cli_subprocess("list", "--json", env={"PATH": "/usr/local/bin:/usr/bin:/bin"}).json()
    assert data["active_toolkit"]["nvcc"] == "/usr/local/cuda-13.0/bin/nvcc"
    assert data["cuda_symlink"]["resolved"] == "/usr/local/cuda-13.0"


def test_the_list_view_decides_what_the_legend_says():
    """toolkit.table.list_view, not the renderer, decides the legend: several nvcc on PATH, and which toolkit
    `use X.Y` picks where a release number and nvcc's own number share a major.minor."""
    release = Toolkit("13.0.2", "/data/toolkits/13.0.2", "cudaenv", version_source="version.json", on_path=True)
    component = Toolkit("13.0.88", "/usr/local/cuda-13.0", "dir-scan", version_source="nvcc", on_path=True)
    state = ToolkitState((release, component), None, None)
    view = list_view(state)
    assert view.several_on_path
    assert [(p.major_minor, p.toolkit.path, p.others) for p in view.picks] == [("13.0", "/data/toolkits/13.0.2", ("13.0.88",))]
    text = render_toolkit_table(state, view)
    assert "several toolkits have nvcc on PATH" in text and "`cudaenv use 13.0` picks /data/toolkits/13.0.2" in text
    quiet = render_toolkit_table(state, type(view)())  # the renderer words only what the view says
    assert "several toolkits" not in quiet and "picks" not in quiet
