#include "textflag.h"

// func pairsAVX2(s []byte, a0, b0, a1, b1, orA0, orB0, orA1, orB1 byte) (at int, found bool)
//
// Returns the first index i of s where (s[i]|orA0) == a0 and
// (s[i+1]|orB0) == b0, or (s[i]|orA1) == a1 and (s[i+1]|orB1) == b1, and
// found; else len(s)-1, and not found. Requires AVX2 and len(s) >= 33:
// the last 32 starts are looked at in one step that overlaps the steps
// before it.
//
// X registers are written with VEX forms only (internal/asm_test.go).

// VBCASTB sets every byte of y (and x) to the byte argument arg, by way
// of R8.
#define VBCASTB(arg, x, y) \
	MOVBQZX arg, R8 \
	VMOVQ R8, x \
	VPBROADCASTB x, y

// PAIRS sets BX to a bit per start AX+j (j < 32) of SI where a pair is,
// and the flags to whether there is one.
#define PAIRS \
	VMOVDQU (SI)(AX*1), Y8 \
	VMOVDQU 1(SI)(AX*1), Y9 \
	VPOR     Y4, Y8, Y10 \
	VPCMPEQB Y0, Y10, Y10 \
	VPOR     Y5, Y9, Y11 \
	VPCMPEQB Y1, Y11, Y11 \
	VPAND    Y10, Y11, Y10 \
	VPOR     Y6, Y8, Y12 \
	VPCMPEQB Y2, Y12, Y12 \
	VPOR     Y7, Y9, Y13 \
	VPCMPEQB Y3, Y13, Y13 \
	VPAND    Y12, Y13, Y12 \
	VPOR     Y10, Y12, Y10 \
	VPMOVMSKB Y10, BX \
	TESTL BX, BX

TEXT ·pairsAVX2(SB), NOSPLIT, $0-41
	MOVQ s_base+0(FP), SI
	MOVQ s_len+8(FP), DX
	SUBQ $33, DX                 // the last start whose 33 bytes fit
	VBCASTB(a0+24(FP), X0, Y0)
	VBCASTB(b0+25(FP), X1, Y1)
	VBCASTB(a1+26(FP), X2, Y2)
	VBCASTB(b1+27(FP), X3, Y3)
	VBCASTB(orA0+28(FP), X4, Y4)
	VBCASTB(orB0+29(FP), X5, Y5)
	VBCASTB(orA1+30(FP), X6, Y6)
	VBCASTB(orB1+31(FP), X7, Y7)
	XORQ AX, AX

loop:
	CMPQ AX, DX
	JGE  last
	PAIRS
	JNZ  found
	ADDQ $32, AX
	JMP  loop

last:
	MOVQ DX, AX                  // the last 32 starts; those before AX had none
	PAIRS
	JNZ  found
	VZEROUPPER
	ADDQ $32, DX                 // len(s)-1: every start looked at
	MOVQ DX, at+32(FP)
	MOVB $0, found+40(FP)
	RET

found:
	BSFL BX, BX
	ADDQ BX, AX
	VZEROUPPER
	MOVQ AX, at+32(FP)
	MOVB $1, found+40(FP)
	RET
