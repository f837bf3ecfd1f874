"""CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER read with CUDA's rules (as torch's _parse_visible_devices reads them)."""


from hypothesis import given, settings
from hypothesis import strategies as st

from builders import recorded
from cudaenv.parse.nvidia_smi import parse_query_csv as parse_smi_query_csv
from cudaenv.parse.visible_devices import parse_visible_devices, strtoul
from cudaenv.probes.visibility import probe_visibility
from cudaenv.model.snapshot import Gpu


FOUR = parse_smi_query_csv(recorded("smi-query-2080ti-x4.txt")).gpus  # four identical RTX 2080 Ti
MIXED = parse_smi_query_csv(recorded("smi-query-titanv-5880.txt")).gpus  # TITAN V + RTX 5880 Ada
ONE = FOUR[:1]
U = [g.uuid for g in FOUR]  # GPU-67a571b1..., GPU-3e34e62f..., GPU-2d540dd6..., GPU-80be5c9a...


def pairs(vd):
    return [(m.logical, m.physical) for m in vd.mapping]


def test_unset_is_every_gpu():
    vd = parse_visible_devices(None, FOUR)
    assert pairs(vd) == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert vd.cuda_visible_devices is None and vd.problems == () and vd.invalid_entry is None
    assert [m.uuid for m in vd.mapping] == U


def test_two_of_four():
    vd = parse_visible_devices("2,3", FOUR)
    assert pairs(vd) == [(0, 2), (1, 3)]
    assert vd.entries == ("2", "3") and vd.problems == ()


def test_index_past_the_only_gpu():
    vd = parse_visible_devices("1", ONE)
    assert vd.mapping == () and vd.invalid_entry == "1"
    assert vd.problems == ("entry '1' is out of range: this machine has 1 GPU (0..0), so it and every entry after it are ignored",)


def test_empty_and_blank_mean_no_gpu():
    for value in ("", "  "):
        vd = parse_visible_devices(value, FOUR)
        assert vd.mapping == () and vd.cuda_visible_devices == value
        assert vd.problems == ("CUDA_VISIBLE_DEVICES is set but empty: CUDA sees no GPU",)


def test_minus_one_hides_everything():
    vd = parse_visible_devices("-1", FOUR)
    assert vd.mapping == () and vd.invalid_entry == "-1"
    assert "negative ordinal" in vd.problems[0]


def test_first_invalid_entry_stops_the_list():
    vd = parse_visible_devices("0,2,-1,1", FOUR)
    assert pairs(vd) == [(0, 0), (1, 2)] and vd.invalid_entry == "-1"
    vd = parse_visible_devices("1,x,2", FOUR)
    assert pairs(vd) == [(0, 1)] and vd.invalid_entry == "x"
    vd = parse_visible_devices("3,,1", FOUR)
    assert pairs(vd) == [(0, 3)] and vd.invalid_entry == ""


def test_out_of_range_in_the_middle():
    vd = parse_visible_devices("0,7,1", FOUR)
    assert pairs(vd) == [(0, 0)] and vd.invalid_entry == "7"


def test_duplicate_makes_the_list_invalid():
    vd = parse_visible_devices("0,0", FOUR)
    assert vd.mapping == () and vd.invalid_entry == "0"
    assert "duplicate entry '0'" in vd.problems[0] and "sees no GPU" in vd.problems[0]
    # torch/CUDA look for repeats before trimming to the device count: 5,5 is a duplicate, not out of range
    assert parse_visible_devices("5,5", FOUR).problems[0].startswith("duplicate")
    # a duplicate after the first invalid entry is never reached
    assert pairs(parse_visible_devices("1,-1,1", FOUR)) == [(0, 1)]


def test_spaces_and_strtoul():
    assert pairs(parse_visible_devices(" 1 , 2 ", FOUR)) == [(0, 1), (1, 2)]
    vd = parse_visible_devices("1gpu2,2ampere", FOUR)  # torch's comment: equivalent to 1,2
    assert pairs(vd) == [(0, 1), (1, 2)]
    assert "read as 1" in vd.problems[0]
    assert strtoul("+3") == 3 and strtoul("-2") == -2 and strtoul("abc") == -1 and strtoul("") == -1


def test_gpu_uuids_and_unique_prefixes():
    vd = parse_visible_devices("%s,%s" % (U[3], U[1]), FOUR)
    assert pairs(vd) == [(0, 3), (1, 1)] and [m.uuid for m in vd.mapping] == [U[3], U[1]]
    vd = parse_visible_devices("GPU-2d5,GPU-67a5", FOUR)
    assert pairs(vd) == [(0, 2), (1, 0)] and vd.problems == ()


def test_ambiguous_and_unknown_prefix():
    gpus = (Gpu(0, "A", "GPU-abc-1"), Gpu(1, "A", "GPU-abd-2"), Gpu(2, "A", "GPU-ffe-3"))
    vd = parse_visible_devices("GPU-ff,GPU-ab,GPU-abc", gpus)
    assert pairs(vd) == [(0, 2)] and vd.invalid_entry == "GPU-ab"
    assert "ambiguous" in vd.problems[0]
    vd = parse_visible_devices("GPU-12", gpus)
    assert vd.mapping == () and vd.problems == ("entry 'GPU-12' matches no GPU: it and every entry after it are ignored",)


