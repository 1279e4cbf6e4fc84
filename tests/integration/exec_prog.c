/*
 * exec_prog.c: an ordinary Neuron Runtime program, linked with a plain
 * -lnrt (here: the fake vendor libnrt.so.1 next to it). It starts the
 * runtime, moves some bytes through a device tensor and says whose
 * runtime it ran on. Exit status 0 only if everything worked.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "nrt/nrt.h"

int main(void)
{
    NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    if (st != NRT_SUCCESS) {
        fprintf(stderr, "exec_prog: nrt_init failed: %s\n", nrt_get_status_as_str(st));
        return 1;
    }
    uint32_t vncs = 0;
    nrt_tensor_t *t = NULL;
    char in[64] = "hello from a device tensor", out[64] = {0};
    if (nrt_get_visible_vnc_count(&vncs) != NRT_SUCCESS ||
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof in, "t", &t) != NRT_SUCCESS ||
        nrt_tensor_write(t, in, 0, sizeof in) != NRT_SUCCESS ||
        nrt_tensor_read(t, out, 0, sizeof out) != NRT_SUCCESS || strcmp(in, out) != 0) {
        fprintf(stderr, "exec_prog: tensor round trip failed\n");
        nrt_close();
        return 1;
    }
    nrt_tensor_free(&t);
    /* trnemu's own entry point exists only in trnemu's library. */
    const char *(*ver)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "trnemu_version");
    printf("exec_prog: ok on %s (%u VNCs visible)\n", ver ? ver() : "an unknown runtime", vncs);
    nrt_close();
    return ver != NULL ? 0 : 1;
}
