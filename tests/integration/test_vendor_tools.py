#!/usr/bin/env python3
"""test_vendor_tools.py: neuron-ls's and neuron-monitor's JSON checked
against the fields the vendor documentation lists
(tools/neuron-sys-tools/neuron-ls.rst and neuron-monitor-user-guide.rst),
with a real workload attached to the instance: `trnemu run` executing
add.neff in a loop on VNCs 4-5 (device 1 of trn2.48xlarge).

Usage: test_vendor_tools.py TRNEMU EXAMPLES_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import time

TRNEMU, EXAMPLES = sys.argv[1], sys.argv[2]
TAG = "vt-workload"


def run(*args, check=True):
    p = subprocess.run([TRNEMU] + list(args), capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"trnemu {' '.join(args)} failed: {p.stderr}")
    return p


def ls_json(*extra):
    return json.loads(run("ls", "-j", *extra).stdout)


def start_workload(tmp):
    env = dict(os.environ, NEURON_RT_VISIBLE_CORES="4-5", NEURON_PROCESS_TAG=TAG)
    w = subprocess.Popen([TRNEMU, "run", os.path.join(EXAMPLES, "add.neff"), "--repeat",
                          "400000", "--vnc", "1", "--output-dir", tmp], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):  # until it is attached and executing
        devs = ls_json()
        if any(p["pid"] == w.pid for p in devs[1]["neuron_processes"]):
            return w
        time.sleep(0.05)
    w.kill()
    raise AssertionError("the workload never showed up in neuron-ls -j")


LS_FIELDS = {"neuron_device": int, "bdf": str, "cpu_affinity": str, "numa_node": str,
             "nc_count": int, "logical_neuroncore_config": int, "memory_size": int,
             "neuroncore_ids": list, "neuron_processes": list}


def check_ls(w):
    devs = ls_json()
    assert isinstance(devs, list) and len(devs) == 16, len(devs)
    ids = []
    for i, d in enumerate(devs):
        for k, t in LS_FIELDS.items():
            assert isinstance(d[k], t), (k, d[k])
        assert d["neuron_device"] == i
        assert d["connected_to"] is None or all(isinstance(c, int) for c in d["connected_to"])
        assert d["nc_count"] == 4 and d["logical_neuroncore_config"] == 2
        assert d["memory_size"] == 96 << 30
        assert len(d["neuroncore_ids"]) == d["nc_count"]
        ids += d["neuroncore_ids"]
        for p in d["neuron_processes"]:
            assert set(p) == {"pid", "command", "neuron_runtime_version"}, p
        want = [w.pid] if i == 1 else []
        assert [p["pid"] for p in d["neuron_processes"]] == want, (i, d["neuron_processes"])
    assert ids == list(range(64))
    p = devs[1]["neuron_processes"][0]
    assert "add.neff" in p["command"] and p["neuron_runtime_version"] == "2.0.0", p
    assert sorted(devs[0]["connected_to"]) == [1, 3, 4, 12]
    # -a: this listing's own process too, not a runtime user
    allp = ls_json("-a")[1]["neuron_processes"]
    assert [p["pid"] for p in allp][0] == w.pid and len(allp) == 2, allp
    assert allp[1]["neuron_runtime_version"] == "NA" and " ls -j -a" in allp[1]["command"]
    wide = run("ls", "-w").stdout
    assert "RUNTIME" in wide and f"| {w.pid} " in wide, wide
    topo = run("ls", "-t").stdout
    assert "Neuron Device Topology" in topo and "CONNECTED" in topo
    assert run("ls", "-x", check=False).returncode == 2


def monitor(cfg, tmp, count=2):
    path = os.path.join(tmp, "monitor.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    out = run("monitor", "-c", path, "--count", str(count)).stdout.splitlines()
    assert len(out) == count, out
    return [json.loads(line) for line in out]


def group(g, *keys):
    assert isinstance(g["period"], float) and g["period"] > 0 and g["error"] == "", g
    for k in keys:
        assert k in g, (k, g)


LATENCY = {"p0", "p1", "p25", "p50", "p75", "p99", "p100"}


def check_runtime(r, w):
    assert r["pid"] == w.pid and r["neuron_runtime_tag"] == TAG and r["error"] == ""
    rep = r["report"]
    nc = rep["neuroncore_counters"]
    group(nc, "neuroncores_in_use")
    assert set(nc["neuroncores_in_use"]) == {"5"}, nc  # owns 4-5, runs on 5 only
    u = nc["neuroncores_in_use"]["5"]
    assert 0 < u["neuroncore_utilization"] <= 100, u
    assert set(u["v3d"]) == {"nc_v3.10", "nc_v3.11"}, u
    ex = rep["execution_stats"]
    group(ex, "error_summary", "execution_summary", "latency_stats")
    assert set(ex["error_summary"]) == {"generic", "numerical", "transient", "model", "runtime",
                                        "hardware"}
    s = ex["execution_summary"]
    assert set(s) == {"completed", "completed_with_err", "completed_with_num_err", "timed_out",
                      "incorrect_input", "failed_to_queue"}
    assert s["completed"] > 0 and s["completed_with_err"] == 0, s
    lat = ex["latency_stats"]
    for k in ("total_latency", "device_latency"):
        assert set(lat[k]) == LATENCY and 0 < lat[k]["p0"] <= lat[k]["p50"] <= lat[k]["p100"]
    mem = rep["memory_used"]
    group(mem, "neuron_runtime_used_bytes")
    assert mem["neuron_runtime_used_bytes"]["host"] > 0
    assert mem["neuron_runtime_used_bytes"]["neuron_device"] >= 0
    cpu = rep["neuron_runtime_vcpu_usage"]
    group(cpu, "vcpu_usage")
    assert set(cpu["vcpu_usage"]) == {"user", "system"}


def check_monitor(w, tmp):
    cfg = {"period": "300ms",
           "neuron_runtimes": [{"tag_filter": "^vt-", "metrics": [
               {"type": "neuroncore_counters"}, {"type": "memory_used"},
               {"type": "neuron_runtime_vcpu_usage"}, {"type": "execution_stats"}]}],
           "system_metrics": [{"type": "vcpu_usage"}, {"type": "memory_info"},
                              {"period": "2s", "type": "neuron_hw_counters"}]}
    for rep in monitor(cfg, tmp):
        assert set(rep) == {"neuron_runtime_data", "system_data", "instance_info",
                            "neuron_hardware_info"}, set(rep)
        rts = rep["neuron_runtime_data"]
        assert len(rts) == 1, rts
        check_runtime(rts[0], w)
        sd = rep["system_data"]
        group(sd["vcpu_usage"], "average_usage", "usage_data")
        assert set(sd["vcpu_usage"]["average_usage"]) == {"user", "nice", "system", "idle",
                                                         "io_wait", "irq", "soft_irq"}
        group(sd["memory_info"], "memory_total_bytes", "memory_used_bytes", "swap_total_bytes",
              "swap_used_bytes")
        hw = sd["neuron_hw_counters"]
        group(hw, "neuron_devices")
        assert len(hw["neuron_devices"]) == 16
        assert set(hw["neuron_devices"][0]) == {"neuron_device_index", "mem_ecc_corrected",
                                                "mem_ecc_uncorrected", "sram_ecc_uncorrected",
                                                "sram_ecc_corrected"}
        ii = rep["instance_info"]
        assert set(ii) == {"instance_name", "instance_id", "instance_type",
                           "instance_availability_zone", "instance_availability_zone_id",
                           "instance_region", "ami_id", "subnet_id", "error"}
        assert ii["instance_type"] == "trn2.48xlarge"
        hi = rep["neuron_hardware_info"]
        assert hi == {"neuron_device_type": "trainium2", "neuron_device_version": "v4",
                      "neuroncore_version": "v3d", "neuron_device_count": 16,
                      "neuron_device_memory_size": 96 << 30, "neuroncore_per_device_count": 4,
                      "logical_neuroncore_config": 2, "error": ""}, hi
    # a tag filter that takes nothing; only the system groups asked for
    rep = monitor({"period": "100ms", "neuron_runtimes": [{"tag_filter": "^other$"}],
                   "system_metrics": [{"type": "memory_info"}]}, tmp, 1)[0]
    assert rep["neuron_runtime_data"] == [] and set(rep["system_data"]) == {"memory_info"}


def check_bad_configs(tmp):
    path = os.path.join(tmp, "bad.json")
    for text in ('{"period": "fast"}', '[1]', '{"system_metrics": [{"type": "gpu"}]}',
                 '{"neuron_runtimes": [{"tag_filter": "("}]}', '{"period": '):
        with open(path, "w") as f:
            f.write(text)
        p = run("monitor", "-c", path, "--count", "1", check=False)
        assert p.returncode == 1 and p.stdout == "", (text, p)
        assert len(p.stderr.strip().splitlines()) == 1, (text, p.stderr)
    assert run("monitor", "--count", "0", check=False).returncode == 2


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_bad_configs(tmp)
        w = start_workload(tmp)
        try:
            check_ls(w)
            check_monitor(w, tmp)
        finally:
            w.kill()
            w.wait()
    print("neuron-ls and neuron-monitor JSON: ok")


if __name__ == "__main__":
    main()
