/*
 * cmd_snapshot.c: `trnemu snapshot list|show|diff|export|rm|gc`: look into
 * snapshot files (docs/snapshot.md) without running anything.
 *   list FILE                  every snapshot: id, time, reason, sizes
 *   show FILE[@ID]             one snapshot (the newest without @ID):
 *                              machine, models, tensors, sets, memory
 *   diff FILE ID1 ID2          which tensors and memory ranges differ,
 *   diff FILE[@ID] FILE[@ID]   with the largest error of float tensors
 *   export FILE[@ID] TENSOR [-o OUT.npy]   a tensor (name or handle) as .npy
 *   rm FILE ID...              remove snapshots (then gc to free space)
 *   gc FILE                    drop chunks no snapshot uses, compact
 * diff exits 0 when the snapshots are identical, 1 when they differ.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/neff/npy.h"
#include "emu/num/numerics.h"
#include "nrt/nrt.h"
#include "store/snap_query.h"
#include "tools/tool.h"

/* Human-readable byte count. */
static const char *snap_bytes(uint64_t n, char *buf, size_t cap)
{
    if (n < 1024)
        snprintf(buf, cap, "%" PRIu64 " B", n);
    else if (n < (1u << 20))
        snprintf(buf, cap, "%.1f KiB", n / 1024.0);
    else if (n < (1ull << 30))
        snprintf(buf, cap, "%.1f MiB", n / 1048576.0);
    else
        snprintf(buf, cap, "%.2f GiB", n / 1073741824.0);
    return buf;
}

/* A snapshot file and which snapshot of it. */
struct snap_ref {
    struct snap_db *db;  /* the open file */
    int64_t id;          /* the snapshot */
};

/* Parse an id; -1 when spec is not a plain decimal number. */
static int64_t snap_parse_id(const char *spec)
{
    if (*spec == '\0' || strspn(spec, "0123456789") != strlen(spec) || strlen(spec) > 18)
        return -1;
    return strtoll(spec, NULL, 10);
}

/* Open FILE[@ID] (the newest snapshot without @ID). */
static int snap_open_ref(const char *spec, struct snap_ref *r)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", spec);
    char *at = strrchr(path, '@');
    r->id = -1;
    if (at != NULL && snap_parse_id(at + 1) >= 0) {
        r->id = snap_parse_id(at + 1);
        *at = '\0';
    }
    if (snap_open(path, false, &r->db) != NRT_SUCCESS)
        return 1;
    if (r->id < 0 && (snap_latest(r->db, &r->id) != NRT_SUCCESS || r->id < 0)) {
        fprintf(stderr, "trnemu snapshot: %s holds no snapshot\n", path);
        snap_close(r->db);
        return 1;
    }
    return 0;
}

/* ---- list -------------------------------------------------------------- */

static int snap_list(int argc, char **argv)
{
    if (argc != 3)
        return tool_usage_error("snapshot", "list takes one FILE");
    struct snap_db *db;
    if (snap_open(argv[2], false, &db) != NRT_SUCCESS)
        return 1;
    struct snapq_snapshot *s;
    size_t n;
    NRT_STATUS st = snapq_snapshots(db, &s, &n);
    if (st == NRT_SUCCESS) {
        printf("%4s  %-24s  %-10s %6s  %10s  %10s  %s\n", "ID", "CREATED", "REASON", "CALL",
               "LOGICAL", "STORED", "MACHINE");
        for (size_t i = 0; i < n; i++) {
            char a[32], b[32], call[24] = "-";
            if (s[i].call_seq >= 0)
                snprintf(call, sizeof call, "%" PRId64, s[i].call_seq);
            printf("%4" PRId64 "  %-24s  %-10s %6s  %10s  %10s  %s LNC=%" PRId64 " VNCs %s\n",
                   s[i].id, s[i].created, s[i].reason, call, snap_bytes(s[i].logical, a, sizeof a),
                   snap_bytes(s[i].stored, b, sizeof b), s[i].profile, s[i].lnc, s[i].visible);
        }
        free(s);
    }
    snap_close(db);
    return st == NRT_SUCCESS ? 0 : 1;
}

/* ---- show -------------------------------------------------------------- */

