"""`verify --distributed`: a rank that only stopped because another failed (the child's Terminated and Orphaned
events) never becomes the run's error; that is decided from the event's type, not from the words of its message."""

import json

from builders import recorded
from cudaenv.host.process import CommandResult
from cudaenv.verify import distributed_result


def _orphaned_rank(rank):
    """A rank's events as cudaenv/_child/verify_dist.py writes them when torchrun went away (constructed from its
    emit() calls: start, then the Orphaned error, then done)."""
    events = [{"rank": rank, "local_rank": rank, "world_size": 2, "backend": "nccl", "pid": 5101, "event": "start"},
              {"stage": "all-reduce", "type": "Orphaned", "message": "torchrun went away; leaving", "event": "error"},
              {"ok": False, "event": "done"}]
    return "".join(json.dumps(e) + "\n" for e in events)


def test_an_orphaned_rank_is_not_the_cause():
    texts = {0: _orphaned_rank(0), 1: recorded("verify-dist-nccl-rank0-system-error.jsonl")}
    rep = distributed_result("p", "nccl", 2, texts, CommandResult(("python",), 1, "", "", None, 1.0, 120.0), 120)
    assert not rep.ok and rep.ranks[0].error.message == "torchrun went away; leaving"
    assert rep.error.id == "nccl-error"  # the rank that failed first, not the one that left after it
