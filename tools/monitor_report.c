/*
 * monitor_report.c: samples of the live instance and the host, and
 * neuron-monitor's JSON report of the difference of two.
 */
#include "tools/monitor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devices/config/topology.h"
#include "tools/live.h"

/* ---- samples -------------------------------------------------------------- */

static void mon_read_stat(struct mon_sample *s)
{
    FILE *f = fopen("/proc/stat", "r");
    char *line = NULL; /* whole lines: "intr" runs to thousands of bytes */
    size_t cap = 0;
    s->ncpu = 0;
    s->ctxt = 0;
    while (f != NULL && getline(&line, &cap, f) > 0) {
        struct mon_cpu c = {0};
        unsigned long long v[7] = {0};
        char name[16];
        if (sscanf(line, "ctxt %llu", &v[0]) == 1)
            s->ctxt = v[0];
        if (strncmp(line, "cpu", 3) != 0 ||
            sscanf(line, "%15s %llu %llu %llu %llu %llu %llu %llu", name, &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6]) != 8)
            continue;
        for (int i = 0; i < 7; i++)
            c.t[i] = v[i];
        if (strcmp(name, "cpu") == 0)
            s->cpu_all = c;
        else if (s->ncpu < MON_MAX_CPUS)
            s->cpu[s->ncpu++] = c;
    }
    free(line);
    if (f != NULL)
        fclose(f);
}

static void mon_read_proc(struct mon_proc_host *h, int32_t pid)
{
    char path[64], buf[1024];
    memset(h, 0, sizeof *h);
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command may hold spaces */
    unsigned long long ut, st;
    if (p != NULL && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                            &ut, &st) == 2) {
        h->pid = pid;
        h->utime = ut;
        h->stime = st;
    }
}

static void mon_read_hbm(struct mon_sample *s)
{
    char dir[INSTANCE_PATH_MAX], path[INSTANCE_PATH_MAX + 16];
    if (instance_dir_from_env(dir, sizeof dir) != NRT_SUCCESS)
        return;
    for (uint32_t c = 0; c < s->ctl.chips && c < CONFIG_MAX_VNCS; c++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/hbm%u", dir, c);
        s->hbm_resident[c] = stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512u : 0;
    }
}

int mon_sample_take(struct mon_sample *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    memset(s->host, 0, sizeof s->host);
    memset(s->hbm_resident, 0, sizeof s->hbm_resident);
    s->t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    int live = live_read(&s->ctl);
    if (live < 0)
        return -1;
    s->live = live == 1;
    for (uint32_t i = 0; s->live && i < INSTANCE_MAX_PROCS; i++)
        if (s->ctl.procs[i].pid != 0 &&
            instance_pid_alive(s->ctl.procs[i].pid, s->ctl.procs[i].start_time))
            mon_read_proc(&s->host[i], s->ctl.procs[i].pid);
    if (s->live)
        mon_read_hbm(s);
    mon_read_stat(s);
    return 0;
}

void mon_proc_tag(int32_t pid, char *buf, size_t cap)
{
    char path[64], env[65536];
    snprintf(buf, cap, "%d", (int)pid);
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return;
    size_t n = fread(env, 1, sizeof env - 1, f);
    fclose(f);
    env[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(env + i) + 1)
        if (strncmp(env + i, "NEURON_PROCESS_TAG=", 19) == 0 && env[i + 19] != '\0') {
            snprintf(buf, cap, "%s", env + i + 19);
            return;
        }
}

uint64_t mon_proc_rss(int32_t pid)
{
    char path[64], line[256];
    unsigned long long kb, rss = 0, shmem = 0;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
            rss = kb;
        else if (sscanf(line, "RssShmem: %llu kB", &kb) == 1)
            shmem = kb;
    }
    if (f != NULL)
        fclose(f);
    return (uint64_t)(rss > shmem ? rss - shmem : 0) * 1024u;
}

/* ---- the report ----------------------------------------------------------- */

static double mon_dt(const struct mon_sample *a, const struct mon_sample *b)
{
    return b->t > a->t ? b->t - a->t : 1e-9;
}

static uint64_t mon_d(uint64_t before, uint64_t after)
{
    return after >= before ? after - before : after; /* reset: the VNC was claimed again */
}

