/*
 * top_tree.c: neuron-top's Memory Usage Details, a tree of the memory the
 * selected tab uses: a node per device (ND n), under it a node per
 * NeuronCore (the VNCs of the tab), under each core its loaded models
 * (with their runtime model id) and the five categories of
 * neuron-monitor's usage_breakdown (Tensors, Constants, Model Code,
 * Runtime Memory, Model Scratchpad) the core holds outside its models;
 * under each model the same categories, for what its load placed. Every
 * row shows device and host memory; a parent shows the sum of its
 * children. The counters are the ones `trnemu monitor` reads
 * (struct instance_vnc_use); the host bytes a model keeps (its NEFF, with
 * its instruction streams) count as its Model Code.
 *
 * Keys: up/down move the selection, right opens a node, left closes it
 * (or goes to its parent), Enter opens or closes it, x the whole tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/top.h"

enum top_cat { TOP_TENSORS, TOP_CONSTANTS, TOP_CODE, TOP_RUNTIME, TOP_SCRATCH, TOP_CATS };

static const char *const top_cat_name[TOP_CATS] = {"Tensors", "Constants", "Model Code",
                                                   "Runtime Memory", "Model Scratchpad"};

/* Memory of one node by category: device and host bytes. */
struct top_mem {
    uint64_t dev[TOP_CATS];
    uint64_t host[TOP_CATS];
};

enum top_kind { TOP_DEV, TOP_NC, TOP_MODEL, TOP_CAT };

/* One row of the tree as shown. */
struct top_row {
    enum top_kind kind;
    uint32_t depth;       /* 0: device, 1: core, 2: model or category, 3: category */
    uint32_t dev, vnc;    /* the device, the VNC (cores, models, categories) */
    uint32_t slot;        /* the model's entry in the VNC's loaded[] */
    uint32_t model_id;    /* the runtime's model id (models) */
    bool parent, open;    /* a node with children; shown open */
    uint64_t dmem, hmem;  /* device and host bytes */
    char name[80];
};

/* The rows being built: up to cap kept, n counted. */
struct top_rows {
    struct top_row *r;
    uint32_t cap, n;
};

static uint64_t top_sum(const uint64_t *x)
{
    uint64_t s = 0;
    for (int i = 0; i < TOP_CATS; i++)
        s += x[i];
    return s;
}

