"""SAI's list layouts and object ids from Lossless counters: the pure part of the shim (no I/O).

The layouts are those sonic-mgmt's tests/saitests/py3/switch.py returns and sai_qos_tests.py indexes
(EGRESS_DROP = 0 ... EGRESS_PORT_QLEN = 17); docs/sonic-mgmt-shim.md section 3 lists them with their
sources. Inputs are lossless.v1 messages (PortCounters, PortWatermarks, PoolWatermarks) or anything with the
same attributes.
"""

# sai_thrift_read_port_counters' first list, in its order. The same 18 slots for every asic_type: mellanox
# reads no IF_OUT_QLEN and appends 0 in its place; broadcom reads IN_DROPPED_PKTS apart and inserts it at 12.
PORT_COUNTER_IDS = (
    "SAI_PORT_STAT_IF_OUT_DISCARDS",
    "SAI_PORT_STAT_IF_IN_DISCARDS",
    "SAI_PORT_STAT_PFC_0_TX_PKTS",
    "SAI_PORT_STAT_PFC_1_TX_PKTS",
    "SAI_PORT_STAT_PFC_2_TX_PKTS",
    "SAI_PORT_STAT_PFC_3_TX_PKTS",
    "SAI_PORT_STAT_PFC_4_TX_PKTS",
    "SAI_PORT_STAT_PFC_5_TX_PKTS",
    "SAI_PORT_STAT_PFC_6_TX_PKTS",
    "SAI_PORT_STAT_PFC_7_TX_PKTS",
    "SAI_PORT_STAT_IF_OUT_OCTETS",
    "SAI_PORT_STAT_IF_OUT_UCAST_PKTS",
    "SAI_PORT_STAT_IN_DROPPED_PKTS",
    "SAI_PORT_STAT_OUT_DROPPED_PKTS",
    "SAI_PORT_STAT_IF_IN_UCAST_PKTS",
    "SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS",
    "SAI_PORT_STAT_IF_OUT_NON_UCAST_PKTS",
    "SAI_PORT_STAT_IF_OUT_QLEN",
)

NUM_QUEUES = 8
NUM_PGS = 8

# SAI object types (saitypes.h sai_object_type_t), carried in bits 48.. of an object id as SONiC's OIDs do.
SAI_OBJECT_TYPE_PORT = 1
SAI_OBJECT_TYPE_QUEUE = 21
SAI_OBJECT_TYPE_BUFFER_POOL = 24
SAI_OBJECT_TYPE_INGRESS_PRIORITY_GROUP = 26
_TYPE_SHIFT = 48


class LayoutError(ValueError):
    pass


def sai_stat(port, sai_id):
    """One SAI port statistic of a PortCounters, by its SAI name."""
    if sai_id.startswith("SAI_PORT_STAT_PFC_") and sai_id.endswith("_TX_PKTS"):
        return port.pfc[int(sai_id[len("SAI_PORT_STAT_PFC_")])].tx
    if sai_id == "SAI_PORT_STAT_IF_OUT_DISCARDS":
        return port.tx_drp
    if sai_id == "SAI_PORT_STAT_IF_IN_DISCARDS":
        return port.rx_drp
    if sai_id == "SAI_PORT_STAT_IF_OUT_OCTETS":
        return port.tx_bytes
    if sai_id == "SAI_PORT_STAT_IF_OUT_UCAST_PKTS":
        # tx_ok counts every frame sent; tx_non_ucast those to a group MAC.
        return port.tx_ok - port.tx_non_ucast
    if sai_id == "SAI_PORT_STAT_IN_DROPPED_PKTS":
        # Ingress buffer (admission) drops: the PGs' drops.
        return sum(pg.dropped_packets for pg in port.pgs)
    if sai_id == "SAI_PORT_STAT_OUT_DROPPED_PKTS":
        # Egress buffer drops: the queues' drops.
        return sum(q.dropped_packets for q in port.queues)
    if sai_id == "SAI_PORT_STAT_IF_IN_UCAST_PKTS":
        return port.rx_ok - port.rx_non_ucast
    if sai_id == "SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS":
        # Frames to a group (multicast, broadcast) MAC: sai_qos_tests forgives ingress drops only as far as
        # this grew, so it is the switch's real count.
        return port.rx_non_ucast
    if sai_id == "SAI_PORT_STAT_IF_OUT_NON_UCAST_PKTS":
        return port.tx_non_ucast
    if sai_id == "SAI_PORT_STAT_IF_OUT_QLEN":
        # Frames waiting in the port's egress queues now (SAI's unit is packets).
        return sum(port.queue_depth)
    raise LayoutError("SAI port statistic %r is not served by the Lossless shim" % (sai_id,))


