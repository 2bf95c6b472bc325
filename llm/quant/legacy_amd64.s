//go:build amd64 && !noasm

#include "textflag.h"

// Q4_1, Q5_0 and Q5_1 rows against Q8_0/Q8_1 activations (AVX2). A block's 32 weights are
// unpacked to their unsigned quants (0..15 or 0..31) in element order, the qh bits of the
// 5-bit types spread to one byte each by VPSHUFB, VPAND and VPCMPEQB; VPMADDUBSW multiplies
// them with the signed activations (pair sums |s| <= 2*31*128, no saturation) and VPMADDWD
// widens to int32. Q5_0's offset of 16 is taken off the total as 2 x Q8Sum8 (8 x the block's
// activation sum). Integer totals are exact and the float operations per block are the Go
// twins' (dotQ4_1, dotQ5_0, dotQ5_1) in the same order, block after block, so results are
// bit-equal.
//
// Constants: Y15 0x0f bytes, Y14 int16 ones, Y13 the qh byte spread (bytes 0,1 in the low
// lane, 2,3 in the high one, eight times each), Y12 one bit per byte (1, 2, .., 128 repeated),
// Y11 0x10 bytes.

#define LEGCONSTS \
	MOVL $0x0f0f0f0f, R10 \
	VMOVD R10, X15 \
	VPBROADCASTD X15, Y15 \
	MOVL $0x00010001, R10 \
	VMOVD R10, X14 \
	VPBROADCASTD X14, Y14 \
	VMOVDQU legspread<>(SB), Y13 \
	MOVQ $0x8040201008040201, R10 \
	MOVQ R10, X12 \
	VPBROADCASTQ X12, Y12 \
	MOVL $0x10101010, R10 \
	VMOVD R10, X11 \
	VPBROADCASTD X11, Y11

// NIBS(OFF, B, Y, X, T, TX): the 32 nibbles of the 16 bytes at OFF(B) into Y in element order
// (low nibbles, elements 0..15, in the low lane; high nibbles in the high one).
#define NIBS(OFF, B, Y, X, T, TX) \
	VMOVDQU OFF(B), X \
	VPSRLW $4, X, TX \
	VINSERTI128 $1, TX, Y, Y \
	VPAND Y15, Y, Y

// HIBITS(OFF, B, Y, T): OR into Y the fifth bits (0x10) from the qh word at OFF(B), bit j for
// element j.
#define HIBITS(OFF, B, Y, T) \
	VPBROADCASTD OFF(B), T \
	VPSHUFB Y13, T, T \
	VPAND Y12, T, T \
	VPCMPEQB Y12, T, T \
	VPAND Y11, T, T \
	VPOR T, Y, Y

// ISUM(Q, XA, Y, X, T, TX): X (its low dword; Y is its full register) = the exact int32 sum
// of the unsigned quants Q times the 32 int8 at XA. Clobbers T.
#define ISUM(Q, XA, Y, X, T, TX) \
	VPMADDUBSW XA, Q, Y \
	VPMADDWD Y14, Y, Y \
	VEXTRACTI128 $1, Y, TX \
	VPADDD TX, X, X \
	VPHADDD X, X, X \
	VPHADDD X, X, X

// SUBSUM8(P, X, T): X -= 2 * the int32 at P (Q5_0's -16 per element: Q8Sum8 is 8 x the sum).
#define SUBSUM8(P, X, T) \
	VMOVD P, T \
	VPADDD T, T, T \
	VPSUBD T, X, X

// FIN0(X, XD, SUM, T): SUM += float32(X) * (d_w * d_x), d_w the F16 at (R10), d_x the float32
// at XD (dotQ5_0's order). Clobbers T.
#define FIN0(X, XD, SUM, T) \
	VCVTDQ2PS X, X \
	VPBROADCASTW (R10), T \
	VCVTPH2PS T, T \
	VMULSS XD, T, T \
	VMULSS T, X, X \
	VADDSS X, SUM, SUM

// FIN1(X, XD, XS, SUM, T, U): SUM += d_w*d_x*float32(X) + m_w*s_x, d_w and m_w the F16 pair
// at (R10), d_x and s_x the float32s at XD and XS (dotQ4_1's and dotQ5_1's order). Clobbers
// T and U; X6 holds [d_w, m_w] after it.
#define FIN1(X, XD, XS, SUM, T, U) \
	VCVTDQ2PS X, X \
	VMULSS XD, X6, T \
	VMULSS X, T, T \
	VMOVSHDUP X6, U \
	VMULSS XS, U, U \
	VADDSS U, T, T \
	VADDSS T, SUM, SUM

