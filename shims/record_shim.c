/*
 * record_shim.c: what libnrt-record.so adds to the generated wrappers
 * (calllog_wrap_next.c): each wrapper forwards to the function of the same
 * name in the next library of the lookup order (dlsym RTLD_NEXT), found on
 * first use and cached.
 *
 *   LD_PRELOAD=libnrt-record.so TRNEMU_RECORD=run.db ./app
 *
 * records every call the program makes into the libnrt loaded after it
 * (the vendor runtime or trnemu's). The library holds no emulation code:
 * only the call log, SQLite and xxHash.
 */
#include <dlfcn.h>
#include <stdatomic.h>

#include "devices/config/log_env.h"
#include "emu/log.h"
#include "store/calllog.h"

/* The next library's functions, by table id (NULL: not looked up yet). */
static void (*_Atomic next_fns[CL_FN_COUNT])(void);
/* Functions already reported missing. */
static _Atomic bool next_reported[CL_FN_COUNT];

__attribute__((constructor)) static void record_shim_init(void)
{
    log_env_load();
    cl_set_recorder("libnrt-record.so");
    cl_set_front_shim();
}

void (*cl_next_fn(enum cl_fn_id id, void (*missing)(void)))(void)
{
    void (*f)(void) = atomic_load_explicit(&next_fns[id], memory_order_acquire);
    if (f != NULL)
        return f;
    void *sym = dlsym(RTLD_NEXT, cl_fns[id].name);
    /* A function pointer from dlsym: POSIX guarantees the conversion. */
    __extension__ f = sym != NULL ? (void (*)(void))sym : missing;
    atomic_store_explicit(&next_fns[id], f, memory_order_release);
    return f;
}

void cl_next_missing(enum cl_fn_id id)
{
    if (!atomic_exchange(&next_reported[id], true))
        LOG_ERROR("NRT", "libnrt-record.so: no library after it defines %s", cl_fns[id].name);
}