static const char *snap_placement(int64_t p)
{
    return p == NRT_TENSOR_PLACEMENT_DEVICE ? "device"
           : p == NRT_TENSOR_PLACEMENT_HOST ? "host"
           : p == NRT_TENSOR_PLACEMENT_VIRTUAL ? "virtual" : "?";
}

static void snap_tensor_type(const struct snapq_tensor *t, char *buf, size_t cap)
{
    if (t->dtype == 0)
        snprintf(buf, cap, "bytes");
    else
        snprintf(buf, cap, "%s[%s] (%s)", num_dtype_name(t->dtype), t->shape, t->bound_as);
}

static void snap_show_tensors(const struct snapq_tensor *t, size_t n)
{
    printf("tensors (%zu):\n", n);
    for (size_t i = 0; i < n; i++) {
        char b[32], where[64], type[200];
        if (t[i].storage_kind == 1)
            snprintf(where, sizeof where, "chip %" PRId64 " @0x%" PRIx64, t[i].chip, t[i].addr);
        else
            snprintf(where, sizeof where, "%s", t[i].storage_kind == 0 ? "no storage"
                                                : t[i].storage_kind == 3 ? "user buffer"
                                                                         : "host memory");
        snap_tensor_type(&t[i], type, sizeof type);
        printf("  0x%-14" PRIx64 " %-20s %-8s VNC %-3" PRId64 " %10s  %-24s %s\n", t[i].handle,
               t[i].name, snap_placement(t[i].placement), t[i].vnc,
               snap_bytes(t[i].size, b, sizeof b), where, type);
    }
}

static void snap_show_models(const struct snapq_model *m, size_t n)
{
    printf("models (%zu):\n", n);
    for (size_t i = 0; i < n; i++) {
        char a[32], b[32];
        printf("  0x%-14" PRIx64 " %-20s VNC %-3" PRId64 " NEFF %10s  HBM %10s  %" PRIu64
               " I/O  %" PRIu64 " executions\n", m[i].handle, m[i].name, m[i].vnc,
               snap_bytes(m[i].neff_size, a, sizeof a), snap_bytes(m[i].hbm_bytes, b, sizeof b),
               m[i].nio, m[i].executions);
    }
}

static void snap_show_sets(const struct snapq_entry *e, size_t n)
{
    size_t sets = 0;
    for (size_t i = 0; i < n; i++)
        sets += i == 0 || e[i].set != e[i - 1].set;
    printf("tensor sets (%zu with entries):\n", sets);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || e[i].set != e[i - 1].set)
            printf("%s  0x%" PRIx64 ":", i ? "\n" : "", e[i].set);
        printf(" %s=0x%" PRIx64, e[i].name, e[i].tensor);
    }
    if (n > 0)
        printf("\n");
}

static void snap_region_name(const struct snapq_region *r, char *buf, size_t cap)
{
    if (strcmp(r->kind, "hbm") == 0)
        snprintf(buf, cap, "hbm chip %" PRId64, r->chip);
    else if (r->vnc >= 0)
        snprintf(buf, cap, "%s VNC %" PRId64 " core %" PRId64, r->kind, r->vnc, r->core);
    else
        snprintf(buf, cap, "%s #%" PRId64, r->kind, r->id);
}

static void snap_show_regions(const struct snapq_region *r, size_t n)
{
    printf("memory (%zu regions; only non-zero chunks are stored):\n", n);
    for (size_t i = 0; i < n; i++) {
        char name[64], a[32], b[32], c[32];
        snap_region_name(&r[i], name, sizeof name);
        printf("  %-24s %10s  %7" PRIu64 " chunks  %10s  stored as %10s\n", name,
               snap_bytes(r[i].size, a, sizeof a), r[i].chunks, snap_bytes(r[i].bytes, b, sizeof b),
               snap_bytes(r[i].encoded, c, sizeof c));
    }
}

