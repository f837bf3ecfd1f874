"""`cudaenv explain`'s service (cudaenv.pasted.service): what this machine adds comes back as data, and the JSON
carries it as ``context_data`` beside the ``context`` sentences (schema 1, additive)."""

from builders import recorded


def _env(machine, **extra):
    env = dict(machine.env, PATH=machine.bin.env_path, CUDAENV_ROOT=str(machine.root.path), PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def test_the_json_context_is_also_data(machine, cli):
    machine.smi(query=recorded("smi-query-2080ti-x4.txt"))
    r = cli("explain", "--json", "RuntimeError: CUDA error: invalid device ordinal (x.to('cuda:2'))",
            env=_env(machine, CUDA_VISIBLE_DEVICES="2,3"))
    assert r.code == 0, r
    data = r.json()
    assert "cuda:2 does not exist here (valid: cuda:0, cuda:1)." in data["context"]  # the sentences stay
    here = data["context_data"]["machine"]
    assert data["context_data"]["probe"] is None  # no --probe
    assert here["kinds"] == ["devices"] and here["missing"] == [2] and here["visible_setting"] == "2,3"
    assert [(g["index"], g["name"]) for g in here["visible"]] == [(2, "NVIDIA GeForce RTX 2080 Ti"), (3, "NVIDIA GeForce RTX 2080 Ti")]
    assert here["gpu_count"] == 4 and here["visible_count"] == 2


def test_offline_has_no_machine_data(machine, cli):
    r = cli("explain", "--offline", "--json", "RuntimeError: CUDA error: invalid device ordinal", env=_env(machine))
    assert r.code == 0 and r.json()["context_data"] == {"probe": None, "machine": None}


def test_the_outcome_decides_the_exit_code(cli):
    unknown = cli("explain", "--offline", "--json", "something else entirely")
    assert unknown.code == 1 and unknown.json()["recognised"] is False
    listed = cli("explain", "--list")
    assert listed.code == 0 and "invalid-device-ordinal " in listed.out
