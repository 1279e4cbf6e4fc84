/*
 * fuzz_asm.c: libFuzzer entry for the assembler and disassembler
 * (emu/isa/asm.c, emu/isa/disasm.c). The input is assembly text (no file access).
 * Whatever it is, nothing may crash or leak, and every error must be one
 * line naming the source. Text that assembles must give a NEFF that reads
 * back into an equal model, and (for a trnemu NEFF) a disassembly that
 * assembles back into an equal model again; abort() otherwise, so the
 * fuzzer reports it. Built as a real fuzzer with -Dfuzz=true (clang), and
 * run over the seed corpus (corpus_asm/) by fuzz_neff_driver.c in every
 * build.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu/isa/asm.h"
#include "emu/isa/disasm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_SOURCE "fuzz.s"

/* Every error is one line about the source. */
static void fuzz_check_errors(const struct asm_ctx *a)
{
    for (size_t i = 0; i < asm_error_count(a); i++) {
        const char *e = asm_error_text(a, i);
        if (e == NULL || strchr(e, '\n') != NULL ||
            strncmp(e, FUZZ_SOURCE ":", strlen(FUZZ_SOURCE ":")) != 0)
            abort();
    }
}

/* NEFF bytes -> model equal to m; disassembly -> equal model. */
static void fuzz_check_model(const struct neff_model *m)
{
    uint8_t *bytes = NULL;
    size_t n = 0;
    struct neff_file *f = NULL;
    struct neff_model *back = NULL;
    if (asm_neff_bytes(m, &bytes, &n) != EMU_OK)
        abort();
    if (neff_file_read(bytes, n, true, &f) != EMU_OK ||
        neff_model_load(f, &back) != EMU_OK || !neff_model_equal(m, back))
        abort();
    if (neff_model_is_trnemu(back) && !disasm_round_trip(back, NULL))
        abort();
    neff_model_free(back);
    neff_file_free(f);
    free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct asm_opts o = {.source_name = FUZZ_SOURCE, .no_files = true,
                         .max_const_bytes = 1u << 20, .max_errors = 8};
    struct asm_ctx *a = NULL;
    if (asm_new(&o, &a) != EMU_OK)
        return 0;
    asm_text(a, (const char *)data, size);
    emu_status st = asm_finish(a);
    fuzz_check_errors(a);
    if (st == EMU_OK)
        fuzz_check_model(asm_model(a));
    else if (asm_error_count(a) == 0 && st != EMU_RESOURCE)
        abort();  /* a failure must say why */
    asm_free(a);
    return 0;
}
