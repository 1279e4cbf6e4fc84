/*
 * pool_kern.c: the per-row arithmetic of the statistics, top-8, match and
 * sort instructions (pool.h): plain loops over fp32 rows, in a fixed order
 * so that results never depend on the machine.
 */
#include "emu/engines/pool.h"

#include <stdlib.h>

/* count, mean, sum of squared deviations of x[first], x[first + 2], ... */
static void pool_bn_half(const float *x, size_t n, size_t first, float *out)
{
    float cnt = 0.0f, sum = 0.0f, m2 = 0.0f;
    for (size_t i = first; i < n; i += 2) {
        sum += x[i];
        cnt += 1.0f;
    }
    float mean = cnt > 0.0f ? sum / cnt : 0.0f;
    for (size_t i = first; i < n; i += 2) {
        float d = x[i] - mean;
        m2 += d * d;
    }
    out[0] = cnt;
    out[1] = mean;
    out[2] = m2;
}

void pool_bn_stats_row(const float *x, size_t n, float out[6])
{
    pool_bn_half(x, n, 0, out);
    pool_bn_half(x, n, 1, out + 3);
}

/* Triples with a zero count add nothing (their mean may be anything). */
void pool_bn_aggr_row(const float *x, size_t n, float out[2])
{
    float cnt = 0.0f, wsum = 0.0f, m2 = 0.0f;
    for (size_t i = 0; i + 2 < n; i += 3) {
        if (x[i] != 0.0f) {
            cnt += x[i];
            wsum += x[i] * x[i + 1];
        }
    }
    if (cnt == 0.0f) {
        out[0] = out[1] = 0.0f;
        return;
    }
    float mean = wsum / cnt;
    for (size_t i = 0; i + 2 < n; i += 3) {
        if (x[i] != 0.0f) {
            float d = x[i + 1] - mean;
            m2 += x[i + 2] + x[i] * (d * d);
        }
    }
    out[0] = mean;
    out[1] = m2 / cnt;
}

void pool_top8(const float *x, size_t n, float top[8])
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        if (k == 8 && !pool_f32_above(v, top[7]))
            continue;
        size_t j = k < 8 ? k++ : 7;
        while (j > 0 && pool_f32_above(v, top[j - 1])) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = v;
    }
}

void pool_match8(const float *data, size_t n, const float vals[8], bool desc, int64_t idx[8])
{
    int left = 0;
    for (int i = 0; i < 8; i++) {
        idx[i] = -1;
        left += !isnan(vals[i]);
    }
    for (size_t j = 0; j < n && left > 0; j++) {
        for (int k = 0; k < 8; k++) {
            int i = desc ? 7 - k : k;
            if (idx[i] < 0 && data[j] == vals[i]) {
                idx[i] = (int64_t)j;
                left--;
                break;
            }
        }
    }
}

static int pool_rank_cmp(const void *a, const void *b)
{
    const struct pool_rank *x = a, *y = b;
    if (pool_f32_above(x->v, y->v))
        return -1;
    if (pool_f32_above(y->v, x->v))
        return 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

void pool_rank_sort(struct pool_rank *r, size_t n)
{
    qsort(r, n, sizeof *r, pool_rank_cmp);
}
