/*
 * exec_pool.c: semantics of the selection, gather, sort and statistics instructions.
 *
 * Ops still listed with EXEC_NOT_EMULATED below stop an execution with
 * NRT_EXEC_COMPLETED_WITH_ERR and a report naming them.
 */
#include "emu/exec_stub.h"

EXEC_NOT_EMULATED(bn_stats)
EXEC_NOT_EMULATED(bn_aggr)
EXEC_NOT_EMULATED(max8)
EXEC_NOT_EMULATED(nc_find_index8)
EXEC_NOT_EMULATED(nc_match_replace8)
EXEC_NOT_EMULATED(select_reduce)
EXEC_NOT_EMULATED(range_select)
EXEC_NOT_EMULATED(affine_select)
EXEC_NOT_EMULATED(local_gather)
EXEC_NOT_EMULATED(nc_n_gather)
EXEC_NOT_EMULATED(nc_stream_shuffle)
EXEC_NOT_EMULATED(sequence_bounds)
EXEC_NOT_EMULATED(nonzero_with_count)
EXEC_NOT_EMULATED(topk)
EXEC_NOT_EMULATED(quantize_mx)
