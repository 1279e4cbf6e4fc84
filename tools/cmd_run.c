/*
 * cmd_run.c: `trnemu run MODEL.neff [--input NAME=FILE]... [--output-dir DIR]
 * [--repeat N] [--vnc K]`: load a NEFF, fill its inputs from .npy files (or
 * raw .bin files holding exactly the tensor's bytes), execute it N times
 * and write each output as DIR/NAME.npy; print the status and the time per
 * execution.
 *
 * Everything goes through the public runtime API of trnemu's libnrt.so.1,
 * opened with dlopen (the library tool_find_libnrt finds), exactly as a
 * user program would call it. Inputs without --input are zero-filled (and
 * said so on stderr).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "devices/config/config.h"
#include "devices/machine/instance.h"
#include "emu/neff/npy.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "tools/live.h"
#include "tools/tool.h"

#define RUN_MAX_INPUTS 256

/* The runtime functions used, looked up in libnrt.so.1. */
struct run_api {
    void *lib;                                                        /* dlopen handle */
    NRT_STATUS (*init)(nrt_framework_type_t, const char *, const char *); /* nrt_init */
    void (*close)(void);                                              /* nrt_close */
    NRT_STATUS (*load)(const void *, size_t, int32_t, int32_t, nrt_model_t **); /* nrt_load */
    NRT_STATUS (*unload)(nrt_model_t *);                              /* nrt_unload */
    NRT_STATUS (*info)(nrt_model_t *, nrt_tensor_info_array_t **);    /* tensor info */
    NRT_STATUS (*info_free)(nrt_tensor_info_array_t *);               /* its free */
    NRT_STATUS (*alloc)(nrt_tensor_placement_t, int, size_t, const char *, nrt_tensor_t **);
    void (*tfree)(nrt_tensor_t **);                                   /* nrt_tensor_free */
    NRT_STATUS (*write)(nrt_tensor_t *, const void *, size_t, size_t); /* nrt_tensor_write */
    NRT_STATUS (*read)(const nrt_tensor_t *, void *, size_t, size_t); /* nrt_tensor_read */
    NRT_STATUS (*set_alloc)(nrt_tensor_set_t **);                     /* allocate set */
    void (*set_free)(nrt_tensor_set_t **);                            /* destroy set */
    NRT_STATUS (*set_add)(nrt_tensor_set_t *, const char *, nrt_tensor_t *); /* add to set */
    NRT_STATUS (*execute)(nrt_model_t *, const nrt_tensor_set_t *, nrt_tensor_set_t *);
    const char *(*status_str)(NRT_STATUS);                            /* status name */
};

/* The command line. */
struct run_opts {
    const char *neff;                   /* MODEL.neff */
    const char *in_name[RUN_MAX_INPUTS]; /* --input NAME */
    const char *in_file[RUN_MAX_INPUTS]; /* --input ...=FILE */
    int n_in;                           /* --input given */
    const char *out_dir;                /* --output-dir (default ".") */
    long repeat;                        /* --repeat (default 1) */
    int vnc;                            /* --vnc (default 0) */
};

static bool run_sym(struct run_api *a, void *fp, const char *name)
{
    void *s = dlsym(a->lib, name);
    if (s == NULL) {
        fprintf(stderr, "trnemu run: %s has no %s\n", "libnrt.so.1", name);
        return false;
    }
    memcpy(fp, &s, sizeof s);
    return true;
}

