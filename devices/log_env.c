/*
 * log_env.c: the logging configuration of a process (see log_env.h): the
 * levels from NEURON_RT_LOG_LEVEL[_<SUBSYS>] and the "pid:tid" stamp.
 */
#include "devices/log_env.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emu/log.h"

/* NEURON_RT_LOG_LEVEL_<SUBSYS> overrides the global level for one
 * subsystem (read at each check, as the variable may change). */
static int log_env_subsys(const char *subsys)
{
    char var[64];
    int n = snprintf(var, sizeof var, "NEURON_RT_LOG_LEVEL_%s", subsys);
    if (n <= 0 || (size_t)n >= sizeof var)
        return -1;
    for (char *p = var; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    return log_level_parse(getenv(var));
}

/* "pid:tid" of the calling thread. */
static size_t log_env_ident(char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%d:%ld", (int)getpid(), (long)syscall(SYS_gettid));
    return n > 0 ? (size_t)n : 0;
}

void log_env_load(void)
{
    int lvl = log_level_parse(getenv("NEURON_RT_LOG_LEVEL"));
    struct log_config cfg = {lvl >= 0 ? lvl : LOG_LVL_ERROR, log_env_subsys, log_env_ident};
    log_configure(&cfg);
}

/* Configured as soon as the library holding it is loaded. */
__attribute__((constructor)) static void log_env_at_load(void)
{
    log_env_load();
}
