/*
 * install_client.c: a user program built against an installed trnemu
 * (tests/integration/install_test.sh), with the include and link flags of
 * `pkg-config --cflags --libs nrt` or the vendor's -I<root>/include
 * -L<root>/lib -lnrt. Starts the runtime, counts the VNCs, round-trips a
 * tensor, prints the runtime version nrt_get_version reports (which
 * nrt.pc's Version must equal) and, with -DWITH_TRNEMU (trnemu.pc), asks
 * for trnemu's version.
 */
#include <stdio.h>
#include <string.h>

#include "nrt/nrt.h"
#include "nrt/nrt_version.h"
#ifdef WITH_TRNEMU
#include "trnemu/trnemu.h"
#endif

int main(void)
{
    uint32_t n = 0;
    char in[64] = "installed", out[64] = {0};
    nrt_tensor_t *t = NULL;
    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS ||
        nrt_get_visible_vnc_count(&n) != NRT_SUCCESS || n == 0 ||
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof in, "t", &t) != NRT_SUCCESS ||
        nrt_tensor_write(t, in, 0, sizeof in) != NRT_SUCCESS ||
        nrt_tensor_read(t, out, 0, sizeof out) != NRT_SUCCESS || strcmp(in, out) != 0) {
        fprintf(stderr, "install_client: the runtime did not work\n");
        return 1;
    }
    nrt_tensor_free(&t);
    printf("vncs %u\n", n);
    nrt_version_t v;
    if (nrt_get_version(&v, sizeof v) == NRT_SUCCESS)
        printf("nrt %u.%u.%u\n", (unsigned)v.rt_major, (unsigned)v.rt_minor,
               (unsigned)v.rt_patch);
#ifdef WITH_TRNEMU
    printf("trnemu %s\n", trnemu_version());
#endif
    nrt_close();
    return 0;
}
