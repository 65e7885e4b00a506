#!/usr/bin/env python3
"""Render CONFIG_DB buffer/QoS JSON for real SONiC hwskus from sonic-buildimage.

The templates, port maps and PG lookup tables are SONiC's own data.  They are
read straight out of a (bare) git clone of sonic-buildimage with `git`, at
render time; nothing from that repository is vendored here.  This script only
supplies what `sonic-cfggen` and `buffermgrd` would supply on a switch:

  * the template search path, the jinja2 environment (trim_blocks, the custom
    filters / globals the buffer and QoS templates use);
  * the data context: DEVICE_METADATA, PORT (from platform.json + hwsku.json
    when the SKU has hwsku.json, else port_config.ini, the way
    portconfig.get_port_config() picks), DEVICE_NEIGHBOR and
    DEVICE_NEIGHBOR_METADATA for a synthetic T0 / T1 topology, and `asic_type`
    (which on a switch comes from /etc/sonic/sonic_version.yml);
  * `config qos reload` semantics: render buffers.json.j2 then qos.json.j2,
    each result deep-merged into the data (the `,config-db` destination);
  * buffermgrd (traditional buffer model): for every port with speed, cable
    length and PORT_QOS_MAP.pfc_enable, create
    BUFFER_PROFILE|pg_lossless_<speed>_<cable>_profile from
    pg_profile_lookup.ini and BUFFER_PG|<port>|<lossless pgs>.

Symlinks inside the git tree (file and directory links, e.g. into
device/common/profiles/...) are followed, exactly as the filesystem would on a
switch where /usr/share/sonic/device/<platform>/<hwsku> is a real directory.

Usage:
  scripts/render-sonic-configs.py [--mirror PATH] [--rev REV] [--out DIR]
                                  [--only HWSKU ...] [--list]
"""

import argparse
import copy
import json
import os
import posixpath
import re
import subprocess
import sys
from collections import OrderedDict

try:
    import jinja2
except ImportError:  # pragma: no cover
    sys.stderr.write(
        "jinja2 is required: python3 -m venv /tmp/rvenv && "
        "/tmp/rvenv/bin/pip install jinja2, then run with /tmp/rvenv/bin/python\n")
    sys.exit(2)

DEFAULT_MIRROR = "/work/.mirror/sonic-net+sonic-buildimage/repo"
BUILD_TEMPLATES = "files/build_templates"

# (hwsku, device dir in sonic-buildimage, role, asic_type, ASIC family)
# role: "t0" -> DEVICE_METADATA type ToRRouter, "t1" -> LeafRouter.
TARGETS = [
    ("Arista-7060CX-32S-C32", "device/arista/x86_64-arista_7060_cx32s/Arista-7060CX-32S-C32",
     "t1", "broadcom", "Broadcom Tomahawk (BCM56960)"),
    ("Arista-7050CX3-32S-C32", "device/arista/x86_64-arista_7050cx3_32s/Arista-7050CX3-32S-C32",
     "t1", "broadcom", "Broadcom Trident 3 (BCM56870)"),
    ("Arista-7260CX3-C64", "device/arista/x86_64-arista_7260cx3_64/Arista-7260CX3-C64",
     "t0", "broadcom", "Broadcom Tomahawk 2 (BCM56970)"),
    ("Force10-S6000", "device/dell/x86_64-dell_s6000_s1220-r0/Force10-S6000",
     "t0", "broadcom", "Broadcom Trident 2 (BCM56850)"),
    ("Force10-S6100", "device/dell/x86_64-dell_s6100_c2538-r0/Force10-S6100",
     "t0", "broadcom", "Broadcom Tomahawk (BCM56960)"),
    ("DellEMC-Z9332f-O32", "device/dell/x86_64-dellemc_z9332f_d1508-r0/DellEMC-Z9332f-O32",
     "t1", "broadcom", "Broadcom Tomahawk 3 (BCM56980)"),
    ("Celestica-DX010-C32", "device/celestica/x86_64-cel_seastone-r0/Celestica-DX010-C32",
     "t1", "broadcom", "Broadcom Tomahawk (BCM56960)"),
    ("ACS-MSN2700", "device/mellanox/x86_64-mlnx_msn2700-r0/ACS-MSN2700",
     "t0", "mellanox", "NVIDIA/Mellanox Spectrum-1"),
    ("ACS-MSN3800", "device/mellanox/x86_64-mlnx_msn3800-r0/ACS-MSN3800",
     "t1", "mellanox", "NVIDIA/Mellanox Spectrum-2"),
    ("ACS-MSN4700", "device/mellanox/x86_64-mlnx_msn4700-r0/ACS-MSN4700",
     "t1", "mellanox", "NVIDIA/Mellanox Spectrum-3"),
]

