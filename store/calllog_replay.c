/*
 * calllog_replay.c: replay a call log: load a libnrt.so.1 into this
 * process, re-issue the recorded calls in sequence order through libffi
 * (the descriptors of abi/calls.def give every signature), and compare
 * each status, scalar output and output-buffer hash with the recording.
 *
 * Handles are mapped from the recorded values to the live ones as calls
 * create them (or, after a snapshot restore, through the library's
 * trnemu_snapshot_lookup). Buffers read by a call get the recorded bytes,
 * buffers it writes get fresh zeroed memory. The first difference stops
 * the replay with a report: the call, the argument or tensor, and for a
 * buffer whose bytes were recorded the first differing element.
 */
#include <dlfcn.h>
#include <ffi.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu/grow.h"
#include "emu/log.h"
#include "emu/progress.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "store/calllog.h"
#include "store/calllog_replay.h"

/* Buffers from this size on are mmap'd (zero pages cost nothing). */
#define RP_MMAP_MIN (1u << 20)
/* Largest output buffer given to a call the recording saw fail: a call
 * that failed on a huge size (nrt_tensor_read with SIZE_MAX) is re-issued
 * with this much address space (reserved, never touched unless written),
 * expecting the same failure. */
#define RP_FAILED_OUT_CAP (1ull << 30)

/* A recorded handle and the live object it stands for now. */
struct rp_handle {
    uint64_t old;     /* value in the recording (0: free slot) */
    void *obj;        /* live object */
    uint8_t kind;     /* enum cl_kind */
    char name[48];    /* tensor name, for reports */
};

/* Memory the replay allocated. */
struct rp_mem {
    void *p;          /* the block */
    size_t size;      /* its size */
    bool mapped;      /* mmap'd rather than malloc'd */
};

/* A list of allocations. */
struct rp_mems {
    struct rp_mem *v; /* entries */
    size_t n, cap;    /* used, allocated */
};

/* The replay of one log. */
struct rp {
    const struct cl_replay_opts *o;   /* options */
    FILE *out;                        /* report stream */
    struct cl_reader *log;            /* the log */
    void *lib;                        /* the library replayed on */
    void *fns[CL_FN_COUNT];           /* its functions (NULL: not looked up) */
    ffi_cif cifs[CL_FN_COUNT];        /* libffi signatures */
    ffi_type *atypes[CL_FN_COUNT][CL_MAX_ARGS]; /* their argument types */
    bool cif_ready[CL_FN_COUNT];      /* cifs[i] prepared */
    struct rp_handle *map;            /* handle map (open addressing) */
    size_t map_cap, map_n;            /* slots, used */
    void *(*lookup)(uint64_t);        /* trnemu_snapshot_lookup, after a restore */
    const char *(*status_str)(NRT_STATUS); /* nrt_get_status_as_str */
    struct rp_mems tmp;               /* freed after each call */
    struct rp_mems keep;              /* freed at the end (the runtime uses them) */
    int64_t calls;                    /* calls re-issued */
    int64_t skipped;                  /* calls skipped (@skip) */
    int64_t failures;                 /* recorded failing statuses reproduced */
    bool cur_failed;                  /* the call being built failed when recorded */
    bool open;                        /* the runtime is initialised */
    struct progress prog;             /* the terminal's progress line of the loop */
};

/* rp_build: the call is skipped, not an error. */
#define RP_SKIP (-1)

/* A handle value no live object has: unmapped handles become this. */
static char rp_foreign[64];

/* ---- memory ---- */

static void *rp_alloc(struct rp_mems *l, size_t size)
{
    if (!GROW_ARRAY(l->v, l->cap, l->n + 1, 16))
        return NULL;
    struct rp_mem m = {NULL, size ? size : 1, size >= RP_MMAP_MIN};
    if (m.mapped) {
        m.p = mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
        if (m.p == MAP_FAILED)
            m.p = NULL;
    } else {
        m.p = calloc(1, m.size);
    }
    if (m.p != NULL)
        l->v[l->n++] = m;
    return m.p;
}

/* Take ownership of a malloc'd block. */
static bool rp_adopt(struct rp_mems *l, void *p)
{
    if (!GROW_ARRAY(l->v, l->cap, l->n + 1, 16))
        return false;
    l->v[l->n++] = (struct rp_mem){p, 0, false};
    return true;
}

static void rp_free_all(struct rp_mems *l, bool release)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].mapped)
            munmap(l->v[i].p, l->v[i].size);
        else
            free(l->v[i].p);
    }
    l->n = 0;
    if (release) {
        free(l->v);
        l->v = NULL;
        l->cap = 0;
    }
}

/* ---- the handle map ---- */

static size_t rp_slot(const struct rp *r, uint64_t old)
{
    uint64_t h = old * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (r->map_cap - 1);
}

static struct rp_handle *rp_find(struct rp *r, uint64_t old)
{
    if (r->map_cap == 0)
        return NULL;
    for (size_t i = rp_slot(r, old);; i = (i + 1) & (r->map_cap - 1)) {
        if (r->map[i].old == old)
            return &r->map[i];
        if (r->map[i].old == 0)
            return NULL;
    }
}

