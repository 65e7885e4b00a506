"""The switch_sai_thrift stand-in: the names sai_qos_tests.py and switch.py use, as they use them."""

import subprocess
import sys
import os

import pytest

from lossless_sai import layout
from lossless_sai.switch_sai_thrift import sai_headers as h
from lossless_sai.switch_sai_thrift import ttypes as t

SHIM_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_attribute_structs_build_and_read_as_switch_py_does():
    # switch.py: sai_thrift_attribute_value_t(booldata=0) in an attribute_t(id=..., value=...) ...
    attr = t.sai_thrift_attribute_t(id=h.SAI_PORT_ATTR_PKT_TX_ENABLE, value=t.sai_thrift_attribute_value_t(booldata=0))
    assert attr.value.booldata == 0 and attr.value.oid is None
    # ... and reads port attributes as port_attr_list.attr_list[i].value.objlist.object_id_list.
    queues = [layout.queue_oid(0, q) for q in range(8)]
    reply = t.sai_thrift_attribute_list_t(attr_list=[t.sai_thrift_attribute_t(
        id=h.SAI_PORT_ATTR_QOS_QUEUE_LIST,
        value=t.sai_thrift_attribute_value_t(objlist=t.sai_thrift_object_list_t(count=8, object_id_list=queues)))])
    assert reply.attr_list[0].value.objlist.object_id_list == queues
    assert t.sai_thrift_ip_t(ip4="10.0.0.1") == t.sai_thrift_ip_t("10.0.0.1")


def test_unknown_struct_fields_are_refused_by_name():
    with pytest.raises(TypeError, match="sai_thrift_attribute_value_t has no field bool_data"):
        t.sai_thrift_attribute_value_t(bool_data=1)


def test_port_counter_ids_are_distinct_and_cover_the_layout():
    ids = [getattr(h, name) for name in layout.PORT_COUNTER_IDS]
    assert len(set(ids)) == len(ids) == 18
    assert len(set(getattr(h, n) for n in h.__all__)) == len(h.__all__)


def test_preloaded_package_serves_its_submodules_as_one_module_object():
    # In a fresh interpreter: after the launcher's preload, the names sai_qos_tests.py imports resolve to the
    # shim's module objects (no second copy of ttypes with different classes).
    code = (
        "from lossless_sai import launcher; launcher.preload(launcher.SHIM_MODULES)\n"
        "from switch_sai_thrift.ttypes import sai_thrift_attribute_value_t, sai_thrift_attribute_t\n"
        "from switch_sai_thrift.sai_headers import SAI_PORT_ATTR_QOS_SCHEDULER_PROFILE_ID\n"
        "import lossless_sai.switch_sai_thrift.ttypes as real\n"
        "assert sai_thrift_attribute_t is real.sai_thrift_attribute_t\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=SHIM_ROOT, PYTHONDONTWRITEBYTECODE="1"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "ok"
