.const a u64 [2] = 18446744073709551615, 0
.const f bf16 [2] = 1.5, bits:0x7fc1
.const g f16 [2] = 0.000061035156, -inf
.const j f32 [2] = -0, 3.4028235e38
.const m fp8e4 [2] = 1, bits:0x7f
.const r bytes=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0011 member="r w.bin"
.header feature_bits=0x8000000000000001 tpb_per_node=1,0,2
