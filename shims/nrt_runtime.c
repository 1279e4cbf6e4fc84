/*
 * nrt_runtime.c: the runtime-wide entry points: nrt_init / nrt_close,
 * version, instance and status queries, VNC counts, memory statistics and
 * HBM mappings.
 */
#include <stdio.h>
#include <string.h>

#include "devices/config/config.h"
#include "devices/runtime/rt_life.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_version.h"
#include "shims/shim.h"
#include "store/snapshot.h"
#include "trnemu_config.h"

NRT_STATUS nrt_init_impl(nrt_framework_type_t framework, const char *fw_version,
                               const char *fal_version)
{
    (void)fw_version;
    (void)fal_version;
    SHIM_REQUIRE(framework >= NRT_FRAMEWORK_TYPE_NO_FW && framework <= NRT_FRAMEWORK_TYPE_PRECHECK,
                 "unknown framework type %d", (int)framework);
    NRT_STATUS st = rt_init((uint32_t)framework);
    /* TRNEMU_RESTORE=FILE[@ID]: start on a restored machine (store/). */
    if (st == NRT_SUCCESS && (st = snap_env_restore()) != NRT_SUCCESS)
        rt_close();
    return st;
}

void nrt_close_impl(void)
{
    rt_close();
}

NRT_STATUS nrt_get_version_impl(nrt_version_t *ver, size_t size)
{
    SHIM_REQUIRE(ver != NULL && size > 0, "ver is NULL or size is 0");
    nrt_version_t v;
    memset(&v, 0, sizeof v);
    v.rt_major = TRNEMU_NRT_MAJOR;
    v.rt_minor = TRNEMU_NRT_MINOR;
    v.rt_patch = TRNEMU_NRT_PATCH;
    v.rt_maintenance = 0;
    snprintf(v.rt_detail, sizeof v.rt_detail, "trnemu %s (Neuron Runtime ABI %d.%d emulation)",
             TRNEMU_VERSION, TRNEMU_NRT_MAJOR, TRNEMU_NRT_MINOR);
    snprintf(v.git_hash, sizeof v.git_hash, "%s", TRNEMU_GIT_HASH);
    /* Callers built against an older, shorter struct get its prefix. */
    memcpy(ver, &v, size < sizeof v ? size : sizeof v);
    return NRT_SUCCESS;
}

NRT_STATUS nrt_get_instance_info_impl(nrt_instance_info_t *info, size_t instance_info_len)
{
    SHIM_REQUIRE(info != NULL && instance_info_len > 0, "info is NULL or its length is 0");
    struct machine_config cfg;
    NRT_STATUS st = rt_config(&cfg);
    if (st != NRT_SUCCESS)
        return st;
    nrt_instance_info_t v;
    memset(&v, 0, sizeof v);
    v.family = cfg.profile->family;
    v.size = cfg.profile->size;
    snprintf(v.arch_name, sizeof v.arch_name, "%s", cfg.profile->arch_name);
    snprintf(v.device_revision, sizeof v.device_revision, "%s", cfg.profile->device_revision);
    memcpy(info, &v, instance_info_len < sizeof v ? instance_info_len : sizeof v);
    return NRT_SUCCESS;
}

/* Counts read the configuration, so they work before nrt_init. */
static NRT_STATUS shim_vnc_count(uint32_t *out, int visible)
{
    SHIM_REQUIRE(out != NULL, "vnc_count is NULL");
    struct machine_config cfg;
    NRT_STATUS st = rt_config(&cfg);
    if (st == NRT_SUCCESS)
        *out = visible ? cfg.visible_count : cfg.total_vncs;
    return st;
}

NRT_STATUS nrt_get_total_nc_count_impl(uint32_t *vnc_count)
{
    return shim_vnc_count(vnc_count, 0);
}

NRT_STATUS nrt_get_total_vnc_count_impl(uint32_t *vnc_count)
{
    return shim_vnc_count(vnc_count, 0);
}

NRT_STATUS nrt_get_visible_nc_count_impl(uint32_t *vnc_count)
{
    return shim_vnc_count(vnc_count, 1);
}

NRT_STATUS nrt_get_visible_vnc_count_impl(uint32_t *vnc_count)
{
    return shim_vnc_count(vnc_count, 1);
}

NRT_STATUS nrt_get_vnc_memory_stats_impl(uint32_t vnc, nrt_vnc_memory_stats_t *stats,
                                               size_t stats_size_in, size_t *stats_size_out)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(stats != NULL && stats_size_out != NULL, "stats or stats_size_out is NULL");
    SHIM_REQUIRE(stats_size_in > 0, "stats_size_in is 0");
    SHIM_ENTER();
    struct machine *m = rt_machine();
    int g = machine_vnc_global(m, (int)vnc);
    if (g < 0 || vnc > INT32_MAX) {
        rt_leave();
        LOG_ERROR("NRT", "VNC %u is not visible to this process", vnc);
        return NRT_INVALID;
    }
    const struct vnc_info *vi = &m->vncs[g];
    nrt_vnc_memory_stats_t v = {
        .bytes_used = (size_t)atomic_load(&vi->used),
        .bytes_limit = (size_t)vi->slice_size,
    };
    size_t n = stats_size_in < sizeof v ? stats_size_in : sizeof v;
    memcpy(stats, &v, n);
    *stats_size_out = n;
    rt_leave();
    return NRT_SUCCESS;
}

