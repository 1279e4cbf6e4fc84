; mlp_train.s: one data-parallel SGD step of a two-layer MLP, fp32.
;
; Every rank runs this same NEFF on its own batch (examples/dp_train.c):
;   forward    h = relu(x @ W1)            x [128 x 64], W1 [64 x 128]
;              out = h @ W2                W2 [128 x 16], out [128 x 16]
;   loss       L = sum((out - y)^2) / 128     (squared error, batch mean)
;   backward   dout = (out - y) * 2/128
;              dW2 = h^T @ dout            dh = dout @ W2^T
;              dpre = (h > 0) * dh         dW1 = x^T @ dpre
;   all-reduce (add) of [dW1 | dW2 | L] over every rank of the job
;   update     W1' = sum(dW1) * hp[0] + W1,  W2' = sum(dW2) * hp[0] + W2,
;              loss = sum(L) * hp[1]
; with hp = {-lr / WORLD_SIZE, 1 / WORLD_SIZE} given by the host, so the
; step is plain SGD on the mean loss of the global batch.
;
; The Tensor engine computes dst[M x N] = stationary[K x M]^T x moving[K x N]
; with K on the SBUF partitions, so each product needs its operands with
; the contracted index on the partitions. The kernel therefore keeps both
; orientations of what it needs: x and x^T, y and y^T, W2 and W2^T arrive
; by DMA (x^T etc. by strided loads), h and h^T, out and out^T come from
; two matmuls each (fmaf is symmetric in its two factors, so out^T holds
; exactly the bits of out, transposed).
;
; SBUF, bytes within each partition (partitions used):
;   x      0     [128 x 64]     xT     256   [64 x 128]
;   y      768   [128 x 16]     yT     832   [16 x 128]
;   w1     1344  [64 x 128]     w2     1856  [128 x 16]
;   w2T    1920  [16 x 128]     hp     2432  [128 x 2]
;   h      2440  [128 x 128]    hT     2952  [128 x 128]
;   diff   3464  [128 x 16]     dout   3528  [128 x 16]
;   doutT  3592  [16 x 128]     sq     4104  [128 x 1]
;   sqjunk 4108  [128 x 16]     dpre   4172  [128 x 128]
;   g1     4684  [64 x 128]     g2     5196  [128 x 16]
;   lsum   5260  [1 x 1]        lloc   5264  [1 x 1]
;   G1     5268  [64 x 128]     G2     5780  [128 x 16]
;   Lsum   5844  [1 x 1]        w1n    5848  [64 x 128]
;   w2n    6360  [128 x 16]     lossg  6424  [1 x 1]
; PSUM banks: 0 h_pre, 1 hT_pre, 2 out, 3 outT, 4 dW2, 5 dh, 6 dW1.
; HBM scratch: grads = [dW1 (64*128) | dW2 (128*16) | L] fp32 (10241
; values), gsum the same after the all-reduce.
;
; Semaphores (each counts the instructions that signal it):
;   ld  +1 per input load (8)        mm  +1 per finished matmul (7)
;   rl  +1 per relu / square (3)     dv  +1 at Vector engine milestones (5)
;   ls  +1 when the local loss is in SBUF
;   st  +1 per gradient store (3)    ar  +1 when the all-reduce is done
;   gl  +1 per reduced-gradient load (3)

.neff mlp_train

.input  x  f32 [128, 64]
.input  y  f32 [128, 16]
.input  w1 f32 [64, 128]
.input  w2 f32 [128, 16]
.input  hp f32 [2]
.output w1_out f32 [64, 128]
.output w2_out f32 [128, 16]
.output loss f32 [1]

.scratch grads 40964
.scratch gsum 40964

.sem ld
.sem mm
.sem rl
.sem dv
.sem ls
.sem st
.sem ar
.sem gl

