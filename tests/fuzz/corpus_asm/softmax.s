; softmax.s: y = softmax(x) along each row, for x [128 x 1024] f32.
;
;   y[p, j] = exp(x[p, j] - max_j x[p, :]) / sum_j exp(x[p, j] - max_j x[p, :])
;
; Row p lives in SBUF partition p (1024 f32 = 4 KiB). Per row:
;   1. Vector engine: negmax = -max(x)             (tensor_reduce, negate)
;   2. Scalar engine: e = exp(x + negmax), and in the same pass
;                     sum = sum(e) in its accumulators (reduce_res)
;   3. Vector engine: rsum = 1 / sum               (reciprocal)
;                     y = e * rsum                 (tensor_scalar)
; The exp bias is the [128 x 1] negmax tile, broadcast along each row.
;
; SBUF, bytes within each partition:
;   x 0..4095   e 4096..8191   y 8192..12287
;   negmax 12288   sum 12292   rsum 12296      (one f32 each)

.neff softmax

.input  x f32 [128, 1024]
.output y f32 [128, 1024]

.sem loaded     ; x is in SBUF
.sem maxed      ; negmax is ready
.sem exped      ; e and sum are ready
.sem normed     ; y is ready

sp.dma_copy dst=sbuf[0:128, 0, [1,1024]]:f32 src=hbm:x[[1024,128], 0, [1,1024]]:f32 signal=loaded+=1

dve.tensor_reduce dst=sbuf[0:128, 12288, [1,1]]:f32 data=sbuf[0:128, 0, [1,1024]]:f32 \
    op=max axes=1 negate wait=loaded>=1 signal=maxed+=1

act.activation dst=sbuf[0:128, 4096, [1,1024]]:f32 data=sbuf[0:128, 0, [1,1024]]:f32 func=exp \
    bias=sbuf[0:128, 12288, [1,1]]:f32 reduce_op=add reduce_cmd=reset_reduce \
    reduce_res=sbuf[0:128, 12292, [1,1]]:f32 wait=maxed>=1 signal=exped+=1

dve.reciprocal dst=sbuf[0:128, 12296, [1,1]]:f32 data=sbuf[0:128, 12292, [1,1]]:f32 wait=exped>=1
dve.tensor_scalar dst=sbuf[0:128, 8192, [1,1024]]:f32 data=sbuf[0:128, 4096, [1,1024]]:f32 \
    op0=multiply operand0=sbuf[0:128, 12296, [1,1]]:f32 signal=normed+=1

sp.dma_copy dst=hbm:y[[1024,128], 0, [1,1024]]:f32 src=sbuf[0:128, 8192, [1,1024]]:f32 wait=normed>=1
