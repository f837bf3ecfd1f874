"""A kernel log pasted into `cudaenv explain` (dmesg, journalctl -k): its Xids are facts, the doctor's gpu-xid finding
says what each means, and the seed's device-handle message is answered with what the log shows."""

from builders import recorded
from cudaenv.pasted import paste_findings, read_facts, snapshot_of
from cudaenv.render.pasted import render_pasted

SEED = recorded("smi-fail-gpu-lost.txt") + "\n$ sudo dmesg -T\n" + recorded("kernel-log-xid79-rtx5080.txt")


def test_the_log_beside_the_device_handle_message():
    facts = read_facts(SEED)
    assert facts.sources == ("kernel log",)
    assert [(g.code, g.count, g.pci) for g in facts.xids] == [(79, 1, ("0000:2b:00",))] and facts.fallen_off_bus == ("0000:2b:00.0",)
    assert snapshot_of(facts).health.log == "paste"
    (f,) = paste_findings(facts)
    assert (f.id, f.severity) == ("gpu-xid", "error")
    assert f.detail.startswith("The pasted kernel log shows: Xid 79 (GPU has fallen off the bus), once on 0000:2b:00")
    text = render_pasted(facts, (f,))
    assert "kernel log: Xid 79 on 0000:2b:00, once" in text and "kernel log: 0000:2b:00.0 fell off the bus" in text


def test_a_fallen_gpu_without_an_xid_still_is_a_finding():
    (f,) = paste_findings(read_facts(recorded("kernel-log-fallen-off-multiline.txt")))
    assert (f.id, f.severity, f.title) == ("gpu-xid", "error", "a GPU fell off the bus")
    assert "the GPU at 0000:b3:00.0 has fallen off the bus" in f.detail


def test_cli_explain_json_of_the_seeds_paste(cli):
    r = cli("explain", "--offline", "--json", SEED)
    data = r.json()
    assert data["match"]["id"] == "gpu-lost" and data["facts"]["xids"][0]["code"] == 79
    assert [f["id"] for f in data["findings"]] == ["gpu-xid"]
    assert any("dcgmi diag -r 1" in a for a in data["match"]["advice"])
    plain = cli("explain", "--offline", SEED).out
    assert "ERROR gpu-xid: the kernel log holds GPU faults (Xid 79)" in plain
