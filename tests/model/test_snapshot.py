"""The JSON contract round-trips and carries schema_version 1."""

import json

from cudaenv.model.schema import SCHEMA_VERSION
from cudaenv.model.snapshot import (
    CudaSymlink, DeviceMapping, Driver, Gpu, Note, Platform, Snapshot, Toolkit, Torch, TorchDevice,
    VisibleDevices,
)


def test_round_trip_through_json():
    snap = Snapshot(
        platform=Platform(system="linux", distro="Ubuntu 22.04.4 LTS", machine="x86_64", wsl=2),
        driver=Driver(version="550.54.15", cuda_version="12.4", source="nvidia-smi"),
        gpus=(Gpu(index=0, name="NVIDIA GeForce RTX 4090", compute_capability="8.9", memory_total_mib=24564),),
        visible_devices=VisibleDevices(cuda_visible_devices="0", mapping=(DeviceMapping(0, 0, "GPU-1"),), entries=("0",)),
        toolkits=(Toolkit(version="12.4.131", path="/usr/local/cuda-12.4", source="/usr/local/cuda-*", active=True),),
        cuda_symlink=CudaSymlink(path="/usr/local/cuda", target="/usr/local/cuda-12.4", resolved="/usr/local/cuda-12.4"),
        env=(("CUDA_HOME", "/usr/local/cuda"),),
        torch=Torch(python="/usr/bin/python3", installed=True, version="2.13.0+cpu", arch_list=("sm_90",),
                    devices=(TorchDevice(name="x", capability="9.0"),)),
        notes=(Note("driver", "nvidia-smi timed out after 5 s"),),
    )
    data = json.loads(json.dumps(snap.to_dict()))
    assert data["schema_version"] == SCHEMA_VERSION == 1
    assert data["env"] == {"CUDA_HOME": "/usr/local/cuda"}
    assert data["gpus"][0]["compute_capability"] == "8.9"
    assert data["platform"]["wsl"] == 2
    assert Snapshot.from_dict(data) == snap


def test_records_are_frozen_hashable_and_replaceable():
    import pytest

    from cudaenv.model.record import FrozenInstanceError, asdict, fields
    from cudaenv.model.record import replace

    gpu = Gpu(index=0, name="NVIDIA H100 80GB HBM3", compute_capability="9.0")
    with pytest.raises(FrozenInstanceError):
        gpu.name = "x"
    assert hash(gpu) == hash(Gpu(0, "NVIDIA H100 80GB HBM3", compute_capability="9.0"))
    assert replace(gpu, index=3) == Gpu(index=3, name="NVIDIA H100 80GB HBM3", compute_capability="9.0")
    assert fields(Gpu)[:3] == ("index", "name", "uuid")
    assert asdict(gpu)["memory_total_mib"] is None
    with pytest.raises(TypeError):
        Gpu(index=0, bogus=1)
    with pytest.raises(TypeError):
        Gpu()  # index has no default


def test_record_tables_are_worked_out_on_first_use_and_each_subclass_has_its_own():
    """Defining a record costs a class statement: the field tables come on first use (an instance, fields(), the
    codec), for a record of a record too, whichever of the two is used first; a bad declaration fails then."""
    import threading

    import pytest

    from cudaenv.model.record import Record, factory, fields

    class Base(Record):
        a: int
        b: int = 2

    class Child(Base):
        c: str = "c"
        b: int = 5

    assert "_fields" not in Base.__dict__ and type(Child.__dict__["_fields"]).__name__ == "_Table"  # not worked out
    assert Base.__dict__["b"] == 2  # the default is still a class attribute: nothing was worked out yet
    assert Child(1) == Child(a=1, b=5, c="c") and fields(Child) == ("a", "b", "c")
    assert Base(1).b == 2 and fields(Base) == ("a", "b") and "b" not in Base.__dict__

    class Late(Base):  # made after its parent's tables exist: still its own
        d: list = factory(list)

    assert fields(Late) == ("a", "b", "d") and Late(0).d == [] and Late(0).d is not Late(0).d
    assert Record._fields == () and fields(Base) == ("a", "b")

    class Bad(Record):
        a: int = 1
        b: int

    with pytest.raises(TypeError, match="without a default follows one with a default"):
        Bad(1, 2)

    class Raced(Record):
        x: int = 0
        y: int = 1

    made = []
    threads = [threading.Thread(target=lambda: made.append(Raced(x=3))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert made == [Raced(3, 1)] * 8 and Raced._defaults == {"x": 0, "y": 1}


def test_default_factories_give_each_snapshot_its_own_value():
    a, b = Snapshot(platform=Platform(system="linux")), Snapshot(platform=Platform(system="linux"))
    assert a.visible_devices == VisibleDevices() and a.visible_devices is not b.visible_devices


def test_lazy_patterns_compile_on_first_use_and_behave_like_re():
    import re

    from cudaenv.core.lazy import LazyPattern

    lazy = LazyPattern(r"^cuda-(\d+)\.(\d+)$", re.IGNORECASE)
    assert lazy._compiled is None
    assert lazy.match("CUDA-12.1").groups() == ("12", "1")
    assert lazy._compiled is not None and lazy.sub("x", "cuda-1.2") == "x"


def test_version_key_is_the_one_reading_of_versions():
    from hypothesis import given, strategies as st

    from cudaenv.core.version import version_key

    assert version_key("12.1.105") == (12, 1, 105)
    assert version_key("12.10") > version_key("12.9")
    assert version_key("V13.0.88") == (13, 0, 88)
    assert version_key("12.4.131-1") == (12, 4, 131)
    assert version_key("2.13.0+cpu") == (2, 13, 0)
    assert version_key("") == () and version_key(None) == () and version_key("abc") == ()

    @given(st.text())
    def never_raises(text):
        assert all(isinstance(n, int) for n in version_key(text))

    never_raises()
