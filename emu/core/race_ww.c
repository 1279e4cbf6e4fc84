/*
 * race_ww.c: the race checker's write-write pairs between cores
 * (race_int.h). When a write of one core overwrites, with other values,
 * bytes that an unordered write of another core wrote, the order of the
 * two decides those bytes only if nothing settles them later. So:
 *
 * - a remembered HBM write keeps a copy of the bytes it left (up to
 *   RACE_DATA_MAX per write and RACE_KEPT_MAX in all; past that it has
 *   none and a pair with it is reported at once, as before);
 * - the bytes the two share, less those a later write of the first
 *   write's engine covered (in either order that write comes after the
 *   first), are the bytes in question; when the second write put there
 *   what the first had, the pair is no race;
 * - otherwise the pair waits (up to RACE_PEND_MAX pairs, RACE_KEPT_MAX
 *   bytes) for the end of the run, when it is a race if the bytes in
 *   question (less those later writes of the first write's engine
 *   covered meanwhile) differ from what the first write left: both
 *   orders then end differently. Both cores zeroing an output and then
 *   storing the same rows (a kernel run whole on each core) ends the same
 *   in any order; one core zeroing rows the other already stored does
 *   not.
 *
 * A read of one core that an unordered write of another overlaps reads
 * the same bytes in either order when the reader's core itself wrote
 * there, ordered before the read, what that write left (each core
 * storing the same result, then reading it back).
 */
#include <stdlib.h>
#include <string.h>

#include "emu/core/race_int.h"
#include "emu/grow.h"

#define RACE_DATA_MAX (16u << 20)  /* bytes of one write's data kept */
#define RACE_KEPT_MAX (256u << 20) /* bytes kept in all (data and waiting pairs) */
#define RACE_PEND_MAX 1024u        /* pairs waiting for the end of the run */

/* A buffer of at least n bytes: a spare one (the smallest that fits) or
 * a new one; *cap: its size. Reusing them spares the page faults of a
 * fresh large allocation on every DMA. */
static uint8_t *race_ww_buf(struct race_state *r, uint64_t n, uint64_t *cap)
{
    uint32_t best = r->nspare;
    for (uint32_t i = 0; i < r->nspare; i++)
        if (r->spare[i].cap >= n && (best == r->nspare || r->spare[i].cap < r->spare[best].cap))
            best = i;
    if (best == r->nspare) {
        *cap = n ? n : 1;
        return malloc(*cap);
    }
    uint8_t *p = r->spare[best].p;
    *cap = r->spare[best].cap;
    r->spare[best] = r->spare[--r->nspare];
    return p;
}

void race_ww_keep(struct race_state *r, struct race_access *a)
{
    uint64_t n = a->hi - a->lo, cap;
    a->data = NULL;
    if (a->mem != ISA_MEM_HBM || !a->write || n > RACE_DATA_MAX || r->kept + n > RACE_KEPT_MAX)
        return;
    a->data = race_ww_buf(r, n, &cap);
    if (a->data == NULL)
        return;
    memcpy(a->data, (const void *)(uintptr_t)a->lo, n);
    a->data_cap = cap;
    r->kept += cap;
}

void race_ww_drop(struct race_state *r, struct race_access *a)
{
    if (a->data == NULL)
        return;
    r->kept -= a->data_cap;
    if (r->nspare < RACE_SPARE)
        r->spare[r->nspare++] = (struct race_buf){a->data, a->data_cap};
    else
        free(a->data);
    a->data = NULL;
}

/* out = the byte runs both x and y hold (both sorted, disjoint). */
static bool race_ww_meet(const struct race_runs *x, const struct race_runs *y,
                         struct race_runs *out)
{
    out->n = 0;
    for (size_t i = 0, j = 0; i < x->n && j < y->n;) {
        uint64_t lo = x->run[i].lo > y->run[j].lo ? x->run[i].lo : y->run[j].lo;
        uint64_t hi = x->run[i].hi < y->run[j].hi ? x->run[i].hi : y->run[j].hi;
        if (lo < hi) {
            if (!grow_array((void **)&out->run, out->n + 1, &out->cap, sizeof *out->run, 64))
                return false;
            out->run[out->n++] = (struct race_run){lo, hi};
        }
        if (x->run[i].hi <= y->run[j].hi)
            i++;
        else
            j++;
    }
    return true;
}

