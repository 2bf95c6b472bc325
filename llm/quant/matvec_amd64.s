//go:build amd64 && !noasm

#include "textflag.h"

// Matrix-vector kernels for decode: rows one after the other inside one call (a single
// sequential stream through the weights, prefetched ahead, and no Go call per row), with the
// activation's block scales already in float32 (Vec.D) so that only the weight's scale is
// converted per block. The float operations are in llama.cpp's order, so that greedy decoding
// matches it token for token:
//  - Q8_0 (its AVX2 ggml_vec_dot_q8_0_q8_0): per block acc += (d_w*d_x) * float(s) in 8 lanes,
//    s the block's integer products summed in groups of 4; hsum_float_8 at the end;
//  - Q4_0 (its repacked AVX2 gemv): per block the exact integer total t, then acc += t*(d_w*d_x)
//    in one float, block after block.

#define HSUM(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS T, X, X \
	VMOVHLPS X, X, T \
	VADDPS T, X, X \
	VMOVSHDUP X, T \
	VADDSS T, X, X

// BSCALE(W, XD, D): D = d_w (F16 at W) * d_x (float32 at XD) in 8 lanes.
#define BSCALE(W, XD, D) \
	VPBROADCASTW W, X13 \
	VCVTPH2PS X13, D \
	VBROADCASTSS XD, Y14 \
	VMULPS Y14, D, D

// Q8 block integer dot product into S (int32 lanes), AVX2: VPMADDUBSW on |w| and x*sign(w)
// cannot saturate (|w| <= 128, |x| <= 127); Y15 holds int16 ones.
#define Q8DOT_AVX2(W, X, S) \
	VMOVDQU W, Y10 \
	VMOVDQU X, Y11 \
	VPSIGNB Y10, Y10, Y12 \
	VPSIGNB Y10, Y11, Y11 \
	VPMADDUBSW Y11, Y12, S \
	VPMADDWD Y15, S, S

#define Q8DOT_VNNI(W, X, S) \
	VMOVDQU W, Y10 \
	VMOVDQU X, Y11 \
	VPSIGNB Y10, Y10, Y12 \
	VPSIGNB Y10, Y11, Y11 \
	VPXOR S, S, S \
	VPDPBUSD Y11, Y12, S

// Q4 block: unsigned nibbles u (low half against x[0:16], high half against x[16:32]);
// s = sum(u*x) - 8*sum(x), the second term from NEG (Vec.Q8Neg8). Y9 holds 0x0f bytes.
#define Q4NIB(W) \
	VMOVDQU W, X10 \
	VPSRLW $4, X10, X11 \
	VINSERTI128 $1, X11, Y10, Y10 \
	VPAND Y9, Y10, Y10

#define Q4DOT_AVX2(W, X, NEG, S, SX) \
	Q4NIB(W) \
	VMOVDQU X, Y11 \
	VPMADDUBSW Y11, Y10, S \
	VPMADDWD Y15, S, S \
	VMOVD NEG, X12 \
	VPADDD Y12, S, S

// VMOVD (VEX) zeroes the rest of the register: the accumulator starts as [-8*sum(x), 0...].
#define Q4DOT_VNNI(W, X, NEG, S, SX) \
	Q4NIB(W) \
	VMOVD NEG, SX \
	VPDPBUSD X, Y10, S

#define ARGS \
	MOVQ w+0(FP), SI \
	MOVQ stride+8(FP), AX \
	MOVQ x+16(FP), DI \
	MOVQ xd+24(FP), R8

#define ONES \
	VPCMPEQW Y15, Y15, Y15 \
	VPSRLW $15, Y15, Y15

#define NIBMASK \
	MOVL $0x0f0f0f0f, BX \
	MOVQ BX, X9 \
	VPBROADCASTD X9, Y9

// ROWS_Q8(DOT): the row loop for Q8_0 weights with block kernel DOT (labels are per function).
#define ROWS_Q8(DOT) \
	TESTQ DX, DX \
	JZ done \
