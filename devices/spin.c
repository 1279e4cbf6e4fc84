/*
 * spin.c: bounded busy-polling (see spin.h).
 */
#include "devices/spin.h"

#include <sched.h>
#include <stdlib.h>

#include "devices/channel.h"
#include "emu/log.h"

#if defined(__x86_64__) || defined(__i386__)
#define SPIN_PAUSE() __builtin_ia32_pause()
#else
#define SPIN_PAUSE() ((void)0)
#endif

bool spin_poll(bool (*ready)(const void *arg), const void *arg, uint64_t ns)
{
    if (ns == 0)
        return false;
    bool offer = ns >= SPIN_YIELD_MIN_NS;
    uint64_t end = chan_now_ns() + ns;
    for (;;) {
        for (uint32_t i = 0; i < SPIN_POLLS; i++) {
            if (ready(arg))
                return true;
            SPIN_PAUSE();
        }
        if (chan_now_ns() >= end)
            return false;
        if (offer)
            sched_yield();  /* a runnable thread of this CPU goes first; none: at once */
    }
}

uint32_t spin_window_ns(const char *name, const char *component, double def_us)
{
    const char *v = getenv(name);
    double us = def_us;
    if (v != NULL && *v != '\0') {
        char *end;
        double x = strtod(v, &end);
        if (*end == '\0' && x >= 0 && x <= 10000)
            us = x;
        else
            LOG_WARN(component, "%s=%s is not a number of microseconds in 0 .. 10000; "
                     "using %.0f", name, v, def_us);
    }
    return (uint32_t)(us * 1000.0);
}
