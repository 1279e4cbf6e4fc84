; an on-chip operand moved at run time by a register (docs/isa.md, "Run-time offsets")
.input x f32 [8, 32]
.input idx i32 [1]
.output y f32 [8, 16]
sp.dma_copy dst=sbuf[0:8, 0, [1,32]]:f32 src=hbm:x[[32,8], 0, [1,32]]:f32 signal=s0+=1
sp.dma_copy dst=sbuf[0:1, 512, [1,1]]:i32 src=hbm:idx[[1,1], 0, [1,1]]:i32 signal=s0+=1
dve.reg_load rd=60 src=sbuf[0:1, 512, [1,1]]:i32 wait=s0>=2
dve.reg_alu rd=60 rs=60 op=multiply imm=4
dve.tensor_copy dst=sbuf[0:8, 256, [1,16]]:f32 src=sbuf[0:8, 0, [1,16]]:f32+r60<=64 signal=s1+=1
sp.dma_copy dst=hbm:y[[16,8], 0, [1,16]]:f32 src=sbuf[0:8, 256, [1,16]]:f32 wait=s1>=1
