/*
 * neff_model.h: the metadata of a NEFF as C structures: the I/O tensors
 * (neff.json), and per subgraph (sgNN/def.json) its variables, DMA queue
 * sets, and per engine (pe, act, pool, dve, sp) its instruction stream and
 * DMA descriptors (the engine JSON). Loaded from and stored into a
 * neff_file; also built directly in C (the assembler does).
 *
 * The JSON members and keys are described in docs/neff.md. Loading is
 * lenient about keys it does not know and strict about the JSON types of
 * keys it reads; every error is EMU_INVALID with one "NEFF" log line naming
 * the member and key.
 *
 * Ownership: a model owns all its strings and arrays; instruction streams
 * and constants are reference-counted neff_buf shared with the file they
 * came from (no copy). Pointers into a model's arrays stay valid until the
 * next add to the same array.
 */
#ifndef TRNEMU_EMU_NEFF_MODEL_H
#define TRNEMU_EMU_NEFF_MODEL_H

/* Longest I/O tensor name plus its NUL: nrt_tensor_info_t's name field
 * holds 256 bytes, so a NEFF with a longer name is refused at build and
 * load rather than truncated. */
#define NEFF_IO_NAME_MAX 256

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/neff/neff_file.h"
#include "emu/status.h"

/* trnemu ISA versions this build understands (def.json "trnemu_isa"). */
#define NEFF_TRNEMU_ISA_VERSION 1u

/* Most dimensions of a DMA access pattern and of a transpose shape. */
#define NEFF_AP_MAX_DIMS 4u
/* Most sources of a CCE descriptor (desc "from_arr"). */
#define NEFF_MAX_CCE_SOURCES 16u
/* Most dimensions of an I/O tensor shape. */
#define NEFF_IO_MAX_DIMS 32u

/* Element types; the values are those of nrt_dtype_t (nrt.h). */
enum neff_dtype {
    NEFF_DTYPE_NONE = 0,                /* unknown / not given */
    NEFF_DTYPE_UINT64 = 1,
    NEFF_DTYPE_INT8 = 2,
    NEFF_DTYPE_UINT8 = 3,
    NEFF_DTYPE_INT16 = 4,
    NEFF_DTYPE_UINT16 = 5,
    NEFF_DTYPE_BFLOAT16 = 6,
    NEFF_DTYPE_FLOAT16 = 7,
    NEFF_DTYPE_INT32 = 8,
    NEFF_DTYPE_UINT32 = 9,
    NEFF_DTYPE_FLOAT32 = 10,
    NEFF_DTYPE_FP32R = 11,
    NEFF_DTYPE_INT64 = 12,
    NEFF_DTYPE_FP8_E3 = 13,
    NEFF_DTYPE_FP8_E4 = 14,
    NEFF_DTYPE_FP8_E5 = 15,
};

/* The engines of a NeuronCore, in def.json section order. */
enum neff_engine {
    NEFF_ENG_PE = 0,                    /* Tensor engine, def.json "pe" */
    NEFF_ENG_ACT = 1,                   /* Scalar/Activation engine, "act" */
    NEFF_ENG_POOL = 2,                  /* GpSimd engine, "pool" */
    NEFF_ENG_DVE = 3,                   /* Vector engine, "dve" */
    NEFF_ENG_SP = 4,                    /* sync/queue engine, "sp" */
    NEFF_ENG_COUNT = 5,
};

/* Variable "type". */
enum neff_var_type {
    NEFF_VAR_INPUT,                     /* "input": an input tensor */
    NEFF_VAR_OUTPUT,                    /* "output": an output tensor */
    NEFF_VAR_STATE_BUFFER,              /* "state-buffer": on-chip SBUF space */
    NEFF_VAR_FILE,                      /* "file": HBM constant from a member */
    NEFF_VAR_TMP_BUF,                   /* "tmp-buf": private HBM scratchpad */
    NEFF_VAR_VIRTUAL,                   /* "virtual": shared scratchpad at backing_variable_off */
    NEFF_VAR_POINTER,                   /* "pointer": holds another variable's address */
    NEFF_VAR_DGE_TABLE,                 /* "dge-table": table of variable addresses */
    NEFF_VAR_TYPE_COUNT,
};

/* Queue set "type". */
enum neff_queue_type {
    NEFF_QUEUE_IN,                      /* "in" */
    NEFF_QUEUE_OUT,                     /* "out" */
    NEFF_QUEUE_DATA,                    /* "data" */
    NEFF_QUEUE_EMBEDDING_UPDATE,        /* "embedding_update" */
    NEFF_QUEUE_DYNAMIC,                 /* "dynamic" */
    NEFF_QUEUE_TYPE_COUNT,
};

