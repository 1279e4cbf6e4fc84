/*
 * fuzz_neff.c: libFuzzer entry for the NEFF reader: bytes -> neff_file_read
 * -> neff_model_load; a model that loads must also survive store, write,
 * read and load again unchanged (abort otherwise, so the fuzzer reports
 * it). Built as a real fuzzer with -Dfuzz=true (clang), and run over the
 * seed corpus by fuzz_neff_driver.c in every build.
 */
#include <stdint.h>
#include <stdlib.h>

#include "emu/neff/neff_file.h"
#include "emu/neff/neff_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* store -> write -> read -> load must give back an equal model. */
static void fuzz_round_trip(const struct neff_model *m)
{
    struct neff_file *f = NULL, *g = NULL;
    struct neff_model *m2 = NULL;
    uint8_t *bytes = NULL;
    size_t n = 0;
    if (neff_model_store(m, &f) != EMU_OK)
        abort();
    if (neff_file_write(f, &bytes, &n) != EMU_OK)
        abort();
    if (neff_file_read(bytes, n, true, &g) != EMU_OK)
        abort();
    if (neff_model_load(g, &m2) != EMU_OK || !neff_model_equal(m, m2))
        abort();
    neff_model_free(m2);
    neff_file_free(g);
    neff_file_free(f);
    free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct neff_file *f = NULL;
    /* No hash check: mutated inputs would almost never get past it. */
    if (neff_file_read(data, size, false, &f) != EMU_OK)
        return 0;
    struct neff_model *m = NULL;
    if (neff_model_load(f, &m) == EMU_OK) {
        fuzz_round_trip(m);
        neff_model_free(m);
    }
    neff_file_free(f);
    return 0;
}
