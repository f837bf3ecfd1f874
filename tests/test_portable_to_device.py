"""`cudaenv.portable.to_device` keeps what a container carries besides its items: a dataclass's ``init=False`` fields
(``dataclasses.replace`` reset them to their default), a state_dict's ``_metadata`` (torch's per-module versions, an
attribute of the OrderedDict), the types of namedtuples and nested containers. Against stand-in tensors (no torch),
then the same with the real torch (`torch` marker; "meta" is a real device move on a machine without a GPU)."""

import collections
import dataclasses
import sys
import types

import pytest


class FakeTensor:
    def __init__(self, value, device="cpu", pinned=False):
        self.value, self.device, self.pinned, self.moves = value, _Device(device), pinned, []

    def is_pinned(self):
        return self.pinned

    def to(self, device, non_blocking=False):
        self.moves.append((repr(device), non_blocking))
        return FakeTensor(self.value, repr(device))


class _Device:
    def __init__(self, spec):
        kind, _, index = str(spec).partition(":")
        self.type, self.index = kind, (int(index) if index else None)

    def __repr__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)


class FakeModule:
    def to(self, device):
        self.device = repr(device)
        return self


@pytest.fixture
def portable(monkeypatch):
    torch = types.ModuleType("torch")
    torch.device, torch.Tensor = _Device, FakeTensor
    torch.nn = types.SimpleNamespace(Module=FakeModule)
    monkeypatch.setitem(sys.modules, "torch", torch)
    from cudaenv import portable

    return portable


Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class Batch:
    x: object
    extra: object = None
    cache: object = dataclasses.field(init=False, default=None)  # filled after __init__, not an argument
    seen: int = dataclasses.field(init=False, default=0)

    def __post_init__(self):
        self.seen += 1  # counts the __init__ runs: a move must not run it again


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: object
    derived: object = dataclasses.field(init=False, default=None)


def where(t):
    return repr(t.device)


def test_init_false_fields_are_moved_not_reset(portable):
    b = Batch(FakeTensor(1))
    b.cache = FakeTensor(2)
    moved = portable.to_device(b, "cuda:1")
    assert type(moved) is Batch and moved is not b
    assert where(moved.x) == "cuda:1" and moved.cache is not None and where(moved.cache) == "cuda:1"
    assert moved.cache.value == 2 and moved.seen == 1 and moved.extra is None
    assert where(b.cache) == "cpu" and where(b.x) == "cpu"  # the original is left as it was


def test_frozen_dataclass_with_an_init_false_field(portable):
    f = Frozen(FakeTensor(1))
    object.__setattr__(f, "derived", FakeTensor(3))
    moved = portable.to_device(f, "cuda:0")
    assert type(moved) is Frozen and where(moved.w) == where(moved.derived) == "cuda:0" and moved.derived.value == 3


def test_dataclass_field_never_set_stays_unset(portable):
    @dataclasses.dataclass
    class Lazy:
        x: object
        later: object = dataclasses.field(init=False)  # no default, and never assigned

    moved = portable.to_device(Lazy(FakeTensor(1)), "cuda:0")
    assert where(moved.x) == "cuda:0" and not hasattr(moved, "later")


def test_state_dict_metadata_and_ordered_dict_type_are_kept(portable):
    sd = collections.OrderedDict([("fc.weight", FakeTensor(1)), ("fc.bias", FakeTensor(2))])
    sd._metadata = collections.OrderedDict([("", {"version": 1}), ("fc", {"version": 1})])
    moved = portable.to_device(sd, "cuda:0")
    assert type(moved) is collections.OrderedDict and list(moved) == ["fc.weight", "fc.bias"]
    assert moved._metadata == sd._metadata and type(moved._metadata) is collections.OrderedDict
    assert moved._metadata is not sd._metadata  # a copy: changing one does not change the other
    assert [where(v) for v in moved.values()] == ["cuda:0", "cuda:0"]


def test_nested_containers_keep_their_types(portable):
    dd = collections.defaultdict(list, {"k": FakeTensor(5)})
    obj = {"pair": Pair(FakeTensor(1), [Batch(FakeTensor(2)), (FakeTensor(3), 7)]), "dd": dd,
           "od": collections.OrderedDict(z=Pair(FakeTensor(4), "s")), "module": FakeModule()}
    moved = portable.to_device(obj, "cuda:0")
    assert type(moved) is dict and type(moved["pair"]) is Pair and type(moved["pair"].b) is list
    assert type(moved["pair"].b[0]) is Batch and type(moved["pair"].b[1]) is tuple and moved["pair"].b[1][1] == 7
    assert where(moved["pair"].b[0].x) == where(moved["pair"].b[1][0]) == where(moved["pair"].a) == "cuda:0"
    assert type(moved["dd"]) is collections.defaultdict and moved["dd"].default_factory is list
    assert type(moved["od"]) is collections.OrderedDict and type(moved["od"]["z"]) is Pair and moved["od"]["z"].b == "s"
    assert moved["module"].device == "cuda:0"


def test_non_blocking_only_from_pinned_memory_to_a_gpu(portable):
    pinned, plain = FakeTensor(1, pinned=True), FakeTensor(2)
    portable.to_device([pinned, plain], "cuda:0")
    portable.to_device([pinned], "cpu")
    assert pinned.moves == [("cuda:0", True), ("cpu", False)] and plain.moves == [("cuda:0", False)]


# ------------------------------------------------------------------ the real torch
@pytest.mark.torch
def test_real_torch_state_dict_and_dataclass_to_meta():
    torch = pytest.importorskip("torch")
    from cudaenv.portable import to_device

    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
    sd = model.state_dict()
    moved = to_device(sd, "meta")
    assert type(moved) is collections.OrderedDict and list(moved) == list(sd)
    assert {v.device.type for v in moved.values()} == {"meta"}
    assert moved._metadata == sd._metadata and moved._metadata["1"]["version"] == 2  # BatchNorm's version
    back = to_device(sd, "cpu")
    fresh = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
    result = fresh.load_state_dict(back)
    assert not result.missing_keys and not result.unexpected_keys
    assert torch.equal(fresh[0].weight, model[0].weight)

    b = Batch(torch.ones(2), extra=Pair(torch.zeros(1), {"t": torch.ones(3)}))
    b.cache = torch.arange(4.0)
    mb = to_device(b, "meta")
    assert mb.cache is not None and mb.cache.device.type == "meta" and mb.cache.shape == (4,)
    assert type(mb.extra) is Pair and mb.extra.b["t"].device.type == "meta" and mb.seen == 1
    assert b.cache.device.type == "cpu"
