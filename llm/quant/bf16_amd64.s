//go:build amd64 && !noasm

#include "textflag.h"

// BF16 rows against a BF16 vector (AVX2): both widened to float32 by a zero extension and a
// shift by 16, multiplied (VMULPS) and added (VADDPS) into four accumulators of eight lanes,
// element i into lane i%8 of accumulator (i/8)%4; at the end the accumulators are added
// (0+1, 2+3, then the two) and the eight lanes reduced as HSUM. dotBF16Lanes is the Go twin,
// the same operations in the same order.

// BF(OFF, B, Y): the eight BF16 at OFF(B) as float32 in Y.
#define BF(OFF, B, Y) \
	VPMOVZXWD OFF(B), Y \
	VPSLLD $16, Y, Y

// func rowsBF16AVX2(w *byte, stride int, x *uint16, n, rows int, out *float32)
// n: a multiple of 32. Registers: SI row, AX stride, DI x, CX n/32, DX rows, R9 out; R10 the
// row's position, R11 x's, BX steps left.
TEXT ·rowsBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ rows+32(FP), DX
	MOVQ out+40(FP), R9
	SHRQ $5, CX
	TESTQ DX, DX
	JZ donebf
	TESTQ CX, CX
	JZ donebf

rowbf:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

stepbf:
	PREFETCHT0 2048(R10)
	BF(0, R10, Y4)
	BF(0, R11, Y5)
	VMULPS Y5, Y4, Y4
	VADDPS Y4, Y0, Y0
	BF(16, R10, Y6)
	BF(16, R11, Y7)
	VMULPS Y7, Y6, Y6
	VADDPS Y6, Y1, Y1
	BF(32, R10, Y8)
	BF(32, R11, Y9)
	VMULPS Y9, Y8, Y8
	VADDPS Y8, Y2, Y2
	BF(48, R10, Y10)
	BF(48, R11, Y11)
	VMULPS Y11, Y10, Y10
	VADDPS Y10, Y3, Y3
	ADDQ $64, R10
	ADDQ $64, R11
	DECQ BX
	JNZ stepbf
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R9)
	ADDQ $4, R9
	ADDQ AX, SI
	DECQ DX
	JNZ rowbf

donebf:
	VZEROUPPER
	RET
