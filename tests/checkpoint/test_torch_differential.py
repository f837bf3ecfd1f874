"""The differential proof (issue 26): `checkpoint inspect` and `fix` against the real torch 2.13 on real torch.save
files, a corpus of crafted cases and published scanner bypasses, and seeded mutations of all of them (at least
5,000 per run: ``CUDAENV_MUTATIONS``, seed ``CUDAENV_MUTATION_SEED``). It fails on any ``safe`` verdict that runs
code under ``weights_only=False``, on any ``safe`` + ``weights_only: yes`` that torch refuses with
``weights_only=True``, on fix writing (exit 0) what torch refuses or loads as other data, and on any crash of the
reader. The figures (counts and agreement) are printed and, with ``CUDAENV_DIFF_REPORT=FILE``, written as JSON.
See ``tests/checkpoint_differential.py`` for how torch is asked (one long-lived child) and how code execution is
seen (marker files and a canary module only)."""

import collections
import json
import os
import random
import time

import pytest

torch = pytest.importorskip("torch")

import checkpoint_differential as D  # noqa: E402
from cudaenv.checkpoint.analyze import inspect_file  # noqa: E402
from cudaenv.core.errors import UserError  # noqa: E402

pytestmark = pytest.mark.torch

MUTATIONS = int(os.environ.get("CUDAENV_MUTATIONS", "5000"))  # of the real torch.save files (and the legacy tar)
CORPUS_MUTATIONS = int(os.environ.get("CUDAENV_CORPUS_MUTATIONS", "1000"))  # of the corpus, besides
SEED = int(os.environ.get("CUDAENV_MUTATION_SEED", "26"))


@pytest.fixture(scope="module")
def child():
    c = D.TorchChild()
    yield c
    c.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("differential")
    markers = folder / "markers"
    markers.mkdir()
    bases = D.real_bases(torch, str(folder))
    cases = D.corpus(str(markers), bases["sd_p2_zip.pt"])
    return folder, markers, bases, cases


def _clean(markers):
    for name in os.listdir(str(markers)):
        os.unlink(os.path.join(str(markers), name))


def _ran(answer, markers, mode="False"):
    """Whether code ran: a marker file, or a call of the canary."""
    found = bool(answer and (answer.get("markers") or answer.get("canary_" + mode)))
    for name in os.listdir(str(markers)):
        os.unlink(os.path.join(str(markers), name))
    return found


def test_real_torch_save_files_are_safe_and_judged_as_torch_loads_them(world, child):
    folder, markers, bases, _ = world
    for name, data in sorted(bases.items()):
        path = folder / ("base_" + name)
        path.write_bytes(data)
        r = inspect_file(str(path))
        answer = child.ask(path, [True], markers)
        loads = answer is not None and answer["True"] == "ok"
        if name.endswith("legacy_tar.pt"):
            assert r.verdict != "safe" or r.weights_only is not True, name  # weights_only refuses every tar
            assert not loads, answer
            continue
        assert r.verdict == "safe", (name, r.verdict, r.verdict_reasons)
        assert (r.weights_only is True) == loads, (name, r.weights_only, r.weights_only_reasons, answer)


def test_no_payload_of_the_corpus_runs_from_a_safe_verdict(world, child, tmp_path):
    """Every crafted case and published bypass: where torch.load(weights_only=False) runs the payload (it is real),
    cudaenv never says safe, and its weights_only yes is never one torch refuses. (Two data.pkl entries, the hostile
    one first, as stdlib zipfile writes them: torch reads the last one, as cudaenv does: safe, and nothing runs.)"""
    folder, markers, _, cases = world
    ran, problems, rows = {}, [], []
    for name, (data, source) in sorted(cases.items()):
        path = tmp_path / (name + ".pt")
        path.write_bytes(data)
        r = inspect_file(str(path))
        _clean(markers)
        answer = child.ask(path, [True], markers)
        refused = answer is None or answer["True"] != "ok"
        ran_true = _ran(answer, markers, "True")
        answer = child.ask(path, [False], markers)
        ran[name] = _ran(answer, markers)
        rows.append("  %-34s verdict %-12s weights_only %-5s torch wo=True %-7s wo=False ran %-5s (%s)" % (
            name, r.verdict, r.weights_only, "refuses" if refused else "LOADS", ran[name], source))
        if ran[name] and r.verdict == "safe":
            problems.append((name, "safe, but torch.load(weights_only=False) ran its payload", source))
        if r.weights_only is True and refused:
            problems.append((name, "weights_only yes, torch refuses", source))
        if ran_true:
            problems.append((name, "torch.load(weights_only=True) ran its payload", source))
    time.sleep(1)  # (a payload's shell may finish after torch returned)
    _clean(markers)
    print("\ncorpus: %d cases, payload ran under weights_only=False in %d\n%s" % (len(cases), sum(ran.values()), "\n".join(rows)))
    assert not problems, problems
    # the payloads are real: they run under weights_only=False (a few need what torch fails on first)
    assert sum(ran.values()) >= len(cases) - 4, ran