static uint64_t top_less(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/* What model slot i of u placed at load time. */
static void top_model_mem(const struct instance_model_use *u, struct top_mem *m)
{
    memset(m, 0, sizeof *m);
    for (uint32_t s = 0; s < u->nsgs && s < INSTANCE_MODEL_SGS; s++) {
        m->dev[TOP_CONSTANTS] += u->sg[s].constants;
        m->dev[TOP_RUNTIME] += u->sg[s].runtime;
    }
    m->host[TOP_CODE] = u->host;
}

/* What the core holds outside its listed models. */
static void top_nc_own(const struct instance_vnc_use *u, struct top_mem *m)
{
    uint64_t c = 0, r = 0;
    for (uint32_t i = 0; i < INSTANCE_VNC_MODELS; i++) {
        if (atomic_load(&u->loaded[i].id) == 0)
            continue;
        struct top_mem x;
        top_model_mem(&u->loaded[i], &x);
        c += x.dev[TOP_CONSTANTS];
        r += x.dev[TOP_RUNTIME];
    }
    memset(m, 0, sizeof *m);
    m->dev[TOP_TENSORS] = atomic_load(&u->mem[INSTANCE_MEM_TENSORS]);
    m->host[TOP_TENSORS] = atomic_load(&u->mem[INSTANCE_MEM_HOST_TENSORS]);
    m->dev[TOP_CONSTANTS] = top_less(atomic_load(&u->mem[INSTANCE_MEM_CONSTANTS]), c);
    m->dev[TOP_RUNTIME] = top_less(atomic_load(&u->mem[INSTANCE_MEM_RUNTIME]), r);
    m->dev[TOP_SCRATCH] = atomic_load(&u->mem[INSTANCE_MEM_SCRATCHPAD]);
}

/* The whole core: its own memory and its models'. */
static void top_nc_total(const struct instance_vnc_use *u, uint64_t *dev, uint64_t *host)
{
    struct top_mem m;
    top_nc_own(u, &m);
    *dev = top_sum(m.dev);
    *host = top_sum(m.host);
    for (uint32_t i = 0; i < INSTANCE_VNC_MODELS; i++) {
        if (atomic_load(&u->loaded[i].id) == 0)
            continue;
        top_model_mem(&u->loaded[i], &m);
        *dev += top_sum(m.dev);
        *host += top_sum(m.host);
    }
}

/* Append a row (kept when there is room); the row, or NULL. */
static struct top_row *top_add(struct top_rows *rs, enum top_kind kind, uint32_t depth)
{
    uint32_t i = rs->n++;
    if (rs->r == NULL || i >= rs->cap)
        return NULL;
    struct top_row *r = &rs->r[i];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->depth = depth;
    return r;
}

static void top_add_cats(struct top_rows *rs, const struct top_mem *m, uint32_t depth,
                         const struct top_row *parent)
{
    for (int c = 0; c < TOP_CATS; c++) {
        struct top_row *r = top_add(rs, TOP_CAT, depth);
        if (r == NULL)
            continue;
        r->dev = parent->dev;
        r->vnc = parent->vnc;
        r->slot = parent->slot;
        r->dmem = m->dev[c];
        r->hmem = m->host[c];
        snprintf(r->name, sizeof r->name, "%s", top_cat_name[c]);
    }
}

static void top_add_model(struct top_rows *rs, const struct top_tree *t,
                          const struct instance_vnc_use *u, uint32_t v, uint32_t i,
                          uint32_t dev)
{
    const struct instance_model_use *mu = &u->loaded[i];
    struct top_mem m;
    top_model_mem(mu, &m);
    struct top_row here = {.kind = TOP_MODEL, .depth = 2, .dev = dev, .vnc = v, .slot = i,
                           .model_id = atomic_load(&mu->id), .parent = true,
                           .open = t->model_open[v][i], .dmem = top_sum(m.dev),
                           .hmem = top_sum(m.host)};
    snprintf(here.name, sizeof here.name, "%.*s", (int)sizeof mu->name, mu->name);
    struct top_row *r = top_add(rs, TOP_MODEL, 2);
    if (r != NULL)
        *r = here;
    if (here.open)
        top_add_cats(rs, &m, 3, &here);
}

static void top_add_nc(struct top_rows *rs, const struct top_tree *t,
                       const struct mon_sample *b, uint32_t v, uint32_t dev)
{
    const struct instance_vnc_use *u = &b->ctl.use[v];
    struct top_row here = {.kind = TOP_NC, .depth = 1, .dev = dev, .vnc = v, .parent = true,
                           .open = t->nc_open[v]};
    top_nc_total(u, &here.dmem, &here.hmem);
    snprintf(here.name, sizeof here.name, "NC %u (VNC %u)%s", v % top_per_device(b), v,
             atomic_load(&u->stand_ins) ? " stand-in" : "");
    struct top_row *r = top_add(rs, TOP_NC, 1);
    if (r != NULL)
        *r = here;
    if (!here.open)
        return;
    for (uint32_t i = 0; i < INSTANCE_VNC_MODELS; i++)
        if (atomic_load(&u->loaded[i].id) != 0)
            top_add_model(rs, t, u, v, i, dev);
    struct top_mem own;
    top_nc_own(u, &own);
    top_add_cats(rs, &own, 2, &here);
}

/* Every row the tab shows open; returns how many (rows kept: up to cap). */
static uint32_t top_build(const struct top_tree *t, const struct mon_sample *b,
                          int32_t tab_pid, struct top_row *out, uint32_t cap)
{
    struct top_rows rs = {out, cap, 0};
    uint32_t per = top_per_device(b), ndev = b->live ? b->ctl.total_vncs / per : 0;
    for (uint32_t d = 0; d < ndev && d < CONFIG_MAX_VNCS; d++) {
        struct top_row here = {.kind = TOP_DEV, .dev = d, .parent = true,
                               .open = t->dev_open[d]};
        bool any = false;
        for (uint32_t v = d * per; v < (d + 1) * per; v++) {
            if (!top_tab_uses(b, tab_pid, v))
                continue;
            uint64_t dm, hm;
            top_nc_total(&b->ctl.use[v], &dm, &hm);
            here.dmem += dm;
            here.hmem += hm;
            any = true;
        }
        if (!any)
            continue;
        snprintf(here.name, sizeof here.name, "ND %u", d);
        struct top_row *r = top_add(&rs, TOP_DEV, 0);
        if (r != NULL)
            *r = here;
        for (uint32_t v = d * per; here.open && v < (d + 1) * per; v++)
            if (top_tab_uses(b, tab_pid, v))
                top_add_nc(&rs, t, b, v, d);
    }
    return rs.n;
}

/* The rows, allocated (NULL when out of memory); *n their count. */
static struct top_row *top_rows_of(const struct top_tree *t, const struct mon_sample *b,
                                   int32_t tab_pid, uint32_t *n)
{
    *n = top_build(t, b, tab_pid, NULL, 0);
    struct top_row *r = calloc(*n ? *n : 1, sizeof *r);
    if (r != NULL)
        top_build(t, b, tab_pid, r, *n);
    return r;
}

uint32_t top_tree_rows(const struct top_tree *t, const struct mon_sample *b, int32_t tab_pid)
{
    return top_build(t, b, tab_pid, NULL, 0);
}

static void top_tree_row(struct top_screen *s, const struct top_row *r, bool sel)
{
    char d[32], h[32], id[16] = "";
    if (r->kind == TOP_MODEL)
        snprintf(id, sizeof id, "%u", r->model_id);
    int nw = s->w - 1 - 10 - 14 - 14;
    nw = nw > 8 ? nw : 8;
    char name[160];
    snprintf(name, sizeof name, "%*s%s%s", (int)(4 * r->depth), "",
             r->parent ? (r->open ? "[-] " : "[+] ") : "    ", r->name);
    top_line(s, "%s%-*.*s %9s %13s %13s%*s", sel ? TOP_SEL : "", nw, nw, name, id,
             top_bytes(r->dmem, d, sizeof d), top_bytes(r->hmem, h, sizeof h),
             sel ? s->w : 0, "");
}

void top_tree_draw(struct top_screen *s, struct top_tree *t, const struct mon_sample *b,
                   int32_t tab_pid, int rows)
{
    top_bar(s, "Memory Usage Details");
    int nw = s->w - 1 - 10 - 14 - 14;
    top_line(s, "%-*s %9s %13s %13s", nw > 8 ? nw : 8, "", "Model ID", "Device Memory",
             "Host Memory");
    uint32_t n;
    struct top_row *r = top_rows_of(t, b, tab_pid, &n);
    if (r == NULL)
        return;
    if (n == 0)
        top_line(s, "  (no NeuronCore in this tab)");
    t->sel = n == 0 ? 0 : t->sel < n ? t->sel : n - 1;
    uint32_t room = rows > 0 ? (uint32_t)rows : 0;
    if (t->sel < t->first)
        t->first = t->sel;
    if (room > 0 && t->sel >= t->first + room)
        t->first = t->sel - room + 1;
    if (t->first + room > n)
        t->first = n > room ? n - room : 0;
    for (uint32_t i = t->first; i < n && i < t->first + room; i++)
        top_tree_row(s, &r[i], i == t->sel);
    free(r);
}

/* Open or close the node of row r. */
static void top_set_open(struct top_tree *t, const struct top_row *r, bool open)
{
    if (r->kind == TOP_DEV)
        t->dev_open[r->dev] = open;
    else if (r->kind == TOP_NC)
        t->nc_open[r->vnc] = open;
    else if (r->kind == TOP_MODEL)
        t->model_open[r->vnc][r->slot] = open;
}

/* x: every node open, or every node closed (the selection goes to the top). */
static void top_all(struct top_tree *t)
{
    t->all_open = !t->all_open;
    memset(t->dev_open, t->all_open, sizeof t->dev_open);
    memset(t->nc_open, t->all_open, sizeof t->nc_open);
    memset(t->model_open, t->all_open, sizeof t->model_open);
    t->sel = 0;
    t->first = 0;
}

/* The row of the selection's parent. */
static uint32_t top_parent(const struct top_row *r, uint32_t sel)
{
    uint32_t i = sel;
    while (i > 0 && r[i - 1].depth >= r[sel].depth)
        i--;
    return i > 0 ? i - 1 : sel;
}

bool top_tree_key(struct top_tree *t, const struct mon_sample *b, int32_t tab_pid, int key)
{
    if (key == 'x' || key == 'X') {
        top_all(t);
        return true;
    }
    if (key != TOP_KEY_UP && key != TOP_KEY_DOWN && key != TOP_KEY_LEFT &&
        key != TOP_KEY_RIGHT && key != '\n' && key != '\r')
        return false;
    uint32_t n;
    struct top_row *r = top_rows_of(t, b, tab_pid, &n);
    if (r == NULL || n == 0) {
        free(r);
        return true;
    }
    uint32_t sel = t->sel < n ? t->sel : n - 1;
    if (key == TOP_KEY_UP && sel > 0)
        sel--;
    else if (key == TOP_KEY_DOWN && sel + 1 < n)
        sel++;
    else if (key == TOP_KEY_RIGHT && r[sel].parent)
        top_set_open(t, &r[sel], true);
    else if (key == TOP_KEY_LEFT && r[sel].parent && r[sel].open)
        top_set_open(t, &r[sel], false);
    else if (key == TOP_KEY_LEFT)
        sel = top_parent(r, sel);
    else if ((key == '\n' || key == '\r') && r[sel].parent)
        top_set_open(t, &r[sel], !r[sel].open);
    t->sel = sel;
    free(r);
    return true;
}
