"""Stand-in for sonic-mgmt's tests/saitests/py3/sai_base_test.py: ThriftInterface and
ThriftInterfaceDataPlane with self.client / src_client / dst_client / clients / test_params, the port map, and
exec_cmd_on_dut answered locally (docs/sonic-mgmt-shim.md section 2). Registered as `sai_base_test` by the
launcher. The clients are lossless_sai.client.Client objects over switchd's gRPC API.

Which switch: test param `lossless_switch` (unix:PATH or tcp:HOST:PORT), else $LOSSLESS_SWITCH; sonic-mgmt's
`src_server`/`dst_server` (thrift ip:port) are read for the attributes tests print, never dialled.
"""

import json
import os
import time

import ptf
import ptf.testutils as testutils
from ptf import config
from ptf.base_tests import BaseTest

import lossless
from lossless.v1 import switch_pb2 as pb
from lossless_sai.client import Client
from lossless_sai.switch import (sai_thrift_credit_wd_disable, sai_thrift_credit_wd_enable,
                                 sai_thrift_port_tx_disable, sai_thrift_port_tx_enable)

# How long a release waits, at most, for the switch to take in what ptf sent (wait_ingested).
INGEST_TIMEOUT_S = 10.0

# {"src": {"<ptf port>": "EthernetN"}, "dst": ...}, read by switch.switch_init.
interface_to_front_mapping = {}


class ShimSetupError(Exception):
    pass


def _read_port_map(params):
    """Fills interface_to_front_mapping from port_map_file (JSON) or port_map_file_ini (ptf_port@EthernetN)."""
    interface_to_front_mapping.clear()
    if "port_map_file" in params:
        with open(params["port_map_file"]) as f:
            ports = json.load(f)
        src_dut, dst_dut = params["src_dut_index"], params["dst_dut_index"]
        src_asic, dst_asic = params.get("src_asic_index"), params.get("dst_asic_index")

        def select(dut, asic):
            return {p: info["dut_port"] for p, info in ports.items()
                    if dut in info["target_dut"] and info["asic_idx"] == asic}
        interface_to_front_mapping["src"] = select(src_dut, src_asic)
        same = src_dut == dst_dut and src_asic == dst_asic
        interface_to_front_mapping["dst"] = interface_to_front_mapping["src"] if same else select(dst_dut, dst_asic)
    elif "port_map_file_ini" in params:
        mapping = {}
        with open(params["port_map_file_ini"]) as f:
            for n, line in enumerate(f, 1):
                if not line.strip() or line[0] in "#;/":
                    continue
                ptf_port, sep, front = line.partition("@")
                if not sep or not ptf_port.strip().isdigit() or not front.strip():
                    raise ShimSetupError("%s line %d: %r is not ptf_port@EthernetN"
                                         % (params["port_map_file_ini"], n, line.rstrip("\n")))
                mapping[ptf_port.strip()] = front.strip()
        interface_to_front_mapping["src"] = mapping
        interface_to_front_mapping["dst"] = mapping
    else:
        raise ShimSetupError("no ptf interface <-> switch port mapping: pass port_map_file_ini or port_map_file "
                             "in --test-params")