static int snap_show(int argc, char **argv)
{
    if (argc != 3)
        return tool_usage_error("snapshot", "show takes one FILE[@ID]");
    struct snap_ref r;
    if (snap_open_ref(argv[2], &r) != 0)
        return 1;
    struct snapq_snapshot s;
    struct snapq_model *m = NULL;
    struct snapq_tensor *t = NULL;
    struct snapq_entry *e = NULL;
    struct snapq_region *g = NULL;
    size_t nm = 0, nt = 0, ne = 0, ng = 0;
    NRT_STATUS st = snapq_snapshot(r.db, r.id, &s);
    if (st == NRT_SUCCESS)
        st = snapq_models(r.db, r.id, &m, &nm);
    if (st == NRT_SUCCESS)
        st = snapq_tensors(r.db, r.id, &t, &nt);
    if (st == NRT_SUCCESS)
        st = snapq_entries(r.db, r.id, &e, &ne);
    if (st == NRT_SUCCESS)
        st = snapq_regions(r.db, r.id, &g, &ng);
    if (st == NRT_SUCCESS) {
        char a[32], b[32], c[32];
        printf("snapshot %" PRId64 ": taken %s by pid %" PRId64 ", reason '%s'", s.id, s.created,
               s.pid, s.reason);
        if (s.call_seq >= 0)
            printf(", before call %" PRId64, s.call_seq);
        printf("\nmachine: %s, LNC=%" PRId64 ", VNCs %s; chunks of %s; %s of memory, %s added to "
               "the file\n", s.profile, s.lnc, s.visible, snap_bytes(s.chunk_size, a, sizeof a),
               snap_bytes(s.logical, b, sizeof b), snap_bytes(s.stored, c, sizeof c));
        snap_show_models(m, nm);
        snap_show_tensors(t, nt);
        snap_show_sets(e, ne);
        snap_show_regions(g, ng);
    }
    free(m);
    free(t);
    free(e);
    free(g);
    snap_close(r.db);
    return st == NRT_SUCCESS ? 0 : 1;
}

/* ---- tensor bytes ------------------------------------------------------ */

/* A tensor's bytes (zeros where nothing was stored); malloc'd. */
static NRT_STATUS snap_tensor_bytes(const struct snap_ref *r, const struct snapq_tensor *t,
                                    uint8_t **out)
{
    *out = calloc(t->size ? t->size : 1, 1);
    if (*out == NULL)
        return NRT_RESOURCE;
    if (t->region < 0 || t->size == 0)
        return NRT_SUCCESS;
    NRT_STATUS st = snapq_read(r->db, r->id, t->region, t->region_size, t->region_off, t->size,
                               *out);
    if (st != NRT_SUCCESS) {
        free(*out);
        *out = NULL;
    }
    return st;
}

/* The tensor a TENSOR argument names: a handle (0x...) or a name. */
static const struct snapq_tensor *snap_find_tensor(const struct snapq_tensor *t, size_t n,
                                                   const char *spec)
{
    char *end;
    uint64_t h = strncmp(spec, "0x", 2) == 0 ? strtoull(spec, &end, 16) : 0;
    bool by_handle = strncmp(spec, "0x", 2) == 0 && *end == '\0';
    for (size_t i = 0; i < n; i++)
        if (by_handle ? t[i].handle == h : strcmp(t[i].name, spec) == 0)
            return &t[i];
    return NULL;
}

/* ---- export ------------------------------------------------------------ */

/* Shape of an exported tensor: the model I/O's, else a flat byte array. */
static uint32_t snap_export_shape(const struct snapq_tensor *t, const char **descr,
                                  uint64_t *shape)
{
    size_t es = t->dtype ? num_dtype_size(t->dtype) : 0;
    *descr = t->dtype ? npy_descr_for_dtype(t->dtype) : NULL;
    if (*descr == NULL || es == 0 || t->size % es != 0) {
        *descr = "|u1";
        shape[0] = t->size;
        return 1;
    }
    uint32_t nd = 0;
    uint64_t prod = 1;
    for (const char *p = t->shape; *p && nd < NPY_MAX_DIMS; nd++) {
        shape[nd] = strtoull(p, (char **)&p, 10);
        prod *= shape[nd];
        p += *p == ',';
    }
    if (nd == 0 || prod * es != t->size) {
        shape[0] = t->size / es;
        nd = 1;
    }
    return nd;
}

