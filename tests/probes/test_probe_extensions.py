"""Compiled torch extensions against the installed torch (probes/extensions.py, diagnose/extensions.py), on real
ELF files built by the machine's C compiler: a torch/lib whose libc10.so and libtorch_cpu.so export C++-mangled names
(a C identifier may spell one), an extension built against an older libc10 that exported one more function and
spelled std::string in the old ABI (flash-attn, pinned to another torch), and one built against this torch (a package
the table does not name, found by its torch requirement). Then the finding, the report line and the JSON."""

import shutil
import time

import pytest

from builders import calls_to
from elf_builders import build_library, exporting, needing
from framework_builders import dist
from cudaenv.diagnose import diagnose
from cudaenv.diagnose.view import build_view
from cudaenv.host import Host
from cudaenv.model.snapshot import Torch
from cudaenv.probes.extensions import probe_extensions, torch_pin
from cudaenv.render.markdown import render_markdown
from cudaenv.render.report import render_report

from machine import healthy

CHECK_NEW = "_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
CHECK_OLD = "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"
ZEROS = "_ZN2at4_ops5zeros4callEv"
GONE = "_ZN3c1013intrusive_ptr6retainEv"  # exported by the torch it was built against only
TOOL = "_ZN5torch8autograd12VariableInfoC1Ev"
MODULE = "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"


def _site(tmp_path):
    """site-packages with torch 2.8.0+cu128's libraries, flash-attn (built for another torch) and good-ext."""
    site = tmp_path / "site-packages"
    lib = site / "torch" / "lib"
    build_library(lib, "libc10.so", soname="libc10.so", code=exporting([CHECK_NEW, "_ZN3c104HalfC1Ef"]))
    build_library(lib, "libtorch_cpu.so", soname="libtorch_cpu.so", code=exporting([ZEROS, TOOL]))
    cudart = build_library(tmp_path / "nvidia", "libcudart.so.12", soname="libcudart.so.12")
    old = build_library(tmp_path / "old-torch", "libc10.so", soname="libc10.so", code=exporting([CHECK_OLD, GONE]))
    ext = build_library(tmp_path / "build", MODULE, links=[old, lib / "libtorch_cpu.so", cudart],
                        code=needing([CHECK_OLD, GONE, ZEROS, "puts"]))
    dist(site, "flash-attn", "2.7.4", requires=["torch==2.6.0", "einops"], binary={"flash_attn/" + MODULE: ext.read_bytes()})
    good = build_library(tmp_path / "build", "_C.so", links=[lib / "libc10.so", lib / "libtorch_cpu.so"],
                         code=needing([CHECK_NEW, ZEROS, TOOL]))
    dist(site, "good-ext", "0.1", requires=["torch>=2.0"], binary={"good_ext/_C.so": good.read_bytes()})
    plain = build_library(tmp_path / "build", "_speedups.so")
    dist(site, "other", "1.0", requires=["numpy"], binary={"other/_speedups.so": plain.read_bytes()})
    return site


TORCH = dict(python="/env/bin/python", installed=True, version="2.8.0+cu128", cuda="12.8")


def test_an_extension_built_against_another_torch_is_found_and_named(tmp_path):
    site = _site(tmp_path)
    notes = []
    found = probe_extensions(Host(env={}), Torch(location=str(site), **TORCH), [str(site)], notes)
    by = {e.package: e for e in found}
    assert set(by) == {"flash-attn", "good-ext"} and notes == []  # "other" requires no torch; its library is not read
    fa = by["flash-attn"]
    assert fa.object == str(site / "flash_attn" / MODULE) and fa.version == "2.7.4" and fa.torch_pin == "2.6.0"
    assert fa.torch_needed == ("libc10.so", "libtorch_cpu.so") and fa.cuda == "12"
    assert fa.checked == 3 and fa.missing_count == 2 and set(fa.missing) == {CHECK_OLD, GONE} and fa.complete
    assert (fa.cxx11_abi, fa.torch_cxx11_abi) == (False, True)
    good = by["good-ext"]
    assert (good.checked, good.missing_count, good.cxx11_abi, good.torch_pin) == (3, 0, True, None)

    s = healthy(torch=Torch(location=str(site), **TORCH), extensions=found)
    f = {x.id: x for x in diagnose(s)}
    abi = f["extension-abi-mismatch"]
    assert abi.title == "flash-attn 2.7.4 will fail to import: built against another torch than 2.8.0+cu128, CUDA 12.8"
    assert "c10::detail::torchCheckFail(...)" in abi.detail and "c10::intrusive_ptr::retain(...)" in abi.detail
    assert 'undefined symbol: %s' % CHECK_OLD in abi.detail
    assert "Built for torch 2.6.0 (its requirement pins it), CUDA 12 (it needs libcudart.so.12), C++11 ABI FALSE" in abi.detail
    assert "Its C++11 ABI (_GLIBCXX_USE_CXX11_ABI) is FALSE and torch's is TRUE" in abi.detail
    assert abi.fix[1] == "/env/bin/python -m pip install --no-build-isolation --no-cache-dir --force-reinstall --no-deps flash-attn==2.7.4"
    assert "torch 2.8 + cu128 with C++11 ABI TRUE" in abi.fix[0]
    assert abi.fix[-1] == "/env/bin/python -m pip install torch==2.6.0 --index-url https://download.pytorch.org/whl/cu128"
    text = " ".join(render_report(s, diagnose(s), build_view(s)).split())  # the report wraps long lines
    assert "warning flash-attn extension" in text and "2 of 3 torch symbols not exported by this torch" in text
    assert "_C.so: its 3 torch symbols all exported by this torch; C++11 ABI TRUE, torch's TRUE" in text
    assert "torch extensions" in render_markdown(s, diagnose(s), build_view(s))
    data = s.to_dict()
    assert [e["package"] for e in data["extensions"]] == ["flash-attn", "good-ext"] and data["extensions"][0]["missing_count"] == 2