/* Descriptor "op". */
enum neff_dma_op {
    NEFF_DMA_COPY,                      /* "copy" (the default) */
    NEFF_DMA_CAST,                      /* "cast" */
    NEFF_DMA_ADD,                       /* "add" */
    NEFF_DMA_FMA,                       /* "fma" */
    NEFF_DMA_MIN,                       /* "min" */
    NEFF_DMA_MAX,                       /* "max" */
    NEFF_DMA_TRANSPOSE,                 /* "transpose" */
    NEFF_DMA_OP_COUNT,
};

/* One input or output tensor of the model (neff.json "inputs"/"outputs"). */
struct neff_io {
    char *name;                         /* tensor (and variable) name */
    bool is_output;                     /* false: input, true: output */
    uint32_t dtype;                     /* enum neff_dtype */
    uint32_t ndim;                      /* entries in shape */
    uint32_t *shape;                    /* dimensions (ndim entries, may be NULL if 0) */
    uint64_t size;                      /* bytes = prod(shape) * dtype size */
};

/* One variable (def.json "var" entry; the map key is the name). */
struct neff_var {
    char *name;                         /* variable name (map key) */
    enum neff_var_type type;            /* "type" */
    uint32_t var_id;                    /* "var_id", unique in the subgraph */
    uint64_t size;                      /* "size" in bytes (0 when no_size) */
    bool no_size;                       /* "size" absent (vendor state-buffer, dge-table) */
    uint64_t alignment;                 /* "alignment" (0: none; else a power of two) */
    char *fabric_path;                  /* "fabric_path" or NULL (default "main") */
    char *file_name;                    /* "file_name" (relative to the sg dir) or NULL */
    bool has_backing_off;               /* "backing_variable_off" present */
    uint64_t backing_variable_off;      /* offset in the shared scratchpad */
    bool has_referenced_var;            /* "referenced_var_id" present */
    uint32_t referenced_var_id;         /* var_id whose address a pointer holds */
    uint32_t *list;                     /* "list": var_ids of a dge-table */
    uint32_t n_list;                    /* entries in list */
    char *ops_json;                     /* "ops" kept as compact JSON text, or NULL */
    struct neff_buf *file;              /* file vars: the whole member (ref held) or NULL */
    size_t data_off;                    /* constant payload offset in file (.npy skips header) */
    size_t data_len;                    /* constant payload bytes (<= size) */
};

/* One DMA queue set (def.json "dma_queue" entry; the key is the name). */
struct neff_queue {
    char *name;                         /* queue set name (map key) */
    enum neff_queue_type type;          /* "type" */
    uint32_t num_queues;                /* "num_queues" (default 1, at most 16) */
    char *owner;                        /* "owner" engine name or NULL */
    bool pinned;                        /* "pinned" */
    char **instances;                   /* "queue_instances" */
    uint32_t n_instances;               /* entries in instances */
    uint32_t *semaphore_set;            /* "semaphore_set" */
    uint32_t n_semaphore_set;           /* entries in semaphore_set */
    bool has_semaphore;                 /* "semaphore" present */
    uint32_t semaphore;                 /* "semaphore" */
    char *fabric_path;                  /* "fabric_path" or NULL (default "main") */
    char *dynamic_dma_json;             /* "dynamic_dma" kept as compact JSON text, or NULL */
};

/* One side of a transfer: a variable and an access pattern over its bytes.
 * Bytes touched: off + sum_d i_d * steps[d] for 0 <= i_d < sizes[d];
 * dimension 0 is the innermost (sizes[0] counts bytes). */
struct neff_dma_ap {
    char *var;                          /* variable name ("from"/"to") */
    uint64_t off;                       /* "*_off" */
    uint32_t ndim;                      /* entries used in steps/sizes (1..4) */
    int64_t steps[NEFF_AP_MAX_DIMS];    /* "*_steps" in bytes */
    uint64_t sizes[NEFF_AP_MAX_DIMS];   /* "*_sizes" */
    uint32_t dtype;                     /* "*_dtype" (default UINT8) */
    int32_t var_index;                  /* resolved index in the subgraph's vars, -1 if not yet */
};

