/*
 * fuzz_boot_hello.c: fuzz target for the check rank 0's bootstrap applies
 * to every hello it receives from the network (devices/link/bootstrap.c,
 * boot_hello_check): wrong token, magic, version, sizes, ranks, node
 * indexes, short and oversized messages.
 *
 * Input: the bytes of one hello as they arrive; the job expects the token
 * "fuzz-token-0001", 4 ranks and 2 nodes (the committed seed is a valid
 * hello of rank 1).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "devices/link/bootstrap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t rank = 0, world = 0;
    struct boot_entry e;
    const char *why = boot_hello_check(data, size, "fuzz-token-0001", 4, 2, &rank, &world, &e);
    if (why == NULL && (rank == 0 || rank >= 4 || e.node >= 2 || e.addrlen == 0 ||
                        e.addrlen > BOOT_ADDR_MAX || size != BOOT_HELLO_BYTES))
        __builtin_trap();  /* accepted something the bootstrap must refuse */
    return 0;
}