def test_a_matching_set_gives_no_finding_and_an_unreadable_torch_library_is_never_a_missing_symbol(tmp_path):
    site = _site(tmp_path)
    shutil.rmtree(site / "flash_attn")
    found = probe_extensions(Host(env={}), Torch(location=str(site), **TORCH), [str(site)], [])
    s = healthy(torch=Torch(location=str(site), **TORCH), extensions=found)
    assert [x.id for x in diagnose(s) if x.section == "frameworks"] == []
    (site / "torch" / "lib" / "libtorch_cpu.so").write_bytes(b"\x7fELF" + b"\0" * 64)  # broken: answers nothing
    good = probe_extensions(Host(env={}), Torch(location=str(site), **TORCH), [str(site)], [])[0]
    assert (good.missing_count, good.complete) == (0, False)  # ZEROS and TOOL unknown, not missing


def test_no_torch_no_check(tmp_path):
    site = _site(tmp_path)
    assert probe_extensions(Host(env={}), Torch(python="/env/bin/python"), [str(site)], []) == ()
    shutil.rmtree(site / "torch")
    assert probe_extensions(Host(env={}), Torch(location=str(site), **TORCH), [str(site)], []) == ()


def test_the_pinned_torch():
    assert torch_pin(["torch==2.6.0"]) == "2.6.0" and torch_pin(["torch (==2.7.1) ; platform_system == 'Linux'"]) == "2.7.1"
    assert torch_pin(["torch>=2.0", 'torch==2.1; extra == "x"', "torchvision==0.21.0"]) is None


# ---------------------------------------------------------------- the real CPU torch 2.13.0 (nox -s torch)
def _real_torch_site():
    import importlib.util
    import os

    spec = importlib.util.find_spec("torch")  # found, not imported
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed in the test interpreter")
    return os.path.dirname(list(spec.submodule_search_locations)[0])


@pytest.mark.torch
def test_real_torch_extensions_against_their_torch_and_against_another(tmp_path):
    """torch's own wheel ships two small extensions built by its cpp-extension machinery (libtorchbind_test.so,
    libaoti_custom_ops.so): against their torch every torch symbol is exported and both ABIs are the new one; against
    a torch/lib whose libtorch_cpu.so exports only one name (the rest are links to the real files) they are missing."""
    import os

    real = _real_torch_site()
    lib = os.path.join(real, "torch", "lib")
    modules = [m for m in ("libtorchbind_test.so", "libaoti_custom_ops.so") if os.path.isfile(os.path.join(lib, m))]
    if not modules:
        pytest.skip("this torch wheel ships no test extension")
    site = tmp_path / "site-packages"
    dist(site, "torch-test-ops", "1.0", requires=["torch"], binary={"ops/" + m: open(os.path.join(lib, m), "rb").read() for m in modules})
    torch = Torch(python="python3", location=real, installed=True, version="2.13.0+cpu")
    found = probe_extensions(Host(env={}), torch, [str(site)], [])
    assert [os.path.basename(e.object) for e in found] == modules
    for e in found:
        assert e.checked > 20 and e.missing_count == 0 and e.complete and (e.cxx11_abi, e.torch_cxx11_abi) == (True, True), e

    other = tmp_path / "other" / "torch" / "lib"
    other.mkdir(parents=True)
    for name in os.listdir(lib):
        if name != "libtorch_cpu.so":
            os.symlink(os.path.join(lib, name), other / name)
    build_library(other, "libtorch_cpu.so", soname="libtorch_cpu.so", code=exporting([ZEROS]))
    against = probe_extensions(Host(env={}), Torch(python="python3", location=str(tmp_path / "other"), installed=True, version="2.13.0+cpu"), [str(site)], [])
    assert all(e.missing_count > 10 and e.missing_count < e.checked for e in against), against


