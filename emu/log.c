/*
 * log.c: formats and filters trnemu's log lines (see log.h).
 *
 * Each line is built in a stack buffer and written with one write(2), so
 * lines from several threads or processes never interleave.
 */
#include "emu/log.h"

#include <ctype.h>
#include <fcntl.h>
#include <syslog.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 2048

static const char *const log_level_names[] = {
    "QUIET", "ERROR", "WARN", "INFO", "DEBUG", "TRACE",
};

/* Where lines go: a file descriptor (stderr by default), or syslog. */
static _Atomic int log_fd = STDERR_FILENO;
static _Atomic bool log_to_syslog;

/* Cached global level; -1 means "read the environment again". */
static _Atomic int log_global_level = -1;

int log_level_parse(const char *name)
{
    if (name == NULL || *name == '\0')
        return -1;
    if (strcasecmp(name, "WARNING") == 0)
        return LOG_LVL_WARN;
    for (int i = 0; i <= LOG_LVL_TRACE; i++)
        if (strcasecmp(name, log_level_names[i]) == 0)
            return i;
    return -1;
}

void log_reload(void)
{
    atomic_store(&log_global_level, -1);
}

static int log_global(void)
{
    int lvl = atomic_load(&log_global_level);
    if (lvl >= 0)
        return lvl;
    lvl = log_level_parse(getenv("NEURON_RT_LOG_LEVEL"));
    if (lvl < 0)
        lvl = LOG_LVL_ERROR;
    atomic_store(&log_global_level, lvl);
    return lvl;
}

/* NEURON_RT_LOG_LEVEL_<SUBSYS> overrides the global level for one subsystem. */
static int log_subsys_level(const char *subsys)
{
    char var[64];
    int n = snprintf(var, sizeof var, "NEURON_RT_LOG_LEVEL_%s", subsys);
    if (n <= 0 || (size_t)n >= sizeof var)
        return -1;
    for (char *p = var; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    return log_level_parse(getenv(var));
}

bool log_enabled(enum log_level level, const char *subsys)
{
    int lvl = log_subsys_level(subsys);
    if (lvl < 0)
        lvl = log_global();
    return (int)level <= lvl && level != LOG_LVL_QUIET;
}

static size_t log_prefix(char *buf, size_t cap, enum log_level level,
                         const char *subsys, const char *func)
{
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(buf, cap, "%04d-%s-%02d %02d:%02d:%02d.%06ld %d:%ld %-5s %s:%-24s ",
                     tm.tm_year + 1900, months[tm.tm_mon], tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000L, (int)getpid(),
                     (long)syscall(SYS_gettid), log_level_names[level], subsys, func);
    if (n < 0)
        return 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

void log_write(enum log_level level, const char *subsys, const char *func,
               const char *fmt, ...)
{
    if (!log_enabled(level, subsys))
        return;
    char line[LOG_LINE_MAX];
    size_t len = log_prefix(line, sizeof line, level, subsys, func);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + len, sizeof line - len - 1, fmt, ap);
    va_end(ap);
    if (n > 0)
        len += (size_t)n < sizeof line - len - 1 ? (size_t)n : sizeof line - len - 2;
    if (atomic_load(&log_to_syslog)) {
        static const int prio[] = {LOG_ERR, LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG, LOG_DEBUG};
        syslog(prio[level], "%.*s", (int)len, line);
        return;
    }
    line[len++] = '\n';
    ssize_t w = write(atomic_load(&log_fd), line, len);
    (void)w;
}

int log_set_location(const char *where)
{
    int fd = STDERR_FILENO;
    bool sys = false;
    if (where != NULL && strcasecmp(where, "syslog") == 0) {
        openlog("nrt", LOG_PID, LOG_USER);
        sys = true;
    } else if (where != NULL && *where != '\0' && strcasecmp(where, "console") != 0) {
        fd = open(where, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            char msg[512];
            int n = snprintf(msg, sizeof msg, "NEURON_RT_LOG_LOCATION='%s': cannot open the "
                             "file for appending\n", where);
            ssize_t w = write(STDERR_FILENO, msg, n > 0 ? (size_t)n : 0);
            (void)w;
            return -1;
        }
    }
    int old = atomic_exchange(&log_fd, fd);
    atomic_store(&log_to_syslog, sys);
    if (old != STDERR_FILENO && old != fd)
        close(old);
    return 0;
}
