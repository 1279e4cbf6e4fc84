/*
 * itype.h: the instance types trnemu can emulate (trn1, inf2, trn2 ...).
 *
 * An instance type is static data from the public instance specifications: how
 * many chips, how many physical NeuronCores each, which core generation,
 * how much HBM in how many stacks, and which logical-core (LNC) sizes the
 * runtime accepts.
 */
#ifndef TRNEMU_DEVICES_ITYPE_H
#define TRNEMU_DEVICES_ITYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How the chips of a machine are joined by NeuronLink (devices/config/topology.h). */
enum dev_links {
    DEV_LINKS_NONE = 0,   /* one chip: no links */
    DEV_LINKS_RING = 1,   /* the chips form one ring (inf2.48xlarge) */
    DEV_LINKS_TORUS = 2,  /* each node of 16 chips is a 4x4 2D torus; nodes > 1:
                             chips with the same coordinates form a ring */
    DEV_LINKS_SWITCH = 3, /* NeuronSwitch: every chip reaches every other chip
                             in one hop (Trainium3) */
};

/* NeuronCore generations; they decide SBUF/PSUM sizes and the ISA flavour. */
enum nc_gen {
    NC_GEN_V2 = 2,  /* Trainium1 / Inferentia2 */
    NC_GEN_V3 = 3,  /* Trainium2 */
    NC_GEN_V4 = 4,  /* Trainium3 */
};

struct itype {
    const char *name;           /* instance type, e.g. "trn2.48xlarge" */
    uint32_t family;            /* NRT_INSTANCE_* value for nrt_get_instance_info */
    uint32_t size;              /* NRT_INSTANCE_SIZE_* value */
    const char *arch_name;      /* chip architecture as reported to users */
    const char *chip_name;      /* marketing name of the chip */
    const char *device_revision;/* revision string reported by the runtime */
    uint32_t chips;             /* Neuron devices in the machine */
    uint32_t cores_per_chip;    /* physical NeuronCores per chip */
    enum nc_gen gen;            /* NeuronCore generation */
    uint64_t hbm_per_chip;      /* bytes of HBM per chip */
    uint32_t hbm_stacks;        /* HBM stacks per chip (hbm_index range) */
    uint32_t lnc_default;       /* physical cores per logical core by default */
    uint32_t lnc_allowed;       /* bit n set: LNC size n is accepted */
    uint32_t nodes;             /* 16-chip tori emulated in one process's machine (1;
                                   more only in an UltraServer view, devices/config/node.h) */
    uint32_t us_nodes;          /* servers in the UltraServer the instance belongs to
                                   (trn2u: 4; 1 when not an UltraServer member) */
    enum dev_links links;       /* NeuronLink topology between the chips */
};

/* The instance type trnemu emulates when TRNEMU_INSTANCE is not set. */
#define ITYPE_DEFAULT_NAME "trn2.48xlarge"

/* Profile by instance type name; NULL when unknown. */
const struct itype *itype_find(const char *name);

/* Number of instance types, and the i-th one, for listings. */
size_t itype_count(void);
const struct itype *itype_at(size_t i);

/* Is this LNC size accepted by the instance type? */
bool itype_lnc_ok(const struct itype *p, uint32_t lnc);

#endif
