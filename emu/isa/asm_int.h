/*
 * asm_int.h: what the parts of the assembler share (private to emu/isa/).
 *
 * The assembler's state (context, subgraphs, streams, labels, directive
 * words) and the functions one stage file calls in another. The public
 * interface is asm.h; asm.c says which file holds which stage.
 *
 * Calls between the stage files go one way, down this list, never back:
 * asm.c (driver) -> asm_finish.c -> asm_dir.c -> asm_const.c, asm_desc.c
 * -> asm_word.c -> asm_var.c -> asm_lex.c, asm_file.c; numbers are read
 * by emu/isa/isa_lex.c, the lexer the instruction text uses too.
 */
#ifndef TRNEMU_EMU_ASM_INT_H
#define TRNEMU_EMU_ASM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/isa/asm.h"
#include "emu/isa/isa.h"
#include "emu/isa/isa_lex.h"
#include "emu/grow.h"

#define ASM_MAX_TOKS 96          /* words of one directive */
#define ASM_NAME_MAX 512         /* longest variable, queue, member name */

/* ---- state --------------------------------------------------------------- */

/* Where a character of the source came from. */
struct asm_pos {
    uint32_t line;  /* 1-based line; 0 for declarations made through the C API */
    uint32_t col;   /* 1-based column */
};

/* A label: an instruction index in one engine's stream. */
struct asm_label {
    char *name;          /* identifier */
    int engine;          /* engine of the labelled instruction; -1 while pending */
    uint32_t index;      /* index in that engine's stream */
    struct asm_pos pos;  /* where it was defined */
};

/* A jump/branch target written as a label name, patched at finish. */
struct asm_fixup {
    char *label;         /* the name */
    int engine;          /* engine of the instruction */
    uint32_t index;      /* its index in the stream */
    uint8_t slot;        /* imm[] slot of its target operand */
    struct asm_pos pos;  /* where the name was written */
};

/* One engine's instructions, decoded. */
struct asm_stream {
    struct isa_insn *insns;  /* in stream order */
    struct asm_pos *pos;     /* source position of each */
    size_t n, cap;           /* used, allocated */
};

/* What .engine said about one engine section. */
struct asm_engine_opt {
    bool given;          /* a .engine directive named this engine */
    bool nocode;         /* present without an instruction stream */
    char *bin;           /* stream member name or NULL (default) */
    char *json;          /* engine JSON member name or NULL (default) */
    char **funcs;        /* activation_function_sets */
    uint32_t nfuncs;     /* entries in funcs */
    struct asm_pos pos;  /* where it was given */
};

/* The assembler's view of one subgraph of the draft model. */
struct asm_sg {
    struct neff_subgraph *sg;                   /* in the draft model */
    struct asm_stream code[ISA_ENG_COUNT];      /* instructions per engine */
    struct asm_engine_opt eng[ISA_ENG_COUNT];   /* .engine options */
    struct asm_label *labels;                   /* labels, defined order */
    size_t nlabels, caplabels;                  /* used, allocated */
    struct asm_fixup *fixups;                   /* label references */
    size_t nfixups, capfixups;                  /* used, allocated */
    struct asm_pos *var_pos;                    /* declaration of each var */
    size_t cap_var_pos;                         /* entries allocated */
    uint64_t next_var_id;                       /* id the next var gets by default */
    bool used;                                  /* anything was declared in it */
};

/* A named semaphore or event. */
struct asm_sym {
    char *name;     /* identifier */
    uint32_t id;    /* number */
    bool event;     /* an event, not a semaphore */
};

/* Header fields set by .header (bit i of set: field i below). */
enum asm_hdr_field {
    HDR_VERSION, HDR_PKG, HDR_BUILD, HDR_UUID, HDR_NUM_TPB, HDR_REQ_TPB, HDR_TPB_PER_NODE,
    HDR_FEATURES, HDR_LNC, HDR_COUNT
};

struct asm_header {
    uint32_t set;                          /* bit per enum asm_hdr_field */
    struct neff_model_info info;           /* the values */
};

