"""The RPC-level client: object ids, SAI clears as baselines, holds, watermark and pool reads.

Unit tests feed it canned lossless.v1 replies through a recording fake of the gRPC stub (the logic under test
is the client's); the live tests use conftest.py's switchd.
"""

import pytest

import lossless
from lossless.v1 import switch_pb2 as pb
from lossless_sai import layout
from lossless_sai.client import Client, SaiShimError
from lossless_sai.switch_sai_thrift import sai_headers as h
from lossless_sai.switch_sai_thrift import ttypes as t

NAMES = ["Ethernet8", "Ethernet0", "Ethernet4"]  # deliberately unsorted: the client orders them naturally


class FakeStub:
    def __init__(self):
        self.tx_ok = {n: 0 for n in NAMES}
        self.holds = []
        self.cleared = []

    def GetCounters(self, req, timeout=None):
        ports = []
        for n in NAMES:
            p = pb.PortCounters(name=n, tx_ok=self.tx_ok[n])
            for i in range(8):
                p.queues.add(packets=10 * self.tx_ok[n] + i)
                p.pgs.add(packets=100 + i, dropped_packets=200 + i)
                p.pfc.add()
                p.queue_depth.append(0)
                p.queue_occupancy_bytes.append(4000 + i)
                p.pg_occupancy_bytes.append(5000 + i)
            ports.append(p)
        return pb.GetCountersResponse(ports=ports)

    def GetWatermarks(self, req, timeout=None):
        if req.clear:
            self.cleared.append(list(req.clear_tables))
        ports = [pb.PortWatermarks(name=n, pg_shared_bytes=[1000 + i for i in range(8)],
                                   pg_headroom_bytes=[2000 + i for i in range(8)],
                                   queue_shared_bytes=[3000 + i for i in range(8)]) for n in NAMES]
        pools = [pb.PoolWatermarks(name="ingress_lossless_pool", shared_bytes=7, headroom_bytes=8),
                 pb.PoolWatermarks(name="egress_lossy_pool", shared_bytes=5, headroom_bytes=0)]
        return pb.GetWatermarksResponse(ports=ports, pools=pools)

    def SetHold(self, req, timeout=None):
        self.holds.append((req.port, req.HasField("queue"), req.hold))
        return pb.SetHoldResponse()


@pytest.fixture
def fake():
    return FakeStub()


def test_ports_are_numbered_in_natural_name_order(fake):
    c = Client(fake)
    assert c.sai_thrift_get_port_id_by_front_port("Ethernet0") == layout.port_oid(0)
    assert c.sai_thrift_get_port_id_by_front_port("Ethernet8") == layout.port_oid(2)
    attrs = {a.id: a.value for a in c.sai_thrift_get_switch_attribute().attr_list}
    assert attrs[h.SAI_SWITCH_ATTR_PORT_NUMBER].u32 == 3
    assert attrs[h.SAI_SWITCH_ATTR_PORT_LIST].objlist.object_id_list == [layout.port_oid(i) for i in range(3)]
    with pytest.raises(SaiShimError, match="front port 'Ethernet99'"):
        c.sai_thrift_get_port_id_by_front_port("Ethernet99")


def test_port_attribute_lists_the_ports_queues_and_pgs(fake):
    attrs = {a.id: a.value.objlist.object_id_list for a in Client(fake).sai_thrift_get_port_attribute(layout.port_oid(1)).attr_list}
    assert attrs[h.SAI_PORT_ATTR_QOS_QUEUE_LIST] == [layout.queue_oid(1, q) for q in range(8)]
    assert attrs[h.SAI_PORT_ATTR_INGRESS_PRIORITY_GROUP_LIST] == [layout.pg_oid(1, g) for g in range(8)]


def test_port_and_queue_clears_are_baselines(fake):
    c = Client(fake)
    port = layout.port_oid(1)  # Ethernet4
    fake.tx_ok["Ethernet4"] = 50
    ids = [h.SAI_PORT_STAT_IF_OUT_UCAST_PKTS]
    assert c.sai_thrift_get_port_stats(port, ids, 1) == [50]
    c.sai_thrift_clear_port_all_stats(port)
    queue = layout.queue_oid(1, 3)
    c.sai_thrift_clear_queue_stats(queue, [h.SAI_QUEUE_STAT_PACKETS], 1)
    fake.tx_ok["Ethernet4"] = 57
    assert c.sai_thrift_get_port_stats(port, ids, 1) == [7]
    # queue packets in the fake are 10 * tx_ok + q: 573 now, 503 at the clear.
    assert c.sai_thrift_get_queue_stats(queue, [h.SAI_QUEUE_STAT_PACKETS], 1) == [70]
    # Another port is untouched by that clear.
    fake.tx_ok["Ethernet0"] = 9
    assert c.sai_thrift_get_port_stats(layout.port_oid(0), ids, 1) == [9]


