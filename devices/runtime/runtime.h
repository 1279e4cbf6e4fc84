/*
 * runtime.h: the call door every ABI call passes (rt_door), and the
 * machine behind it; "gate" is only the compute gate (devices/thread/gate.h).
 * The life cycle that opens and shuts the door (nrt_init / nrt_close) is
 * devices/runtime/rt_life.h, at the top of devices/.
 *
 * A call that needs the runtime brackets its work with rt_enter() and
 * rt_leave(). rt_enter answers NRT_UNINITIALIZED before the first
 * nrt_init and NRT_CLOSED after nrt_close; while a call is inside, close
 * waits for it, so no call ever sees a machine being torn down.
 */
#ifndef TRNEMU_DEVICES_RUNTIME_H
#define TRNEMU_DEVICES_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/machine/machine.h"
#include "nrt/nrt_status.h"

/* The runtime's life-cycle phase (not the device state a snapshot saves). */
enum rt_phase {
    RT_UNINITIALIZED = 0,  /* nrt_init was never called */
    RT_OPEN = 1,           /* between nrt_init and nrt_close */
    RT_CLOSED = 2,         /* after nrt_close */
};

/* Enter a call that needs an open runtime; on NRT_SUCCESS the caller must
 * call rt_leave(). On any other status nothing is held. */
NRT_STATUS rt_enter(void);
void rt_leave(void);
/* Is this thread inside a call (rt_enter) or the close holding the door
 * shut (rt_door_shut)? For assert() only: "callers hold rt_enter()". */
bool rt_held(void);

/* Is an nrt_close waiting for the calls in flight? A call that may wait
 * for long (output completion) polls this and gives up with NRT_CLOSED,
 * so that close, and every call queued behind it, is never held up. */
bool rt_closing(void);

/* The life-cycle phase now (racy snapshot, for messages). */
enum rt_phase rt_phase(void);

/* The configuration in force: the running instance's while the runtime is
 * open, else what the environment asks for (queries work before init). */
NRT_STATUS rt_config(struct machine_config *cfg);

/* The machine; only between rt_enter and rt_leave. */
struct machine *rt_machine(void);

/* For rt_life.c only, which serialises them: open the door on machine m;
 * shut it (waits for the calls in flight, then holds every later call);
 * mark it closed (rt_enter answers NRT_CLOSED from now on); take back the
 * machine to destroy; let the held calls go (they see NRT_CLOSED). */
void rt_door_opened(struct machine *m);
void rt_door_shut(void);
void rt_door_closed(void);
struct machine *rt_door_release_machine(void);
void rt_door_unlock(void);

#endif