/* Write tensor x of snapshot r as a .npy file. */
static int snap_export_one(const struct snap_ref *r, const struct snapq_tensor *x, const char *out)
{
    uint8_t *bytes = NULL, *npy = NULL;
    size_t npy_len = 0;
    uint64_t shape[NPY_MAX_DIMS];
    const char *descr;
    uint32_t nd = snap_export_shape(x, &descr, shape);
    char def[300];
    snprintf(def, sizeof def, "%s.npy", x->name[0] ? x->name : "tensor");
    out = out ? out : def;
    int rc = 1;
    if (snap_tensor_bytes(r, x, &bytes) == NRT_SUCCESS &&
        npy_write(descr, shape, nd, bytes, x->size, &npy, &npy_len) == EMU_OK) {
        FILE *f = fopen(out, "wb");
        bool ok = f != NULL && fwrite(npy, 1, npy_len, f) == npy_len;
        if (f != NULL && fclose(f) != 0)
            ok = false;
        if (ok) {
            printf("%s: tensor '%s', %" PRIu64 " bytes as %s\n", out, x->name, x->size, descr);
            rc = 0;
        } else {
            fprintf(stderr, "trnemu snapshot: cannot write %s: %s\n", out, strerror(errno));
        }
    }
    free(bytes);
    free(npy);
    return rc;
}

static int snap_export(int argc, char **argv)
{
    const char *out = NULL;
    if (argc == 6 && strcmp(argv[4], "-o") == 0)
        out = argv[5];
    else if (argc != 4)
        return tool_usage_error("snapshot", "export takes FILE[@ID] TENSOR [-o OUT.npy]");
    struct snap_ref r;
    if (snap_open_ref(argv[2], &r) != 0)
        return 1;
    struct snapq_tensor *t = NULL;
    size_t nt = 0;
    int rc = 1;
    if (snapq_tensors(r.db, r.id, &t, &nt) == NRT_SUCCESS) {
        const struct snapq_tensor *x = snap_find_tensor(t, nt, argv[3]);
        if (x == NULL)
            fprintf(stderr, "trnemu snapshot: snapshot %" PRId64 " has no tensor '%s'\n", r.id,
                    argv[3]);
        else
            rc = snap_export_one(&r, x, out);
    }
    free(t);
    snap_close(r.db);
    return rc;
}

/* ---- diff -------------------------------------------------------------- */

/* One side of a diff: a snapshot and what it holds. */
struct snap_side {
    struct snap_ref r;          /* file and snapshot */
    struct snapq_tensor *t;     /* its tensors */
    size_t nt;                  /* entries in t */
    struct snapq_region *g;     /* its memory regions */
    size_t ng;                  /* entries in g */
    bool *matched;              /* per tensor: paired with the other side */
};

static NRT_STATUS snap_side_load(struct snap_side *s)
{
    NRT_STATUS st = snapq_tensors(s->r.db, s->r.id, &s->t, &s->nt);
    if (st == NRT_SUCCESS)
        st = snapq_regions(s->r.db, s->r.id, &s->g, &s->ng);
    if (st == NRT_SUCCESS && (s->matched = calloc(s->nt + 1, sizeof *s->matched)) == NULL)
        st = NRT_RESOURCE;
    return st;
}

static void snap_side_free(struct snap_side *s)
{
    free(s->t);
    free(s->g);
    free(s->matched);
    if (s->r.db != NULL)
        snap_close(s->r.db);
}

/* Largest element errors between two float tensors of dtype. */
struct snap_err {
    uint64_t elems;     /* elements that differ */
    double max_abs;     /* largest |a - b| */
    uint64_t at_abs;    /* its element index */
    double max_rel;     /* largest |a - b| / |a| */
    uint64_t at_rel;    /* its element index */
};

static void snap_float_err(const uint8_t *a, const uint8_t *b, uint64_t bytes, uint32_t dtype,
                           struct snap_err *e)
{
    size_t es = num_dtype_size(dtype);
    uint64_t n = bytes / es;
    float fa[1024], fb[1024];
    memset(e, 0, sizeof *e);
    for (uint64_t i = 0; i < n; i += 1024) {
        size_t k = n - i < 1024 ? (size_t)(n - i) : 1024;
        if (memcmp(a + i * es, b + i * es, k * es) == 0)
            continue;
        (void)num_load_f32(fa, a + i * es, dtype, 1, k);
        (void)num_load_f32(fb, b + i * es, dtype, 1, k);
        for (size_t j = 0; j < k; j++) {
            if (memcmp(a + (i + j) * es, b + (i + j) * es, es) == 0)
                continue;
            double d = fabs((double)fa[j] - (double)fb[j]);
            if (isnan(d))
                d = INFINITY;
            double r = fa[j] != 0.0f ? d / fabs((double)fa[j]) : INFINITY;
            e->elems++;
            if (d > e->max_abs || e->elems == 1) {
                e->max_abs = d;
                e->at_abs = i + j;
            }
            if (r > e->max_rel || e->elems == 1) {
                e->max_rel = r;
                e->at_rel = i + j;
            }
        }
    }
}

