; matmul_512.s: C = A x B for A, B [512 x 512] bf16 in HBM, C [512 x 512] fp32.
;
; The Tensor engine computes dst = stationary^T x moving, contracting over
; the SBUF partitions (at most 128 at a time). So the kernel keeps
;   A^T in SBUF, tiled over K: AT[kt][k', m] = A[m, 128*kt + k']
;   B   in SBUF, tiled over K: Bt[kt][k', n] = B[128*kt + k', n]
; and builds each 128-row block mt of C in its own PSUM bank, summing the
; four K tiles there (the first matmul of a group overwrites the bank, the
; others accumulate):
;   C[128*mt + m', n] = sum over kt of AT[kt][:, 128*mt + m']^T x Bt[kt][:, n]
; The Scalar engine copies each finished bank to SBUF and the sync engine
; stores it. A^T comes in by a strided DMA: partition k' of AT[kt] walks
; column 128*kt + k' of A, whose elements are 512 apart; B comes in row by
; row.
;
; SBUF, bytes within each partition:
;   AT[kt]  kt*1024          (512 bf16: all 512 columns m)
;   Bt[kt]  4096 + kt*1024   (512 bf16: all 512 columns n)
;   Ct[mt]  8192 + mt*2048   (512 fp32)
; PSUM: bank mt (bytes mt*2048 .. +2047) holds block mt of C.
;
; Semaphores:
;   loaded   +1 per input tile that has landed (AT[kt] and Bt[kt] in pairs)
;   summed   +1 per finished PSUM bank (block of C)
;   copied   +1 per block copied to SBUF

.neff matmul_512

.input  A bf16 [512, 512]
.input  B bf16 [512, 512]
.output C f32 [512, 512]

.sem loaded
.sem summed
.sem copied

; ---- loads (sync engine), in the order the Tensor engine needs them
sp.dma_copy dst=sbuf[0:128, 0, [1,512]]:bf16 src=hbm:A[[1,128], 0, [512,512]]:bf16 signal=loaded+=1
sp.dma_copy dst=sbuf[0:128, 4096, [1,512]]:bf16 src=hbm:B[[512,128], 0, [1,512]]:bf16 signal=loaded+=1
sp.dma_copy dst=sbuf[0:128, 1024, [1,512]]:bf16 src=hbm:A[[1,128], 256, [512,512]]:bf16 signal=loaded+=1
sp.dma_copy dst=sbuf[0:128, 5120, [1,512]]:bf16 src=hbm:B[[512,128], 131072, [1,512]]:bf16 signal=loaded+=1
sp.dma_copy dst=sbuf[0:128, 2048, [1,512]]:bf16 src=hbm:A[[1,128], 512, [512,512]]:bf16 signal=loaded+=1
sp.dma_copy dst=sbuf[0:128, 6144, [1,512]]:bf16 src=hbm:B[[512,128], 262144, [1,512]]:bf16 signal=loaded+=1
sp.dma_copy dst=sbuf[0:128, 3072, [1,512]]:bf16 src=hbm:A[[1,128], 768, [512,512]]:bf16 signal=loaded+=1
sp.dma_copy dst=sbuf[0:128, 7168, [1,512]]:bf16 src=hbm:B[[512,128], 393216, [1,512]]:bf16 signal=loaded+=1

; ---- matmuls (Tensor engine): block mt of C in PSUM bank mt
pe.nc_matmul dst=psum[0:128, 0, [1,512]]:f32 stationary=sbuf[0:128, 0, [1,128]]:bf16 moving=sbuf[0:128, 4096, [1,512]]:bf16 wait=loaded>=2
pe.nc_matmul dst=psum[0:128, 0, [1,512]]:f32 stationary=sbuf[0:128, 1024, [1,128]]:bf16 moving=sbuf[0:128, 5120, [1,512]]:bf16 accumulate wait=loaded>=4
pe.nc_matmul dst=psum[0:128, 0, [1,512]]:f32 stationary=sbuf[0:128, 2048, [1,128]]:bf16 moving=sbuf[0:128, 6144, [1,512]]:bf16 accumulate wait=loaded>=6
pe.nc_matmul dst=psum[0:128, 0, [1,512]]:f32 stationary=sbuf[0:128, 3072, [1,128]]:bf16 moving=sbuf[0:128, 7168, [1,512]]:bf16 accumulate wait=loaded>=8 signal=summed+=1

