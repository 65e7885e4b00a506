"""Stand-in for sonic-mgmt's tests/saitests/py3/switch.py: switch_init, the port lists, and the sai_thrift_*
helpers the QoS tests call, with the same signatures and return shapes (docs/sonic-mgmt-shim.md section 3),
written on the RPC-level methods of lossless_sai.client.Client. Registered as `switch` by the launcher.
"""

import sys

import ptf.testutils as testutils

from lossless_sai import layout
from lossless_sai.switch_sai_thrift import sai_headers as h
from lossless_sai.switch_sai_thrift import ttypes as t

switch_inited = 0
# Keyed "src"/"dst", as in switch.py.
port_list = {}        # ptf port number -> port object id
sai_port_list = {}    # every port's object id
front_port_list = {}  # every port's object id, in front-port order


class ShimConfigError(Exception):
    pass


def _objects(client, port_oid, attr_id):
    for attr in client.sai_thrift_get_port_attribute(port_oid).attr_list:
        if attr.id == attr_id:
            return list(attr.value.objlist.object_id_list)
    return []


def _queues(client, port_oid):
    return _objects(client, port_oid, h.SAI_PORT_ATTR_QOS_QUEUE_LIST)[:layout.NUM_QUEUES]


def _pgs(client, port_oid):
    return _objects(client, port_oid, h.SAI_PORT_ATTR_INGRESS_PRIORITY_GROUP_LIST)


def switch_init(clients):
    """Fills port_list/sai_port_list/front_port_list from sai_base_test.interface_to_front_mapping, once."""
    global switch_inited
    if switch_inited:
        return
    # The module the tests import as sai_base_test (the launcher registers the shim's), else the shim's.
    base = sys.modules.get("sai_base_test")
    if base is None:
        from lossless_sai import sai_base_test as base
    mapping = base.interface_to_front_mapping
    for target in ("src", "dst"):
        if target == "dst" and ("dst" not in clients or clients["dst"] is clients["src"]):
            port_list["dst"], sai_port_list["dst"], front_port_list["dst"] = (
                port_list["src"], sai_port_list["src"], front_port_list["src"])
            continue
        client = clients[target]
        attrs = {a.id: a.value for a in client.sai_thrift_get_switch_attribute().attr_list}
        sai_port_list[target] = list(attrs[h.SAI_SWITCH_ATTR_PORT_LIST].objlist.object_id_list)
        front_port_list[target] = list(client.sai_thrift_get_port_list_by_front_port().value.objlist.object_id_list)
        if target not in mapping:
            raise ShimConfigError("no %s port map: pass port_map_file_ini (ptf_port@EthernetN lines) or "
                                  "port_map_file in --test-params" % target)
        port_list[target] = {int(ptf_port): client.sai_thrift_get_port_id_by_front_port(front)
                             for ptf_port, front in mapping[target].items()}
    # switch.py reads sonic_asic_type here; a missing one fails the same way later in every test.
    if "sonic_asic_type" not in (testutils.test_params_get() or {}):
        raise ShimConfigError("test param sonic_asic_type is missing (sonic-mgmt's qos_sai_base.py always passes it)")
    switch_inited = 1


def sai_thrift_read_port_counters(client, asic_type, port):
    """(18 port counters in sai_qos_tests.py's index order, SAI_QUEUE_STAT_PACKETS of the 8 queues)."""
    ids = [getattr(h, name) for name in layout.PORT_COUNTER_IDS]
    counters = client.sai_thrift_get_port_stats(port, ids, len(ids))
    if asic_type == "mellanox":
        counters[-1] = 0  # switch.py reads no OUT_QLEN on mellanox and appends 0
    queues = [client.sai_thrift_get_queue_stats(q, [h.SAI_QUEUE_STAT_PACKETS], 1)[0] for q in _queues(client, port)]
    return counters, queues


def sai_thrift_read_port_watermarks(client, port):
    """(queue shared[8], PG shared[8], PG headroom[8]) in bytes."""
    queue_res = [client.sai_thrift_get_queue_stats(q, [h.SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES], 1)[0]
                 for q in _queues(client, port)]
    pg_shared, pg_headroom = [], []
    for pg in _pgs(client, port):
        headroom, shared = client.sai_thrift_get_pg_stats(
            pg, [h.SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES,
                 h.SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES], 2)
        pg_headroom.append(headroom)
        pg_shared.append(shared)
    return queue_res, pg_shared, pg_headroom


