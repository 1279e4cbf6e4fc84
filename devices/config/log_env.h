/*
 * log_env.h: configures emu/log from the process's environment.
 *
 * NEURON_RT_LOG_LEVEL sets the level (ERROR by default, QUIET turns logging
 * off), NEURON_RT_LOG_LEVEL_<SUBSYS> one subsystem's, and every line is
 * stamped with the process and thread ids. Applied when libnrt.so.1 is
 * loaded and again by nrt_init; tools and tests call log_env_load.
 */
#ifndef TRNEMU_DEVICES_LOG_ENV_H
#define TRNEMU_DEVICES_LOG_ENV_H

/* Read the environment again and hand the result to emu/log. */
void log_env_load(void);

/* NEURON_RT_LOG_LOCATION (at nrt_init): console (stderr, the default),
 * syslog, or a file path opened for appending; then log_env_load. -1 when
 * the file cannot be opened (the location stays as it was). */
int log_env_location(void);

#endif