static int run_api_open(struct run_api *a)
{
    char path[4096];
    if (tool_find_libnrt(path, sizeof path) != 0) {
        fprintf(stderr, "trnemu run: cannot find trnemu's libnrt.so.1 (set TRNEMU_LIBNRT)\n");
        return -1;
    }
    if ((a->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
        fprintf(stderr, "trnemu run: %s\n", dlerror());
        return -1;
    }
    bool ok = run_sym(a, &a->init, "nrt_init") && run_sym(a, &a->close, "nrt_close") &&
              run_sym(a, &a->load, "nrt_load") && run_sym(a, &a->unload, "nrt_unload") &&
              run_sym(a, &a->info, "nrt_get_model_tensor_info") &&
              run_sym(a, &a->info_free, "nrt_free_model_tensor_info") &&
              run_sym(a, &a->alloc, "nrt_tensor_allocate") &&
              run_sym(a, &a->tfree, "nrt_tensor_free") &&
              run_sym(a, &a->write, "nrt_tensor_write") &&
              run_sym(a, &a->read, "nrt_tensor_read") &&
              run_sym(a, &a->set_alloc, "nrt_allocate_tensor_set") &&
              run_sym(a, &a->set_free, "nrt_destroy_tensor_set") &&
              run_sym(a, &a->set_add, "nrt_add_tensor_to_tensor_set") &&
              run_sym(a, &a->execute, "nrt_execute") &&
              run_sym(a, &a->status_str, "nrt_get_status_as_str");
    return ok ? 0 : -1;
}

static uint8_t *run_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *b = NULL;
    long n = -1;
    if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (b = malloc(n > 0 ? (size_t)n : 1)) != NULL && fread(b, 1, (size_t)n, f) == (size_t)n) {
        fclose(f);
        *size = (size_t)n;
        return b;
    }
    fprintf(stderr, "trnemu run: cannot read %s: %s\n", path, strerror(errno ? errno : EIO));
    free(b);
    if (f != NULL)
        fclose(f);
    return NULL;
}

static bool run_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Does a .npy's shape and element type fit the tensor? */
static bool run_npy_fits(const struct npy_info *ni, const nrt_tensor_info_t *t, const char *file)
{
    const char *want = npy_descr_for_dtype(t->dtype);
    bool same = ni->ndim == t->ndim && want != NULL && strcmp(ni->descr, want) == 0;
    for (uint32_t d = 0; same && d < t->ndim; d++)
        same = ni->shape[d] == t->shape[d];
    if (!same) {
        fprintf(stderr, "trnemu run: %s holds descr %s shape [", file, ni->descr);
        for (uint32_t d = 0; d < ni->ndim; d++)
            fprintf(stderr, "%s%llu", d ? ", " : "", (unsigned long long)ni->shape[d]);
        fprintf(stderr, "]; input '%s' needs descr %s shape [", t->name, want ? want : "?");
        for (uint32_t d = 0; d < t->ndim; d++)
            fprintf(stderr, "%s%u", d ? ", " : "", t->shape[d]);
        fprintf(stderr, "]\n");
    }
    return same;
}

/* The bytes of one input from its file (.npy payload or raw). */
static int run_input_bytes(const char *file, const nrt_tensor_info_t *t, uint8_t *dst)
{
    size_t size;
    uint8_t *b = run_read_file(file, &size);
    if (b == NULL)
        return -1;
    int rc = -1;
    if (run_ends_with(file, ".npy")) {
        struct npy_info ni;
        if (npy_parse(b, size, file, &ni) == EMU_OK && run_npy_fits(&ni, t, file)) {
            memcpy(dst, b + ni.data_off, t->size);
            rc = 0;
        }
    } else if (size != t->size) {
        fprintf(stderr, "trnemu run: %s: %zu bytes, input '%s' takes %zu\n", file, size, t->name,
                t->size);
    } else {
        memcpy(dst, b, size);
        rc = 0;
    }
    free(b);
    return rc;
}

static const char *run_input_file(const struct run_opts *o, const char *name)
{
    for (int i = 0; i < o->n_in; i++)
        if (strcmp(o->in_name[i], name) == 0)
            return o->in_file[i];
    return NULL;
}

