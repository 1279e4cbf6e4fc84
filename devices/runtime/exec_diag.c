/*
 * exec_diag.c: what a failed or suspicious execution tells its user: the
 * failure report on the VNC's debug stream and in the log, the NaN/Inf
 * scan of float outputs (NEURON_RT_NUMERICAL_ERRORS_VERBOSITY), and the
 * dump of a failed execution's inputs (NEURON_RT_DBG_DUMP_INPUTS_ON_ERR)
 * (exec_int.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/config/env.h"
#include "devices/observe/debugstream.h"
#include "devices/runtime/exec_int.h"
#include "devices/runtime/runtime.h"
#include "emu/core/memfault.h"
#include "emu/log.h"
#include "emu/neff/npy.h"
#include "emu/num/numerics.h"

static const char *exec_diag_status_name(NRT_STATUS st)
{
    switch (st) {
    case NRT_EXEC_OOB: return "out-of-bounds access";
    case NRT_EXEC_COMPLETED_WITH_ERR: return "completed with errors";
    case NRT_TIMEOUT: return "timeout";
    case NRT_EXEC_HW_ERR_COLLECTIVES: return "collective stuck: a rank is missing";
    case NRT_INVALID: return "invalid program";
    default: return "error";
    }
}

/* The report on the VNC's debug stream (ndebug_stream.h), as a uint8
 * "tensor" of text. */
static void exec_diag_debug_event(int vnc, const char *name, NRT_STATUS st, const char *report)
{
    char prefix[512];
    snprintf(prefix, sizeof prefix, "execution of '%s' failed: %s (%d)", name,
             exec_diag_status_name(st), (int)st);
    uint64_t n = strlen(report), shape[1] = {n};
    dstream_push(vnc, prefix, "uint8", shape, 1, report, n);
}

void exec_diag_report(int vnc, const char *name, NRT_STATUS st, const char *report)
{
    exec_diag_debug_event(vnc, name, st, report);
    LOG_ERROR("NRT", "execution of '%s' failed: %s (%d)", name, exec_diag_status_name(st),
              (int)st);
    const char *p = report;
    while (*p != '\0') {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        LOG_ERROR("NRT", "  %.*s", len, p);
        p += len + (nl != NULL);
    }
}

/* "core 0 sp[2]: sp.dma_copy ..." of the report as "core 0 sp[2] (sp.dma_copy ...)"
 * in buf; empty when the report names no instruction. */
static void exec_diag_insn(const char *report, char *buf, size_t cap)
{
    const char *at = strstr(report, "\n  core ");
    buf[0] = '\0';
    if (at == NULL)
        return;
    at += 3;
    int line = (int)strcspn(at, "\n");
    const char *colon = memchr(at, ':', (size_t)line);
    if (colon == NULL || colon[1] != ' ')
        snprintf(buf, cap, "%.*s", line, at);
    else
        snprintf(buf, cap, "%.*s (%.*s)", (int)(colon - at), at, line - (int)(colon - at) - 2,
                 colon + 2);
}

NRT_STATUS exec_diag_mem_fault(const nrt_model_t *m, uint64_t since, const char *report)
{
    char insn[900], what[1200];
    exec_diag_debug_event(m->vnc, m->neff->info.name, NRT_RESOURCE, report);
    exec_diag_insn(report, insn, sizeof insn);
    snprintf(what, sizeof what, "execution of '%s' on VNC %d%s%s", m->neff->info.name, m->vnc,
             insn[0] != '\0' ? ", instruction " : "", insn);
    if (machine_mem_check(rt_machine(), since, what) == NRT_SUCCESS)  /* no fault seen: say so */
        LOG_ERROR("NRT", "%s failed: %s", what, MEMFAULT_CAUSE);
    return NRT_RESOURCE;
}

/* Is there a NaN (nan_only) or a NaN or infinity among the float
 * elements at p? *at: the first one's index. fp32 is scanned in place,
 * narrower floats a converted block at a time. */
