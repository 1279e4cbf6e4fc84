/*
 * asm_var.c: variables of the assembler's draft model (see asm_int.h).
 *
 * Name and member checks, and adding a variable, an I/O tensor or a file
 * constant (with its .npy bytes) to the current subgraph; shared by the
 * directives and by the C API declarations of asm.c.
 */
#include "emu/isa/asm_int.h"

#include <stdlib.h>
#include <string.h>

#include "emu/neff/npy.h"

/* ---- variables ----------------------------------------------------------- */

void asm_var_opts_clear(struct asm_var_opts *o)
{
    free(o->fabric);
    free(o->list);
    free(o->ops);
    memset(o, 0, sizeof *o);
}

/* Is s valid UTF-8 (no overlong forms, surrogates or values past
 * U+10FFFF)? JSON strings must be. */
static bool utf8_ok(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s, n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2
                           : (c & 0xF8) == 0xF0 ? 3 : 4;
        if (n == 4)
            return false;
        uint32_t cp = n == 0 ? c : c & (0x3Fu >> n);
        for (unsigned i = 1; i <= n; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i] & 0x3Fu);
        }
        static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        s += n + 1;
    }
    return true;
}

/* A name that JSON and the tarball carry safely. */
bool asm_name_ok(const char *s)
{
    if (s == NULL || s[0] == '\0' || strlen(s) > ASM_NAME_MAX ||
        !utf8_ok((const unsigned char *)s))
        return false;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return false;
    return true;
}

/* A member path inside a subgraph directory: relative, no "." or ".."
 * components, no empty components. */
bool asm_member_ok(const char *s)
{
    if (!asm_name_ok(s) || s[0] == '/')
        return false;
    const char *c = s;
    for (;;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        if (e == NULL)
            return true;
        c = e + 1;
    }
}

static bool sg_track_var(struct asm_sg *s, struct asm_pos p)
{
    size_t n = s->sg->n_vars;
    if (!grow_array((void **)&s->var_pos, n + 1, &s->cap_var_pos, sizeof *s->var_pos, 16))
        return false;
    s->var_pos[n] = p;
    return true;
}

/* Add variable *v (plus options) to the current subgraph. */
bool asm_add_var(struct asm_ctx *a, struct asm_pos p, struct neff_var *v,
                 const struct asm_var_opts *o)
{
    struct asm_sg *s = asm_cur_sg(a);
    uint64_t end;
    if (!asm_name_ok(v->name)) {
        asm_err_pos(a, p, "'%s' is not a usable variable name", v->name ? v->name : "");
        return false;
    }
    if (neff_sg_find_var(s->sg, v->name) != NULL) {
        asm_err_pos(a, p, "variable '%s' is already declared in %s", v->name, s->sg->name);
        return false;
    }
    uint64_t id = o->has_id ? o->id : s->next_var_id;
    if (id > UINT32_MAX) {
        asm_err_pos(a, p, "no var_id left for '%s'; give id=", v->name);
        return false;
    }
    const struct neff_var *other = neff_sg_find_var_id(s->sg, (uint32_t)id);
    if (other != NULL) {
        asm_err_pos(a, p, "var_id %llu is already used by '%s'", (unsigned long long)id,
                    other->name);
        return false;
    }
    if (v->size > INT64_MAX || o->align > INT64_MAX || (o->align & (o->align - 1)) != 0 ||
        (o->has_backing && (o->backing > INT64_MAX ||
                            __builtin_add_overflow(o->backing, v->size, &end)))) {
        asm_err_pos(a, p, "variable '%s': size, alignment (a power of two) or backing offset out "
                    "of range", v->name);
        return false;
    }
    v->var_id = (uint32_t)id;
    v->alignment = o->align;
    v->fabric_path = o->fabric;
    v->has_backing_off = o->has_backing;
    v->backing_variable_off = o->backing;
    v->has_referenced_var = o->has_ref;
    v->referenced_var_id = o->ref;
    v->list = o->list;
    v->n_list = o->nlist;
    v->ops_json = o->ops;
    if (!sg_track_var(s, p) || neff_sg_add_var(s->sg, v) != EMU_OK) {
        a->oom = true;
        asm_err_pos(a, p, "variable '%s': out of memory", v->name);
        return false;
    }
    if (id + 1 > s->next_var_id)
        s->next_var_id = id + 1;
    s->used = true;
    return true;
}

