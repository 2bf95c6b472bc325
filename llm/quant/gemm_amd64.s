//go:build amd64 && !noasm

#include "textflag.h"

// Prefill kernels on packed weights (see pack in gemm_amd64.go): eight (Y registers) or
// sixteen (Z registers) rows at a time, their
// block quants interleaved in 4-byte groups so that one VPDPBUSD multiplies four quants of all
// eight or sixteen rows by the same four activation quants (broadcast), leaving each row's sum in its own
// lane: no horizontal additions, and every packed byte serves two activation vectors per load.
// Weights are unsigned (Q4_0 nibbles; Q8_0 quants + 128), so each block's integer sum starts
// from the activation's correction, Vec.Q8Neg8 (-8*sum(x)) shifted left by `shift` (0 for
// Q4_0, 4 for Q8_0: -128*sum(x)). Per block and row: acc += float(total) * (d_w*d_x), blocks in
// order: the same float operations as the Q4_0 row kernel (and llama.cpp's repacked gemm).

// KSTEP: four quants of every packed row (at WOFF(SI)) against four activation quants of
// vector A (XOFF(R10)) and of vector B (XOFF(R13)), into integer accumulators IA and IB.
#define KSTEP(WOFF, XOFF, W, XA, XB, IA, IB) \
	VMOVDQU32 WOFF(SI), W \
	VPBROADCASTD XOFF(R10), XA \
	VPBROADCASTD XOFF(R13), XB \
	VPDPBUSD XA, W, IA \
	VPDPBUSD XB, W, IB

// GEMM(QOFF, KSTRIDE, BLK, regs...): the kernel body for one width: QOFF is where a packed
// block's quants start (after its float32 scales), KSTRIDE the bytes of one 4-quant group of
// all rows, BLK the bytes of a packed block. Pointers: R8 packed rows, CX blocks, X15 shift,
// DX the vecRef table, R9 vectors left.
#define GEMM(QOFF, KSTRIDE, BLK, W, XA, XB, IA, IA2, IB, IB2, FA, FB, S, DA, DB) \
	MOVQ pack+0(FP), R8 \
	MOVQ nb+8(FP), CX \
	MOVQ shift+16(FP), AX \
	MOVQ AX, X15 \
	MOVQ vecs+24(FP), DX \
	MOVQ nvec+32(FP), R9 \
	TESTQ R9, R9 \
	JZ done \
	TESTQ CX, CX \
	JZ done \
pairs: \
	MOVQ DX, DI \
	CMPQ R9, $1 \
	JEQ one \
	ADDQ $32, DI \
one: \
	MOVQ 0(DX), R10 \
	MOVQ 8(DX), R11 \
	MOVQ 16(DX), R12 \
	MOVQ 0(DI), R13 \
	MOVQ 8(DI), R14 \
	MOVQ 16(DI), R15 \
	MOVQ R8, SI \
	MOVQ CX, BX \
	VPXORD FA, FA, FA \
	VPXORD FB, FB, FB \
block: \
	VPBROADCASTD (R12), IA \
	VPSLLD X15, IA, IA \
	VPXORD IA2, IA2, IA2 \
	VPBROADCASTD (R15), IB \
	VPSLLD X15, IB, IB \
	VPXORD IB2, IB2, IB2 \
	KSTEP(QOFF+0*KSTRIDE, 2, W, XA, XB, IA, IB) \
	KSTEP(QOFF+1*KSTRIDE, 6, W, XA, XB, IA2, IB2) \
	KSTEP(QOFF+2*KSTRIDE, 10, W, XA, XB, IA, IB) \
	KSTEP(QOFF+3*KSTRIDE, 14, W, XA, XB, IA2, IB2) \
	KSTEP(QOFF+4*KSTRIDE, 18, W, XA, XB, IA, IB) \
	KSTEP(QOFF+5*KSTRIDE, 22, W, XA, XB, IA2, IB2) \
	KSTEP(QOFF+6*KSTRIDE, 26, W, XA, XB, IA, IB) \
	KSTEP(QOFF+7*KSTRIDE, 30, W, XA, XB, IA2, IB2) \
	VPADDD IA2, IA, IA \
	VPADDD IB2, IB, IB \
	VCVTDQ2PS IA, IA \
	VCVTDQ2PS IB, IB \
	VMOVUPS (SI), S \
	VBROADCASTSS (R11), DA \
	VMULPS DA, S, DA \
	VBROADCASTSS (R14), DB \
	VMULPS DB, S, DB \
	VFMADD231PS IA, DA, FA \
	VFMADD231PS IB, DB, FB \
	ADDQ $BLK, SI \
	ADDQ $34, R10 \
	ADDQ $34, R13 \
	ADDQ $4, R11 \
	ADDQ $4, R12 \
	ADDQ $4, R14 \
	ADDQ $4, R15 \
	DECQ BX \
	JNZ block \
	MOVQ off+40(FP), AX \
	MOVQ 24(DX), R10 \
	VMOVUPS FA, (R10)(AX*1) \
	MOVQ 24(DI), R10 \
	VMOVUPS FB, (R10)(AX*1) \
	ADDQ $64, DX \
	SUBQ $2, R9 \
	JG pairs \
done: \
	VZEROUPPER \
	RET

// func gemmQ0x8VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)
// A = the first vector of each pair, B the next (A again when A is the last).
TEXT ·gemmQ0x8VNNI(SB), NOSPLIT, $0-48
	GEMM(32, 32, 288, Y6, Y7, Y8, Y2, Y3, Y4, Y5, Y0, Y1, Y9, Y10, Y11)

// func gemmQ0x16VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)
TEXT ·gemmQ0x16VNNI(SB), NOSPLIT, $0-48
	GEMM(64, 64, 576, Z6, Z7, Z8, Z2, Z3, Z4, Z5, Z0, Z1, Z9, Z10, Z11)