def test_pg_and_watermark_reads(fake):
    c = Client(fake)
    pg = layout.pg_oid(2, 5)
    got = c.sai_thrift_get_pg_stats(pg, [h.SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES,
                                         h.SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES,
                                         h.SAI_INGRESS_PRIORITY_GROUP_STAT_PACKETS], 3)
    assert got == [2005, 1005, 105]
    assert c.sai_thrift_get_queue_stats(layout.queue_oid(0, 6), [h.SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES], 1) == [3006]
    assert c.sai_thrift_get_queue_stats(layout.queue_oid(0, 6), [h.SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES], 1) == [4006]
    assert c.sai_thrift_get_pg_stats(layout.pg_oid(1, 3), [h.SAI_INGRESS_PRIORITY_GROUP_STAT_CURR_OCCUPANCY_BYTES], 1) == [5003]
    with pytest.raises(SaiShimError, match="SAI_QUEUE_STAT_PACKETS_NOT_A_STAT|not served"):
        c.sai_thrift_get_queue_stats(layout.queue_oid(0, 6), [0x7fff_ffff], 1)


def test_buffer_pools_by_name_ordered_id(fake):
    c = Client(fake)
    oids = layout.pool_oids(["ingress_lossless_pool", "egress_lossy_pool"])
    ingress = oids["ingress_lossless_pool"]
    assert c.sai_thrift_get_buffer_pool_stats(ingress, [h.SAI_BUFFER_POOL_STAT_WATERMARK_BYTES]) == [7]
    assert c.sai_thrift_get_buffer_pool_stats(ingress, [h.SAI_BUFFER_POOL_STAT_XOFF_ROOM_WATERMARK_BYTES]) == [8]
    c.sai_thrift_clear_buffer_pool_stats(ingress, [h.SAI_BUFFER_POOL_STAT_WATERMARK_BYTES])
    assert fake.cleared == [[pb.WATERMARK_TABLE_BUFFER_POOL]]
    with pytest.raises(SaiShimError, match="buffer pool id 0x18000000000009"):
        c.sai_thrift_clear_buffer_pool_stats(layout.pool_oid(9), [h.SAI_BUFFER_POOL_STAT_WATERMARK_BYTES])
    assert len(fake.cleared) == 1  # an unknown pool clears nothing


def test_tx_enable_attribute_is_a_whole_port_hold(fake):
    c = Client(fake)
    off = t.sai_thrift_attribute_t(id=h.SAI_PORT_ATTR_PKT_TX_ENABLE, value=t.sai_thrift_attribute_value_t(booldata=0))
    on = t.sai_thrift_attribute_t(id=h.SAI_PORT_ATTR_PKT_TX_ENABLE, value=t.sai_thrift_attribute_value_t(booldata=1))
    c.sai_thrift_set_port_attribute(layout.port_oid(2), off)
    c.sai_thrift_set_port_attribute(layout.port_oid(2), on)
    assert fake.holds == [("Ethernet8", False, True), ("Ethernet8", False, False)]
    sched = t.sai_thrift_attribute_t(id=h.SAI_PORT_ATTR_QOS_SCHEDULER_PROFILE_ID,
                                     value=t.sai_thrift_attribute_value_t(oid=1))
    with pytest.raises(SaiShimError, match="SAI_PORT_ATTR_QOS_SCHEDULER_PROFILE_ID is not served"):
        c.sai_thrift_set_port_attribute(layout.port_oid(2), sched)


def test_object_ids_of_the_wrong_kind_are_refused(fake):
    c = Client(fake)
    with pytest.raises(SaiShimError, match="is not a"):
        c.sai_thrift_get_port_stats(layout.queue_oid(0, 1), [h.SAI_PORT_STAT_IF_OUT_OCTETS], 1)
    with pytest.raises(SaiShimError, match="no port 7"):
        c.sai_thrift_get_port_attribute(layout.port_oid(7))


def test_live_switchd_serves_the_client(switchd_socket):
    with lossless.connect("unix:" + switchd_socket) as sw:
        c = Client(sw.stub)
        names = c.port_names()
        assert len(names) == 32 and names[:3] == ["Ethernet0", "Ethernet4", "Ethernet8"]
        port = c.sai_thrift_get_port_id_by_front_port("Ethernet8")
        ids = [getattr(h, n) for n in layout.PORT_COUNTER_IDS]
        # An idle switch without interfaces: nothing sent, nothing dropped.
        assert c.sai_thrift_get_port_stats(port, ids, len(ids)) == [0] * 18
        off = t.sai_thrift_attribute_t(id=h.SAI_PORT_ATTR_PKT_TX_ENABLE, value=t.sai_thrift_attribute_value_t(booldata=0))
        on = t.sai_thrift_attribute_t(id=h.SAI_PORT_ATTR_PKT_TX_ENABLE, value=t.sai_thrift_attribute_value_t(booldata=1))
        assert c.sai_thrift_set_port_attribute(port, off) == 0
        assert c.sai_thrift_set_port_attribute(port, on) == 0
        # td3.yaml's pools, numbered in name order; watermarks of an idle switch are 0.
        pools = layout.pool_oids(p.name for p in sw.stub.GetWatermarks(pb.GetWatermarksRequest()).pools)
        assert "ingress_lossless_pool" in pools
        assert c.sai_thrift_get_buffer_pool_stats(pools["ingress_lossless_pool"],
                                                  [h.SAI_BUFFER_POOL_STAT_WATERMARK_BYTES]) == [0]
        assert c.sai_thrift_clear_buffer_pool_stats(pools["ingress_lossless_pool"],
                                                    [h.SAI_BUFFER_POOL_STAT_WATERMARK_BYTES]) == 0
