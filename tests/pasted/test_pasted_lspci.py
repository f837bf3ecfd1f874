"""A pasted lspci in `cudaenv explain`: rev ff and a PCIe link below what the GPU can run become the doctor's findings
(tests/recorded/lspci-*.txt), with the facts line saying what was read."""

from builders import recorded
from cudaenv.pasted import paste_findings, read_facts
from cudaenv.render.pasted import fact_lines


def found(name):
    facts = read_facts(recorded(name))
    return facts, {f.id: f for f in paste_findings(facts)}


def test_rev_ff_names_both_causes():
    facts, f = found("lspci-gtx970m-rev-ff.txt")
    assert facts.sources == ("lspci",) and "lspci, 01:00.0: NVIDIA Corporation GM204M [GeForce GTX 970M] (rev ff)" in fact_lines(facts)
    g = f["gpu-pci-unreadable"]
    assert g.severity == "warning" and "hybrid graphics" in g.detail and "fell off the bus" in g.detail
    assert g.fix[0].startswith("cat /sys/bus/pci/devices/0000:01:00.0/power/runtime_status")


def test_lanes_lost_is_a_warning_and_speed_alone_an_info():
    _, f = found("lspci-vv-width-x8-constructed.txt")
    w = f["gpu-pcie-link-downgraded"]
    assert w.severity == "warning" and "da:00.0 (NVIDIA Corporation GA100 [A100 SXM4 40GB]): 16 GT/s x8 of 16 GT/s x16" in w.detail
    assert w.fix[1] == "sudo lspci -vv -s da:00.0 | grep -E 'LnkCap|LnkSta'"
    _, f = found("lspci-vv-rtx-a4000-link-geerlingguy692.txt")
    i = f["gpu-pcie-link-downgraded"]
    assert i.severity == "info" and "the GPU: 2.5 GT/s x16 of 16 GT/s x16" in i.detail and "normal at idle" in i.detail
    _, f = found("lspci-vv-a100-hwloc653.txt")
    assert not {"gpu-pcie-link-downgraded", "gpu-pci-unreadable"} & set(f)
