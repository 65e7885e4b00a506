"""The SAI list layouts the shim builds from Lossless counters.

The expected positions are sonic-mgmt's (sai_qos_tests.py's index constants, switch.py's append order:
docs/sonic-mgmt-shim.md section 3), written out here by hand; the inputs are canned lossless.v1 messages
whose every counter has a distinct value, so a slot fed from the wrong field shows up.
"""

import pytest

from lossless.v1 import switch_pb2 as pb
from lossless_sai import layout

# sai_qos_tests.py's names for the port counter slots.
EGRESS_DROP = 0
INGRESS_DROP = 1
PFC_PRIO_0 = 2
TRANSMITTED_OCTETS = 10
TRANSMITTED_PKTS = 11
INGRESS_PORT_BUFFER_DROP = 12
EGRESS_PORT_BUFFER_DROP = 13
RECEIVED_PKTS = 14
RECEIVED_NON_UC_PKTS = 15
TRANSMITTED_NON_UC_PKTS = 16
EGRESS_PORT_QLEN = 17


def canned_port():
    p = pb.PortCounters(name="Ethernet8", rx_ok=1001, rx_bytes=1002, rx_drp=1003, tx_ok=1004,
                        tx_bytes=1005, tx_drp=1006, rx_ovr=1007, rx_non_ucast=11, tx_non_ucast=13)
    for i in range(8):
        p.queues.add(packets=2000 + i, bytes=2100 + i, dropped_packets=2200 + i)
        p.pgs.add(packets=3000 + i, bytes=3100 + i, dropped_packets=3200 + i)
        p.pfc.add(rx=4000 + i, tx=4100 + i)
        p.queue_depth.append(5000 + i)
    return p


@pytest.mark.parametrize("asic_type", ["broadcom", "mellanox", "cisco-8000", "marvell-teralynx"])
def test_port_counter_slots(asic_type):
    values = layout.port_counter_list(canned_port(), asic_type)
    assert len(values) == 18
    assert values[EGRESS_DROP] == 1006
    assert values[INGRESS_DROP] == 1003
    # PFC TX per priority at pg + 2, as PFCtest indexes it.
    assert values[PFC_PRIO_0:PFC_PRIO_0 + 8] == [4100 + i for i in range(8)]
    assert values[TRANSMITTED_OCTETS] == 1005
    # SAI's UCAST slots exclude the frames to group MACs, which have slots of their own.
    assert values[TRANSMITTED_PKTS] == 1004 - 13
    assert values[INGRESS_PORT_BUFFER_DROP] == sum(3200 + i for i in range(8))
    assert values[EGRESS_PORT_BUFFER_DROP] == sum(2200 + i for i in range(8))
    assert values[RECEIVED_PKTS] == 1001 - 11
    assert values[RECEIVED_NON_UC_PKTS] == 11
    assert values[TRANSMITTED_NON_UC_PKTS] == 13
    # mellanox: switch.py reads no OUT_QLEN and appends 0 there.
    assert values[EGRESS_PORT_QLEN] == (0 if asic_type == "mellanox" else sum(5000 + i for i in range(8)))


def test_queue_and_pg_lists_are_in_index_order():
    p = canned_port()
    assert layout.queue_packet_list(p) == [2000 + i for i in range(8)]
    assert layout.pg_list(p, "packets") == [3000 + i for i in range(8)]
    assert layout.pg_list(p, "dropped_packets") == [3200 + i for i in range(8)]


def test_port_watermarks_order_is_queue_shared_pg_shared_pg_headroom():
    wm = pb.PortWatermarks(name="Ethernet8", pg_shared_bytes=[10 + i for i in range(8)],
                           pg_headroom_bytes=[20 + i for i in range(8)],
                           queue_shared_bytes=[30 + i for i in range(8)])
    q, pg_shared, pg_headroom = layout.port_watermarks(wm)
    assert q == [30 + i for i in range(8)]
    assert pg_shared == [10 + i for i in range(8)]
    assert pg_headroom == [20 + i for i in range(8)]


def test_short_lists_are_refused_with_the_port_named():
    p = pb.PortCounters(name="Ethernet4")
    p.queues.add(packets=1)
    with pytest.raises(layout.LayoutError, match="Ethernet4 queues: 1 entries"):
        layout.queue_packet_list(p)


def test_object_ids_round_trip_and_carry_sai_object_types():
    assert layout.port_oid(3) == 0x1000000000003  # SONiC prints port OIDs as oid:0x1000000000NNN
    assert layout.decode_oid(layout.port_oid(3)) == (layout.SAI_OBJECT_TYPE_PORT, 3, None)
    assert layout.decode_oid(layout.queue_oid(31, 7)) == (layout.SAI_OBJECT_TYPE_QUEUE, 31, 7)
    assert layout.decode_oid(layout.pg_oid(5, 3)) == (layout.SAI_OBJECT_TYPE_INGRESS_PRIORITY_GROUP, 5, 3)
    ids = {layout.port_oid(1), layout.queue_oid(0, 1), layout.pg_oid(0, 1), layout.pool_oid(1)}
    assert len(ids) == 4


def test_pool_oids_follow_name_order_whatever_the_input_order():
    names = ["ingress_lossless_pool", "egress_lossy_pool", "egress_lossless_pool"]
    oids = layout.pool_oids(names)
    assert oids == layout.pool_oids(list(reversed(names)))
    assert oids["egress_lossless_pool"] == layout.pool_oid(0)
    assert oids["ingress_lossless_pool"] == layout.pool_oid(2)
    # buf_pool_roid reaches the tests as a string they parse with int(x, 0).
    assert int(hex(oids["ingress_lossless_pool"]), 0) == oids["ingress_lossless_pool"]


@pytest.mark.parametrize("oid", [-1, "0x1", 7 << 48, layout.queue_oid(0, 9)])
def test_foreign_object_ids_are_refused(oid):
    with pytest.raises(layout.LayoutError, match="SAI object id"):
        layout.decode_oid(oid)
