/*
 * nrt_status.h: the status codes every Neuron Runtime call returns.
 *
 * trnemu's copy of the vendor header: same names and values, comments in
 * trnemu's own words. Values are part of the ABI and never change.
 */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    NRT_SUCCESS = 0,                 /* the call did what was asked */
    NRT_FAILURE = 1,                 /* failed; no more specific code applies */
    NRT_INVALID = 2,                 /* bad argument, bad NEFF, wrong tensor name or size */
    NRT_INVALID_HANDLE = 3,          /* a handle that is not (or no longer) valid */
    NRT_RESOURCE = 4,                /* out of device memory or another resource */
    NRT_TIMEOUT = 5,                 /* the operation did not finish in time */
    NRT_HW_ERROR = 6,                /* the (emulated) hardware reported a fault */
    NRT_QUEUE_FULL = 7,              /* no room left in an execution queue */
    NRT_LOAD_NOT_ENOUGH_NC = 9,      /* not enough free NeuronCores for the load */
    NRT_UNSUPPORTED_NEFF_VERSION = 10, /* the NEFF uses a format this runtime cannot run */
    NRT_FAIL_HOST_MEM_ALLOC = 11,    /* legacy: host allocation failed */
    NRT_UNINITIALIZED = 13,          /* called before nrt_init() */
    NRT_CLOSED = 14,                 /* called after nrt_close() */
    NRT_QUEUE_EMPTY = 15,            /* the queue holds nothing to take */

    NRT_EXEC_UNIT_UNRECOVERABLE = 101, /* an execution unit is stuck; needs a reset */

    NRT_EXEC_BAD_INPUT = 1002,       /* the inputs given to an execution are unusable */
    NRT_EXEC_COMPLETED_WITH_NUM_ERR = 1003, /* ran to the end but produced NaN/Inf */
    NRT_EXEC_COMPLETED_WITH_ERR = 1004, /* ran to the end with another error */
    NRT_EXEC_NC_BUSY = 1005,         /* the NeuronCore is held by another model or process */
    NRT_EXEC_OOB = 1006,             /* an access went outside its memory */
    NRT_COLL_PENDING = 1100,         /* a collective operation has not finished yet */

    NRT_EXEC_HW_ERR_COLLECTIVES = 1200, /* a collective stalled (a peer is missing) */
    NRT_EXEC_HW_ERR_HBM_UE = 1201,   /* uncorrectable, unrepairable HBM error */
    NRT_EXEC_HW_ERR_NC_UE = 1202,    /* parity error in on-chip NeuronCore memory */
    NRT_EXEC_HW_ERR_DMA_ABORT = 1203, /* a DMA engine aborted */
    NRT_EXEC_SW_NQ_OVERFLOW = 1204,  /* the software notification queue overflowed */
    NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE = 1205, /* uncorrectable but repairable HBM error */
    NRT_NETWORK_PROXY_FAILURE = 1206, /* the EFA network proxy failed */
} NRT_STATUS;

/* A constant, human-readable name for a status; never NULL. */
const char *nrt_get_status_as_str(NRT_STATUS status);

#ifdef __cplusplus
}
#endif