def port_counter_list(port, asic_type):
    """sai_thrift_read_port_counters' first list (18 entries) for one PortCounters."""
    values = [sai_stat(port, sai_id) for sai_id in PORT_COUNTER_IDS]
    if asic_type == "mellanox":
        values[-1] = 0  # switch.py reads no IF_OUT_QLEN on mellanox and appends 0 instead
    return values


def _per_index(items, count, what):
    if len(items) < count:
        raise LayoutError("%s: %d entries, SAI layouts need %d" % (what, len(items), count))
    return list(items[:count])


def queue_packet_list(port):
    """sai_thrift_read_port_counters' second list: SAI_QUEUE_STAT_PACKETS of the 8 unicast queues."""
    return [q.packets for q in _per_index(port.queues, NUM_QUEUES, "%s queues" % port.name)]


def pg_list(port, field):
    """One value per PG, in PG order: field 'packets' (sai_thrift_read_pg_counters) or 'dropped_packets'
    (sai_thrift_read_pg_drop_counters)."""
    return [getattr(pg, field) for pg in _per_index(port.pgs, NUM_PGS, "%s PGs" % port.name)]


def port_watermarks(wm):
    """sai_thrift_read_port_watermarks' tuple for one PortWatermarks, in bytes:
    (queue shared[8], PG shared[8], PG headroom[8]) -- shared before headroom, as switch.py returns them."""
    return (
        _per_index(wm.queue_shared_bytes, NUM_QUEUES, "%s queue watermarks" % wm.name),
        _per_index(wm.pg_shared_bytes, NUM_PGS, "%s PG shared watermarks" % wm.name),
        _per_index(wm.pg_headroom_bytes, NUM_PGS, "%s PG headroom watermarks" % wm.name),
    )


# ---- object ids ------------------------------------------------------------------------------------

def port_oid(port_index):
    return SAI_OBJECT_TYPE_PORT << _TYPE_SHIFT | port_index


def queue_oid(port_index, queue):
    return SAI_OBJECT_TYPE_QUEUE << _TYPE_SHIFT | port_index << 8 | queue


def pg_oid(port_index, pg):
    return SAI_OBJECT_TYPE_INGRESS_PRIORITY_GROUP << _TYPE_SHIFT | port_index << 8 | pg


def pool_oid(pool_index):
    return SAI_OBJECT_TYPE_BUFFER_POOL << _TYPE_SHIFT | pool_index


def decode_oid(oid):
    """(SAI object type, port or pool index, queue/PG index or None) of an id made by the functions above."""
    if not isinstance(oid, int) or oid < 0:
        raise LayoutError("SAI object id %r: not one the Lossless shim hands out" % (oid,))
    kind = oid >> _TYPE_SHIFT
    low = oid & ((1 << _TYPE_SHIFT) - 1)
    if kind in (SAI_OBJECT_TYPE_PORT, SAI_OBJECT_TYPE_BUFFER_POOL):
        return kind, low, None
    if kind in (SAI_OBJECT_TYPE_QUEUE, SAI_OBJECT_TYPE_INGRESS_PRIORITY_GROUP):
        sub = low & 0xFF
        limit = NUM_QUEUES if kind == SAI_OBJECT_TYPE_QUEUE else NUM_PGS
        if sub >= limit:
            raise LayoutError("SAI object id 0x%x: index %d out of range" % (oid, sub))
        return kind, low >> 8, sub
    raise LayoutError("SAI object id 0x%x: object type %d is not one the Lossless shim hands out" % (oid, kind))


def pool_oids(pool_names):
    """{pool name: SAI object id}: pools numbered in name order (GetWatermarks lists them sorted), so the
    runner that writes buf_pool_roid and the shim that reads it agree without talking."""
    return {name: pool_oid(i) for i, name in enumerate(sorted(pool_names))}
