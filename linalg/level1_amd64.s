//go:build !noasm

#include "textflag.h"

// Level-1 loops of the LU panel (HPL's pfact: pivot search, scaling, rank-1 updates) in
// AVX2+FMA, 16 elements per iteration, then 4, then one at a time.

// func axpyAVX(n int, alpha float64, x, y *float64)
// y[i] += alpha*x[i] for i < n (one rounding: fused multiply-add).
TEXT ·axpyAVX(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	VBROADCASTSD alpha+8(FP), Y0
	MOVQ x+16(FP), SI
	MOVQ y+24(FP), DI
axpy16:
	CMPQ CX, $16
	JLT axpy4
	VMOVUPD (SI), Y1
	VMOVUPD 32(SI), Y2
	VMOVUPD 64(SI), Y3
	VMOVUPD 96(SI), Y4
	VMOVUPD (DI), Y5
	VMOVUPD 32(DI), Y6
	VMOVUPD 64(DI), Y7
	VMOVUPD 96(DI), Y8
	VFMADD231PD Y1, Y0, Y5
	VFMADD231PD Y2, Y0, Y6
	VFMADD231PD Y3, Y0, Y7
	VFMADD231PD Y4, Y0, Y8
	VMOVUPD Y5, (DI)
	VMOVUPD Y6, 32(DI)
	VMOVUPD Y7, 64(DI)
	VMOVUPD Y8, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $16, CX
	JMP axpy16
axpy4:
	CMPQ CX, $4
	JLT axpy1
	VMOVUPD (SI), Y1
	VMOVUPD (DI), Y5
	VFMADD231PD Y1, Y0, Y5
	VMOVUPD Y5, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $4, CX
	JMP axpy4
axpy1:
	TESTQ CX, CX
	JEQ axpydone
	VMOVSD (SI), X1
	VMOVSD (DI), X5
	VFMADD231SD X1, X0, X5
	VMOVSD X5, (DI)
	ADDQ $8, SI
	ADDQ $8, DI
	DECQ CX
	JMP axpy1
axpydone:
	VZEROUPPER
	RET

// func scalAVX(n int, alpha float64, x *float64)
// x[i] *= alpha for i < n.
TEXT ·scalAVX(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	VBROADCASTSD alpha+8(FP), Y0
	MOVQ x+16(FP), DI
scal16:
	CMPQ CX, $16
	JLT scal4
	VMULPD (DI), Y0, Y1
	VMULPD 32(DI), Y0, Y2
	VMULPD 64(DI), Y0, Y3
	VMULPD 96(DI), Y0, Y4
	VMOVUPD Y1, (DI)
	VMOVUPD Y2, 32(DI)
	VMOVUPD Y3, 64(DI)
	VMOVUPD Y4, 96(DI)
	ADDQ $128, DI
	SUBQ $16, CX
	JMP scal16
scal4:
	CMPQ CX, $4
	JLT scal1
	VMULPD (DI), Y0, Y1
	VMOVUPD Y1, (DI)
	ADDQ $32, DI
	SUBQ $4, CX
	JMP scal4
scal1:
	TESTQ CX, CX
	JEQ scaldone
	VMULSD (DI), X0, X1
	VMOVSD X1, (DI)
	ADDQ $8, DI
	DECQ CX
	JMP scal1
scaldone:
	VZEROUPPER
	RET

// func maxAbsAVX(n int, x *float64) float64
// The largest |x[i]| for i < n, NaNs skipped (0 when n == 0 or every element is NaN).
// VMAXPD returns its first Go operand when either input is a NaN: the running maximum.
TEXT ·maxAbsAVX(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	VPCMPEQQ Y15, Y15, Y15
	VPSRLQ $1, Y15, Y15 // 0x7fff...: clears the sign bit
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
max16:
	CMPQ CX, $16
	JLT max4
	VANDPD (SI), Y15, Y4
	VANDPD 32(SI), Y15, Y5
	VANDPD 64(SI), Y15, Y6
	VANDPD 96(SI), Y15, Y7
	VMAXPD Y0, Y4, Y0
	VMAXPD Y1, Y5, Y1
	VMAXPD Y2, Y6, Y2
	VMAXPD Y3, Y7, Y3
	ADDQ $128, SI
	SUBQ $16, CX
	JMP max16
max4:
	CMPQ CX, $4
	JLT maxfold
	VANDPD (SI), Y15, Y4
	VMAXPD Y0, Y4, Y0
	ADDQ $32, SI
	SUBQ $4, CX
	JMP max4
maxfold:
	VMAXPD Y0, Y1, Y0
	VMAXPD Y0, Y2, Y0
	VMAXPD Y0, Y3, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPD X0, X1, X0
	VUNPCKHPD X0, X0, X1
	VMAXSD X0, X1, X0
max1:
	TESTQ CX, CX
	JEQ maxdone
	VMOVSD (SI), X4
	VANDPD X15, X4, X4
	VMAXSD X0, X4, X0
	ADDQ $8, SI
	DECQ CX
	JMP max1
maxdone:
	VMOVSD X0, ret+16(FP)
	VZEROUPPER
	RET

// func findAbsAVX(n int, x *float64, v float64) int
// The first i < n with |x[i]| == v, or n if there is none.
TEXT ·findAbsAVX(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	VBROADCASTSD v+16(FP), Y0
	VPCMPEQQ Y15, Y15, Y15
	VPSRLQ $1, Y15, Y15
	XORQ DX, DX // index of SI's element
find4:
	MOVQ CX, AX
	SUBQ DX, AX
	CMPQ AX, $4
	JLT find1
	VANDPD (SI), Y15, Y1
	VCMPPD $0, Y0, Y1, Y2 // equal, ordered
	VMOVMSKPD Y2, AX
	TESTL AX, AX
	JNE found4
	ADDQ $32, SI
	ADDQ $4, DX
	JMP find4
found4:
	BSFL AX, AX
	ADDQ AX, DX
	JMP finddone
find1:
	CMPQ DX, CX
	JGE finddone
	VMOVSD (SI), X1
	VANDPD X15, X1, X1
	VUCOMISD X0, X1
	JNE next1
	JPC finddone // equal and not unordered
next1:
	ADDQ $8, SI
	INCQ DX
	JMP find1
finddone:
	MOVQ DX, ret+24(FP)
	VZEROUPPER
	RET