/* Was vnc owned by the same process in both samples? */
static bool mon_same_owner(const struct mon_sample *a, const struct mon_sample *b, uint32_t v)
{
    return a->live && a->ctl.owner[v].pid == b->ctl.owner[v].pid &&
           a->ctl.owner[v].start_time == b->ctl.owner[v].start_time;
}

double mon_vnc_utilization(const struct mon_sample *a, const struct mon_sample *b,
                           uint32_t vnc)
{
    if (!b->live || vnc >= b->ctl.total_vncs)
        return 0;
    uint64_t before = mon_same_owner(a, b, vnc) ? atomic_load(&a->ctl.use[vnc].busy_ns) : 0;
    double u = (double)mon_d(before, atomic_load(&b->ctl.use[vnc].busy_ns)) / 1e9 /
               mon_dt(a, b) * 100.0;
    return u > 100.0 ? 100.0 : u;
}

double mon_vnc_flops(const struct mon_sample *a, const struct mon_sample *b, uint32_t vnc)
{
    if (!b->live || vnc >= b->ctl.total_vncs)
        return 0;
    uint64_t before = mon_same_owner(a, b, vnc) ? atomic_load(&a->ctl.use[vnc].flops) : 0;
    return (double)mon_d(before, atomic_load(&b->ctl.use[vnc].flops)) / mon_dt(a, b);
}

static json_t *mon_group(double period)
{
    return json_pack("{s:f, s:s}", "period", period, "error", "");
}

bool mon_vnc_in_use(const struct mon_sample *a, const struct mon_sample *b, uint32_t v)
{
    if (!b->live || v >= b->ctl.total_vncs || b->ctl.owner[v].pid == 0)
        return false;
    const struct instance_vnc_use *y = &b->ctl.use[v];
    if (atomic_load(&y->models) > 0)
        return true;
    bool same = mon_same_owner(a, b, v);
    return atomic_load(&y->executions) != (same ? atomic_load(&a->ctl.use[v].executions) : 0) ||
           atomic_load(&y->busy_ns) != (same ? atomic_load(&a->ctl.use[v].busy_ns) : 0);
}

static json_t *mon_nc_counters(const struct mon_sample *a, const struct mon_sample *b,
                               const struct instance_proc *pr, const struct itype *p)
{
    json_t *g = mon_group(mon_dt(a, b)), *in_use = json_object();
    for (uint32_t v = 0; v < b->ctl.total_vncs; v++) {
        if (!live_owns(&b->ctl, pr, v) || !mon_vnc_in_use(a, b, v))
            continue;
        double u = mon_vnc_utilization(a, b, v);
        json_t *nc = json_pack("{s:f, s:I}", "neuroncore_utilization", u, "flops",
                               (json_int_t)mon_vnc_flops(a, b, v));
        if (b->ctl.lnc > 1) { /* the physical cores of the VNC run in lockstep */
            json_t *phys = json_object();
            for (uint32_t k = 0; k < b->ctl.lnc; k++) {
                char name[32];
                snprintf(name, sizeof name, "nc_v%d.%u", (int)p->gen, v * b->ctl.lnc + k);
                json_object_set_new(phys, name, json_pack("{s:f}", "neuroncore_utilization", u));
            }
            char key[16];
            snprintf(key, sizeof key, "v%dd", (int)p->gen);
            json_object_set_new(nc, key, phys);
        }
        char idx[16];
        snprintf(idx, sizeof idx, "%u", v);
        json_object_set_new(in_use, idx, nc);
    }
    json_object_set_new(g, "neuroncores_in_use", in_use);
    return g;
}

static int mon_cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

/* Percentiles (seconds) of the latencies in lat[0..n), null when none. */
static json_t *mon_percentiles(uint32_t *lat, uint32_t n)
{
    if (n == 0)
        return json_null();
    static const int pct[] = {0, 1, 25, 50, 75, 99, 100};
    qsort(lat, n, sizeof *lat, mon_cmp_u32);
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++) {
        char key[8];
        snprintf(key, sizeof key, "p%d", pct[i]);
        uint32_t at = (uint32_t)((uint64_t)pct[i] * (n - 1) / 100u);
        json_object_set_new(o, key, json_real(lat[at] / 1e6));
    }
    return o;
}

