/*
 * cmd_disasm.c: `trnemu disasm FILE.neff [-o FILE.s] [--const-dir DIR]
 * [--no-index] [--check]`: print a NEFF as trnemu assembly (docs/asm.md):
 * header, metadata and every engine's instructions, in a form that
 * `trnemu asm` turns back into the same NEFF. --check does that round trip
 * in memory and says whether the model comes back equal.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "emu/isa/asm.h"
#include "emu/isa/disasm.h"
#include "tools/tool.h"

/* Where --const-dir puts constants, and how the .s names them. */
struct dis_consts {
    const char *dir;      /* directory the files go to */
    const char *ref;      /* that directory as the .s file sees it */
    char path[PATH_MAX];  /* the last path returned */
    bool failed;          /* a file could not be written */
};

/* Relative path from directory `from` to `to` (both absolute, clean). */
static void rel_path(const char *from, const char *to, char *out, size_t cap)
{
    size_t common = 0, i = 0;
    for (; from[i] && to[i] && from[i] == to[i]; i++)
        if (from[i] == '/')
            common = i;
    if ((from[i] == '\0' && (to[i] == '/' || to[i] == '\0')) || (to[i] == '\0' && from[i] == '/'))
        common = i;
    out[0] = '\0';
    size_t len = 0;
    for (const char *p = from + common; *p; p++)
        if (*p == '/' && len + 4 < cap) {
            memcpy(out + len, "../", 3);
            len += 3;
            out[len] = '\0';
        }
    const char *rest = to + common + (to[common] == '/');
    snprintf(out + len, cap - len, "%s", *rest ? rest : ".");
    len = strlen(out);
    if (len > 1 && out[len - 1] == '/')
        out[len - 1] = '\0';
}

static const char *dis_const_file(void *user, const struct neff_subgraph *sg,
                                  const struct neff_var *v)
{
    struct dis_consts *c = user;
    char name[NAME_MAX + 1], full[PATH_MAX];
    snprintf(name, sizeof name, "%s_%s", sg->name, v->file_name);
    for (char *p = name; *p; p++)
        if (*p == '/')
            *p = '_';
    snprintf(full, sizeof full, "%s/%s", c->dir, name);
    FILE *fp = fopen(full, "wb");
    size_t n = neff_buf_size(v->file);
    bool ok = fp != NULL && fwrite(neff_buf_data(v->file), 1, n, fp) == n;
    if (fp != NULL && fclose(fp) != 0)
        ok = false;
    if (!ok) {
        fprintf(stderr, "trnemu disasm: cannot write %s: %s; constant '%s' stays inline\n",
                full, strerror(errno), v->name);
        c->failed = true;
        return NULL;
    }
    snprintf(c->path, sizeof c->path, "%s/%s", c->ref, name);
    return c->path;
}

/* Make --const-dir and work out how the output file refers to it. */
static int dis_consts_setup(struct dis_consts *c, const char *dir, const char *out, char *ref,
                            size_t cap)
{
    char adir[PATH_MAX], aout[PATH_MAX], odir[PATH_MAX];
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "trnemu disasm: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    c->dir = dir;
    c->ref = dir;
    if (out == NULL || realpath(dir, adir) == NULL)
        return 0;
    snprintf(odir, sizeof odir, "%s", out);
    char *slash = strrchr(odir, '/');
    if (slash == NULL)
        snprintf(odir, sizeof odir, ".");
    else if (slash == odir)
        odir[1] = '\0';
    else
        *slash = '\0';
    if (realpath(odir, aout) == NULL)
        return 0;
    rel_path(aout, adir, ref, cap);
    c->ref = ref;
    return 0;
}

static int dis_check(const struct neff_model *m)
{
    if (!neff_model_is_trnemu(m)) {
        fprintf(stderr, "trnemu disasm --check: not a trnemu NEFF; its streams cannot be "
                        "reassembled\n");
        return 1;
    }
    if (!disasm_round_trip(m, stderr))
        return 1;
    printf("round trip: ok (assembling the disassembly gives an equal model)\n");
    return 0;
}

static int dis_run(const char *in, const char *outp, const char *cdir, bool no_index, bool check,
                   bool full)
{
    uint8_t *bytes = NULL;
    size_t size = 0;
    struct neff_file *f = NULL;
    struct neff_model *m = NULL;
    if (asm_read_file(in, 0, &bytes, &size) != EMU_OK) {
        fprintf(stderr, "trnemu disasm: cannot read %s: %s\n", in, strerror(errno));
        return 1;
    }
    int rc = 1;
    if (neff_file_read(bytes, size, false, &f) != EMU_OK ||
        neff_model_load(f, &m) != EMU_OK) {
        fprintf(stderr, "trnemu disasm: %s is not a valid NEFF (see the log line above)\n", in);
    } else if (check) {
        rc = dis_check(m);
    } else if (!neff_model_is_trnemu(m) && !full) {
        FILE *out = outp ? fopen(outp, "w") : stdout;
        rc = out != NULL && disasm_outline(out, m, f, in) == EMU_OK ? 0 : 1;
        if (out == NULL)
            fprintf(stderr, "trnemu disasm: cannot write %s: %s\n", outp, strerror(errno));
        if (out != NULL && out != stdout && fclose(out) != 0)
            rc = 1;
    } else {
        struct dis_consts consts = {0};
        char ref[PATH_MAX];
        struct disasm_opts o = {.source_name = in, .no_index = no_index};
        FILE *out = outp ? fopen(outp, "w") : stdout;
        if (out == NULL)
            fprintf(stderr, "trnemu disasm: cannot write %s: %s\n", outp, strerror(errno));
        else if (cdir == NULL || dis_consts_setup(&consts, cdir, outp, ref, sizeof ref) == 0) {
            if (cdir != NULL) {
                o.const_file = dis_const_file;
                o.user = &consts;
            }
            rc = disasm_model(out, m, &f->hdr, &o) == EMU_OK && !consts.failed ? 0 : 1;
        }
        if (out != NULL && out != stdout && fclose(out) != 0)
            rc = 1;
    }
    neff_model_free(m);
    neff_file_free(f);
    free(bytes);
    return rc;
}

int cmd_disasm(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *cdir = NULL;
    bool no_index = false, check = false, full = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            tool_usage("disasm", stdout);
            return 0;
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--const-dir") == 0 && i + 1 < argc) {
            cdir = argv[++i];
        } else if (strcmp(argv[i], "--no-index") == 0) {
            no_index = true;
        } else if (strcmp(argv[i], "--check") == 0) {
            check = true;
        } else if (strcmp(argv[i], "--full") == 0) {
            full = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return tool_usage_error("disasm", "unknown or incomplete option");
        } else if (in == NULL) {
            in = argv[i];
        } else {
            return tool_usage_error("disasm", "more than one input file");
        }
    }
    if (in == NULL)
        return tool_usage_error("disasm", "no input file");
    return dis_run(in, out, cdir, no_index, check, full);
}
