; sparse_matmul.s: a 4:16 structured-sparse matmul on the Tensor engine
; (NeuronCore-v3 and later; trnemu's nc_matmul_sparse, docs/isa.md).
;
; The stationary matrix W (K = 512 contraction rows x 128 columns) keeps
; at most 4 non-zero values in every 16 consecutive rows of a column, so it
; is sent compressed to a quarter of its rows:
;   S bf16 [128, 128]: partition 4g+i holds the i-th kept value of row
;                      group g (rows 16g .. 16g+15) of every column
;   T u16  [128, 32]:  its row within the group, 4 bits per value, value m
;                      in bits 4*(m%4) of element m/4
;   X bf16 [128, 2048]: the dense moving matrix, logical row k in
;                      partition k/4, elements (k%4)*512 .. +511
;   C f32  [128, 512]:  C = W^T X
;
; SBUF, bytes within each partition:
;   S 0..255   T 256..319   X 1024..5119   C 8192..10239

.neff sparse_matmul

.input  S bf16 [128, 128]
.input  T u16 [128, 32]
.input  X bf16 [128, 2048]
.output C f32 [128, 512]

.sem loaded
.sem multiplied
.sem copied

sp.dma_copy dst=sbuf[0:128, 0, [1,128]]:bf16 src=hbm:S[[128,128], 0, [1,128]]:bf16 signal=loaded+=1
sp.dma_copy dst=sbuf[0:128, 256, [1,32]]:u16 src=hbm:T[[32,128], 0, [1,32]]:u16 signal=loaded+=1
sp.dma_copy dst=sbuf[0:128, 1024, [1,2048]]:bf16 src=hbm:X[[2048,128], 0, [1,2048]]:bf16 signal=loaded+=1

pe.nc_matmul_sparse dst=psum[0:128, 0, [1,512]]:f32 \
    stationary=sbuf[0:128, 0, [1,128]]:bf16 moving=sbuf[0:128, 1024, [1,2048]]:bf16 \
    tag=sbuf[0:128, 256, [1,32]]:u16 keep=4 group=16 wait=loaded>=3 signal=multiplied+=1

act.tensor_copy dst=sbuf[0:128, 8192, [1,512]]:f32 src=psum[0:128, 0, [1,512]]:f32 \
    wait=multiplied>=1 signal=copied+=1
sp.dma_copy dst=hbm:C[[512,128], 0, [1,512]]:f32 src=sbuf[0:128, 8192, [1,512]]:f32 wait=copied>=1
