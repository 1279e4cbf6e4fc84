/*
 * monitor.h: neuron-monitor's reports, shared by `trnemu monitor` (which
 * prints them as JSON) and `trnemu top` (which draws them).
 *
 * A sample is a copy of the live instance's control block plus the host
 * counters (/proc) at one moment; a report is the difference of two
 * samples over the period between them, in neuron-monitor's JSON schema
 * (tools/neuron-sys-tools/neuron-monitor-user-guide.rst in the vendor
 * documentation; docs/cli.md lists what trnemu fills in).
 */
#ifndef TRNEMU_TOOLS_MONITOR_H
#define TRNEMU_TOOLS_MONITOR_H

#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/config/config.h"
#include "devices/machine/instance.h"

/* Metric groups (bit masks). */
enum mon_group {
    MON_NC_COUNTERS = 1u << 0,     /* neuroncore_counters */
    MON_EXEC_STATS = 1u << 1,      /* execution_stats */
    MON_MEMORY_USED = 1u << 2,     /* memory_used */
    MON_RT_VCPU = 1u << 3,         /* neuron_runtime_vcpu_usage */
    MON_SYS_VCPU = 1u << 4,        /* vcpu_usage */
    MON_SYS_MEMORY = 1u << 5,      /* memory_info */
    MON_SYS_HW = 1u << 6,          /* neuron_hw_counters */
};

/* Runtime entries a configuration may hold. */
#define MON_MAX_RUNTIMES 8
/* Host CPUs sampled for vcpu_usage. */
#define MON_MAX_CPUS 256

/* One "neuron_runtimes" entry: which processes, which groups. */
struct mon_runtime {
    bool has_filter;  /* a tag_filter was given */
    regex_t filter;   /* the tag_filter (POSIX extended) */
    unsigned groups;  /* enum mon_group bits of its metrics */
};

/* A parsed configuration file. */
struct mon_config {
    double period_s;                          /* seconds between reports */
    struct mon_runtime rt[MON_MAX_RUNTIMES];  /* "neuron_runtimes" entries */
    uint32_t nrt;                             /* entries in rt[] */
    unsigned system_groups;                   /* "system_metrics" groups */
};

/* Host CPU time of one CPU (or all), in clock ticks, from /proc/stat. */
struct mon_cpu {
    uint64_t t[7]; /* user, nice, system, idle, iowait, irq, softirq */
};

/* Host counters of one attached process. */
struct mon_proc_host {
    int32_t pid;       /* process id, 0 for none */
    uint64_t utime;    /* user CPU ticks */
    uint64_t stime;    /* system CPU ticks */
};

/* Everything read at one moment. */
struct mon_sample {
    bool live;                                  /* a live instance was read */
    double t;                                   /* CLOCK_MONOTONIC seconds */
    struct instance_ctl ctl;                    /* the control block (when live) */
    struct mon_proc_host host[INSTANCE_MAX_PROCS]; /* per ctl.procs[] entry */
    struct mon_cpu cpu_all;                     /* /proc/stat "cpu" line */
    struct mon_cpu cpu[MON_MAX_CPUS];           /* /proc/stat "cpuN" lines */
    uint32_t ncpu;                              /* entries in cpu[] */
    uint64_t ctxt;                              /* /proc/stat "ctxt": context switches */
    uint64_t hbm_resident[CONFIG_MAX_VNCS];     /* HBM bytes in use per chip (file blocks) */
};

/* The default configuration: every group, a 5 s period. */
void mon_config_default(struct mon_config *cfg);
/* Read a configuration file; 0, or -1 with one log line naming the fault. */
int mon_config_load(const char *path, struct mon_config *cfg);
/* The same from text in memory (path only names it in the log line). */
int mon_config_loadb(const char *path, const char *text, size_t len, struct mon_config *cfg);
void mon_config_free(struct mon_config *cfg);

/* Take a sample; -1 (logged) when the instance cannot be read. */
int mon_sample_take(struct mon_sample *s);

/* neuron-monitor's report for the period between a and b. */
json_t *mon_report(const struct mon_config *cfg, const struct machine_config *mc,
                   const struct mon_sample *a, const struct mon_sample *b);

/* Was vnc in use at b: owned, with a model loaded or executions since a? */
bool mon_vnc_in_use(const struct mon_sample *a, const struct mon_sample *b, uint32_t v);

/* Utilisation of vnc between a and b, percent (0 when it was not in use). */
double mon_vnc_utilization(const struct mon_sample *a, const struct mon_sample *b,
                           uint32_t vnc);

/* Floating-point operations per second vnc executed between a and b (the
 * cost model's count: the Tensor engine's matmuls). */
double mon_vnc_flops(const struct mon_sample *a, const struct mon_sample *b, uint32_t vnc);

/* The "neuron_runtimes" entry whose tag_filter takes tag, -1 when none. */
int mon_match(const struct mon_config *cfg, const char *tag);

/* A process's NEURON_PROCESS_TAG, or its pid as text. */
void mon_proc_tag(int32_t pid, char *buf, size_t cap);

/* Host memory of pid in bytes: resident pages less the shared memory it
 * maps (VmRSS - RssShmem: the emulated HBM is not host memory of the
 * application), 0 when unknown. */
uint64_t mon_proc_rss(int32_t pid);

#endif
