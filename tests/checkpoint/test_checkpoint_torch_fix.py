"""`cudaenv checkpoint inspect|fix` against more of what the real torch 2.13 (CPU) writes (`nox -s torch`): a trained
optimizer's state, a legacy DataParallel file with tied weights and a view, the mode of a --trust result, and
hypothesis mutations of real torch.save files (zip with a model and a stepped Adam, legacy, protocol 4).

No GPU here: storages claim `cuda:2` through a registered location tagger (torch.serialization.register_package,
removed again at once), as in test_checkpoint_torch.py."""

import contextlib
import io
import json
import os
import stat
import sys
import zipfile

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
nn = torch.nn

from builders import umask  # noqa: E402
from cudaenv.checkpoint.analyze import inspect_file  # noqa: E402
from cudaenv.checkpoint.container import open_container  # noqa: E402
from cudaenv.checkpoint.fix import Options, fix_checkpoint  # noqa: E402
from cudaenv.checkpoint.graph import MAX_TENSOR_LIST  # noqa: E402
from cudaenv.checkpoint.report import CheckpointReport  # noqa: E402
from cudaenv.core.errors import UserError  # noqa: E402
from cudaenv.render.checkpoint import render_fix, render_inspect  # noqa: E402

pytestmark = pytest.mark.torch


@contextlib.contextmanager
def claiming_cuda2():
    """Storages saved in the block claim ``cuda:2`` (the tagger is removed when the block ends)."""
    registry = torch.serialization._package_registry
    before = list(registry)
    torch.serialization.register_package(0, lambda s: "cuda:2" if s.device.type == "cpu" else None, lambda s, loc: None)
    try:
        yield
    finally:
        registry[:] = before


def devices(r):
    return {(d.device, d.via): d.count for d in r.devices}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)


def trained():
    """A model, and an Adam that has taken one step (its state: step, exp_avg, exp_avg_sq per parameter)."""
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model.bn(model.fc(torch.randn(5, 4))).pow(2).sum().backward()
    opt.step()
    return model, opt


# ------------------------------------------------------------------ a real optimizer's state
def test_trained_adam_on_cuda2_fixed_loads_and_steps_on(tmp_path, cli):
    model, opt = trained()
    src = tmp_path / "train.pt"
    with claiming_cuda2():
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 1}, src)
    r = inspect_file(str(src))
    n_model, n_opt = len(model.state_dict()), 3 * len(opt.state_dict()["state"])
    assert (n_model, n_opt) == (7, 12) and r.tensors == r.storages == n_model + n_opt
    assert devices(r) == {("cuda:2", "storage"): n_model + n_opt} and r.kind == "training checkpoint"
    assert "optimizer: dict, 2 keys" in r.structure and r.weights_only is True and not r.inconsistencies
    listed = {e.key: e for e in r.tensor_list}
    for pid in range(4):
        assert {listed["optimizer.state.%d.%s" % (pid, k)].device for k in ("step", "exp_avg", "exp_avg_sq")} == {"cuda:2"}
    assert listed["optimizer.state.0.exp_avg"].shape == (3, 4) and listed["optimizer.state.0.step"].shape == ()
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        torch.load(src, weights_only=True)

    out = tmp_path / "fixed.pt"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--map-location", "cpu")
    assert res.code == 0, res.err
    assert "19 storages cuda:2 -> cpu" in " ".join(res.out.split())
    loaded = torch.load(out, weights_only=True)
    assert loaded["epoch"] == 1 and loaded["optimizer"]["param_groups"] == opt.state_dict()["param_groups"]
    for pid, s in opt.state_dict()["state"].items():
        for k, v in s.items():
            assert torch.equal(loaded["optimizer"]["state"][pid][k], v)

    fresh = Net()
    fresh.load_state_dict(loaded["model"])
    fresh_opt = torch.optim.Adam(fresh.parameters(), lr=0.01)
    fresh_opt.load_state_dict(loaded["optimizer"])
    x = torch.randn(5, 4)
    for m, o in ((model, opt), (fresh, fresh_opt)):  # the same second step from the same state
        o.zero_grad()
        m.bn(m.fc(x)).pow(2).sum().backward()
        o.step()
    assert fresh_opt.state_dict()["state"][0]["step"].item() == 2.0
    for a, b in zip(model.parameters(), fresh.parameters()):
        assert torch.equal(a, b)