def test_uuid_duplicates():
    assert parse_visible_devices("%s,%s" % (U[0], U[0]), FOUR).mapping == ()
    vd = parse_visible_devices("GPU-67a5,%s" % U[0], FOUR)  # two spellings of one GPU
    assert vd.mapping == () and "second time" in vd.problems[0]


def test_mixed_kinds_stop_at_the_change():
    vd = parse_visible_devices("%s,1" % U[2], FOUR)
    assert pairs(vd) == [(0, 2)] and vd.invalid_entry == "1"
    vd = parse_visible_devices("1,%s" % U[2], FOUR)
    assert pairs(vd) == [(0, 1)] and vd.invalid_entry == U[2]


def test_mig_devices_map_to_their_parent():
    gpus = (Gpu(0, "NVIDIA A100-SXM4-80GB", "GPU-aaa"), Gpu(1, "NVIDIA A100-SXM4-80GB", "GPU-bbb", mig_uuids=("MIG-111", "MIG-222")))
    vd = parse_visible_devices("MIG-222", gpus)
    assert [(m.logical, m.physical, m.uuid) for m in vd.mapping] == [(0, 1, "MIG-222")]
    assert parse_visible_devices("MIG-3", gpus).invalid_entry == "MIG-3"
    vd = parse_visible_devices("MIG-111", FOUR)  # no MIG device known: cannot check, says so
    assert vd.mapping == () and vd.invalid_entry is None and "MIG entries cannot be checked" in vd.problems[0]


def test_uuids_without_known_uuids_are_not_called_invalid():
    banner_gpus = (Gpu(0, "NVIDIA B200"), Gpu(1, "NVIDIA B200"))  # rows from the nvidia-smi table carry no UUID
    vd = parse_visible_devices("GPU-8a1", banner_gpus)
    assert vd.mapping == () and vd.invalid_entry is None and "cannot be checked" in vd.problems[0]


def test_different_models_warn_about_the_order():
    vd = parse_visible_devices(None, MIXED)
    assert pairs(vd) == [(0, 0), (1, 1)]
    assert len(vd.problems) == 1 and [p.kind for p in vd.issues] == ["order-differs"] and "NVIDIA TITAN V" in vd.problems[0]
    assert "may not be nvidia-smi's GPU" in vd.problems[0]
    assert [p.kind for p in parse_visible_devices("1", MIXED, "FASTEST_FIRST").issues] == ["order-differs"]
    assert parse_visible_devices("1", MIXED, "PCI_BUS_ID").problems == ()
    assert parse_visible_devices(None, FOUR).problems == ()  # same model: both orders agree
    # UUIDs name the GPU itself: the order question does not arise
    assert parse_visible_devices(MIXED[1].uuid, MIXED).problems == ()


def test_unknown_device_order_value():
    vd = parse_visible_devices("0", FOUR, "PCI")
    assert vd.device_order == "PCI" and "not a value CUDA knows" in vd.problems[0]


def test_no_gpu_known():
    vd = parse_visible_devices("0,1", ())
    assert vd.mapping == () and vd.problems == () and vd.entries == ("0", "1")
    assert parse_visible_devices("0,0", ()).invalid_entry == "0"


def test_probe_reads_the_host_environment(fake_root):
    host = fake_root.host(env={"CUDA_VISIBLE_DEVICES": "3,1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    vd = probe_visibility(host, FOUR)
    assert (vd.cuda_visible_devices, vd.device_order, pairs(vd)) == ("3,1", "PCI_BUS_ID", [(0, 3), (1, 1)])
    assert probe_visibility(fake_root.host(), FOUR).cuda_visible_devices is None


entry = st.one_of(
    st.integers(-3, 9).map(str),
    st.sampled_from(["GPU-", "GPU-67a", "GPU-3e3", "GPU-2d5", "GPU-8", "MIG-1", "MIG-", "x", "", " 1", "2 ", "1gpu"] + U),
    st.text(max_size=6),
)
value_st = st.one_of(st.none(), st.text(max_size=30), st.lists(entry, max_size=7).map(",".join))
gpus_st = st.sampled_from([(), ONE, FOUR, MIXED, FOUR[1:3]])


@settings(max_examples=400)
@given(value_st, gpus_st, st.one_of(st.none(), st.sampled_from(["PCI_BUS_ID", "FASTEST_FIRST", "x"])))
def test_any_value_gives_a_sound_mapping(value, gpus, order):
    vd = parse_visible_devices(value, gpus, order)
    physical = [m.physical for m in vd.mapping]
    assert len(physical) == len(set(physical)), vd
    assert set(physical) <= {g.index for g in gpus}, vd
    assert [m.logical for m in vd.mapping] == list(range(len(vd.mapping)))
    assert len(vd.mapping) <= len(gpus)
    if value is not None and vd.invalid_entry is not None:
        assert vd.invalid_entry in vd.entries
