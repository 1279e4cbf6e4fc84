/*
 * hbm_export.h: device memory exported as a dma-buf (nrt_get_dmabuf_fd).
 *
 * A real dma-buf is a file descriptor of exactly the exported range: a
 * caller (libfabric, for EFA peer-direct) maps it at offset 0 and sees the
 * range's first byte. The emulated HBM is one shared file per chip, and
 * Linux cannot make a second file whose offset 0 is a range of it (that is
 * what udmabuf does, with /dev/udmabuf and memfd-backed memory: not
 * available to an unprivileged emulator). So an export moves the range:
 * its bytes are copied once into a memfd of the range's pages, the range
 * of the chip's file is punched out, and this process's HBM mapping of the
 * range is replaced by a mapping of the memfd. There is still one copy of
 * the bytes: the runtime (executions, tensor reads and writes) and the
 * caller's mapping of the fd share the memfd's pages. When the tensor
 * under an export is freed (devices/runtime/tensor.c), a snapshot is
 * restored through the chip's file (state_hbm_fd) or the runtime closes
 * (rt_life.c), the bytes go back into the chip's file and the file is
 * mapped there again;
 * a caller that still maps the fd keeps pages no tensor uses any more.
 *
 * Limits (docs/abi.md): the range must start on a page boundary (device
 * tensors of a page or more are page-aligned); the bytes of an exported
 * range are this process's: another process mapping the chip (a peer
 * reading it in place) sees the hole until the export ends.
 */
#ifndef TRNEMU_DEVICES_HBM_EXPORT_H
#define TRNEMU_DEVICES_HBM_EXPORT_H

#include <stdint.h>

#include "devices/machine/machine.h"
#include "nrt/nrt_status.h"

/* A new descriptor (the caller closes it) whose offset 0 is the byte at
 * va, covering size bytes (rounded up to pages). A range exported before
 * at the same va gives another descriptor of the same memory.
 * NRT_INVALID with one log line for a va off a page boundary, a range
 * outside the HBM mappings, or one overlapping another export;
 * NRT_RESOURCE when the host cannot make the memory. */
NRT_STATUS hbm_export(struct machine *m, uint64_t va, uint64_t size, int *fd);

/* The HBM [off, off+len) of chip goes back to its allocator: every export
 * overlapping it ends (its bytes back in the chip's file). */
void hbm_export_drop(struct machine *m, uint32_t chip, uint64_t off, uint64_t len);

/* Every export of m ends (machine_destroy). */
void hbm_export_drop_all(struct machine *m);

#endif