/* The latencies recorded on v between a and b (the last INSTANCE_LATENCIES). */
static uint32_t mon_latencies(const struct mon_sample *a, const struct mon_sample *b, uint32_t v,
                              uint32_t *out, uint32_t n)
{
    const struct instance_vnc_use *u = &b->ctl.use[v];
    uint64_t end = atomic_load(&u->latencies);
    uint64_t start = mon_same_owner(a, b, v) ? atomic_load(&a->ctl.use[v].latencies) : 0;
    if (start > end)
        start = 0;
    if (end - start > INSTANCE_LATENCIES)
        start = end - INSTANCE_LATENCIES;
    for (uint64_t i = start; i < end; i++)
        out[n++] = atomic_load(&u->latency_us[i % INSTANCE_LATENCIES]);
    return n;
}

static json_t *mon_exec_stats(const struct mon_sample *a, const struct mon_sample *b,
                              const struct instance_proc *pr)
{
    uint64_t done = 0, failed = 0, num = 0;
    uint32_t *lat = malloc(sizeof *lat * INSTANCE_LATENCIES * CONFIG_MAX_VNCS), n = 0;
    for (uint32_t v = 0; v < b->ctl.total_vncs; v++) {
        if (!live_owns(&b->ctl, pr, v))
            continue;
        const struct instance_vnc_use *x = &a->ctl.use[v], *y = &b->ctl.use[v];
        bool same = mon_same_owner(a, b, v);
        done += mon_d(same ? atomic_load(&x->executions) : 0, atomic_load(&y->executions));
        failed += mon_d(same ? atomic_load(&x->failed) : 0, atomic_load(&y->failed));
        num += mon_d(same ? atomic_load(&x->num_errors) : 0, atomic_load(&y->num_errors));
        if (lat != NULL)
            n = mon_latencies(a, b, v, lat, n);
    }
    json_t *g = mon_group(mon_dt(a, b));
    json_object_set_new(g, "error_summary",
                        json_pack("{s:I, s:I, s:i, s:i, s:i, s:i}", "generic",
                                  (json_int_t)failed, "numerical", (json_int_t)num, "transient",
                                  0, "model", 0, "runtime", 0, "hardware", 0));
    json_object_set_new(g, "execution_summary",
                        json_pack("{s:I, s:I, s:I, s:i, s:i, s:i}", "completed",
                                  (json_int_t)(done >= num ? done - num : 0),
                                  "completed_with_err", (json_int_t)failed,
                                  "completed_with_num_err", (json_int_t)num, "timed_out", 0,
                                  "incorrect_input", 0, "failed_to_queue", 0));
    /* The emulator's execution time is both the runtime's and the device's. */
    json_t *total = mon_percentiles(lat, lat ? n : 0);
    json_object_set_new(g, "latency_stats", json_pack("{s:o, s:O}", "total_latency", total,
                                                      "device_latency", total));
    free(lat);
    return g;
}

/* One VNC's device memory by neuron-monitor's categories. */
static json_t *mon_nc_memory(const struct instance_vnc_use *u, uint64_t *total)
{
    uint64_t t = atomic_load(&u->mem[INSTANCE_MEM_TENSORS]);
    uint64_t c = atomic_load(&u->mem[INSTANCE_MEM_CONSTANTS]);
    uint64_t s = atomic_load(&u->mem[INSTANCE_MEM_SCRATCHPAD]);
    uint64_t r = atomic_load(&u->mem[INSTANCE_MEM_RUNTIME]);
    *total += t + c + s + r;
    /* model_code: the instruction streams live in host memory, not the emulated HBM */
    return json_pack("{s:I, s:I, s:I, s:I, s:I}", "constants", (json_int_t)c, "model_code",
                     (json_int_t)0, "model_shared_scratchpad", (json_int_t)s, "runtime_memory",
                     (json_int_t)r, "tensors", (json_int_t)t);
}

