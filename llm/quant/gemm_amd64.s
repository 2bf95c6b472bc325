//go:build amd64 && !noasm

#include "textflag.h"

// Kernels on interleaved rows (repack.go): eight (Y registers) or sixteen (Z registers) rows
// per group, their block quants interleaved in 4-byte groups so that one VPDPBUSD multiplies
// four quants of every row by the same four activation quants (broadcast), leaving each row's
// sums in its own lane: no horizontal additions. A group's block: G F16 scales, then the
// 4-byte groups of all rows (QOFF = 2G, KSTRIDE = 4G). Weights are unsigned (Q4_0 nibbles;
// Q8_0 quants + 128), so integer sums start from the activation's correction (Vec.Q8Neg8,
// Vec.Q8Neg128). The float operations are those of the row kernels, so that results equal
// Dot's bit for bit: Q4_0 per block and row acc += float(total) * (d_w*d_x), one fused
// multiply-add, blocks in order (the `shift` argument is 0); the Q8_0 gemv keeps Dot's eight
// sums per row. The Q8_0 gemm sums block totals as Q4_0 (the correction Q8Neg8 << 4, i.e.
// -128 x sum(x)), close to Dot but not bit for bit.

// Q8STEP: four quants of every row (at WOFF(SI)) against four activation quants of vector A
// (XOFF(R10)) and of vector B (XOFF(R13)), into integer accumulators IA and IB.
#define Q8STEP(WOFF, XOFF, W, XA, XB, IA, IB) \
	VMOVDQU32 WOFF(SI), W \
	VPBROADCASTD XOFF(R10), XA \
	VPBROADCASTD XOFF(R13), XB \
	VPDPBUSD XA, W, IA \
	VPDPBUSD XB, W, IB

#define Q8BODY(Q, KS, W, WH, M, XA, XB, IA, IA2, IB, IB2) \
	Q8STEP(Q+0*KS, 2, W, XA, XB, IA, IB) \
	Q8STEP(Q+1*KS, 6, W, XA, XB, IA2, IB2) \
	Q8STEP(Q+2*KS, 10, W, XA, XB, IA, IB) \
	Q8STEP(Q+3*KS, 14, W, XA, XB, IA2, IB2) \
	Q8STEP(Q+4*KS, 18, W, XA, XB, IA, IB) \
	Q8STEP(Q+5*KS, 22, W, XA, XB, IA2, IB2) \
	Q8STEP(Q+6*KS, 26, W, XA, XB, IA, IB) \
	Q8STEP(Q+7*KS, 30, W, XA, XB, IA2, IB2)

// Q4STEP: four packed bytes of every row: low nibbles against activation quants XLO.., high
// nibbles against XHI.. (M holds 0x0f in every byte).
#define Q4STEP(WOFF, XLO, XHI, W, WH, M, XA, XB, IA, IA2, IB, IB2) \
	VMOVDQU32 WOFF(SI), W \
	VPSRLW $4, W, WH \
	VPANDD M, W, W \
	VPANDD M, WH, WH \
	VPBROADCASTD XLO(R10), XA \
	VPBROADCASTD XLO(R13), XB \
	VPDPBUSD XA, W, IA \
	VPDPBUSD XB, W, IB \
	VPBROADCASTD XHI(R10), XA \
	VPBROADCASTD XHI(R13), XB \
	VPDPBUSD XA, WH, IA2 \
	VPDPBUSD XB, WH, IB2

#define Q4STEP1(WOFF, XLO, XHI, W, WH, M, XA, XA2, IA, IA2) \
	VMOVDQU32 WOFF(SI), W \
	VPSRLW $4, W, WH \
	VPANDD M, W, W \
	VPANDD M, WH, WH \
	VPBROADCASTD XLO(R10), XA \
	VPBROADCASTD XHI(R10), XA2 \
	VPDPBUSD XA, W, IA \
	VPDPBUSD XA2, WH, IA2

#define Q4BODY(Q, KS, W, WH, M, XA, XB, IA, IA2, IB, IB2) \
	Q4STEP(Q+0*KS, 2, 18, W, WH, M, XA, XB, IA, IA2, IB, IB2) \
	Q4STEP(Q+1*KS, 6, 22, W, WH, M, XA, XB, IA, IA2, IB, IB2) \
	Q4STEP(Q+2*KS, 10, 26, W, WH, M, XA, XB, IA, IA2, IB, IB2) \
	Q4STEP(Q+3*KS, 14, 30, W, WH, M, XA, XB, IA, IA2, IB, IB2)

