"""A pasted `nvidia-smi -q` (or a part of it) in `cudaenv explain`: its ECC, remapped rows and clock slowdowns become
the doctor's GPU condition findings, and the facts say what was read."""

from builders import recorded
from cudaenv.pasted import paste_findings, read_facts
from cudaenv.render.pasted import fact_lines


def test_a_pasted_remap_section_and_a_whole_q_output():
    facts = read_facts(recorded("smi-q-remapped-rows-uncorrectable-pending.txt"))
    assert facts.sources == ("nvidia-smi -q",) and facts.gpu_conditions[0].remapped_uncorrectable == 4
    assert "gpu-memory-repair-pending" in {f.id for f in paste_findings(facts)}
    assert "nvidia-smi -q, a GPU: a row remap pending" in fact_lines(facts)
    whole = read_facts(recorded("smi-q-a100-power-brake-constructed.txt"))
    ids = {f.id for f in paste_findings(whole)}
    assert {"gpu-ecc-uncorrectable", "gpu-clocks-slowdown", "gpu-memory-repair-pending"} <= ids
    assert whole.driver_version == "510.73.08"


def test_cli_explain_on_a_paste(cli, tmp_path):
    path = tmp_path / "q.txt"
    path.write_text(recorded("smi-q-a100-row-remap-pending.txt"))
    r = cli("explain", "--file", str(path), env={"PATH": "/nonexistent", "COLUMNS": "80"})
    assert "gpu-memory-repair-pending" in r.out and "nvidia-smi -r -i 00000000:10:1C.0" in " ".join(r.out.split())
