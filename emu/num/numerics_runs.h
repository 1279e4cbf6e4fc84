/*
 * numerics_runs.h: the contiguous load and RNE store loops, one function
 * pair per ISA level. numerics_vec.c includes this file once per level
 * after defining NUM_RUNS_SUFFIX (a name suffix) and NUM_RUNS_ATTR (the
 * function attributes, e.g. a target ISA); the element kernels it uses
 * (ld_run, st_run) are always_inline, so each copy is compiled, and
 * vectorised, for that level's instruction set; so is the block scan for
 * NaN and infinity. Not a normal header.
 */
#define NUM_CAT2(a, b) a##_##b
#define NUM_CAT(a, b) NUM_CAT2(a, b)
#define NUM_FN(name) NUM_CAT(name, NUM_RUNS_SUFFIX)

/* d[i] = element i of the contiguous array s of dtype dt (valid). */
NUM_RUNS_ATTR static void NUM_FN(ld_contig)(float *restrict d, const unsigned char *restrict s,
                                            uint32_t dt, size_t n)
{
    switch (dt) {
    case NUM_DT_FP32:
    case NUM_DT_FP32R: ld_run(d, s, 4, n, NUM_DT_FP32); break;
    case NUM_DT_BF16: ld_run(d, s, 2, n, NUM_DT_BF16); break;
    case NUM_DT_FP16: ld_run(d, s, 2, n, NUM_DT_FP16); break;
    case NUM_DT_FP8_E3: ld_run(d, s, 1, n, NUM_DT_FP8_E3); break;
    case NUM_DT_FP8_E4: ld_run(d, s, 1, n, NUM_DT_FP8_E4); break;
    case NUM_DT_FP8_E5: ld_run(d, s, 1, n, NUM_DT_FP8_E5); break;
    case NUM_DT_INT8: ld_run(d, s, 1, n, NUM_DT_INT8); break;
    case NUM_DT_UINT8: ld_run(d, s, 1, n, NUM_DT_UINT8); break;
    case NUM_DT_INT16: ld_run(d, s, 2, n, NUM_DT_INT16); break;
    case NUM_DT_UINT16: ld_run(d, s, 2, n, NUM_DT_UINT16); break;
    case NUM_DT_INT32: ld_run(d, s, 4, n, NUM_DT_INT32); break;
    case NUM_DT_UINT32: ld_run(d, s, 4, n, NUM_DT_UINT32); break;
    case NUM_DT_INT64: ld_run(d, s, 8, n, NUM_DT_INT64); break;
    case NUM_DT_UINT64: ld_run(d, s, 8, n, NUM_DT_UINT64); break;
    default: break;
    }
}

/* Element i of the contiguous array d of dtype dt (valid) = s[i], RNE;
 * sat only matters for the float formats narrower than fp32. */
NUM_RUNS_ATTR static void NUM_FN(st_contig)(unsigned char *restrict d, const float *restrict s,
                                            uint32_t dt, size_t n, bool sat)
{
    switch (dt) {
    case NUM_DT_FP32:
    case NUM_DT_FP32R: st_run(d, 4, s, n, NUM_DT_FP32, false); break;
    case NUM_DT_BF16:
        if (sat)
            st_run(d, 2, s, n, NUM_DT_BF16, true);
        else
            st_run(d, 2, s, n, NUM_DT_BF16, false);
        break;
    case NUM_DT_FP16:
        if (sat)
            st_run(d, 2, s, n, NUM_DT_FP16, true);
        else
            st_run(d, 2, s, n, NUM_DT_FP16, false);
        break;
    case NUM_DT_FP8_E3:
        if (sat)
            st_run(d, 1, s, n, NUM_DT_FP8_E3, true);
        else
            st_run(d, 1, s, n, NUM_DT_FP8_E3, false);
        break;
    case NUM_DT_FP8_E4:
        if (sat)
            st_run(d, 1, s, n, NUM_DT_FP8_E4, true);
        else
            st_run(d, 1, s, n, NUM_DT_FP8_E4, false);
        break;
    case NUM_DT_FP8_E5:
        if (sat)
            st_run(d, 1, s, n, NUM_DT_FP8_E5, true);
        else
            st_run(d, 1, s, n, NUM_DT_FP8_E5, false);
        break;
    case NUM_DT_INT8: st_run(d, 1, s, n, NUM_DT_INT8, false); break;
    case NUM_DT_UINT8: st_run(d, 1, s, n, NUM_DT_UINT8, false); break;
    case NUM_DT_INT16: st_run(d, 2, s, n, NUM_DT_INT16, false); break;
    case NUM_DT_UINT16: st_run(d, 2, s, n, NUM_DT_UINT16, false); break;
    case NUM_DT_INT32: st_run(d, 4, s, n, NUM_DT_INT32, false); break;
    case NUM_DT_UINT32: st_run(d, 4, s, n, NUM_DT_UINT32, false); break;
    case NUM_DT_INT64: st_run(d, 8, s, n, NUM_DT_INT64, false); break;
    case NUM_DT_UINT64: st_run(d, 8, s, n, NUM_DT_UINT64, false); break;
    default: break;
    }
}

/* Does the block of NUM_CHUNK fp32 bit patterns at u hold a NaN (nan_only)
 * or a NaN or infinity? Branch-free over the block, so it vectorises. */
NUM_RUNS_ATTR static bool NUM_FN(scan_block)(const uint32_t *restrict u, bool nan_only)
{
    uint32_t acc = 0;
    if (nan_only) {  /* the largest magnitude pattern beyond infinity's */
        for (size_t i = 0; i < NUM_CHUNK; i++) {
            uint32_t m = u[i] & 0x7fffffffu;
            acc = m > acc ? m : acc;
        }
        return acc > 0x7f800000u;
    }
    /* an all-ones exponent carries into bit 31, any other does not */
    for (size_t i = 0; i < NUM_CHUNK; i++)
        acc |= (u[i] & 0x7f800000u) + 0x00800000u;
    return (acc & 0x80000000u) != 0;
}

#undef NUM_FN
#undef NUM_CAT
#undef NUM_CAT2