#define Q4BODY1(Q, KS, W, WH, M, XA, XA2, IA, IA2) \
	Q4STEP1(Q+0*KS, 2, 18, W, WH, M, XA, XA2, IA, IA2) \
	Q4STEP1(Q+1*KS, 6, 22, W, WH, M, XA, XA2, IA, IA2) \
	Q4STEP1(Q+2*KS, 10, 26, W, WH, M, XA, XA2, IA, IA2) \
	Q4STEP1(Q+3*KS, 14, 30, W, WH, M, XA, XA2, IA, IA2)

// func gemmQ4_0x8VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)
// Vectors in pairs: A = the first of each pair, B the next (A again when A is the last).
TEXT ·gemmQ4_0x8VNNI(SB), NOSPLIT, $0-48
	MOVQ pack+0(FP), R8
	MOVQ nb+8(FP), CX
	MOVQ shift+16(FP), AX
	MOVQ AX, X15
	MOVQ vecs+24(FP), DX
	MOVQ nvec+32(FP), R9
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Y12
	TESTQ R9, R9
	JZ done
	TESTQ CX, CX
	JZ done
pairs:
	MOVQ DX, DI
	CMPQ R9, $1
	JEQ one
	ADDQ $32, DI
one:
	MOVQ 0(DX), R10
	MOVQ 8(DX), R11
	MOVQ 16(DX), R12
	MOVQ 0(DI), R13
	MOVQ 8(DI), R14
	MOVQ 16(DI), R15
	MOVQ R8, SI
	MOVQ CX, BX
	VPXORD Y0, Y0, Y0
	VPXORD Y1, Y1, Y1
block:
	VPBROADCASTD (R12), Y2
	VPSLLD X15, Y2, Y2
	VPXORD Y3, Y3, Y3
	VPBROADCASTD (R15), Y4
	VPSLLD X15, Y4, Y4
	VPXORD Y5, Y5, Y5
	Q4BODY(16, 32, Y6, Y13, Y12, Y7, Y8, Y2, Y3, Y4, Y5)
	VPADDD Y3, Y2, Y2
	VPADDD Y5, Y4, Y4
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y4, Y4
	VCVTPH2PS (SI), Y9
	VBROADCASTSS (R11), Y10
	VMULPS Y10, Y9, Y10
	VBROADCASTSS (R14), Y11
	VMULPS Y11, Y9, Y11
	VFMADD231PS Y2, Y10, Y0
	VFMADD231PS Y4, Y11, Y1
	ADDQ $144, SI
	ADDQ $34, R10
	ADDQ $34, R13
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ $4, R14
	ADDQ $4, R15
	DECQ BX
	JNZ block
	MOVQ off+40(FP), AX
	MOVQ 24(DX), R10
	VMOVUPS Y0, (R10)(AX*1)
	MOVQ 24(DI), R10
	VMOVUPS Y1, (R10)(AX*1)
	ADDQ $64, DX
	SUBQ $2, R9
	JG pairs
done:
	VZEROUPPER
	RET

// func gemmQ4_0x16VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)
// Vectors in pairs: A = the first of each pair, B the next (A again when A is the last).
TEXT ·gemmQ4_0x16VNNI(SB), NOSPLIT, $0-48
	MOVQ pack+0(FP), R8
	MOVQ nb+8(FP), CX
	MOVQ shift+16(FP), AX
	MOVQ AX, X15
	MOVQ vecs+24(FP), DX
	MOVQ nvec+32(FP), R9
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z12
	TESTQ R9, R9
	JZ done
	TESTQ CX, CX
	JZ done
pairs:
	MOVQ DX, DI
	CMPQ R9, $1
	JEQ one
	ADDQ $32, DI
one:
	MOVQ 0(DX), R10
	MOVQ 8(DX), R11
	MOVQ 16(DX), R12
	MOVQ 0(DI), R13
	MOVQ 8(DI), R14
	MOVQ 16(DI), R15
	MOVQ R8, SI
	MOVQ CX, BX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