/* One subgraph of a loaded model: what it placed at load time. */
static json_t *mon_sg_json(const struct instance_model_use *u, uint32_t s, uint32_t vnc,
                           uint32_t per_chip)
{
    const struct instance_sg_use *g = &u->sg[s];
    uint64_t host = s == 0 ? u->host : 0; /* the NEFF copy is the model's, kept with sg 0 */
    json_t *hb = json_pack("{s:I, s:I, s:I, s:I}", "application_memory", (json_int_t)host,
                           "constants", (json_int_t)0, "dma_buffers", (json_int_t)0, "tensors",
                           (json_int_t)0);
    json_t *db = json_pack("{s:I, s:I, s:I, s:I}", "constants", (json_int_t)g->constants,
                           "model_code", (json_int_t)0, "runtime_memory", (json_int_t)g->runtime,
                           "tensors", (json_int_t)0);
    json_t *used = json_pack("{s:I, s:I, s:{s:o, s:o}}", "host", (json_int_t)host,
                             "neuron_device", (json_int_t)(g->constants + g->runtime),
                             "usage_breakdown", "host", hb, "neuron_device", db);
    return json_pack("{s:o, s:i, s:i}", "memory_used_bytes", used, "neuroncore_index",
                     (int)vnc, "neuron_device_index", (int)(per_chip ? vnc / per_chip : 0));
}

/* The models pr has loaded, as neuron-monitor's loaded_models lists them. */
static json_t *mon_loaded_models(const struct mon_sample *b, const struct instance_proc *pr)
{
    json_t *arr = json_array();
    uint32_t per = b->ctl.chips ? b->ctl.total_vncs / b->ctl.chips : 0;
    for (uint32_t v = 0; v < b->ctl.total_vncs; v++) {
        if (!live_owns(&b->ctl, pr, v))
            continue;
        for (uint32_t i = 0; i < INSTANCE_VNC_MODELS; i++) {
            const struct instance_model_use *u = &b->ctl.use[v].loaded[i];
            uint32_t id = atomic_load(&u->id);
            if (id == 0)
                continue;
            char uuid[33], name[INSTANCE_MODEL_NAME + 1];
            for (int k = 0; k < 16; k++)
                snprintf(uuid + 2 * k, 3, "%02x", u->uuid[k]);
            snprintf(name, sizeof name, "%.*s", (int)sizeof u->name, u->name);
            json_t *sgs = json_object();
            for (uint32_t s = 0; s < u->nsgs && s < INSTANCE_MODEL_SGS; s++) {
                char key[INSTANCE_SG_NAME + 1];
                snprintf(key, sizeof key, "%.*s", (int)sizeof u->sg[s].name, u->sg[s].name);
                json_object_set_new(sgs, key, mon_sg_json(u, s, v, per));
            }
            json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:b, s:o}", "name", name,
                                                 "uuid", uuid, "model_id", (int)id,
                                                 "is_running",
                                                 atomic_load(&u->running) > 0, "subgraphs",
                                                 sgs));
        }
    }
    return arr;
}

static json_t *mon_memory_used(const struct mon_sample *a, const struct mon_sample *b,
                               const struct instance_proc *pr)
{
    uint64_t dev = 0, host_tensors = 0, host = mon_proc_rss(pr->pid);
    json_t *per_nc = json_object();
    for (uint32_t v = 0; v < b->ctl.total_vncs; v++) {
        if (!live_owns(&b->ctl, pr, v))
            continue;
        char idx[16];
        snprintf(idx, sizeof idx, "%u", v);
        json_object_set_new(per_nc, idx, mon_nc_memory(&b->ctl.use[v], &dev));
        host_tensors += atomic_load(&b->ctl.use[v].mem[INSTANCE_MEM_HOST_TENSORS]);
    }
    if (host_tensors > host)
        host_tensors = host;
    json_t *hostb = json_pack("{s:I, s:I, s:I, s:I}", "application_memory",
                              (json_int_t)(host - host_tensors), "constants", (json_int_t)0,
                              "dma_buffers", (json_int_t)0, "tensors", (json_int_t)host_tensors);
    json_t *g = mon_group(mon_dt(a, b));
    json_object_set_new(g, "neuron_runtime_used_bytes",
                        json_pack("{s:I, s:I, s:{s:o, s:o}}", "host", (json_int_t)host,
                                  "neuron_device", (json_int_t)dev, "usage_breakdown", "host",
                                  hostb, "neuroncore_memory_usage", per_nc));
    json_object_set_new(g, "loaded_models", mon_loaded_models(b, pr));
    return g;
}