/* Compare a pair of tensors; true when they differ. */
static bool snap_diff_tensor(const struct snap_side *A, const struct snapq_tensor *a,
                             const struct snap_side *B, const struct snapq_tensor *b)
{
    if (a->size != b->size) {
        printf("tensor '%s' (0x%" PRIx64 "): %" PRIu64 " bytes in A, %" PRIu64 " in B\n", a->name,
               a->handle, a->size, b->size);
        return true;
    }
    uint8_t *x = NULL, *y = NULL;
    if (snap_tensor_bytes(&A->r, a, &x) != NRT_SUCCESS ||
        snap_tensor_bytes(&B->r, b, &y) != NRT_SUCCESS) {
        printf("tensor '%s': cannot be read\n", a->name);
        free(x);
        return true;
    }
    uint64_t diff = 0, first = 0;
    for (uint64_t i = a->size; i-- > 0;)
        if (x[i] != y[i]) {
            diff++;
            first = i;
        }
    uint32_t dtype = a->dtype ? a->dtype : b->dtype;
    if (diff > 0 && dtype != 0 && num_dtype_is_float(dtype) && num_dtype_size(dtype) > 0) {
        struct snap_err e;
        snap_float_err(x, y, a->size, dtype, &e);
        printf("tensor '%s' (0x%" PRIx64 "): %" PRIu64 " of %" PRIu64 " %s elements differ; max abs"
               " err %.6g at [%" PRIu64 "], max rel err %.6g at [%" PRIu64 "]\n", a->name,
               a->handle, e.elems, a->size / num_dtype_size(dtype), num_dtype_name(dtype),
               e.max_abs, e.at_abs, e.max_rel, e.at_rel);
    } else if (diff > 0) {
        printf("tensor '%s' (0x%" PRIx64 "): %" PRIu64 " of %" PRIu64 " bytes differ, the first at "
               "offset %" PRIu64 " (0x%02x vs 0x%02x)\n", a->name, a->handle, diff, a->size, first,
               x[first], y[first]);
    }
    free(x);
    free(y);
    return diff > 0;
}

/* The tensor of B paired with a: same handle, else the same name. */
static const struct snapq_tensor *snap_pair(const struct snap_side *B, const struct snapq_tensor *a)
{
    for (size_t i = 0; i < B->nt; i++)
        if (!B->matched[i] && B->t[i].handle == a->handle) {
            B->matched[i] = true;
            return &B->t[i];
        }
    for (size_t i = 0; i < B->nt; i++)
        if (!B->matched[i] && strcmp(B->t[i].name, a->name) == 0) {
            B->matched[i] = true;
            return &B->t[i];
        }
    return NULL;
}

static int snap_diff_tensors(struct snap_side *A, struct snap_side *B)
{
    int differ = 0;
    size_t same = 0;
    for (size_t i = 0; i < A->nt; i++) {
        const struct snapq_tensor *b = snap_pair(B, &A->t[i]);
        if (b == NULL) {
            printf("tensor '%s' (0x%" PRIx64 "): only in A\n", A->t[i].name, A->t[i].handle);
            differ = 1;
        } else if (snap_diff_tensor(A, &A->t[i], B, b)) {
            differ = 1;
        } else {
            same++;
        }
    }
    for (size_t i = 0; i < B->nt; i++)
        if (!B->matched[i]) {
            printf("tensor '%s' (0x%" PRIx64 "): only in B\n", B->t[i].name, B->t[i].handle);
            differ = 1;
        }
    printf("%zu tensor(s) identical\n", same);
    return differ;
}

/* Print one merged range of differing chunks. */
static void snap_range(const char *name, uint64_t lo, uint64_t hi, int *shown)
{
    if ((*shown)++ < 16)
        printf("memory %s: [0x%" PRIx64 ", 0x%" PRIx64 ") differs (%" PRIu64 " bytes)\n", name, lo,
               hi, hi - lo);
}

