/*
 * log.c: formats and filters trnemu's log lines (see log.h).
 *
 * Each line is built in a stack buffer and written with one write(2), so
 * lines from several threads or processes never interleave. While a tap
 * is open, the lines bound for stderr go to its buffer instead.
 */
#include "emu/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 2048

static const char *const log_level_names[] = {
    "QUIET", "ERROR", "WARN", "INFO", "DEBUG", "TRACE",
};

/* The configuration log_configure gave; ERROR and no stamp before. */
static _Atomic int log_global_level = LOG_LVL_ERROR;
static int (*_Atomic log_subsys_fn)(const char *subsys);
static size_t (*_Atomic log_ident_fn)(char *buf, size_t cap);
static void (*_Atomic log_sink_fn)(int level, const char *line, size_t len);

/* The tap (log_tap_begin/end): the lines it kept, NUL-terminated. */
#define LOG_TAP_MAX (1u << 20)
static _Atomic bool log_tap_on;
static pthread_mutex_t log_tap_mu = PTHREAD_MUTEX_INITIALIZER;
static char *log_tap_buf;
static size_t log_tap_len, log_tap_cap;

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

void log_configure(const struct log_config *cfg)
{
    atomic_store(&log_subsys_fn, cfg->subsys_level);
    atomic_store(&log_ident_fn, cfg->ident);
    atomic_store(&log_sink_fn, cfg->sink);
    atomic_store(&log_global_level, cfg->level);
}

bool log_enabled(enum log_level level, const char *subsys)
{
    int (*fn)(const char *) = atomic_load(&log_subsys_fn);
    int lvl = fn != NULL ? fn(subsys) : -1;
    if (lvl < 0)
        lvl = atomic_load(&log_global_level);
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
    char who[48] = "-";
    size_t (*ident)(char *, size_t) = atomic_load(&log_ident_fn);
    if (ident != NULL)
        ident(who, sizeof who);
    int n = snprintf(buf, cap, "%04d-%s-%02d %02d:%02d:%02d.%06ld %s %-5s %s:%-24s ",
                     tm.tm_year + 1900, months[tm.tm_mon], tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000L, who, log_level_names[level],
                     subsys, func);
    if (n < 0)
        return 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

void log_tap_begin(void)
{
    pthread_mutex_lock(&log_tap_mu);
    log_tap_len = 0;
    atomic_store(&log_tap_on, true);
    pthread_mutex_unlock(&log_tap_mu);
}

size_t log_tap_end(const char **text)
{
    pthread_mutex_lock(&log_tap_mu);
    atomic_store(&log_tap_on, false);
    size_t n = log_tap_len;
    if (log_tap_buf != NULL)
        log_tap_buf[n] = '\0';
    *text = log_tap_buf != NULL ? log_tap_buf : "";
    pthread_mutex_unlock(&log_tap_mu);
    return n;
}

/* Keep a line in the open tap: true when it did (false: no tap open, or
 * the line does not fit, and then it is printed as usual). */
static bool log_tap_keep(const char *line, size_t len)
{
    if (!atomic_load_explicit(&log_tap_on, memory_order_relaxed))
        return false;
    bool kept = false;
    pthread_mutex_lock(&log_tap_mu);
    if (atomic_load(&log_tap_on) && log_tap_len + len < LOG_TAP_MAX) {
        if (log_tap_len + len + 1 > log_tap_cap) {
            size_t cap = log_tap_cap ? log_tap_cap : 4096;
            while (cap < log_tap_len + len + 1)
                cap *= 2;
            char *grown = realloc(log_tap_buf, cap);
            if (grown != NULL) {
                log_tap_buf = grown;
                log_tap_cap = cap;
            }
        }
        if (log_tap_len + len + 1 <= log_tap_cap) {
            memcpy(log_tap_buf + log_tap_len, line, len);
            log_tap_len += len;
            kept = true;
        }
    }
    pthread_mutex_unlock(&log_tap_mu);
    return kept;
}

/* Format one line and hand it to the sink (or the tap, or stderr). */
static void log_emit(enum log_level level, const char *subsys, const char *func,
                     const char *fmt, va_list ap)
{
    char line[LOG_LINE_MAX];
    size_t len = log_prefix(line, sizeof line, level, subsys, func);
    int n = vsnprintf(line + len, sizeof line - len - 1, fmt, ap);
    if (n > 0)
        len += (size_t)n < sizeof line - len - 1 ? (size_t)n : sizeof line - len - 2;
    line[len++] = '\n';
    void (*sink)(int, const char *, size_t) = atomic_load(&log_sink_fn);
    if (sink != NULL) {
        sink((int)level, line, len);
        return;
    }
    if (log_tap_keep(line, len))
        return;
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void log_write(enum log_level level, const char *subsys, const char *func,
               const char *fmt, ...)
{
    if (!log_enabled(level, subsys))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_emit(level, subsys, func, fmt, ap);
    va_end(ap);
}

void log_write_shown(enum log_level level, const char *subsys, const char *func,
                     const char *fmt, ...)
{
    if (!log_enabled(level, subsys) && !log_enabled(LOG_LVL_ERROR, subsys))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_emit(level, subsys, func, fmt, ap);
    va_end(ap);
}
