/*
 * handle.h: the registry of live runtime objects (tensors, tensor sets,
 * models) handed to users as raw pointers.
 *
 * Every ABI call checks a pointer here before it dereferences it, so a
 * freed, foreign or garbage pointer yields NRT_INVALID instead of a crash.
 * Open addressing with linear probing and backward-shift deletion. All
 * functions require the caller to hold handle_lock().
 */
#ifndef TRNEMU_DEVICES_HANDLE_H
#define TRNEMU_DEVICES_HANDLE_H

#include <stdbool.h>
#include <stddef.h>

#include "nrt/nrt_status.h"

enum handle_kind {
    HANDLE_NONE = 0,
    HANDLE_TENSOR = 1,
    HANDLE_TENSOR_SET = 2,
    HANDLE_MODEL = 3,
    HANDLE_TENSOR_INFO = 4,  /* an nrt_tensor_info_array_t handed out */
    HANDLE_SYSTRACE_CONFIG = 5,  /* an nrt_sys_trace_config_t */
    HANDLE_SYSTRACE_FETCH = 6,   /* an nrt_sys_trace_fetch_options_t */
    HANDLE_INSPECT_CONFIG = 7,   /* an nrt_inspect_config_t */
    HANDLE_PROFILE_OPTIONS = 8,  /* an nrt_profile_continuous_options_t */
    HANDLE_NAME_LIST = 9,        /* an array of names handed out (event/activity types) */
    HANDLE_TRACE_BUFFER = 10,    /* a JSON buffer from nrt_sys_trace_fetch_events */
};

void handle_lock(void);
void handle_unlock(void);
/* Does this thread hold handle_lock()? For assert() only. */
bool handle_lock_held(void);

/* Register p as a live object of kind k. NRT_RESOURCE (one log line) when
 * out of memory. */
NRT_STATUS handle_add(const void *p, enum handle_kind k);
/* Is p a live object of kind k? */
bool handle_has(const void *p, enum handle_kind k);
/* Forget p (no-op when absent). */
void handle_remove(const void *p);
/* Call fn on every live object of kind k; fn may not add or remove. */
void handle_each(enum handle_kind k, void (*fn)(void *p, void *arg), void *arg);
/* Number of live objects of kind k. */
size_t handle_count(enum handle_kind k);
/* Every live object of kind k in a calloc'd array of *n (free() it); NULL
 * (and *n 0) when out of memory. */
void **handle_list(enum handle_kind k, size_t *n);

#endif
