/*
 * shim_names.c: the arrays of names some ABI functions hand out (event
 * types of the system trace, activity types of inspect), built once here
 * and registered, so that their free functions refuse anything else.
 */
#include <stdlib.h>
#include <string.h>

#include "shims/shim.h"

static void shim_names_free(const char **a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free((void *)a[i]);
    free(a);
}

NRT_STATUS shim_name_list(uint64_t pick, int count, const char *(*name)(int), const char ***out,
                          size_t *n_out)
{
    const char **a = calloc((size_t)count + 1, sizeof *a);
    size_t n = 0;
    if (a == NULL) {
        LOG_ERROR("NRT", "out of memory for a list of names");
        return NRT_RESOURCE;
    }
    for (int i = 0; i < count && i < 64; i++) {
        if (!(pick & (1ull << i)))
            continue;
        if ((a[n] = strdup(name(i))) == NULL) {
            shim_names_free(a, n);
            LOG_ERROR("NRT", "out of memory for a list of names");
            return NRT_RESOURCE;
        }
        n++;
    }
    if (shim_obj_add(a, HANDLE_NAME_LIST) != NRT_SUCCESS) {  /* handle_add logged it */
        shim_names_free(a, n);
        return NRT_RESOURCE;
    }
    *out = a;
    *n_out = n;
    return NRT_SUCCESS;
}
