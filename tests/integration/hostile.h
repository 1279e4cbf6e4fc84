/*
 * hostile.h: the call table of the API hostility test (test_hostile.c),
 * generated from the ABI facts by gen_hostile.py.
 */
#ifndef TRNEMU_TESTS_INTEGRATION_HOSTILE_H
#define TRNEMU_TESTS_INTEGRATION_HOSTILE_H

#include <stddef.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_status.h"
#include "nrt/nrt_sys_trace.h"
#include "nrt/nrt_version.h"

/* What a generated call returns for a function without an NRT_STATUS. */
#define HOSTILE_NOT_STATUS (-100000)

/* One hostile call. */
struct hostile_call {
    const char *name;  /* the ABI function */
    int variant;       /* 0/1: NULL with zeros/all ones; 2/3: scratch pointers */
    int (*call)(void); /* makes the call, returns its status */
};

/* Zeroed before each call; pointers of variants 2 and 3 point here. */
extern unsigned char hostile_scratch[65536];

extern const struct hostile_call hostile_calls[];
extern const size_t hostile_ncalls;

#endif
