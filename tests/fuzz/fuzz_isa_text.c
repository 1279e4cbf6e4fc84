/*
 * fuzz_isa_text.c: libFuzzer target for the ISA text parser and the
 * binary stream decoder (emu/isa/isa_text.c, emu/isa/isa.c).
 *
 * The input is tried three ways: as one line of assembly, as an engine
 * instruction stream, and as one encoded instruction. Nothing may crash
 * or leak, errors must stay within the line, and whatever is accepted
 * must survive print -> parse and encode -> decode unchanged (abort()
 * otherwise, so the fuzzer reports it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu/isa/isa.h"
#include "emu/isa/isa_text.h"
#include "emu/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fuzz_vars[] = {"input0", "weights", "out.0"};
#define FUZZ_NVARS (sizeof(fuzz_vars) / sizeof(fuzz_vars[0]))

static emu_status fuzz_lookup(void *user, const char *name, size_t len, uint32_t *id)
{
    (void)user;
    for (uint32_t i = 0; i < FUZZ_NVARS; i++)
        if (strlen(fuzz_vars[i]) == len && memcmp(fuzz_vars[i], name, len) == 0) {
            *id = i;
            return EMU_OK;
        }
    return EMU_INVALID;
}

static const char *fuzz_name(void *user, uint32_t id)
{
    (void)user;
    return id < FUZZ_NVARS ? fuzz_vars[id] : NULL;
}

static const struct isa_text_env fuzz_env = {fuzz_lookup, fuzz_name, NULL};

/* print -> parse must give the same instruction; encode -> decode too. */
static void check_insn(const struct isa_insn *in)
{
    char buf[8192];
    struct isa_insn again;
    uint8_t bytes[ISA_INSN_BYTES];
    if (isa_text_print(in, &fuzz_env, buf, sizeof(buf)) >= sizeof(buf))
        abort();
    if (isa_text_parse_line(buf, &fuzz_env, &again, NULL) != EMU_OK)
        abort();
    if (memcmp(in, &again, sizeof(again)) != 0)
        abort();
    if (isa_encode(in, bytes) != EMU_OK)
        abort();
    if (isa_decode(bytes, sizeof(bytes), (enum isa_engine)in->engine, &again) != EMU_OK)
        abort();
    if (memcmp(in, &again, sizeof(again)) != 0)
        abort();
}

static void fuzz_text(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1);
    if (line == NULL)
        return;
    memcpy(line, data, size);
    line[size] = '\0';
    struct isa_insn in;
    struct isa_text_error err;
    if (isa_text_parse_line(line, &fuzz_env, &in, &err) == EMU_OK)
        check_insn(&in);
    else if (err.column < 1 || err.column > size + 1 || err.message[0] == '\0')
        abort();
    free(line);
}

static void fuzz_stream(const uint8_t *data, size_t size)
{
    enum isa_engine eng = size > 6 && data[6] < ISA_ENG_COUNT ? data[6] : ISA_ENG_PE;
    struct isa_insn *insns;
    size_t count;
    if (isa_decode_stream(data, size, eng, &insns, &count) != EMU_OK)
        return;
    for (size_t i = 0; i < count; i++)
        check_insn(&insns[i]);
    uint8_t *again;
    size_t again_size;
    if (isa_encode_stream(insns, count, eng, &again, &again_size) != EMU_OK)
        abort();
    if (again_size != size || memcmp(again, data, size) != 0)
        abort();
    free(again);
    free(insns);
}

static void fuzz_one(const uint8_t *data, size_t size)
{
    struct isa_insn in;
    enum isa_engine eng = size > 0 ? (enum isa_engine)(data[size - 1] % ISA_ENG_COUNT) : ISA_ENG_PE;
    if (isa_decode(data, size, eng, &in) == EMU_OK)
        check_insn(&in);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* emu alone: no environment is read, the level is set here. */
    const struct log_config quiet = {.level = LOG_LVL_QUIET};
    log_configure(&quiet);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_text(data, size);
    fuzz_stream(data, size);
    fuzz_one(data, size);
    return 0;
}