NRT_STATUS nrt_get_hbm_mmap_va_impl(int device_id, int hbm_idx, void **addr, size_t *size)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(addr != NULL && size != NULL, "addr or size is NULL");
    SHIM_ENTER();
    struct machine *m = rt_machine();
    NRT_STATUS st = NRT_SUCCESS;
    if (device_id < 0 || (uint32_t)device_id >= m->cfg.profile->chips) {
        LOG_ERROR("NRT", "device %d does not exist (the machine has %u)", device_id,
                  m->cfg.profile->chips);
        st = NRT_INVALID;
    } else if (hbm_idx < 0) {
        LOG_ERROR("NRT", "HBM index %d is negative", hbm_idx);
        st = NRT_INVALID;
    } else if ((uint32_t)hbm_idx >= m->chips[device_id].nstacks) {
        /* documented: the end of the device's list of HBM regions */
        LOG_ERROR("NRT", "device %d has no HBM region %d (its regions are 0..%u)", device_id,
                  hbm_idx, m->chips[device_id].nstacks - 1);
        st = NRT_INVALID_HANDLE;
    } else {
        const struct chip *c = &m->chips[device_id];
        *addr = c->hbm + (uint64_t)hbm_idx * c->stack_size;
        *size = (size_t)c->stack_size;
    }
    rt_leave();
    return st;
}

NRT_STATUS nrt_host_device_id_get_impl(int neuron_dev, uint32_t *host_device_id)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(host_device_id != NULL, "host_device_id is NULL");
    SHIM_ENTER();
    uint32_t chips = rt_machine()->cfg.profile->chips;
    rt_leave();
    SHIM_REQUIRE(neuron_dev >= 0 && (uint32_t)neuron_dev < chips,
                 "device %d does not exist (the machine has %u)", neuron_dev, chips);
    /* No container remapping in the emulator: host ids equal device ids. */
    *host_device_id = (uint32_t)neuron_dev;
    return NRT_SUCCESS;
}

NRT_STATUS nrt_host_device_id_rid_map_get_impl(uint32_t *count, uint32_t *host_did_to_rid_map)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(count != NULL && host_did_to_rid_map != NULL, "count or map is NULL");
    SHIM_ENTER();
    uint32_t chips = rt_machine()->cfg.profile->chips;
    rt_leave();
    SHIM_REQUIRE(*count >= chips, "the map holds %u entries; the machine has %u devices",
                 *count, chips);
    /* Routing ids follow the device order of the emulated topology. */
    for (uint32_t i = 0; i < chips; i++)
        host_did_to_rid_map[i] = i;
    *count = chips;
    return NRT_SUCCESS;
}

const char *nrt_get_status_as_str_impl(NRT_STATUS status)
{
    switch (status) {
    case NRT_SUCCESS: return "Success";
    case NRT_FAILURE: return "Failure";
    case NRT_INVALID: return "Invalid argument or NEFF";
    case NRT_INVALID_HANDLE: return "Invalid handle";
    case NRT_RESOURCE: return "Out of resources";
    case NRT_TIMEOUT: return "Timed out";
    case NRT_HW_ERROR: return "Hardware error";
    case NRT_QUEUE_FULL: return "Execution queue full";
    case NRT_LOAD_NOT_ENOUGH_NC: return "Not enough NeuronCores to load the model";
    case NRT_UNSUPPORTED_NEFF_VERSION: return "Unsupported NEFF version";
    case NRT_FAIL_HOST_MEM_ALLOC: return "Host memory allocation failed";
    case NRT_UNINITIALIZED: return "Runtime not initialized";
    case NRT_CLOSED: return "Runtime closed";
    case NRT_QUEUE_EMPTY: return "Queue empty";
    case NRT_EXEC_UNIT_UNRECOVERABLE: return "Execution unit unrecoverable";
    case NRT_EXEC_BAD_INPUT: return "Bad execution input";
    case NRT_EXEC_COMPLETED_WITH_NUM_ERR: return "Execution completed with numerical errors";
    case NRT_EXEC_COMPLETED_WITH_ERR: return "Execution completed with errors";
    case NRT_EXEC_NC_BUSY: return "NeuronCore busy";
    case NRT_EXEC_OOB: return "Out-of-bounds access during execution";
    case NRT_COLL_PENDING: return "Collective operation pending";
    case NRT_EXEC_HW_ERR_COLLECTIVES: return "Collectives stalled (missing peer)";
    case NRT_EXEC_HW_ERR_HBM_UE: return "HBM uncorrectable error";
    case NRT_EXEC_HW_ERR_NC_UE: return "NeuronCore memory parity error";
    case NRT_EXEC_HW_ERR_DMA_ABORT: return "DMA abort";
    case NRT_EXEC_SW_NQ_OVERFLOW: return "Notification queue overflow";
    case NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE: return "HBM repairable uncorrectable error";
    case NRT_NETWORK_PROXY_FAILURE: return "Network proxy failure";
    }
    return "Unknown status";
}