; ---- loads (sync engine)
sp.dma_copy dst=sbuf[0:128, 0, [1,64]]:f32 src=hbm:x[[64,128], 0, [1,64]]:f32 signal=ld+=1
sp.dma_copy dst=sbuf[0:64, 256, [1,128]]:f32 src=hbm:x[[1,64], 0, [64,128]]:f32 signal=ld+=1
sp.dma_copy dst=sbuf[0:128, 768, [1,16]]:f32 src=hbm:y[[16,128], 0, [1,16]]:f32 signal=ld+=1
sp.dma_copy dst=sbuf[0:16, 832, [1,128]]:f32 src=hbm:y[[1,16], 0, [16,128]]:f32 signal=ld+=1
sp.dma_copy dst=sbuf[0:64, 1344, [1,128]]:f32 src=hbm:w1[[128,64], 0, [1,128]]:f32 signal=ld+=1
sp.dma_copy dst=sbuf[0:128, 1856, [1,16]]:f32 src=hbm:w2[[16,128], 0, [1,16]]:f32 signal=ld+=1
sp.dma_copy dst=sbuf[0:16, 1920, [1,128]]:f32 src=hbm:w2[[1,16], 0, [16,128]]:f32 signal=ld+=1
; hp broadcast to every partition (partition step 0)
sp.dma_copy dst=sbuf[0:128, 2432, [1,2]]:f32 src=hbm:hp[[0,128], 0, [1,2]]:f32 signal=ld+=1

; ---- forward: h_pre = x @ W1 and its transpose, relu, out = h @ W2 and its transpose
pe.nc_matmul dst=psum[0:128, 0, [1,128]]:f32 stationary=sbuf[0:64, 256, [1,128]]:f32 \
    moving=sbuf[0:64, 1344, [1,128]]:f32 wait=ld>=8 signal=mm+=1
pe.nc_matmul dst=psum[0:128, 2048, [1,128]]:f32 stationary=sbuf[0:64, 1344, [1,128]]:f32 \
    moving=sbuf[0:64, 256, [1,128]]:f32 signal=mm+=1
act.activation dst=sbuf[0:128, 2440, [1,128]]:f32 data=psum[0:128, 0, [1,128]]:f32 func=relu \
    wait=mm>=1 signal=rl+=1
act.activation dst=sbuf[0:128, 2952, [1,128]]:f32 data=psum[0:128, 2048, [1,128]]:f32 func=relu \
    wait=mm>=2 signal=rl+=1
pe.nc_matmul dst=psum[0:128, 4096, [1,16]]:f32 stationary=sbuf[0:128, 2952, [1,128]]:f32 \
    moving=sbuf[0:128, 1856, [1,16]]:f32 wait=rl>=2 signal=mm+=1
pe.nc_matmul dst=psum[0:16, 6144, [1,128]]:f32 stationary=sbuf[0:128, 1856, [1,16]]:f32 \
    moving=sbuf[0:128, 2952, [1,128]]:f32 signal=mm+=1

; ---- loss gradient: diff = out - y, dout = diff * 2/128, and the same transposed
dve.tensor_tensor dst=sbuf[0:128, 3464, [1,16]]:f32 data1=psum[0:128, 4096, [1,16]]:f32 \
    data2=sbuf[0:128, 768, [1,16]]:f32 op=subtract wait=mm>=3 signal=dv+=1
dve.tensor_scalar dst=sbuf[0:128, 3528, [1,16]]:f32 data=sbuf[0:128, 3464, [1,16]]:f32 \
    op0=multiply operand0=0.015625
dve.tensor_tensor dst=sbuf[0:16, 3592, [1,128]]:f32 data1=psum[0:16, 6144, [1,128]]:f32 \
    data2=sbuf[0:16, 832, [1,128]]:f32 op=subtract wait=mm>=4
dve.tensor_scalar dst=sbuf[0:16, 3592, [1,128]]:f32 data=sbuf[0:16, 3592, [1,128]]:f32 \
    op0=multiply operand0=0.015625 signal=dv+=1

; ---- local loss: per-partition sums of squares, summed over partitions, / 128
act.activation dst=sbuf[0:128, 4108, [1,16]]:f32 data=sbuf[0:128, 3464, [1,16]]:f32 func=square \
    reduce_op=add reduce_cmd=reset_reduce reduce_res=sbuf[0:128, 4104, [1,1]]:f32 \
    wait=dv>=1 signal=rl+=1
pool.tensor_partition_reduce dst=sbuf[0:1, 5260, [1,1]]:f32 data=sbuf[0:128, 4104, [1,1]]:f32 \
    op=add wait=rl>=3
pool.tensor_scalar dst=sbuf[0:1, 5264, [1,1]]:f32 data=sbuf[0:1, 5260, [1,1]]:f32 \
    op0=multiply operand0=0.0078125 signal=ls+=1

; ---- backward: dW2 = h^T @ dout, dh = dout @ W2^T, dpre = (h > 0) * dh, dW1 = x^T @ dpre
pe.nc_matmul dst=psum[0:128, 8192, [1,16]]:f32 stationary=sbuf[0:128, 2440, [1,128]]:f32 \
    moving=sbuf[0:128, 3528, [1,16]]:f32 wait=dv>=2 signal=mm+=1
