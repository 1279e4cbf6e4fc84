/*
 * rt_life.h: the life cycle of the emulated runtime (nrt_init / nrt_close):
 * the top of devices/, the one file that starts and stops every module.
 */
#ifndef TRNEMU_DEVICES_RT_LIFE_H
#define TRNEMU_DEVICES_RT_LIFE_H

#include <stdint.h>

#include "nrt/nrt_status.h"

/* Create the machine from the environment and open the call door. Twice
 * is harmless. */
NRT_STATUS rt_init(uint32_t framework);
/* Shut the door, free every tensor and model, then the machine. Harmless
 * when not open. */
void rt_close(void);

#endif
