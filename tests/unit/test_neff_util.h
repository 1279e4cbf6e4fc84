/*
 * test_neff_util.h: helpers shared by the NEFF unit tests and the fuzz
 * corpus generator: a small model that uses every feature, raw NEFFs made
 * of hand-written members, and capture of log lines.
 */
#ifndef TRNEMU_TEST_NEFF_UTIL_H
#define TRNEMU_TEST_NEFF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/neff/neff_file.h"
#include "emu/neff/neff_model.h"

/* A one-subgraph trnemu model using every var type, queue and op. */
struct neff_model *tu_small_model(void);

/* The bytes of tu_small_model() stored and written; free() them. */
void tu_small_neff(uint8_t **bytes, size_t *size);

/* A NEFF whose members are the given (name, text) pairs, names[i] == NULL
 * ends the list; feature_bits goes into the header. free() the bytes. */
void tu_neff_from_texts(const char *const *names, const char *const *texts,
                        uint64_t feature_bits, uint8_t **bytes, size_t *size);

/* A NEFF whose data part is `data` (not necessarily a tarball), with a
 * correct header (sizes and sha256). free() the bytes. */
void tu_neff_wrap(const void *data, size_t len, uint8_t **bytes, size_t *size);

/* A gzip'd tar whose entries have arbitrary names/types, for path tests:
 * types[i] is 'f' (file), 'd' (directory), 'l' (symlink), 'h' (hard link).
 * free() the bytes. */
void tu_raw_tar(const char *const *names, const char *types, size_t n, uint8_t **bytes,
                size_t *size);

/* Recompute data_size-independent sha256 hash of a NEFF in place. */
void tu_fix_hash(uint8_t *bytes, size_t size);

/* Log capture: stderr goes to a temporary file until tu_log_end(), which
 * returns the number of lines written (and the text in buf). */
void tu_log_begin(void);
int tu_log_end(char *buf, size_t cap);

/* Silence (true) or restore (false) NEFF log lines. */
void tu_quiet(bool on);

/* Little-endian u64 store/load at an offset of a buffer. */
void tu_put_u64(uint8_t *p, uint64_t v);
uint64_t tu_get_u64(const uint8_t *p);

#endif
