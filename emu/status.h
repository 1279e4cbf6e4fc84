/*
 * status.h: the statuses emu's functions return.
 *
 * emu knows nothing of the runtime's ABI: it reports in this enum of its
 * own. The values are chosen equal to the NRT_STATUS codes they become,
 * and devices/config/status.h maps one to the other (with a static_assert per
 * value), so a status crosses the layer boundary unchanged.
 */
#ifndef TRNEMU_EMU_STATUS_H
#define TRNEMU_EMU_STATUS_H

typedef enum emu_status {
    EMU_OK = 0,              /* done as asked */
    EMU_FAILURE = 1,         /* failed; no more specific status applies */
    EMU_INVALID = 2,         /* bad argument, bad NEFF, bad program text */
    EMU_RESOURCE = 4,        /* out of host memory or another resource */
    EMU_TIMEOUT = 5,         /* a run went past its instruction limit */
    EMU_NEFF_VERSION = 10,   /* the NEFF uses a format emu cannot run */
    EMU_EXEC_ERR = 1004,     /* a program ran into an error (bad operand, deadlock, race) */
    EMU_EXEC_OOB = 1006,     /* an access went outside its memory */
    EMU_COLL_STALL = 1200,   /* a collective's peers never arrived */
} emu_status;

#endif