block:
	VPBROADCASTD (R12), Z2
	VPSLLD X15, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPBROADCASTD (R15), Z4
	VPSLLD X15, Z4, Z4
	VPXORD Z5, Z5, Z5
	Q4BODY(32, 64, Z6, Z13, Z12, Z7, Z8, Z2, Z3, Z4, Z5)
	VPADDD Z3, Z2, Z2
	VPADDD Z5, Z4, Z4
	VCVTDQ2PS Z2, Z2
	VCVTDQ2PS Z4, Z4
	VCVTPH2PS (SI), Z9
	VBROADCASTSS (R11), Z10
	VMULPS Z10, Z9, Z10
	VBROADCASTSS (R14), Z11
	VMULPS Z11, Z9, Z11
	VFMADD231PS Z2, Z10, Z0
	VFMADD231PS Z4, Z11, Z1
	ADDQ $288, SI
	ADDQ $34, R10
	ADDQ $34, R13
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ $4, R14
	ADDQ $4, R15
	DECQ BX
	JNZ block
	MOVQ off+40(FP), AX
	MOVQ 24(DX), R10
	VMOVUPS Z0, (R10)(AX*1)
	MOVQ 24(DI), R10
	VMOVUPS Z1, (R10)(AX*1)
	ADDQ $64, DX
	SUBQ $2, R9
	JG pairs
done:
	VZEROUPPER
	RET

// func gemmQ8_0x8VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)
// Vectors in pairs: A = the first of each pair, B the next (A again when A is the last).
// Block totals (integers, from Q8Neg8 << 4), as for Q4_0: not the order of Dot, whose eight
// float sums per row would double the float work of a batch.
TEXT ·gemmQ8_0x8VNNI(SB), NOSPLIT, $0-48
	MOVQ pack+0(FP), R8
	MOVQ nb+8(FP), CX
	MOVQ shift+16(FP), AX
	MOVQ AX, X15
	MOVQ vecs+24(FP), DX
	MOVQ nvec+32(FP), R9
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Y12
	TESTQ R9, R9
	JZ done
	TESTQ CX, CX
	JZ done
pairs:
	MOVQ DX, DI
	CMPQ R9, $1
	JEQ one
	ADDQ $32, DI
one:
	MOVQ 0(DX), R10
	MOVQ 8(DX), R11
	MOVQ 16(DX), R12
	MOVQ 0(DI), R13
	MOVQ 8(DI), R14
	MOVQ 16(DI), R15
	MOVQ R8, SI
	MOVQ CX, BX
	VPXORD Y0, Y0, Y0
	VPXORD Y1, Y1, Y1
block:
	VPBROADCASTD (R12), Y2
	VPSLLD X15, Y2, Y2
	VPXORD Y3, Y3, Y3
	VPBROADCASTD (R15), Y4
	VPSLLD X15, Y4, Y4
	VPXORD Y5, Y5, Y5
	Q8BODY(16, 32, Y6, Y13, Y12, Y7, Y8, Y2, Y3, Y4, Y5)
	VPADDD Y3, Y2, Y2
	VPADDD Y5, Y4, Y4
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y4, Y4
	VCVTPH2PS (SI), Y9
	VBROADCASTSS (R11), Y10
	VMULPS Y10, Y9, Y10
	VBROADCASTSS (R14), Y11
	VMULPS Y11, Y9, Y11
	VFMADD231PS Y2, Y10, Y0
	VFMADD231PS Y4, Y11, Y1
	ADDQ $272, SI
	ADDQ $34, R10
	ADDQ $34, R13
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ $4, R14
	ADDQ $4, R15
	DECQ BX
	JNZ block
	MOVQ off+40(FP), AX
	MOVQ 24(DX), R10
	VMOVUPS Y0, (R10)(AX*1)
	MOVQ 24(DI), R10
	VMOVUPS Y1, (R10)(AX*1)
	ADDQ $64, DX
	SUBQ $2, R9
	JG pairs
done:
	VZEROUPPER
	RET

// func gemmQ8_0x16VNNI(pack *byte, nb, shift int, vecs *vecRef, nvec, off int)
// Vectors in pairs: A = the first of each pair, B the next (A again when A is the last).
// Block totals (integers, from Q8Neg8 << 4), as for Q4_0: not the order of Dot, whose eight
// float sums per row would double the float work of a batch.
TEXT ·gemmQ8_0x16VNNI(SB), NOSPLIT, $0-48
	MOVQ pack+0(FP), R8
	MOVQ nb+8(FP), CX
	MOVQ shift+16(FP), AX
	MOVQ AX, X15
	MOVQ vecs+24(FP), DX
	MOVQ nvec+32(FP), R9
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z12
	TESTQ R9, R9
	JZ done
	TESTQ CX, CX
	JZ done