ROLE_TYPE = {"t0": "ToRRouter", "t1": "LeafRouter"}


# --------------------------------------------------------------------------
# git tree access with symlink resolution
# --------------------------------------------------------------------------
class GitTree(object):
    def __init__(self, mirror, rev):
        self.mirror = mirror
        self.commit = self._git("rev-parse", "--verify", rev + "^{commit}").decode().strip()
        raw = self._git("ls-tree", "-r", "-z", "--full-tree", self.commit)
        self.entries = {}  # path -> (mode, sha)
        self.dirs = set([""])
        for rec in raw.split(b"\0"):
            if not rec:
                continue
            meta, path = rec.split(b"\t", 1)
            mode, _typ, sha = meta.decode().split()
            path = path.decode()
            self.entries[path] = (mode, sha)
            d = posixpath.dirname(path)
            while d not in self.dirs:
                self.dirs.add(d)
                d = posixpath.dirname(d)
        self._blob_cache = {}
        self.used = OrderedDict()  # requested path -> resolved path

    def _git(self, *args):
        return subprocess.check_output(("git", "-C", self.mirror) + args)

    def blob(self, sha):
        if sha not in self._blob_cache:
            self._blob_cache[sha] = self._git("cat-file", "blob", sha)
        return self._blob_cache[sha]

    def resolve(self, path):
        """Follow symlinks (file and directory) in `path`.

        Returns the canonical tree path of a regular file / directory, or None.
        """
        path = posixpath.normpath(path).lstrip("/")
        for _ in range(64):
            parts = path.split("/")
            restart = False
            for i in range(1, len(parts) + 1):
                prefix = "/".join(parts[:i])
                ent = self.entries.get(prefix)
                if ent is not None and ent[0] == "120000":
                    target = self.blob(ent[1]).decode()
                    new = posixpath.normpath(posixpath.join(posixpath.dirname(prefix), target))
                    rest = parts[i:]
                    path = "/".join([new] + rest) if rest else new
                    restart = True
                    break
                if ent is None and prefix not in self.dirs:
                    return None
            if not restart:
                return path
        raise RuntimeError("symlink loop at %s" % path)

    def is_file(self, path):
        r = self.resolve(path)
        return r is not None and r in self.entries

    def read(self, path):
        r = self.resolve(path)
        if r is None or r not in self.entries:
            raise FileNotFoundError(path)
        self.used[path] = r
        return self.blob(self.entries[r][1]).decode("utf-8")


class TreeLoader(jinja2.BaseLoader):
    """FileSystemLoader look-alike over the git tree (search path order kept)."""

    def __init__(self, tree, searchpath):
        self.tree = tree
        self.searchpath = list(searchpath)

    def get_source(self, environment, template):
        for base in self.searchpath:
            p = posixpath.normpath(posixpath.join(base, template))
            if self.tree.is_file(p):
                return self.tree.read(p), p, lambda: True
        raise jinja2.TemplateNotFound(template)


# --------------------------------------------------------------------------
# sonic-cfggen emulation: filters / globals
# --------------------------------------------------------------------------
def sort_by_port_index(value):
    # Same contract as sonic-cfggen: sorts the list in place, returns None.
    if not value:
        return
    if isinstance(value, list):
        value.sort(key=lambda k: int(k[8:]) if "BP" not in k else int(k[11:]) + 1024)


def _not_needed(name):
    def f(*_a, **_k):
        raise RuntimeError("template used sonic-cfggen filter '%s' which this "
                           "renderer does not implement" % name)
    return f