/* One DMA descriptor of an engine JSON "dma" list. */
struct neff_dma_desc {
    uint32_t id;                        /* "id": trigger id in the engine stream */
    char *queue;                        /* "queue" set name or NULL */
    char *instance_name;                /* "instance_name" or NULL (wins over queue) */
    char *function_start;               /* "function_start" or NULL */
    bool section_start_desc;            /* "section_start_desc" */
    bool has_event;                     /* "event" present */
    uint32_t event;                     /* "event" to set when done */
    bool has_semaphore;                 /* "semaphore" present */
    uint32_t semaphore;                 /* "semaphore" to increment when done */
    uint32_t *remote_semaphores;        /* "remote_semaphores" */
    uint32_t n_remote_semaphores;       /* entries in remote_semaphores */
    enum neff_dma_op op;                /* desc "op" */
    bool cce;                           /* sources came from desc "from_arr" */
    struct neff_dma_ap *from;           /* sources: 1 (from_*) or up to 16 (from_arr) */
    uint32_t n_from;                    /* entries in from */
    struct neff_dma_ap to;              /* destination (to_*) */
    bool has_tiling_dims;               /* desc "num_tiling_dimensions" present */
    uint32_t num_tiling_dimensions;     /* desc "num_tiling_dimensions" */
    double scale;                       /* fma: desc "scale" (default 1.0) */
    uint32_t scale_dtype;               /* fma: desc "scale_dtype" (FLOAT32) */
    uint32_t constant_dtype;            /* min/max: "constant_dtype" (NONE: absent) */
    double constant;                    /* min/max: "constant" (exact for 32-bit ints) */
    bool has_transpose_shape;           /* desc "transpose_shape" present */
    uint32_t transpose_shape[NEFF_AP_MAX_DIMS]; /* desc "transpose_shape" */
    uint32_t transpose_element_size;    /* desc "transpose_element_size" (0: absent) */
};

/* One engine's part of a subgraph. */
struct neff_engine_sec {
    bool present;                       /* def.json has this engine's section */
    bool by_ref;                        /* vendor layout: "pe": "PE.json", "pe_instr": "PE.bin" */
    char *bin_file;                     /* "bin_file": stream member (sg-relative) or NULL */
    char *json_file;                    /* "json_file": engine JSON member or NULL */
    struct neff_buf *code;              /* the instruction stream bytes (ref) or NULL */
    struct neff_dma_desc *descs;        /* engine JSON "dma" */
    uint32_t n_descs;                   /* entries in descs */
    uint32_t cap_descs;                 /* entries allocated in descs */
    char **act_func_sets;               /* engine JSON "activation_function_sets" */
    uint32_t n_act_func_sets;           /* entries in act_func_sets */
};

/* One subgraph: a directory sgNN/ loaded onto one NeuronCore. */
struct neff_subgraph {
    char *name;                         /* directory name, e.g. "sg00" */
    uint32_t isa_version;               /* "trnemu_isa"."version"; 0 when absent */
    struct neff_var *vars;              /* "var" entries in file order */
    uint32_t n_vars;                    /* entries in vars */
    uint32_t cap_vars;                  /* entries allocated in vars */
    struct neff_queue *queues;          /* "dma_queue" entries in file order */
    uint32_t n_queues;                  /* entries in queues */
    uint32_t cap_queues;                /* entries allocated in queues */
    struct neff_engine_sec eng[NEFF_ENG_COUNT]; /* per engine */
};

/* Header fields a model carries (sizes and hash belong to the file). */
struct neff_model_info {
    uint64_t neff_version_major;        /* header neff_version_major */
    uint64_t neff_version_minor;        /* header neff_version_minor */
    uint64_t pkg_version;               /* hash to store with: 1 sha256, 2 md5 (others load as 1) */
    char build_version[NEFF_BUILD_VERSION_SIZE + 1]; /* header neff_build_version */
    char name[NEFF_NAME_SIZE + 1];      /* header name */
    uint8_t uuid[NEFF_UUID_SIZE];       /* header uuid */
    uint32_t num_tpb;                   /* header num_tpb */
    uint32_t requested_tpb_count;       /* header requested_tpb_count */
    uint8_t tpb_per_node[NEFF_MAX_NODES]; /* header tpb_per_node */
    uint64_t feature_bits;              /* header feature_bits */
    uint32_t lnc_size;                  /* header lnc_size */
};

/* A whole NEFF's metadata. */
struct neff_model {
    struct neff_model_info info;        /* header fields */
    struct neff_io *io;                 /* inputs then outputs, in file order */
    uint32_t n_io;                      /* entries in io */
    uint32_t cap_io;                    /* entries allocated in io */
    struct neff_subgraph **sgs;         /* subgraphs (stable pointers) */
    uint32_t n_sgs;                     /* entries in sgs */
};

/* ---- load / store ------------------------------------------------------ */

/* Build the model of a parsed file and validate it (neff_model_validate);
 * resolves every access pattern's var_index. */
emu_status neff_model_load(const struct neff_file *f, struct neff_model **out);
/* Validate, then produce a container: neff.json, sgNN/def.json, the engine
 * JSONs, the instruction streams and constants, in that order. */
