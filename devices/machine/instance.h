/*
 * instance.h: the emulated machine as a shared, multi-process instance.
 *
 * Every process that calls nrt_init with the same instance name attaches
 * to one instance, whose files live in one directory:
 *
 *   <TRNEMU_SHM_DIR or /dev/shm>/trnemu-<TRNEMU_INSTANCE_NAME or u<uid>>/
 *     lock      flock()ed while a process attaches or detaches
 *     ctl       the control block (struct instance_ctl), mapped MAP_SHARED
 *     hbm<N>    chip N's HBM: a sparse file as large as the chip's HBM
 *     coll-*    files of the collectives (devices/coll/coll.h), if any
 *
 * The directory is 0700 and its files 0600. The first process creates
 * them; the others check that they ask for the same profile and LNC, then
 * claim the VNCs they were given (NEURON_RT_VISIBLE_CORES). A VNC owned by
 * a live process cannot be claimed; one whose owner died is taken back
 * (its HBM is punched out first). The last process to detach removes the
 * directory. Processes are known by pid and start time, so a reused pid is
 * never mistaken for the process that died. An instance whose processes
 * are all dead is stale and is created afresh. See docs/instance.md.
 */
#ifndef TRNEMU_DEVICES_INSTANCE_H
#define TRNEMU_DEVICES_INSTANCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/config/config.h"
#include "devices/config/topology.h"
#include "nrt/nrt_status.h"

#define INSTANCE_CTL_MAGIC 0x314c54434d454e52ull /* "RNEMCTL1" little-endian */
#define INSTANCE_CTL_VERSION 4u
/* Processes attached at once (each owns at least one VNC). */
#define INSTANCE_MAX_PROCS CONFIG_MAX_VNCS
/* Longest instance name accepted. */
#define INSTANCE_NAME_MAX 128
/* Longest instance directory path. */
#define INSTANCE_PATH_MAX 512

/* A process, robust against pid reuse; pid 0 marks a free entry. */
struct instance_proc {
    int32_t pid;         /* process id, 0 when free */
    uint32_t reserved;   /* zero */
    uint64_t start_time; /* start time in clock ticks since boot (/proc/PID/stat) */
};

/* Traffic over one link in one direction. */
struct instance_link_stat {
    _Atomic uint64_t bytes;    /* payload bytes carried */
    _Atomic uint64_t messages; /* transfers carried */
};

/* Longest model name kept per VNC (with its NUL). */
#define INSTANCE_MODEL_NAME 64

/* Latencies kept per VNC (a ring of the most recent executions). */
#define INSTANCE_LATENCIES 64

/* Memory held for one VNC, by the categories of neuron-monitor's
 * memory_used usage_breakdown. Device bytes are those placed in the
 * emulated HBM (instruction streams are kept in host memory). */
enum instance_mem {
    INSTANCE_MEM_TENSORS,      /* device tensors (nrt_tensor_allocate and the like) */
    INSTANCE_MEM_CONSTANTS,    /* models' constants and weights (file variables) */
    INSTANCE_MEM_SCRATCHPAD,   /* models' internal buffers (tmp-buf and virtual variables) */
    INSTANCE_MEM_RUNTIME,      /* the runtime's tables for models (pointer, DGE variables) */
    INSTANCE_MEM_HOST_TENSORS, /* host-placed tensors of this VNC (host memory) */
    INSTANCE_MEM_KINDS
};

/* Models listed per VNC, and subgraphs per model, for neuron-monitor's
 * loaded_models (more are loaded and counted, not listed). */
#define INSTANCE_VNC_MODELS 4
#define INSTANCE_MODEL_SGS 4
/* Longest subgraph name kept (with its NUL). */
#define INSTANCE_SG_NAME 32

/* Device memory one subgraph of a loaded model placed at load time. */
struct instance_sg_use {
    char name[INSTANCE_SG_NAME];  /* subgraph name ("sg00"), "" when unused */
    uint64_t constants;           /* its file variables (weights, constants) */
    uint64_t runtime;             /* its pointer and DGE table variables */
};

/* One model loaded on a VNC, as neuron-monitor lists it. The owner fills
 * the entry, then publishes it by storing its id; 0 marks a free entry. */