static bool rp_grow(struct rp *r)
{
    struct rp_handle *old = r->map;
    size_t n = r->map_cap;
    r->map_cap = n ? n * 2 : 256;
    r->map = calloc(r->map_cap, sizeof *r->map);
    if (r->map == NULL) {
        r->map = old;
        r->map_cap = n;
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (old[i].old == 0)
            continue;
        size_t j = rp_slot(r, old[i].old);
        while (r->map[j].old != 0)
            j = (j + 1) & (r->map_cap - 1);
        r->map[j] = old[i];
    }
    free(old);
    return true;
}

static void rp_map_set(struct rp *r, uint64_t old, void *obj, int kind, const char *name,
                       uint32_t name_len)
{
    if (old == 0)
        return;
    struct rp_handle *h = rp_find(r, old);
    if (h == NULL) {
        if ((r->map_n + 1) * 2 > r->map_cap && !rp_grow(r))
            return;
        size_t i = rp_slot(r, old);
        while (r->map[i].old != 0)
            i = (i + 1) & (r->map_cap - 1);
        h = &r->map[i];
        h->old = old;
        r->map_n++;
    }
    h->obj = obj;
    h->kind = (uint8_t)kind;
    h->name[0] = '\0';
    if (name != NULL) {
        size_t n = name_len < sizeof h->name - 1 ? name_len : sizeof h->name - 1;
        memcpy(h->name, name, n);
        h->name[n] = '\0';
    }
}

/* The live object for a recorded handle (NULL stays NULL). */
static void *rp_map_get(struct rp *r, uint64_t old)
{
    if (old == 0)
        return NULL;
    struct rp_handle *h = rp_find(r, old);
    if (h != NULL)
        return h->obj;
    void *obj = r->lookup != NULL ? r->lookup(old) : NULL;
    return obj != NULL ? obj : rp_foreign;
}

static const char *rp_handle_name(struct rp *r, uint64_t old)
{
    struct rp_handle *h = rp_find(r, old);
    return h != NULL && h->name[0] != '\0' ? h->name : NULL;
}

/* ---- the library ---- */

static void *rp_sym(struct rp *r, int id)
{
    if (r->fns[id] == NULL)
        r->fns[id] = dlsym(r->lib, cl_fns[id].name);
    return r->fns[id];
}

static ffi_type *rp_ffi_type(int t)
{
    switch (t) {
    case CL_T_BOOL: return &ffi_type_uint8;
    case CL_T_I32: return &ffi_type_sint32;
    case CL_T_U32: return &ffi_type_uint32;
    case CL_T_I64: return &ffi_type_sint64;
    case CL_T_U64: return &ffi_type_uint64;
    case CL_T_PTR: return &ffi_type_pointer;
    default: return &ffi_type_void;
    }
}

static ffi_cif *rp_cif(struct rp *r, int id)
{
    if (!r->cif_ready[id]) {
        const struct cl_fn *fn = &cl_fns[id];
        for (uint32_t i = 0; i < fn->nargs; i++)
            r->atypes[id][i] = rp_ffi_type(fn->args[i].type);
        if (ffi_prep_cif(&r->cifs[id], FFI_DEFAULT_ABI, fn->nargs, rp_ffi_type(fn->ret_type),
                         r->atypes[id]) != FFI_OK)
            return NULL;
        r->cif_ready[id] = true;
    }
    return &r->cifs[id];
}

static const char *rp_status_name(struct rp *r, int64_t st)
{
    return r->status_str != NULL ? r->status_str((NRT_STATUS)st) : "?";
}

/* ---- the environment ---- */

/* Clear the recorded kind of variables, then set those of env, then the
 * user's --set ones. */
static void rp_env_apply(const struct cl_replay_opts *o, const char *env)
{
    extern char **environ;
    for (;;) {
        char *victim = NULL;
        for (char **e = environ; e != NULL && *e != NULL; e++)
            if (cl_env_relevant(*e)) {
                victim = strndup(*e, strcspn(*e, "="));
                break;
            }
        if (victim == NULL)
            break;
        unsetenv(victim);
        free(victim);
    }
    for (const char *p = env; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
        char *line = strndup(p, len);
        char *eq = line != NULL ? strchr(line, '=') : NULL;
        if (eq != NULL && cl_env_relevant(line)) {
            *eq = '\0';
            setenv(line, eq + 1, 1);
        }
        free(line);
        p += len + (nl != NULL);
    }
    for (int i = 0; i < o->nsets; i++) {
        char *eq = strchr(o->sets[i], '=');
        if (eq != NULL) {
            *eq = '\0';
            setenv(o->sets[i], eq + 1, 1);
            *eq = '=';
        }
    }
}

/* The replay's own process: a private instance, nothing recorded. */
static void rp_env_isolate(void)
{
    char name[64];
    snprintf(name, sizeof name, "replay-%ld", (long)getpid());
    setenv("TRNEMU_INSTANCE_NAME", name, 1);
    unsetenv("TRNEMU_RECORD");
    unsetenv("TRNEMU_RESTORE");
    unsetenv("TRNEMU_SNAPSHOT_ON_ERROR");
    unsetenv("TRNEMU_SNAPSHOT_AT");
    unsetenv("TRNEMU_RECORD_SHIM_PID");
}

/* ---- one call ---- */

