#include "textflag.h"

// func specialBlocks(b []byte) int
//
// Returns the index of the first byte of b, among its whole 32-byte
// blocks, that is '"', '\\', < 0x20 or >= 0x80; or the length of those
// blocks when there is none. Requires AVX2.
//
// X registers are written with VEX forms only (VMOVQ, not MOVQ): a legacy
// SSE instruction while the Y registers' upper halves are in use costs a
// state transition on Intel cores (about 280 ns each on this project's VM;
// internal/asm_test.go checks).
TEXT ·specialBlocks(SB), NOSPLIT, $0-32
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	ANDQ $~31, DX
	XORQ AX, AX
	MOVQ $0x1f, R8
	VMOVQ R8, X1
	VPBROADCASTB X1, Y1          // 0x1f: bytes greater (signed) are 0x20..0x7f
	MOVQ $0x22, R8
	VMOVQ R8, X2
	VPBROADCASTB X2, Y2          // '"'
	MOVQ $0x5c, R8
	VMOVQ R8, X3
	VPBROADCASTB X3, Y3          // '\\'

loop:
	CMPQ AX, DX
	JGE  done
	VMOVDQU (SI)(AX*1), Y0
	VPCMPGTB Y1, Y0, Y4          // printable ASCII
	VPCMPEQB Y2, Y0, Y5
	VPCMPEQB Y3, Y0, Y6
	VPOR     Y5, Y6, Y5          // quote or backslash
	VPANDN   Y4, Y5, Y7          // printable and neither: plain
	VPMOVMSKB Y7, BX
	NOTL BX
	TESTL BX, BX
	JNZ  found
	ADDQ $32, AX
	JMP  loop

found:
	BSFL BX, BX
	ADDQ BX, AX

done:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET
