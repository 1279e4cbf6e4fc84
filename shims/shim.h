/*
 * shim.h: helpers shared by the exported nrt_* / nrta_* entry points.
 *
 * The shims validate arguments, pass the runtime's call door and call into
 * devices/; they hold no emulation logic. Each failed check logs one line
 * (the function name is part of the log prefix) and returns its status.
 */
#ifndef TRNEMU_SHIMS_SHIM_H
#define TRNEMU_SHIMS_SHIM_H

#include <stdlib.h>

#include "devices/runtime/handle.h"
#include "devices/runtime/runtime.h"
#include "emu/log.h"
#include "nrt/nrt.h"

/* Marks a function that libnrt.so.1 exports (see abi/libnrt.map). The
 * functions of the call log's table (abi/calls.def) are written here as
 * NAME_impl (prototypes in the generated calllog_impl.h); the generated
 * wrappers export NAME, record when asked, and call NAME_impl. */
#define NRT_EXPORT __attribute__((visibility("default")))

#include "calllog_impl.h"

/* Log lines name the exported function: "nrt_execute_impl" -> "nrt_execute". */
static inline const char *shim_log_name(const char *func)
{
    static _Thread_local char name[96];
    size_t n = __builtin_strlen(func);
    if (n <= 5 || n - 5 >= sizeof name || __builtin_strcmp(func + n - 5, "_impl") != 0)
        return func;
    __builtin_memcpy(name, func, n - 5);
    name[n - 5] = '\0';
    return name;
}
#undef LOG_ERROR
#undef LOG_WARN
#undef LOG_INFO
#undef LOG_DEBUG
#define LOG_ERROR(sub, ...) log_write(LOG_LVL_ERROR, sub, shim_log_name(__func__), __VA_ARGS__)
#define LOG_WARN(sub, ...) log_write(LOG_LVL_WARN, sub, shim_log_name(__func__), __VA_ARGS__)
#define LOG_INFO(sub, ...) log_write(LOG_LVL_INFO, sub, shim_log_name(__func__), __VA_ARGS__)
#define LOG_DEBUG(sub, ...) log_write(LOG_LVL_DEBUG, sub, shim_log_name(__func__), __VA_ARGS__)

/* Return NRT_INVALID with a log line when cond does not hold. */
#define SHIM_REQUIRE(cond, ...)                                                \
    do {                                                                       \
        if (!(cond)) {                                                         \
            LOG_ERROR("NRT", __VA_ARGS__);                                     \
            return NRT_INVALID;                                                \
        }                                                                      \
    } while (0)

/* Pass the runtime's call door (NRT_UNINITIALIZED / NRT_CLOSED otherwise). */
#define SHIM_ENTER()                                                           \
    do {                                                                       \
        NRT_STATUS shim_door_ = rt_enter();                                    \
        if (shim_door_ != NRT_SUCCESS) {                                       \
            LOG_ERROR("NRT", "%s", shim_door_ == NRT_UNINITIALIZED             \
                      ? "called before nrt_init()" : "called after nrt_close()"); \
            return shim_door_;                                                 \
        }                                                                      \
    } while (0)

/* The whole body of a call past its argument checks: pass the runtime
 * call door, evaluate call (an NRT_STATUS expression) inside it, leave, return
 * its status. */
#define SHIM_CALL(call)                                                        \
    do {                                                                       \
        SHIM_ENTER();                                                          \
        NRT_STATUS shim_st_ = (call);                                          \
        rt_leave();                                                            \
        return shim_st_;                                                       \
    } while (0)

/* First thing in a call that needs the runtime: before nrt_init (or after
 * nrt_close) that is the status, whatever the arguments (the documented
 * order: NRT_UNINITIALIZED before NRT_INVALID). SHIM_ENTER still decides
 * behind the door. */
#define SHIM_DOOR_FIRST()                                                      \
    do {                                                                       \
        enum rt_phase shim_s_ = rt_phase();                                    \
        if (shim_s_ != RT_OPEN) {                                              \
            LOG_ERROR("NRT", "%s", shim_s_ == RT_UNINITIALIZED                 \
                      ? "called before nrt_init()" : "called after nrt_close()"); \
            return shim_s_ == RT_UNINITIALIZED ? NRT_UNINITIALIZED : NRT_CLOSED; \
        }                                                                      \
    } while (0)

/* Objects the shims hand out (options, name lists, buffers) are registered
 * (devices/runtime/handle.h) so that a foreign pointer is refused, never used. */
static inline NRT_STATUS shim_obj_add(void *p, enum handle_kind k)
{
    handle_lock();
    NRT_STATUS st = handle_add(p, k);
    handle_unlock();
    return st;
}

static inline bool shim_obj_ok(const void *p, enum handle_kind k)
{
    handle_lock();
    bool ok = p != NULL && handle_has(p, k);
    handle_unlock();
    return ok;
}

/* Forget p; false when it was not a live object of kind k. */
static inline bool shim_obj_take(const void *p, enum handle_kind k)
{
    handle_lock();
    bool ok = p != NULL && handle_has(p, k);
    if (ok)
        handle_remove(p);
    handle_unlock();
    return ok;
}

/* The option objects the shims hand out (nrt_*_allocate / nrt_*_free):
 * the end of one, false (nothing freed) when p is not a live object of
 * kind k. */
static inline bool shim_obj_free(void *p, enum handle_kind k)
{
    if (!shim_obj_take(p, k))
        return false;
    free(p);
    return true;
}

/* Set p to a new, zeroed, registered option object of kind k, or return
 * NRT_RESOURCE with one log line from the calling allocate function. */
#define SHIM_OBJ_NEW(p, k)                                                     \
    do {                                                                       \
        (p) = calloc(1, sizeof *(p));                                          \
        if ((p) == NULL) {                                                     \
            LOG_ERROR("NRT", "out of memory");                                 \
            return NRT_RESOURCE;                                               \
        }                                                                      \
        if (shim_obj_add((p), (k)) != NRT_SUCCESS) { /* handle_add logged it */ \
            free(p);                                                           \
            return NRT_RESOURCE;                                               \
        }                                                                      \
    } while (0)

/* A new registered array of the names name(i) of the bits i < count set in
 * pick (shim_names.c); NRT_RESOURCE when memory runs out. */
NRT_STATUS shim_name_list(uint64_t pick, int count, const char *(*name)(int), const char ***out,
                          size_t *n_out);

#endif