static json_t *mon_rt_vcpu(const struct mon_sample *a, const struct mon_sample *b, uint32_t i)
{
    double ticks = (double)sysconf(_SC_CLK_TCK), dt = mon_dt(a, b);
    const struct mon_proc_host *x = &a->host[i], *y = &b->host[i];
    bool same = x->pid == y->pid;
    double user = (double)mon_d(same ? x->utime : 0, y->utime) / ticks / dt * 100.0;
    double sys = (double)mon_d(same ? x->stime : 0, y->stime) / ticks / dt * 100.0;
    json_t *g = mon_group(dt);
    json_object_set_new(g, "vcpu_usage", json_pack("{s:f, s:f}", "user", user, "system", sys));
    return g;
}

int mon_match(const struct mon_config *cfg, const char *tag)
{
    for (uint32_t i = 0; i < cfg->nrt; i++)
        if (!cfg->rt[i].has_filter || regexec(&cfg->rt[i].filter, tag, 0, NULL, 0) == 0)
            return (int)i;
    return -1;
}

static json_t *mon_runtime_data(const struct mon_config *cfg, const struct itype *p,
                                const struct mon_sample *a, const struct mon_sample *b)
{
    json_t *arr = json_array();
    for (uint32_t i = 0; b->live && i < INSTANCE_MAX_PROCS; i++) {
        const struct instance_proc *pr = &b->ctl.procs[i];
        if (pr->pid == 0 || b->host[i].pid == 0)
            continue; /* free, or no longer running */
        char tag[256];
        mon_proc_tag(pr->pid, tag, sizeof tag);
        int k = mon_match(cfg, tag);
        if (k < 0)
            continue;
        unsigned g = cfg->rt[k].groups;
        json_t *rep = json_object();
        if (g & MON_NC_COUNTERS)
            json_object_set_new(rep, "neuroncore_counters", mon_nc_counters(a, b, pr, p));
        if (g & MON_EXEC_STATS)
            json_object_set_new(rep, "execution_stats", mon_exec_stats(a, b, pr));
        if (g & MON_MEMORY_USED)
            json_object_set_new(rep, "memory_used", mon_memory_used(a, b, pr));
        if (g & MON_RT_VCPU)
            json_object_set_new(rep, "neuron_runtime_vcpu_usage", mon_rt_vcpu(a, b, i));
        json_array_append_new(arr, json_pack("{s:i, s:s, s:s, s:s, s:o}", "pid", (int)pr->pid,
                                             "address", "", "neuron_runtime_tag", tag, "error",
                                             "", "report", rep));
    }
    return arr;
}

static json_t *mon_cpu_json(const struct mon_cpu *x, const struct mon_cpu *y)
{
    static const char *names[] = {"user", "nice", "system", "idle", "io_wait", "irq",
                                  "soft_irq"};
    uint64_t d[7], sum = 0;
    for (int i = 0; i < 7; i++)
        sum += d[i] = mon_d(x->t[i], y->t[i]);
    json_t *o = json_object();
    for (int i = 0; i < 7; i++)
        json_object_set_new(o, names[i], json_real(sum ? 100.0 * (double)d[i] / (double)sum : 0));
    return o;
}

static json_t *mon_sys_vcpu(const struct mon_sample *a, const struct mon_sample *b)
{
    json_t *g = mon_group(mon_dt(a, b)), *per = json_object();
    json_object_set_new(g, "average_usage", mon_cpu_json(&a->cpu_all, &b->cpu_all));
    for (uint32_t i = 0; i < b->ncpu && i < a->ncpu; i++) {
        char key[16];
        snprintf(key, sizeof key, "%u", i);
        json_object_set_new(per, key, mon_cpu_json(&a->cpu[i], &b->cpu[i]));
    }
    json_object_set_new(g, "usage_data", per);
    json_object_set_new(g, "context_switch_count",
                        json_integer((json_int_t)mon_d(a->ctxt, b->ctxt)));
    return g;
}