static bool exec_diag_bad_value(const uint8_t *p, uint32_t dtype, uint64_t bytes, bool nan_only,
                                uint64_t *at)
{
    size_t es = num_dtype_size(dtype);
    if (!num_dtype_is_float(dtype) || es == 0)
        return false;
    size_t n = (size_t)(bytes / es);
    if (es == 4) {  /* fp32, fp32r */
        *at = num_first_nonfinite_f32((const float *)(const void *)p, n, nan_only);
        return *at < n;
    }
    float buf[1024];
    for (size_t i = 0; i < n; i += 1024) {
        size_t k = n - i < 1024 ? n - i : 1024;
        (void)num_load_f32(buf, p + i * es, dtype, 1, k);
        size_t j = num_first_nonfinite_f32(buf, k, nan_only);
        if (j < k) {
            *at = i + j;
            return true;
        }
    }
    return false;
}

/* What counts follows NEURON_RT_NUMERICAL_ERRORS_VERBOSITY: none:
 * nothing; critical, debug: NaN; verbose or unset: NaN and Inf (outputs
 * are kept either way). */
NRT_STATUS exec_diag_numerics(const nrt_model_t *m, const struct exec_binding *b)
{
    enum env_numerr v = env_get()->numerr;
    bool nan_only = v == ENV_NUMERR_CRITICAL || v == ENV_NUMERR_DEBUG;
    if (v == ENV_NUMERR_NONE)
        return NRT_SUCCESS;
    for (uint32_t i = 0; i < b->n; i++) {
        const struct neff_io *io = &m->neff->io[i];
        uint64_t at;
        if (!io->is_output)
            continue;
        if (exec_diag_bad_value(b->views[i].va, io->dtype, b->views[i].size, nan_only, &at)) {
            LOG_ERROR("NRT", "execution of '%s' produced %s: output '%s' element %" PRIu64,
                      m->neff->info.name, nan_only ? "NaN" : "NaN/Inf", io->name, at);
            return NRT_EXEC_COMPLETED_WITH_NUM_ERR;
        }
    }
    return NRT_SUCCESS;
}

/* The files go to nrt_inputs_<pid>_<model>_<n>/, one log line saying where. */
void exec_diag_dump_inputs(const nrt_model_t *m, const struct exec_binding *b)
{
    static _Atomic uint32_t seq;
    char dir[512];
    snprintf(dir, sizeof dir, "nrt_inputs_%d_%s_%u", (int)getpid(), m->neff->info.name,
             atomic_fetch_add(&seq, 1));
    for (char *c = dir; *c; c++)
        if (*c == '/')
            *c = '_';
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        LOG_ERROR("NRT", "NEURON_RT_DBG_DUMP_INPUTS_ON_ERR: cannot create %s", dir);
        return;
    }
    uint32_t written = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        const struct neff_io *io = &m->neff->io[i];
        uint64_t shape[NEFF_IO_MAX_DIMS];
        uint8_t *npy = NULL;
        size_t len = 0;
        const char *descr = npy_descr_for_dtype(io->dtype);
        for (uint32_t d = 0; d < io->ndim; d++)
            shape[d] = io->shape[d];
        if (io->is_output || descr == NULL ||
            npy_write(descr, shape, io->ndim, b->views[i].va, io->size, &npy, &len) != EMU_OK)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.npy", dir, io->name);
        for (char *c = path + strlen(dir) + 1; *c; c++)
            if (*c == '/')
                *c = '_';
        FILE *f = fopen(path, "wb");
        if (f != NULL && fwrite(npy, 1, len, f) == len)
            written++;
        if (f != NULL)
            fclose(f);
        free(npy);
    }
    LOG_ERROR("NRT", "NEURON_RT_DBG_DUMP_INPUTS_ON_ERR: %u input(s) of '%s' written to %s/",
              written, m->neff->info.name, dir);
}