struct instance_model_use {
    _Atomic uint32_t id;                   /* the runtime's model id, 0 when free */
    _Atomic uint32_t running;              /* its executions in progress now */
    uint32_t nsgs;                         /* entries of sg[] in use */
    uint64_t host;                         /* host bytes the runtime keeps for it (its NEFF) */
    char name[INSTANCE_MODEL_NAME];        /* the NEFF's name */
    uint8_t uuid[16];                      /* the NEFF header's uuid */
    struct instance_sg_use sg[INSTANCE_MODEL_SGS]; /* its first subgraphs */
};

/* What runs on one VNC; written only by the process that owns it, reset
 * when the VNC is claimed or given back. The monitors (trnemu monitor,
 * top) read differences of these counters over their period. */
struct instance_vnc_use {
    char model[INSTANCE_MODEL_NAME]; /* name of the model loaded last, "" when none */
    _Atomic uint32_t models;         /* models loaded now */
    _Atomic uint32_t stand_ins;      /* of those, vendor NEFFs run as zero-filling stand-ins */
    _Atomic uint64_t executions;     /* executions completed since the VNC was claimed */
    _Atomic uint64_t failed;         /* executions that ended in an error (not numerical) */
    _Atomic uint64_t num_errors;     /* executions completed with a numerical error */
    _Atomic uint64_t busy_ns;        /* wall time spent executing (CLOCK_MONOTONIC ns) */
    _Atomic uint64_t latencies;      /* latencies recorded so far (next ring slot mod size) */
    _Atomic uint32_t latency_us[INSTANCE_LATENCIES]; /* ring: latency of recent executions, us */
    _Atomic uint64_t mem[INSTANCE_MEM_KINDS];        /* bytes held now, by enum instance_mem */
    _Atomic uint64_t flops;          /* floating-point operations executed (cost model) */
    struct instance_model_use loaded[INSTANCE_VNC_MODELS]; /* models loaded (first ones) */
};

/* The control block, shared by every attached process. The process table
 * and owners change only under the lock; the link counters are atomics. */
struct instance_ctl {
    uint64_t magic;                      /* INSTANCE_CTL_MAGIC */
    uint32_t version;                    /* INSTANCE_CTL_VERSION */
    uint32_t ctl_size;                   /* sizeof(struct instance_ctl) */
    char profile[32];                    /* instance type, NUL-terminated */
    uint32_t lnc;                        /* physical cores per VNC */
    uint32_t total_vncs;                 /* VNCs in the machine */
    uint32_t chips;                      /* chips (one hbm<N> file each) */
    uint32_t nlinks;                     /* links (topo_nlinks) */
    uint64_t hbm_per_chip;               /* bytes of each hbm<N> file */
    uint64_t created_ns;                 /* creation time (CLOCK_REALTIME, ns) */
    struct instance_proc procs[INSTANCE_MAX_PROCS]; /* attached processes */
    struct instance_proc owner[CONFIG_MAX_VNCS];    /* owner of each VNC */
    struct instance_link_stat links[TOPO_MAX_LINKS][2]; /* per link, per direction */
    struct instance_vnc_use use[CONFIG_MAX_VNCS];        /* per VNC: models and executions */
};

/* A process's attachment (process-local). */
struct instance {
    char dir[INSTANCE_PATH_MAX];   /* the instance directory */
    struct instance_ctl *ctl;      /* the shared control block */
    uint8_t **hbm;                 /* host address of each chip's HBM */
    uint32_t chips;                /* entries in hbm[] */
    uint64_t hbm_size;             /* bytes mapped per chip */
    struct instance_proc self;     /* this process */
    struct machine_config cfg;     /* what this process claimed */
    int spare[2];                  /* descriptors kept to be given up at detach (-1: none) */
};

/* Attach to (or create) the instance the environment names and claim
 * cfg's visible VNCs. NRT_INVALID for a bad name or directory, a corrupt
 * control file, or a live instance of another profile/LNC; NRT_RESOURCE
 * when a VNC is owned by a live process or files cannot be made. Each
 * failure logs one line and leaves nothing behind. */
NRT_STATUS instance_attach(const struct machine_config *cfg, struct instance **out);

/* Where a VNC's HBM lies: a slice of one stack of one chip. */
struct vnc_slice {
    uint32_t chip;   /* chip that holds the VNC */
    uint32_t stack;  /* HBM stack beside its first physical core */
    uint64_t off;    /* first byte of the slice, chip-relative */
    uint64_t len;    /* bytes in the slice */
};

