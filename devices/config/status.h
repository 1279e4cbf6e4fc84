/*
 * status.h: emu's statuses as the runtime's NRT_STATUS, and back.
 *
 * emu reports in its own enum (emu/status.h) whose values equal the
 * NRT_STATUS codes they stand for; the static_asserts below keep them
 * tied, so the mapping is a cast that the compiler checks.
 */
#ifndef TRNEMU_DEVICES_STATUS_H
#define TRNEMU_DEVICES_STATUS_H

#include <assert.h>

#include "emu/status.h"
#include "nrt/nrt_status.h"

static_assert((int)EMU_OK == (int)NRT_SUCCESS, "EMU_OK");
static_assert((int)EMU_FAILURE == (int)NRT_FAILURE, "EMU_FAILURE");
static_assert((int)EMU_INVALID == (int)NRT_INVALID, "EMU_INVALID");
static_assert((int)EMU_RESOURCE == (int)NRT_RESOURCE, "EMU_RESOURCE");
static_assert((int)EMU_TIMEOUT == (int)NRT_TIMEOUT, "EMU_TIMEOUT");
static_assert((int)EMU_NEFF_VERSION == (int)NRT_UNSUPPORTED_NEFF_VERSION, "EMU_NEFF_VERSION");
static_assert((int)EMU_EXEC_ERR == (int)NRT_EXEC_COMPLETED_WITH_ERR, "EMU_EXEC_ERR");
static_assert((int)EMU_EXEC_OOB == (int)NRT_EXEC_OOB, "EMU_EXEC_OOB");
static_assert((int)EMU_COLL_STALL == (int)NRT_EXEC_HW_ERR_COLLECTIVES, "EMU_COLL_STALL");

/* An emu status as the ABI's status (same value). */
static inline NRT_STATUS nrt_status_of(emu_status s)
{
    return (NRT_STATUS)s;
}

/* A runtime status handed back into emu (a collective's result): the
 * codes emu has keep their value, any other becomes EMU_FAILURE. */
static inline emu_status emu_status_of(NRT_STATUS s)
{
    switch (s) {
    case NRT_SUCCESS: return EMU_OK;
    case NRT_INVALID: return EMU_INVALID;
    case NRT_RESOURCE: return EMU_RESOURCE;
    case NRT_TIMEOUT: return EMU_TIMEOUT;
    case NRT_UNSUPPORTED_NEFF_VERSION: return EMU_NEFF_VERSION;
    case NRT_EXEC_COMPLETED_WITH_ERR: return EMU_EXEC_ERR;
    case NRT_EXEC_OOB: return EMU_EXEC_OOB;
    case NRT_EXEC_HW_ERR_COLLECTIVES: return EMU_COLL_STALL;
    default: return EMU_FAILURE;
    }
}

#endif
