/*
 * spin.h: bounded busy-polling before a thread sleeps.
 *
 * A thread that expects what it waits for within microseconds polls for
 * it a short, bounded window first: when the answer comes in the window,
 * nobody pays for a sleep and a wake-up (on a virtual machine one wake-up
 * of an idle CPU costs 10-25 us). Between rounds of polls of a window of
 * 5 us or more, the poller offers its CPU to any other runnable thread
 * (sched_yield), so that on a host with more busy threads than CPUs it
 * does not hold the core the thread it waits for needs; with nothing else
 * to run it goes on at once.
 */
#ifndef TRNEMU_DEVICES_SPIN_H
#define TRNEMU_DEVICES_SPIN_H

#include <stdbool.h>
#include <stdint.h>

/* The process clock: monotonic time in nanoseconds, for deadlines and
 * polling windows. */
uint64_t spin_now_ns(void);

/* Polls between two looks at the clock (and two offers of the CPU). */
#define SPIN_POLLS 16u
/* Shortest window that offers the CPU: a shorter one (the channel waits'
 * 1 us with more ranks than CPUs) only polls. */
#define SPIN_YIELD_MIN_NS 5000u

/* Call ready(arg) until it returns true or ns nanoseconds passed, with
 * the CPU's pause hint between calls and, in a window of at least
 * SPIN_YIELD_MIN_NS, the CPU offered to other threads every SPIN_POLLS
 * calls while it lasts; false when the window ran out (at once, without
 * calling ready, for ns == 0). */
bool spin_poll(bool (*ready)(const void *arg), const void *arg, uint64_t ns);

/* spin_poll for *word to read anything but seen (acquire); true when it
 * did within ns nanoseconds. */
bool spin_until_moved(const _Atomic uint32_t *word, uint32_t seen, uint64_t ns);

/* A window in microseconds from variable name, read by the runtime's one
 * parser (devices/config/env.c): its value when it is a whole number in
 * 0 .. 10000 (else one log line naming the variable, and def), def when
 * it is unset or empty; returned in nanoseconds. component is unused (the
 * parser's line carries the NRT tag). */
uint32_t spin_window_ns(const char *name, const char *component, double def_us);

#endif