def _per_pg(client, port, stat):
    return [client.sai_thrift_get_pg_stats(pg, [stat], 1)[0] for pg in _pgs(client, port)]


def sai_thrift_read_pg_counters(client, port_id):
    return _per_pg(client, port_id, h.SAI_INGRESS_PRIORITY_GROUP_STAT_PACKETS)


def sai_thrift_read_pg_drop_counters(client, port_id):
    return _per_pg(client, port_id, h.SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS)


def sai_thrift_read_pg_shared_watermark(client, asic_type, port_id):
    return _per_pg(client, port_id, h.SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES)


def sai_thrift_read_pg_occupancy(client, port_id):
    return _per_pg(client, port_id, h.SAI_INGRESS_PRIORITY_GROUP_STAT_CURR_OCCUPANCY_BYTES)


def sai_thrift_read_queue_occupancy(client, target, port_id):
    """Takes a ptf port number (looked up in port_list[target]), as switch.py's does."""
    return [client.sai_thrift_get_queue_stats(q, [h.SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES], 1)[0]
            for q in _queues(client, port_list[target][port_id])]


def _pool_stat(client, pool_id, stat):
    values = client.sai_thrift_get_buffer_pool_stats(pool_id, [stat])
    return values[0] if values else None


def sai_thrift_read_buffer_pool_watermark(client, buffer_pool_id):
    return _pool_stat(client, buffer_pool_id, h.SAI_BUFFER_POOL_STAT_WATERMARK_BYTES)


def sai_thrift_read_headroom_pool_watermark(client, buffer_pool_id):
    return _pool_stat(client, buffer_pool_id, h.SAI_BUFFER_POOL_STAT_XOFF_ROOM_WATERMARK_BYTES)


def sai_thrift_clear_buffer_pool_watermark(client, buffer_pool_id):
    client.sai_thrift_clear_buffer_pool_stats(buffer_pool_id, [h.SAI_BUFFER_POOL_STAT_WATERMARK_BYTES])


def sai_thrift_clear_all_counters(client, target):
    for port in sai_port_list[target]:
        client.sai_thrift_clear_port_all_stats(port)
        for q in _queues(client, port):
            client.sai_thrift_clear_queue_stats(q, [h.SAI_QUEUE_STAT_PACKETS], 1)


def _tx(client, port_ids, target, enable):
    attr = t.sai_thrift_attribute_t(id=h.SAI_PORT_ATTR_PKT_TX_ENABLE,
                                    value=t.sai_thrift_attribute_value_t(booldata=1 if enable else 0))
    for ptf_port in port_ids:
        client.sai_thrift_set_port_attribute(port_list[target][ptf_port], attr)


def sai_thrift_port_tx_disable(client, asic_type, port_ids, target="dst"):
    # Every asic_type holds the port the same way here (mellanox's scheduler-profile path included).
    _tx(client, port_ids, target, enable=False)


def sai_thrift_port_tx_enable(client, asic_type, port_ids, target="dst"):
    _tx(client, port_ids, target, enable=True)


def sai_thrift_credit_wd_disable(client):
    return client.sai_thrift_set_switch_attribute(t.sai_thrift_attribute_t(
        id=h.SAI_SWITCH_ATTR_CREDIT_WD, value=t.sai_thrift_attribute_value_t(booldata=0)))


def sai_thrift_credit_wd_enable(client):
    return client.sai_thrift_set_switch_attribute(t.sai_thrift_attribute_t(
        id=h.SAI_SWITCH_ATTR_CREDIT_WD, value=t.sai_thrift_attribute_value_t(booldata=1)))


# sai_qos_tests.py imports these by name; they serve chassis (VOQ) and mellanox scheduler paths the shim
# does not model yet, and say so when called.
def _not_served(what):
    raise ShimConfigError("%s is not served by the Lossless shim (docs/sonic-mgmt-shim.md)" % what)


def sai_thrift_create_scheduler_profile(client, max_rate, algorithm=0):
    _not_served("sai_thrift_create_scheduler_profile (mellanox port hold by scheduler)")


def sai_thrift_get_voq_port_id(client, system_port_id):
    _not_served("sai_thrift_get_voq_port_id (VOQ chassis)")


def sai_thrift_read_port_voq_counters(client, voq_list):
    _not_served("sai_thrift_read_port_voq_counters (VOQ chassis)")
