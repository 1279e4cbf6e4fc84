/*
 * test_cost.c: unit tests of the device-time cost model (emu/core/cost.c),
 * on instructions fed to it directly: DMA transfers overlap their start
 * latency, spread over the 16 engines by partition (8 partitions each),
 * share an engine between queues, pay a cost per DMA buffer (contiguous
 * run), and a wait on a semaphore count holds from when the count was
 * reached, not from the semaphore's latest signal; a double_row matmul
 * streams its fp8 pairs at twice the rate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu/core/cost.h"

#define NS_EPS 1e-6

/* An SBUF pattern of `parts` partitions from `first`, `cols` fp32 each
 * (contiguous, or one element every `step`). */
static struct isa_ap sbuf_ap(uint32_t first, uint32_t parts, uint32_t cols, int32_t step)
{
    struct isa_ap ap;
    memset(&ap, 0, sizeof ap);
    ap.mem = ISA_MEM_SBUF;
    ap.dtype = ISA_DT_F32;
    ap.start_part = (uint8_t)first;
    ap.num_part = (uint8_t)parts;
    ap.part_step = 1;
    ap.ndims = 1;
    ap.dim[0] = (struct isa_dim){step, cols};
    return ap;
}

/* A DMA SBUF -> SBUF issued by engine eng. */
static struct isa_insn dma(enum isa_engine eng, struct isa_ap dst, struct isa_ap src)
{
    struct isa_insn in;
    memset(&in, 0, sizeof in);
    in.opcode = ISA_OP_dma_copy;
    in.engine = (uint8_t)eng;
    in.ap[0] = dst;
    in.ap[1] = src;
    return in;
}

static struct cost_run *run_v2(void)
{
    static struct cost_run r;
    cost_begin(&r, 2, NULL, 0);
    return &r;
}

/* One engine's time for n buffers moving `bytes` on NeuronCore-v2. */
static double engine_ns(const struct cost_table *t, double buffers, double bytes)
{
    return buffers * t->dma_buffer_ns + bytes / t->dma_engine_bytes_per_ns;
}

/* Back-to-back transfers of one queue overlap their start latency: n of
 * them take latency + n x the engines' time, not n x (latency + time). */
static void test_latency_overlaps(void **state)
{
    (void)state;
    struct cost_run *r = run_v2();
    const struct cost_table *t = r->t;
    struct isa_insn in = dma(ISA_ENG_SP, sbuf_ap(0, 128, 512, 1), sbuf_ap(0, 128, 512, 1));
    double end = 0;
    for (int i = 0; i < 10; i++)
        end = cost_insn(r, 0, ISA_ENG_SP, (size_t)i, &in);
    double each = engine_ns(t, 8, 8.0 * 512 * 4);  /* 8 partitions of 2 KiB per engine */
    double issue = t->dma_issue_cycles / t->clock_ghz[ISA_ENG_SP];
    assert_true(end > issue + t->dma_fixed_ns + 10 * each - NS_EPS);
    assert_true(end < issue + t->dma_fixed_ns + 10 * each + 10 * issue + NS_EPS);
    assert_true(end < 10 * (t->dma_fixed_ns + each) - 5 * t->dma_fixed_ns);  /* not a serial chain */
}

/* Partitions 0-7 and 8-15 go to different engines and move in parallel;
 * two transfers on partitions 0-3 share engine 0 and follow each other. */
static void test_engines_by_partition(void **state)
{
    (void)state;
    struct cost_run *r = run_v2();
    struct isa_insn a = dma(ISA_ENG_SP, sbuf_ap(0, 8, 4096, 1), sbuf_ap(0, 8, 4096, 1));
    struct isa_insn b = dma(ISA_ENG_POOL, sbuf_ap(8, 8, 4096, 1), sbuf_ap(8, 8, 4096, 1));
    double ea = cost_insn(r, 0, ISA_ENG_SP, 0, &a), eb = cost_insn(r, 0, ISA_ENG_POOL, 0, &b);
    assert_true(eb - ea < 100.0);  /* side by side */

    r = run_v2();
    struct isa_insn c = dma(ISA_ENG_SP, sbuf_ap(0, 4, 4096, 1), sbuf_ap(0, 4, 4096, 1));
    double one = engine_ns(r->t, 4, 4.0 * 4096 * 4);
    double e1 = cost_insn(r, 0, ISA_ENG_SP, 0, &c), e2 = cost_insn(r, 0, ISA_ENG_SP, 1, &c);
    assert_true(e2 - e1 > one - NS_EPS);  /* one engine, one transfer at a time */
}

/* A strided partition is one DMA buffer per element: far dearer than the
 * same bytes contiguous. */
static void test_buffers_per_contiguous_run(void **state)
{
    (void)state;
    struct cost_run *r = run_v2();
    double wide, strided;
    struct isa_insn w = dma(ISA_ENG_SP, sbuf_ap(0, 128, 256, 1), sbuf_ap(0, 128, 256, 1));
    struct isa_insn s = dma(ISA_ENG_SP, sbuf_ap(0, 128, 256, 1), sbuf_ap(0, 128, 256, 2));
    cost_duration(r->t, &w, &wide);
    cost_duration(r->t, &s, &strided);
    struct cost_dma_shape sh;
    cost_dma_shape(&s, &sh);
    assert_int_equal(sh.buffers, 128 * 256);
    cost_dma_shape(&w, &sh);
    assert_int_equal(sh.buffers, 128);
    assert_true(strided - wide > 255 * 8 * r->t->dma_buffer_ns * 0.99);
}

