/*
 * npy.h: reading and writing numpy .npy files (format versions 1.0, 2.0
 * and 3.0), used for NEFF constants and for tensors given to or taken from
 * the `trnemu` tool.
 *
 * Supported element types (descr -> NRT dtype value):
 *   <f4 FLOAT32(10)  <f2 FLOAT16(7)  <f8 none(0, 8-byte items, kept raw)
 *   |i1 INT8(2)  <i2 INT16(4)  <i4 INT32(8)  <i8 INT64(12)
 *   |u1 UINT8(3) <u2 UINT16(5) <u4 UINT32(9) <u8 UINT64(1)
 *   |b1 UINT8(3) (numpy bool, one byte per item)
 * The byte-order mark may be '<', '=' (the host here is little-endian) or
 * '|'; big-endian ('>') multi-byte data and fortran_order True are
 * rejected. numpy has no bfloat16 or fp8 type: such tensors are written as
 * unsigned integers of the same width (bf16 -> <u2, fp8 -> |u1), and
 * FP32R as <f4 (see npy_descr_for_dtype).
 */
#ifndef TRNEMU_EMU_NPY_H
#define TRNEMU_EMU_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "emu/status.h"

#define NPY_MAX_DIMS 32u                /* most dimensions accepted */

/* What a .npy header says, and where the data is. */
struct npy_info {
    char descr[4];                      /* normalized descr, e.g. "<f4", "|u1" */
    uint32_t dtype;                     /* NRT dtype value; 0 when none (<f8) */
    size_t itemsize;                    /* bytes per element */
    uint32_t ndim;                      /* entries used in shape[] (0: a scalar) */
    uint64_t shape[NPY_MAX_DIMS];       /* dimensions, C order */
    uint64_t count;                     /* elements: product of shape */
    size_t data_off;                    /* payload offset from the file start */
    size_t data_len;                    /* payload bytes = count * itemsize */
};

/* Parse a whole .npy file in memory. `what` names it in the one log line
 * written on error (EMU_INVALID). The payload must be exactly
 * count * itemsize bytes. */
emu_status npy_parse(const void *bytes, size_t size, const char *what, struct npy_info *out);

/* Build a .npy file (version 1.0, or 2.0 when the header needs it) holding
 * data[0..len) with this descr (one of the supported ones) and shape; len
 * must equal the product of shape times the item size. *out is malloc'd.
 * EMU_INVALID (logged) on a bad descr/shape/len, EMU_RESOURCE on OOM. */
emu_status npy_write(const char *descr, const uint64_t *shape, uint32_t ndim, const void *data,
                     size_t len, uint8_t **out, size_t *out_len);

/* The descr used to export an NRT dtype value; NULL for unknown dtypes. */
const char *npy_descr_for_dtype(uint32_t dtype);

#endif
