; mx_matmul.s: an MXFP8 matmul on NeuronCore-v4 (Trainium3): quantize two
; bf16 tiles with the Vector engine (quantize_mx), multiply them with the
; Tensor engine (nc_matmul_mx), store the fp32 result.
;
; The inputs are already in the interleaved layout MX needs (the MX guide,
; nki/deep-dives/mxfp-matmul.rst): partition p holds contraction rows
; p, p+128, p+256, p+384 as groups of 4 neighbouring elements, so
;   X bf16 [128, 4*128]: stationary, element 4m+j of partition p
;   Y bf16 [128, 4*512]: moving,     element 4n+j of partition p
;   C[m, n] = sum over p, j of Xq[p, 4m+j] * Yq[p, 4n+j]
; where Xq, Yq are the MX-quantized values (fp8 e4m3fn, one power-of-two
; scale per 8 partitions x 4 elements).
;
; SBUF, bytes within each partition:
;   X 0..1023   Y 1024..5119   Xq 8192 (128 x4 = 512 B)   Xs 8704 (128 B)
;   Yq 9216 (512 x4 = 2048 B)   Ys 11264 (512 B)   C 12288 (512 f32)
; Scales of 128-partition tiles use every partition (4 rows per quadrant).

.neff mx_matmul

.input  X bf16 [128, 512]
.input  Y bf16 [128, 2048]
.output C f32 [128, 512]

.sem loaded
.sem quantized
.sem multiplied
.sem copied

sp.dma_copy dst=sbuf[0:128, 0, [1,512]]:bf16 src=hbm:X[[512,128], 0, [1,512]]:bf16 signal=loaded+=1
sp.dma_copy dst=sbuf[0:128, 1024, [1,2048]]:bf16 src=hbm:Y[[2048,128], 0, [1,2048]]:bf16 signal=loaded+=1

dve.quantize_mx dst=sbuf[0:128, 8192, [1,128]]:fp8e4fnx4 dst_scale=sbuf[0:128, 8704, [1,128]]:u8 \
    src=sbuf[0:128, 0, [1,512]]:bf16 wait=loaded>=2
dve.quantize_mx dst=sbuf[0:128, 9216, [1,512]]:fp8e4fnx4 dst_scale=sbuf[0:128, 11264, [1,512]]:u8 \
    src=sbuf[0:128, 1024, [1,2048]]:bf16 signal=quantized+=1

pe.nc_matmul_mx dst=psum[0:128, 0, [1,512]]:f32 \
    stationary=sbuf[0:128, 8192, [1,128]]:fp8e4fnx4 moving=sbuf[0:128, 9216, [1,512]]:fp8e4fnx4 \
    stationary_scale=sbuf[0:128, 8704, [1,128]]:u8 moving_scale=sbuf[0:128, 11264, [1,512]]:u8 \
    wait=quantized>=1 signal=multiplied+=1

act.tensor_copy dst=sbuf[0:128, 12288, [1,512]]:f32 src=psum[0:128, 0, [1,512]]:f32 \
    wait=multiplied>=1 signal=copied+=1
sp.dma_copy dst=hbm:C[[512,128], 0, [1,512]]:f32 src=sbuf[0:128, 12288, [1,512]]:f32 wait=copied>=1