pairs:
	MOVQ DX, DI
	CMPQ R9, $1
	JEQ one
	ADDQ $32, DI
one:
	MOVQ 0(DX), R10
	MOVQ 8(DX), R11
	MOVQ 16(DX), R12
	MOVQ 0(DI), R13
	MOVQ 8(DI), R14
	MOVQ 16(DI), R15
	MOVQ R8, SI
	MOVQ CX, BX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
block:
	VPBROADCASTD (R12), Z2
	VPSLLD X15, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPBROADCASTD (R15), Z4
	VPSLLD X15, Z4, Z4
	VPXORD Z5, Z5, Z5
	Q8BODY(32, 64, Z6, Z13, Z12, Z7, Z8, Z2, Z3, Z4, Z5)
	VPADDD Z3, Z2, Z2
	VPADDD Z5, Z4, Z4
	VCVTDQ2PS Z2, Z2
	VCVTDQ2PS Z4, Z4
	VCVTPH2PS (SI), Z9
	VBROADCASTSS (R11), Z10
	VMULPS Z10, Z9, Z10
	VBROADCASTSS (R14), Z11
	VMULPS Z11, Z9, Z11
	VFMADD231PS Z2, Z10, Z0
	VFMADD231PS Z4, Z11, Z1
	ADDQ $544, SI
	ADDQ $34, R10
	ADDQ $34, R13
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ $4, R14
	ADDQ $4, R15
	DECQ BX
	JNZ block
	MOVQ off+40(FP), AX
	MOVQ 24(DX), R10
	VMOVUPS Z0, (R10)(AX*1)
	MOVQ 24(DI), R10
	VMOVUPS Z1, (R10)(AX*1)
	ADDQ $64, DX
	SUBQ $2, R9
	JG pairs
done:
	VZEROUPPER
	RET

// func gemvQ4_0x8VNNI(pack *byte, nb, shift int, x *byte, d *float32, neg *int32, groups int, out *float32)
TEXT ·gemvQ4_0x8VNNI(SB), NOSPLIT, $0-64
	MOVQ pack+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ shift+16(FP), AX
	MOVQ AX, X15
	MOVQ groups+48(FP), R9
	MOVQ out+56(FP), DI
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Y12
	TESTQ R9, R9
	JZ done
	TESTQ CX, CX
	JZ done
group:
	MOVQ x+24(FP), R10
	MOVQ d+32(FP), R11
	MOVQ neg+40(FP), R12
	MOVQ CX, BX
	VPXORD Y0, Y0, Y0
block:
	VPBROADCASTD (R12), Y2
	VPSLLD X15, Y2, Y2
	VPXORD Y3, Y3, Y3
	Q4BODY1(16, 32, Y6, Y13, Y12, Y7, Y8, Y2, Y3)
	VPADDD Y3, Y2, Y2
	VCVTDQ2PS Y2, Y2
	VCVTPH2PS (SI), Y9
	VBROADCASTSS (R11), Y10
	VMULPS Y10, Y9, Y10
	VFMADD231PS Y2, Y10, Y0
	ADDQ $144, SI
	ADDQ $34, R10
	ADDQ $4, R11
	ADDQ $4, R12
	DECQ BX
	JNZ block
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ R9
	JNZ group
done:
	VZEROUPPER
	RET

// func gemvQ4_0x16VNNI(pack *byte, nb, shift int, x *byte, d *float32, neg *int32, groups int, out *float32)
TEXT ·gemvQ4_0x16VNNI(SB), NOSPLIT, $0-64
	MOVQ pack+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ shift+16(FP), AX
	MOVQ AX, X15
	MOVQ groups+48(FP), R9
	MOVQ out+56(FP), DI
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z12
	TESTQ R9, R9
	JZ done
	TESTQ CX, CX
	JZ done
group:
	MOVQ x+24(FP), R10
	MOVQ d+32(FP), R11
	MOVQ neg+40(FP), R12
	MOVQ CX, BX
	VPXORD Z0, Z0, Z0
block:
	VPBROADCASTD (R12), Z2
	VPSLLD X15, Z2, Z2
	VPXORD Z3, Z3, Z3
	Q4BODY1(32, 64, Z6, Z13, Z12, Z7, Z8, Z2, Z3)
	VPADDD Z3, Z2, Z2
	VCVTDQ2PS Z2, Z2
	VCVTPH2PS (SI), Z9
	VBROADCASTSS (R11), Z10
	VMULPS Z10, Z9, Z10
	VFMADD231PS Z2, Z10, Z0
	ADDQ $288, SI
	ADDQ $34, R10
	ADDQ $4, R11
	ADDQ $4, R12
	DECQ BX
	JNZ block
	VMOVUPS Z0, (DI)
	ADDQ $64, DI
	DECQ R9
	JNZ group
