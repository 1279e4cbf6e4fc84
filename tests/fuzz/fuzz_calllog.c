/*
 * fuzz_calllog.c: fuzz target for the call-log argument decoder
 * (store/calllog_codec.c), which reads the args blobs of a log file.
 *
 * Input: a table function name, a NUL byte, then the argument blob as
 * log_calls.args stores it. An unknown name falls back to the function
 * whose index is the first byte modulo the table size, so mutated names
 * still reach the decoder.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "store/calllog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const uint8_t *nul = memchr(data, '\0', size);
    size_t name_len = nul != NULL ? (size_t)(nul - data) : 0;
    int id = -1;
    if (nul != NULL && name_len < 64) {
        char name[64];
        memcpy(name, data, name_len);
        name[name_len] = '\0';
        id = cl_fn_lookup(name);
    }
    if (id < 0)
        id = data[0] % CL_FN_COUNT;
    size_t skip = nul != NULL ? name_len + 1 : 1;
    struct cl_dec d;
    if (cl_decode(&cl_fns[id], data + skip, size - skip, &d))
        cl_dec_free(&d);
    return 0;
}
