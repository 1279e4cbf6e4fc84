/*
 * test_pe_group.c: nc_matmul accumulation groups (emu/engines/exec_pe.c)
 * run as one job across host threads give the bits, the semaphores and
 * the device time of running each instruction alone on one thread; a wait
 * ends a group, a signal does not; the race checker and TRNEMU_THREADS=1
 * (par_configure(1)) run instruction by instruction. The threads suite
 * runs it under ThreadSanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu/core/cost.h"
#include "emu/core/par.h"
#include "emu/num/numerics.h"
#include "exec_harness.h"

#define K 128u          /* contraction of each matmul */
#define M 128u          /* stationary columns */
#define N 512u          /* moving columns */
#define GROUP 20u       /* matmuls per accumulation chain */
#define SB_MV 8192u     /* SBUF byte offset of the moving tiles */
#define BANK_BYTES 2048u
#define PSUM_BYTES (2u * BANK_BYTES) /* the two banks the program writes, per partition */

/* Every SBUF byte the program reads: bf16 in [-1, 1). */
static void fill_sbuf(struct harness *h)
{
    for (uint32_t p = 0; p < K; p++) {
        uint16_t *row = (uint16_t *)(void *)harness_sbuf_ptr(h, p, 0);
        for (uint32_t i = 0; i < (SB_MV + GROUP * N * 2) / 2; i++) {
            double u = (double)(num_rng_u64(7, (uint64_t)p * 65536 + i) >> 11) * 0x1p-53;
            row[i] = num_f32_to_bf16((float)(2.0 * u - 1.0));
        }
    }
}

/* Matmul i of a chain into PSUM bank `bank`. */
static struct isa_insn *add_mm(struct harness *h, uint32_t i, uint32_t bank)
{
    struct isa_insn *in = harness_add(h, ISA_ENG_PE, ISA_OP_nc_matmul);
    in->ap[0] = harness_tile(ISA_MEM_PSUM, 0, M, (uint64_t)bank * BANK_BYTES, ISA_DT_F32, N);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, K, (uint64_t)i * M * 2 % SB_MV, ISA_DT_BF16, M);
    in->ap[2] = harness_tile(ISA_MEM_SBUF, 0, K, SB_MV + (uint64_t)i * N * 2, ISA_DT_BF16, N);
    in->flags = i > 0 ? 1u : 0u;
    return in;
}

/* Chain 0 into bank 0 with a wait (that holds) at matmul 10: two groups;
 * chain 1 into bank 1 with a signal at matmul 5: groups of at most 16. */
static void build(struct harness *h)
{
    harness_clear(h);
    for (uint32_t i = 0; i < GROUP; i++) {
        struct isa_insn *in = add_mm(h, i, 0);
        if (i == 10)
            in->wait[0] = (struct isa_sync){.kind = ISA_SYNC_SEM, .id = 3, .op = ISA_CMP_ge,
                                            .value = 0};
    }
    for (uint32_t i = 0; i < GROUP; i++) {
        struct isa_insn *in = add_mm(h, i, 1);
        if (i == 5)
            in->signal[0] = (struct isa_sync){.kind = ISA_SYNC_SEM, .id = 1,
                                              .op = ISA_SEMOP_add, .value = 1};
    }
}

/* What one run leaves: PSUM's two banks, a semaphore, the device time. */
struct outcome {
    uint8_t psum[M][PSUM_BYTES]; /* the banks, partition by partition */
    uint32_t sem1;               /* the semaphore the program signals */
    double end_ns;               /* device time of the run */
    uint64_t insns;              /* instructions costed */
    unsigned long long handoffs; /* par_for calls handed to helpers */
};

static void run(struct harness *h, unsigned threads, bool racecheck, struct outcome *o)
{
    static struct cost_run cost;
    par_configure(threads);
    build(h);
    memset(harness_psum_ptr(h, 0, 0), 0xff, (size_t)M * ISA_PSUM_PART_BYTES);
    cost_begin(&cost, 2, NULL, 0);
    h->opts.cost = &cost;
    h->opts.racecheck = racecheck;
    unsigned long long h0 = par_handoffs();
    assert_int_equal(harness_run(h), EMU_OK);
    o->handoffs = par_handoffs() - h0;
    for (uint32_t p = 0; p < M; p++)
        memcpy(o->psum[p], harness_psum_ptr(h, p, 0), PSUM_BYTES);
    o->sem1 = h->core->sem[1];
    o->end_ns = cost.end_ns;
    o->insns = cost.insns;
    h->opts.cost = NULL;
    h->opts.racecheck = false;
}

static void same(const struct outcome *a, const struct outcome *b)
{
    assert_memory_equal(a->psum, b->psum, sizeof a->psum);
    assert_int_equal(a->sem1, b->sem1);
    assert_true(a->end_ns == b->end_ns);
    assert_int_equal(a->insns, b->insns);
}

static void test_groups(void **state)
{
    (void)state;
    struct harness *h = harness_new(2);
    static struct outcome one, many, raced;
    fill_sbuf(h);
    par_force_split(true);
    run(h, 1, false, &one);
    assert_int_equal(one.handoffs, 0);
    assert_int_equal(one.sem1, 1);
    run(h, 3, false, &many);
    same(&one, &many);
    /* four groups (10 + 10, 16 + 4), each a packing and a product hand-off */
    assert_int_equal(many.handoffs, 8);
    run(h, 3, true, &raced);
    same(&one, &raced);
    assert_int_equal(raced.handoffs, 2 * GROUP); /* one matmul at a time */
    par_force_split(false);
    par_configure(0);
    harness_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    par_shutdown();
    return failed;
}