def make_env(tree, searchpath):
    loader = TreeLoader(tree, searchpath)
    env = jinja2.Environment(loader=loader, trim_blocks=True)
    env.filters["sort_by_port_index"] = sort_by_port_index
    # IP helpers are registered by sonic-cfggen but unused by buffer/QoS
    # templates; fail loudly if a template ever needs them.
    for name in ("ipv4", "ipv6", "unique_name", "pfx_filter", "ip_network",
                 "get_primary_addr", "file_exists", "ip", "network", "prefixlen",
                 "netmask", "broadcast", "b64encode", "b64decode"):
        env.filters[name] = _not_needed(name)

    def template_exists(name):
        try:
            loader.get_source(env, name)
            return True
        except jinja2.TemplateNotFound:
            return False

    env.globals["template_exists"] = template_exists
    env.globals["is_smartswitch"] = False
    return env


def deep_update(dst, src):
    pending = [(dst, src)]
    while pending:
        d, s = pending.pop(0)
        for k, v in s.items():
            if isinstance(v, dict):
                node = d.setdefault(k, type(v)())
                pending.append((node, v))
            else:
                d[k] = v
    return dst


# --------------------------------------------------------------------------
# PORT table (portconfig.get_port_config emulation)
# --------------------------------------------------------------------------
def parse_port_config_ini(text):
    ports = OrderedDict()
    titles = ["name", "lanes", "alias", "index"]
    for line in text.splitlines():
        if line.startswith("#"):
            if "name" in line:
                titles = line.strip("#").split()
            continue
        tokens = line.split()
        if len(tokens) < 2:
            continue
        ni = titles.index("name")
        name = tokens[ni]
        data = OrderedDict()
        for i, item in enumerate(tokens):
            if i == ni:
                continue
            data[titles[i]] = item
        data.setdefault("alias", name)
        ports[name] = data
    return ports


_BRK_RE = re.compile(r"(\d{1,6})x(\d{1,6}G?)(\[(\d{1,6}G?,?)*\])?(\((\d{1,6})\))?")


def _speed_int(s):
    return int(s[:-1]) * 1000 if s.endswith("G") else int(s)


def _brk_entries(mode, nlanes):
    out = []
    for part in mode.split("+"):
        m = _BRK_RE.match(part)
        if not m:
            raise RuntimeError("bad breakout mode %r" % mode)
        nports, dspeed, supp, _x, _y, assigned = m.groups()
        sset = {_speed_int(dspeed)}
        if supp:
            sset |= {_speed_int(x.strip()) for x in supp[1:-1].split(",")}
        out.append((int(nports), _speed_int(dspeed), frozenset(sset),
                    int(assigned) if assigned else nlanes))
    return out


def _brk_key(entries):
    return [(n, s, a) for (n, _d, s, a) in entries]


def parse_platform_json(platform_json, hwsku_json):
    """Ports as sonic-cfggen derives them from platform.json + hwsku.json."""
    plat = json.loads(platform_json, object_pairs_hook=OrderedDict)["interfaces"]
    sku = json.loads(hwsku_json, object_pairs_hook=OrderedDict)["interfaces"]
    ports = OrderedDict()
    breakout = OrderedDict()
    for intf, props in plat.items():
        if intf not in sku:
            continue
        mode = sku[intf]["default_brkout_mode"]
        lanes = props["lanes"].split(",")
        indexes = props["index"].split(",")
        entries = _brk_entries(mode, len(lanes))
        caps = None
        for sup_mode, aliases in props["breakout_modes"].items():
            if _brk_key(_brk_entries(sup_mode, len(lanes))) == _brk_key(entries):
                caps = aliases
                break
        if caps is None:
            raise RuntimeError("%s: unsupported breakout mode %s" % (intf, mode))
        base = int(intf.replace("Ethernet", ""))
        total = sum(e[0] for e in entries)
        lane_id = alias_id = 0
        child = OrderedDict()
        for nports, dspeed, _s, assigned in entries:
            per = assigned // nports
            for _ in range(nports):
                name = "Ethernet%d" % (base + lane_id)
                cfg = OrderedDict([
                    ("alias", caps[alias_id]),
                    ("lanes", ",".join(lanes[lane_id:lane_id + per])),
                    ("speed", str(dspeed)),
                    ("index", indexes[lane_id]),
                    ("subport", "0" if total == 1 else str(alias_id + 1)),
                ])
                if dspeed // per >= 50000:
                    cfg["fec"] = "rs"
                child[name] = cfg
                lane_id += per
                alias_id += 1
        for cp in child:
            if cp in sku:
                for k, v in sku[cp].items():
                    if k in ("fec", "autoneg", "role"):
                        for c in child:
                            child[c][k] = v
        ports.update(child)
        breakout[intf] = {"brkout_mode": mode}
    return ports, breakout