pe.nc_matmul dst=psum[0:128, 2048, [1,512]]:f32 stationary=sbuf[0:128, 256, [1,128]]:bf16 moving=sbuf[0:128, 4096, [1,512]]:bf16
pe.nc_matmul dst=psum[0:128, 2048, [1,512]]:f32 stationary=sbuf[0:128, 1280, [1,128]]:bf16 moving=sbuf[0:128, 5120, [1,512]]:bf16 accumulate
pe.nc_matmul dst=psum[0:128, 2048, [1,512]]:f32 stationary=sbuf[0:128, 2304, [1,128]]:bf16 moving=sbuf[0:128, 6144, [1,512]]:bf16 accumulate
pe.nc_matmul dst=psum[0:128, 2048, [1,512]]:f32 stationary=sbuf[0:128, 3328, [1,128]]:bf16 moving=sbuf[0:128, 7168, [1,512]]:bf16 accumulate signal=summed+=1

pe.nc_matmul dst=psum[0:128, 4096, [1,512]]:f32 stationary=sbuf[0:128, 512, [1,128]]:bf16 moving=sbuf[0:128, 4096, [1,512]]:bf16
pe.nc_matmul dst=psum[0:128, 4096, [1,512]]:f32 stationary=sbuf[0:128, 1536, [1,128]]:bf16 moving=sbuf[0:128, 5120, [1,512]]:bf16 accumulate
pe.nc_matmul dst=psum[0:128, 4096, [1,512]]:f32 stationary=sbuf[0:128, 2560, [1,128]]:bf16 moving=sbuf[0:128, 6144, [1,512]]:bf16 accumulate
pe.nc_matmul dst=psum[0:128, 4096, [1,512]]:f32 stationary=sbuf[0:128, 3584, [1,128]]:bf16 moving=sbuf[0:128, 7168, [1,512]]:bf16 accumulate signal=summed+=1

pe.nc_matmul dst=psum[0:128, 6144, [1,512]]:f32 stationary=sbuf[0:128, 768, [1,128]]:bf16 moving=sbuf[0:128, 4096, [1,512]]:bf16
pe.nc_matmul dst=psum[0:128, 6144, [1,512]]:f32 stationary=sbuf[0:128, 1792, [1,128]]:bf16 moving=sbuf[0:128, 5120, [1,512]]:bf16 accumulate
pe.nc_matmul dst=psum[0:128, 6144, [1,512]]:f32 stationary=sbuf[0:128, 2816, [1,128]]:bf16 moving=sbuf[0:128, 6144, [1,512]]:bf16 accumulate
pe.nc_matmul dst=psum[0:128, 6144, [1,512]]:f32 stationary=sbuf[0:128, 3840, [1,128]]:bf16 moving=sbuf[0:128, 7168, [1,512]]:bf16 accumulate signal=summed+=1

; ---- PSUM -> SBUF (Scalar engine), one block at a time
act.tensor_copy dst=sbuf[0:128, 8192, [1,512]]:f32 src=psum[0:128, 0, [1,512]]:f32 wait=summed>=1 signal=copied+=1
act.tensor_copy dst=sbuf[0:128, 10240, [1,512]]:f32 src=psum[0:128, 2048, [1,512]]:f32 wait=summed>=2 signal=copied+=1
act.tensor_copy dst=sbuf[0:128, 12288, [1,512]]:f32 src=psum[0:128, 4096, [1,512]]:f32 wait=summed>=3 signal=copied+=1
act.tensor_copy dst=sbuf[0:128, 14336, [1,512]]:f32 src=psum[0:128, 6144, [1,512]]:f32 wait=summed>=4 signal=copied+=1

; ---- stores (sync engine): rows 128*mt .. 128*mt+127 of C
sp.dma_copy dst=hbm:C[[512,128], 0, [1,512]]:f32 src=sbuf[0:128, 8192, [1,512]]:f32 wait=copied>=1
sp.dma_copy dst=hbm:C[[512,128], 262144, [1,512]]:f32 src=sbuf[0:128, 10240, [1,512]]:f32 wait=copied>=2
sp.dma_copy dst=hbm:C[[512,128], 524288, [1,512]]:f32 src=sbuf[0:128, 12288, [1,512]]:f32 wait=copied>=3
sp.dma_copy dst=hbm:C[[512,128], 786432, [1,512]]:f32 src=sbuf[0:128, 14336, [1,512]]:f32 wait=copied>=4