done:
	VZEROUPPER
	RET

// func gemvQ8_0x8VNNI(pack *byte, nb int, x *byte, d *float32, corr *int32, groups int, out *float32)
// Q8_0 keeps the row kernels' order (dotQ8_0AVX2, llama.cpp's): per row eight float sums,
// sum k of each block's products of quants 4k..4k+3 times d_w*d_x, added up at the end as
// ggml's hsum_float_8 does. Each 4-quant sum starts from Vec.Q8Neg128 (the +128 of the
// stored quants).
TEXT ·gemvQ8_0x8VNNI(SB), NOSPLIT, $0-56
	MOVQ pack+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ groups+40(FP), R9
	MOVQ out+48(FP), DI
	TESTQ R9, R9
	JZ done
	TESTQ CX, CX
	JZ done
group:
	MOVQ x+16(FP), R10
	MOVQ d+24(FP), R11
	MOVQ corr+32(FP), R12
	MOVQ CX, BX
	VPXORD Y16, Y16, Y16
	VPXORD Y17, Y17, Y17
	VPXORD Y18, Y18, Y18
	VPXORD Y19, Y19, Y19
	VPXORD Y20, Y20, Y20
	VPXORD Y21, Y21, Y21
	VPXORD Y22, Y22, Y22
	VPXORD Y23, Y23, Y23
block:
	VCVTPH2PS (SI), Y9
	VBROADCASTSS (R11), Y10
	VMULPS Y10, Y9, Y10
	VPBROADCASTD 0(R12), Y0
	VMOVDQU32 16(SI), Y8
	VPBROADCASTD 2(R10), Y11
	VPDPBUSD Y11, Y8, Y0
	VCVTDQ2PS Y0, Y0
	VFMADD231PS Y0, Y10, Y16
	VPBROADCASTD 4(R12), Y1
	VMOVDQU32 48(SI), Y8
	VPBROADCASTD 6(R10), Y11
	VPDPBUSD Y11, Y8, Y1
	VCVTDQ2PS Y1, Y1
	VFMADD231PS Y1, Y10, Y17
	VPBROADCASTD 8(R12), Y2
	VMOVDQU32 80(SI), Y8
	VPBROADCASTD 10(R10), Y11
	VPDPBUSD Y11, Y8, Y2
	VCVTDQ2PS Y2, Y2
	VFMADD231PS Y2, Y10, Y18
	VPBROADCASTD 12(R12), Y3
	VMOVDQU32 112(SI), Y8
	VPBROADCASTD 14(R10), Y11
	VPDPBUSD Y11, Y8, Y3
	VCVTDQ2PS Y3, Y3
	VFMADD231PS Y3, Y10, Y19
	VPBROADCASTD 16(R12), Y4
	VMOVDQU32 144(SI), Y8
	VPBROADCASTD 18(R10), Y11
	VPDPBUSD Y11, Y8, Y4
	VCVTDQ2PS Y4, Y4
	VFMADD231PS Y4, Y10, Y20
	VPBROADCASTD 20(R12), Y5
	VMOVDQU32 176(SI), Y8
	VPBROADCASTD 22(R10), Y11
	VPDPBUSD Y11, Y8, Y5
	VCVTDQ2PS Y5, Y5
	VFMADD231PS Y5, Y10, Y21
	VPBROADCASTD 24(R12), Y6
	VMOVDQU32 208(SI), Y8
	VPBROADCASTD 26(R10), Y11
	VPDPBUSD Y11, Y8, Y6
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y6, Y10, Y22
	VPBROADCASTD 28(R12), Y7
	VMOVDQU32 240(SI), Y8
	VPBROADCASTD 30(R10), Y11
	VPDPBUSD Y11, Y8, Y7
	VCVTDQ2PS Y7, Y7
	VFMADD231PS Y7, Y10, Y23
	ADDQ $272, SI
	ADDQ $34, R10
	ADDQ $4, R11
	ADDQ $32, R12
	DECQ BX
	JNZ block
	VADDPS Y20, Y16, Y16
	VADDPS Y22, Y18, Y18
	VADDPS Y21, Y17, Y17
	VADDPS Y23, Y19, Y19
	VADDPS Y18, Y16, Y16
	VADDPS Y19, Y17, Y17
	VADDPS Y17, Y16, Y16
	VMOVUPS Y16, (DI)
	ADDQ $32, DI
	DECQ R9
	JNZ group