/* A wait for the first signal of a semaphore that was signalled three
 * times before the waiter ran holds from the first signal. */
static void test_wait_on_a_count(void **state)
{
    (void)state;
    struct cost_run *r = run_v2();
    struct isa_sync add = {ISA_SYNC_SEM, ISA_SEMOP_add, 5, 1};
    cost_signal(r, 0, &add, 100.0);
    cost_signal(r, 0, &add, 2000.0);
    cost_signal(r, 0, &add, 9000.0);
    struct isa_insn w;
    memset(&w, 0, sizeof w);
    w.opcode = ISA_OP_nop;
    w.engine = ISA_ENG_PE;
    w.wait[0] = (struct isa_sync){ISA_SYNC_SEM, ISA_CMP_ge, 5, 2};
    double end = cost_insn(r, 0, ISA_ENG_PE, 0, &w);
    assert_true(end > 2000.0 && end < 2010.0);
    w.wait[0].value = 3;
    end = cost_insn(r, 0, ISA_ENG_PE, 1, &w);
    assert_true(end > 9000.0 && end < 9010.0);
}

/* A Tensor-engine matmul of `st` x `mv` (dst: PSUM fp32, M x N). */
static struct isa_insn matmul(struct isa_ap st, struct isa_ap mv, uint32_t m, uint32_t n)
{
    struct isa_insn in;
    memset(&in, 0, sizeof in);
    in.opcode = ISA_OP_nc_matmul;
    in.engine = ISA_ENG_PE;
    in.ap[0] = sbuf_ap(0, m, n, 1);
    in.ap[0].mem = ISA_MEM_PSUM;
    in.ap[1] = st;
    in.ap[2] = mv;
    return in;
}

/* An SBUF [parts, 2, cols] pattern of dtype: the pair dimension first. */
static struct isa_ap pair_ap(uint32_t parts, uint32_t cols, uint32_t dtype)
{
    struct isa_ap ap = sbuf_ap(0, parts, cols, 1);
    ap.dtype = (uint8_t)dtype;
    ap.ndims = 2;
    ap.dim[0] = (struct isa_dim){(int32_t)cols, 2};
    ap.dim[1] = (struct isa_dim){1, cols};
    return ap;
}

/* double_row feeds each processing element two fp8 pairs per cycle: a
 * [128, 2, 512] moving operand takes as long as a [128, 512] bf16 one
 * (the Trainium2 guide), half of the same operand without the mode, for
 * twice the flops. */
static void test_double_row_matmul(void **state)
{
    (void)state;
    const struct cost_table *t = cost_table_for(3);
    struct isa_ap st16 = sbuf_ap(0, 128, 128, 1), mv16 = sbuf_ap(0, 128, 512, 1);
    st16.dtype = mv16.dtype = ISA_DT_BF16;
    struct isa_insn plain = matmul(st16, mv16, 128, 512);
    struct isa_insn pair = matmul(pair_ap(128, 128, ISA_DT_FP8E4), pair_ap(128, 512, ISA_DT_FP8E5),
                                  128, 512);
    double dma_ns, base = cost_duration(t, &plain, &dma_ns);
    double unpaired = cost_duration(t, &pair, &dma_ns);
    pair.enums[0] = ISA_PERF_double_row;
    double paired = cost_duration(t, &pair, &dma_ns);
    assert_true(paired > base - NS_EPS && paired < base + NS_EPS);
    assert_true(unpaired > paired + 500.0 / t->clock_ghz[ISA_ENG_PE] - NS_EPS);
    static struct cost_run r; /* flops: a contraction of 2 x 128 rows */
    cost_begin(&r, 3, NULL, 0);
    cost_insn(&r, 0, ISA_ENG_PE, 0, &pair);
    assert_true(r.flops == 2.0 * 128 * 512 * 256);
}

/* The same instructions give the same estimate. */
static void test_deterministic(void **state)
{
    (void)state;
    double ends[2];
    for (int k = 0; k < 2; k++) {
        struct cost_run *r = run_v2();
        struct isa_insn a = dma(ISA_ENG_SP, sbuf_ap(0, 128, 300, 1), sbuf_ap(0, 128, 300, 1));
        struct isa_insn b = dma(ISA_ENG_POOL, sbuf_ap(0, 64, 100, 1), sbuf_ap(0, 64, 100, 1));
        for (int i = 0; i < 50; i++) {
            cost_insn(r, 0, ISA_ENG_SP, (size_t)i, &a);
            cost_insn(r, 0, ISA_ENG_POOL, (size_t)i, &b);
        }
        ends[k] = r->end_ns;
    }
    assert_true(ends[0] == ends[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latency_overlaps),
        cmocka_unit_test(test_engines_by_partition),
        cmocka_unit_test(test_buffers_per_contiguous_run),
        cmocka_unit_test(test_wait_on_a_count),
        cmocka_unit_test(test_double_row_matmul),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
