"""The short commands (`use`, `list`, `checkpoint inspect`, `doctor --quick`) run with Python's cyclic collector off (no collection
during their imports: a tenth of inspect's start-up budget), and main() turns it on again after them."""

import gc

import checkpoint_builders as cb
from cudaenv.cli import main


def test_checkpoint_inspect_runs_with_the_collector_off_and_main_turns_it_on_again(tmp_path, monkeypatch):
    import io

    from cudaenv.checkpoint import service

    seen = []
    real = service.inspect_service
    monkeypatch.setattr(service, "inspect_service", lambda *a, **k: seen.append(gc.isenabled()) or real(*a, **k))
    path = tmp_path / "m.pt"
    path.write_bytes(cb.torch_zip(cb.cnn()))
    assert gc.isenabled()
    code = main(["checkpoint", "inspect", str(path)], env={"PATH": ""}, out=io.StringIO(), err=io.StringIO())
    assert code in (0, 1) and seen == [False] and gc.isenabled()


def test_other_commands_keep_the_collector(monkeypatch):
    import io

    from cudaenv.commands import explain

    seen = []
    monkeypatch.setattr(explain, "run", lambda args, ctx: seen.append(gc.isenabled()) or 0)
    main(["explain", "CUDA out of memory"], env={"PATH": ""}, out=io.StringIO(), err=io.StringIO())
    assert seen == [True] and gc.isenabled()


def test_doctor_quick_runs_with_the_collector_off_and_the_full_doctor_with_it(monkeypatch):
    import io

    from cudaenv.diagnose import service

    seen = []
    monkeypatch.setattr(service, "doctor", lambda *a, **k: seen.append((k.get("quick"), gc.isenabled())) or 1 / 0)
    for argv in (["doctor", "--json", "--quick"], ["doctor", "--quick"], ["doctor", "--json"], ["doctor", "--", "--quick"]):
        try:
            main(argv, env={"PATH": ""}, out=io.StringIO(), err=io.StringIO())
        except (ZeroDivisionError, SystemExit):
            pass
        assert gc.isenabled()
    assert seen == [(True, False), (True, False), (False, True)]  # the last: argparse refuses the stray word
