"""The RPC-level client the saitests hold as self.client / src_client / dst_client: the `sai_thrift_*`
methods of SAI's switch_sai_rpc.Client that sonic-mgmt's switch.py (and DscpMappingPB directly) call,
answered from one switchd over gRPC (docs/sonic-mgmt-shim.md sections 3 and 6).

Lossless counters never clear; SAI clears are baselines kept here and subtracted. Watermark clears go to the
switch (a watermark restarts from the current occupancy, which a baseline cannot express).
"""

import re

from lossless.v1 import switch_pb2 as pb
from lossless_sai import layout
from lossless_sai.switch_sai_thrift import sai_headers as h
from lossless_sai.switch_sai_thrift import ttypes as t

_NAME_OF_ID = {getattr(h, name): name for name in h.__all__}


class SaiShimError(Exception):
    pass


def natural_key(name):
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", name)]


def _objlist(attr_id, oids):
    value = t.sai_thrift_attribute_value_t(objlist=t.sai_thrift_object_list_t(count=len(oids), object_id_list=oids))
    return t.sai_thrift_attribute_t(id=attr_id, value=value)


class Client:
    """One switch. `stub` is a lossless.v1 Switch stub (lossless.Switch(...).stub)."""

    def __init__(self, stub, timeout_s=10.0):
        self.stub = stub
        self.timeout_s = timeout_s
        self._port_base = {}   # port index -> {SAI stat name: value at clear}
        self._queue_base = {}  # (port index, queue) -> packets at clear
        self._ports = None

    # ---- reads from the switch -------------------------------------------------------------------

    def _counters(self):
        return self.stub.GetCounters(pb.GetCountersRequest(), timeout=self.timeout_s).ports

    def _watermarks(self, clear_tables=None):
        req = pb.GetWatermarksRequest(clear=clear_tables is not None, clear_tables=clear_tables or [])
        return self.stub.GetWatermarks(req, timeout=self.timeout_s)

    def port_names(self):
        """The switch's ports in natural name order: index i is port OID layout.port_oid(i)."""
        if self._ports is None:
            self._ports = sorted((p.name for p in self._counters()), key=natural_key)
        return self._ports

    def _port_index(self, oid, kinds):
        kind, index, sub = layout.decode_oid(oid)
        if kind not in kinds:
            raise SaiShimError("SAI object id 0x%x is not a %s" % (oid, " or ".join(str(k) for k in kinds)))
        if index >= len(self.port_names()):
            raise SaiShimError("SAI object id 0x%x: no port %d (the switch has %d)" % (oid, index, len(self._ports)))
        return index, sub

    def _port(self, index):
        name = self.port_names()[index]
        for p in self._counters():
            if p.name == name:
                return p
        raise SaiShimError("port %s is gone from the switch's counters" % name)

    def _port_wm(self, index):
        name = self.port_names()[index]
        for p in self._watermarks().ports:
            if p.name == name:
                return p
        raise SaiShimError("port %s has no watermarks" % name)

    @staticmethod
    def _names(counter_ids):
        try:
            return [_NAME_OF_ID[i] for i in counter_ids]
        except KeyError as e:
            raise SaiShimError("SAI statistic id %r is not served by the Lossless shim" % (e.args[0],))

    # ---- switch and port attributes ---------------------------------------------------------------

    def sai_thrift_get_switch_attribute(self):
        oids = [layout.port_oid(i) for i in range(len(self.port_names()))]
        number = t.sai_thrift_attribute_t(id=h.SAI_SWITCH_ATTR_PORT_NUMBER,
                                          value=t.sai_thrift_attribute_value_t(u32=len(oids)))
        attrs = [number, _objlist(h.SAI_SWITCH_ATTR_PORT_LIST, oids)]
        return t.sai_thrift_attribute_list_t(attr_list=attrs, attr_count=len(attrs))

    def sai_thrift_get_port_list_by_front_port(self):
        return _objlist(h.SAI_SWITCH_ATTR_PORT_LIST, [layout.port_oid(i) for i in range(len(self.port_names()))])

    def sai_thrift_get_port_id_by_front_port(self, name):
        try:
            return layout.port_oid(self.port_names().index(name))
        except ValueError:
            raise SaiShimError("front port %r: the switch has no such port (ports: %s ...)"
                               % (name, ", ".join(self.port_names()[:4])))

    def sai_thrift_get_port_attribute(self, port_oid):
        index, _ = self._port_index(port_oid, [layout.SAI_OBJECT_TYPE_PORT])
        attrs = [_objlist(h.SAI_PORT_ATTR_QOS_QUEUE_LIST, [layout.queue_oid(index, q) for q in range(layout.NUM_QUEUES)]),
                 _objlist(h.SAI_PORT_ATTR_INGRESS_PRIORITY_GROUP_LIST,
                          [layout.pg_oid(index, g) for g in range(layout.NUM_PGS)])]
        return t.sai_thrift_attribute_list_t(attr_list=attrs, attr_count=len(attrs))

    def sai_thrift_set_port_attribute(self, port_oid, attr):
        index, _ = self._port_index(port_oid, [layout.SAI_OBJECT_TYPE_PORT])
        if attr.id == h.SAI_PORT_ATTR_PKT_TX_ENABLE:
            # sai_thrift_port_tx_disable/enable: hold or release the port's egress.
            self.stub.SetHold(pb.SetHoldRequest(port=self.port_names()[index], hold=not attr.value.booldata),
                              timeout=self.timeout_s)
            return 0
        if attr.id == h.SAI_PORT_ATTR_ADMIN_STATE and attr.value.booldata:
            return 0  # switch_init brings every port up; the profile already has them up
        raise SaiShimError("port attribute %s is not served by the Lossless shim" % _NAME_OF_ID.get(attr.id, attr.id))

    def sai_thrift_set_switch_attribute(self, attr):
        if attr.id in (h.SAI_SWITCH_ATTR_SRC_MAC_ADDRESS, h.SAI_SWITCH_ATTR_CREDIT_WD):
            return 0  # the router MAC comes from the profile; there is no credit watchdog to toggle
        raise SaiShimError("switch attribute %s is not served by the Lossless shim" % _NAME_OF_ID.get(attr.id, attr.id))

    # ---- statistics -------------------------------------------------------------------------------

    def sai_thrift_get_port_stats(self, port_oid, counter_ids, number_of_counters=None):
        index, _ = self._port_index(port_oid, [layout.SAI_OBJECT_TYPE_PORT])
        port = self._port(index)
        base = self._port_base.get(index, {})
        return [layout.sai_stat(port, n) - base.get(n, 0) for n in self._names(counter_ids)]

    def sai_thrift_clear_port_all_stats(self, port_oid):
        index, _ = self._port_index(port_oid, [layout.SAI_OBJECT_TYPE_PORT])
        port = self._port(index)
        self._port_base[index] = {n: layout.sai_stat(port, n) for n in layout.PORT_COUNTER_IDS}
        return 0

    def sai_thrift_get_queue_stats(self, queue_oid, counter_ids, number_of_counters=None):
        index, q = self._port_index(queue_oid, [layout.SAI_OBJECT_TYPE_QUEUE])
        out = []
        for name in self._names(counter_ids):
            if name == "SAI_QUEUE_STAT_PACKETS":
                out.append(self._port(index).queues[q].packets - self._queue_base.get((index, q), 0))
            elif name == "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES":
                out.append(self._port_wm(index).queue_shared_bytes[q])
            elif name == "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES":
                out.append(self._port(index).queue_occupancy_bytes[q])
            else:
                raise SaiShimError("queue statistic %s is not served by the Lossless shim (docs/sonic-mgmt-shim.md "
                                   "section 5)" % name)
        return out

    def sai_thrift_clear_queue_stats(self, queue_oid, counter_ids, number_of_counters=None):
        index, q = self._port_index(queue_oid, [layout.SAI_OBJECT_TYPE_QUEUE])
        if "SAI_QUEUE_STAT_PACKETS" in self._names(counter_ids):
            self._queue_base[(index, q)] = self._port(index).queues[q].packets
        return 0

    def sai_thrift_get_pg_stats(self, pg_oid, counter_ids, number_of_counters=None):
        index, g = self._port_index(pg_oid, [layout.SAI_OBJECT_TYPE_INGRESS_PRIORITY_GROUP])
        names = self._names(counter_ids)
        port = self._port(index) if any(not n.endswith("WATERMARK_BYTES") for n in names) else None
        wm = self._port_wm(index) if any(n.endswith("WATERMARK_BYTES") for n in names) else None
        out = []
        for name in names:
            if name == "SAI_INGRESS_PRIORITY_GROUP_STAT_PACKETS":
                out.append(port.pgs[g].packets)
            elif name == "SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS":
                out.append(port.pgs[g].dropped_packets)
            elif name == "SAI_INGRESS_PRIORITY_GROUP_STAT_CURR_OCCUPANCY_BYTES":
                out.append(port.pg_occupancy_bytes[g])
            elif name == "SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES":
                out.append(wm.pg_shared_bytes[g])
            elif name == "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES":
                out.append(wm.pg_headroom_bytes[g])
            else:
                raise SaiShimError("PG statistic %s is not served by the Lossless shim (docs/sonic-mgmt-shim.md "
                                   "section 5)" % name)
        return out

    def _pool(self, pool_oid, pools):
        kind, n, _ = layout.decode_oid(pool_oid)
        if kind != layout.SAI_OBJECT_TYPE_BUFFER_POOL:
            raise SaiShimError("SAI object id 0x%x is not a buffer pool" % pool_oid)
        by_oid = {oid: name for name, oid in layout.pool_oids([p.name for p in pools]).items()}
        if pool_oid not in by_oid:
            raise SaiShimError("buffer pool id 0x%x: the switch has pools %s" % (pool_oid, sorted(by_oid.values())))
        return next(p for p in pools if p.name == by_oid[pool_oid])

    def sai_thrift_get_buffer_pool_stats(self, pool_oid, counter_ids):
        pool = self._pool(pool_oid, self._watermarks().pools)
        out = []
        for name in self._names(counter_ids):
            if name == "SAI_BUFFER_POOL_STAT_WATERMARK_BYTES":
                out.append(pool.shared_bytes)
            elif name == "SAI_BUFFER_POOL_STAT_XOFF_ROOM_WATERMARK_BYTES":
                out.append(pool.headroom_bytes)
            else:
                raise SaiShimError("buffer pool statistic %s is not served by the Lossless shim" % name)
        return out

    def sai_thrift_clear_buffer_pool_stats(self, pool_oid, counter_ids):
        self._pool(pool_oid, self._watermarks().pools)  # refuses an unknown pool before clearing anything
        tables = []
        names = self._names(counter_ids)
        if "SAI_BUFFER_POOL_STAT_WATERMARK_BYTES" in names:
            tables.append(pb.WATERMARK_TABLE_BUFFER_POOL)
        if "SAI_BUFFER_POOL_STAT_XOFF_ROOM_WATERMARK_BYTES" in names:
            tables.append(pb.WATERMARK_TABLE_HEADROOM_POOL)
        if tables:
            # Clears that table for every pool (the API clears by table): a superset of what was asked.
            self._watermarks(clear_tables=tables)
        return 0