def test_libc10_is_answered_from_its_exports_read_for_the_abi(tmp_path, monkeypatch):
    """Counted work: libc10.so's exports in torch's namespaces are read whole once (for torch's C++ ABI), so the
    names the extensions need are looked up through the hash table of the other libraries only; the answers are the
    ones of looking each name up in libc10.so's hash table too (forced here by an incomplete read of its exports)."""
    import cudaenv.probes.extensions as pe
    from cudaenv.parse.elf_symbols import ElfSymbols, parse_elf_symbols

    site = _site(tmp_path)
    looked_up = []
    real_defines = pe._read

    def counting(host, path, reader, *args):
        if reader.__name__ == "parse_elf_defines":
            looked_up.append(path.rsplit("/", 1)[-1])
        return real_defines(host, path, reader, *args)

    monkeypatch.setattr(pe, "_read", counting)
    fast = probe_extensions(Host(env={}), Torch(location=str(site), **TORCH), [str(site)], [])
    assert looked_up == ["libtorch_cpu.so"]

    def incomplete(data, defined=False, *args):
        got = parse_elf_symbols(data, defined, *args)
        return got._replace(complete=False) if defined and isinstance(got, ElfSymbols) else got

    looked_up.clear()
    monkeypatch.setattr("cudaenv.parse.elf_symbols.parse_elf_symbols", incomplete)
    slow = probe_extensions(Host(env={}), Torch(location=str(site), **TORCH), [str(site)], [])
    assert looked_up == ["libc10.so", "libtorch_cpu.so"] and slow == fast


def test_the_memo_stands_for_the_reads_until_a_file_changes(tmp_path, monkeypatch):
    """Counted work: the second doctor reads no ELF file while every extension module and torch library keeps its
    identity (probes/memo.py), and gives the same records; torch's libc10.so rebuilt (the ones the old extension
    needed now exported) is read again and the verdict follows; a memo value of the wrong shape is read again too."""
    import cudaenv.probes.extensions as pe
    from cudaenv.probes.memo import SETTLED_NS, Memo

    site = _site(tmp_path)
    torch = Torch(location=str(site), **TORCH)
    later = time.time_ns() + 10 * SETTLED_NS  # the files built above count as settled
    path = str(tmp_path / "cache" / "facts-memo.json")
    opened = calls_to(monkeypatch, pe, "_read")  # the paths of the ELF files read

    def read_names():
        return [p.rsplit("/", 1)[-1] for p in opened]

    memo = Memo(path, now_ns=later)
    first = probe_extensions(Host(env={}), torch, [str(site)], [], memo=memo)
    assert memo.save() and {e.package: e.missing_count for e in first} == {"flash-attn": 2, "good-ext": 0}
    assert MODULE in read_names() and "_speedups.so" not in read_names()  # ("other" requires no torch: never a candidate)
    opened.clear()
    again = probe_extensions(Host(env={}), torch, [str(site)], [], memo=Memo(path, now_ns=later))
    assert opened == [] and again == first

    lib = site / "torch" / "lib"
    build_library(lib, "libc10.so", soname="libc10.so", code=exporting([CHECK_NEW, "_ZN3c104HalfC1Ef", CHECK_OLD, GONE]))
    changed = probe_extensions(Host(env={}), torch, [str(site)], [], memo=Memo(path, now_ns=later))
    assert "libc10.so" in read_names() and {e.package: e.missing_count for e in changed} == {"flash-attn": 0, "good-ext": 0}

    import json

    doc = json.loads(open(path).read())
    for entry in doc["entries"].values():
        entry["value"]["missing_count"] = "2"  # a string where a count belongs
    open(path, "w").write(json.dumps(doc))
    opened.clear()
    assert probe_extensions(Host(env={}), torch, [str(site)], [], memo=Memo(path, now_ns=later)) == changed
    assert MODULE in read_names()
