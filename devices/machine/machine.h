/*
 * machine.h: one emulated instance as this process sees it: its chips,
 * their HBM, and the mapping from VNCs (the cores the API counts) to chips
 * and HBM stacks.
 *
 * The machine lives in a shared instance (devices/machine/instance.h): each chip's
 * HBM is a sparse shared file mapped MAP_SHARED | MAP_NORESERVE, so a page
 * costs host memory only once it is written, in whichever process writes
 * it, and every attached process sees the same bytes. A whole
 * trn2.48xlarge (1.5 TiB of HBM) starts with a few hundred KiB resident.
 * The HBM is split into equal stacks; a VNC allocates from the stack beside
 * its first physical core, from its own slice of it (with LNC=1 on trn2 two
 * VNCs share a stack and each gets one half), with an allocator private to
 * the process that owns the VNC: processes never allocate the same bytes.
 */
#ifndef TRNEMU_DEVICES_MACHINE_H
#define TRNEMU_DEVICES_MACHINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "devices/config/config.h"
#include "devices/thread/gate.h"
#include "devices/machine/hbm_alloc.h"
#include "devices/machine/instance.h"
#include "devices/thread/worker.h"
#include "emu/core/core.h"

#define MACHINE_MAX_STACKS 8
#define MACHINE_MAX_LNC 2

struct chip {
    uint32_t index;                           /* device id, 0-based */
    uint8_t *hbm;                             /* host address of HBM byte 0 */
    uint64_t hbm_size;                        /* bytes of HBM on the chip */
    uint64_t stack_size;                      /* bytes per HBM stack */
    uint32_t nstacks;                         /* HBM stacks on the chip */
};

struct vnc_info {
    uint32_t chip;          /* chip that holds the VNC */
    uint32_t first_core;    /* first physical core on that chip */
    uint32_t stack;         /* HBM stack the VNC allocates from */
    uint64_t slice_off;     /* chip-relative offset of its slice of the stack */
    uint64_t slice_size;    /* bytes in that slice (its memory limit) */
    bool owned;             /* visible to (claimed by) this process */
    struct hbm_alloc alloc; /* allocator over the slice (only when owned) */
    _Atomic uint64_t used;  /* HBM bytes currently allocated for this VNC */
    _Atomic uint32_t models; /* models loaded on this VNC */
    pthread_mutex_t exec_lock; /* held for the length of one execution */
    struct worker worker;   /* runs its executions in order; started by the first */
    struct worker helper[MACHINE_MAX_LNC - 1]; /* runs physical cores 1.. of a split
                                                  execution (exec_lnc.c); started on first use */
    struct core *cores[MACHINE_MAX_LNC]; /* its physical cores, made on first use */
};

struct machine {
    struct machine_config cfg;  /* what was asked for */
    struct chip *chips;         /* cfg.profile->chips entries */
    struct vnc_info *vncs;      /* cfg.total_vncs entries, machine-wide ids */
    struct instance *inst;      /* the shared instance this process attached to */
    pthread_rwlock_t quiesce;   /* executions read-lock, a snapshot write-locks */
    struct gate compute;        /* bounds executions computing at once (cfg.threads) */
};

/* A range of one chip's HBM held by an owner (tensor, model constant ...). */
struct hbm_block {
    uint32_t chip;   /* chip index */
    uint32_t stack;  /* HBM stack index */
    uint32_t vnc;    /* machine-wide VNC charged for it */
    uint64_t off;    /* byte offset within the chip's HBM */
    uint64_t len;    /* bytes taken (rounded up) */
};

/* Build the machine: attach to the shared instance (claiming cfg's visible
 * VNCs), map every chip's HBM, set up the owned VNCs' allocators. */
NRT_STATUS machine_create(const struct machine_config *cfg, struct machine **out);
void machine_destroy(struct machine *m);

/* The i-th physical core of a VNC, created on first use by the VNC's one
 * running execution (its worker's job: devices/runtime/exec_request.c).
 * NRT_RESOURCE when the host is out of memory. */
/* Which chip's HBM holds [p, p+len), and at what offset; false when none. */
bool machine_hbm_locate(const struct machine *m, const void *p, uint64_t len, uint32_t *chip,
                        uint64_t *off);

NRT_STATUS machine_vnc_core(struct machine *m, uint32_t vnc, uint32_t i, struct core **out);

/* Machine-wide VNC id of a process-local VNC index; -1 when not visible. */
int machine_vnc_global(const struct machine *m, int local_vnc);

/* Allocate size bytes (aligned) on the stack of a machine-wide VNC.
 * NRT_RESOURCE with a log line when the stack is full. */
NRT_STATUS machine_hbm_take(struct machine *m, uint32_t vnc, uint64_t size,
                            uint64_t align, struct hbm_block *out);
/* Take exactly block b (a restored tensor or model block) from its stack's allocator and charge its VNC.
 * NRT_INVALID (one log line) when b does not fit the machine or is not
 * free. */
NRT_STATUS machine_hbm_take_at(struct machine *m, const struct hbm_block *b);

/* Release a block; whole pages inside it go back to the host (the hole is
 * punched in the shared file: the pages are freed for every process). */
void machine_hbm_give(struct machine *m, const struct hbm_block *b);

/* Is [p, p+len) entirely inside one chip's HBM mapping? */
bool machine_hbm_contains(const struct machine *m, const void *p, uint64_t len);

/* Host address of a block's first byte. */
uint8_t *machine_hbm_va(const struct machine *m, const struct hbm_block *b);

/* Whatever changes device or tensor memory (an execution, a tensor write,
 * copy or memset, a model's constants) holds the machine's quiesce lock
 * for reading while it runs, so a snapshot (state_quiesce, the writer)
 * never reads it half done. Never nested (the lock prefers writers), never
 * from inside an execution or a snapshot. */
void machine_mem_enter(struct machine *m);
void machine_mem_leave(struct machine *m);
/* A call that touches HBM takes machine_mem_faults() before and asks
 * machine_mem_check after: NRT_RESOURCE with one log line (what failed,
 * where, how full the shared-memory directory is) when a page could not
 * be backed meanwhile (devices/machine/hbm_guard.h), else NRT_SUCCESS. */
uint64_t machine_mem_faults(void);
NRT_STATUS machine_mem_check(struct machine *m, uint64_t since, const char *what);
/* The same without a line, for a call that has reported its failure
 * already: the HBM files are mapped again where pages could not be backed
 * since `since`. */
void machine_mem_heal(uint64_t since);
/* Is this thread between machine_mem_enter and machine_mem_leave? For
 * assert() only. */
bool machine_mem_held(void);

/* Directory holding the shared instance's files (devices/machine/instance.h). */
const char *machine_instance_dir(const struct machine *m);

/* Count a transfer of bytes from src_chip to dst_chip: bytes and one
 * message on every link of the route (topo_route), in the direction it is
 * crossed, in the instance's shared counters. Same chip: nothing. */
void machine_link_account(struct machine *m, uint32_t src_chip, uint32_t dst_chip,
                          uint64_t bytes);

#endif