row: \
	MOVQ SI, R10 \
	MOVQ DI, R11 \
	MOVQ R8, R12 \
	MOVQ CX, BX \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	CMPQ BX, $2 \
	JLT tail \
pair: \
	PREFETCHT0 2048(R10) \
	BSCALE((R10), (R12), Y2) \
	DOT(2(R10), 2(R11), Y4) \
	VCVTDQ2PS Y4, Y4 \
	VFMADD231PS Y4, Y2, Y0 \
	BSCALE(34(R10), 4(R12), Y3) \
	DOT(36(R10), 36(R11), Y5) \
	VCVTDQ2PS Y5, Y5 \
	VFMADD231PS Y5, Y3, Y0 \
	ADDQ $68, R10 \
	ADDQ $68, R11 \
	ADDQ $8, R12 \
	SUBQ $2, BX \
	CMPQ BX, $2 \
	JGE pair \
tail: \
	TESTQ BX, BX \
	JZ sum \
	BSCALE((R10), (R12), Y2) \
	DOT(2(R10), 2(R11), Y4) \
	VCVTDQ2PS Y4, Y4 \
	VFMADD231PS Y4, Y2, Y0 \
sum: \
	HSUM(Y0, X0, X1) \
	MOVSS X0, (R9) \
	ADDQ $4, R9 \
	ADDQ AX, SI \
	DECQ DX \
	JNZ row \
done: \
	VZEROUPPER \
	RET

// Q4TOT2(WA, XA, NA, WB, XB, NB): the integer totals of blocks a and b in lanes 0 and 1 of X4
// (DOT leaves each block's 8 lane sums, the -8*sum(x) term included).
#define Q4TOT2(DOT, WA, XA, NA, WB, XB, NB) \
	DOT(WA, XA, NA, Y4, X4) \
	DOT(WB, XB, NB, Y5, X5) \
	VPHADDD Y5, Y4, Y4 \
	VEXTRACTI128 $1, Y4, X5 \
	VPADDD X5, X4, X4 \
	VPHADDD X4, X4, X4

// ROWS_Q4(DOT): the row loop for Q4_0 weights (18-byte blocks); R13 walks Vec.Q8Neg8, X0 is
// the row's float sum. Four blocks at a time share the horizontal additions of their totals
// (three VPHADDD for four blocks); their FMAs stay one per block, in order.
#define ROWS_Q4(DOT) \
	TESTQ DX, DX \
	JZ done \
row: \
	MOVQ SI, R10 \
	MOVQ DI, R11 \
	MOVQ R8, R12 \
	MOVQ R14, R13 \
	MOVQ CX, BX \
	VXORPS X0, X0, X0 \
	CMPQ BX, $4 \
	JLT pairs \
quad: \
	PREFETCHT0 2048(R10) \
	PREFETCHT0 2112(R10) \
	DOT(2(R10), 2(R11), (R13), Y4, X4) \
	DOT(20(R10), 36(R11), 4(R13), Y5, X5) \
	VPHADDD Y5, Y4, Y4 \
	DOT(38(R10), 70(R11), 8(R13), Y5, X5) \
	DOT(56(R10), 104(R11), 12(R13), Y6, X6) \
	VPHADDD Y6, Y5, Y5 \
	VPHADDD Y5, Y4, Y4 \
	VEXTRACTI128 $1, Y4, X5 \
	VPADDD X5, X4, X4 \
	VCVTDQ2PS X4, X4 \
	MOVWLZX (R10), R15 \
	VMOVD R15, X6 \
	VPINSRW $1, 18(R10), X6, X6 \
	VPINSRW $2, 36(R10), X6, X6 \
	VPINSRW $3, 54(R10), X6, X6 \
	VCVTPH2PS X6, X6 \
	VMOVUPS (R12), X7 \
	VMULPS X7, X6, X6 \
	VFMADD231SS X4, X6, X0 \
	VMOVSHDUP X4, X13 \
	VMOVSHDUP X6, X14 \
	VFMADD231SS X13, X14, X0 \
	VMOVHLPS X4, X4, X13 \
	VMOVHLPS X6, X6, X14 \
	VFMADD231SS X13, X14, X0 \
	VPSHUFD $0xff, X4, X13 \
	VPSHUFD $0xff, X6, X14 \
	VFMADD231SS X13, X14, X0 \
	ADDQ $72, R10 \
	ADDQ $136, R11 \
	ADDQ $16, R12 \
	ADDQ $16, R13 \
	SUBQ $4, BX \
	CMPQ BX, $4 \
	JGE quad \
