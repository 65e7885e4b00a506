#!/usr/bin/env python3
"""The plain N:1 incast of configs/scenarios/incast-100g-lossy.yaml in ns-3 (PyPI's `ns3` wheel, 3.44), for
bench/sim.sh: N senders, each on its own 100 Gb/s point-to-point link (40 m: 200 ns) to a router, the router
on a 100 Gb/s link to the receiver; every sender sends 4 KiB UDP datagrams at line rate (an OnOff source that
is always on), the router's egress queue tail-drops. ns-3 mainline has no PFC, so this is the lossy incast.

Prints one JSON line: virtual seconds, wall seconds, events, packets received.
Usage: ns3_incast.py [--senders 32] [--ms 10]
"""

import argparse
import json
import time

parser = argparse.ArgumentParser()
parser.add_argument("--senders", type=int, default=32)
parser.add_argument("--ms", type=float, default=10.0)
args = parser.parse_args()

from ns import ns  # noqa: E402  (slow import: cppyy compiles the bindings)

ns.Config.SetDefault("ns3::OnOffApplication::PacketSize", ns.UintegerValue(4096))
senders = ns.NodeContainer()
senders.Create(args.senders)
router = ns.NodeContainer()
router.Create(1)
receiver = ns.NodeContainer()
receiver.Create(1)
stack = ns.InternetStackHelper()
stack.Install(senders)
stack.Install(router)
stack.Install(receiver)

p2p = ns.PointToPointHelper()
p2p.SetDeviceAttribute("DataRate", ns.StringValue("100Gbps"))
p2p.SetDeviceAttribute("Mtu", ns.UintegerValue(9000))
p2p.SetChannelAttribute("Delay", ns.StringValue("200ns"))

address = ns.Ipv4AddressHelper()
sender_ips = []
for i in range(args.senders):
    pair = ns.NodeContainer()
    pair.Add(senders.Get(i))
    pair.Add(router.Get(0))
    devices = p2p.Install(pair)
    address.SetBase(ns.Ipv4Address(f"10.{i // 250}.{i % 250}.0"), ns.Ipv4Mask("255.255.255.0"))
    sender_ips.append(address.Assign(devices))
pair = ns.NodeContainer()
pair.Add(router.Get(0))
pair.Add(receiver.Get(0))
devices = p2p.Install(pair)
address.SetBase(ns.Ipv4Address("10.200.0.0"), ns.Ipv4Mask("255.255.255.0"))
receiver_if = address.Assign(devices)
ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

port = 4791
sink = ns.PacketSinkHelper("ns3::UdpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
sink_apps = sink.Install(receiver.Get(0))
sink_apps.Start(ns.Seconds(0))
destination = ns.InetSocketAddress(receiver_if.GetAddress(1), port).ConvertTo()
onoff = ns.OnOffHelper("ns3::UdpSocketFactory", destination)
onoff.SetConstantRate(ns.DataRate("100Gbps"), 4096)
apps = onoff.Install(senders)
apps.Start(ns.Seconds(0))
apps.Stop(ns.Seconds(args.ms / 1000.0))

ns.Simulator.Stop(ns.Seconds(args.ms / 1000.0))
wall = time.perf_counter()
ns.Simulator.Run()
wall = time.perf_counter() - wall
received = ns.DynamicCast[ns.PacketSink](sink_apps.Get(0)).GetTotalRx() // 4096
events = ns.Simulator.GetEventCount()
ns.Simulator.Destroy()
print(json.dumps({"simulator": "ns-3", "virtual_s": args.ms / 1000.0, "wall_s": wall, "events": int(events),
                  "received_packets": int(received)}))