def load_ports(tree, sku_dir):
    plat_dir = posixpath.dirname(sku_dir)
    hwsku_json = posixpath.join(sku_dir, "hwsku.json")
    plat_json = posixpath.join(plat_dir, "platform.json")
    if tree.is_file(hwsku_json) and tree.is_file(plat_json):
        pj = tree.read(plat_json)
        if json.loads(pj).get("interfaces"):
            ports, brk = parse_platform_json(pj, tree.read(hwsku_json))
            return ports, brk, [plat_json, hwsku_json]
    pc = posixpath.join(sku_dir, "port_config.ini")
    return parse_port_config_ini(tree.read(pc)), None, [pc]


def port_num(name):
    return int(re.sub(r"\D", "", name) or 0)


# --------------------------------------------------------------------------
# Topology: neighbours for every port so every port is "active"
# --------------------------------------------------------------------------
def build_neighbors(ports, role, lookup_speeds):
    """Neighbours for every port whose speed the SKU's pg_profile_lookup.ini
    covers.  Ports at a speed the lookup lacks (the 10G service/management
    ports on some SKUs) are left unconnected, i.e. "inactive", as they are in
    production minigraphs: buffermgrd could not build a lossless profile for
    them anyway."""
    names = [p for p in sorted(ports, key=port_num)
             if ports[p].get("speed") in lookup_speeds]
    dn, meta = OrderedDict(), OrderedDict()
    if role == "t1":
        # like sonic-cfggen's t1 preset: first half to T2 (spine), rest to T0
        half = len(names) // 2
        for i, p in enumerate(names):
            if i < half:
                nb, typ = "ARISTA%02dT2" % (i + 1), "SpineRouter"
            else:
                nb, typ = "ARISTA%02dT0" % (i - half + 1), "ToRRouter"
            dn[p] = {"name": nb, "port": "Ethernet1"}
            meta[nb] = {"hwsku": "Arista-VM", "type": typ}
    else:
        # T0: four uplinks to T1 on the last four full-speed ports, the rest
        # face servers.
        top = max(int(ports[p].get("speed", "0")) for p in names)
        fast = [p for p in names if int(ports[p].get("speed", "0")) == top]
        uplinks = set(fast[-4:])
        t1 = srv = 0
        for p in names:
            if p in uplinks:
                t1 += 1
                nb = "ARISTA%02dT1" % t1
                dn[p] = {"name": nb, "port": "Ethernet1"}
                meta[nb] = {"hwsku": "Arista-VM", "type": "LeafRouter"}
            else:
                nb = "Servers%d" % srv
                srv += 1
                dn[p] = {"name": nb, "port": "eth0"}
                meta[nb] = {"hwsku": "Server", "type": "Server"}
    return dn, meta


# --------------------------------------------------------------------------
# buffermgrd (traditional model) emulation
# --------------------------------------------------------------------------
def parse_pg_lookup(text):
    table = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            # buffermgrd only skips lines whose *first* char is '#'; lookup
            # files in the tree indent data rows but never comment rows.
            continue
        tok = line.split()
        row = {"size": tok[2], "xon": tok[3], "xoff": tok[4], "threshold": tok[5],
               "xon_offset": tok[6] if len(tok) > 6 else ""}
        table.setdefault(tok[0], {})[tok[1]] = row
    return table


