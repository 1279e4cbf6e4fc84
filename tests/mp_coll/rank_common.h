/*
 * rank_common.h: what the rank programs of the multi-process collective
 * tests share: this rank and the world size, a failure counter with its
 * CHECK macro (one line on stderr per failed check, prefixed with
 * RANK_PROG and the rank), and reading a number from the environment.
 * Define RANK_PROG (a string) before including it.
 */
#ifndef TRNEMU_TESTS_MP_COLL_RANK_COMMON_H
#define TRNEMU_TESTS_MP_COLL_RANK_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint32_t rank, world;  /* this rank, the number of ranks */
static int fails;             /* failed checks so far */

#define CHECK(cond, ...)                                                \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "%s %u/%u: ", RANK_PROG, rank, world);      \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
            fails++;                                                    \
        }                                                               \
    } while (0)

/* Variable name as a number, def when unset or empty. */
static inline uint32_t env_u32(const char *name, uint32_t def)
{
    const char *v = getenv(name);
    return v != NULL && *v ? (uint32_t)strtoul(v, NULL, 0) : def;
}

#endif
