; add.s: c = a + b, element by element, for two [128 x 512] f32 tensors.
;
; Each row of the inputs lands in one SBUF partition (512 f32 = 2 KiB per
; partition); the Vector engine adds the two tiles and the sync engine
; stores the sum. Two named semaphores order the engines:
;   loaded  counts the input DMAs that have landed (2 when both are in)
;   added   becomes 1 when the sum is in SBUF
;
; SBUF layout, bytes within each partition:
;   a: 0..2047   b: 2048..4095   c: 4096..6143

.neff add

.input  a f32 [128, 512]
.input  b f32 [128, 512]
.output c f32 [128, 512]

.sem loaded
.sem added

; load: HBM row p (512 elements apart) -> SBUF partition p
sp.dma_copy dst=sbuf[0:128, 0, [1,512]]:f32 src=hbm:a[[512,128], 0, [1,512]]:f32 signal=loaded+=1
sp.dma_copy dst=sbuf[0:128, 2048, [1,512]]:f32 src=hbm:b[[512,128], 0, [1,512]]:f32 signal=loaded+=1

; compute, once both inputs are in
dve.tensor_tensor dst=sbuf[0:128, 4096, [1,512]]:f32 \
    data1=sbuf[0:128, 0, [1,512]]:f32 data2=sbuf[0:128, 2048, [1,512]]:f32 op=add \
    wait=loaded>=2 signal=added+=1

; store, once the sum is in
sp.dma_copy dst=hbm:c[[512,128], 0, [1,512]]:f32 src=sbuf[0:128, 4096, [1,512]]:f32 wait=added>=1
