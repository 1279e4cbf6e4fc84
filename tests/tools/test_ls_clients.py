#!/usr/bin/env python3
"""test_ls_clients.py TRNEMU EXAMPLES_DIR: neuron-ls's output read the way
its clients read it.

- Ray's Neuron accelerator manager runs `neuron-ls --json-output`, loads
  the JSON and sums `nc_count` over the devices: that sum must be the
  number of NeuronCores the runtime counts (logical cores, VNCs), so the
  highest core Ray hands out (NEURON_RT_VISIBLE_CORES=<sum - 1>) is one
  nrt_init accepts, and the next is refused. Checked on trn2.48xlarge at
  LNC=2 (64) and LNC=1 (128), trn1.32xlarge (32) and trn1.2xlarge (2).
- The JSON's fields have the vendor guide's names, types and order.
- The text table starts with the instance-type:, instance-id: and (trn2)
  logical-neuroncore-config: lines scripts grep for, and has the vendor's
  columns.
Standard library only.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

TRNEMU, EXAMPLES = sys.argv[1], sys.argv[2]
FIELDS = [("neuron_device", int), ("bdf", str), ("cpu_affinity", str), ("numa_node", str),
          ("connected_to", (list, type(None))), ("nc_count", int),
          ("logical_neuroncore_config", int), ("memory_size", int), ("neuroncore_ids", list),
          ("neuron_processes", list)]


def env_for(instance, lnc=None, **extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("NEURON_LOGICAL_NC_CONFIG", "NEURON_RT_VISIBLE_CORES",
                        "NEURON_RT_NUM_CORES")}
    env["TRNEMU_INSTANCE"] = instance
    if lnc is not None:
        env["NEURON_LOGICAL_NC_CONFIG"] = str(lnc)
    env.update(extra)
    return env


def ray_num_cores(env):
    """Ray's get_current_node_num_accelerators, with trnemu as neuron-ls."""
    result = subprocess.run([TRNEMU, "ls", "--json-output"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, timeout=30)
    nc_count = 0
    if result.returncode == 0 and result.stdout:
        for neuron_device in json.loads(result.stdout):
            nc_count += neuron_device.get("nc_count", 0)
    return nc_count, json.loads(result.stdout)


def check_fields(devs, lnc, per_dev):
    ids = []
    for i, d in enumerate(devs):
        assert [k for k in d] == [k for k, _ in FIELDS], list(d)
        for k, t in FIELDS:
            assert isinstance(d[k], t), (k, d[k])
        assert d["neuron_device"] == i and d["nc_count"] == per_dev, d
        assert d["logical_neuroncore_config"] == lnc, d
        assert d["neuroncore_ids"] == list(range(i * per_dev, (i + 1) * per_dev)), d
        assert re.fullmatch(r"[0-9a-f]{2}:00\.0", d["bdf"]), d["bdf"]
        assert re.fullmatch(r"-?[0-9]+", d["numa_node"]), d["numa_node"]
        assert re.fullmatch(r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*", d["cpu_affinity"])
        ids += d["neuroncore_ids"]
    assert ids == list(range(len(ids))), ids
    assert len({d["bdf"] for d in devs}) == len(devs), "BDFs repeat"


def run_on_core(env, core):
    """Exit status of `trnemu run add.neff` with only `core` visible."""
    e = dict(env, NEURON_RT_VISIBLE_CORES=str(core), NEURON_RT_LOG_LEVEL="ERROR")
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([TRNEMU, "run", os.path.join(EXAMPLES, "add.neff"), "--output-dir",
                            out], capture_output=True, text=True, env=e, timeout=60)
    return p.returncode


def check_machine(instance, lnc, want, per_dev, want_lnc):
    env = env_for(instance, lnc, TRNEMU_INSTANCE_NAME="ls-clients-%d" % os.getpid())
    total, devs = ray_num_cores(env)
    assert total == want, (instance, lnc, total)
    check_fields(devs, want_lnc, per_dev)
    # Ray gives its last task the highest core it counted.
    assert run_on_core(env, total - 1) == 0, (instance, lnc, "core", total - 1)
    assert run_on_core(env, total) != 0, (instance, lnc, "core", total)
    return env, devs


def check_text(env, lnc_line):
    out = subprocess.run([TRNEMU, "ls", "-t"], env=env,
                         capture_output=True, text=True).stdout
    lines = subprocess.run([TRNEMU, "ls", "-w"], env=env, capture_output=True,
                           text=True).stdout.splitlines()
    assert lines[0].startswith("instance-type: "), lines[:3]
    assert re.fullmatch(r"instance-id: i-[0-9a-f]{17}", lines[1]), lines[1]
    assert (lines[2] == lnc_line) if lnc_line else lines[2].startswith("+"), lines[2]
    assert "Neuron Device Topology" in out
    # The default table: the vendor's eight columns.
    with tempfile.TemporaryDirectory() as tmp:
        link = os.path.join(tmp, "neuron-ls")
        os.symlink(os.path.realpath(TRNEMU), link)
        text = subprocess.run([link], env=env, capture_output=True, text=True).stdout
    head = [ln for ln in text.splitlines() if ln.startswith("|")][:2]
    cols = [[c.strip() for c in h.strip("|").split("|")] for h in head]
    names = [" ".join(p).strip() for p in zip(*cols)]
    assert names == ["NEURON DEVICE", "NEURON CORES", "NEURON CORE IDS", "NEURON MEMORY",
                     "CONNECTED DEVICES", "PCI BDF", "CPU AFFINITY", "NUMA NODE"], names
    return text


def main():
    env, devs = check_machine("trn2.48xlarge", 2, 64, 4, 2)
    assert devs[0]["connected_to"] == [12, 3, 4, 1], devs[0]["connected_to"]  # the guide's
    assert devs[5]["connected_to"] == [1, 4, 9, 6], devs[5]["connected_to"]
    text = check_text(env, "logical-neuroncore-config: 2")
    assert re.search(r"^\| 15 +\| 4 +\| 60-63 +\| 96 GB +\| 11, 14, 3, 12 +\| 0000:1f:00\.0 \|",
                     text, re.M), text
    check_machine("trn2.48xlarge", 1, 128, 8, 1)
    env, _ = check_machine("trn1.32xlarge", None, 32, 2, 1)
    check_text(env, None)
    _, devs = check_machine("trn1.2xlarge", None, 2, 2, 1)
    assert devs[0]["connected_to"] is None
    print("neuron-ls as Ray reads it: ok")


if __name__ == "__main__":
    main()