pairs: \
	CMPQ BX, $2 \
	JLT tail \
pair: \
	PREFETCHT0 2048(R10) \
	Q4TOT2(DOT, 2(R10), 2(R11), (R13), 20(R10), 36(R11), 4(R13)) \
	VCVTDQ2PS X4, X4 \
	MOVWLZX (R10), R15 \
	MOVWLZX 18(R10), AX \
	SHLL $16, AX \
	ORL AX, R15 \
	VMOVD R15, X6 \
	VCVTPH2PS X6, X6 \
	VMOVQ (R12), X7 \
	VMULPS X7, X6, X6 \
	VFMADD231SS X4, X6, X0 \
	VMOVSHDUP X4, X4 \
	VMOVSHDUP X6, X6 \
	VFMADD231SS X4, X6, X0 \
	ADDQ $36, R10 \
	ADDQ $68, R11 \
	ADDQ $8, R12 \
	ADDQ $8, R13 \
	SUBQ $2, BX \
	CMPQ BX, $2 \
	JGE pair \
tail: \
	TESTQ BX, BX \
	JZ sum \
	Q4TOT2(DOT, 2(R10), 2(R11), (R13), 2(R10), 2(R11), (R13)) \
	VCVTDQ2PS X4, X4 \
	MOVWLZX (R10), R15 \
	VMOVD R15, X6 \
	VCVTPH2PS X6, X6 \
	VMULSS (R12), X6, X6 \
	VFMADD231SS X4, X6, X0 \
sum: \
	MOVQ stride+8(FP), AX \
	MOVSS X0, (R9) \
	ADDQ $4, R9 \
	ADDQ AX, SI \
	DECQ DX \
	JNZ row \
done: \
	VZEROUPPER \
	RET

// func matVecQ8_0AVX2(w *byte, stride int, x *byte, xd *float32, nb, rows int, out *float32)
TEXT ·matVecQ8_0AVX2(SB), NOSPLIT, $0-56
	ARGS
	MOVQ nb+32(FP), CX
	MOVQ rows+40(FP), DX
	MOVQ out+48(FP), R9
	ONES
	ROWS_Q8(Q8DOT_AVX2)

// func matVecQ8_0VNNI(w *byte, stride int, x *byte, xd *float32, nb, rows int, out *float32)
TEXT ·matVecQ8_0VNNI(SB), NOSPLIT, $0-56
	ARGS
	MOVQ nb+32(FP), CX
	MOVQ rows+40(FP), DX
	MOVQ out+48(FP), R9
	ROWS_Q8(Q8DOT_VNNI)

// func matVecQ4_0AVX2(w *byte, stride int, x *byte, xd *float32, neg8 *int32, nb, rows int, out *float32)
TEXT ·matVecQ4_0AVX2(SB), NOSPLIT, $0-64
	ARGS
	MOVQ neg8+32(FP), R14
	MOVQ nb+40(FP), CX
	MOVQ rows+48(FP), DX
	MOVQ out+56(FP), R9
	ONES
	NIBMASK
	ROWS_Q4(Q4DOT_AVX2)

// func matVecQ4_0VNNI(w *byte, stride int, x *byte, xd *float32, neg8 *int32, nb, rows int, out *float32)
TEXT ·matVecQ4_0VNNI(SB), NOSPLIT, $0-64
	ARGS
	MOVQ neg8+32(FP), R14
	MOVQ nb+40(FP), CX
	MOVQ rows+48(FP), DX
	MOVQ out+56(FP), R9
	NIBMASK
	ROWS_Q4(Q4DOT_VNNI)