#define LOADDM \
	VMOVD (R10), X6 \
	VCVTPH2PS X6, X6

// Registers of the one-vector kernels: SI row, AX stride, DI x (Q8_0 blocks), R8 xd, R14 xs
// (Q8Sum8 for Q5_0, S for Q8_1), CX nb, DX rows, R9 out; per row R10 block, R11 Q8_0 block,
// R12 its scale, R13 its sum, BX blocks left; X0 the row's float sum.
#define ARGS1 \
	MOVQ w+0(FP), SI \
	MOVQ stride+8(FP), AX \
	MOVQ x+16(FP), DI \
	MOVQ xd+24(FP), R8 \
	MOVQ xs+32(FP), R14 \
	MOVQ nb+40(FP), CX \
	MOVQ rows+48(FP), DX \
	MOVQ out+56(FP), R9

#define ROWSTART \
	MOVQ SI, R10 \
	MOVQ DI, R11 \
	MOVQ R8, R12 \
	MOVQ R14, R13 \
	MOVQ CX, BX \
	VXORPS X0, X0, X0

#define ROWEND(BS, BLK, ROW) \
	ADDQ $BS, R10 \
	ADDQ $34, R11 \
	ADDQ $4, R12 \
	ADDQ $4, R13 \
	DECQ BX \
	JNZ BLK \
	MOVSS X0, (R9) \
	ADDQ $4, R9 \
	ADDQ AX, SI \
	DECQ DX \
	JNZ ROW

// func rowsQ5_0AVX2(w *byte, stride int, x *byte, xd *float32, sum8 *int32, nb, rows int, out *float32)
// Q5_0 blocks: f16 d, qh[4], qs[16].
TEXT ·rowsQ5_0AVX2(SB), NOSPLIT, $0-64
	ARGS1
	LEGCONSTS
	TESTQ DX, DX
	JZ done50
	TESTQ CX, CX
	JZ done50

row50:
	ROWSTART

blk50:
	NIBS(6, R10, Y4, X4, Y5, X5)
	HIBITS(2, R10, Y4, Y5)
	ISUM(Y4, 2(R11), Y4, X4, Y5, X5)
	SUBSUM8((R13), X4, X5)
	FIN0(X4, (R12), X0, X6)
	ROWEND(22, blk50, row50)

done50:
	VZEROUPPER
	RET

// func rowsQ5_1AVX2(w *byte, stride int, x *byte, xd *float32, s *float32, nb, rows int, out *float32)
// Q5_1 blocks: f16 d, f16 m, qh[4], qs[16].
TEXT ·rowsQ5_1AVX2(SB), NOSPLIT, $0-64
	ARGS1
	LEGCONSTS
	TESTQ DX, DX
	JZ done51
	TESTQ CX, CX
	JZ done51

row51:
	ROWSTART

blk51:
	NIBS(8, R10, Y4, X4, Y5, X5)
	HIBITS(4, R10, Y4, Y5)
	ISUM(Y4, 2(R11), Y4, X4, Y5, X5)
	LOADDM
	FIN1(X4, (R12), (R13), X0, X7, X8)
	ROWEND(24, blk51, row51)

done51:
	VZEROUPPER
	RET

// func rowsQ4_1AVX2(w *byte, stride int, x *byte, xd *float32, s *float32, nb, rows int, out *float32)
// Q4_1 blocks: f16 d, f16 m, qs[16].
TEXT ·rowsQ4_1AVX2(SB), NOSPLIT, $0-64
	ARGS1
	LEGCONSTS
	TESTQ DX, DX
	JZ done41
	TESTQ CX, CX
	JZ done41

row41:
	ROWSTART

blk41:
	NIBS(4, R10, Y4, X4, Y5, X5)
	ISUM(Y4, 2(R11), Y4, X4, Y5, X5)
	LOADDM
	FIN1(X4, (R12), (R13), X0, X7, X8)
	ROWEND(20, blk41, row41)

done41:
	VZEROUPPER
	RET

// VPSHUFB indices spreading a broadcast qh word: byte i of the low lane takes qh byte i/8,
// byte i of the high lane qh byte 2+i/8.
DATA legspread<>+0(SB)/8, $0x0000000000000000
DATA legspread<>+8(SB)/8, $0x0101010101010101
DATA legspread<>+16(SB)/8, $0x0202020202020202
DATA legspread<>+24(SB)/8, $0x0303030303030303
GLOBL legspread<>(SB), RODATA|NOPTR, $32