/* A logical line under construction. */
struct asm_lline {
    char *s;                 /* text, NUL-terminated */
    struct asm_pos *pos;     /* origin of each character */
    size_t n, cap;           /* used, allocated */
    bool open;               /* the last physical line ended in '\' */
};

struct asm_ctx {
    struct asm_opts opts;            /* options (strings borrowed) */
    uint64_t max_const;              /* effective max_const_bytes */
    unsigned max_errors;             /* effective max_errors */
    struct neff_model *m;            /* the draft model */
    struct asm_sg *sgs;              /* one per subgraph of m */
    size_t nsgs;                     /* entries in sgs */
    bool sg_directive;               /* a .subgraph has been seen */
    struct asm_sym *syms;            /* named semaphores and events */
    size_t nsyms, capsyms;           /* used, allocated */
    struct asm_header hdr;           /* .header overrides */
    struct asm_pos hdr_pos;          /* where .header last was */
    struct asm_lline ll;             /* the logical line being read */
    uint32_t lineno;                 /* physical lines read */
    char **errors;                   /* recorded errors */
    size_t nerrors;                  /* entries in errors */
    bool gave_up;                    /* more errors than max_errors */
    bool oom;                        /* out of memory somewhere */
    bool finished;                   /* m is the result of a successful finish */
    bool taken;                      /* m was handed out */
};

/* A directive line split into words. */
struct asm_tok {
    size_t at;       /* offset of the word in the line */
    size_t kn;       /* length of its key ("key=value"), 0 for a plain word */
    size_t vat;      /* offset of its value */
    size_t vn;       /* length of the value as written */
    char *str;       /* the value decoded from a quoted string, or NULL */
    bool rest;       /* "= ..." : the value is the rest of the line */
    bool used;       /* taken by the directive */
};

struct asm_dir {
    const char *s;                   /* the logical line */
    size_t name_at;                  /* offset of the directive word */
    struct asm_tok tok[ASM_MAX_TOKS];/* its words, in order */
    size_t n;                        /* entries in tok */
};

/* Options every variable directive takes. */
struct asm_var_opts {
    bool has_id;            /* id= given */
    uint32_t id;            /* var_id */
    uint64_t align;         /* alignment (0: none) */
    char *fabric;           /* fabric_path or NULL */
    bool has_backing;       /* backing_off= given */
    uint64_t backing;       /* backing_variable_off */
    bool has_ref;           /* ref= given */
    uint32_t ref;           /* referenced_var_id */
    uint32_t *list;         /* list= entries */
    uint32_t nlist;         /* entries in list */
    char *ops;              /* ops= as compact JSON, or NULL */
};

/* Split s[0..n) at commas; calls item(s, n, off) for each trimmed piece. */
typedef bool (*asm_item_fn)(struct asm_ctx *a, void *user, const char *s, size_t n, size_t off);

/* A growing list of u64 values. */
struct asm_u64_list {
    uint64_t *v;        /* values */
    size_t n, cap;      /* used, allocated */
    uint64_t max;       /* largest value allowed */
    size_t max_items;   /* most items allowed */
};

/* A growing list of names. */
struct asm_name_list {
    char **v;           /* names */
    size_t n, cap;      /* used, allocated */
};

/* ---- asm_lex.c: characters, errors, numbers, logical lines, directive words --- */

