/*
 * itype.c: the table of emulated instance types (see itype.h).
 *
 * Figures come from the public instance and chip specifications:
 * Trainium1 and Inferentia2 chips carry 2 NeuronCore-v2 and 32 GiB of HBM
 * (2 stacks); a Trainium2 chip carries 8 NeuronCore-v3 and 96 GiB of HBM in
 * 4 stacks, with LNC=2 the default. A trn2u.48xlarge is one server of 16
 * chips, like a trn2.48xlarge; the Trn2 UltraServer joins four of them (64
 * chips), each its own host and runtime: trnemu emulates each server as a
 * node and joins the nodes (devices/config/node.h, docs/nodes.md).
 * NeuronLink: the 16 chips of a trn1.32xlarge or trn2.48xlarge form a 4x4
 * 2D torus; in the UltraServer the chips with the same torus coordinates in
 * the four servers form a ring across the servers; the 12 Inferentia2 chips of an inf2.48xlarge
 * form a ring.
 * A Trainium3 chip carries 8 NeuronCore-v4 and 144 GiB of HBM in 4 stacks;
 * its chips reach each other through NeuronSwitch (all to all, one hop).
 * trn3.48xlarge is the server of a Trn3 Gen1 UltraServer (16 chips),
 * trn3pd98.48xlarge the server of a Gen2 UltraServer (4 chips) and
 * trn3pd98.3xlarge one chip of it. docs/instance.md lists the sources and
 * which figures (and names) are inferred.
 */
#include "devices/config/itype.h"

#include <string.h>

#define GIB (1024ull * 1024ull * 1024ull)

/* NRT_INSTANCE_* and NRT_INSTANCE_SIZE_* values (nrt.h). */
enum {
    FAM_TRN1 = 2, FAM_TRN1N = 3, FAM_INF2 = 4, FAM_TRN2 = 5, FAM_TRN2N = 6, FAM_TRN2U = 9,
    FAM_TRN3 = 14, FAM_TRN3PDS98 = 15,
    SZ_1XL = 0, SZ_2XL = 1, SZ_8XL = 4, SZ_24XL = 5, SZ_32XL = 6, SZ_48XL = 7, SZ_3XL = 8,
};

/* LNC sizes 1 and 2 (Trainium2 and later). */
#define LNC_1_2 ((1u << 1) | (1u << 2))

static const struct itype itype_table[] = {
    {"trn1.2xlarge", FAM_TRN1, SZ_2XL, "trn1", "Trainium", "1.0",
     1, 2, NC_GEN_V2, 32 * GIB, 2, 1, 1u << 1, 1, 1, DEV_LINKS_NONE},
    {"trn1.32xlarge", FAM_TRN1, SZ_32XL, "trn1", "Trainium", "1.0",
     16, 2, NC_GEN_V2, 32 * GIB, 2, 1, 1u << 1, 1, 1, DEV_LINKS_TORUS},
    {"trn1n.32xlarge", FAM_TRN1N, SZ_32XL, "trn1", "Trainium", "1.0",
     16, 2, NC_GEN_V2, 32 * GIB, 2, 1, 1u << 1, 1, 1, DEV_LINKS_TORUS},
    {"inf2.xlarge", FAM_INF2, SZ_1XL, "inf2", "Inferentia2", "1.0",
     1, 2, NC_GEN_V2, 32 * GIB, 2, 1, 1u << 1, 1, 1, DEV_LINKS_NONE},
    {"inf2.8xlarge", FAM_INF2, SZ_8XL, "inf2", "Inferentia2", "1.0",
     1, 2, NC_GEN_V2, 32 * GIB, 2, 1, 1u << 1, 1, 1, DEV_LINKS_NONE},
    {"inf2.24xlarge", FAM_INF2, SZ_24XL, "inf2", "Inferentia2", "1.0",
     6, 2, NC_GEN_V2, 32 * GIB, 2, 1, 1u << 1, 1, 1, DEV_LINKS_RING},
    {"inf2.48xlarge", FAM_INF2, SZ_48XL, "inf2", "Inferentia2", "1.0",
     12, 2, NC_GEN_V2, 32 * GIB, 2, 1, 1u << 1, 1, 1, DEV_LINKS_RING},
    {"trn2.3xlarge", FAM_TRN2, SZ_3XL, "trn2", "Trainium2", "1.0",
     1, 8, NC_GEN_V3, 96 * GIB, 4, 2, LNC_1_2, 1, 1, DEV_LINKS_NONE},
    {"trn2.48xlarge", FAM_TRN2, SZ_48XL, "trn2", "Trainium2", "1.0",
     16, 8, NC_GEN_V3, 96 * GIB, 4, 2, LNC_1_2, 1, 1, DEV_LINKS_TORUS},
    {"trn2n.48xlarge", FAM_TRN2N, SZ_48XL, "trn2", "Trainium2", "1.0",
     16, 8, NC_GEN_V3, 96 * GIB, 4, 2, LNC_1_2, 1, 1, DEV_LINKS_TORUS},
    {"trn2u.48xlarge", FAM_TRN2U, SZ_48XL, "trn2", "Trainium2", "1.0",
     16, 8, NC_GEN_V3, 96 * GIB, 4, 2, LNC_1_2, 1, 4, DEV_LINKS_TORUS},
    {"trn3pd98.3xlarge", FAM_TRN3PDS98, SZ_3XL, "trn3", "Trainium3", "1.0",
     1, 8, NC_GEN_V4, 144 * GIB, 4, 2, LNC_1_2, 1, 1, DEV_LINKS_NONE},
    {"trn3pd98.48xlarge", FAM_TRN3PDS98, SZ_48XL, "trn3", "Trainium3", "1.0",
     4, 8, NC_GEN_V4, 144 * GIB, 4, 2, LNC_1_2, 1, 36, DEV_LINKS_SWITCH},
    {"trn3.48xlarge", FAM_TRN3, SZ_48XL, "trn3", "Trainium3", "1.0",
     16, 8, NC_GEN_V4, 144 * GIB, 4, 2, LNC_1_2, 1, 4, DEV_LINKS_SWITCH},
};

size_t itype_count(void)
{
    return sizeof itype_table / sizeof itype_table[0];
}

const struct itype *itype_at(size_t i)
{
    return i < itype_count() ? &itype_table[i] : NULL;
}

const struct itype *itype_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < itype_count(); i++)
        if (strcmp(itype_table[i].name, name) == 0)
            return &itype_table[i];
    return NULL;
}

bool itype_lnc_ok(const struct itype *p, uint32_t lnc)
{
    return lnc > 0 && lnc < 32 && (p->lnc_allowed & (1u << lnc)) != 0;
}