/* Every --input must name an input of the model. */
static int run_check_inputs(const struct run_opts *o, const nrt_tensor_info_array_t *info)
{
    for (int i = 0; i < o->n_in; i++) {
        bool found = false;
        for (uint64_t k = 0; k < info->tensor_count && !found; k++)
            found = info->tensor_array[k].usage == NRT_TENSOR_USAGE_INPUT &&
                    strcmp(info->tensor_array[k].name, o->in_name[i]) == 0;
        if (!found) {
            fprintf(stderr, "trnemu run: the model has no input '%s'; its inputs:", o->in_name[i]);
            for (uint64_t k = 0; k < info->tensor_count; k++)
                if (info->tensor_array[k].usage == NRT_TENSOR_USAGE_INPUT)
                    fprintf(stderr, " %s", info->tensor_array[k].name);
            fprintf(stderr, "\n");
            return -1;
        }
    }
    return 0;
}

/* The model's tensors and their sets. */
struct run_io {
    nrt_tensor_t **t;                   /* one per tensor of the info */
    nrt_tensor_set_t *in, *out;         /* input and output sets */
};

/* Write one input tensor from its file. */
static int run_fill_input(struct run_api *a, const char *file, const nrt_tensor_info_t *t,
                          nrt_tensor_t *tensor)
{
    uint8_t *buf = malloc(t->size ? t->size : 1);
    int rc = buf == NULL ? -1 : run_input_bytes(file, t, buf);
    if (rc == 0 && a->write(tensor, buf, 0, t->size) != NRT_SUCCESS)
        rc = -1;
    free(buf);
    return rc;
}

static int run_io_make(struct run_api *a, const struct run_opts *o,
                       const nrt_tensor_info_array_t *info, struct run_io *io)
{
    if ((io->t = calloc(info->tensor_count + 1, sizeof *io->t)) == NULL ||
        a->set_alloc(&io->in) != NRT_SUCCESS || a->set_alloc(&io->out) != NRT_SUCCESS)
        return -1;
    for (uint64_t k = 0; k < info->tensor_count; k++) {
        const nrt_tensor_info_t *t = &info->tensor_array[k];
        bool input = t->usage == NRT_TENSOR_USAGE_INPUT;
        if (a->alloc(NRT_TENSOR_PLACEMENT_DEVICE, o->vnc, t->size, t->name, &io->t[k]) !=
            NRT_SUCCESS)
            return -1;
        const char *file = input ? run_input_file(o, t->name) : NULL;
        if (input && file == NULL)
            fprintf(stderr, "trnemu run: input '%s' not given: zeros\n", t->name);
        /* A fresh tensor is zero already (the process's VNC was cleared when
         * it was claimed): only the inputs read from files are written. */
        if ((file != NULL && run_fill_input(a, file, t, io->t[k]) != 0) ||
            a->set_add(input ? io->in : io->out, t->name, io->t[k]) != NRT_SUCCESS)
            return -1;
    }
    return 0;
}

static void run_io_free(struct run_api *a, const nrt_tensor_info_array_t *info, struct run_io *io)
{
    for (uint64_t k = 0; io->t != NULL && k < info->tensor_count; k++)
        if (io->t[k] != NULL)
            a->tfree(&io->t[k]);
    free(io->t);
    if (io->in != NULL)
        a->set_free(&io->in);
    if (io->out != NULL)
        a->set_free(&io->out);
}

/* Write one output as DIR/NAME.npy. */
static int run_write_output(struct run_api *a, const struct run_opts *o,
                            const nrt_tensor_info_t *t, nrt_tensor_t *tensor)
{
    uint8_t *buf = malloc(t->size ? t->size : 1), *npy = NULL;
    size_t npy_len = 0;
    uint64_t shape[NPY_MAX_DIMS];
    const char *descr = npy_descr_for_dtype(t->dtype);
    int rc = -1;
    for (uint32_t d = 0; d < t->ndim && d < NPY_MAX_DIMS; d++)
        shape[d] = t->shape[d];
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", o->out_dir, t->name);
    if (buf != NULL && descr != NULL && t->ndim <= NPY_MAX_DIMS &&
        a->read(tensor, buf, 0, t->size) == NRT_SUCCESS &&
        npy_write(descr, shape, t->ndim, buf, t->size, &npy, &npy_len) == EMU_OK) {
        FILE *f = strchr(t->name, '/') == NULL ? fopen(path, "wb") : NULL;
        rc = f != NULL && fwrite(npy, 1, npy_len, f) == npy_len ? 0 : -1;
        if (f != NULL && fclose(f) != 0)
            rc = -1;
    }
    if (rc != 0)
        fprintf(stderr, "trnemu run: cannot write output '%s' to %s\n", t->name, path);
    else
        printf("output %s -> %s\n", t->name, path);
    free(buf);
    free(npy);
    return rc;
}

