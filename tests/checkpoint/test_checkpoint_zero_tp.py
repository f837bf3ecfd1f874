"""DeepSpeed ZeRO folders with model-parallel (tensor-parallel) ranks (issue 32): `checkpoint inspect` reports each
rank's files and checks them rank by rank (every rank's files present, the same ZeRO stage, partition_count and
mp_world_size), and `checkpoint fix` refuses to consolidate them, with or without --trust, saying why: the folder's
own zero_to_fp32.py reads mp_rank_00 only and stops at the extra optimizer files (recorded from a real DeepSpeed
0.19.8 save with four gloo ranks, two model-parallel: tests/recorded/deepspeed-zero-tp-layouts.txt). The files are
built as DeepSpeed writes them (tests/checkpoint_builders.py), with the recorded names and facts."""

import ast

import pytest

import checkpoint_builders as cb
from builders import recorded
from cudaenv.checkpoint import layout as L
from cudaenv.checkpoint.folder import folder_exit_code, inspect_folder


def recorded_tp(stage):
    """(files, {model file: (dp, mp)}, {optim file: (stage, partition_count)}, DeepSpeed globals, zero_to_fp32's
    error) of the recorded stage."""
    files, models, optims, globals_, error = [], {}, {}, [], None
    block = None
    for line in recorded("deepspeed-zero-tp-layouts.txt").splitlines():
        if line.startswith("== stage "):
            block = int(line.split()[-1])
            continue
        if block != stage:
            continue
        words = line.split()
        if line.startswith("model global:") or line.startswith("latest:"):
            continue
        if line.startswith("optim global: "):
            globals_.append(words[2:4])
        elif line.startswith("model "):
            models[words[1]] = (int(words[3]), int(words[5]))
        elif line.startswith("optim "):
            optims[words[1]] = (int(words[3]), ast.literal_eval(" ".join(words[5:])))
        elif line.startswith("zero_to_fp32: "):
            error = line[len("zero_to_fp32: "):]
        else:
            files.append(words[0])
    return files, models, optims, globals_, error


def tp_folder(tmp_path, stage=2, drop=(), change=None):
    """The recorded folder, each .pt built with the recorded facts (``change``: file name -> facts to use instead)."""
    files, models, optims, ds_globals, _ = recorded_tp(stage)
    facts = {**models, **optims, **(change or {})}

    def model(name):
        dp, mp = facts[name]
        return {"dp_world_size": dp, "mp_world_size": mp}

    def optimizer(name):
        return facts[name] + ("100",)

    return cb.zero_files(tmp_path / "ds", files, ds_globals, drop, model_facts=model, optim_facts=optimizer)


@pytest.mark.parametrize("stage", [2, 3])
def test_every_model_parallel_rank_is_reported_and_checked(tmp_path, cli, stage):
    r = inspect_folder(str(tp_folder(tmp_path, stage)))
    assert r.layout == "deepspeed-zero" and r.zero_stage == stage and r.world_size == 2 and r.mp_world_size == 2
    assert not r.missing and not r.inconsistencies
    ranks = sorted((f.rank, f.mp_rank) for f in r.files if f.role == "optimizer")
    assert ranks == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert len(r.model_files) == (2 if stage == 2 else 4)
    res = cli("checkpoint", "inspect", str(tmp_path / "ds"))
    flat = " ".join(res.out.split())
    assert "2 tensor-parallel ranks (mp_rank_XX)" in flat and "tensor-parallel rank 1" in flat
    assert "does not merge them (it reads mp_rank_00 only)" in flat and "cudaenv checkpoint fix --trust" not in flat


def test_a_missing_rank_file_of_the_second_model_parallel_rank_is_named(tmp_path):
    top = tp_folder(tmp_path, 2, drop=("global_step1/zero_pp_rank_1_mp_rank_01_optim_states.pt",
                                       "global_step1/mp_rank_01_model_states.pt"))
    r = inspect_folder(str(top))
    assert r.mp_world_size == 2  # (mp_rank_00's model states say 2)
    assert r.missing == ("global_step1/zero_pp_rank_1_mp_rank_01_optim_states.pt", "global_step1/mp_rank_01_model_states.pt")
    top = tp_folder(tmp_path / "s3", 3, drop=("global_step1/zero_pp_rank_0_mp_rank_01_model_states.pt",))
    assert inspect_folder(str(top)).missing == ("global_step1/zero_pp_rank_0_mp_rank_01_model_states.pt",)


def test_ranks_that_disagree_are_problems(tmp_path):
    top = tp_folder(tmp_path, 3, change={"zero_pp_rank_1_mp_rank_01_optim_states.pt": (2, 2),
                                         "zero_pp_rank_0_mp_rank_01_optim_states.pt": (3, 4),
                                         "zero_pp_rank_1_mp_rank_01_model_states.pt": (2, 3)})
    r = inspect_folder(str(top))
    text = " | ".join(r.inconsistencies)
    assert "disagree on the ZeRO stage" in text and "zero_pp_rank_1_mp_rank_01_optim_states.pt says 2" in text
    assert "disagree on the partition_count" in text and "zero_pp_rank_0_mp_rank_01_optim_states.pt says 4" in text
    assert "disagree on the mp_world_size" in text
    assert folder_exit_code(r) in (1, 3)  # (the DeepSpeed globals make it unsafe first)


def test_fix_refuses_a_tensor_parallel_zero_folder_even_with_trust_and_runs_nothing(tmp_path, cli):
    top = tp_folder(tmp_path, 2)
    _files, _m, _o, _g, error = recorded_tp(2)
    assert error.startswith("ValueError: Expected 2 of '*_optim_states.pt'") and "found 4 files" in error
    (top / "zero_to_fp32.py").write_text("open(__file__ + '.ran', 'w').close()\n")
    out = tmp_path / "one.pt"
    for extra in ((), ("--trust",)):
        res = cli("checkpoint", "fix", str(top), "-o", str(out), *extra, "--python", "/nonexistent/python")
        err = " ".join(res.err.split())
        assert res.code == 2 and "2 model-parallel (tensor-parallel) ranks" in err and "does not merge" in err, res.err
        # --trust's warning says what PATH is: a checkpoint folder (its files, a ZeRO folder's script), not "the file"
        assert ("warning: --trust: the checkpoint folder's files" in err and "zero_to_fp32.py is run" in err
                and "the file" not in err) == bool(extra)
        assert not out.exists() and not (top / "zero_to_fp32.py.ran").exists()


def test_mp_rank_names():
    assert L.zero_mp_rank("zero_pp_rank_3_mp_rank_12_optim_states.pt") == 12
    assert L.zero_mp_rank("bf16_zero_pp_rank_0_mp_rank_01_optim_states.pt") == 1
    assert L.zero_mp_rank("mp_rank_07_model_states.pt") == 7 and L.zero_mp_rank("latest") is None
    models, optims = L.zero_expected_files("bf16_", 2, 2, False)
    assert models == ["mp_rank_00_model_states.pt", "mp_rank_01_model_states.pt"]
    assert optims[-1] == "bf16_zero_pp_rank_1_mp_rank_01_optim_states.pt" and len(optims) == 4
