/*
 * memfault.c: the process's count of device memory faults and each
 * thread's flag (memfault.h). Both are lock-free atomics, so that a
 * signal handler on the thread may change them whatever it interrupted.
 */
#include "emu/core/memfault.h"

_Atomic uint64_t memfault_all;                 /* faults noted in the process */
static _Thread_local atomic_bool memfault_raised; /* one was noted on this thread */

void memfault_note(void)
{
    atomic_store_explicit(&memfault_raised, true, memory_order_relaxed);
    atomic_fetch_add_explicit(&memfault_all, 1, memory_order_relaxed);
}

bool memfault_take(void)
{
    return atomic_exchange_explicit(&memfault_raised, false, memory_order_relaxed);
}

void memfault_pass(void)
{
    atomic_store_explicit(&memfault_raised, true, memory_order_relaxed);
}
