#!/usr/bin/env python3
"""vendor_neff.py OUTDIR: write small NEFFs shaped like vendor-compiled ones.

The layout follows what neuronx-cc NEFFs hold (see docs/neff.md, "Vendor
layout"): a kelf-0.json listing the subgraphs and named by neff.json's
tvm_op node, info.json, per subgraph a def.json whose engine entries name
member files ("pe": "PE.json", "pe_instr": "PE.bin"), engine JSONs, opaque
*.bin streams, a tensor_map.json with the I/O dtypes and shapes, a
state-buffer and a dge-table variable without size, dynamic DMA queue sets
and debug members. The contents are made up here; no vendor file is used.

Besides the well-formed fixtures (vendor_one.neff: one subgraph;
vendor_two.neff: two subgraphs through kelf-0.json; vendor_scan.neff: no
neff.json, subgraphs found by scanning) it writes malformed variants
bad_*.neff that the reader must reject with one log line. Standard
library only; the output is byte-for-byte deterministic.
"""
import copy
import gzip
import hashlib
import io
import json
import os
import struct
import sys
import tarfile

# The I/O tensors of every fixture: name -> (kind, dtype, shape, bytes/elem).
TENSORS = {
    "x": ("input", "float16", [4, 8], 2),
    "y": ("input", "float32", [8, 2], 4),
    "output0": ("output", "bfloat16", [4, 2], 2),
}
ENGINES = [("pe", "PE"), ("act", "Activation"), ("pool", "Pool"), ("dve", "DVE"),
           ("sp", "SP")]


def tensor_bytes(name):
    kind, dtype, shape, elem = TENSORS[name]
    n = elem
    for d in shape:
        n *= d
    return n


