/*
 * cmd_asm.c: `trnemu asm FILE.s [-o FILE.neff] [-I DIR]...`: assemble
 * trnemu assembly (docs/asm.md) into a NEFF. Errors go to stderr, one per
 * line as FILE:LINE:COLUMN: cause; the output is written only on success
 * and is the same bytes for the same source.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/isa/asm.h"
#include "tools/tool.h"

#define ASM_MAX_INCLUDES 64

/* FILE.s -> FILE.neff (or FILE + ".neff"). */
static char *asm_default_output(const char *in)
{
    size_t n = strlen(in);
    if (n > 2 && strcmp(in + n - 2, ".s") == 0)
        n -= 2;
    char *out = malloc(n + 6);
    if (out != NULL) {
        memcpy(out, in, n);
        memcpy(out + n, ".neff", 6);
    }
    return out;
}

static int asm_write(const char *path, const uint8_t *bytes, size_t size)
{
    FILE *fp = fopen(path, "wb");
    bool ok = fp != NULL && fwrite(bytes, 1, size, fp) == size;
    if (fp != NULL && fclose(fp) != 0)
        ok = false;
    if (!ok) {
        fprintf(stderr, "trnemu asm: cannot write %s: %s\n", path, strerror(errno));
        remove(path);
    }
    return ok ? 0 : 1;
}

int cmd_asm(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    const char *incs[ASM_MAX_INCLUDES];
    size_t ninc = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            tool_usage("asm", stdout);
            return 0;
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "-I") == 0 && i + 1 < argc && ninc < ASM_MAX_INCLUDES) {
            incs[ninc++] = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return tool_usage_error("asm", "unknown or incomplete option");
        } else if (in == NULL) {
            in = argv[i];
        } else {
            return tool_usage_error("asm", "more than one input file");
        }
    }
    if (in == NULL)
        return tool_usage_error("asm", "no input file");
    struct asm_opts opts = {.include_dirs = incs, .n_include_dirs = ninc};
    struct neff_model *m = NULL;
    if (asm_file(in, &opts, stderr, &m) != EMU_OK)
        return 1;
    uint8_t *bytes = NULL;
    size_t size = 0;
    char *def = out ? NULL : asm_default_output(in);
    int rc = 1;
    if (asm_neff_bytes(m, &bytes, &size) != EMU_OK)
        fprintf(stderr, "trnemu asm: %s: cannot build the NEFF\n", in);
    else if (out != NULL || def != NULL)
        rc = asm_write(out ? out : def, bytes, size);
    free(bytes);
    free(def);
    neff_model_free(m);
    return rc;
}