/* The arguments of one call being replayed. */
struct rp_args {
    union {
        uint8_t b;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        void *p;
    } v[CL_MAX_ARGS];               /* argument values */
    void *avalues[CL_MAX_ARGS];     /* libffi's pointers to them */
    uint64_t slot[CL_MAX_ARGS];     /* what out / in-out pointers point to */
    void *buf[CL_MAX_ARGS];         /* IN / OUT buffers */
    nrt_tensor_batch_t *batch[CL_MAX_ARGS]; /* rebuilt batches */
};

static void rp_set_value(struct rp_args *x, uint32_t i, int type, uint64_t v)
{
    switch (type) {
    case CL_T_BOOL: x->v[i].b = v != 0; break;
    case CL_T_I32: x->v[i].i32 = (int32_t)v; break;
    case CL_T_U32: x->v[i].u32 = (uint32_t)v; break;
    case CL_T_PTR: x->v[i].p = (void *)(uintptr_t)v; break;
    default: x->v[i].u64 = v; break;
    }
}

/* Store v through an out/in-out slot with the pointee's width. */
static void rp_slot_store(uint64_t *slot, int type, uint64_t v)
{
    *slot = 0;
    switch (type) {
    case CL_T_BOOL: *(bool *)slot = v != 0; break;
    case CL_T_I32:
    case CL_T_U32: *(uint32_t *)slot = (uint32_t)v; break;
    default: *slot = v; break;
    }
}

/* A buffer read by the call: the recorded bytes (zeros if they were not
 * recorded, as for a call that failed on a bad size). */
static int rp_input(struct rp *r, int64_t seq, uint32_t i, uint32_t part, uint64_t size,
                    bool recorded, struct rp_mems *mem, void **out)
{
    if (recorded) {
        uint64_t sz;
        uint8_t hash[16];
        void *data = NULL;
        if (cl_reader_buffer(r->log, seq, i, part, &sz, hash, &data) != NRT_SUCCESS ||
            data == NULL || sz != size) {
            free(data);
            fprintf(r->out, "replay: call %" PRId64 ": the recorded bytes of an input are "
                            "missing or corrupt\n", seq);
            return CL_REPLAY_BAD_INPUT;
        }
        if (!rp_adopt(mem, data)) {
            free(data);
            return CL_REPLAY_BAD_INPUT;
        }
        *out = data;
        return 0;
    }
    *out = rp_alloc(mem, (size_t)size);
    return *out != NULL ? 0 : CL_REPLAY_BAD_INPUT;
}

static int rp_batch_args(struct rp *r, int64_t seq, uint32_t i, const struct cl_dec_arg *d,
                         bool out, struct rp_args *x)
{
    nrt_tensor_batch_t *bt = rp_alloc(&r->tmp, (size_t)d->nbatches * sizeof *bt);
    if (bt == NULL)
        return CL_REPLAY_BAD_INPUT;
    for (uint64_t k = 0; k < d->nbatches; k++) {
        const struct cl_dec_batch *db = &d->batches[k];
        bt[k].tensor = rp_map_get(r, db->tensor);
        bt[k].num_ops = db->nops;
        bt[k].ops = NULL;
        if (!db->ops_present)
            continue;
        nrt_tensor_batch_op_t *ops = rp_alloc(&r->tmp, (size_t)db->nops * sizeof *ops);
        if (ops == NULL)
            return CL_REPLAY_BAD_INPUT;
        for (uint32_t j = 0; j < db->nops; j++) {
            ops[j].offset = db->ops[j].offset;
            ops[j].size = db->ops[j].size;
            ops[j].buffer = NULL;
            if (!db->ops[j].present)
                continue;
            int rc = out ? ((ops[j].buffer = rp_alloc(&r->tmp, (size_t)ops[j].size)) == NULL
                                ? CL_REPLAY_BAD_INPUT : 0)
                         : rp_input(r, seq, i, db->ops[j].part, ops[j].size, true, &r->tmp,
                                    &ops[j].buffer);
            if (rc != 0)
                return rc;
        }
        bt[k].ops = ops;
    }
    x->batch[i] = bt;
    x->v[i].p = bt;
    return 0;
}

/* A pointer argument other than a string or a handle passed in. */
static int rp_build_ptr(struct rp *r, int64_t seq, uint32_t i, const struct cl_arg *a,
                        const struct cl_dec_arg *da, struct rp_args *x)
{
    if (!da->present)
        return 0;
    struct rp_mems *mem = (a->flags & CL_A_KEEP) ? &r->keep : &r->tmp;
    switch (a->role) {
    case CL_R_HOUT:
    case CL_R_OVAL:
        x->slot[i] = 0;
        x->v[i].p = &x->slot[i];
        return 0;
    case CL_R_HINOUT:
        x->slot[i] = (uint64_t)(uintptr_t)rp_map_get(r, da->pre);
        x->v[i].p = &x->slot[i];
        return 0;
    case CL_R_IOVAL:
        rp_slot_store(&x->slot[i], a->ptype, da->pre);
        x->v[i].p = &x->slot[i];
        return 0;
    case CL_R_IN: {
        int rc = rp_input(r, seq, i, 0, da->size, da->written, mem, &x->buf[i]);
        x->v[i].p = x->buf[i];
        return rc;
    }
    case CL_R_OUT:
        x->buf[i] = rp_alloc(mem, (size_t)(r->cur_failed && da->size > RP_FAILED_OUT_CAP
                                               ? RP_FAILED_OUT_CAP : da->size));
        x->v[i].p = x->buf[i];
        return x->buf[i] != NULL ? 0 : CL_REPLAY_BAD_INPUT;
    default:
        return rp_batch_args(r, seq, i, da, a->role == CL_R_BATCH_OUT, x);
    }
}

