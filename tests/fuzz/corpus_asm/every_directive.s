; every directive once
.neff "every \"thing\""
.header version=2.1 build_version="gen 7" uuid=00112233445566778899aabbccddeeff
.input  x f32 [2, 4]
.output y bf16 [8] id=7 align=64 fabric_path=main
.const  w f32 [2, 2] = 1.5, -2, bits:0x7fc00001, inf
.const  z i16 [3] = 7                ; one value fills the shape
.const  raw bytes=00ff10 member=blobs/raw.dat size=8
.scratch tmp 4096 align=128
.scratch tmp2 f32 [16, 16]
.var sb type=state-buffer size=1024
.var v1 type=virtual size=64 backing_off=256
.var ptr type=pointer size=8 ref=tmp
.var tab type=dge-table size=16 list=0,8 ops="[{\"a\": [1, 2]}]"
.sem ready
.sem done 9
.event go
.queue qin type=in num_queues=2 owner=sp pinned instances=qa,qb semaphore_set=1,2 semaphore=3 fabric_path=main
.queue qout type=out
.engine act code act_func_sets=gelu_set,exp_set
.engine pool nocode json=Pool2.json
.desc sp id=1 queue=qin from=x[0, [16,2], [1,16]]:f32 to=tmp[64, [1,32]]:f32 semaphore=4 event=5
.desc sp id=2 instance=qb op=fma from=x[0, [1,32]]:f32 to=tmp[0, [1,32]]:f32 scale=0.25
.desc dve id=0 queue=qout op=max from=x[0, [1,32]] from=tmp[0, [1,32]] to=tmp[32, [1,32]] constant=-3 constant_dtype=i32 remote_semaphores=1,2 function_start=f0 section_start tiling_dims=2 transpose_shape=2,4 transpose_element_size=4
sp.dma_copy dst=sbuf[0:2, 0, [1,4]]:f32 src=hbm:x[[4,2], 0, [1,4]]:f32 signal=ready+=1
dve.tensor_scalar dst=sbuf[0:2, 64, [1,4]]:f32 data=sbuf[0:2, 0, [1,4]]:f32 op0=add operand0=1 wait=ready>=1 signal=done+=1 signal=go=1
sp.sem_wait sem=done value=1
sp.nop wait=go==1
