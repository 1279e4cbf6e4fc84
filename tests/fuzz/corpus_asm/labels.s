sp.reg_move rd=0 value=4
top:   sp.reg_alu rd=0 rs=0 op=subtract imm=1
pe.jump target=pe_end
pe.nop
sp.branch reg=0 cmp=gt value=0 target=top
pe_end:
pe.halt
sp.jump target=1
.subgraph second
.input a f32 [4]
l: sp.nop
sp.jump target=l
