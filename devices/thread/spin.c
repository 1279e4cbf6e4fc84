/*
 * spin.c: bounded busy-polling and the process clock (see spin.h).
 */
#include "devices/config/env.h"
#include "devices/thread/spin.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "emu/log.h"

#if defined(__x86_64__) || defined(__i386__)
#define SPIN_PAUSE() __builtin_ia32_pause()
#else
#define SPIN_PAUSE() ((void)0)
#endif

uint64_t spin_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool spin_poll(bool (*ready)(const void *arg), const void *arg, uint64_t ns)
{
    if (ns == 0)
        return false;
    bool offer = ns >= SPIN_YIELD_MIN_NS;
    uint64_t end = spin_now_ns() + ns;
    for (;;) {
        for (uint32_t i = 0; i < SPIN_POLLS; i++) {
            if (ready(arg))
                return true;
            SPIN_PAUSE();
        }
        if (spin_now_ns() >= end)
            return false;
        if (offer)
            sched_yield();  /* a runnable thread of this CPU goes first; none: at once */
    }
}

/* What spin_until_moved polls: a word and the value it had. */
struct spin_word {
    const _Atomic uint32_t *word;  /* the word */
    uint32_t seen;                 /* its value before the wait */
};

static bool spin_word_moved(const void *arg)
{
    const struct spin_word *a = arg;
    return atomic_load_explicit(a->word, memory_order_acquire) != a->seen;
}

bool spin_until_moved(const _Atomic uint32_t *word, uint32_t seen, uint64_t ns)
{
    struct spin_word a = {word, seen};
    return spin_poll(spin_word_moved, &a, ns);
}

uint32_t spin_window_ns(const char *name, const char *component, double def_us)
{
    (void)component;
    uint64_t us; /* checked at nrt_init (env_load); the default if it changed since */
    (void)env_read_uint(name, 0, 10000, (uint64_t)(def_us + 0.5), &us);
    return (uint32_t)(us * 1000u);
}
