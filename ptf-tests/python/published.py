"""sonic-mgmt's published figures for the shipped profiles: what the buffer tests expect.

The figures are in ../published.json, shared with the Rust catalog (ptf-tests/src/published.rs): per profile,
one block per sonic-mgmt qos_params entry (xoff_1, lossy_queue_1, ...) with sonic-mgmt's key names, the
upstream file and keys they come from ("source") and a note for every figure that is not a literal copy
("notes": derived with sonic-mgmt's arithmetic, or a test's default margin).
"""

import json
import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "published.json")

_cache = None


def _all():
    global _cache
    if _cache is None:
        with open(PATH) as f:
            _cache = json.load(f)
    return _cache


def figures(profile):
    """The figures of a profile (a dict with src_port, dst_port, cell_size, blocks, ...), or None."""
    p = _all().get(profile)
    return p if isinstance(p, dict) and "blocks" in p else None


def margin(block):
    """pkts_num_margin (or HdrmPoolSizeTest's `margin`)."""
    return block["pkts_num_margin"] if "pkts_num_margin" in block else block["margin"]


def cite(block, key):
    """Where `key`'s figure comes from: the block's source, and the note when it is not a literal copy."""
    note = block.get("notes", {}).get(key)
    return "%s; %s: %s" % (block["source"], key, note) if note else block["source"]


def window(figure, m):
    """A figure with the margin sonic-mgmt allows around it."""
    return "%d (exact)" % figure if m == 0 else "%d +- %d" % (figure, m)
