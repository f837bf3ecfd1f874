"""One JSON writer for every output (issue 25): cudaenv.render.json_out.dumps. Before, `doctor --json` and `list
--json` printed UTF-8 while explain, verify, the uninstall plan, torch recommend, check-installer and checkpoint
escaped every non-ASCII character; now all print UTF-8 (ensure_ascii=False), with \\udcXX escapes kept only for a
path that is not UTF-8 (so the text still encodes)."""

import ast
import json

from builders import package_sources
from cudaenv.render.json_out import dumps


def test_explain_json_prints_utf_8_and_reads_back_the_same(cli):
    paste = ("UserWarning: Found GPU0 Tésla K40 显卡 which is of cuda capability 3.5.\n"
             "    PyTorch no longer supports this GPU because it is too old.\n")  # torch's warning, a constructed name
    r = cli("explain", "--json", paste)
    assert r.code in (0, 1) and "Tésla K40 显卡" in r.out and "\\u00e9" not in r.out, r.out
    assert json.loads(r.out)["match"]["id"] == "gpu-too-old-for-torch"


def test_a_path_that_is_not_utf_8_still_gives_text_that_encodes():
    text = dumps({"path": "/opt/caf\udce9"})
    text.encode("utf-8")
    assert json.loads(text)["path"] == "/opt/caf\udce9"


def test_no_module_writes_json_output_on_its_own():
    """json.dumps(..., indent=2) is an output's text: only render/json_out.py writes it."""
    found = []
    for rel, source in package_sources():
        if rel == "render/json_out.py" or rel.startswith("_child/"):
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "dumps" and \
                    any(k.arg == "indent" and getattr(k.value, "value", None) == 2 for k in node.keywords):
                found.append((rel, node.lineno))
    assert found == []