static double run_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* The time line: the first execution apart (it pays for first-touch page
 * faults and warm-up), then the median and best of the others. */
static void run_print_times(double *t, long n)
{
    if (n == 1) {
        printf("executions: 1, time: %.3f ms\n", t[0] * 1e3);
        return;
    }
    qsort(t + 1, (size_t)(n - 1), sizeof *t, run_cmp_double);
    long m = n - 1;
    double median = m % 2 ? t[1 + m / 2] : (t[m / 2] + t[1 + m / 2]) / 2;
    printf("executions: %ld, first: %.3f ms, the other %ld: median %.3f ms, best %.3f ms\n", n,
           t[0] * 1e3, m, median * 1e3, t[1] * 1e3);
}

/* Did the model run as a stand-in (a vendor NEFF under
 * TRNEMU_FOREIGN_NEFF=zeros)? The runtime marks its VNC in the shared
 * instance. */
static bool run_stand_in(const struct run_opts *o)
{
    struct machine_config cfg;
    struct instance_ctl *c = malloc(sizeof *c);
    bool yes = false;
    if (c != NULL && config_from_env(&cfg) == NRT_SUCCESS && o->vnc >= 0 &&
        (uint32_t)o->vnc < cfg.visible_count && live_read(c) == 1)
        yes = atomic_load(&c->use[cfg.visible[o->vnc]].stand_ins) > 0;
    free(c);
    return yes;
}

/* Execute N times; print the status and the times. */
static int run_execute(struct run_api *a, const struct run_opts *o, nrt_model_t *m,
                       struct run_io *io)
{
    NRT_STATUS st = NRT_SUCCESS;
    double *t = malloc(sizeof *t * (size_t)o->repeat);
    if (t == NULL) {
        fprintf(stderr, "trnemu run: out of memory\n");
        return 1;
    }
    long r = 0;
    while (r < o->repeat) {
        double t1 = run_now();
        st = a->execute(m, io->in, io->out);
        t[r++] = run_now() - t1;
        if (st != NRT_SUCCESS && st != NRT_EXEC_COMPLETED_WITH_NUM_ERR)
            break;
    }
    bool ok = st == NRT_SUCCESS || st == NRT_EXEC_COMPLETED_WITH_NUM_ERR;
    printf("status: %s (%d)%s\n", a->status_str(st), (int)st,
           ok && run_stand_in(o) ? "; stand-in: outputs are zeros, not computed" : "");
    run_print_times(t, r);
    free(t);
    return ok ? 0 : 1;
}

static int run_outputs(struct run_api *a, const struct run_opts *o,
                       const nrt_tensor_info_array_t *info, struct run_io *io)
{
    if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "trnemu run: cannot create %s: %s\n", o->out_dir, strerror(errno));
        return 1;
    }
    int rc = 0;
    for (uint64_t k = 0; k < info->tensor_count; k++)
        if (info->tensor_array[k].usage == NRT_TENSOR_USAGE_OUTPUT &&
            run_write_output(a, o, &info->tensor_array[k], io->t[k]) != 0)
            rc = 1;
    return rc;
}