def test_mutations_of_real_files_and_the_corpus(world, child, tmp_path):
    folder, markers, bases, cases = world
    rng = random.Random(SEED)
    real = [(n, d) for n, d in sorted(bases.items())]
    crafted = [(n, d) for n, (d, _) in sorted(cases.items())]
    stats = collections.Counter()
    by_base = collections.Counter()
    failures = []
    path = tmp_path / "mutant.pt"
    fixed = tmp_path / "fixed.pt"
    from cudaenv.checkpoint.fix import Options, fix_checkpoint

    for i in range(MUTATIONS + CORPUS_MUTATIONS):
        seeds = real if i < MUTATIONS else crafted
        base_name, base = seeds[rng.randrange(len(seeds))]
        data, how = D.mutate(base, rng)
        path.write_bytes(data)
        by_base[base_name[:-3] if base_name in bases else "corpus"] += 1
        try:
            r = inspect_file(str(path))
        except Exception as exc:  # noqa: BLE001 - the reader must never crash
            failures.append(("inspect raised", base_name, how, repr(exc)))
            _keep(data, tmp_path, i)
            continue
        stats["verdict " + str(r.verdict)] += 1
        safe = r.verdict == "safe"
        modes = [True, False] if safe else [True]
        _clean(markers)
        answer = child.ask(path, modes, markers, digest=safe)
        if answer is None:
            stats["torch no answer"] += 1
            continue
        torch_loads = answer["True"] == "ok"
        said = r.weights_only is True
        stats["weights_only agree" if said == torch_loads else "weights_only disagree"] += 1
        if said and not torch_loads:
            stats["cudaenv yes, torch refuses"] += 1
        if torch_loads and not said:
            stats["cudaenv no, torch loads"] += 1
        if _ran(answer, markers, "True"):
            failures.append(("code ran under weights_only=True", base_name, how, r.verdict))
        if not safe:
            continue
        if answer.get("canary_False") or answer.get("markers"):
            failures.append(("safe, but code ran under weights_only=False", base_name, how, answer))
            _keep(data, tmp_path, i)
        _ran(answer, markers)
        if said and not torch_loads:
            failures.append(("safe and weights_only yes, torch refuses", base_name, how, answer["True"]))
            _keep(data, tmp_path, i)
        if said and torch_loads:  # fix: a rewrite of it loads in torch, as the same data
            if fixed.exists():
                fixed.unlink()
            try:
                fix_checkpoint(None, str(path), str(fixed), Options("cpu"), None)
            except UserError:
                stats["fix refused"] += 1
                continue
            stats["fix wrote"] += 1
            after = child.ask(fixed, [True], markers, digest=True)
            if after is None or after["True"] != "ok":
                failures.append(("fix wrote what torch refuses", base_name, how, after))
                _keep(data, tmp_path, i)
            elif after.get("digest_True") != answer.get("digest_True"):
                failures.append(("fix changed the data", base_name, how))
                _keep(data, tmp_path, i)
    stats["mutations of real files"] = MUTATIONS
    stats["mutations of the corpus"] = CORPUS_MUTATIONS
    summary = {"seed": SEED, "counts": dict(stats), "by_base": dict(by_base), "failures": len(failures),
               "failure_kinds": dict(collections.Counter(f[0] for f in failures)),
               "torch_restarts": child.restarts}
    print("\ndifferential: " + json.dumps(summary, sort_keys=True))
    if os.environ.get("CUDAENV_DIFF_REPORT"):
        with open(os.environ["CUDAENV_DIFF_REPORT"], "w") as fh:
            json.dump(dict(summary, failure_list=[list(map(str, f)) for f in failures[:200]]), fh, indent=1)
    assert not failures, failures[:10]


def _keep(data, tmp_path, i):
    """A failing mutant, kept for the report (CUDAENV_DIFF_KEEP=FOLDER)."""
    keep = os.environ.get("CUDAENV_DIFF_KEEP")
    if keep:
        os.makedirs(keep, exist_ok=True)
        with open(os.path.join(keep, "mutant-%05d.pt" % i), "wb") as fh:
            fh.write(data)