/* Take the runs of y out of s (both sorted, disjoint); tmp: scratch. */
static bool race_ww_cut(struct race_runs *s, const struct race_runs *y, struct race_runs *tmp)
{
    tmp->n = 0;
    size_t j = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t lo = s->run[i].lo, hi = s->run[i].hi;
        while (j < y->n && y->run[j].hi <= lo)
            j++;
        for (size_t k = j; lo < hi; k++) {
            uint64_t end = k < y->n && y->run[k].lo < hi ? y->run[k].lo : hi;
            if (lo < end) {
                if (!grow_array((void **)&tmp->run, tmp->n + 1, &tmp->cap, sizeof *tmp->run, 64))
                    return false;
                tmp->run[tmp->n++] = (struct race_run){lo, end};
            }
            if (k >= y->n || y->run[k].lo >= hi)
                break;
            lo = y->run[k].hi;
        }
    }
    struct race_runs t = *s;
    *s = *tmp;
    *tmp = t;
    return true;
}

/* Take out of s the bytes that writes of first's engine after it (among
 * hist[0..n)) covered. */
static bool race_ww_mask(struct race_state *r, const struct race_access *first,
                         const struct race_access *hist, size_t n, struct race_runs *s)
{
    for (size_t k = 0; k < n && s->n > 0; k++) {
        const struct race_access *w = &hist[k];
        if (!w->write || w->eng != first->eng || w->epoch <= first->epoch ||
            w->lo >= s->run[s->n - 1].hi || w->hi <= s->run[0].lo)
            continue;
        race_hbm_runs(w, &r->runs[2]);
        if (!race_ww_cut(s, &r->runs[2], &r->runs[3]))
            return false;
    }
    return true;
}

/* Do the bytes of s now differ from what first left there? */
static bool race_ww_differs(const struct race_access *first, const struct race_runs *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (memcmp((const void *)(uintptr_t)s->run[i].lo, first->data + (s->run[i].lo - first->lo),
                   s->run[i].hi - s->run[i].lo) != 0)
            return true;
    return false;
}

/* Keep the pair (first, late) on the bytes of s for the end of the run. */
static bool race_ww_wait(struct race_state *r, const struct race_access *first,
                         const struct race_access *late, const struct race_runs *s)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < s->n; i++)
        bytes += s->run[i].hi - s->run[i].lo;
    if (r->npend >= RACE_PEND_MAX || r->kept + bytes > RACE_KEPT_MAX ||
        !grow_array((void **)&r->pend, r->npend + 1, &r->cap_pend, sizeof *r->pend, 16))
        return false;
    struct race_pend p = {*first, *late, NULL, s->n, NULL, bytes};
    p.first.data = p.late.data = NULL;
    p.run = malloc(s->n * sizeof *p.run);
    p.want = malloc(bytes ? bytes : 1);
    bool own_first = race_hbm_own(&p.first), own_late = race_hbm_own(&p.late);
    if (p.run == NULL || p.want == NULL || !own_first || !own_late) {
        free(p.run);
        free(p.want);
        if (own_first && p.first.runs != first->runs)
            free(p.first.runs);
        if (own_late && p.late.runs != late->runs)
            free(p.late.runs);
        return false;
    }
    memcpy(p.run, s->run, s->n * sizeof *p.run);
    uint8_t *w = p.want;
    for (size_t i = 0; i < s->n; i++) {
        memcpy(w, first->data + (s->run[i].lo - first->lo), s->run[i].hi - s->run[i].lo);
        w += s->run[i].hi - s->run[i].lo;
    }
    r->kept += bytes;
    r->pend[r->npend++] = p;
    return true;
}

