#!/usr/bin/env python3
"""test_monitor_clients.py TRNEMU EXAMPLES_DIR: neuron-monitor's stream read
the way its clients read it, with a workload attached (`trnemu run
add.neff` looping on VNC 5 of a process that owns VNCs 4 and 5):

- scalene's Neuron plugin: the configuration it writes (period 1s, system
  vcpu_usage and memory_info, runtime neuroncore_counters, memory_used,
  neuron_runtime_vcpu_usage), idle from usage_data, utilisation from
  neuroncores_in_use, and device memory as the sum of every value under
  memory_used.neuron_runtime_used_bytes.usage_breakdown
  .neuroncore_memory_usage: it must not be 0 MB;
- wandb's Trainium reader: the entry whose pid is the workload's, the
  usage_breakdown's host object and each NeuronCore's object turned into
  records with exactly the vendor's keys (an extra or a missing key makes
  the reader drop the sample);
- the vendor guide's Prometheus exporter: every value it reads, by its
  paths, with every metric group on;
- memory_used.loaded_models: the model, its uuid and id, and per
  subgraph its memory with the vendor's keys, on NeuronCore 5 of device 1;
- the vendor guide's other fields: the cores in use (only VNC 5 runs
  anything, so only "5" is in use), vcpu_usage's context_switch_count,
  and flops: 0 for add.neff, the executions' 2*512^3 each per second for
  matmul_512.neff; --verbose's lines on stderr.
Standard library only.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

TRNEMU, EXAMPLES = sys.argv[1], sys.argv[2]
HOST_KEYS = ["application_memory", "constants", "dma_buffers", "tensors"]
NC_KEYS = ["constants", "model_code", "model_shared_scratchpad", "runtime_memory", "tensors"]
SCALENE_CONFIG = {
    "period": "1s",
    "system_metrics": [{"type": "vcpu_usage"}, {"type": "memory_info"}],
    "neuron_runtimes": [{"tag_filter": ".*", "metrics": [
        {"type": "neuroncore_counters"}, {"type": "memory_used"},
        {"type": "neuron_runtime_vcpu_usage"}]}],
}


def start_workload(tmp, env, neff="add.neff", cores="4-5", vnc="1", device=1):
    e = dict(env, NEURON_RT_VISIBLE_CORES=cores)
    w = subprocess.Popen([TRNEMU, "run", os.path.join(EXAMPLES, neff), "--repeat",
                          "400000", "--vnc", vnc, "--output-dir", os.path.join(tmp, neff)],
                         env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        devs = json.loads(subprocess.run([TRNEMU, "ls", "-j"], env=env, capture_output=True,
                                         text=True).stdout)
        if any(p["pid"] == w.pid for p in devs[device]["neuron_processes"]):
            return w
        time.sleep(0.05)
    w.kill()
    raise AssertionError("the workload never attached")


def monitor_lines(tmp, env, config, count):
    path = os.path.join(tmp, "monitor.json")
    with open(path, "w") as f:
        json.dump(config, f)
    p = subprocess.run([TRNEMU, "monitor", "-c", path, "--count", str(count)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def scalene_reads(line):
    """(cpu utilisation, NeuronCore utilisation, device MB) as scalene gets them."""
    data = json.loads(line)
    usage = data.get("system_data", {}).get("vcpu_usage", {}).get("usage_data", {})
    idle = [u.get("idle", 0) for u in usage.values()]
    cpu = 100 - sum(idle) / len(idle) if idle else 0.0
    util, cores, mem = 0.0, 0, 0.0
    for entry in data.get("neuron_runtime_data", []):
        rep = entry.get("report", {})
        for c in rep.get("neuroncore_counters", {}).get("neuroncores_in_use", {}).values():
            u = c.get("neuroncore_utilization", 0)
            assert u <= 100.0
            util += u
            cores += u > 0
        per_nc = (rep.get("memory_used", {}).get("neuron_runtime_used_bytes", {})
                  .get("usage_breakdown", {}).get("neuroncore_memory_usage", {}))
        for m in per_nc.values():
            mem += sum(m.values())
    return cpu, util / max(cores, 1) / 100.0, mem / 1048576.0


def wandb_reads(line, pid):
    """wandb's sample: the workload's report turned into fixed records."""
    raw = json.loads(line)
    rep = [e["report"] for e in raw["neuron_runtime_data"] if int(e["pid"]) == pid][0]
    in_use = rep["neuroncore_counters"]["neuroncores_in_use"]
    used = rep["memory_used"]["neuron_runtime_used_bytes"]
    breakdown = used["usage_breakdown"]
    assert list(breakdown["host"]) == HOST_KEYS, breakdown["host"]
    for v in breakdown["neuroncore_memory_usage"].values():
        assert list(v) == NC_KEYS, v
        assert all(isinstance(x, int) and x >= 0 for x in v.values()), v
    return in_use, used


ALL_GROUPS = {
    "period": "300ms",
    "neuron_runtimes": [{"metrics": [
        {"type": "neuroncore_counters"}, {"type": "memory_used"},
        {"type": "neuron_runtime_vcpu_usage"}, {"type": "execution_stats"}]}],
    "system_metrics": [{"type": "vcpu_usage"}, {"type": "memory_info"},
                       {"type": "neuron_hw_counters"}],
}


def exporter_reads(rep):
    """Every value the vendor guide's Prometheus exporter sample reads, by
    the same paths: a missing key is the KeyError that stops it."""
    info = rep["instance_info"]
    labels = [info[k] for k in ("instance_name", "instance_id", "instance_type",
                                "instance_availability_zone", "instance_region", "subnet_id")]
    got = [labels]
    for rt in rep["neuron_runtime_data"]:
        assert rt["error"] == "", rt
        r = rt["report"]
        for g in r.values():
            assert g["error"] == "", g
        got += [v["neuroncore_utilization"] / 100.0
                for v in r["neuroncore_counters"]["neuroncores_in_use"].values()]
        got += [r["neuron_runtime_vcpu_usage"]["vcpu_usage"][f] for f in ("user", "system")]
        used = r["memory_used"]["neuron_runtime_used_bytes"]
        got += [used["host"], used["neuron_device"]]
        for nc in used["usage_breakdown"]["neuroncore_memory_usage"].values():
            got += [nc[k] for k in NC_KEYS]
        ex = r["execution_stats"]
        got += list(ex["error_summary"].values()) + list(ex["execution_summary"].values())
        if ex["latency_stats"]["total_latency"] is not None:
            got += list(ex["latency_stats"]["total_latency"].values())
    sd = rep["system_data"]
    for d in sd["neuron_hw_counters"]["neuron_devices"]:
        got += [d["neuron_device_index"]] + [d[k] for k in (
            "mem_ecc_corrected", "mem_ecc_uncorrected", "sram_ecc_corrected",
            "sram_ecc_uncorrected")]
    v = sd["vcpu_usage"]
    got += [len(v["usage_data"])] + [v["average_usage"][k] for k in (
        "user", "nice", "system", "io_wait", "irq", "soft_irq")]
    got += [sd["memory_info"][k] for k in ("memory_total_bytes", "memory_used_bytes",
                                           "swap_total_bytes", "swap_used_bytes")]
    hw = rep["neuron_hardware_info"]
    got += [hw["neuron_device_count"], hw["neuroncore_per_device_count"]]
    return got


def check_loaded_models(rep, pid):
    """memory_used.loaded_models: the model `trnemu run` loaded on VNC 5."""
    entry = [e for e in rep["neuron_runtime_data"] if e["pid"] == pid][0]
    models = entry["report"]["memory_used"]["loaded_models"]
    assert len(models) == 1, models
    m = models[0]
    assert list(m) == ["name", "uuid", "model_id", "is_running", "subgraphs"], m
    assert m["name"] == "add" and isinstance(m["model_id"], int) and m["model_id"] > 0, m
    assert isinstance(m["is_running"], bool) and len(m["uuid"]) == 32, m
    int(m["uuid"], 16)
    assert len(m["subgraphs"]) >= 1, m
    for sg in m["subgraphs"].values():
        used = sg["memory_used_bytes"]
        assert list(used["usage_breakdown"]["host"]) == HOST_KEYS, used
        assert list(used["usage_breakdown"]["neuron_device"]) == [
            "constants", "model_code", "runtime_memory", "tensors"], used
        assert used["host"] == sum(used["usage_breakdown"]["host"].values()), used
        assert used["neuron_device"] == sum(used["usage_breakdown"]["neuron_device"].values())
        assert sg["neuroncore_index"] == 5 and sg["neuron_device_index"] == 1, sg


def wait_executing(env, vnc):
    """Until the model on vnc has completed an execution (the first is slow)."""
    for _ in range(300):
        st = json.loads(subprocess.run([TRNEMU, "ls", "--stats", "--json"], env=env,
                                       capture_output=True, text=True).stdout)
        if any(m["vnc"] == vnc and m["executions"] > 0 for m in st.get("models", [])):
            return
        time.sleep(0.05)
    raise AssertionError("no execution completed on VNC %d" % vnc)


def check_verbose(tmp, env, pid):
    """--verbose (the vendor's 0-4): nothing on stderr at 0; at 2 a line per
    report and one per process, here left out by the tag filter."""
    path = os.path.join(tmp, "none.json")
    with open(path, "w") as f:
        json.dump({"period": "100ms", "neuron_runtimes": [{"tag_filter": "^nobody$"}]}, f)
    for level, want in (("0", None), ("2", "pid %d tag '%d': no tag_filter takes it" % (pid, pid))):
        p = subprocess.run([TRNEMU, "monitor", "-c", path, "--count", "1", "--verbose", level],
                           env=env, capture_output=True, text=True, timeout=30)
        assert p.returncode == 0 and json.loads(p.stdout)["neuron_runtime_data"] == [], p
        if want is None:
            assert p.stderr == "", p.stderr
        else:
            assert "report 1: 0 runtimes" in p.stderr and want in p.stderr, p.stderr


def check_flops(tmp, env):
    """flops: operations per second of the period; matmul_512 does 2*512^3
    per execution, so flops = completed executions * 2*512^3 / period."""
    w = start_workload(tmp, env, "matmul_512.neff", "6-7", "0", 1)
    try:
        wait_executing(env, 6)
        cfg = {"period": "400ms", "neuron_runtimes": [{"metrics": [
            {"type": "neuroncore_counters"}, {"type": "execution_stats"}]}]}
        for _ in range(5):  # a loaded host may finish no execution in one period
            rep = json.loads(monitor_lines(tmp, env, cfg, 1)[-1])
            entry = [e for e in rep["neuron_runtime_data"] if e["pid"] == w.pid][0]["report"]
            nc = entry["neuroncore_counters"]
            done = entry["execution_stats"]["execution_summary"]["completed"]
            if done > 0:
                break
        flops = nc["neuroncores_in_use"]["6"]["flops"]
        want = done * 2 * 512 ** 3 / nc["period"]
        assert isinstance(flops, int) and done > 0, (flops, done)
        assert abs(flops - want) <= 0.1 * want + 2 * 512 ** 3 / nc["period"], (flops, want)
    finally:
        w.kill()
        w.wait()


def check_readme_sample(env, pid):
    """The README's `monitor -c examples/monitor.json` runs, and every group
    the sample asks for is in the report (the workload's among the runtimes)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "monitor.json")
    with open(path) as f:
        cfg = json.load(f)
    p = subprocess.run([TRNEMU, "monitor", "-c", path, "--count", "1"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout.splitlines()[-1])
    runtimes = {r["pid"]: r["report"] for r in rep["neuron_runtime_data"]}
    assert pid in runtimes, list(runtimes)
    for m in cfg["neuron_runtimes"][0]["metrics"]:
        assert m["type"] in runtimes[pid], (m["type"], list(runtimes[pid]))
    for m in cfg["system_metrics"]:
        assert m["type"] in rep["system_data"], (m["type"], list(rep["system_data"]))


def main():
    env = dict(os.environ, TRNEMU_INSTANCE_NAME="mon-clients-%d" % os.getpid(),
               NEURON_RT_LOG_LEVEL="ERROR")
    with tempfile.TemporaryDirectory() as tmp:
        w = start_workload(tmp, env)
        try:
            wait_executing(env, 5)
            lines = monitor_lines(tmp, env, SCALENE_CONFIG, 2)
            cpu, util, mb = scalene_reads(lines[-1])
            assert 0 <= cpu <= 100 and 0 < util <= 1.0, (cpu, util)
            assert mb > 0, "scalene would show 0 MB of device memory"
            in_use, used = wandb_reads(lines[-1], w.pid)
            assert set(in_use) == {"5"}, in_use  # owns 4-5, runs on 5 only
            per_nc = used["usage_breakdown"]["neuroncore_memory_usage"]
            assert set(per_nc) == {"4", "5"}, per_nc
            dev = sum(sum(v.values()) for v in per_nc.values())
            assert used["neuron_device"] == dev > 0, used
            assert per_nc["5"]["tensors"] > 0, per_nc  # run's input and output tensors
            assert per_nc["4"] == dict.fromkeys(NC_KEYS, 0), per_nc  # nothing on VNC 4
            host = used["usage_breakdown"]["host"]
            assert sum(host.values()) == used["host"] > 0, (host, used["host"])
            check_loaded_models(json.loads(lines[-1]), w.pid)
            assert len(exporter_reads(json.loads(monitor_lines(tmp, env, ALL_GROUPS, 1)[-1])))
            vcpu = json.loads(lines[-1])["system_data"]["vcpu_usage"]
            assert isinstance(vcpu["context_switch_count"], int), vcpu
            assert vcpu["context_switch_count"] > 0, vcpu  # a busy workload switches
            # add.neff has no matmul: no floating-point operations counted
            assert in_use["5"]["flops"] == 0, in_use
            check_verbose(tmp, env, w.pid)
            check_readme_sample(env, w.pid)
            check_flops(tmp, env)
        finally:
            w.kill()
            w.wait()
    print("neuron-monitor as scalene and wandb read it: ok")


if __name__ == "__main__":
    main()
