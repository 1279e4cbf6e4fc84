/*
 * nrt_version.h: the version of the runtime library that is loaded.
 *
 * trnemu's copy of the vendor header: same names, sizes and layout;
 * comments in trnemu's own words. Unlike the vendor header it includes
 * what it uses, so it can be included on its own.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes of the text fields of nrt_version_t, including the NUL. */
#define RT_VERSION_DETAIL_LEN 128
#define GIT_HASH_LEN 64

/* Version of the runtime library. */
typedef struct nrt_version {
    uint64_t rt_major;                     /* major version */
    uint64_t rt_minor;                     /* minor version */
    uint64_t rt_patch;                     /* patch level */
    uint64_t rt_maintenance;               /* maintenance release */
    char rt_detail[RT_VERSION_DETAIL_LEN]; /* free-form build description */
    char git_hash[GIT_HASH_LEN];           /* source revision of the build */
} nrt_version_t;

/* Fill the first size bytes of *ver with the library version; callers
 * built against an older, smaller struct pass their own size. */
NRT_STATUS nrt_get_version(nrt_version_t *ver, size_t size);

#ifdef __cplusplus
}
#endif