/* Declare I/O tensor name in neff.json (once) and as a variable. */
bool asm_add_io(struct asm_ctx *a, struct asm_pos p, const char *name, bool is_output,
                uint32_t dtype, const uint32_t *shape, uint32_t ndim,
                const struct asm_var_opts *o)
{
    const struct neff_io *io = neff_model_find_io(a->m, name);
    if (isa_dtype_size(dtype) == 0 || ndim > NEFF_IO_MAX_DIMS) {
        asm_err_pos(a, p, "I/O tensor '%s': bad dtype or more than %u dimensions", name,
                    NEFF_IO_MAX_DIMS);
        return false;
    }
    if (dtype >= ISA_DT_NRT_COUNT) {
        asm_err_pos(a, p, "I/O tensor '%s': %s has no nrt_dtype_t value; declare the bytes as u8 "
                    "(or u32) and view them with the MX dtype in the instructions", name,
                    isa_dtype_name(dtype));
        return false;
    }
    if (io != NULL && (io->is_output != is_output || io->dtype != dtype || io->ndim != ndim ||
                       (ndim && memcmp(io->shape, shape, ndim * sizeof *shape) != 0))) {
        asm_err_pos(a, p, "I/O tensor '%s' was declared differently before", name);
        return false;
    }
    if (io == NULL) {
        uint64_t size = isa_dtype_size(dtype);
        for (uint32_t i = 0; i < ndim; i++)
            if (__builtin_mul_overflow(size, (uint64_t)shape[i], &size) || size > INT64_MAX) {
                asm_err_pos(a, p, "I/O tensor '%s': size overflows", name);
                return false;
            }
        if (!asm_name_ok(name) ||
            neff_model_add_io(a->m, name, is_output, dtype, shape, ndim) != EMU_OK) {
            asm_err_pos(a, p, "I/O tensor '%s' cannot be declared (bad name or out of memory)",
                        name);
            return false;
        }
        io = neff_model_find_io(a->m, name);
    }
    struct neff_var v = {.name = (char *)name,
                         .type = is_output ? NEFF_VAR_OUTPUT : NEFF_VAR_INPUT,
                         .size = io->size};
    return asm_add_var(a, p, &v, o);
}

/* Bytes of a constant as a .npy file (dtype, shape, payload). */
bool asm_npy_member(struct asm_ctx *a, struct asm_pos p, uint32_t dtype, const uint64_t *shape,
                    uint32_t ndim, const void *data, size_t len, struct neff_buf **out)
{
    const char *descr = npy_descr_for_dtype(dtype);
    uint8_t *bytes = NULL;
    size_t n = 0;
    if (descr == NULL || npy_write(descr, shape, ndim, data, len, &bytes, &n) != EMU_OK) {
        asm_err_pos(a, p, "cannot build the .npy of this constant (dtype or size)");
        return false;
    }
    *out = neff_buf_copy(bytes, n);
    free(bytes);
    if (*out == NULL) {
        a->oom = true;
        asm_err_pos(a, p, "out of memory");
        return false;
    }
    return true;
}

/* Add a file variable holding buf (a reference is taken) as member. */
bool asm_add_const(struct asm_ctx *a, struct asm_pos p, const char *name, const char *member,
                   struct neff_buf *buf, bool has_size, uint64_t size, struct asm_var_opts *o)
{
    struct neff_var v = {.name = (char *)name, .type = NEFF_VAR_FILE,
                         .file_name = (char *)member, .file = buf};
    bool npy_name = strlen(member) >= 4 && strcmp(member + strlen(member) - 4, ".npy") == 0;
    struct npy_info info;
    size_t payload = neff_buf_size(buf);
    if (!asm_member_ok(member)) {
        asm_err_pos(a, p, "'%s' is not a usable member name", member);
        return false;
    }
    if (npy_name) {
        if (npy_parse(neff_buf_data(buf), neff_buf_size(buf), member, &info) != EMU_OK) {
            asm_err_pos(a, p, "member '%s' ends in .npy but its bytes are not a .npy file", member);
            return false;
        }
        payload = info.data_len;
    }
    if (has_size && size < payload) {
        asm_err_pos(a, p, "size=%llu is smaller than the %zu bytes of data",
                    (unsigned long long)size, payload);
        return false;
    }
    v.size = has_size ? size : payload;
    return asm_add_var(a, p, &v, o);
}