def pg_id_ranges(pfc_enable):
    bits = 0
    for t in pfc_enable.split(","):
        try:
            v = int(t)
        except ValueError:
            continue
        if 0 <= v < 32:
            bits |= 1 << v
    out, start = [], None
    for i in range(0, 34):
        on = bool(bits & (1 << i))
        if on and start is None:
            start = i
        elif not on and start is not None:
            out.append(str(start) if start == i - 1 else "%d-%d" % (start, i - 1))
            start = None
    return out


def buffermgrd(data, lookup, asic_vendor, log):
    """Traditional-model cfgmgr/buffermgr.cpp doSpeedUpdateTask(), per port."""
    cable = data.get("CABLE_LENGTH", {}).get("AZURE", {})
    qos = data.get("PORT_QOS_MAP", {})
    pools = data.get("BUFFER_POOL", {})
    profiles = data.setdefault("BUFFER_PROFILE", {})
    pgs = data.setdefault("BUFFER_PG", {})
    made = 0
    for port in sorted(data["PORT"], key=port_num):
        pc = data["PORT"][port]
        if "speed" not in pc:
            log.append("%s: no speed, buffermgrd does nothing" % port)
            continue
        if port not in cable:
            log.append("%s: no CABLE_LENGTH, buffermgrd retries forever" % port)
            continue
        cab = cable[port]
        if cab == "0m":
            continue
        if "admin_status" not in pc:
            continue
        if port not in qos or "pfc_enable" not in qos[port]:
            log.append("%s: not in PORT_QOS_MAP (inactive port), no lossless PG" % port)
            continue
        speed = pc["speed"]
        name = "pg_lossless_%s_%s_profile" % (speed, cab)
        if pc["admin_status"] == "down" and asic_vendor == "mellanox":
            continue
        row = lookup.get(speed, {}).get(cab)
        if row is None:
            log.append("%s: no pg_profile_lookup row for speed %s cable %s" % (port, speed, cab))
            continue
        if name not in profiles:
            mode = pools.get("ingress_lossless_pool", {}).get("mode", "")
            if not mode:
                log.append("%s: ingress_lossless_pool has no mode; buffermgrd retries" % port)
                continue
            prof = OrderedDict([("pool", "ingress_lossless_pool"), ("xon", row["xon"])])
            if row["xon_offset"]:
                prof["xon_offset"] = row["xon_offset"]
            prof["xoff"] = row["xoff"]
            prof["size"] = row["size"]
            prof[mode + "_th"] = row["threshold"]
            profiles[name] = prof
        for rng in pg_id_ranges(qos[port]["pfc_enable"]):
            pgs["%s|%s" % (port, rng)] = {"profile": name}
            made += 1
    return made