/* Build the arguments of a decoded call. */
static int rp_build(struct rp *r, int64_t seq, const struct cl_dec *d, struct rp_args *x)
{
    const struct cl_fn *fn = d->fn;
    for (uint32_t i = 0; i < fn->nargs; i++) {
        const struct cl_arg *a = &fn->args[i];
        const struct cl_dec_arg *da = &d->a[i];
        x->avalues[i] = &x->v[i];
        x->v[i].u64 = 0;
        int rc = 0;
        switch (a->role) {
        case CL_R_VAL:
            rp_set_value(x, i, a->type, da->value);
            break;
        case CL_R_STR:
            if (da->present) {
                char *s = strndup(da->str, da->len);
                if (s == NULL || !rp_adopt(&r->tmp, s)) {
                    free(s);
                    return CL_REPLAY_BAD_INPUT;
                }
                x->v[i].p = s;
            }
            break;
        case CL_R_HIN:
            if (da->value != 0 && a->kind > CL_K_MODEL && rp_find(r, da->value) == NULL) {
                /* Plain memory of the recorded process (not a registered
                 * object trnemu checks): nothing valid to pass. */
                fprintf(r->out, "replay: call %" PRId64 " (%s) skipped: its %s comes from "
                                "before the replayed calls\n", seq, fn->name, cl_kind_name(a->kind));
                return RP_SKIP;
            }
            x->v[i].p = rp_map_get(r, da->value);
            break;
        case CL_R_RAW:
        case CL_R_OPAQUE:
        case CL_R_CB:
            if (da->value != 0) {
                fprintf(r->out, "replay: call %" PRId64 " (%s): argument %s is %s and cannot "
                                "be replayed\n", seq, fn->name, a->name,
                        a->role == CL_R_CB ? "a callback" : "an address of the recorded process");
                return CL_REPLAY_CANNOT;
            }
            break;
        default:
            rc = rp_build_ptr(r, seq, i, a, da, x);
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ---- comparing ---- */

static void rp_where(struct rp *r, const struct cl_read_row *row)
{
    fprintf(r->out, "replay: first divergence at call %" PRId64 " (%s, thread %u):\n", row->seq,
            row->fn, row->thread);
}

/* Name the tensor a call works on, when it has one. */
static void rp_tensor_note(struct rp *r, const struct cl_dec *d)
{
    for (uint32_t i = 0; i < d->fn->nargs; i++)
        if (d->fn->args[i].role == CL_R_HIN && d->fn->args[i].kind == CL_K_TENSOR) {
            const char *name = rp_handle_name(r, d->a[i].value);
            fprintf(r->out, "  tensor: %s%s%s (recorded handle 0x%" PRIx64 ")\n",
                    name ? "'" : "", name ? name : "unnamed", name ? "'" : "", d->a[i].value);
            return;
        }
}

/* The first differing bytes of two buffers, as float32 and raw words. */
static void rp_first_diff(struct rp *r, const uint8_t *rec, const uint8_t *got, uint64_t size,
                          uint64_t base)
{
    uint64_t off = 0;
    while (off < size && rec[off] == got[off])
        off++;
    if (off == size)
        return;
    uint64_t w = off & ~3ull;
    fprintf(r->out, "  first difference at byte %" PRIu64 " of the buffer", off);
    if (base != UINT64_MAX)
        fprintf(r->out, " (byte %" PRIu64 " of the tensor)", base + off);
    fprintf(r->out, "\n");
    if (w + 4 <= size) {
        uint32_t a, b;
        float fa, fb;
        memcpy(&a, rec + w, 4);
        memcpy(&b, got + w, 4);
        memcpy(&fa, &a, 4);
        memcpy(&fb, &b, 4);
        fprintf(r->out, "  as float32 element %" PRIu64 ": recorded %.9g (0x%08x), replayed "
                        "%.9g (0x%08x)\n", w / 4, (double)fa, a, (double)fb, b);
    } else {
        fprintf(r->out, "  recorded byte 0x%02x, replayed 0x%02x\n", rec[off], got[off]);
    }
}

/* Does the replayed buffer match the recorded hash? Report if not. */
static int rp_check_buf(struct rp *r, const struct cl_read_row *row, const struct cl_dec *d,
                        uint32_t i, uint32_t part, const void *got, uint64_t size, uint64_t base)
{
    uint64_t rsize;
    uint8_t rhash[16], hash[16];
    void *rec = NULL;
    if (cl_reader_buffer(r->log, row->seq, i, part, &rsize, rhash, &rec) != NRT_SUCCESS) {
        fprintf(r->out, "replay: call %" PRId64 ": the recorded output is missing or corrupt\n",
                row->seq);
        return CL_REPLAY_BAD_INPUT;
    }
    cl_hash(got, (size_t)size, hash);
    int rc = 0;
    if (rsize != size || memcmp(hash, rhash, 16) != 0) {
        rp_where(r, row);
        fprintf(r->out, "  output %s", d->fn->args[i].name);
        if (d->fn->args[i].role == CL_R_BATCH_OUT)
            fprintf(r->out, " (batch step %u)", part);
        fprintf(r->out, " (%" PRIu64 " bytes) differs from the recording\n", size);
        rp_tensor_note(r, d);
        if (rec != NULL && rsize == size)
            rp_first_diff(r, rec, got, size, base);
        else
            fprintf(r->out, "  (only its hash was recorded: raise TRNEMU_RECORD_OUTPUT_BYTES "
                            "to keep the bytes)\n");
        rc = CL_REPLAY_DIVERGED;
    }
    free(rec);
    return rc;
}

/* The tensor offset a buffer starts at, when the call has one. */
static uint64_t rp_base_offset(const struct cl_dec *d)
{
    for (uint32_t i = 0; i < d->fn->nargs; i++)
        if (d->fn->args[i].role == CL_R_VAL && strcmp(d->fn->args[i].name, "offset") == 0)
            return d->a[i].value;
    return UINT64_MAX;
}

static int rp_check_outputs(struct rp *r, const struct cl_read_row *row, const struct cl_dec *d,
                            const struct rp_args *x)
{
    const struct cl_fn *fn = d->fn;
    for (uint32_t i = 0; i < fn->nargs; i++) {
        const struct cl_arg *a = &fn->args[i];
        const struct cl_dec_arg *da = &d->a[i];
        if (!da->present || !da->written || (a->flags & CL_A_NOCMP))
            continue;
        int rc = 0;
        if (a->role == CL_R_OVAL || a->role == CL_R_IOVAL) {
            uint64_t got = cl_load(&x->slot[i], a->ptype);
            if (got != da->post) {
                rp_where(r, row);
                fprintf(r->out, "  *%s: recorded %" PRId64 ", replayed %" PRId64 "\n", a->name,
                        (int64_t)da->post, (int64_t)got);
                rc = CL_REPLAY_DIVERGED;
            }
        } else if (a->role == CL_R_OUT && !(a->flags & CL_A_KEEP)) {
            rc = rp_check_buf(r, row, d, i, 0, x->buf[i], da->size, rp_base_offset(d));
        } else if (a->role == CL_R_HOUT && a->kind == CL_K_TINFO && da->post != 0 &&
                   x->slot[i] != 0) {
            uint64_t len = 0;
            void *canon = cl_tinfo_canon((const void *)(uintptr_t)x->slot[i], &len);
            rc = canon != NULL ? rp_check_buf(r, row, d, i, 0, canon, len, UINT64_MAX)
                               : CL_REPLAY_BAD_INPUT;
            free(canon);
        } else if (a->role == CL_R_BATCH_OUT) {
            for (uint64_t k = 0; rc == 0 && k < da->nbatches; k++)
                for (uint32_t j = 0; rc == 0 && da->batches[k].ops_present &&
                                     j < da->batches[k].nops; j++) {
                    const nrt_tensor_batch_op_t *op = &x->batch[i][k].ops[j];
                    if (op->buffer != NULL)
                        rc = rp_check_buf(r, row, d, i, da->batches[k].ops[j].part, op->buffer,
                                          op->size, op->offset);
                }
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Record the handles the call created in the map. */
static void rp_map_outputs(struct rp *r, const struct cl_dec *d, const struct rp_args *x)
{
    const struct cl_fn *fn = d->fn;
    const char *name = NULL;
    uint32_t name_len = 0;
    for (uint32_t i = 0; i < fn->nargs; i++)
        if (fn->args[i].role == CL_R_STR && d->a[i].present &&
            (strcmp(fn->args[i].name, "name") == 0 || strcmp(fn->args[i].name, "tensor_name") == 0)) {
            name = d->a[i].str;
            name_len = d->a[i].len;
        }
    for (uint32_t i = 0; i < fn->nargs; i++) {
        const struct cl_arg *a = &fn->args[i];
        const struct cl_dec_arg *da = &d->a[i];
        if ((a->role == CL_R_HOUT || a->role == CL_R_HINOUT) && da->present && da->written &&
            da->post != 0)
            rp_map_set(r, da->post, (void *)(uintptr_t)x->slot[i], a->kind, name, name_len);
    }
}

/* Compare the return value. */
static int rp_check_ret(struct rp *r, const struct cl_read_row *row, const struct cl_dec *d,
                        uint64_t got)
{
    const struct cl_fn *fn = d->fn;
    if (fn->flags & CL_F_RET_NOCMP)
        return 0;
    if (fn->ret == CL_RET_STATUS && (int64_t)(int32_t)got != row->ret) {
        rp_where(r, row);
        fprintf(r->out, "  status: recorded %" PRId64 " (%s), replayed %d (%s)\n", row->ret,
                rp_status_name(r, row->ret), (int32_t)got, rp_status_name(r, (int32_t)got));
        rp_tensor_note(r, d);
        return CL_REPLAY_DIVERGED;
    }
    if (fn->ret == CL_RET_INT && got != (uint64_t)row->ret) {
        rp_where(r, row);
        fprintf(r->out, "  returned %" PRIu64 ", recorded %" PRIu64 "\n", got,
                (uint64_t)row->ret);
        return CL_REPLAY_DIVERGED;
    }
    if (fn->ret == CL_RET_STR) {
        const char *s = (const char *)(uintptr_t)got;
        bool same = (s == NULL) == !d->ret_str_present &&
                    (s == NULL || (strlen(s) == d->ret_len && memcmp(s, d->ret_str, d->ret_len) == 0));
        if (!same) {
            rp_where(r, row);
            fprintf(r->out, "  returned \"%s\", recorded \"%.*s\"\n", s ? s : "(null)",
                    (int)d->ret_len, d->ret_str_present ? d->ret_str : "(null)");
            return CL_REPLAY_DIVERGED;
        }
    }
    return 0;
}

/* Issue the call through libffi; its return value widened. */
static uint64_t rp_issue(struct rp *r, int id, void *f, ffi_cif *cif, struct rp_args *x)
{
    const struct cl_fn *fn = &cl_fns[id];
    union {
        ffi_arg a;
        void *p;
    } ret = {0};
    /* dlsym gives an object pointer; libffi takes a function pointer. */
    __extension__ void (*fp)(void) = (void (*)(void))f;
    ffi_call(cif, fp, &ret, x->avalues);
    uint64_t got = fn->ret_type == CL_T_PTR ? (uint64_t)(uintptr_t)ret.p : (uint64_t)ret.a;
    r->calls++;
    bool ok = fn->ret != CL_RET_STATUS || (int32_t)got == NRT_SUCCESS;
    if (fn->flags & CL_F_INIT)
        r->open = r->open || ok;
    if (fn->flags & CL_F_CLOSE)
        r->open = false;
    return got;
}

/* Compare what the call returned and wrote; update the handle map. */
static int rp_compare(struct rp *r, const struct cl_read_row *row, int id, const struct cl_dec *d,
                      const struct rp_args *x, uint64_t got)
{
    const struct cl_fn *fn = &cl_fns[id];
    int rc = rp_check_ret(r, row, d, got);
    if (rc == 0 && fn->ret == CL_RET_STATUS && row->ret != NRT_SUCCESS)
        r->failures++;
    bool done = fn->ret != CL_RET_STATUS || row->ret == NRT_SUCCESS;
    if (rc == 0 && done)
        rc = rp_check_outputs(r, row, d, x);
    if (rc == 0)
        rp_map_outputs(r, d, x);
    if (id == CL_FN_nrt_free_model_tensor_info && (int32_t)got == NRT_SUCCESS) {
        struct rp_handle *h = rp_find(r, d->a[0].value);
        if (h != NULL)
            h->obj = NULL; /* freed: nothing left for rp_cleanup */
    }
    return rc;
}

static int rp_one(struct rp *r, const struct cl_read_row *row, int id)
{
    const struct cl_fn *fn = &cl_fns[id];
    struct cl_dec d;
    if (!cl_decode(fn, row->args, row->args_len, &d)) {
        fprintf(r->out, "replay: call %" PRId64 " (%s): its argument record is corrupt\n",
                row->seq, fn->name);
        return CL_REPLAY_BAD_INPUT;
    }
    void *f = rp_sym(r, id);
    ffi_cif *cif = rp_cif(r, id);
    struct rp_args x;
    memset(&x, 0, sizeof x);
    int rc = 0;
    if (f == NULL || cif == NULL) {
        fprintf(r->out, "replay: call %" PRId64 ": %s is not in %s\n", row->seq, fn->name,
                r->o->libnrt);
        rc = CL_REPLAY_CANNOT;
    }
    r->cur_failed = fn->ret == CL_RET_STATUS && row->ret != NRT_SUCCESS;
    if (rc == 0)
        rc = rp_build(r, row->seq, &d, &x);
    if (rc == RP_SKIP) {
        r->skipped++;
        rc = 0;
    } else if (rc == 0) {
        if (r->o->verbose)
            fprintf(r->out, "replay: %" PRId64 " %s\n", row->seq, fn->name);
        rc = rp_compare(r, row, id, &d, &x, rp_issue(r, id, f, cif, &x));
    }
    rp_free_all(&r->tmp, false);
    cl_dec_free(&d);
    return rc;
}

/* ---- the whole log ---- */

static int rp_open_lib(struct rp *r)
{
    r->lib = dlopen(r->o->libnrt, RTLD_NOW | RTLD_LOCAL);
    if (r->lib == NULL) {
        fprintf(r->out, "replay: cannot load %s: %s\n", r->o->libnrt, dlerror());
        return CL_REPLAY_CANNOT;
    }
    void *s = dlsym(r->lib, "nrt_get_status_as_str");
    __extension__ r->status_str = (const char *(*)(NRT_STATUS))s;
    return 0;
}

/* Restore snapshot id into the freshly loaded library. */
static int rp_restore(struct rp *r, int64_t id)
{
    void *init = dlsym(r->lib, "nrt_init"), *restore = dlsym(r->lib, "trnemu_snapshot_restore"),
         *lookup = dlsym(r->lib, "trnemu_snapshot_lookup");
    if (init == NULL || restore == NULL || lookup == NULL) {
        fprintf(r->out, "replay: %s cannot restore snapshots (not trnemu's libnrt?)\n",
                r->o->libnrt);
        return CL_REPLAY_CANNOT;
    }
    NRT_STATUS (*init_fn)(nrt_framework_type_t, const char *, const char *);
    NRT_STATUS (*restore_fn)(const char *, int64_t);
    __extension__ init_fn = (NRT_STATUS (*)(nrt_framework_type_t, const char *, const char *))init;
    __extension__ restore_fn = (NRT_STATUS (*)(const char *, int64_t))restore;
    __extension__ r->lookup = (void *(*)(uint64_t))lookup;
    NRT_STATUS st = init_fn(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    if (st == NRT_SUCCESS) {
        r->open = true;
        st = restore_fn(r->o->path, id);
    }
    if (st != NRT_SUCCESS) {
        fprintf(r->out, "replay: cannot restore snapshot %" PRId64 " of %s: %s\n", id,
                r->o->path, rp_status_name(r, st));
        return CL_REPLAY_BAD_INPUT;
    }
    return 0;
}

/* Where to start: *snap = -1 from the beginning, else a snapshot id. */
static int rp_start(struct rp *r, int64_t *seq, int64_t *snap)
{
    int64_t first, last;
    if (!cl_reader_range(r->log, &first, &last)) {
        fprintf(r->out, "replay: %s holds no recorded call\n", r->o->path);
        return CL_REPLAY_BAD_INPUT;
    }
    const char *from_start = cl_reader_meta(r->log, "from_start");
    if (r->o->from < 0 && from_start != NULL && strcmp(from_start, "1") == 0) {
        *seq = first;
        *snap = -1;
        return 0;
    }
    if (cl_reader_snapshot(r->log, r->o->from, snap, seq) != NRT_SUCCESS) {
        if (r->o->from < 0)
            fprintf(r->out, "replay: %s does not start at the beginning of the program and no "
                            "snapshot precedes its calls\n", r->o->path);
        else
            fprintf(r->out, "replay: %s has no snapshot %" PRId64 "\n", r->o->path, r->o->from);
        return CL_REPLAY_BAD_INPUT;
    }
    return 0;
}

static int rp_loop(struct rp *r, int64_t start)
{
    struct cl_read_row row;
    int64_t prev = start - 1;
    int rc = 0, more;
    if (cl_reader_rewind(r->log, start) != NRT_SUCCESS)
        return CL_REPLAY_BAD_INPUT;
    progress_begin(&r->prog, "replaying", "calls", 0);
    while (rc == 0 && (more = cl_reader_next(r->log, &row)) != 0) {
        progress_add(&r->prog, 1);
        if (more < 0)
            return CL_REPLAY_BAD_INPUT;
        if (row.seq != prev + 1) {
            fprintf(r->out, "replay: the log has no call %" PRId64 "; stopping after call %"
                            PRId64 "\n", prev + 1, prev);
            break;
        }
        prev = row.seq;
        int id = cl_fn_lookup(row.fn);
        if (id < 0) {
            fprintf(r->out, "replay: call %" PRId64 ": unknown function %s (a newer trnemu's "
                            "log?)\n", row.seq, row.fn);
            return CL_REPLAY_BAD_INPUT;
        }
        const struct cl_fn *fn = &cl_fns[id];
        if (fn->flags & CL_F_NOREPLAY) {
            fprintf(r->out, "replay: call %" PRId64 " (%s) cannot be replayed: %s\n", row.seq,
                    fn->name, fn->why);
            return CL_REPLAY_CANNOT;
        }
        if (fn->flags & CL_F_SKIP) {
            fprintf(r->out, "replay: call %" PRId64 " (%s) skipped: %s\n", row.seq, fn->name,
                    fn->why);
            r->skipped++;
            continue;
        }
        if (cl_reader_env_changes_at(r->log, row.seq)) {
            char *env = cl_reader_env(r->log, row.seq);
            rp_env_apply(r->o, env);
            free(env);
        }
        rc = rp_one(r, &row, id);
    }
    return rc;
}

/* Tensor info arrays the replay obtained and the log did not free (it
 * stopped early) are plain memory: give them back. */
static void rp_free_tinfo(struct rp *r)
{
    void *s = r->lib != NULL ? dlsym(r->lib, "nrt_free_model_tensor_info") : NULL;
    NRT_STATUS (*free_fn)(nrt_tensor_info_array_t *);
    __extension__ free_fn = (NRT_STATUS (*)(nrt_tensor_info_array_t *))s;
    for (size_t i = 0; free_fn != NULL && i < r->map_cap; i++)
        if (r->map[i].old != 0 && r->map[i].kind == CL_K_TINFO && r->map[i].obj != NULL) {
            free_fn(r->map[i].obj);
            r->map[i].obj = NULL;
        }
}

static void rp_cleanup(struct rp *r)
{
    rp_free_tinfo(r);
    if (r->open && r->lib != NULL) {
        void (*close_fn)(void);
        void *s = dlsym(r->lib, "nrt_close");
        __extension__ close_fn = (void (*)(void))s;
        if (close_fn != NULL)
            close_fn(); /* the log ended with the runtime open */
    }
    rp_free_all(&r->tmp, true);
    rp_free_all(&r->keep, true);
    free(r->map);
    cl_reader_close(r->log);
}

/* ---- listing ---- */

static void rp_print_arg(FILE *out, const struct cl_arg *a, const struct cl_dec_arg *d)
{
    fprintf(out, "%s=", a->name);
    if (a->role == CL_R_VAL) {
        if (a->type == CL_T_I32 || a->type == CL_T_I64)
            fprintf(out, "%" PRId64, (int64_t)d->value);
        else
            fprintf(out, "%" PRIu64, d->value);
        return;
    }
    if (a->role == CL_R_STR) {
        if (d->present)
            fprintf(out, "\"%.*s\"", (int)(d->len > 64 ? 64 : d->len), d->str);
        else
            fprintf(out, "NULL");
        return;
    }
    if (a->role == CL_R_HIN || a->role == CL_R_RAW || a->role == CL_R_OPAQUE ||
        a->role == CL_R_CB) {
        fprintf(out, "0x%" PRIx64, d->value);
        return;
    }
    if (!d->present) {
        fprintf(out, "NULL");
        return;
    }
    switch (a->role) {
    case CL_R_HOUT:
    case CL_R_OVAL:
        if (d->written)
            fprintf(out, a->role == CL_R_HOUT ? "&->0x%" PRIx64 : "&->%" PRIu64, d->post);
        else
            fprintf(out, "&");
        break;
    case CL_R_HINOUT:
    case CL_R_IOVAL:
        fprintf(out, a->role == CL_R_HINOUT ? "&0x%" PRIx64 : "&%" PRIu64, d->pre);
        if (d->written)
            fprintf(out, a->role == CL_R_HINOUT ? "->0x%" PRIx64 : "->%" PRIu64, d->post);
        break;
    case CL_R_IN:
    case CL_R_OUT:
        fprintf(out, "<%" PRIu64 " bytes %s%s>", d->size, a->role == CL_R_IN ? "in" : "out",
                d->written ? "" : ", not recorded");
        break;
    default:
        fprintf(out, "<%" PRIu64 " batches>", d->nbatches);
    }
}

static int rp_list(struct rp *r)
{
    struct cl_read_row row;
    int more;
    if (cl_reader_rewind(r->log, INT64_MIN) != NRT_SUCCESS)
        return CL_REPLAY_BAD_INPUT;
    while ((more = cl_reader_next(r->log, &row)) > 0) {
        int id = cl_fn_lookup(row.fn);
        struct cl_dec d;
        if (id < 0 || !cl_decode(&cl_fns[id], row.args, row.args_len, &d)) {
            fprintf(r->out, "%6" PRId64 " [%u] %s(<unreadable>)\n", row.seq, row.thread, row.fn);
            continue;
        }
        const struct cl_fn *fn = &cl_fns[id];
        fprintf(r->out, "%6" PRId64 " [%u] %s(", row.seq, row.thread, fn->name);
        for (uint32_t i = 0; i < fn->nargs; i++) {
            if (i > 0)
                fprintf(r->out, ", ");
            rp_print_arg(r->out, &fn->args[i], &d.a[i]);
        }
        fprintf(r->out, ")");
        if (fn->ret == CL_RET_STATUS || fn->ret == CL_RET_INT)
            fprintf(r->out, " = %" PRId64, row.ret);
        else if (fn->ret == CL_RET_PTR)
            fprintf(r->out, " = 0x%" PRIx64, (uint64_t)row.ret);
        else if (fn->ret == CL_RET_STR && d.ret_str_present)
            fprintf(r->out, " = \"%.*s\"", (int)d.ret_len, d.ret_str);
        fprintf(r->out, "  %.3f ms\n", (double)row.ns / 1e6);
        cl_dec_free(&d);
    }
    return more < 0 ? CL_REPLAY_BAD_INPUT : 0;
}

int cl_replay(const struct cl_replay_opts *o)
{
    struct rp *r = calloc(1, sizeof *r);
    if (r == NULL)
        return CL_REPLAY_BAD_INPUT;
    r->o = o;
    r->out = o->out != NULL ? o->out : stdout;
    if (cl_reader_open(o->path, &r->log) != NRT_SUCCESS) {
        fprintf(r->out, "replay: %s is not a readable trnemu call log\n", o->path);
        free(r);
        return CL_REPLAY_BAD_INPUT;
    }
    if (o->list) {
        int rc = rp_list(r);
        cl_reader_close(r->log);
        free(r);
        return rc;
    }
    int64_t start = 0, snap = -1;
    int rc = rp_start(r, &start, &snap);
    if (rc == 0) {
        char *env = cl_reader_env(r->log, start);
        rp_env_apply(r->o, env);
        free(env);
        rp_env_isolate();
        rc = rp_open_lib(r);
    }
    if (rc == 0 && snap >= 0)
        rc = rp_restore(r, snap);
    if (rc == 0)
        rc = rp_loop(r, start);
    progress_end(&r->prog);
    if (rc == 0) {
        fprintf(r->out, "replay: %" PRId64 " call%s of %s replayed ", r->calls,
                r->calls == 1 ? "" : "s", o->path);
        if (snap >= 0)
            fprintf(r->out, "from snapshot %" PRId64 " ", snap);
        fprintf(r->out, "on %s: identical", o->libnrt);
        if (r->failures > 0)
            fprintf(r->out, ", %" PRId64 " failing status%s reproduced", r->failures,
                    r->failures == 1 ? "" : "es");
        if (r->skipped > 0)
            fprintf(r->out, " (%" PRId64 " skipped)", r->skipped);
        fprintf(r->out, "\n");
    }
    rp_cleanup(r);
    fflush(r->out);
    free(r);
    return rc;
}