static json_t *mon_sys_memory(double period)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long v, total = 0, avail = 0, swap = 0, swap_free = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "MemTotal: %llu kB", &v) == 1)
            total = v;
        else if (sscanf(line, "MemAvailable: %llu kB", &v) == 1)
            avail = v;
        else if (sscanf(line, "SwapTotal: %llu kB", &v) == 1)
            swap = v;
        else if (sscanf(line, "SwapFree: %llu kB", &v) == 1)
            swap_free = v;
    }
    if (f != NULL)
        fclose(f);
    json_t *g = mon_group(period);
    json_object_set_new(g, "memory_total_bytes", json_integer((json_int_t)(total * 1024)));
    json_object_set_new(g, "memory_used_bytes", json_integer((json_int_t)((total - avail) * 1024)));
    json_object_set_new(g, "swap_total_bytes", json_integer((json_int_t)(swap * 1024)));
    json_object_set_new(g, "swap_used_bytes",
                        json_integer((json_int_t)((swap - swap_free) * 1024)));
    return g;
}

/* The emulated HBM has no ECC: every counter is truly zero. */
static json_t *mon_sys_hw(const struct itype *p, double period)
{
    json_t *g = mon_group(period), *devs = json_array();
    for (uint32_t c = 0; c < p->chips; c++)
        json_array_append_new(devs, json_pack("{s:i, s:i, s:i, s:i, s:i}", "neuron_device_index",
                                              (int)c, "mem_ecc_corrected", 0,
                                              "mem_ecc_uncorrected", 0, "sram_ecc_uncorrected", 0,
                                              "sram_ecc_corrected", 0));
    json_object_set_new(g, "neuron_devices", devs);
    return g;
}

static json_t *mon_system_data(const struct mon_config *cfg, const struct itype *p,
                               const struct mon_sample *a, const struct mon_sample *b)
{
    json_t *o = json_object();
    if (cfg->system_groups & MON_SYS_HW)
        json_object_set_new(o, "neuron_hw_counters", mon_sys_hw(p, mon_dt(a, b)));
    if (cfg->system_groups & MON_SYS_VCPU)
        json_object_set_new(o, "vcpu_usage", mon_sys_vcpu(a, b));
    if (cfg->system_groups & MON_SYS_MEMORY)
        json_object_set_new(o, "memory_info", mon_sys_memory(mon_dt(a, b)));
    return o;
}

/* Not an EC2 instance: the identity fields are empty but the made-up id
 * neuron-ls shows; the type is the emulated one. */
static json_t *mon_instance_info(const struct itype *p)
{
    char id[32];
    live_instance_id(id, sizeof id);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "instance_name", "",
                     "instance_id", id, "instance_type", p->name, "instance_availability_zone",
                     "", "instance_availability_zone_id", "", "instance_region", "", "ami_id",
                     "", "subnet_id", "", "error", "");
}

static json_t *mon_hardware_info(const struct machine_config *mc)
{
    const struct itype *p = mc->profile;
    char type[32], dver[16], ncver[16];
    snprintf(type, sizeof type, "%s", p->chip_name);
    for (char *c = type; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    snprintf(dver, sizeof dver, "v%d", (int)p->gen + 1);
    snprintf(ncver, sizeof ncver, "v%d%s", (int)p->gen, mc->lnc > 1 ? "d" : "");
    return json_pack("{s:s, s:s, s:s, s:i, s:I, s:i, s:i, s:s}", "neuron_device_type", type,
                     "neuron_device_version", dver, "neuroncore_version", ncver,
                     "neuron_device_count", (int)p->chips, "neuron_device_memory_size",
                     (json_int_t)p->hbm_per_chip, "neuroncore_per_device_count",
                     (int)mc->vncs_per_chip, "logical_neuroncore_config", (int)mc->lnc, "error",
                     "");
}

json_t *mon_report(const struct mon_config *cfg, const struct machine_config *mc,
                   const struct mon_sample *a, const struct mon_sample *b)
{
    const struct itype *p = mc->profile;
    return json_pack("{s:o, s:o, s:o, s:o}", "neuron_runtime_data",
                     mon_runtime_data(cfg, p, a, b), "system_data",
                     mon_system_data(cfg, p, a, b), "instance_info", mon_instance_info(p),
                     "neuron_hardware_info", mon_hardware_info(mc));
}