def npy_bytes(shape, descr, payload):
    """A numpy 1.0 file (header padded to 64 bytes, as numpy writes it)."""
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % d for d in shape).rstrip(" ") if len(shape) > 1
        else "%d," % shape[0])
    total = 10 + len(hdr) + 1
    hdr += " " * ((64 - total % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + payload


def def_json(sg_index):
    var = {
        "SB": {"type": "state-buffer", "var_id": 0},
        "x": {"ops": [], "size": tensor_bytes("x"), "type": "input", "var_id": 1},
        "y": {"ops": [], "size": tensor_bytes("y"), "type": "input", "var_id": 2},
        "output0": {"ops": [], "size": tensor_bytes("output0"), "type": "output", "var_id": 3},
        "identity_sg%04d" % sg_index: {
            "alignment": 64, "fabric_path": "main", "file_name": "value_identity.npy",
            "ops": [], "size": 64, "type": "file", "var_id": 4},
        "spill0": {"backing_variable_off": 128, "ops": [], "size": 256, "type": "virtual",
                   "var_id": 5},
        "DGETable0": {"list": [1, 2, 3], "type": "dge-table", "var_id": 6},
    }
    d = {
        "#rank_world_size": 0,
        "cc_streams": {"num_streams": 0},
        "debug_info": {},
        "dma_dbg": ["debug_info_backend_DMA.dbg"],
        "dma_queue": {
            "qPoolDynamic": {
                "dynamic_dma": {"SB_scratch_partition_offset": 0,
                                "SB_scratch_partition_size": 16384},
                "fabric_path": "main", "num_queues": 16, "owner": "pool",
                "semaphore_set": list(range(24, 40)), "type": "dynamic"},
            "qSPDynamicHW": {"fabric_path": "main", "num_queues": 16, "owner": "sp",
                             "semaphore_set": list(range(8, 24)), "type": "dynamic"},
        },
        "fp8_conversion_config": {"emax_fp8_e4m3": 8, "emax_fp8_e5m2": 15,
                                  "fp8_range_extension": True, "ocp_sat": True},
        "name": "definition",
        "neff_features": ["neff_feature_vnc"],
        "runtime_event_count": 12,
        "runtime_semaphore_count": 3,
        "runtime_statebuffer_reservation": [
            {"base_partition": 0, "offset": 229368, "partitions": 128, "size": 8,
             "type": "evtaccel"}],
        "var": var,
        "version": "0.6",
    }
    for key, stem in ENGINES:
        d[key] = stem + ".json"
        d[key + "_instr"] = stem + ".bin"
        d[key + "_dbg"] = ["debug_info_backend_%s.dbg" % stem]
        d[key + "_asm_dbg"] = ["debug_info_asm_%s.dbg" % stem]
    return d


def engine_json(stem):
    e = {"dma": [], "instr": stem + ".bin", "name": stem + ".json"}
    if stem == "DVE":
        e["dve_tables"] = [{"opcode_table": "default_opcode_table.bin",
                            "datapath_table": "default_datapath_table.bin"}]
    if stem == "Activation":
        e["act_info"] = "act_info.json"
        e["act_semaphore"] = 12
        e["activation_function_sets"] = ["exp_and_others"]
    return e


def tensor_map():
    t = {}
    for name, (kind, dtype, shape, _) in TENSORS.items():
        t[name] = {"dtype": dtype, "is_const": False, "kind": kind, "layer_name": name,
                   "sim_format": "NC", "sim_shape": shape, "tf_file": "value_%s.npy" % name,
                   "tf_format": "NC", "tf_shape": shape}
    t["identity"] = {"dtype": "float32", "is_const": True, "sim_shape": [16],
                     "tf_file": "value_identity.npy", "tf_shape": [16]}
    return t


def neff_json(kelf):
    """The graph: inputs as "null" nodes, the compiled part as a tvm_op."""
    inputs = [n for n, t in TENSORS.items() if t[0] == "input"]
    nodes = [{"op": "null", "name": n, "inputs": [], "output_names": [n], "is_param": "0"}
             for n in inputs]
    nodes.append({"op": "tvm_op", "name": "sg_core",
                  "attrs": {"func_name": "__kelf", "kelf": kelf,
                            "num_inputs": str(len(inputs)), "num_outputs": "1"},
                  "inputs": [[i, 0, 0] for i in range(len(inputs))],
                  "output_names": ["output0"]})
    sig = {n: {"id": i, "dtype": TENSORS[n][1], "shape": TENSORS[n][2]}
           for i, n in enumerate(inputs)}
    return {"nodes": nodes, "arg_nodes": list(range(len(inputs))),
            "heads": [[len(inputs), 0, 0]],
            "metadata": {"signatures": {"default": {"inputs": sig, "outputs": {}}}}}


def sg_members(name, index, defn=None):
    """The members of one subgraph directory."""
    m = {}
    m[name + "/def.json"] = defn if defn is not None else def_json(index)
    for key, stem in ENGINES:
        m["%s/%s.json" % (name, stem)] = engine_json(stem)
        # opaque 64-byte "instructions": their encoding is not public
        m["%s/%s.bin" % (name, stem)] = bytes((i * 7 + len(stem)) & 0xFF
                                              for i in range(64 * (2 + len(stem))))
        m["%s/debug_info_backend_%s.dbg" % (name, stem)] = b"\x0a\x04dbg" + stem.encode()
        m["%s/debug_info_asm_%s.dbg" % (name, stem)] = b"\x0a\x03asm"
    m[name + "/debug_info_backend_DMA.dbg"] = b"\x0a\x03dma"
    m[name + "/tensor_map.json"] = tensor_map()
    m[name + "/act_info.json"] = {"pwp_file_keys": ["bkt_bin", "ctrl_bin"]}
    m[name + "/exp_and_others.json"] = {"functions": ["exp"]}
    m[name + "/exp_and_others_bkt.bin"] = bytes(96)
    m[name + "/default_opcode_table.bin"] = bytes(range(256)) * 4
    m[name + "/default_datapath_table.bin"] = bytes(512)
    m[name + "/value_identity.npy"] = npy_bytes([16], "<f4", struct.pack("<16f", *range(16)))
    return m


def top_members(n_sgs, with_neff_json=True):
    m = {}
    names = ["sg%02d" % i for i in range(n_sgs)]
    if with_neff_json:
        m["neff.json"] = neff_json("kelf-0.json")
        m["kelf-0.json"] = {"graphs": [{"definition": n + "/def.json", "name": n}
                                       for n in names],
                            "version": "0.5", "target": "cayman"}
    m["info.json"] = {"tool_version": "0.0.0+fixture", "kelp_version": "Dynamic",
                      "name": "file.neff", "num_tpb": 1, "num_tpb_requested": 1,
                      "num_tpb_per_node": [1] + [0] * 63}
    m["hlo_stats.json"] = {"HloMacCount": 64, "Traffic": 256}
    m["debug_info/debug_info_hlo.dbg_sg000000"] = b"\x0a\x03hlo"
    for i, n in enumerate(names):
        m.update(sg_members(n, i))
    return m


def tar_gz(members):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(members):
            data = members[name]
            if not isinstance(data, bytes):
                data = json.dumps(data, indent=4).encode()
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def header(data, lnc):
    """The 1024-byte header: pkg_version 2 (md5), NEFF version 2.0."""
    h = bytearray(1024)
    struct.pack_into("<5Q", h, 0, 2, 1024, len(data), 2, 0)
    struct.pack_into("<I", h, 168, 1)                      # num_tpb
    h[172:188] = hashlib.md5(data).digest()                # hash (md5, then zeros)
    h[204:220] = hashlib.md5(b"uuid").digest()             # uuid
    h[220:229] = b"file.neff"                              # name
    struct.pack_into("<I", h, 476, 1)                      # requested_tpb_count
    h[480] = 1                                             # tpb_per_node
    struct.pack_into("<Q", h, 544, 0x209C00)               # feature_bits (no trnemu bit)
    struct.pack_into("<I", h, 552, lnc)                    # lnc_size
    return bytes(h)


def neff(members, lnc):
    data = tar_gz(members)
    return header(data, lnc) + data


def malformed():
    """name -> members of a NEFF that must be rejected."""
    out = {}

    def variant(name, fn, n_sgs=1):
        m = top_members(n_sgs)
        fn(m)
        out[name] = m

    def setvar(m, var, key, value):
        m["sg00/def.json"]["var"][var][key] = value

    variant("bad_kelf_definition", lambda m: m["kelf-0.json"]["graphs"][0].update(
        definition="elsewhere/def.json"))
    variant("bad_kelf_missing", lambda m: m.pop("kelf-0.json"))
    variant("bad_engine_member", lambda m: m["sg00/def.json"].update(pe="Missing.json"))
    variant("bad_instr_member", lambda m: m.pop("sg00/Activation.bin"))
    variant("bad_instr_mismatch", lambda m: m["sg00/PE.json"].update(instr="SP.bin"))
    variant("bad_input_no_size", lambda m: m["sg00/def.json"]["var"]["x"].pop("size"))
    variant("bad_tmap_shape", lambda m: m["sg00/tensor_map.json"]["y"].update(
        tf_shape=[8, 3]))
    variant("bad_tmap_kind", lambda m: m["sg00/tensor_map.json"]["x"].update(kind="output"))
    variant("bad_tmap_dtype", lambda m: m["sg00/tensor_map.json"]["x"].update(
        dtype="float13"))
    variant("bad_dynamic_dma", lambda m: m["sg00/def.json"]["dma_queue"]["qPoolDynamic"].update(
        dynamic_dma=[1]))
    variant("bad_engine_type", lambda m: m["sg00/def.json"].update(dve=7))
    variant("bad_sb_size_type", lambda m: setvar(m, "SB", "size", "big"))
    return out


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    files = {
        "vendor_one.neff": neff(top_members(1), 1),
        "vendor_two.neff": neff(top_members(2), 2),
        "vendor_scan.neff": neff(top_members(1, with_neff_json=False), 1),
    }
    for name, m in malformed().items():
        files[name + ".neff"] = neff(m, 1)
    for name, data in files.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