static int run_model(struct run_api *a, const struct run_opts *o, nrt_model_t *m)
{
    nrt_tensor_info_array_t *info = NULL;
    struct run_io io = {0};
    int rc = 1;
    if (a->info(m, &info) != NRT_SUCCESS)
        return 1;
    if (run_check_inputs(o, info) != 0) {
        rc = 1;
    } else if (run_io_make(a, o, info, &io) == 0) {
        rc = run_execute(a, o, m, &io);
        if (rc == 0)
            rc = run_outputs(a, o, info, &io);
    } else {
        fprintf(stderr, "trnemu run: could not set up the model's tensors\n");
    }
    run_io_free(a, info, &io);
    a->info_free(info);
    return rc;
}

/* A NEFF starts with its 1024-byte header (header_size, the second
 * little-endian 64-bit word, says 1024) and then a gzip stream. */
static bool run_is_neff(const uint8_t *b, size_t size)
{
    uint64_t header_size = 0;
    for (int i = 7; size >= 16 && i >= 0; i--)
        header_size = header_size << 8 | b[8 + i];
    return size >= 1026 && header_size == 1024 && b[1024] == 0x1f && b[1025] == 0x8b;
}

static int run_main(const struct run_opts *o)
{
    size_t size;
    uint8_t *bytes = run_read_file(o->neff, &size);
    struct run_api a = {0};
    int rc = 1;
    /* libnrt stays loaded until the process exits: the runtime keeps
     * process-wide state (worker threads, caches) that dlclose would unmap
     * under them. */
    if (bytes == NULL || run_api_open(&a) != 0) {
        free(bytes);
        return 1;
    }
    if (!run_is_neff(bytes, size)) {
        fprintf(stderr, "trnemu run: %s is not a NEFF (no 1024-byte NEFF header followed by "
                        "a gzip'd tar)\n", o->neff);
        free(bytes);
        return 1;
    }
    NRT_STATUS st = a.init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    if (st != NRT_SUCCESS) {
        fprintf(stderr, "trnemu run: the runtime did not start (nrt_init: %s (%d)): the "
                        "environment is at fault, see the line above; %s was not read\n",
                a.status_str(st), (int)st, o->neff);
        free(bytes);
        return 1;
    }
    nrt_model_t *m = NULL;
    if ((st = a.load(bytes, size, o->vnc, 1, &m)) == NRT_SUCCESS) {
        rc = run_model(&a, o, m);
        a.unload(m);
    } else {
        fprintf(stderr, "trnemu run: %s: nrt_load: %s (%d)\n", o->neff, a.status_str(st),
                (int)st);
    }
    a.close();
    free(bytes);
    return rc;
}

static int run_parse_input(struct run_opts *o, char *arg)
{
    char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg || eq[1] == '\0' || o->n_in >= RUN_MAX_INPUTS)
        return tool_usage_error("run", "--input takes NAME=FILE");
    *eq = '\0';
    o->in_name[o->n_in] = arg;
    o->in_file[o->n_in++] = eq + 1;
    return 0;
}

static int run_parse_num(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cmd_run(int argc, char **argv)
{
    struct run_opts o = {.out_dir = ".", .repeat = 1};
    for (int i = 1; i < argc; i++) {
        long v;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            tool_usage("run", stdout);
            return 0;
        } else if (strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
            if (run_parse_input(&o, argv[++i]) != 0)
                return 2;
        } else if (strcmp(argv[i], "--output-dir") == 0 && i + 1 < argc) {
            o.out_dir = argv[++i];
        } else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            if (run_parse_num(argv[++i], 1, 1000000, &o.repeat) != 0)
                return tool_usage_error("run", "--repeat takes a count from 1 to 1000000");
        } else if (strcmp(argv[i], "--vnc") == 0 && i + 1 < argc) {
            if (run_parse_num(argv[++i], 0, 4095, &v) != 0)
                return tool_usage_error("run", "--vnc takes a VNC number");
            o.vnc = (int)v;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return tool_usage_error("run", "unknown or incomplete option");
        } else if (o.neff == NULL) {
            o.neff = argv[i];
        } else {
            return tool_usage_error("run", "more than one NEFF");
        }
    }
    if (o.neff == NULL)
        return tool_usage_error("run", "no NEFF given");
    return run_main(&o);
}