/* Compare two regions chunk by chunk (by content hash); true when they differ. */
static bool snap_diff_region(const struct snap_side *A, const struct snapq_region *ra,
                             const struct snap_side *B, const struct snapq_region *rb)
{
    struct snapq_chunk *ca = NULL, *cb = NULL;
    size_t na = 0, nb = 0, i = 0, j = 0;
    char name[64];
    snap_region_name(ra, name, sizeof name);
    if (snapq_chunks(A->r.db, A->r.id, ra->id, &ca, &na) != NRT_SUCCESS ||
        snapq_chunks(B->r.db, B->r.id, rb->id, &cb, &nb) != NRT_SUCCESS) {
        free(ca);
        printf("memory %s: cannot be read\n", name);
        return true;
    }
    uint64_t lo = 0, hi = 0, total = 0;
    int shown = 0;
    while (i < na || j < nb) {
        bool take_a = j >= nb || (i < na && ca[i].off <= cb[j].off);
        bool take_b = i >= na || (j < nb && cb[j].off <= ca[i].off);
        const struct snapq_chunk *c = take_a ? &ca[i] : &cb[j];
        bool same = take_a && take_b && ca[i].len == cb[j].len &&
                    memcmp(ca[i].hash.b, cb[j].hash.b, CHUNK_HASH_LEN) == 0;
        uint64_t end = c->off + (take_a && take_b && cb[j].len > c->len ? cb[j].len : c->len);
        if (!same) {
            if (hi > lo && c->off != hi) {
                snap_range(name, lo, hi, &shown);
                lo = hi = 0;
            }
            if (hi == lo)
                lo = c->off;
            hi = end;
            total += end - c->off;
        }
        i += take_a;
        j += take_b;
    }
    if (hi > lo)
        snap_range(name, lo, hi, &shown);
    if (shown > 16)
        printf("memory %s: %d ranges differ in all, %" PRIu64 " bytes\n", name, shown, total);
    free(ca);
    free(cb);
    return total > 0;
}

static bool snap_same_place(const struct snapq_region *a, const struct snapq_region *b)
{
    return strcmp(a->kind, b->kind) == 0 && a->chip == b->chip && a->vnc == b->vnc &&
           a->core == b->core && a->size == b->size;
}

static int snap_diff_memory(const struct snap_side *A, const struct snap_side *B)
{
    int differ = 0;
    for (size_t i = 0; i < A->ng; i++) {
        if (strcmp(A->g[i].kind, "host") == 0)
            continue;  /* host memory belongs to tensors, compared above */
        const struct snapq_region *b = NULL;
        for (size_t j = 0; j < B->ng && b == NULL; j++)
            if (snap_same_place(&A->g[i], &B->g[j]))
                b = &B->g[j];
        struct snapq_region empty = A->g[i];
        empty.id = -1;  /* no such region in B: all zero */
        differ |= snap_diff_region(A, &A->g[i], B, b ? b : &empty);
    }
    for (size_t j = 0; j < B->ng; j++) {
        bool found = strcmp(B->g[j].kind, "host") == 0;
        for (size_t i = 0; i < A->ng && !found; i++)
            found = snap_same_place(&A->g[i], &B->g[j]);
        if (!found) {
            struct snapq_region empty = B->g[j];
            empty.id = -1;
            differ |= snap_diff_region(A, &empty, B, &B->g[j]);
        }
    }
    return differ;
}

static int snap_diff(int argc, char **argv)
{
    struct snap_side A = {0}, B = {0};
    char a[4200], b[4200];
    if (argc == 5 && snap_parse_id(argv[3]) >= 0 && snap_parse_id(argv[4]) >= 0) {
        snprintf(a, sizeof a, "%s@%s", argv[2], argv[3]);
        snprintf(b, sizeof b, "%s@%s", argv[2], argv[4]);
    } else if (argc == 4) {
        snprintf(a, sizeof a, "%s", argv[2]);
        snprintf(b, sizeof b, "%s", argv[3]);
    } else {
        return tool_usage_error("snapshot", "diff takes FILE ID1 ID2 or FILE[@ID] FILE[@ID]");
    }
    if (snap_open_ref(a, &A.r) != 0)
        return 2;
    if (snap_open_ref(b, &B.r) != 0) {
        snap_side_free(&A);
        return 2;
    }
    int rc = 2;
    if (snap_side_load(&A) == NRT_SUCCESS && snap_side_load(&B) == NRT_SUCCESS) {
        printf("A: %s (snapshot %" PRId64 ")\nB: %s (snapshot %" PRId64 ")\n", a, A.r.id, b, B.r.id);
        int t = snap_diff_tensors(&A, &B);
        int m = snap_diff_memory(&A, &B);
        rc = t || m;
        printf("%s\n", rc ? "the snapshots differ" : "the snapshots are identical");
    }
    snap_side_free(&A);
    snap_side_free(&B);
    return rc;
}

