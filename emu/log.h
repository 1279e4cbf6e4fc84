/*
 * log.h: the one logging facility of trnemu.
 *
 * Lines go to stderr in the spirit of the vendor runtime's format:
 *   2026-Nov-21 23:40:01.123456 4242:4243 ERROR  NRT:nrt_tensor_read  message
 * emu knows no processes nor environment: the level (ERROR until told
 * otherwise), the per-subsystem levels and the "pid:tid" stamp are given
 * by log_configure, which the layer that knows the process calls
 * (devices/config/log_env.c reads NEURON_RT_LOG_LEVEL[_<SUBSYS>]).
 * Subsystems: NRT (ABI entry points), TDRV (devices), NEFF, EMU, STORE, TOOL.
 */
#ifndef TRNEMU_EMU_LOG_H
#define TRNEMU_EMU_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level {
    LOG_LVL_QUIET = 0,  /* nothing is printed */
    LOG_LVL_ERROR = 1,  /* a call failed */
    LOG_LVL_WARN = 2,   /* something odd that the call survived */
    LOG_LVL_INFO = 3,   /* life-cycle events */
    LOG_LVL_DEBUG = 4,  /* per-call detail */
    LOG_LVL_TRACE = 5,  /* everything */
};

/* Is a message of this level for this subsystem printed? Cheap. */
bool log_enabled(enum log_level level, const char *subsys);

/* Print one line (a trailing newline is added). */
void log_write(enum log_level level, const char *subsys, const char *func,
               const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Print one line at level wherever errors are printed (the default
 * level included): for the few lines a user must see, once each (a
 * stand-in execution, where a snapshot they asked for went); QUIET still
 * silences it. */
void log_write_shown(enum log_level level, const char *subsys, const char *func,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The tap: from log_tap_begin to log_tap_end, every line bound for
 * stderr (no sink configured), from any thread, is kept in a buffer
 * instead of being printed, so that a caller can tell which lines one call
 * logged and print them itself (the NKI front end ties a failed
 * execution's report to a kernel line so). Lines for a sink still go
 * there. One tap at a time: the caller serialises begin..end. The buffer
 * holds up to 1 MiB; lines beyond that are printed as usual. */
void log_tap_begin(void);

/* Close the tap: *text receives the lines it kept (NUL-terminated, valid
 * until the next log_tap_begin); returns their length in bytes. */
size_t log_tap_end(const char **text);

/* Parse a level name (ERROR, WARN, WARNING, INFO, DEBUG, TRACE, QUIET,
 * any case); -1 when it is none of them. */
int log_level_parse(const char *name);

/* What filters and stamps the lines. */
struct log_config {
    int level;                               /* global level (enum log_level) */
    int (*subsys_level)(const char *subsys); /* a subsystem's own level, -1: the global one; NULL: none */
    size_t (*ident)(char *buf, size_t cap);  /* writes the caller's "pid:tid"; NULL: "-" */
    void (*sink)(int level, const char *line, size_t len); /* takes each line (with its
                                                 newline); NULL: stderr */
};

/* Replace the configuration (any thread, any time). */
void log_configure(const struct log_config *cfg);

#define LOG_ERROR(sub, ...) log_write(LOG_LVL_ERROR, sub, __func__, __VA_ARGS__)
#define LOG_WARN(sub, ...)  log_write(LOG_LVL_WARN, sub, __func__, __VA_ARGS__)
#define LOG_WARN_SHOWN(sub, ...) log_write_shown(LOG_LVL_WARN, sub, __func__, __VA_ARGS__)
#define LOG_INFO_SHOWN(sub, ...) log_write_shown(LOG_LVL_INFO, sub, __func__, __VA_ARGS__)
#define LOG_INFO(sub, ...)  log_write(LOG_LVL_INFO, sub, __func__, __VA_ARGS__)
#define LOG_DEBUG(sub, ...) log_write(LOG_LVL_DEBUG, sub, __func__, __VA_ARGS__)

#if defined(TRNEMU_TRACE) && TRNEMU_TRACE
#define LOG_TRACE(sub, ...) log_write(LOG_LVL_TRACE, sub, __func__, __VA_ARGS__)
#else
#define LOG_TRACE(sub, ...) ((void)0)
#endif

#endif
