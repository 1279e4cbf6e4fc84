/*
 * bench_core.h: what the engine benchmarks share on top of bench_util.h:
 * one core running one engine stream of instructions, timed in the calling
 * thread's CPU time, the best of several runs.
 */
#ifndef TRNEMU_BENCH_CORE_H
#define TRNEMU_BENCH_CORE_H

#include "bench/bench_util.h"
#include "emu/core/core.h"

/* Best CPU seconds of `reps` runs of the n instructions at code on engine
 * e of core c (at least one run); exits naming `who` when a run fails. */
static inline double bench_core_best(struct core *c, const struct isa_insn *code, size_t n,
                                     enum isa_engine e, int reps, const char *who)
{
    struct core_program prog = {.name = who};
    prog.code[e] = code;
    prog.n[e] = n;
    const struct core_program *progs[1] = {&prog};
    struct core_run_opts opts = {0};
    char report[1024] = "";
    double best = 1e30;
    for (int r = 0; r < (reps > 0 ? reps : 1); r++) {
        double t0 = bench_cpu_s();
        if (core_run(&c, progs, 1, &opts, report, sizeof report) != EMU_OK) {
            fprintf(stderr, "%s", report);
            bench_die(who, "core_run failed");
        }
        double t = bench_cpu_s() - t0;
        best = t < best ? t : best;
    }
    return best;
}

#endif
