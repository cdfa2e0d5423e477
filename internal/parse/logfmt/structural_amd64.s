#include "textflag.h"

// func structuralAVX2(p *byte, rem int, out *block, nblk int) bool
//
// Fills the nblk blocks at out with the masks (mStart, mSpace, mKeyEnd,
// mQuoted; see scan.go) of the 64-byte blocks at p, of which the first
// rem bytes (possibly none) are the line's and the rest past its end, and
// reports whether any of those rem bytes is >= 0x80. Requires AVX2,
// nblk > 0, and 64 readable bytes at each block that holds any of the rem
// bytes; the others are not read. structuralGeneric in scan_test.go is
// the reference it is tested against.
//
// X registers are written with VEX forms only (VMOVQ, not MOVQ): a legacy
// SSE instruction while the Y registers' upper halves are in use costs a
// state transition on Intel cores (about 280 ns each on this project's VM;
// internal/asm_test.go checks).
TEXT ·structuralAVX2(SB), NOSPLIT, $0-33
	MOVQ p+0(FP), SI
	MOVQ rem+8(FP), DX
	MOVQ out+16(FP), DI
	MOVQ nblk+24(FP), R8         // blocks left
	XORQ R9, R9                  // high bytes seen
	MOVQ $0x20, AX
	VMOVQ AX, X10
	VPBROADCASTB X10, Y10        // ' ': bytes x with min(x, ' ') == x are whitespace
	MOVQ $0x3d, AX
	VMOVQ AX, X11
	VPBROADCASTB X11, Y11        // '='
	MOVQ $0x22, AX
	VMOVQ AX, X12
	VPBROADCASTB X12, Y12        // '"'
	MOVQ $0x5c, AX
	VMOVQ AX, X13
	VPBROADCASTB X13, Y13        // '\\'

loop:
	// R12: the bits of the block at or past the end, ^0 << clamp(DX, 0, 64).
	XORQ R10, R10
	MOVQ DX, CX
	TESTQ CX, CX
	CMOVQLT R10, CX
	MOVQ $-1, R12
	SHLQ CX, R12
	CMPQ DX, $64
	CMOVQGE R10, R12
	TESTQ DX, DX
	JLE empty

	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	VPMINUB Y10, Y0, Y2
	VPCMPEQB Y2, Y0, Y2          // whitespace
	VPCMPEQB Y11, Y0, Y3
	VPCMPEQB Y12, Y0, Y4
	VPCMPEQB Y13, Y0, Y5
	VPOR Y4, Y3, Y3              // '=' or '"'
	VPOR Y4, Y5, Y5              // '"' or '\\'
	VPMINUB Y10, Y1, Y6
	VPCMPEQB Y6, Y1, Y6
	VPCMPEQB Y11, Y1, Y7
	VPCMPEQB Y12, Y1, Y8
	VPCMPEQB Y13, Y1, Y9
	VPOR Y8, Y7, Y7
	VPOR Y8, Y9, Y9

	VPMOVMSKB Y2, AX
	VPMOVMSKB Y6, CX
	SHLQ $32, CX
	ORQ CX, AX                   // AX: whitespace
	VPMOVMSKB Y3, BX
	VPMOVMSKB Y7, CX
	SHLQ $32, CX
	ORQ CX, BX                   // BX: '=' or '"'
	VPMOVMSKB Y5, R11
	VPMOVMSKB Y9, CX
	SHLQ $32, CX
	ORQ CX, R11                  // R11: '"' or '\\'
	VPMOVMSKB Y0, R13
	VPMOVMSKB Y1, CX
	SHLQ $32, CX
	ORQ CX, R13                  // R13: >= 0x80

	MOVQ R12, CX
	NOTQ CX
	ANDQ CX, R13
	ORQ R13, R9
	MOVQ AX, CX
	NOTQ CX
	ORQ R12, CX
	MOVQ CX, 0(DI)               // mStart: not whitespace, or end
	ORQ R12, AX
	MOVQ AX, 8(DI)               // mSpace: whitespace or end
	ORQ AX, BX
	MOVQ BX, 16(DI)              // mKeyEnd: whitespace, '=', '"' or end
	ORQ R12, R11
	MOVQ R11, 24(DI)             // mQuoted: '"', '\\' or end
	JMP next

empty:
	MOVQ R12, 0(DI)
	MOVQ R12, 8(DI)
	MOVQ R12, 16(DI)
	MOVQ R12, 24(DI)

next:
	ADDQ $64, SI
	SUBQ $64, DX
	ADDQ $32, DI
	DECQ R8
	JNZ loop

	VZEROUPPER
	TESTQ R9, R9
	SETNE ret+32(FP)
	RET