emu_status neff_model_store(const struct neff_model *m, struct neff_file **out);
void neff_model_free(struct neff_model *m);
/* Release the subgraph's encoded instruction streams (a runtime that has
 * decoded them keeps only its decoded program); the sections stay present,
 * with code NULL. */
void neff_subgraph_drop_code(struct neff_subgraph *sg);

/* Check the cross references and bounds (see docs/neff.md); resolves the
 * access patterns' var_index. EMU_INVALID with one log line. */
emu_status neff_model_validate(struct neff_model *m);

/* True when the NEFF carries trnemu's ISA: feature bit
 * NEFF_FEATURE_TRNEMU_ISA and "trnemu_isa" in every def.json. */
bool neff_model_is_trnemu(const struct neff_model *m);

/* Deep comparison (ignores resolved var_index). For tests. */
bool neff_model_equal(const struct neff_model *a, const struct neff_model *b);

/* ---- builder ----------------------------------------------------------- */

/* An empty trnemu model (feature bit set, trnemu NEFF version, sha256);
 * name may be NULL. NULL when out of memory. */
struct neff_model *neff_model_new(const char *name);
/* Append subgraph "sgNN" (NN = its index); isa_version is
 * NEFF_TRNEMU_ISA_VERSION when the model has the trnemu feature bit. NULL
 * when out of memory. */
struct neff_subgraph *neff_model_add_subgraph(struct neff_model *m);
/* Append an I/O tensor; size is computed from dtype and shape. */
emu_status neff_model_add_io(struct neff_model *m, const char *name, bool is_output,
                             uint32_t dtype, const uint32_t *shape, uint32_t ndim);
/* Append a deep copy of *v (strings and list copied, a reference taken on
 * v->file). For a file var with a file buffer, data_off/data_len are
 * computed here (the .npy payload when file_name ends in ".npy", else the
 * whole buffer). Duplicate names are EMU_INVALID. */
emu_status neff_sg_add_var(struct neff_subgraph *sg, const struct neff_var *v);
/* Append a deep copy of *q. Duplicate names are EMU_INVALID. */
emu_status neff_sg_add_queue(struct neff_subgraph *sg, const struct neff_queue *q);
/* Give an engine its instruction stream (copied once); the section is
 * marked present and gets the default bin_file name ("PE.bin",
 * "Activation.bin", "Pool.bin", "DVE.bin", "SP.bin") when it has none. */
emu_status neff_sg_set_code(struct neff_subgraph *sg, enum neff_engine e, const void *code,
                            size_t size);
/* Append a deep copy of *d to an engine's descriptor list; the section
 * is marked present and gets the default json_file name ("PE.json", ...)
 * when it has none. Fields its op does not use get their defaults (scale
 * 1.0 unless fma, scale_dtype float32, constant 0 without constant_dtype),
 * an access-pattern dtype of 0 becomes uint8, var_index becomes -1. */
emu_status neff_sg_add_desc(struct neff_subgraph *sg, enum neff_engine e,
                            const struct neff_dma_desc *d);

/* ---- lookups and names ------------------------------------------------- */

struct neff_var *neff_sg_find_var(const struct neff_subgraph *sg, const char *name);
struct neff_var *neff_sg_find_var_id(const struct neff_subgraph *sg, uint32_t var_id);
struct neff_queue *neff_sg_find_queue(const struct neff_subgraph *sg, const char *name);
const struct neff_io *neff_model_find_io(const struct neff_model *m, const char *name);

/* The bytes of a file var's constant (NULL when it has none). */
const uint8_t *neff_var_data(const struct neff_var *v);

/* Lowest and one-past-highest byte offset an access pattern touches
 * (lo == hi when it touches nothing). false on 64-bit overflow or a
 * negative offset. */
bool neff_ap_range(const struct neff_dma_ap *ap, uint64_t *lo, uint64_t *hi);
/* Bytes an access pattern moves (product of sizes); false on overflow. */
bool neff_ap_bytes(const struct neff_dma_ap *ap, uint64_t *bytes);

const char *neff_dtype_name(uint32_t dtype);   /* "float32", ...; NULL if unknown */
bool neff_dtype_parse(const char *name, uint32_t *dtype);
size_t neff_dtype_size(uint32_t dtype);        /* bytes per element; 0 if unknown */
const char *neff_engine_name(enum neff_engine e);          /* "pe", "act", ... */
const char *neff_var_type_name(enum neff_var_type t);      /* "input", ... */
const char *neff_queue_type_name(enum neff_queue_type t);  /* "in", ... */
const char *neff_dma_op_name(enum neff_dma_op op);         /* "copy", ... */

#endif
