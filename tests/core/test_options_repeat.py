"""An ``Option(..., append=True, default=())`` (checkpoint fix's ``--strip-prefix``): argparse collects every value in order and
gives ``[]`` when the option is absent; the fast parser leaves such a command line to argparse."""

import argparse

from cudaenv.core.options import Option, add_options, parse_simple

OPTS = (Option("--strip-prefix", metavar="P", append=True, default=()), Option("--json"))


def test_argparse_collects_every_value_in_order():
    parser = argparse.ArgumentParser()
    add_options(parser, OPTS)
    assert parser.parse_args(["--strip-prefix", "_orig_mod.", "--strip-prefix", "module."]).strip_prefix == ["_orig_mod.", "module."]
    assert parser.parse_args([]).strip_prefix == []


def test_the_fast_parser_hands_a_repeated_option_to_argparse():
    assert parse_simple(["--strip-prefix", "module."], OPTS) is None
    assert vars(parse_simple(["--json"], OPTS)) == {"strip_prefix": (), "json": True}


def test_checkpoint_fix_declares_its_options():
    from cudaenv.commands import checkpoint

    from cudaenv.core.options import declare

    parser = argparse.ArgumentParser()
    declare(parser, checkpoint)
    args = parser.parse_args(["fix", "a.pt", "-o", "b.pt", "--strip-prefix", "_orig_mod.", "--strip-prefix", "module.",
                              "--map-location", "cpu"])
    assert (args.file, args.output, args.strip_prefix, args.map_location, args.in_place, args.trust) == \
        ("a.pt", "b.pt", ["_orig_mod.", "module."], "cpu", False, False)
