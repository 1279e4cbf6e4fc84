; layernorm.s: y = (x - mean) / sqrt(var + eps) * gamma + beta along each
; row, for x [128 x 1024] f32, with gamma and beta [1024] f32 constants
; (the .npy files that examples/gen_layernorm_params.py writes; assemble
; with -I pointing at them) and eps = 1e-5.
;
; Row p lives in SBUF partition p (1024 f32 = 4 KiB); gamma and beta are
; loaded into every partition (an HBM partition step of 0). Per row:
;   1. Vector engine: negmean = -sum(x) / 1024      (tensor_reduce negate,
;                                                    tensor_scalar)
;                     xc = x + negmean              (tensor_scalar)
;   2. Scalar engine: ssq = sum(xc^2)               (activation square,
;                                                    accumulating in reduce_res)
;                     rstd = rsqrt(ssq/1024 + eps)  (activation rsqrt with
;                                                    scale and bias)
;   3. Vector engine: z = (xc * rstd) * gamma       (scalar_tensor_tensor)
;                     y = z + beta                  (tensor_tensor)
;
; SBUF, bytes within each partition (4 KiB slots):
;   x 0   xc 4096   sq 8192 (squares, unused)   z 12288   y 16384
;   gamma 20480   beta 24576
;   negmean 28672   ssq 28676   rstd 28680      (one f32 each)

.neff layernorm

.input  x f32 [128, 1024]
.output y f32 [128, 1024]
.const  gamma f32 [1024] file="layernorm_gamma.npy"
.const  beta  f32 [1024] file="layernorm_beta.npy"

.sem x_in       ; x is in SBUF
.sem params     ; +1 for gamma, +1 for beta
.sem centered   ; xc is ready
.sem scaled     ; rstd is ready
.sem normed     ; y is ready

sp.dma_copy dst=sbuf[0:128, 0, [1,1024]]:f32 src=hbm:x[[1024,128], 0, [1,1024]]:f32 signal=x_in+=1
sp.dma_copy dst=sbuf[0:128, 20480, [1,1024]]:f32 src=hbm:gamma[[0,128], 0, [1,1024]]:f32 signal=params+=1
sp.dma_copy dst=sbuf[0:128, 24576, [1,1024]]:f32 src=hbm:beta[[0,128], 0, [1,1024]]:f32 signal=params+=1

; mean, centred x
dve.tensor_reduce dst=sbuf[0:128, 28672, [1,1]]:f32 data=sbuf[0:128, 0, [1,1024]]:f32 \
    op=add axes=1 negate wait=x_in>=1
dve.tensor_scalar dst=sbuf[0:128, 28672, [1,1]]:f32 data=sbuf[0:128, 28672, [1,1]]:f32 \
    op0=multiply operand0=0.0009765625
dve.tensor_scalar dst=sbuf[0:128, 4096, [1,1024]]:f32 data=sbuf[0:128, 0, [1,1024]]:f32 \
    op0=add operand0=sbuf[0:128, 28672, [1,1]]:f32 signal=centered+=1

; variance and 1 / sqrt(variance + eps)
act.activation dst=sbuf[0:128, 8192, [1,1024]]:f32 data=sbuf[0:128, 4096, [1,1024]]:f32 \
    func=square reduce_op=add reduce_cmd=reset_reduce reduce_res=sbuf[0:128, 28676, [1,1]]:f32 \
    wait=centered>=1
act.activation dst=sbuf[0:128, 28680, [1,1]]:f32 data=sbuf[0:128, 28676, [1,1]]:f32 \
    func=rsqrt scale=0.0009765625 bias=1e-05 signal=scaled+=1

; normalise, scale and shift
dve.scalar_tensor_tensor dst=sbuf[0:128, 12288, [1,1024]]:f32 data=sbuf[0:128, 4096, [1,1024]]:f32 \
    op0=multiply operand0=sbuf[0:128, 28680, [1,1]]:f32 \
    op1=multiply operand1=sbuf[0:128, 20480, [1,1024]]:f32 wait=scaled>=1 wait=params>=2
dve.tensor_tensor dst=sbuf[0:128, 16384, [1,1024]]:f32 data1=sbuf[0:128, 12288, [1,1024]]:f32 \
    data2=sbuf[0:128, 24576, [1,1024]]:f32 op=add signal=normed+=1

sp.dma_copy dst=hbm:y[[1024,128], 0, [1,1024]]:f32 src=sbuf[0:128, 16384, [1,1024]]:f32 wait=normed>=1
