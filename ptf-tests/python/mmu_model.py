"""Expected packet counts of the buffer tests, from a profile and the MMU rules the switch documents
(dataplane/src/model/mmu.rs, and ../shared/reference/sonic.md §2.1-2.3) -- sonic-mgmt's qos_params, computed
instead of looked up, as its NVIDIA parameter generator does.

The rules, in cells (a frame of len bytes takes ceil(len / cell_size) cells; profile and pool sizes in bytes
are rounded up to cells):
- ingress, on the PG's profile in pool P: the PG's reserved `size` first; then P's shared space while the
  PG's shared usage stays under its limit (static_th, or for dynamic_th n: 2^n x (P.size - P.shared_used)),
  within the pool and under the port's cap (BUFFER_PORT_INGRESS_PROFILE_LIST); then, for a lossless PG,
  headroom: `xoff` cells of its own, or of P's shared headroom pool (P.xoff) when P has one; else dropped;
- egress, on the queue's profile: reserved, then the egress pool's shared space under the queue's limit
  (and the port's cap); a lossy queue tail-drops past that, a lossless one only when the pool is full;
- a frame is admitted only if both sides admit it (ingress is asked first);
- a lossless PG sends XOFF when a frame goes to headroom or, after the admission, its shared usage
  reaches its limit.

`fill()` replays one flow (one ingress PG, one egress queue, egress held, the buffers otherwise empty) and
reports the packet numbers at which XOFF, the first ingress drop and the first egress drop happen -- the
numbers sonic-mgmt calls pkts_num_trig_pfc, pkts_num_trig_ingr_drp and pkts_num_trig_egr_drp (with no
leak-out: the switch holds egress exactly).
"""


def cells(nbytes, cell):
    return -(-int(nbytes) // cell)


class _Threshold:
    def __init__(self, threshold, cell):
        kind, value = threshold
        self.dynamic = kind == "dynamic"
        self.value = value if self.dynamic else cells(value, cell)

    def limit(self, pool):
        if self.dynamic:
            free = max(pool["size"] - pool["used"], 0)
            n = self.value
            return free << n if n >= 0 else free >> -n
        return self.value if self.value > 0 else pool["size"]  # static_th 0: no limit but the pool


class FillResult:
    def __init__(self):
        self.trig_pfc = None  # packet number that made the PG send XOFF
        self.trig_ingr_drp = None  # first packet dropped at ingress
        self.trig_egr_drp = None  # first packet dropped at egress
        self.cells_per_packet = None

    def __repr__(self):
        return "FillResult(trig_pfc=%s, trig_ingr_drp=%s, trig_egr_drp=%s, cells/pkt=%s)" % (
            self.trig_pfc, self.trig_ingr_drp, self.trig_egr_drp, self.cells_per_packet)


def fill(profile, src, pg, dst, queue, packet_len, limit=2_000_000, stop_at_first_drop=True):
    """Replays `packet_len`-byte packets src(PG) -> dst(queue) into empty buffers with dst held."""
    cell = profile.cell_bytes
    c = cells(packet_len, cell)
    res = FillResult()
    res.cells_per_packet = c
    pools = {}

    def pool(name):
        if name not in pools:
            p = profile.pool(name)
            pools[name] = {"size": cells(p["size"], cell), "hdrm_size": cells(p["xoff"], cell), "used": 0, "hdrm_used": 0}
        return pools[name]

    def side(prof, port, lossless):
        if prof is None:
            return None
        caps = profile.port_caps(port)
        return {
            "pool": pool(prof["pool"]),
            "reserved": cells(prof["size"], cell),
            "threshold": _Threshold(prof["threshold"], cell),
            "xoff": cells(prof["xoff"], cell),
            "cap": _Threshold(caps[prof["pool"]], cell) if prof["pool"] in caps else None,
            "port_used": 0,  # the port's shared usage of this pool (one flow: this PG's / queue's)
            "lossless": lossless,
            "res": 0,
            "shared": 0,
            "hdrm": 0,
        }

    ing = side(profile.pg_profile(src, pg), src, pg in profile.lossless_pgs(src))
    egr = side(profile.queue_profile(dst, queue), dst, queue in profile.lossless_queues(dst))
    if ing is not None and egr is not None and ing["pool"] is egr["pool"]:
        raise ValueError("ingress and egress profiles share pool; fill() models separate pools")

    def cap_ok(s, extra):
        return s["cap"] is None or s["port_used"] + extra <= s["cap"].limit(s["pool"])

    def plan_ingress():
        if ing is None:
            return (0, 0, 0)
        reserved = min(c, max(ing["reserved"] - ing["res"], 0))
        rest = c - reserved
        if rest == 0:
            return (reserved, 0, 0)
        p = ing["pool"]
        if ing["shared"] + rest <= ing["threshold"].limit(p) and p["used"] + rest <= p["size"] and cap_ok(ing, rest):
            return (reserved, rest, 0)
        if ing["lossless"] and ing["hdrm"] + rest <= ing["xoff"]:
            if p["hdrm_size"] == 0 or p["hdrm_used"] + rest <= p["hdrm_size"]:
                return (reserved, 0, rest)
        return None

    def plan_egress():
        if egr is None:
            return (0, 0)
        reserved = min(c, max(egr["reserved"] - egr["res"], 0))
        rest = c - reserved
        if rest == 0:
            return (reserved, 0)
        p = egr["pool"]
        fits = p["used"] + rest <= p["size"]
        under = egr["shared"] + rest <= egr["threshold"].limit(p) and cap_ok(egr, rest)
        return (reserved, rest) if fits and (under or egr["lossless"]) else None

    xoff = False
    for n in range(1, limit + 1):
        i = plan_ingress()
        if i is None:
            res.trig_ingr_drp = res.trig_ingr_drp or n
            if stop_at_first_drop:
                break
            continue
        e = plan_egress()
        if e is None:
            res.trig_egr_drp = res.trig_egr_drp or n
            if stop_at_first_drop:
                break
            continue
        if ing is not None:
            ing["res"] += i[0]
            ing["shared"] += i[1]
            ing["hdrm"] += i[2]
            ing["port_used"] += i[1]
            ing["pool"]["used"] += i[1]
            if ing["pool"]["hdrm_size"] > 0:
                ing["pool"]["hdrm_used"] += i[2]
            if ing["lossless"] and not xoff and (ing["hdrm"] > 0 or ing["shared"] >= ing["threshold"].limit(ing["pool"])):
                xoff = True
                res.trig_pfc = n
        if egr is not None:
            egr["res"] += e[0]
            egr["shared"] += e[1]
            egr["port_used"] += e[1]
            egr["pool"]["used"] += e[1]
    return res


def wred_may_drop(wred, ect):
    """Whether a queue's WRED profile may drop green packets (ECT ones are marked instead when green is in
    its `ecn` set)."""
    if wred is None or str(wred.get("wred_green_enable", "false")).lower() != "true":
        return False
    ecn = str(wred.get("ecn", "ecn_none"))
    marks_green = ecn in ("ecn_all", "ecn_green", "ecn_green_yellow", "ecn_green_red")
    return not (ect and marks_green)