bool race_ww_settle(struct race_state *r, const struct race_access *hist, size_t n, size_t i,
                    const struct race_access *a)
{
    const struct race_access *first = &hist[i];
    if (first->data == NULL)
        return false;
    race_hbm_runs(first, &r->runs[0]);
    race_hbm_runs(a, &r->runs[1]);
    struct race_runs s = {NULL, 0, 0};
    bool ok = r->runs[0].n > 0 && r->runs[1].n > 0 && race_ww_meet(&r->runs[0], &r->runs[1], &s) &&
              race_ww_mask(r, first, hist, n, &s) &&
              (!race_ww_differs(first, &s) || race_ww_wait(r, first, a, &s));
    free(s.run);
    return ok;
}

/* Did own leave on the bytes of t what w left there? */
static bool race_ww_same(const struct race_access *own, const struct race_access *w,
                         const struct race_runs *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (memcmp(own->data + (t->run[i].lo - own->lo), w->data + (t->run[i].lo - w->lo),
                   t->run[i].hi - t->run[i].lo) != 0)
            return false;
    return true;
}

bool race_ww_read(struct race_state *r, uint32_t me, const struct race_access *w,
                  const struct race_access *rd)
{
    uint32_t core = me / ISA_ENG_COUNT;
    if (w->data == NULL)
        return false;
    race_hbm_runs(w, &r->runs[0]);
    race_hbm_runs(rd, &r->runs[1]);
    struct race_runs s = {NULL, 0, 0}, tmp = {NULL, 0, 0};
    bool ok = r->runs[0].n > 0 && r->runs[1].n > 0 && race_ww_meet(&r->runs[0], &r->runs[1], &s);
    for (size_t k = r->nhbm[core]; ok && s.n > 0 && k-- > 0;) {
        const struct race_access *own = &r->hbm[core][k];
        if (!own->write || own->epoch > r->vc[me][own->eng] || own->lo >= s.run[s.n - 1].hi ||
            own->hi <= s.run[0].lo)
            continue;  /* not a write the reader is ordered after, or elsewhere */
        race_hbm_runs(own, &r->runs[2]);
        ok = own->data != NULL && race_ww_meet(&s, &r->runs[2], &r->runs[3]) &&
             race_ww_same(own, w, &r->runs[3]) && race_ww_cut(&s, &r->runs[2], &tmp);
    }
    ok = ok && s.n == 0;
    free(s.run);
    free(tmp.run);
    return ok;
}

/* Do the bytes of p now differ from what its first write left, less those
 * later writes of that engine, still remembered, covered? */
static bool race_ww_still(struct race_state *r, const struct race_pend *p)
{
    uint32_t core = p->first.eng / ISA_ENG_COUNT;
    struct race_runs s = {NULL, 0, 0};
    if (!grow_array((void **)&s.run, p->nrun, &s.cap, sizeof *s.run, 16))
        return true;
    memcpy(s.run, p->run, p->nrun * sizeof *s.run);
    s.n = p->nrun;
    bool differs = !race_ww_mask(r, &p->first, r->hbm[core], r->nhbm[core], &s);
    const uint8_t *w = p->want;
    for (size_t i = 0, k = 0; !differs && i < p->nrun; i++) {
        for (; k < s.n && s.run[k].lo < p->run[i].hi; k++)
            if (memcmp((const void *)(uintptr_t)s.run[k].lo, w + (s.run[k].lo - p->run[i].lo),
                       s.run[k].hi - s.run[k].lo) != 0)
                differs = true;
        w += p->run[i].hi - p->run[i].lo;
    }
    free(s.run);
    return differs;
}

const struct race_pend *race_ww_unsettled(struct race_state *r)
{
    for (size_t i = 0; i < r->npend; i++)
        if (race_ww_still(r, &r->pend[i]))
            return &r->pend[i];
    return NULL;
}

void race_ww_free(struct race_state *r)
{
    for (size_t i = 0; i < r->npend; i++) {
        free(r->pend[i].run);
        free(r->pend[i].want);
        free(r->pend[i].first.runs);
        free(r->pend[i].late.runs);
    }
    free(r->pend);
    for (uint32_t i = 0; i < r->nspare; i++)
        free(r->spare[i].p);
    for (int i = 2; i < 4; i++)
        free(r->runs[i].run);
}
