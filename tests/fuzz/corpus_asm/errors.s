.input a f32 [4
.const c f32 [2] = 1, 2, 3
sp.jump target=nowhere
loop:
pe.nop
sp.jump target=loop
.desc sp id=0 queue=q from=a[0, [1,16]] to=a[0, [1,16]]
\