/* The slice of HBM a machine-wide VNC allocates from (pure: every process
 * computes the same one). */
struct vnc_slice instance_vnc_slice(const struct machine_config *cfg, uint32_t vnc);

/* Release the VNCs, detach; the last process removes the directory, and
 * stale instances beside it (killed processes') go too (one line). Two
 * descriptors kept since attach are given up first, so that a process at
 * its descriptor limit still cleans up. */
void instance_detach(struct instance *inst);

/* Give whole pages of [off, off+len) of a chip's HBM back to the host
 * (they read as zero afterwards, in every process). */
void instance_hbm_discard(struct instance *inst, uint32_t chip, uint64_t off, uint64_t len);

/* How full the file system of dir is, in words, for a log line
 * ("DIR holds N MiB, M MiB free"). */
void instance_space(const char *dir, char *buf, size_t cap);
/* Reserve every byte of the first size bytes of fd (the file at path,
 * holding `what`), so that writing them through a mapping cannot fault;
 * false with one log line naming the directory and how full it is. */
bool instance_reserve(int fd, uint64_t size, const char *path, const char *what);

/* Add one transfer of bytes to a link's counters (dir 0: a to b). */
void instance_link_add(struct instance *inst, uint32_t link, uint32_t dir, uint64_t bytes);

/* The directory the environment names (TRNEMU_SHM_DIR, TRNEMU_INSTANCE_NAME).
 * NRT_INVALID with a log line for a bad name or a path too long. */
NRT_STATUS instance_dir_from_env(char *buf, size_t cap);

/* The made-up EC2 instance id of the instance the environment names
 * ("i-" and 17 hex digits of a hash of its directory): what neuron-ls,
 * the monitor and inspect's per-process directories show. */
void instance_ec2_id(char *buf, size_t cap);

/* Read a copy of the control block of the instance in dir, without
 * attaching. NRT_UNINITIALIZED when there is none, NRT_INVALID (one log
 * line) when it is corrupt. *live: some attached process is alive. */
NRT_STATUS instance_read(const char *dir, struct instance_ctl *out, bool *live);

/* instance_read without the log line: for a tool looking through every
 * instance of a directory, where other users' (unreadable) or another
 * version's instances are no error. */
NRT_STATUS instance_peek(const char *dir, struct instance_ctl *out, bool *live);
/* Remove this user's stale instances (no live process, nobody attaching)
 * in the directory holding self_dir, other than self_dir itself; one
 * warning line names them. Returns how many were removed. */
size_t instance_sweep(const char *self_dir);

/* Per-VNC use counters of the owner (vnc machine-wide): a model loaded
 * (name) or unloaded (name NULL; was_stand_in: it had run as a stand-in),
 * a model that starts running as a stand-in, executions completed. */
void instance_use_model(struct instance *inst, uint32_t vnc, const char *name,
                        bool was_stand_in);
void instance_use_stand_in(struct instance *inst, uint32_t vnc);
void instance_use_executions(struct instance *inst, uint32_t vnc, uint64_t n);
/* List a loaded model on vnc (m->id must be nonzero; dropped silently
 * when the VNC lists INSTANCE_VNC_MODELS already), or take it off the list. */
void instance_use_model_list(struct instance *inst, uint32_t vnc,
                             const struct instance_model_use *m);
void instance_use_model_unlist(struct instance *inst, uint32_t vnc, uint32_t id);
/* An execution of the listed model id starts (start) or ends on vnc. */
void instance_use_model_running(struct instance *inst, uint32_t vnc, uint32_t id, bool start);
/* n more floating-point operations executed on vnc. */
void instance_use_flops(struct instance *inst, uint32_t vnc, uint64_t n);
/* bytes of memory of kind taken (add) or given back (!add) for vnc. */
void instance_use_memory(struct instance *inst, uint32_t vnc, enum instance_mem kind,
                         uint64_t bytes, bool add);
/* One request of executions ended on vnc after ns nanoseconds of wall
 * time, with status st (counted as busy time, a latency, an outcome). */
void instance_use_request(struct instance *inst, uint32_t vnc, uint64_t ns, NRT_STATUS st);

/* Does the process still run (and is it the one that started then)? */
bool instance_pid_alive(int32_t pid, uint64_t start_time);
/* Start time of this process (clock ticks since boot); 0 if unknown. */
uint64_t instance_self_start_time(void);

#endif
