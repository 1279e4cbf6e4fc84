/*
 * mp_rank.c: one process of the multi-process tests (test_mp.c drives it).
 * Uses only the public Neuron Runtime API. The machine comes from the
 * environment the driver sets (TRNEMU_INSTANCE, NEURON_RT_VISIBLE_CORES,
 * TRNEMU_INSTANCE_NAME, TRNEMU_SHM_DIR).
 *
 *   mp_rank hold SEED    init; a 1 MiB tensor per visible VNC holding a
 *                        pattern; prints "ready HBM_INDEX ADDRESS" (of the
 *                        first tensor), then serves commands from stdin:
 *                          peek CHIP IDX ADDR SEED  the pattern of SEED is at
 *                                                   ADDR of that HBM stack
 *                          check                    own tensors still intact
 *                          close                    free, nrt_close, exit 0
 *                        answering "ok" or "bad" to each
 *   mp_rank expect STATUS   nrt_init must return STATUS (a number)
 *   mp_rank zero CHIP IDX ADDR  init; 4 KiB at ADDR of that stack read zero
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

#define MP_TENSOR (1u << 20)
#define MP_PEEK 4096u
#define MP_MAX_VNCS 64

static void mp_pattern(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

static int mp_init(void)
{
    NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    if (st != NRT_SUCCESS)
        fprintf(stderr, "mp_rank: nrt_init: %s (%d)\n", nrt_get_status_as_str(st), (int)st);
    return st == NRT_SUCCESS ? 0 : 1;
}

/* The bytes at addr of a chip's HBM stack, through the public mapping. */
static const uint8_t *mp_stack_bytes(int chip, int idx, uint64_t addr)
{
    void *va = NULL;
    size_t size = 0;
    if (nrt_get_hbm_mmap_va(chip, idx, &va, &size) != NRT_SUCCESS)
        return NULL;
    uint64_t in_stack = addr - (uint64_t)idx * size;
    if (addr < (uint64_t)idx * size || in_stack + MP_PEEK > size)
        return NULL;
    return (const uint8_t *)va + in_stack;
}

struct mp_state {
    nrt_tensor_t *t[MP_MAX_VNCS]; /* one tensor per visible VNC */
    uint32_t n;                   /* visible VNCs */
    uint32_t seed;                /* pattern seed of the first tensor */
    uint8_t buf[MP_TENSOR];       /* expected bytes */
    uint8_t got[MP_TENSOR];       /* read back */
};

static int mp_check(struct mp_state *s)
{
    for (uint32_t v = 0; v < s->n; v++) {
        mp_pattern(s->buf, MP_TENSOR, s->seed + v);
        if (nrt_tensor_read(s->t[v], s->got, 0, MP_TENSOR) != NRT_SUCCESS ||
            memcmp(s->buf, s->got, MP_TENSOR) != 0)
            return 1;
    }
    return 0;
}

static int mp_fill(struct mp_state *s)
{
    if (nrt_get_visible_vnc_count(&s->n) != NRT_SUCCESS || s->n == 0)
        return 1;
    if (s->n > MP_MAX_VNCS)
        s->n = MP_MAX_VNCS;
    for (uint32_t v = 0; v < s->n; v++) {
        mp_pattern(s->buf, MP_TENSOR, s->seed + v);
        if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, (int)v, MP_TENSOR, "mp", &s->t[v]) !=
                NRT_SUCCESS ||
            nrt_tensor_write(s->t[v], s->buf, 0, MP_TENSOR) != NRT_SUCCESS)
            return 1;
    }
    return mp_check(s);
}

static int mp_peek(const char *line)
{
    int chip, idx;
    unsigned long long addr;
    unsigned seed;
    if (sscanf(line, "peek %d %d %llu %u", &chip, &idx, &addr, &seed) != 4)
        return 1;
    const uint8_t *p = mp_stack_bytes(chip, idx, addr);
    uint8_t want[MP_PEEK];
    mp_pattern(want, MP_PEEK, seed);
    return p == NULL || memcmp(p, want, MP_PEEK) != 0;
}

static int mp_hold(uint32_t seed)
{
    static struct mp_state s;
    s.seed = seed;
    if (mp_init() != 0 || mp_fill(&s) != 0)
        return 1;
    nrt_tensor_device_allocation_info_t info;
    if (nrt_tensor_get_device_allocation_info(s.t[0], &info) != NRT_SUCCESS)
        return 1;
    printf("ready %d %llu\n", info.hbm_index, (unsigned long long)info.physical_address);
    fflush(stdout);
    char line[256];
    while (fgets(line, sizeof line, stdin) != NULL) {
        int bad;
        if (strncmp(line, "peek", 4) == 0)
            bad = mp_peek(line);
        else if (strncmp(line, "check", 5) == 0)
            bad = mp_check(&s);
        else if (strncmp(line, "close", 5) == 0)
            break;
        else
            bad = 1;
        printf("%s\n", bad ? "bad" : "ok");
        fflush(stdout);
    }
    for (uint32_t v = 0; v < s.n; v++)
        nrt_tensor_free(&s.t[v]);
    nrt_close();
    return 0;
}

static int mp_zero(int chip, int idx, uint64_t addr)
{
    if (mp_init() != 0)
        return 1;
    const uint8_t *p = mp_stack_bytes(chip, idx, addr);
    int bad = p == NULL;
    for (uint32_t i = 0; !bad && i < MP_PEEK; i++)
        bad = p[i] != 0;
    nrt_close();
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "hold") == 0)
        return mp_hold((uint32_t)strtoul(argv[2], NULL, 0));
    if (argc == 3 && strcmp(argv[1], "expect") == 0) {
        int want = atoi(argv[2]);
        NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
        if (st == NRT_SUCCESS)
            nrt_close();
        if ((int)st != want)
            fprintf(stderr, "mp_rank: nrt_init returned %d, want %d\n", (int)st, want);
        return (int)st == want ? 0 : 1;
    }
    if (argc == 5 && strcmp(argv[1], "zero") == 0)
        return mp_zero(atoi(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 0));
    fprintf(stderr, "usage: mp_rank hold SEED | expect STATUS | zero CHIP IDX ADDR\n");
    return 2;
}
