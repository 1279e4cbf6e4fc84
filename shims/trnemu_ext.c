/*
 * trnemu_ext.c: trnemu's own exported extensions (abi/trnemu/trnemu.h).
 */
#include <stdio.h>
#include <string.h>

#include "devices/config/config.h"
#include "emu/log.h"
#include "shims/shim.h"
#include "store/snapshot.h"
#include "trnemu/trnemu.h"
#include "trnemu_config.h"

NRT_STATUS trnemu_get_machine_info_impl(trnemu_machine_info_t *info, size_t size)
{
    SHIM_REQUIRE(info != NULL && size > 0, "info is NULL or size is 0");
    struct machine_config cfg;
    NRT_STATUS st = rt_config(&cfg);
    if (st != NRT_SUCCESS)
        return st;
    const struct itype *p = cfg.profile;
    trnemu_machine_info_t v;
    memset(&v, 0, sizeof v);
    snprintf(v.instance_type, sizeof v.instance_type, "%s", p->name);
    snprintf(v.chip_name, sizeof v.chip_name, "%s", p->chip_name);
    v.chips = p->chips;
    v.cores_per_chip = p->cores_per_chip;
    v.nc_generation = (uint32_t)p->gen;
    v.lnc = cfg.lnc;
    v.total_vncs = cfg.total_vncs;
    v.visible_vncs = cfg.visible_count;
    v.hbm_stacks = p->hbm_stacks;
    v.hbm_bytes_per_chip = p->hbm_per_chip;
    memcpy(info, &v, size < sizeof v ? size : sizeof v);
    return NRT_SUCCESS;
}

const char *trnemu_version_impl(void)
{
    return TRNEMU_VERSION;
}

NRT_EXPORT NRT_STATUS trnemu_snapshot_save(const char *path, const char *reason, int64_t *id)
{
    SHIM_REQUIRE(path != NULL && *path != '\0', "path is NULL or empty");
    return snap_api_save(path, reason, id);
}

NRT_EXPORT NRT_STATUS trnemu_snapshot_restore(const char *path, int64_t id)
{
    SHIM_REQUIRE(path != NULL && *path != '\0', "path is NULL or empty");
    return snap_api_restore(path, id);
}

NRT_EXPORT void *trnemu_snapshot_lookup(uint64_t old_handle)
{
    return snap_api_lookup(old_handle);
}

NRT_EXPORT void trnemu_log_tap_begin(void)
{
    log_tap_begin();
}

NRT_EXPORT size_t trnemu_log_tap_end(const char **text)
{
    static const char *ignored;
    return log_tap_end(text != NULL ? text : &ignored);
}
