/*
 * log_env.c: the logging configuration of a process (see log_env.h): the
 * levels from NEURON_RT_LOG_LEVEL[_<SUBSYS>] and the "pid:tid" stamp.
 */
#include "devices/config/log_env.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* syslog priorities by log level, taken before emu/log.h reuses the
 * names LOG_INFO and LOG_DEBUG for its macros. */
#include <syslog.h>
static const int log_env_prio[] = {LOG_ERR, LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG, LOG_DEBUG};
#undef LOG_INFO
#undef LOG_DEBUG

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

/* NEURON_RT_LOG_LOCATION: the file lines are appended to (-1: none). */
static _Atomic int log_env_fd = -1;
static _Atomic bool log_env_syslog;

static void log_env_file_sink(int level, const char *line, size_t len)
{
    (void)level;
    ssize_t w = write(atomic_load(&log_env_fd), line, len);
    (void)w;
}

static void log_env_syslog_sink(int level, const char *line, size_t len)
{
    syslog(log_env_prio[level >= 0 && level <= 5 ? level : 1], "%.*s", (int)(len ? len - 1 : 0), line);
}

int log_env_location(void)
{
    const char *where = getenv("NEURON_RT_LOG_LOCATION");
    int fd = -1;
    bool sys = false;
    if (where != NULL && strcasecmp(where, "syslog") == 0) {
        openlog("nrt", LOG_PID, LOG_USER);
        sys = true;
    } else if (where != NULL && *where != '\0' && strcasecmp(where, "console") != 0) {
        fd = open(where, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
            return -1;
    }
    int old = atomic_exchange(&log_env_fd, fd);
    atomic_store(&log_env_syslog, sys);
    log_env_load();
    if (old >= 0 && old != fd)
        close(old);
    return 0;
}

void log_env_load(void)
{
    int lvl = log_level_parse(getenv("NEURON_RT_LOG_LEVEL"));
    struct log_config cfg = {lvl >= 0 ? lvl : LOG_LVL_ERROR, log_env_subsys, log_env_ident,
                             atomic_load(&log_env_syslog) ? log_env_syslog_sink
                             : atomic_load(&log_env_fd) >= 0 ? log_env_file_sink : NULL};
    log_configure(&cfg);
}

/* Configured as soon as the library holding it is loaded. */
__attribute__((constructor)) static void log_env_at_load(void)
{
    log_env_load();
}
