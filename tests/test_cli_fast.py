"""The hot-path argument parser (`use`, `list`) agrees with argparse, and falls back to it for anything odd."""

from cudaenv.cli import parse_simple

OPTIONS = {"--off": ("off", False), "--shell": ("shell", True), "--timeout": ("timeout", True)}


def test_reads_flags_values_and_one_positional():
    args = parse_simple(["12.1", "--shell", "fish", "--timeout=2"], OPTIONS, "version")
    assert (args.version, args.shell, args.timeout, args.off) == ("12.1", "fish", 2.0, False)
    assert parse_simple(["--off"], OPTIONS, "version").off is True


def test_anything_unusual_falls_back_to_argparse():
    for argv in (["--help"], ["-h"], ["12.1", "11.8"], ["--shell"], ["--bogus"], ["--timeout", "x"], ["--timeout", "0"],
                 ["--off=1"]):
        assert parse_simple(argv, OPTIONS, "version") is None, argv


def test_fast_path_errors_still_come_from_argparse(cli):
    result = cli("use", "--bogus")
    assert result.code == 2 and "unrecognized arguments: --bogus" in result.err and result.out == ""
    result = cli("list", "--timeout", "0")
    assert result.code == 2 and "more than 0" in result.err
