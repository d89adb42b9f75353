"""What the writer answers crosses to the gateway from its own process typed (ygg_server/writer/process.py), so
the loopback suite need not run every module on the "process" backend (tests/backends.py): a result type the
crossing does not know would fail to decode there and nowhere else."""

from __future__ import annotations

import re
from typing import get_args

from ygg_server.protocol import results
from ygg_server.writer import commands


def _all_subclasses(cls) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _all_subclasses(sub)
    return out


def test_every_result_type_is_in_the_union_the_writer_process_decodes():
    assert _all_subclasses(results._Result) == set(get_args(results.Result))


def test_every_command_kind_is_documented_with_its_answer():
    """writer/commands.py's table names each kind the writer takes, and what it is answered with."""
    listed = set(re.findall(r"^    ([a-z_]+) +\(", commands.__doc__, re.M))
    assert listed == commands.KINDS
