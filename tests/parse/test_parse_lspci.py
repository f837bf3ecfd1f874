"""lspci outputs read for their NVIDIA GPUs (cudaenv.parse.lspci) on recorded real ones: plain, -nn, -k, -vv with tab
and space indents, rev ff (a laptop's switched-off GPU), link lines pasted alone; any text never raises, in linear
work."""

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear, recorded
from cudaenv.parse.lspci import parse_lspci


def test_rev_ff_and_the_other_devices_left_out():
    (gpu,) = parse_lspci(recorded("lspci-gtx970m-rev-ff.txt"))
    assert (gpu.address, gpu.name, gpu.revision) == ("01:00.0", "NVIDIA Corporation GM204M [GeForce GTX 970M]", "ff")
    (gpu,) = parse_lspci(recorded("lspci-rev-ff-gt540m-optimus.txt"))  # its audio function (rev ff too) is no GPU
    assert (gpu.name, gpu.revision, gpu.driver) == ("NVIDIA Corporation GF108M [GeForce GT 540M]", "ff", None)


def test_vv_with_ids_and_link_lines():
    (a100,) = parse_lspci(recorded("lspci-vv-a100-hwloc653.txt"))
    assert (a100.address, a100.name, a100.revision, a100.link_speed) == ("da:00.0", "NVIDIA Corporation GA100 [A100 SXM4 40GB]", "a1", None)
    (x8,) = parse_lspci(recorded("lspci-vv-width-x8-constructed.txt"))
    assert (x8.link_cap_speed, x8.link_cap_width, x8.link_speed, x8.link_width, x8.driver) == (16.0, 16, 16.0, 8, "nvidia")
    for name in ("lspci-vv-lnksta-downgraded-jan183.txt", "lspci-vv-rtx-a4000-link-geerlingguy692.txt"):
        (alone,) = parse_lspci(recorded(name))
        assert (alone.address, alone.link_cap_speed, alone.link_speed, alone.link_width) == (None, 16.0, 2.5, 16)


def test_another_vendors_link_lines_are_not_a_gpus():
    text = "01:00.0 Ethernet controller: Intel Corporation I210 (rev 03)\n\tLnkCap:\tPort #0, Speed 2.5GT/s, Width x1\n"
    assert parse_lspci(text) == ()
    assert parse_lspci("0000:41:00.0 VGA compatible controller [0300]: Device [10de:2684] (rev ff)")[0].revision == "ff"


@settings(max_examples=200)
@given(st.text())
def test_any_text_never_raises(text):
    for d in parse_lspci(text):
        assert d.revision is None or len(d.revision) == 2
    assert parse_lspci(b"x") == ()


def test_linear_on_hostile_text():
    assert_linear(parse_lspci, "01:00.0 3D controller: NVIDIA Corporation X (rev a1)\n\tLnkSta:\tSpeed 2.5GT/s, Width x16\n")
    assert_linear(parse_lspci, "01:00.0 3D controller: " + "[" * 50 + "\n")


def test_sysfs_link_values():
    from cudaenv.parse.lspci import parse_sysfs_link

    assert parse_sysfs_link("2.5 GT/s PCIe\n", "16.0 GT/s PCIe", "16\n", "16") == (2.5, 16, 16.0, 16)
    assert parse_sysfs_link("Unknown", None, "0", "x") is None
    assert parse_sysfs_link("8 GT/s", "", "", "") == (8.0, None, None, None)


@settings(max_examples=100)
@given(st.text(max_size=40), st.text(max_size=40))
def test_any_sysfs_values_never_raise(a, b):
    from cudaenv.parse.lspci import parse_sysfs_link

    parse_sysfs_link(a, b, a, b)