# ------------------------------------------------------------------ a legacy DataParallel file
class TiedView(nn.Module):
    """Tied weights (head.weight is emb.weight) and a buffer that is a view into a parameter's storage."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6, 4)
        self.head = nn.Linear(4, 6, bias=False)
        self.head.weight = self.emb.weight
        self.register_buffer("rows", self.emb.weight.data[2:4])  # storage offset 8
        self.norm = nn.LayerNorm(4)


def test_legacy_dataparallel_file_fixed_then_loaded_by_torch(tmp_path, cli):
    model = TiedView()
    sd = nn.DataParallel(model).state_dict()
    assert all(k.startswith("module.") for k in sd)
    src = tmp_path / "legacy.pt"
    with claiming_cuda2():
        torch.save(sd, src, _use_new_zipfile_serialization=False)
    r = inspect_file(str(src))
    assert r.format == "torch-legacy" and r.tensors == 5 and r.storages == 3  # emb (shared by 3), norm w, norm b
    assert devices(r) == {("cuda:2", "storage"): 3} and r.weights_only is True and not r.inconsistencies

    out = tmp_path / "fixed.pt"
    res = cli("checkpoint", "fix", str(src), "-o", str(out), "--map-location", "cpu", "--strip-prefix", "module.")
    assert res.code == 0, res.err
    flat = " ".join(res.out.split())
    assert "legacy format rewritten as a torch zip" in flat and "stripped module. from 5 keys" in flat
    assert inspect_file(str(out)).format == "torch-zip"
    loaded = torch.load(out, weights_only=True)
    original = torch.load(src, map_location="cpu", weights_only=True)
    assert list(loaded) == [k[len("module."):] for k in original]
    for k, v in original.items():
        got = loaded[k[len("module."):]]
        assert got.dtype == v.dtype and got.shape == v.shape and got.stride() == v.stride() and torch.equal(got, v)
        assert got.storage_offset() == v.storage_offset()
    assert loaded["emb.weight"].data_ptr() == loaded["head.weight"].data_ptr()  # the tie is kept
    assert loaded["rows"].untyped_storage().data_ptr() == loaded["emb.weight"].untyped_storage().data_ptr()
    assert loaded["rows"].storage_offset() == 8 and torch.equal(loaded["rows"], model.emb.weight.data[2:4])
    assert list(loaded._metadata) == ["", "emb", "head", "norm"] and loaded._metadata["norm"] == original._metadata["module.norm"]
    fresh = TiedView()
    result = fresh.load_state_dict(loaded)
    assert not result.missing_keys and not result.unexpected_keys and torch.equal(fresh.head.weight, model.emb.weight)


# ------------------------------------------------------------------ the mode of a --trust result
def test_trusted_fix_output_gets_the_usual_mode(tmp_path, cli):
    import argparse

    path = tmp_path / "train.pt"
    torch.save({"model": Net().state_dict(), "args": argparse.Namespace(lr=0.1)}, path)
    out = tmp_path / "fixed.pt"
    with umask(0o022):
        res = cli("checkpoint", "fix", str(path), "-o", str(out), "--map-location", "cpu", "--trust", "--python", sys.executable)
    assert res.code == 1, res.err  # written, but still needs weights_only=False (the Namespace)
    assert stat.S_IMODE(os.stat(str(out)).st_mode) == 0o644 and torch.load(out, weights_only=False)["args"].lr == 0.1


# ------------------------------------------------------------------ mutated real checkpoints
def _regions(data):
    """Byte ranges worth mutating: data.pkl and the central directory of a zip, the leading pickles of a legacy
    file; the whole file too."""
    whole = (0, len(data))
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            info = [i for i in zf.infolist() if i.filename.endswith("/data.pkl")][0]
            start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
            return [(start, start + info.compress_size), (data.find(b"PK\x01\x02"), len(data)), whole]
    except zipfile.BadZipFile:
        return [(0, 1024), whole]


class Bases:
    """The real files to mutate (and their regions), in a folder where the mutated copies are written."""

    def __init__(self, folder):
        self.folder = folder
        model, opt = trained()
        ckpt = {"state_dict": nn.DataParallel(model).state_dict(), "optimizer": opt.state_dict(), "epoch": 3}
        self.files = []
        with claiming_cuda2():
            for name, kwargs in (("zip.pt", {}), ("legacy.pt", {"_use_new_zipfile_serialization": False}),
                                 ("p4.pt", {"pickle_protocol": 4})):
                torch.save(ckpt, folder / name, **kwargs)
                data = (folder / name).read_bytes()
                self.files.append((data, _regions(data)))
        legacy = open_container(str(folder / "legacy.pt"))
        assert len(legacy.legacy_keys) == 19

    def __repr__(self):  # hypothesis prints the arguments of a failing example
        return "Bases(zip, legacy, protocol 4)"


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    return Bases(tmp_path_factory.mktemp("bases"))


mutation = st.tuples(st.sampled_from(["set", "insert", "delete"]), st.sampled_from([0, 0, 0, 0, 0, 0, 1, 2]), st.integers(0, 10 ** 6),
                     st.integers(0, 255))


@settings(max_examples=500, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2), st.lists(mutation, min_size=1, max_size=6), st.integers(0, 10 ** 6))
def test_mutated_real_checkpoints_never_crash_inspect_or_fix(bases, which, edits, cut):
    folder = bases.folder
    data, regions = bases.files[which]
    data = bytearray(data)
    for kind, region, pos, value in edits:
        lo, hi = regions[region % len(regions)]
        at = lo + pos % max(1, hi - lo)
        if kind == "set" and at < len(data):
            data[at] = value
        elif kind == "insert":
            data[at:at] = bytes([value])
        elif at < len(data):
            del data[at]
    if cut % 3 == 0:  # a third of the files cut short as well
        data = data[: max(1, len(data) - cut % 4096)]
    path = folder / "mutated.pt"
    path.write_bytes(bytes(data))
    r = inspect_file(str(path))  # documented: OSError only when the file cannot be opened; this one can
    assert isinstance(r, CheckpointReport)
    assert r.tensors <= len(data) and r.storages <= len(data) and len(r.tensor_list) <= MAX_TENSOR_LIST
    assert len(r.notes) + len(r.inconsistencies) + len(r.security) <= 100
    text = render_inspect(r, 100)
    assert len(text) < 200_000 and len(json.dumps(r.to_dict())) < 2_000_000
    event("%s, weights_only %s, %s" % (r.format, r.weights_only, "inconsistent" if r.inconsistencies else "consistent"))
    if r.format in ("torch-zip", "torch-legacy") and r.weights_only is True and not r.inconsistencies:
        before = _torch_load(path)
        out = folder / "fixed.pt"
        try:
            fixed = fix_checkpoint(None, str(path), str(out), Options(map_location="cpu", strip=["module."]), None)
        except UserError:
            event("fix refused")
            return  # refused, in words: documented
        event("fixed")
        render_fix(fixed, 100)
        after = inspect_file(str(out))
        assert after.weights_only is True and not after.inconsistencies
        assert set(devices(after)) <= {("cpu", "storage"), ("meta", "meta")}
        if before is not None:  # what torch loads before the fix, it loads after, every tensor the same
            after_load = torch.load(out, weights_only=True)
            if not any("kept as they were" in c for c in fixed.changes):  # (a key whose new name was taken)
                old, new = list(_leaves(before)), list(_leaves(after_load))
                assert len(old) == len(new)
                for x, y in zip(old, new):
                    assert x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)


def _leaves(obj, depth=0):
    """The tensors in ``obj``, in order (dict values, list and tuple items)."""
    if depth > 50:
        return
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _leaves(v, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _leaves(v, depth + 1)


def _torch_load(path):
    """What torch loads, or None; a weights_only refusal (what inspect's verdict is about) fails the test. Data damage
    the verdict does not claim to see (a rebuild call with an argument too few, a record of the wrong size) gives
    None."""
    import pickle

    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as exc:
        assert "Unsupported" not in str(exc), "inspect said weights_only loads it: %s" % str(exc)[-300:]
        return None
    except Exception:  # noqa: BLE001 - torch's own errors for damaged data
        return None
