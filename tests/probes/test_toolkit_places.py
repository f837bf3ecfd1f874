"""Where toolkit discovery looks has one home, data/toolkit_places.txt (issue 25): `cudaenv list` prints it when it
finds nothing (its own list left out /opt/cuda-*, CUDAENV_TOOLKITS, cudaenv's installs and CUDA_ROOT), and the
rows are held to the code that proposes the candidates."""

import ast

import pytest

from builders import TOOLS, package_sources
from cudaenv.core.resources import load_table
from cudaenv.probes.toolkits.candidates import searched_places

ROWS = load_table("toolkit_places")["rows"]
LABELS = [r["label"] for r in ROWS]
CANDIDATES = dict(package_sources())["probes/toolkits/candidates.py"]


def _labels_the_code_gives():
    """The literal labels candidates.py gives: ToolkitCandidate(path, LABEL, ...), _named_dirs(host, dir, prefix, LABEL),
    _from_env(host, notes, NAME) and the names it loops over, LINK_NAMES."""
    found = set()
    tree = ast.parse(CANDIDATES)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None)
            at = {"ToolkitCandidate": 1, "_named_dirs": 3, "_from_env": 2}.get(name)
            if at is not None and len(node.args) > at and isinstance(node.args[at], ast.Constant):
                found.add(node.args[at].value)
        if isinstance(node, ast.FunctionDef) and node.name == "candidate_folders":  # its loops over variable names
            for loop in ast.walk(node):
                if isinstance(loop, ast.For) and isinstance(loop.iter, ast.Tuple):
                    found |= {e.value for e in loop.iter.elts if isinstance(e, ast.Constant)}
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "LINK_NAMES" for t in node.targets):
            found |= {e.value for e in node.value.elts}
    return found


def test_every_label_the_code_gives_is_a_row_and_every_row_a_label_of_the_code():
    code = _labels_the_code_gives()
    assert code == set(LABELS) - {"CUDA_PATH_V*"}  # CUDA_PATH_V12_1 and the like: the variable's own name
    assert "CUDA_PATH_V" in CANDIDATES


def test_the_rows_are_in_the_codes_order():
    """The first literal of each label in candidates.py's candidate_folders comes in the table's order."""
    body = CANDIDATES[CANDIDATES.index("def candidate_folders("):]
    body = body[: body.index("\ndef ", 1)]
    helpers = {"cudaenv install": "_installed(host)", "CUDAENV_TOOLKITS": "_cudaenv_toolkits(host, notes",
               "conda": "_conda(host)", "pip": "_pip(host, site_packages)", "CUDA_PATH_V*": "CUDA_PATH_V",
               "/usr/local/cuda": "LINK_NAMES", "/etc/alternatives/cuda": "LINK_NAMES", "PATH": '"PATH"'}
    positions = [body.index(helpers.get(label, '"%s"' % label)) for label in LABELS]
    assert positions == sorted(positions)


@pytest.mark.parametrize("system, present, absent", [
    ("linux", ["/usr/local/cuda-*", "/opt/cuda, /opt/cuda-*", "CUDAENV_TOOLKITS", "CUDA_ROOT", "/etc/alternatives/cuda"],
     ["C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v*", "/Developer/NVIDIA/CUDA-*"]),
    ("windows", ["C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v*", "CUDA_PATH_V*_*", "every nvcc on PATH"],
     ["/usr/local/cuda-*", "/usr/local/cuda"]),
    ("darwin", ["/Developer/NVIDIA/CUDA-*", "/usr/local/cuda-*"], ["C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v*"]),
])
def test_the_places_of_each_system(system, present, absent):
    places = searched_places(system)
    assert set(present) <= set(places) and not set(absent) & set(places)
    assert list(places) == [r["place"] for r in ROWS if system in r["systems"].split(",")]


def test_list_prints_the_tables_places_when_it_finds_nothing(cli, fake_root):
    fake_root.dir("usr/local")
    result = cli("list", "--root", str(fake_root.path), env={"PATH": TOOLS, "COLUMNS": "500"})
    text = " ".join(result.out.split())
    assert result.code == 0 and "Looked in %s." % ", ".join(searched_places("linux")) in text
    assert "/opt/cuda-*" in text and "CUDAENV_TOOLKITS" in text and "CUDA_ROOT" in text