/* ---- rm, gc ------------------------------------------------------------ */

static int snap_rm(int argc, char **argv)
{
    if (argc < 4)
        return tool_usage_error("snapshot", "rm takes FILE ID...");
    struct snap_db *db;
    if (snap_open(argv[2], false, &db) != NRT_SUCCESS)
        return 1;
    int rc = 0;
    for (int i = 3; i < argc; i++) {
        int64_t id = snap_parse_id(argv[i]);
        if (id < 0 || snapq_remove(db, id) != NRT_SUCCESS) {
            fprintf(stderr, "trnemu snapshot: cannot remove snapshot '%s'\n", argv[i]);
            rc = 1;
        } else {
            printf("removed snapshot %" PRId64 "\n", id);
        }
    }
    snap_close(db);
    return rc;
}

static int snap_gc(int argc, char **argv)
{
    if (argc != 3)
        return tool_usage_error("snapshot", "gc takes one FILE");
    struct snap_db *db;
    if (snap_open(argv[2], false, &db) != NRT_SUCCESS)
        return 1;
    uint64_t n, bytes;
    NRT_STATUS st = snapq_gc(db, &n, &bytes);
    snap_close(db);
    if (st != NRT_SUCCESS)
        return 1;
    char b[32];
    printf("%s: dropped %" PRIu64 " unreferenced chunk(s) and NEFF(s), %s\n", argv[2], n,
           snap_bytes(bytes, b, sizeof b));
    return 0;
}

/* ---- verify ------------------------------------------------------------ */

/* Check one snapshot; prints its verdict, the cause is the log line. */
static int snap_verify_one(struct snap_db *db, const char *path, int64_t id)
{
    bool legacy = false;
    if (snap_verify(db, id, &legacy) != NRT_SUCCESS) {
        printf("%s@%" PRId64 ": CORRUPT\n", path, id);
        return 1;
    }
    printf("%s@%" PRId64 ": ok%s\n", path, id,
           legacy ? " (saved before manifests: rows checked, deletions undetectable)" : "");
    return 0;
}

static int snap_verify_cmd(int argc, char **argv)
{
    if (argc != 3)
        return tool_usage_error("snapshot", "verify takes one FILE[@ID]");
    char path[4096];
    snprintf(path, sizeof path, "%s", argv[2]);
    char *at = strrchr(path, '@');
    int64_t only = -1;
    if (at != NULL && snap_parse_id(at + 1) >= 0) {
        only = snap_parse_id(at + 1);
        *at = '\0';
    }
    struct snap_db *db;
    if (snap_open(path, false, &db) != NRT_SUCCESS)
        return 1;
    struct snapq_snapshot *s = NULL;
    size_t n = 0;
    int rc = 0;
    if (only >= 0)
        rc = snap_verify_one(db, path, only);
    else if (snapq_snapshots(db, &s, &n) != NRT_SUCCESS)
        rc = 1;
    for (size_t i = 0; only < 0 && i < n; i++)
        rc |= snap_verify_one(db, path, s[i].id);
    if (only < 0 && rc == 0 && n == 0)
        printf("%s: no snapshot\n", path);
    free(s);
    snap_close(db);
    return rc;
}

int cmd_snapshot(int argc, char **argv)
{
    if (argc < 2 || tool_help_asked(argc, argv, false)) {
        tool_usage("snapshot", argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    static const struct {
        const char *name;                  /* sub-subcommand */
        int (*run)(int argc, char **argv); /* its implementation */
    } subs[] = {
        {"list", snap_list}, {"show", snap_show}, {"diff", snap_diff},
        {"export", snap_export}, {"rm", snap_rm}, {"gc", snap_gc},
        {"verify", snap_verify_cmd},
    };
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
        if (strcmp(argv[1], subs[i].name) == 0)
            return subs[i].run(argc, argv);
    tool_usage("snapshot", stderr);
    return 2;
}
