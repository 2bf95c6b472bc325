//go:build amd64 && !noasm

#include "textflag.h"

// Attention over an F16 cache, all positions in one call: the same float operations, in the
// same order, as DotF16 and AxpyF16 called once per position.

// func dotF16RowsAVX2(q, k *uint16, stride, n, hd int, scale float32, out *float32) float32
// out[p] = (q · k[p*stride/2 : +hd]) * scale for p < n, and their maximum (-Inf when n is 0);
// hd a multiple of 16, stride in bytes.
TEXT ·dotF16RowsAVX2(SB), NOSPLIT, $0-60
	MOVL $0xff800000, AX
	MOVQ AX, X3                // running maximum, -Inf
	MOVSS scale+40(FP), X2
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ stride+16(FP), AX
	MOVQ n+24(FP), DX
	MOVQ hd+32(FP), BX
	MOVQ out+48(FP), R9
	SHRQ $4, BX
	TESTQ DX, DX
	JZ ddone
	TESTQ BX, BX
	JZ ddone

drow:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ BX, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

dloop:
	VCVTPH2PS (R10), Y4
	VCVTPH2PS 16(R10), Y5
	VCVTPH2PS (R11), Y6
	VCVTPH2PS 16(R11), Y7
	VFMADD231PS Y6, Y4, Y0
	VFMADD231PS Y7, Y5, Y1
	ADDQ $32, R10
	ADDQ $32, R11
	DECQ CX
	JNZ dloop

	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMULSS X2, X0, X0
	VMAXSS X3, X0, X3
	MOVSS X0, (R9)
	ADDQ $4, R9
	ADDQ AX, DI
	DECQ DX
	JNZ drow

ddone:
	VZEROUPPER
	MOVSS X3, ret+56(FP)
	RET

// func axpyF16RowsAVX2(out, w *float32, v *uint16, stride, n, hd int)
// out[j] += w[p] * v[p*stride/2 + j] for p < n, p outermost per element; hd a multiple of 32.
// Each 32-float chunk of out stays in registers across all positions.
TEXT ·axpyF16RowsAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ w+8(FP), R8
	MOVQ v+16(FP), SI
	MOVQ stride+24(FP), AX
	MOVQ n+32(FP), DX
	MOVQ hd+40(FP), BX
	SHRQ $5, BX
	TESTQ DX, DX
	JZ adone
	TESTQ BX, BX
	JZ adone

achunk:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ SI, R10
	MOVQ R8, R11
	MOVQ DX, CX

apos:
	VBROADCASTSS (R11), Y8
	VCVTPH2PS (R10), Y4
	VCVTPH2PS 16(R10), Y5
	VCVTPH2PS 32(R10), Y6
	VCVTPH2PS 48(R10), Y7
	VFMADD231PS Y4, Y8, Y0
	VFMADD231PS Y5, Y8, Y1
	VFMADD231PS Y6, Y8, Y2
	VFMADD231PS Y7, Y8, Y3
	ADDQ $4, R11
	ADDQ AX, R10
	DECQ CX
	JNZ apos

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $64, SI
	DECQ BX
	JNZ achunk

adone:
	VZEROUPPER
	RET