char *asm_dup_n(const char *s, size_t n);
bool asm_is_ident_char(char c);
size_t asm_ident_len(const char *s);
bool asm_is_blank(char c);
bool asm_is_comment(char c);
bool asm_is_end(char c);
bool asm_same(const char *s, size_t n, const char *word);
struct asm_sg *asm_cur_sg(struct asm_ctx *a);
const char *asm_src_name(const struct asm_ctx *a);
__attribute__((format(printf, 3, 4)))
void asm_err_pos(struct asm_ctx *a, struct asm_pos p, const char *fmt, ...);
struct asm_pos asm_line_pos(const struct asm_ctx *a, size_t off);
__attribute__((format(printf, 3, 4)))
bool asm_err_at(struct asm_ctx *a, size_t off, const char *fmt, ...);
bool asm_oom_at(struct asm_ctx *a, size_t off);
bool asm_ll_push(struct asm_ctx *a, char c, struct asm_pos p);
size_t asm_comment_start(const char *s, size_t n);
void asm_dir_clear(struct asm_dir *d);
bool asm_lex_dir(struct asm_ctx *a, const char *s, size_t off, struct asm_dir *d);
const char *asm_tok_val(const struct asm_dir *d, const struct asm_tok *t, size_t *n);
struct asm_tok *asm_next_word(struct asm_dir *d);
bool asm_take_flag(struct asm_dir *d, const char *word);
struct asm_tok *asm_take_opt(struct asm_dir *d, const char *key);
struct asm_tok *asm_take_rest(struct asm_dir *d);
bool asm_dir_done(struct asm_ctx *a, struct asm_dir *d, const char *what);

/* ---- asm_var.c: variables of the draft model --------------------------------- */

void asm_var_opts_clear(struct asm_var_opts *o);
bool asm_name_ok(const char *s);
bool asm_member_ok(const char *s);
bool asm_add_var(struct asm_ctx *a, struct asm_pos p, struct neff_var *v,
                 const struct asm_var_opts *o);
bool asm_add_io(struct asm_ctx *a, struct asm_pos p, const char *name, bool is_output,
                uint32_t dtype, const uint32_t *shape, uint32_t ndim,
                const struct asm_var_opts *o);
bool asm_npy_member(struct asm_ctx *a, struct asm_pos p, uint32_t dtype, const uint64_t *shape,
                    uint32_t ndim, const void *data, size_t len, struct neff_buf **out);
bool asm_add_const(struct asm_ctx *a, struct asm_pos p, const char *name, const char *member,
                   struct neff_buf *buf, bool has_size, uint64_t size, struct asm_var_opts *o);

/* ---- asm_word.c: typed values of words --------------------------------------- */

bool asm_tok_u64(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                 uint64_t max, uint64_t *v);
bool asm_tok_u32(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                 uint32_t max, uint32_t *v);
bool asm_tok_f64(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                 double *v);
char *asm_tok_name(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                   const char *what);
bool asm_tok_dtype(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                   uint32_t *dtype);
bool asm_split_list(struct asm_ctx *a, const char *s, size_t n, size_t off, void *user,
                    asm_item_fn item);
bool asm_tok_u64_list(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                      bool brackets, struct asm_u64_list *l);
bool asm_tok_u32_array(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                       uint32_t **out, uint32_t *count);
void asm_name_list_free(struct asm_name_list *l);
bool asm_tok_names(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                   struct asm_name_list *l);
bool asm_take_var_opts(struct asm_ctx *a, struct asm_dir *d, struct asm_var_opts *o);
bool asm_tok_shape(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                   uint64_t max, uint64_t *shape, uint32_t *ndim);

/* ---- asm_dir.c: directive table and plain directives ------------------------- */

bool asm_sg_start(struct asm_ctx *a);
void asm_report_dangling_labels(struct asm_ctx *a);
const struct asm_sym *asm_sym_find(const struct asm_ctx *a, const char *s, size_t n);
bool asm_is_sync_number(const char *s, size_t n);
void asm_do_directive(struct asm_ctx *a, const char *s, size_t off);

/* ---- asm_const.c: .const ----------------------------------------------------- */

bool asm_dir_const(struct asm_ctx *a, struct asm_dir *d);

/* ---- asm_desc.c: .queue, .engine, .desc -------------------------------------- */

bool asm_dir_queue(struct asm_ctx *a, struct asm_dir *d);
bool asm_dir_engine(struct asm_ctx *a, struct asm_dir *d);
bool asm_dir_desc(struct asm_ctx *a, struct asm_dir *d);

/* ---- asm_finish.c: labels resolved, streams encoded ------------------------ */

/* Finish a fed assembly whose last logical line the driver has handled
 * (asm_finish in asm.c is the public entry). */
emu_status asm_finish_model(struct asm_ctx *a);

#endif