done:
	VZEROUPPER
	RET

// func gemvQ8_0x16VNNI(pack *byte, nb int, x *byte, d *float32, corr *int32, groups int, out *float32)
// Q8_0 keeps the row kernels' order (dotQ8_0AVX2, llama.cpp's): per row eight float sums,
// sum k of each block's products of quants 4k..4k+3 times d_w*d_x, added up at the end as
// ggml's hsum_float_8 does. Each 4-quant sum starts from Vec.Q8Neg128 (the +128 of the
// stored quants).
TEXT ·gemvQ8_0x16VNNI(SB), NOSPLIT, $0-56
	MOVQ pack+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ groups+40(FP), R9
	MOVQ out+48(FP), DI
	TESTQ R9, R9
	JZ done
	TESTQ CX, CX
	JZ done
group:
	MOVQ x+16(FP), R10
	MOVQ d+24(FP), R11
	MOVQ corr+32(FP), R12
	MOVQ CX, BX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
block:
	VCVTPH2PS (SI), Z9
	VBROADCASTSS (R11), Z10
	VMULPS Z10, Z9, Z10
	VPBROADCASTD 0(R12), Z0
	VMOVDQU32 32(SI), Z8
	VPBROADCASTD 2(R10), Z11
	VPDPBUSD Z11, Z8, Z0
	VCVTDQ2PS Z0, Z0
	VFMADD231PS Z0, Z10, Z16
	VPBROADCASTD 4(R12), Z1
	VMOVDQU32 96(SI), Z8
	VPBROADCASTD 6(R10), Z11
	VPDPBUSD Z11, Z8, Z1
	VCVTDQ2PS Z1, Z1
	VFMADD231PS Z1, Z10, Z17
	VPBROADCASTD 8(R12), Z2
	VMOVDQU32 160(SI), Z8
	VPBROADCASTD 10(R10), Z11
	VPDPBUSD Z11, Z8, Z2
	VCVTDQ2PS Z2, Z2
	VFMADD231PS Z2, Z10, Z18
	VPBROADCASTD 12(R12), Z3
	VMOVDQU32 224(SI), Z8
	VPBROADCASTD 14(R10), Z11
	VPDPBUSD Z11, Z8, Z3
	VCVTDQ2PS Z3, Z3
	VFMADD231PS Z3, Z10, Z19
	VPBROADCASTD 16(R12), Z4
	VMOVDQU32 288(SI), Z8
	VPBROADCASTD 18(R10), Z11
	VPDPBUSD Z11, Z8, Z4
	VCVTDQ2PS Z4, Z4
	VFMADD231PS Z4, Z10, Z20
	VPBROADCASTD 20(R12), Z5
	VMOVDQU32 352(SI), Z8
	VPBROADCASTD 22(R10), Z11
	VPDPBUSD Z11, Z8, Z5
	VCVTDQ2PS Z5, Z5
	VFMADD231PS Z5, Z10, Z21
	VPBROADCASTD 24(R12), Z6
	VMOVDQU32 416(SI), Z8
	VPBROADCASTD 26(R10), Z11
	VPDPBUSD Z11, Z8, Z6
	VCVTDQ2PS Z6, Z6
	VFMADD231PS Z6, Z10, Z22
	VPBROADCASTD 28(R12), Z7
	VMOVDQU32 480(SI), Z8
	VPBROADCASTD 30(R10), Z11
	VPDPBUSD Z11, Z8, Z7
	VCVTDQ2PS Z7, Z7
	VFMADD231PS Z7, Z10, Z23
	ADDQ $544, SI
	ADDQ $34, R10
	ADDQ $4, R11
	ADDQ $32, R12
	DECQ BX
	JNZ block
	VADDPS Z20, Z16, Z16
	VADDPS Z22, Z18, Z18
	VADDPS Z21, Z17, Z17
	VADDPS Z23, Z19, Z19
	VADDPS Z18, Z16, Z16
	VADDPS Z19, Z17, Z17
	VADDPS Z17, Z16, Z16
	VMOVUPS Z16, (DI)
	ADDQ $64, DI
	DECQ R9
	JNZ group
done:
	VZEROUPPER
	RET