class ThriftInterface(BaseTest):
    def setUp(self):
        BaseTest.setUp(self)
        self.test_params = testutils.test_params_get()
        src_server = self.test_params.get("src_server", "localhost:9092").strip().split(":")
        dst_server = self.test_params.get("dst_server", ":".join(src_server)).strip().split(":")
        self.src_server_ip, self.dst_server_ip = src_server[0], dst_server[0]
        self.server = self.dst_server_ip
        self.original_dut_port_queue_scheduler_map = {}
        self.src_asic_index = self.test_params.get("src_asic_index")
        self.dst_asic_index = self.test_params.get("dst_asic_index")
        _read_port_map(self.test_params)

        endpoint = self.test_params.get("lossless_switch") or os.environ.get(lossless.channel.ENV_ENDPOINT)
        if not endpoint:
            raise ShimSetupError("which switch? pass lossless_switch=unix:PATH in --test-params or set $%s"
                                 % lossless.channel.ENV_ENDPOINT)
        self._switch = lossless.connect(endpoint)
        # One switch: src and dst are the same client (tests compare clients['src'] != clients['dst']).
        self.src_client = self.dst_client = self.client = Client(self._switch.stub)
        self.clients = {"src": self.src_client, "dst": self.dst_client}
        self.platform_asic = self.test_params.get("platform_asic")
        self._rx_base = None

    def tearDown(self):
        BaseTest.tearDown(self)
        self._switch.close()

    def exec_cmd_on_dut(self, hostname, username, password, cmd):
        """(stdout lines, stderr lines, status). No DUT shell: the commands the QoS tests send exist for
        asic types whose hold or counters go through the CLI (mellanox, cisco-8000, broadcom-dnx); answer
        that they are not supported, which those tests report as a command failure."""
        if isinstance(cmd, list):
            cmd = " ".join(cmd)
        return [], ["lossless: not supported on a Lossless switch: %s\n" % cmd], 1

    def sai_thrift_port_tx_enable(self, client, asic_type, port_list, target="dst", last_port=True,
                                  enable_port_by_unblock_queue=True):
        # A whole-port hold for every asic_type (mellanox's scheduler edits included); no credit watchdog.
        self.wait_ingested()
        sai_thrift_port_tx_enable(client, asic_type, port_list, target=target)
        if self.platform_asic == "broadcom-dnx" and last_port:
            sai_thrift_credit_wd_enable(self.src_client)

    def sai_thrift_port_tx_disable(self, client, asic_type, port_list, target="dst", disable_port_by_block_queue=True):
        if self.platform_asic == "broadcom-dnx":
            sai_thrift_credit_wd_disable(self.src_client)
        sai_thrift_port_tx_disable(client, asic_type, port_list, target=target)

    # ---- ingress barrier ------------------------------------------------------------------------------

    def _switch_rx(self):
        """{ptf port: frames the switch has taken in on it} (every frame the interface delivered: RX_OK, RX_ERR
        and those its receive ring lost, RX_OVR)."""
        names = {front: int(ptf) for ptf, front in interface_to_front_mapping.get("src", {}).items()}
        out = {}
        for p in self.src_client.stub.GetCounters(pb.GetCountersRequest(), timeout=10).ports:
            if p.name in names:
                out[names[p.name]] = p.rx_ok + p.rx_err + p.rx_ovr
        return out

    def wait_ingested(self, timeout_s=INGEST_TIMEOUT_S):
        """Waits until the switch has taken in every frame ptf sent since the test began. A hardware switch
        ingests at line rate, so sai_qos_tests.py releases a held port right after its last send_packet; a
        software switch may still be reading frames from its interfaces then, and the release would let the
        queue drain before the burst is in (a watermark short by the frames still on their way). Bounded: a
        frame the switch never counts (a MAC control frame ptf sent) costs at most timeout_s."""
        dataplane = getattr(self, "dataplane", None)
        if dataplane is None or self._rx_base is None:
            return
        deadline = time.monotonic() + timeout_s
        while True:
            rx = self._switch_rx()
            behind = {port: dataplane.get_counters(0, port)[1] - (rx.get(port, 0) - self._rx_base.get(port, 0))
                      for port in rx}
            if all(n <= 0 for n in behind.values()) or time.monotonic() > deadline:
                return
            time.sleep(0.01)

    def get_dut_port(self, ptf_port):
        for group in interface_to_front_mapping.values():
            if str(ptf_port) in group:
                return group[str(ptf_port)]
        return None


class ThriftInterfaceDataPlane(ThriftInterface):
    """ThriftInterface plus ptf's dataplane (flushed; a pcap per test when ptf has a log dir)."""

    def setUp(self):
        ThriftInterface.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        # ptf counts what it sends from its start; the switch from its own (wait_ingested compares them).
        self._rx_base = {port: n - self.dataplane.get_counters(0, port)[1] for port, n in self._switch_rx().items()}
        if config["log_dir"] is not None:
            self.dataplane.start_pcap(os.path.join(config["log_dir"], str(self)) + ".pcap")

    def tearDown(self):
        if config["log_dir"] is not None:
            self.dataplane.stop_pcap()
        ThriftInterface.tearDown(self)