pe.nc_matmul dst=psum[0:128, 10240, [1,128]]:f32 stationary=sbuf[0:16, 3592, [1,128]]:f32 \
    moving=sbuf[0:16, 1920, [1,128]]:f32 signal=mm+=1
dve.scalar_tensor_tensor dst=sbuf[0:128, 4172, [1,128]]:f32 data=sbuf[0:128, 2440, [1,128]]:f32 \
    op0=greater operand0=0 op1=multiply operand1=psum[0:128, 10240, [1,128]]:f32 wait=mm>=6
dve.tensor_copy dst=sbuf[0:128, 5196, [1,16]]:f32 src=psum[0:128, 8192, [1,16]]:f32 signal=dv+=1
pe.nc_matmul dst=psum[0:64, 12288, [1,128]]:f32 stationary=sbuf[0:128, 0, [1,64]]:f32 \
    moving=sbuf[0:128, 4172, [1,128]]:f32 wait=dv>=3 signal=mm+=1
dve.tensor_copy dst=sbuf[0:64, 4684, [1,128]]:f32 src=psum[0:64, 12288, [1,128]]:f32 \
    wait=mm>=7 signal=dv+=1

; ---- gradients and local loss to HBM, all-reduce, back to SBUF
sp.dma_copy dst=hbm:grads[[128,64], 0, [1,128]]:f32 src=sbuf[0:64, 4684, [1,128]]:f32 \
    wait=dv>=4 signal=st+=1
sp.dma_copy dst=hbm:grads[[16,128], 32768, [1,16]]:f32 src=sbuf[0:128, 5196, [1,16]]:f32 \
    signal=st+=1
sp.dma_copy dst=hbm:grads[[1,1], 40960, [1,1]]:f32 src=sbuf[0:1, 5264, [1,1]]:f32 \
    wait=ls>=1 signal=st+=1
sp.all_reduce dst=hbm:gsum[[1,1], 0, [1,10241]]:f32 src=hbm:grads[[1,1], 0, [1,10241]]:f32 \
    op=add wait=st>=3 signal=ar+=1
sp.dma_copy dst=sbuf[0:64, 5268, [1,128]]:f32 src=hbm:gsum[[128,64], 0, [1,128]]:f32 \
    wait=ar>=1 signal=gl+=1
sp.dma_copy dst=sbuf[0:128, 5780, [1,16]]:f32 src=hbm:gsum[[16,128], 32768, [1,16]]:f32 \
    signal=gl+=1
sp.dma_copy dst=sbuf[0:1, 5844, [1,1]]:f32 src=hbm:gsum[[1,1], 40960, [1,1]]:f32 signal=gl+=1

; ---- SGD update: W' = G * hp[0] + W, loss = Lsum * hp[1]
dve.scalar_tensor_tensor dst=sbuf[0:64, 5848, [1,128]]:f32 data=sbuf[0:64, 5268, [1,128]]:f32 \
    op0=multiply operand0=sbuf[0:64, 2432, [1,1]]:f32 op1=add \
    operand1=sbuf[0:64, 1344, [1,128]]:f32 wait=gl>=3
dve.scalar_tensor_tensor dst=sbuf[0:128, 6360, [1,16]]:f32 data=sbuf[0:128, 5780, [1,16]]:f32 \
    op0=multiply operand0=sbuf[0:128, 2432, [1,1]]:f32 op1=add \
    operand1=sbuf[0:128, 1856, [1,16]]:f32
dve.tensor_scalar dst=sbuf[0:1, 6424, [1,1]]:f32 data=sbuf[0:1, 5844, [1,1]]:f32 \
    op0=multiply operand0=sbuf[0:1, 2436, [1,1]]:f32 signal=dv+=1

; ---- outputs
sp.dma_copy dst=hbm:w1_out[[128,64], 0, [1,128]]:f32 src=sbuf[0:64, 5848, [1,128]]:f32 wait=dv>=5
sp.dma_copy dst=hbm:w2_out[[16,128], 0, [1,16]]:f32 src=sbuf[0:128, 6360, [1,16]]:f32
sp.dma_copy dst=hbm:loss[[1,1], 0, [1,1]]:f32 src=sbuf[0:1, 6424, [1,1]]:f32