# --------------------------------------------------------------------------
# main render
# --------------------------------------------------------------------------
def stringify(obj):
    if isinstance(obj, dict):
        return {str(k): stringify(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return ",".join(str(x) for x in obj)
    return str(obj)


def render_one(tree, hwsku, sku_dir, role, asic_type):
    platform = posixpath.basename(posixpath.dirname(sku_dir))
    ports, breakout, port_src = load_ports(tree, sku_dir)
    for p in ports.values():
        p["admin_status"] = "up"
        p["mtu"] = "9100"
    lookup_path = posixpath.join(sku_dir, "pg_profile_lookup.ini")
    lookup = parse_pg_lookup(tree.read(lookup_path))
    dn, dnm = build_neighbors(ports, role, set(lookup))
    inactive = [p for p in ports if p not in dn]
    data = OrderedDict()
    data["DEVICE_METADATA"] = {"localhost": OrderedDict([
        ("hwsku", hwsku), ("platform", platform), ("type", ROLE_TYPE[role]),
        ("hostname", "sonic-%s" % role), ("buffer_model", "traditional")])}
    data["PORT"] = ports
    if breakout:
        data["BREAKOUT_CFG"] = breakout
    data["DEVICE_NEIGHBOR"] = dn
    data["DEVICE_NEIGHBOR_METADATA"] = dnm

    # sonic-cfggen template search path: '/', /usr/share/sonic/templates
    # (== files/build_templates), then the directory of the -t template.
    env = make_env(tree, [BUILD_TEMPLATES, sku_dir])
    rendered = {}
    for tmpl in ("buffers.json.j2", "qos.json.j2"):
        if not tree.is_file(posixpath.join(sku_dir, tmpl)):
            raise RuntimeError("%s has no %s" % (sku_dir, tmpl))
        ctx = copy.deepcopy(data)
        ctx["asic_type"] = asic_type   # from /etc/sonic/sonic_version.yml (-y)
        text = env.get_template(tmpl).render(ctx)
        try:
            out = json.loads(text)
        except ValueError as e:
            dump = "/tmp/render-%s-%s" % (hwsku, tmpl)
            open(dump, "w").write(text)
            raise RuntimeError("%s/%s rendered invalid JSON (%s); see %s" % (hwsku, tmpl, e, dump))
        rendered[tmpl] = sorted(out)
        deep_update(data, out)   # `-t tmpl,config-db`

    # swss container start (docker_image_ctl.j2): if the platform or SKU dir
    # ships create_only_config_db_buffers.json, DEVICE_METADATA|localhost gets
    # create_only_config_db_buffers=true.  Happens after template rendering.
    for d in (posixpath.dirname(sku_dir), sku_dir):
        if tree.is_file(posixpath.join(d, "create_only_config_db_buffers.json")):
            tree.read(posixpath.join(d, "create_only_config_db_buffers.json"))
            data["DEVICE_METADATA"]["localhost"]["create_only_config_db_buffers"] = "true"

    log = []
    n_pg = buffermgrd(data, lookup, asic_type, log)

    used = list(tree.used.items())
    return stringify(data), {
        "platform": platform, "rendered_tables": rendered, "used": used,
        "buffermgrd_pgs": n_pg, "log": log, "inactive": inactive,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", default=DEFAULT_MIRROR, help="sonic-buildimage git dir (bare ok)")
    ap.add_argument("--rev", default="HEAD", help="commit-ish to render from (default HEAD)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "..", "configs", "sonic"))
    ap.add_argument("--only", nargs="*", help="restrict to these hwskus")
    ap.add_argument("--manifest", action="store_true",
                    help="print per-file provenance (paths used, tables) as JSON to stdout")
    args = ap.parse_args()

    tree = GitTree(args.mirror, args.rev)
    os.makedirs(args.out, exist_ok=True)
    manifest = OrderedDict([("commit", tree.commit), ("files", [])])
    rc = 0
    for hwsku, sku_dir, role, asic_type, family in TARGETS:
        if args.only and hwsku not in args.only:
            continue
        tree.used.clear()
        try:
            cfg, info = render_one(tree, hwsku, sku_dir, role, asic_type)
        except Exception as e:  # keep going, report
            sys.stderr.write("FAILED %s: %s\n" % (hwsku, e))
            rc = 1
            continue
        fn = os.path.join(args.out, "%s-%s.json" % (hwsku, role))
        with open(fn, "w") as f:
            json.dump(cfg, f, indent=4, sort_keys=True)
            f.write("\n")
        for line in info["log"]:
            sys.stderr.write("%s: buffermgrd: %s\n" % (hwsku, line))
        sys.stderr.write("wrote %s (%d tables, %d lossless BUFFER_PG entries)\n"
                         % (fn, len(cfg), info["buffermgrd_pgs"]))
        manifest["files"].append(OrderedDict([
            ("file", os.path.basename(fn)), ("hwsku", hwsku), ("platform", info["platform"]),
            ("asic_type", asic_type), ("asic_family", family), ("role", role),
            ("device_type", ROLE_TYPE[role]), ("sku_dir", sku_dir),
            ("ports", len(cfg["PORT"])), ("inactive_ports", info["inactive"]),
            ("sources", [OrderedDict([("path", p), ("resolved", r)]) for p, r in info["used"]]),
            ("tables", sorted(cfg)), ("template_tables", info["rendered_tables"]),
        ]))
    if args.manifest:
        json.dump(manifest, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
