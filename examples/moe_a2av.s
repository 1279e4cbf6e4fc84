; moe_a2av.s: the variable-count collectives of an MoE layer, for a job of
; 4 ranks (one NEFF for every rank, loaded with nrt_load_collectives).
;
; Each rank holds 160 f32 tokens (x) and decides at run time how many go to
; each rank: meta_a is NKI's all_to_all_v metadata, 3 rows x 4 ranks of u32
; (send counts, send offsets in x, receive counts written back by the op).
; The received chunks land in equal slots of 40 elements of a2av (chunk
; from rank s at 40 s). all_gather_v then gives every rank one chunk of
; every rank (meta_g: 4 rows, only the first column of rows 0 and 1 read,
; row 3 the receive offsets in agv; the counts are known, so row 2 is left
; alone). The updated metadata comes back in ma and mg.
;
; The all_to_all_v metadata goes through SBUF (one partition, as NKI keeps
; an SBUF metadata tensor); the all_gather_v metadata stays in HBM.
; tests/mp_coll/collv_rank.c (case "example") runs it on 4 ranks of an
; emulated Trn3 machine and checks every output.

.neff moe_a2av

.input  x      f32 [160]
.input  meta_a u32 [12]
.input  meta_g u32 [16]
.output a2av   f32 [160]
.output agv    f32 [32]
.output ma     u32 [12]
.output mg     u32 [16]

.sem meta_in
.sem sent

; dispatch: tokens to the ranks the metadata names, their counts back into SBUF
sp.dma_copy dst=sbuf[0:1, 0, [1,12]]:u32 src=hbm:meta_a[[12,1], 0, [1,12]]:u32 signal=meta_in+=1
act.all_to_all_v dst=hbm:a2av[[160,1], 0, [1,160]]:f32 src=hbm:x[[160,1], 0, [1,160]]:f32 \
    metadata=sbuf[0:1, 0, [1,12]]:u32 wait=meta_in>=1 signal=sent+=1
sp.dma_copy dst=hbm:ma[[12,1], 0, [1,12]]:u32 src=sbuf[0:1, 0, [1,12]]:u32 wait=sent>=1

; every rank's chunk to every rank, at the offsets row 3 gives
sp.dma_copy dst=hbm:mg[[16,1], 0, [1,16]]:u32 src=hbm:meta_g[[16,1], 0, [1,16]]:u32
sp.all_gather_v dst=hbm:agv[[32,1], 0, [1,32]]:f32 src=hbm:x[[160,1], 0, [1,160]]:f32 \
    metadata=hbm:mg[[16,1], 0, [1,16]]:u32 recv_counts_known has_rdispls
