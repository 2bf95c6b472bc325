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
// Constants: Y13 the qh byte spread (bytes 0,1 in the low lane, 2,3 in the high one, eight
// times each), Y12 one bit per byte (1, 2, .., 128 repeated), Y11 0x10 bytes (the VNNI forms);
// 0x0f bytes, int16 ones, 0x10 bytes and the NIB8 shift counts are read from memory (leg0f,
// legones, legx10, legshift), which leaves registers for the blocks' scales.

#define LEGCONSTS \
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
	VPAND leg0f<>(SB), Y, Y

// HIBITS(OFF, B, Y, T): OR into Y the fifth bits (0x10) from the qh word at OFF(B), bit j for
// element j.
#define HIBITS(OFF, B, Y, T) \
	VPBROADCASTD OFF(B), T \
	VPSHUFB Y13, T, T \
	VPAND Y12, T, T \
	VPCMPEQB Y12, T, T \
	VPAND legx10<>(SB), T, T \
	VPOR T, Y, Y

// ISUM(Q, XA, Y, X, T, TX): X (its low dword; Y is its full register) = the exact int32 sum
// of the unsigned quants Q times the 32 int8 at XA. Clobbers T.
#define ISUM(Q, XA, Y, X, T, TX) \
	VPMADDUBSW XA, Q, Y \
	VPMADDWD legones<>(SB), Y, Y \
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

// NIB8(OFF, Y): NIBS by a 128-bit broadcast and per-lane shifts (0 in the low lane, 4 in the
// high one: legshift), without a lane-crossing shuffle.
#define NIB8(OFF, Y) \
	VBROADCASTI128 OFF(R10), Y \
	VPSRLVQ legshift<>(SB), Y, Y \
	VPAND leg0f<>(SB), Y, Y

// The kernels take eight blocks at a time: eight integer totals (the block dot products
// widened by VPMADDWD and reduced by a VPHADDD tree to one vector of eight), their float terms
// in eight lanes (each lane the Go twin's operations on one block), then the lanes added to
// the row's sum one after the other from the stack, as the twins add block after block. A
// remainder of four to seven blocks goes as a group of four, the rest one block at a time. In
// the one-row kernels (an odd last row) the F16 scales (and minima) of the eight blocks go
// through the stack: 0(SP) the eight float terms, 32(SP) the scales d, 48(SP) the minima m;
// the two-row and two-vector kernels gather them into registers by VPINSRW instead (a load
// of eight halves written by eight stores cannot be forwarded from them and stalls).
//
// BLK50(K, Y), BLK51(K, Y), BLK41(K, Y): block K of the group at R10 against the Q8_0 block
// K at R11: the int32 pair sums in Y, its F16 d (and m) copied to the stack. Clobbers Y5, R13.
#define BLK50(K, Y) \
	MOVWLZX ((K)*22)(R10), R13 \
	MOVW R13, (32+2*(K))(SP) \
	NIB8(((K)*22+6), Y) \
	HIBITS(((K)*22+2), R10, Y, Y5) \
	VPMADDUBSW ((K)*34+2)(R11), Y, Y \
	VPMADDWD legones<>(SB), Y, Y

#define BLK51(K, Y) \
	MOVWLZX ((K)*24)(R10), R13 \
	MOVW R13, (32+2*(K))(SP) \
	MOVWLZX ((K)*24+2)(R10), R13 \
	MOVW R13, (48+2*(K))(SP) \
	NIB8(((K)*24+8), Y) \
	HIBITS(((K)*24+4), R10, Y, Y5) \
	VPMADDUBSW ((K)*34+2)(R11), Y, Y \
	VPMADDWD legones<>(SB), Y, Y

#define BLK41(K, Y) \
	MOVWLZX ((K)*20)(R10), R13 \
	MOVW R13, (32+2*(K))(SP) \
	MOVWLZX ((K)*20+2)(R10), R13 \
	MOVW R13, (48+2*(K))(SP) \
	NIB8(((K)*20+4), Y) \
	VPMADDUBSW ((K)*34+2)(R11), Y, Y \
	VPMADDWD legones<>(SB), Y, Y

// PAIR(BLK, K, YA, YB): blocks K and K+1, their pair sums added pairwise into YA (VPHADDD).
#define PAIR(BLK, K, YA, YB) \
	BLK(K, YA) \
	BLK((K+1), YB) \
	VPHADDD YB, YA, YA

// GROUP8(BLK): the exact integer totals of blocks 0..7 in the int32 lanes 0..7 of Y3.
// Clobbers Y1..Y5.
#define GROUP8(BLK) \
	PAIR(BLK, 0, Y1, Y2) \
	PAIR(BLK, 2, Y2, Y3) \
	VPHADDD Y2, Y1, Y1 \
	PAIR(BLK, 4, Y2, Y3) \
	PAIR(BLK, 6, Y3, Y4) \
	VPHADDD Y3, Y2, Y2 \
	VPERM2I128 $0x20, Y2, Y1, Y3 \
	VPERM2I128 $0x31, Y2, Y1, Y4 \
	VPADDD Y4, Y3, Y3

// ADD8: X0 += the eight float32 at 0(SP), in order.
#define ADD8 \
	VMOVUPS Y4, (SP) \
	VADDSS 0(SP), X0, X0 \
	VADDSS 4(SP), X0, X0 \
	VADDSS 8(SP), X0, X0 \
	VADDSS 12(SP), X0, X0 \
	VADDSS 16(SP), X0, X0 \
	VADDSS 20(SP), X0, X0 \
	VADDSS 24(SP), X0, X0 \
	VADDSS 28(SP), X0, X0

// FLOAT50: the eight terms float32(t - 16*sum) * (d_w*d_x) of dotQ5_0, t the totals in Y3
// (2*Q8Sum8 is 16 x the activation sum), added to X0.
#define FLOAT50 \
	VMOVDQU (R14)(R12*1), Y4 \
	VPADDD Y4, Y4, Y4 \
	VPSUBD Y4, Y3, Y3 \
	VCVTDQ2PS Y3, Y3 \
	VCVTPH2PS 32(SP), Y4 \
	VMULPS (R8)(R12*1), Y4, Y4 \
	VMULPS Y4, Y3, Y4 \
	ADD8

// FLOAT1: the eight terms d_w*d_x*float32(t) + m_w*s_x of dotQ4_1 and dotQ5_1, added to X0.
#define FLOAT1 \
	VCVTDQ2PS Y3, Y3 \
	VCVTPH2PS 32(SP), Y4 \
	VMULPS (R8)(R12*1), Y4, Y4 \
	VMULPS Y3, Y4, Y4 \
	VCVTPH2PS 48(SP), Y5 \
	VMULPS (R14)(R12*1), Y5, Y5 \
	VADDPS Y5, Y4, Y4 \
	ADD8

// GROUP4(BLK), FLOAT50_4, FLOAT1_4: GROUP8, FLOAT50 and FLOAT1 for four blocks (the totals
// in X3, the float terms in four lanes): the row's remainder of four to seven blocks.
#define GROUP4(BLK) \
	PAIR(BLK, 0, Y1, Y2) \
	PAIR(BLK, 2, Y2, Y3) \
	VPHADDD Y2, Y1, Y1 \
	VEXTRACTI128 $1, Y1, X2 \
	VPADDD X2, X1, X3

#define ADD4 \
	VMOVUPS X4, (SP) \
	VADDSS 0(SP), X0, X0 \
	VADDSS 4(SP), X0, X0 \
	VADDSS 8(SP), X0, X0 \
	VADDSS 12(SP), X0, X0

#define FLOAT50_4 \
	VMOVDQU (R14)(R12*1), X4 \
	VPADDD X4, X4, X4 \
	VPSUBD X4, X3, X3 \
	VCVTDQ2PS X3, X3 \
	VCVTPH2PS 32(SP), X4 \
	VMULPS (R8)(R12*1), X4, X4 \
	VMULPS X4, X3, X4 \
	ADD4

#define FLOAT1_4 \
	VCVTDQ2PS X3, X3 \
	VCVTPH2PS 32(SP), X4 \
	VMULPS (R8)(R12*1), X4, X4 \
	VMULPS X3, X4, X4 \
	VCVTPH2PS 48(SP), X5 \
	VMULPS (R14)(R12*1), X5, X5 \
	VADDPS X5, X4, X4 \
	ADD4

// Registers of the one-vector kernels: SI row, AX stride, DI x (Q8_0 blocks), R8 xd, R14 xs
// (Q8Sum8 for Q5_0, S for Q8_1), CX nb, DX rows, R9 out; per row R10 block, R11 Q8_0 block,
// R12 the block's offset in xd and xs (4 per block), BX blocks left; X0 the row's float sum.
// Y10: the shift counts of WK (the VNNI forms).
#define ARGS1 \
	MOVQ w+0(FP), SI \
	MOVQ stride+8(FP), AX \
	MOVQ x+16(FP), DI \
	MOVQ xd+24(FP), R8 \
	MOVQ xs+32(FP), R14 \
	MOVQ nb+40(FP), CX \
	MOVQ rows+48(FP), DX \
	MOVQ out+56(FP), R9 \
	VMOVDQU legshift<>(SB), Y10

#define ROWSTART \
	MOVQ SI, R10 \
	MOVQ DI, R11 \
	XORQ R12, R12 \
	MOVQ CX, BX \
	VXORPS X0, X0, X0

// ROWS(BLK, BS, FLOAT, FLOAT4, ONE, labels...): the row loop: groups of eight blocks, a group
// of four where four to seven remain, then one at a time (ONE: the block at R10 into X0).
#define ROWS(BLK, BS, FLOAT, FLOAT4, ONE, ROW, GRP, TAIL, TAIL1, ROWEND, END) \
	TESTQ DX, DX \
	JZ END \
	TESTQ CX, CX \
	JZ END \
ROW: \
	ROWSTART \
GRP: \
	CMPQ BX, $8 \
	JLT TAIL \
	GROUP8(BLK) \
	FLOAT \
	ADDQ $(8*BS), R10 \
	ADDQ $(8*34), R11 \
	ADDQ $32, R12 \
	SUBQ $8, BX \
	JMP GRP \
TAIL: \
	CMPQ BX, $4 \
	JLT TAIL1 \
	GROUP4(BLK) \
	FLOAT4 \
	ADDQ $(4*BS), R10 \
	ADDQ $(4*34), R11 \
	ADDQ $16, R12 \
	SUBQ $4, BX \
TAIL1: \
	TESTQ BX, BX \
	JZ ROWEND \
	ONE \
	ADDQ $BS, R10 \
	ADDQ $34, R11 \
	ADDQ $4, R12 \
	DECQ BX \
	JMP TAIL1 \
ROWEND: \
	MOVSS X0, (R9) \
	ADDQ $4, R9 \
	ADDQ AX, SI \
	DECQ DX \
	JNZ ROW \
END: \
	VZEROUPPER \
	RET

#define ONE50 \
	NIBS(6, R10, Y4, X4, Y5, X5) \
	HIBITS(2, R10, Y4, Y5) \
	ISUM(Y4, 2(R11), Y4, X4, Y5, X5) \
	SUBSUM8((R14)(R12*1), X4, X5) \
	FIN0(X4, (R8)(R12*1), X0, X6)

#define ONE51 \
	NIBS(8, R10, Y4, X4, Y5, X5) \
	HIBITS(4, R10, Y4, Y5) \
	ISUM(Y4, 2(R11), Y4, X4, Y5, X5) \
	LOADDM \
	FIN1(X4, (R8)(R12*1), (R14)(R12*1), X0, X7, X8)

#define ONE41 \
	NIBS(4, R10, Y4, X4, Y5, X5) \
	ISUM(Y4, 2(R11), Y4, X4, Y5, X5) \
	LOADDM \
	FIN1(X4, (R8)(R12*1), (R14)(R12*1), X0, X7, X8)

// The two-vector kernels (prefill: rows against two activation vectors in one pass, the
// weights decoded once per block): each vector's float operations are the one-vector
// kernels', so both results equal the Go twins'. Registers: SI row, AX stride, DX rows, R9
// out (pairs: vector 0's, vector 1's), DI x0, CX x1, R8 xd0, R14 xs0, vector 1's xd1 and xs1
// read into R13 from the arguments when used; per row R10 block, R11 the Q8_0 block's offset
// in x0 and x1, R12 the offset in the scales and sums, BX blocks left; X0 vector 0's sum,
// 64(SP) vector 1's. Totals: vector 0's in Y3, vector 1's in Y8.

// PAIR2(BLK, K, YA, YB, YC, YD): PAIR for block pairs BLK writes to two registers each (two
// vectors or two rows: block K into YA and YC, K+1 into YB and YD).
#define PAIR2(BLK, K, YA, YB, YC, YD) \
	BLK(K, YA, YC) \
	BLK((K+1), YB, YD) \
	VPHADDD YB, YA, YA \
	VPHADDD YD, YC, YC

// GROUP8X2(BLK): GROUP8 for both vectors: totals of x0 in Y3, of x1 in Y8. Clobbers Y1..Y9.
#define GROUP8X2(BLK) \
	PAIR2(BLK, 0, Y1, Y2, Y6, Y7) \
	PAIR2(BLK, 2, Y2, Y3, Y7, Y8) \
	VPHADDD Y2, Y1, Y1 \
	VPHADDD Y7, Y6, Y6 \
	PAIR2(BLK, 4, Y2, Y3, Y7, Y8) \
	PAIR2(BLK, 6, Y3, Y4, Y8, Y9) \
	VPHADDD Y3, Y2, Y2 \
	VPHADDD Y8, Y7, Y7 \
	VPERM2I128 $0x20, Y2, Y1, Y3 \
	VPERM2I128 $0x31, Y2, Y1, Y4 \
	VPADDD Y4, Y3, Y3 \
	VPERM2I128 $0x20, Y7, Y6, Y8 \
	VPERM2I128 $0x31, Y7, Y6, Y9 \
	VPADDD Y9, Y8, Y8

// ADD8B: ADD8 into vector 1's sum at 64(SP).
#define ADD8B \
	VMOVUPS Y4, (SP) \
	VMOVSS 64(SP), X5 \
	VADDSS 0(SP), X5, X5 \
	VADDSS 4(SP), X5, X5 \
	VADDSS 8(SP), X5, X5 \
	VADDSS 12(SP), X5, X5 \
	VADDSS 16(SP), X5, X5 \
	VADDSS 20(SP), X5, X5 \
	VADDSS 24(SP), X5, X5 \
	VADDSS 28(SP), X5, X5 \
	VMOVSS X5, 64(SP)

// GROUP4X2(BLK): GROUP8X2 for four blocks (totals of x0 in X3, of x1 in X8).
#define GROUP4X2(BLK) \
	PAIR2(BLK, 0, Y1, Y2, Y6, Y7) \
	PAIR2(BLK, 2, Y2, Y3, Y7, Y8) \
	VPHADDD Y2, Y1, Y1 \
	VPHADDD Y7, Y6, Y6 \
	VEXTRACTI128 $1, Y1, X2 \
	VPADDD X2, X1, X3 \
	VEXTRACTI128 $1, Y6, X7 \
	VPADDD X7, X6, X8

#define ADD4B \
	VMOVUPS X4, (SP) \
	VMOVSS 64(SP), X5 \
	VADDSS 0(SP), X5, X5 \
	VADDSS 4(SP), X5, X5 \
	VADDSS 8(SP), X5, X5 \
	VADDSS 12(SP), X5, X5 \
	VMOVSS X5, 64(SP)

// ONE2 tails: the block at R10 decoded into Y4 once; vector 1's total into X9, vector 0's
// into X4; vector 1's sum kept in X1 between 64(SP) loads and stores.
#define TOT1(T) \
	VPMADDUBSW 2(CX)(R11*1), Y4, Y9 \
	VPMADDWD legones<>(SB), Y9, Y9 \
	VEXTRACTI128 $1, Y9, X5 \
	VPADDD X5, X9, X9 \
	VPHADDD X9, X9, X9 \
	VPHADDD X9, X9, X9

#define ONE2_50 \
	NIBS(6, R10, Y4, X4, Y5, X5) \
	HIBITS(2, R10, Y4, Y5) \
	TOT1(Y9) \
	ISUM(Y4, 2(DI)(R11*1), Y4, X4, Y5, X5) \
	SUBSUM8((R14)(R12*1), X4, X5) \
	FIN0(X4, (R8)(R12*1), X0, X6) \
	MOVQ xs1+56(FP), R13 \
	SUBSUM8((R13)(R12*1), X9, X5) \
	MOVQ xd1+40(FP), R13 \
	VMOVSS 64(SP), X1 \
	FIN0(X9, (R13)(R12*1), X1, X6) \
	VMOVSS X1, 64(SP)

// FIN1B(X, SUM): FIN1 for vector 1 (X6 = [d_w, m_w] loaded), the bases read into R13.
#define FIN1B(X, SUM) \
	VCVTDQ2PS X, X \
	MOVQ xd1+40(FP), R13 \
	VMULSS (R13)(R12*1), X6, X7 \
	VMULSS X, X7, X7 \
	VMOVSHDUP X6, X8 \
	MOVQ xs1+56(FP), R13 \
	VMULSS (R13)(R12*1), X8, X8 \
	VADDSS X8, X7, X7 \
	VADDSS X7, SUM, SUM

#define ONE2_1(QSOFF) \
	TOT1(Y9) \
	ISUM(Y4, 2(DI)(R11*1), Y4, X4, Y5, X5) \
	LOADDM \
	FIN1(X4, (R8)(R12*1), (R14)(R12*1), X0, X7, X8) \
	VMOVSS 64(SP), X1 \
	FIN1B(X9, X1) \
	VMOVSS X1, 64(SP)

#define ONE2_51 \
	NIBS(8, R10, Y4, X4, Y5, X5) \
	HIBITS(4, R10, Y4, Y5) \
	ONE2_1(8)

#define ONE2_41 \
	NIBS(4, R10, Y4, X4, Y5, X5) \
	ONE2_1(4)

#define ARGS2 \
	MOVQ w+0(FP), SI \
	MOVQ stride+8(FP), AX \
	MOVQ x0+16(FP), DI \
	MOVQ x1+24(FP), CX \
	MOVQ xd0+32(FP), R8 \
	MOVQ xs0+48(FP), R14 \
	MOVQ rows+72(FP), DX \
	MOVQ out+80(FP), R9 \
	VMOVDQU legshift<>(SB), Y10

// ROWS2: ROWS for the two-vector kernels.
#define ROWS2(BLK, BS, FLOAT, FLOATB, FLOAT4, FLOATB4, ONE, ROW, GRP, TAIL, TAIL1, ROWEND, END) \
	TESTQ DX, DX \
	JZ END \
	MOVQ nb+64(FP), BX \
	TESTQ BX, BX \
	JZ END \
ROW: \
	MOVQ SI, R10 \
	XORQ R11, R11 \
	XORQ R12, R12 \
	MOVQ nb+64(FP), BX \
	VXORPS X0, X0, X0 \
	MOVL $0, 64(SP) \
GRP: \
	CMPQ BX, $8 \
	JLT TAIL \
	GROUP8X2(BLK) \
	FLOAT \
	FLOATB \
	ADDQ $(8*BS), R10 \
	ADDQ $(8*34), R11 \
	ADDQ $32, R12 \
	SUBQ $8, BX \
	JMP GRP \
TAIL: \
	CMPQ BX, $4 \
	JLT TAIL1 \
	GROUP4X2(BLK) \
	FLOAT4 \
	FLOATB4 \
	ADDQ $(4*BS), R10 \
	ADDQ $(4*34), R11 \
	ADDQ $16, R12 \
	SUBQ $4, BX \
TAIL1: \
	TESTQ BX, BX \
	JZ ROWEND \
	ONE \
	ADDQ $BS, R10 \
	ADDQ $34, R11 \
	ADDQ $4, R12 \
	DECQ BX \
	JMP TAIL1 \
ROWEND: \
	MOVSS X0, (R9) \
	MOVL 64(SP), R13 \
	MOVL R13, 4(R9) \
	ADDQ $8, R9 \
	ADDQ AX, SI \
	DECQ DX \
	JNZ ROW \
END: \
	VZEROUPPER \
	RET

// The two-row kernels (decode: two rows against one vector, so that the two rows' serial
// float sums overlap): row 0 at R10, row 1 at R10+AX; per row the one-vector kernels'
// operations, so both results equal the Go twins'. Registers as the one-vector kernels' (R11
// the Q8_0 block, DX the row pairs left); row 1's sum at 64(SP), its totals in Y8 (X8).

// ONER(ONE): the one-block step ONE for row 1: its sum swapped into X0 (row 0's kept at
// 68(SP)) and R10 moved to its block.
#define ONER(ONE) \
	VMOVSS X0, 68(SP) \
	VMOVSS 64(SP), X0 \
	ADDQ AX, R10 \
	ONE \
	SUBQ AX, R10 \
	VMOVSS X0, 64(SP) \
	VMOVSS 68(SP), X0

// ROWSR: ROWS for the two-row kernels (DX: row pairs), with software prefetches 4 KiB ahead
// in both rows (decode reads the weights from memory once).
#define ROWSR(BLK, BS, FLOAT, FLOATR, FLOAT4, FLOATR4, ONE, ROW, GRP, TAIL, TAIL1, ROWEND, END) \
	TESTQ DX, DX \
	JZ END \
	TESTQ CX, CX \
	JZ END \
ROW: \
	ROWSTART \
	MOVL $0, 64(SP) \
GRP: \
	CMPQ BX, $8 \
	JLT TAIL \
	PREFETCHT0 4096(R10) \
	PREFETCHT0 4160(R10) \
	PREFETCHT0 4224(R10) \
	PREFETCHT0 4096(R10)(AX*1) \
	PREFETCHT0 4160(R10)(AX*1) \
	PREFETCHT0 4224(R10)(AX*1) \
	GROUP8X2(BLK) \
	FLOAT \
	FLOATR \
	ADDQ $(8*BS), R10 \
	ADDQ $(8*34), R11 \
	ADDQ $32, R12 \
	SUBQ $8, BX \
	JMP GRP \
TAIL: \
	CMPQ BX, $4 \
	JLT TAIL1 \
	GROUP4X2(BLK) \
	FLOAT4 \
	FLOATR4 \
	ADDQ $(4*BS), R10 \
	ADDQ $(4*34), R11 \
	ADDQ $16, R12 \
	SUBQ $4, BX \
TAIL1: \
	TESTQ BX, BX \
	JZ ROWEND \
	ONE \
	ONER(ONE) \
	ADDQ $BS, R10 \
	ADDQ $34, R11 \
	ADDQ $4, R12 \
	DECQ BX \
	JMP TAIL1 \
ROWEND: \
	MOVSS X0, (R9) \
	MOVL 64(SP), R13 \
	MOVL R13, 4(R9) \
	ADDQ $8, R9 \
	LEAQ (SI)(AX*2), SI \
	DECQ DX \
	JNZ ROW \
END: \
	VZEROUPPER \
	RET

// The AVX-512 forms (BW, VL and VNNI; useVNNI): the fifth bits added by a byte-masked VPADDB
// with the qh word as the mask (KMOVD), the products summed by VPDPBUSD into zeroed int32
// lanes. The totals are the same integers, so the results are the AVX2 forms'.
//
// WK(QS, QH): the unsigned quants of a block into Y5 from its nibbles at QS and (Q5_0, Q5_1)
// its qh word at QH; WK4(QS) for Q4_1.
#define WK(QS, QH) \
	VBROADCASTI128 QS, Y5 \
	VPSRLVQ Y10, Y5, Y5 \
	VPAND leg0f<>(SB), Y5, Y5 \
	KMOVD QH, K1 \
	VPADDB Y11, Y5, K1, Y5

#define WK4(QS) \
	VBROADCASTI128 QS, Y5 \
	VPSRLVQ Y10, Y5, Y5 \
	VPAND leg0f<>(SB), Y5, Y5

// DP(XA, Y): Y = the int32 sums of four products of the quants Y5 and the int8 at XA.
#define DP(XA, Y) \
	VPXOR Y, Y, Y \
	VPDPBUSD XA, Y5, Y

// The block scales in registers (VPINSRW). Q5_0, VNNI forms: X12 (row 0 or the one row of
// the two-vector kernel) and X13 (row 1). Q5_1 and Q4_1, VNNI forms: d in X12 and m in X13
// (row 0), row 1's in X14 and X15. AVX2 forms: X10 and X11 (row 0), X14 and X15 (row 1).
// FLOAT..X, FLOAT..A, FLOATR..V: FLOAT50, FLOAT1 and their four-block, vector-1 (B) and
// row-1 (R) forms reading those registers; the vector-1 forms compute the sums' term first
// where R13 holds one base at a time (the same operations on the same operands).
#define FLOAT50X \
	VMOVDQU (R14)(R12*1), Y4 \
	VPADDD Y4, Y4, Y4 \
	VPSUBD Y4, Y3, Y3 \
	VCVTDQ2PS Y3, Y3 \
	VCVTPH2PS X12, Y4 \
	VMULPS (R8)(R12*1), Y4, Y4 \
	VMULPS Y4, Y3, Y4 \
	ADD8

#define FLOAT50_4X \
	VMOVDQU (R14)(R12*1), X4 \
	VPADDD X4, X4, X4 \
	VPSUBD X4, X3, X3 \
	VCVTDQ2PS X3, X3 \
	VCVTPH2PS X12, X4 \
	VMULPS (R8)(R12*1), X4, X4 \
	VMULPS X4, X3, X4 \
	ADD4

#define FLOAT50BX \
	MOVQ xs1+56(FP), R13 \
	VMOVDQU (R13)(R12*1), Y4 \
	VPADDD Y4, Y4, Y4 \
	VPSUBD Y4, Y8, Y8 \
	VCVTDQ2PS Y8, Y8 \
	MOVQ xd1+40(FP), R13 \
	VCVTPH2PS X12, Y4 \
	VMULPS (R13)(R12*1), Y4, Y4 \
	VMULPS Y4, Y8, Y4 \
	ADD8B

#define FLOAT50B_4X \
	MOVQ xs1+56(FP), R13 \
	VMOVDQU (R13)(R12*1), X4 \
	VPADDD X4, X4, X4 \
	VPSUBD X4, X8, X8 \
	VCVTDQ2PS X8, X8 \
	MOVQ xd1+40(FP), R13 \
	VCVTPH2PS X12, X4 \
	VMULPS (R13)(R12*1), X4, X4 \
	VMULPS X4, X8, X4 \
	ADD4B

// WKR(QS, QH): WK with the 0x0f bytes in Y14 (free in the two-row Q5_0 VNNI kernel, whose
// scales are in X12 and X13) rather than read from memory for each block.
#define WKR(QS, QH) \
	VBROADCASTI128 QS, Y5 \
	VPSRLVQ Y10, Y5, Y5 \
	VPAND Y14, Y5, Y5 \
	KMOVD QH, K1 \
	VPADDB Y11, Y5, K1, Y5

#define BLKRKX_50(K, YA, YB) \
	VPINSRW $(K), ((K)*22)(R10), X12, X12 \
	WKR(((K)*22+6)(R10), ((K)*22+2)(R10)) \
	DP(((K)*34+2)(R11), YA) \
	VPINSRW $(K), ((K)*22)(R10)(AX*1), X13, X13 \
	WKR(((K)*22+6)(R10)(AX*1), ((K)*22+2)(R10)(AX*1)) \
	DP(((K)*34+2)(R11), YB)

#define BLK2KX_50(K, YA, YB) \
	VPINSRW $(K), ((K)*22)(R10), X12, X12 \
	WK(((K)*22+6)(R10), ((K)*22+2)(R10)) \
	DP(((K)*34+2)(DI)(R11*1), YA) \
	DP(((K)*34+2)(CX)(R11*1), YB)

// The two-row Q5_0 kernels keep row 1's float sum in X15 (row 0's in X0), so that both rows'
// block terms are added in registers as two independent chains.
//
// FLOATRR50(SA, SB), FLOATRR50_4(SA, SB): FLOAT50X (FLOAT50_4X) for both rows at once, the
// F16 scales of row 0 in SA and of row 1 in SB, the activation sums and scales read once: row 0's terms at 0(SP), row 1's at 32(SP),
// each added to its sum in block order (the same operations on the same operands).
#define FLOATRR50(SA, SB) \
	VMOVDQU (R14)(R12*1), Y4 \
	VPADDD Y4, Y4, Y4 \
	VPSUBD Y4, Y3, Y3 \
	VPSUBD Y4, Y8, Y8 \
	VCVTDQ2PS Y3, Y3 \
	VCVTDQ2PS Y8, Y8 \
	VMOVUPS (R8)(R12*1), Y6 \
	VCVTPH2PS SA, Y4 \
	VMULPS Y6, Y4, Y4 \
	VMULPS Y4, Y3, Y4 \
	VCVTPH2PS SB, Y5 \
	VMULPS Y6, Y5, Y5 \
	VMULPS Y5, Y8, Y5 \
	VMOVUPS Y4, (SP) \
	VMOVUPS Y5, 32(SP) \
	VADDSS 0(SP), X0, X0 \
	VADDSS 32(SP), X15, X15 \
	VADDSS 4(SP), X0, X0 \
	VADDSS 36(SP), X15, X15 \
	VADDSS 8(SP), X0, X0 \
	VADDSS 40(SP), X15, X15 \
	VADDSS 12(SP), X0, X0 \
	VADDSS 44(SP), X15, X15 \
	VADDSS 16(SP), X0, X0 \
	VADDSS 48(SP), X15, X15 \
	VADDSS 20(SP), X0, X0 \
	VADDSS 52(SP), X15, X15 \
	VADDSS 24(SP), X0, X0 \
	VADDSS 56(SP), X15, X15 \
	VADDSS 28(SP), X0, X0 \
	VADDSS 60(SP), X15, X15

#define FLOATRR50_4(SA, SB) \
	VMOVDQU (R14)(R12*1), X4 \
	VPADDD X4, X4, X4 \
	VPSUBD X4, X3, X3 \
	VPSUBD X4, X8, X8 \
	VCVTDQ2PS X3, X3 \
	VCVTDQ2PS X8, X8 \
	VMOVUPS (R8)(R12*1), X6 \
	VCVTPH2PS SA, X4 \
	VMULPS X6, X4, X4 \
	VMULPS X4, X3, X4 \
	VCVTPH2PS SB, X5 \
	VMULPS X6, X5, X5 \
	VMULPS X5, X8, X5 \
	VMOVUPS X4, (SP) \
	VMOVUPS X5, 32(SP) \
	VADDSS 0(SP), X0, X0 \
	VADDSS 32(SP), X15, X15 \
	VADDSS 4(SP), X0, X0 \
	VADDSS 36(SP), X15, X15 \
	VADDSS 8(SP), X0, X0 \
	VADDSS 40(SP), X15, X15 \
	VADDSS 12(SP), X0, X0 \
	VADDSS 44(SP), X15, X15

// The scale registers of the VNNI form (X12, X13) and of the AVX2 one (X10, X14).
#define FLOATRR50K FLOATRR50(X12, X13)
#define FLOATRR50K_4 FLOATRR50_4(X12, X13)
#define FLOATRR50A FLOATRR50(X10, X14)
#define FLOATRR50A_4 FLOATRR50_4(X10, X14)

// ONERK(ONE): ONER with row 1's sum in X15 (X9 holds row 0's; ONE50 and ONE50K leave X9
// alone).
#define ONERK(ONE) \
	VMOVAPS X0, X9 \
	VMOVAPS X15, X0 \
	ADDQ AX, R10 \
	ONE \
	SUBQ AX, R10 \
	VMOVAPS X0, X15 \
	VMOVAPS X9, X0

// ROWSRK: ROWSR for the two-row Q5_0 kernels (row 1's sum in X15; FLOAT and FLOAT4 the
// FLOATRR50 forms).
#define ROWSRK(BLK, BS, FLOAT, FLOAT4, ONE, ROW, GRP, TAIL, TAIL1, ROWEND, END) \
	TESTQ DX, DX \
	JZ END \
	TESTQ CX, CX \
	JZ END \
ROW: \
	ROWSTART \
	VXORPS X15, X15, X15 \
GRP: \
	CMPQ BX, $8 \
	JLT TAIL \
	PREFETCHT0 4096(R10) \
	PREFETCHT0 4160(R10) \
	PREFETCHT0 4224(R10) \
	PREFETCHT0 4096(R10)(AX*1) \
	PREFETCHT0 4160(R10)(AX*1) \
	PREFETCHT0 4224(R10)(AX*1) \
	GROUP8X2(BLK) \
	FLOAT \
	ADDQ $(8*BS), R10 \
	ADDQ $(8*34), R11 \
	ADDQ $32, R12 \
	SUBQ $8, BX \
	JMP GRP \
TAIL: \
	CMPQ BX, $4 \
	JLT TAIL1 \
	GROUP4X2(BLK) \
	FLOAT4 \
	ADDQ $(4*BS), R10 \
	ADDQ $(4*34), R11 \
	ADDQ $16, R12 \
	SUBQ $4, BX \
TAIL1: \
	TESTQ BX, BX \
	JZ ROWEND \
	ONE \
	ONERK(ONE) \
	ADDQ $BS, R10 \
	ADDQ $34, R11 \
	ADDQ $4, R12 \
	DECQ BX \
	JMP TAIL1 \
ROWEND: \
	MOVSS X0, (R9) \
	VMOVSS X15, 4(R9) \
	ADDQ $8, R9 \
	LEAQ (SI)(AX*2), SI \
	DECQ DX \
	JNZ ROW \
END: \
	VZEROUPPER \
	RET

// ONE50K, ONE2_50K: ONE50 and ONE2_50 with the fifth bits by KMOVD and a masked VPADDB (the
// X forms keep their scales in X12 and X13, which HIBITS needs).
#define ONE50K \
	NIBS(6, R10, Y4, X4, Y5, X5) \
	KMOVD 2(R10), K1 \
	VPADDB Y11, Y4, K1, Y4 \
	ISUM(Y4, 2(R11), Y4, X4, Y5, X5) \
	SUBSUM8((R14)(R12*1), X4, X5) \
	FIN0(X4, (R8)(R12*1), X0, X6)

#define ONE2_50K \
	NIBS(6, R10, Y4, X4, Y5, X5) \
	KMOVD 2(R10), K1 \
	VPADDB Y11, Y4, K1, Y4 \
	TOT1(Y9) \
	ISUM(Y4, 2(DI)(R11*1), Y4, X4, Y5, X5) \
	SUBSUM8((R14)(R12*1), X4, X5) \
	FIN0(X4, (R8)(R12*1), X0, X6) \
	MOVQ xs1+56(FP), R13 \
	SUBSUM8((R13)(R12*1), X9, X5) \
	MOVQ xd1+40(FP), R13 \
	VMOVSS 64(SP), X1 \
	FIN0(X9, (R13)(R12*1), X1, X6) \
	VMOVSS X1, 64(SP)

// The Q5_1 and Q4_1 VNNI forms: row 0's (or the one row's) scales d in X12 and minima m in
// X13 by VPINSRW; row 1's in X14 and X15 (FLOATR..V).
#define FLOAT1X \
	VCVTDQ2PS Y3, Y3 \
	VCVTPH2PS X12, Y4 \
	VMULPS (R8)(R12*1), Y4, Y4 \
	VMULPS Y3, Y4, Y4 \
	VCVTPH2PS X13, Y5 \
	VMULPS (R14)(R12*1), Y5, Y5 \
	VADDPS Y5, Y4, Y4 \
	ADD8

#define FLOAT1_4X \
	VCVTDQ2PS X3, X3 \
	VCVTPH2PS X12, X4 \
	VMULPS (R8)(R12*1), X4, X4 \
	VMULPS X3, X4, X4 \
	VCVTPH2PS X13, X5 \
	VMULPS (R14)(R12*1), X5, X5 \
	VADDPS X5, X4, X4 \
	ADD4

#define FLOAT1BX \
	MOVQ xs1+56(FP), R13 \
	VCVTPH2PS X13, Y5 \
	VMULPS (R13)(R12*1), Y5, Y5 \
	MOVQ xd1+40(FP), R13 \
	VCVTDQ2PS Y8, Y8 \
	VCVTPH2PS X12, Y4 \
	VMULPS (R13)(R12*1), Y4, Y4 \
	VMULPS Y8, Y4, Y4 \
	VADDPS Y5, Y4, Y4 \
	ADD8B

#define FLOAT1B_4X \
	MOVQ xs1+56(FP), R13 \
	VCVTPH2PS X13, X5 \
	VMULPS (R13)(R12*1), X5, X5 \
	MOVQ xd1+40(FP), R13 \
	VCVTDQ2PS X8, X8 \
	VCVTPH2PS X12, X4 \
	VMULPS (R13)(R12*1), X4, X4 \
	VMULPS X8, X4, X4 \
	VADDPS X5, X4, X4 \
	ADD4B

#define ONE51K \
	NIBS(8, R10, Y4, X4, Y5, X5) \
	KMOVD 4(R10), K1 \
	VPADDB Y11, Y4, K1, Y4 \
	ISUM(Y4, 2(R11), Y4, X4, Y5, X5) \
	LOADDM \
	FIN1(X4, (R8)(R12*1), (R14)(R12*1), X0, X7, X8)

#define ONE2_51K \
	NIBS(8, R10, Y4, X4, Y5, X5) \
	KMOVD 4(R10), K1 \
	VPADDB Y11, Y4, K1, Y4 \
	ONE2_1(8)

#define BLK2KX_51(K, YA, YB) \
	VPINSRW $(K), ((K)*24)(R10), X12, X12 \
	VPINSRW $(K), ((K)*24+2)(R10), X13, X13 \
	WK(((K)*24+8)(R10), ((K)*24+4)(R10)) \
	DP(((K)*34+2)(DI)(R11*1), YA) \
	DP(((K)*34+2)(CX)(R11*1), YB)

#define BLK2KX_41(K, YA, YB) \
	VPINSRW $(K), ((K)*20)(R10), X12, X12 \
	VPINSRW $(K), ((K)*20+2)(R10), X13, X13 \
	WK4(((K)*20+4)(R10)) \
	DP(((K)*34+2)(DI)(R11*1), YA) \
	DP(((K)*34+2)(CX)(R11*1), YB)

// The AVX2 two-row and two-vector kernels take row 0's (or the one row's) scales and minima
// by VPINSRW into X10 and X11 (their constants read from memory instead).
#define FLOAT50A \
	VMOVDQU (R14)(R12*1), Y4 \
	VPADDD Y4, Y4, Y4 \
	VPSUBD Y4, Y3, Y3 \
	VCVTDQ2PS Y3, Y3 \
	VCVTPH2PS X10, Y4 \
	VMULPS (R8)(R12*1), Y4, Y4 \
	VMULPS Y4, Y3, Y4 \
	ADD8

#define FLOAT50_4A \
	VMOVDQU (R14)(R12*1), X4 \
	VPADDD X4, X4, X4 \
	VPSUBD X4, X3, X3 \
	VCVTDQ2PS X3, X3 \
	VCVTPH2PS X10, X4 \
	VMULPS (R8)(R12*1), X4, X4 \
	VMULPS X4, X3, X4 \
	ADD4

#define FLOAT50BA \
	MOVQ xs1+56(FP), R13 \
	VMOVDQU (R13)(R12*1), Y4 \
	VPADDD Y4, Y4, Y4 \
	VPSUBD Y4, Y8, Y8 \
	VCVTDQ2PS Y8, Y8 \
	MOVQ xd1+40(FP), R13 \
	VCVTPH2PS X10, Y4 \
	VMULPS (R13)(R12*1), Y4, Y4 \
	VMULPS Y4, Y8, Y4 \
	ADD8B

#define FLOAT50B_4A \
	MOVQ xs1+56(FP), R13 \
	VMOVDQU (R13)(R12*1), X4 \
	VPADDD X4, X4, X4 \
	VPSUBD X4, X8, X8 \
	VCVTDQ2PS X8, X8 \
	MOVQ xd1+40(FP), R13 \
	VCVTPH2PS X10, X4 \
	VMULPS (R13)(R12*1), X4, X4 \
	VMULPS X4, X8, X4 \
	ADD4B

#define FLOAT1A \
	VCVTDQ2PS Y3, Y3 \
	VCVTPH2PS X10, Y4 \
	VMULPS (R8)(R12*1), Y4, Y4 \
	VMULPS Y3, Y4, Y4 \
	VCVTPH2PS X11, Y5 \
	VMULPS (R14)(R12*1), Y5, Y5 \
	VADDPS Y5, Y4, Y4 \
	ADD8

#define FLOAT1_4A \
	VCVTDQ2PS X3, X3 \
	VCVTPH2PS X10, X4 \
	VMULPS (R8)(R12*1), X4, X4 \
	VMULPS X3, X4, X4 \
	VCVTPH2PS X11, X5 \
	VMULPS (R14)(R12*1), X5, X5 \
	VADDPS X5, X4, X4 \
	ADD4

#define FLOAT1BA \
	MOVQ xs1+56(FP), R13 \
	VCVTPH2PS X11, Y5 \
	VMULPS (R13)(R12*1), Y5, Y5 \
	MOVQ xd1+40(FP), R13 \
	VCVTDQ2PS Y8, Y8 \
	VCVTPH2PS X10, Y4 \
	VMULPS (R13)(R12*1), Y4, Y4 \
	VMULPS Y8, Y4, Y4 \
	VADDPS Y5, Y4, Y4 \
	ADD8B

#define FLOAT1B_4A \
	MOVQ xs1+56(FP), R13 \
	VCVTPH2PS X11, X5 \
	VMULPS (R13)(R12*1), X5, X5 \
	MOVQ xd1+40(FP), R13 \
	VCVTDQ2PS X8, X8 \
	VCVTPH2PS X10, X4 \
	VMULPS (R13)(R12*1), X4, X4 \
	VMULPS X8, X4, X4 \
	VADDPS X5, X4, X4 \
	ADD4B

#define BLK50A(K, Y) \
	VPINSRW $(K), ((K)*22)(R10), X10, X10 \
	NIB8(((K)*22+6), Y) \
	HIBITS(((K)*22+2), R10, Y, Y5) \
	VPMADDUBSW ((K)*34+2)(R11), Y, Y \
	VPMADDWD legones<>(SB), Y, Y

#define BLK51A(K, Y) \
	VPINSRW $(K), ((K)*24)(R10), X10, X10 \
	VPINSRW $(K), ((K)*24+2)(R10), X11, X11 \
	NIB8(((K)*24+8), Y) \
	HIBITS(((K)*24+4), R10, Y, Y5) \
	VPMADDUBSW ((K)*34+2)(R11), Y, Y \
	VPMADDWD legones<>(SB), Y, Y

#define BLK41A(K, Y) \
	VPINSRW $(K), ((K)*20)(R10), X10, X10 \
	VPINSRW $(K), ((K)*20+2)(R10), X11, X11 \
	NIB8(((K)*20+4), Y) \
	VPMADDUBSW ((K)*34+2)(R11), Y, Y \
	VPMADDWD legones<>(SB), Y, Y

#define BLK2_50A(K, YA, YB) \
	VPINSRW $(K), ((K)*22)(R10), X10, X10 \
	NIB8(((K)*22+6), YA) \
	HIBITS(((K)*22+2), R10, YA, Y5) \
	VPMADDUBSW ((K)*34+2)(CX)(R11*1), YA, YB \
	VPMADDUBSW ((K)*34+2)(DI)(R11*1), YA, YA \
	VPMADDWD legones<>(SB), YA, YA \
	VPMADDWD legones<>(SB), YB, YB

#define BLK2_51A(K, YA, YB) \
	VPINSRW $(K), ((K)*24)(R10), X10, X10 \
	VPINSRW $(K), ((K)*24+2)(R10), X11, X11 \
	NIB8(((K)*24+8), YA) \
	HIBITS(((K)*24+4), R10, YA, Y5) \
	VPMADDUBSW ((K)*34+2)(CX)(R11*1), YA, YB \
	VPMADDUBSW ((K)*34+2)(DI)(R11*1), YA, YA \
	VPMADDWD legones<>(SB), YA, YA \
	VPMADDWD legones<>(SB), YB, YB

#define BLK2_41A(K, YA, YB) \
	VPINSRW $(K), ((K)*20)(R10), X10, X10 \
	VPINSRW $(K), ((K)*20+2)(R10), X11, X11 \
	NIB8(((K)*20+4), YA) \
	VPMADDUBSW ((K)*34+2)(CX)(R11*1), YA, YB \
	VPMADDUBSW ((K)*34+2)(DI)(R11*1), YA, YA \
	VPMADDWD legones<>(SB), YA, YA \
	VPMADDWD legones<>(SB), YB, YB

// Row 1's scales and minima by VPINSRW into X14 and X15 in the two-row kernels (the 0x0f and
// int16-one constants read from memory).
#define FLOATR1V \
	VCVTDQ2PS Y8, Y8 \
	VCVTPH2PS X14, Y4 \
	VMULPS (R8)(R12*1), Y4, Y4 \
	VMULPS Y8, Y4, Y4 \
	VCVTPH2PS X15, Y5 \
	VMULPS (R14)(R12*1), Y5, Y5 \
	VADDPS Y5, Y4, Y4 \
	ADD8B

#define FLOATR1_4V \
	VCVTDQ2PS X8, X8 \
	VCVTPH2PS X14, X4 \
	VMULPS (R8)(R12*1), X4, X4 \
	VMULPS X8, X4, X4 \
	VCVTPH2PS X15, X5 \
	VMULPS (R14)(R12*1), X5, X5 \
	VADDPS X5, X4, X4 \
	ADD4B

#define BLKR_50AV(K, YA, YB) \
	BLK50A(K, YA) \
	VPINSRW $(K), ((K)*22)(R10)(AX*1), X14, X14 \
	VBROADCASTI128 ((K)*22+6)(R10)(AX*1), YB \
	VPSRLVQ legshift<>(SB), YB, YB \
	VPAND leg0f<>(SB), YB, YB \
	VPBROADCASTD ((K)*22+2)(R10)(AX*1), Y5 \
	VPSHUFB Y13, Y5, Y5 \
	VPAND Y12, Y5, Y5 \
	VPCMPEQB Y12, Y5, Y5 \
	VPAND legx10<>(SB), Y5, Y5 \
	VPOR Y5, YB, YB \
	VPMADDUBSW ((K)*34+2)(R11), YB, YB \
	VPMADDWD legones<>(SB), YB, YB

#define BLKR_51AV(K, YA, YB) \
	BLK51A(K, YA) \
	VPINSRW $(K), ((K)*24)(R10)(AX*1), X14, X14 \
	VPINSRW $(K), ((K)*24+2)(R10)(AX*1), X15, X15 \
	VBROADCASTI128 ((K)*24+8)(R10)(AX*1), YB \
	VPSRLVQ legshift<>(SB), YB, YB \
	VPAND leg0f<>(SB), YB, YB \
	VPBROADCASTD ((K)*24+4)(R10)(AX*1), Y5 \
	VPSHUFB Y13, Y5, Y5 \
	VPAND Y12, Y5, Y5 \
	VPCMPEQB Y12, Y5, Y5 \
	VPAND legx10<>(SB), Y5, Y5 \
	VPOR Y5, YB, YB \
	VPMADDUBSW ((K)*34+2)(R11), YB, YB \
	VPMADDWD legones<>(SB), YB, YB

#define BLKR_41AV(K, YA, YB) \
	BLK41A(K, YA) \
	VPINSRW $(K), ((K)*20)(R10)(AX*1), X14, X14 \
	VPINSRW $(K), ((K)*20+2)(R10)(AX*1), X15, X15 \
	VBROADCASTI128 ((K)*20+4)(R10)(AX*1), YB \
	VPSRLVQ legshift<>(SB), YB, YB \
	VPAND leg0f<>(SB), YB, YB \
	VPMADDUBSW ((K)*34+2)(R11), YB, YB \
	VPMADDWD legones<>(SB), YB, YB

#define BLKRKX_51V(K, YA, YB) \
	VPINSRW $(K), ((K)*24)(R10), X12, X12 \
	VPINSRW $(K), ((K)*24+2)(R10), X13, X13 \
	WK(((K)*24+8)(R10), ((K)*24+4)(R10)) \
	DP(((K)*34+2)(R11), YA) \
	VPINSRW $(K), ((K)*24)(R10)(AX*1), X14, X14 \
	VPINSRW $(K), ((K)*24+2)(R10)(AX*1), X15, X15 \
	WK(((K)*24+8)(R10)(AX*1), ((K)*24+4)(R10)(AX*1)) \
	DP(((K)*34+2)(R11), YB)

#define BLKRKX_41V(K, YA, YB) \
	VPINSRW $(K), ((K)*20)(R10), X12, X12 \
	VPINSRW $(K), ((K)*20+2)(R10), X13, X13 \
	WK4(((K)*20+4)(R10)) \
	DP(((K)*34+2)(R11), YA) \
	VPINSRW $(K), ((K)*20)(R10)(AX*1), X14, X14 \
	VPINSRW $(K), ((K)*20+2)(R10)(AX*1), X15, X15 \
	WK4(((K)*20+4)(R10)(AX*1)) \
	DP(((K)*34+2)(R11), YB)

// func rowsQ5_0AVX2(w *byte, stride int, x *byte, xd *float32, xs *int32, nb, rows int, out *float32)
// Q5_0 blocks: f16 d, qh[4], qs[16].
TEXT ·rowsQ5_0AVX2(SB), NOSPLIT, $64-64
	ARGS1
	LEGCONSTS
	ROWS(BLK50, 22, FLOAT50, FLOAT50_4, ONE50, row50, grp50, tail50, one50, rowend50, done50)

// func rowsQ5_1AVX2(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, rows int, out *float32)
// Q5_1 blocks: f16 d, f16 m, qh[4], qs[16].
TEXT ·rowsQ5_1AVX2(SB), NOSPLIT, $64-64
	ARGS1
	LEGCONSTS
	ROWS(BLK51, 24, FLOAT1, FLOAT1_4, ONE51, row51, grp51, tail51, one51, rowend51, done51)

// func rowsQ4_1AVX2(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, rows int, out *float32)
// Q4_1 blocks: f16 d, f16 m, qs[16].
TEXT ·rowsQ4_1AVX2(SB), NOSPLIT, $64-64
	ARGS1
	LEGCONSTS
	ROWS(BLK41, 20, FLOAT1, FLOAT1_4, ONE41, row41, grp41, tail41, one41, rowend41, done41)

// func rows2Q5_0AVX2(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *int32, nb, rows int, out *float32)
TEXT ·rows2Q5_0AVX2(SB), NOSPLIT, $80-88
	ARGS2
	LEGCONSTS
	ROWS2(BLK2_50A, 22, FLOAT50A, FLOAT50BA, FLOAT50_4A, FLOAT50B_4A, ONE2_50, row250, grp250, tail250, one250, rowend250, done250)

// func rows2Q5_1AVX2(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *float32, nb, rows int, out *float32)
TEXT ·rows2Q5_1AVX2(SB), NOSPLIT, $80-88
	ARGS2
	LEGCONSTS
	ROWS2(BLK2_51A, 24, FLOAT1A, FLOAT1BA, FLOAT1_4A, FLOAT1B_4A, ONE2_51, row251, grp251, tail251, one251, rowend251, done251)

// func rows2Q4_1AVX2(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *float32, nb, rows int, out *float32)
TEXT ·rows2Q4_1AVX2(SB), NOSPLIT, $80-88
	ARGS2
	LEGCONSTS
	ROWS2(BLK2_41A, 20, FLOAT1A, FLOAT1BA, FLOAT1_4A, FLOAT1B_4A, ONE2_41, row241, grp241, tail241, one241, rowend241, done241)

// func rowsR2Q5_0AVX2(w *byte, stride int, x *byte, xd *float32, xs *int32, nb, pairs int, out *float32)
TEXT ·rowsR2Q5_0AVX2(SB), NOSPLIT, $112-64
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ xs+32(FP), R14
	MOVQ nb+40(FP), CX
	MOVQ pairs+48(FP), DX
	MOVQ out+56(FP), R9
	VMOVDQU legshift<>(SB), Y10
	LEGCONSTS
	ROWSRK(BLKR_50AV, 22, FLOATRR50A, FLOATRR50A_4, ONE50, rowr50, grpr50, tailr50, oner50, rowendr50, doner50)

// func rowsR2Q5_1AVX2(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, pairs int, out *float32)
TEXT ·rowsR2Q5_1AVX2(SB), NOSPLIT, $112-64
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ xs+32(FP), R14
	MOVQ nb+40(FP), CX
	MOVQ pairs+48(FP), DX
	MOVQ out+56(FP), R9
	VMOVDQU legshift<>(SB), Y10
	LEGCONSTS
	ROWSR(BLKR_51AV, 24, FLOAT1A, FLOATR1V, FLOAT1_4A, FLOATR1_4V, ONE51, rowr51, grpr51, tailr51, oner51, rowendr51, doner51)

// func rowsR2Q4_1AVX2(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, pairs int, out *float32)
TEXT ·rowsR2Q4_1AVX2(SB), NOSPLIT, $112-64
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ xs+32(FP), R14
	MOVQ nb+40(FP), CX
	MOVQ pairs+48(FP), DX
	MOVQ out+56(FP), R9
	VMOVDQU legshift<>(SB), Y10
	LEGCONSTS
	ROWSR(BLKR_41AV, 20, FLOAT1A, FLOATR1V, FLOAT1_4A, FLOATR1_4V, ONE41, rowr41, grpr41, tailr41, oner41, rowendr41, doner41)

// func rowsR2Q5_0VNNI(w *byte, stride int, x *byte, xd *float32, xs *int32, nb, pairs int, out *float32)
TEXT ·rowsR2Q5_0VNNI(SB), NOSPLIT, $112-64
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ xs+32(FP), R14
	MOVQ nb+40(FP), CX
	MOVQ pairs+48(FP), DX
	MOVQ out+56(FP), R9
	VMOVDQU legshift<>(SB), Y10
	VMOVDQU leg0f<>(SB), Y14
	LEGCONSTS
	ROWSRK(BLKRKX_50, 22, FLOATRR50K, FLOATRR50K_4, ONE50K, rowrk50, grprk50, tailrk50, onerk50, rowendrk50, donerk50)

// func rows2Q5_0VNNI(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *int32, nb, rows int, out *float32)
TEXT ·rows2Q5_0VNNI(SB), NOSPLIT, $80-88
	ARGS2
	LEGCONSTS
	ROWS2(BLK2KX_50, 22, FLOAT50X, FLOAT50BX, FLOAT50_4X, FLOAT50B_4X, ONE2_50K, row2k50, grp2k50, tail2k50, one2k50, rowend2k50, done2k50)

// func rowsR2Q5_1VNNI(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, pairs int, out *float32)
TEXT ·rowsR2Q5_1VNNI(SB), NOSPLIT, $112-64
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ xs+32(FP), R14
	MOVQ nb+40(FP), CX
	MOVQ pairs+48(FP), DX
	MOVQ out+56(FP), R9
	VMOVDQU legshift<>(SB), Y10
	LEGCONSTS
	ROWSR(BLKRKX_51V, 24, FLOAT1X, FLOATR1V, FLOAT1_4X, FLOATR1_4V, ONE51K, rowrk51, grprk51, tailrk51, onerk51, rowendrk51, donerk51)

// func rows2Q5_1VNNI(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *float32, nb, rows int, out *float32)
TEXT ·rows2Q5_1VNNI(SB), NOSPLIT, $80-88
	ARGS2
	LEGCONSTS
	ROWS2(BLK2KX_51, 24, FLOAT1X, FLOAT1BX, FLOAT1_4X, FLOAT1B_4X, ONE2_51K, row2k51, grp2k51, tail2k51, one2k51, rowend2k51, done2k51)

// func rowsR2Q4_1VNNI(w *byte, stride int, x *byte, xd *float32, xs *float32, nb, pairs int, out *float32)
TEXT ·rowsR2Q4_1VNNI(SB), NOSPLIT, $112-64
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ xs+32(FP), R14
	MOVQ nb+40(FP), CX
	MOVQ pairs+48(FP), DX
	MOVQ out+56(FP), R9
	VMOVDQU legshift<>(SB), Y10
	LEGCONSTS
	ROWSR(BLKRKX_41V, 20, FLOAT1X, FLOATR1V, FLOAT1_4X, FLOATR1_4V, ONE41, rowrk41, grprk41, tailrk41, onerk41, rowendrk41, donerk41)

// func rows2Q4_1VNNI(w *byte, stride int, x0, x1 *byte, xd0, xd1 *float32, xs0, xs1 *float32, nb, rows int, out *float32)
TEXT ·rows2Q4_1VNNI(SB), NOSPLIT, $80-88
	ARGS2
	LEGCONSTS
	ROWS2(BLK2KX_41, 20, FLOAT1X, FLOAT1BX, FLOAT1_4X, FLOAT1B_4X, ONE2_41, row2k41, grp2k41, tail2k41, one2k41, rowend2k41, done2k41)

// 0x0f bytes and int16 ones.
DATA leg0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA leg0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA leg0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA leg0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL leg0f<>(SB), RODATA|NOPTR, $32

DATA legones<>+0(SB)/8, $0x0001000100010001
DATA legones<>+8(SB)/8, $0x0001000100010001
DATA legones<>+16(SB)/8, $0x0001000100010001
DATA legones<>+24(SB)/8, $0x0001000100010001
GLOBL legones<>(SB), RODATA|NOPTR, $32

// 0x10 bytes: the fifth bit of a 5-bit quant.
DATA legx10<>+0(SB)/8, $0x1010101010101010
DATA legx10<>+8(SB)/8, $0x1010101010101010
DATA legx10<>+16(SB)/8, $0x1010101010101010
DATA legx10<>+24(SB)/8, $0x1010101010101010
GLOBL legx10<>(SB), RODATA|NOPTR, $32

// NIB8's shift counts: 0 for the low lane's quadwords, 4 for the high lane's.
DATA legshift<>+0(SB)/8, $0
DATA legshift<>+8(SB)/8, $0
DATA legshift<>+16(SB)/8, $4
DATA legshift<>+24(SB)/8, $4
GLOBL legshift<>(SB), RODATA|NOPTR, $32

// VPSHUFB indices spreading a broadcast qh word: byte i of the low lane takes qh byte i/8,
// byte i of the high lane qh byte 2+i/8.
DATA legspread<>+0(SB)/8, $0x0000000000000000
DATA legspread<>+8(SB)/8, $0x0101010101010101
DATA legspread<>+16(SB)/8, $0x0202020202020202
DATA legspread<>+24(SB)/8, $0x0303030303030303
GLOBL legspread<>(SB), RODATA|NOPTR, $32

// The four-vector kernels (prefill, AVX-512 BW/VL/VNNI): rows against four activation vectors
// in one pass, each block group's weights unpacked once into Y16..Y23 and used by all four
// vectors, whose float sums (X0, X5, X14, X15) are four independent chains; each vector's
// float operations are the one-vector kernels', so the results equal the Go twins'. nb must
// be a multiple of four (groups of eight, then at most one of four). Registers: SI row, AX
// stride, DX rows, R9 out (four per row), DI x0, CX x1, R8 x2, R14 x3, R13 one of xd0..xd3 or
// xs0..xs3 at a time; per row R10 block, R11 the Q8_0 block's offset in the x's, R12 the
// offset in the scales and sums, BX blocks left; X12 the group's F16 scales d and (Q5_1, Q4_1)
// X13 its minima m (VPINSRW).

// WQ50(K, Q), WQ51(K, Q), WQ41(K, Q): block K of the group at R10: its F16 scale (and
// minimum) into lane K of X12 (and X13), its unsigned quants into Q.
#define WQ50(K, Q) \
	VPINSRW $(K), ((K)*22)(R10), X12, X12 \
	VBROADCASTI32X4 ((K)*22+6)(R10), Q \
	VPSRLVQ Y10, Q, Q \
	VPANDD leg0f<>(SB), Q, Q \
	KMOVD ((K)*22+2)(R10), K1 \
	VPADDB Y11, Q, K1, Q

#define WQ51(K, Q) \
	VPINSRW $(K), ((K)*24)(R10), X12, X12 \
	VPINSRW $(K), ((K)*24+2)(R10), X13, X13 \
	VBROADCASTI32X4 ((K)*24+8)(R10), Q \
	VPSRLVQ Y10, Q, Q \
	VPANDD leg0f<>(SB), Q, Q \
	KMOVD ((K)*24+4)(R10), K1 \
	VPADDB Y11, Q, K1, Q

#define WQ41(K, Q) \
	VPINSRW $(K), ((K)*20)(R10), X12, X12 \
	VPINSRW $(K), ((K)*20+2)(R10), X13, X13 \
	VBROADCASTI32X4 ((K)*20+4)(R10), Q \
	VPSRLVQ Y10, Q, Q \
	VPANDD leg0f<>(SB), Q, Q

// DPQ(K, Q, BA, BB, YA, YB): the int32 sums of four products of the quants Q of block K with
// its Q8_0 blocks in x at BA (into YA) and at BB (into YB).
#define DPQ(K, Q, BA, BB, YA, YB) \
	VPXOR YA, YA, YA \
	VPDPBUSD ((K)*34+2)(BA)(R11*1), Q, YA \
	VPXOR YB, YB, YB \
	VPDPBUSD ((K)*34+2)(BB)(R11*1), Q, YB

#define PAIRQ(K, QA, QB, BA, BB, YA, YB, YC, YD) \
	DPQ(K, QA, BA, BB, YA, YC) \
	DPQ((K+1), QB, BA, BB, YB, YD) \
	VPHADDD YB, YA, YA \
	VPHADDD YD, YC, YC

// GROUP8Q(BA, BB): GROUP8X2 from the unpacked quants Y16..Y23, the vectors at BA and BB:
// totals of BA's in Y3, of BB's in Y8. Clobbers Y1..Y4, Y6..Y9.
#define GROUP8Q(BA, BB) \
	PAIRQ(0, Y16, Y17, BA, BB, Y1, Y2, Y6, Y7) \
	PAIRQ(2, Y18, Y19, BA, BB, Y2, Y3, Y7, Y8) \
	VPHADDD Y2, Y1, Y1 \
	VPHADDD Y7, Y6, Y6 \
	PAIRQ(4, Y20, Y21, BA, BB, Y2, Y3, Y7, Y8) \
	PAIRQ(6, Y22, Y23, BA, BB, Y3, Y4, Y8, Y9) \
	VPHADDD Y3, Y2, Y2 \
	VPHADDD Y8, Y7, Y7 \
	VPERM2I128 $0x20, Y2, Y1, Y3 \
	VPERM2I128 $0x31, Y2, Y1, Y4 \
	VPADDD Y4, Y3, Y3 \
	VPERM2I128 $0x20, Y7, Y6, Y8 \
	VPERM2I128 $0x31, Y7, Y6, Y9 \
	VPADDD Y9, Y8, Y8

// GROUP4Q(BA, BB): GROUP8Q for four blocks (Y16..Y19; totals in X3 and X8).
#define GROUP4Q(BA, BB) \
	PAIRQ(0, Y16, Y17, BA, BB, Y1, Y2, Y6, Y7) \
	PAIRQ(2, Y18, Y19, BA, BB, Y2, Y3, Y7, Y8) \
	VPHADDD Y2, Y1, Y1 \
	VPHADDD Y7, Y6, Y6 \
	VEXTRACTI128 $1, Y1, X2 \
	VPADDD X2, X1, X3 \
	VEXTRACTI128 $1, Y6, X7 \
	VPADDD X7, X6, X8

// ADDQ8(SUM), ADDQ4(SUM): SUM += the eight (four) float32 lanes of Y4 (X4), in order.
#define ADDQ8(SUM) \
	VMOVUPS Y4, (SP) \
	VADDSS 0(SP), SUM, SUM \
	VADDSS 4(SP), SUM, SUM \
	VADDSS 8(SP), SUM, SUM \
	VADDSS 12(SP), SUM, SUM \
	VADDSS 16(SP), SUM, SUM \
	VADDSS 20(SP), SUM, SUM \
	VADDSS 24(SP), SUM, SUM \
	VADDSS 28(SP), SUM, SUM

#define ADDQ4(SUM) \
	VMOVUPS X4, (SP) \
	VADDSS 0(SP), SUM, SUM \
	VADDSS 4(SP), SUM, SUM \
	VADDSS 8(SP), SUM, SUM \
	VADDSS 12(SP), SUM, SUM

// FLT50(XS, XD, T, SUM): FLOAT50X for the totals in T of the vector whose Q8Sum8 and scales
// are at the argument slots XS and XD, added in block order to SUM. Clobbers Y4, R13.
// FLT50_4: the same for four blocks (T an X register).
#define FLT50(XS, XD, T, SUM) \
	MOVQ XS, R13 \
	VMOVDQU (R13)(R12*1), Y4 \
	VPADDD Y4, Y4, Y4 \
	VPSUBD Y4, T, T \
	VCVTDQ2PS T, T \
	MOVQ XD, R13 \
	VCVTPH2PS X12, Y4 \
	VMULPS (R13)(R12*1), Y4, Y4 \
	VMULPS Y4, T, Y4 \
	ADDQ8(SUM)

#define FLT50_4(XS, XD, T, SUM) \
	MOVQ XS, R13 \
	VMOVDQU (R13)(R12*1), X4 \
	VPADDD X4, X4, X4 \
	VPSUBD X4, T, T \
	VCVTDQ2PS T, T \
	MOVQ XD, R13 \
	VCVTPH2PS X12, X4 \
	VMULPS (R13)(R12*1), X4, X4 \
	VMULPS X4, T, X4 \
	ADDQ4(SUM)

// FLT1(XS, XD, T, SUM), FLT1_4: FLOAT1BX's d_w*d_x*float32(t) + m_w*s_x for the vector whose
// sums S and scales are at the argument slots XS and XD. Clobbers Y4, Y28, R13.
#define FLT1(XS, XD, T, SUM) \
	MOVQ XS, R13 \
	VCVTPH2PS X13, Y28 \
	VMULPS (R13)(R12*1), Y28, Y28 \
	MOVQ XD, R13 \
	VCVTDQ2PS T, T \
	VCVTPH2PS X12, Y4 \
	VMULPS (R13)(R12*1), Y4, Y4 \
	VMULPS T, Y4, Y4 \
	VADDPS Y28, Y4, Y4 \
	ADDQ8(SUM)

#define FLT1_4(XS, XD, T, SUM) \
	MOVQ XS, R13 \
	VCVTPH2PS X13, X28 \
	VMULPS (R13)(R12*1), X28, X28 \
	MOVQ XD, R13 \
	VCVTDQ2PS T, T \
	VCVTPH2PS X12, X4 \
	VMULPS (R13)(R12*1), X4, X4 \
	VMULPS T, X4, X4 \
	VADDPS X28, X4, X4 \
	ADDQ4(SUM)

// ROWS4(WQ, BS, FLT, FLT4, labels...): the four-vector row loop.
#define ROWS4(WQ, BS, FLT, FLT4, ROW, GRP, TAIL, ROWEND, END) \
	MOVQ w+0(FP), SI \
	MOVQ stride+8(FP), AX \
	MOVQ x0+16(FP), DI \
	MOVQ x1+24(FP), CX \
	MOVQ x2+32(FP), R8 \
	MOVQ x3+40(FP), R14 \
	MOVQ rows+120(FP), DX \
	MOVQ out+128(FP), R9 \
	VMOVDQU legshift<>(SB), Y10 \
	MOVL $0x10101010, R10 \
	VMOVD R10, X11 \
	VPBROADCASTD X11, Y11 \
	TESTQ DX, DX \
	JZ END \
	MOVQ nb+112(FP), BX \
	TESTQ BX, BX \
	JZ END \
ROW: \
	MOVQ SI, R10 \
	XORQ R11, R11 \
	XORQ R12, R12 \
	MOVQ nb+112(FP), BX \
	VXORPS X0, X0, X0 \
	VXORPS X5, X5, X5 \
	VXORPS X14, X14, X14 \
	VXORPS X15, X15, X15 \
GRP: \
	CMPQ BX, $8 \
	JLT TAIL \
	WQ(0, Y16) \
	WQ(1, Y17) \
	WQ(2, Y18) \
	WQ(3, Y19) \
	WQ(4, Y20) \
	WQ(5, Y21) \
	WQ(6, Y22) \
	WQ(7, Y23) \
	GROUP8Q(DI, CX) \
	FLT(xs0+80(FP), xd0+48(FP), Y3, X0) \
	FLT(xs1+88(FP), xd1+56(FP), Y8, X5) \
	GROUP8Q(R8, R14) \
	FLT(xs2+96(FP), xd2+64(FP), Y3, X14) \
	FLT(xs3+104(FP), xd3+72(FP), Y8, X15) \
	ADDQ $(8*BS), R10 \
	ADDQ $(8*34), R11 \
	ADDQ $32, R12 \
	SUBQ $8, BX \
	JMP GRP \
TAIL: \
	TESTQ BX, BX \
	JZ ROWEND \
	WQ(0, Y16) \
	WQ(1, Y17) \
	WQ(2, Y18) \
	WQ(3, Y19) \
	GROUP4Q(DI, CX) \
	FLT4(xs0+80(FP), xd0+48(FP), X3, X0) \
	FLT4(xs1+88(FP), xd1+56(FP), X8, X5) \
	GROUP4Q(R8, R14) \
	FLT4(xs2+96(FP), xd2+64(FP), X3, X14) \
	FLT4(xs3+104(FP), xd3+72(FP), X8, X15) \
ROWEND: \
	VMOVSS X0, (R9) \
	VMOVSS X5, 4(R9) \
	VMOVSS X14, 8(R9) \
	VMOVSS X15, 12(R9) \
	ADDQ $16, R9 \
	ADDQ AX, SI \
	DECQ DX \
	JNZ ROW \
END: \
	VZEROUPPER \
	RET

// The eight-vector kernels: ROWS4 for x0..x7, the weights of a group unpacked once for all
// eight. The x bases are read into DI and CX two at a time; the sums are X0, X5, X14, X15 and
// X24..X27; out gets eight per row.
#define GRP8V(XA, XB, SA, SB, DA, DB, UA, UB, FLT) \
	MOVQ XA, DI \
	MOVQ XB, CX \
	GROUP8Q(DI, CX) \
	FLT(SA, DA, Y3, UA) \
	FLT(SB, DB, Y8, UB)

#define GRP4V(XA, XB, SA, SB, DA, DB, UA, UB, FLT4) \
	MOVQ XA, DI \
	MOVQ XB, CX \
	GROUP4Q(DI, CX) \
	FLT4(SA, DA, X3, UA) \
	FLT4(SB, DB, X8, UB)

#define ROWS8(WQ, BS, FLT, FLT4, ROW, GRP, TAIL, ROWEND, END) \
	MOVQ w+0(FP), SI \
	MOVQ stride+8(FP), AX \
	MOVQ rows+216(FP), DX \
	MOVQ out+224(FP), R9 \
	VMOVDQU legshift<>(SB), Y10 \
	MOVL $0x10101010, R10 \
	VMOVD R10, X11 \
	VPBROADCASTD X11, Y11 \
	TESTQ DX, DX \
	JZ END \
	MOVQ nb+208(FP), BX \
	TESTQ BX, BX \
	JZ END \
ROW: \
	MOVQ SI, R10 \
	XORQ R11, R11 \
	XORQ R12, R12 \
	MOVQ nb+208(FP), BX \
	VXORPS X0, X0, X0 \
	VXORPS X5, X5, X5 \
	VXORPS X14, X14, X14 \
	VXORPS X15, X15, X15 \
	VPXORD X24, X24, X24 \
	VPXORD X25, X25, X25 \
	VPXORD X26, X26, X26 \
	VPXORD X27, X27, X27 \
GRP: \
	CMPQ BX, $8 \
	JLT TAIL \
	WQ(0, Y16) \
	WQ(1, Y17) \
	WQ(2, Y18) \
	WQ(3, Y19) \
	WQ(4, Y20) \
	WQ(5, Y21) \
	WQ(6, Y22) \
	WQ(7, Y23) \
	GRP8V(x0+16(FP), x1+24(FP), xs0+144(FP), xs1+152(FP), xd0+80(FP), xd1+88(FP), X0, X5, FLT) \
	GRP8V(x2+32(FP), x3+40(FP), xs2+160(FP), xs3+168(FP), xd2+96(FP), xd3+104(FP), X14, X15, FLT) \
	GRP8V(x4+48(FP), x5+56(FP), xs4+176(FP), xs5+184(FP), xd4+112(FP), xd5+120(FP), X24, X25, FLT) \
	GRP8V(x6+64(FP), x7+72(FP), xs6+192(FP), xs7+200(FP), xd6+128(FP), xd7+136(FP), X26, X27, FLT) \
	ADDQ $(8*BS), R10 \
	ADDQ $(8*34), R11 \
	ADDQ $32, R12 \
	SUBQ $8, BX \
	JMP GRP \
TAIL: \
	TESTQ BX, BX \
	JZ ROWEND \
	WQ(0, Y16) \
	WQ(1, Y17) \
	WQ(2, Y18) \
	WQ(3, Y19) \
	GRP4V(x0+16(FP), x1+24(FP), xs0+144(FP), xs1+152(FP), xd0+80(FP), xd1+88(FP), X0, X5, FLT4) \
	GRP4V(x2+32(FP), x3+40(FP), xs2+160(FP), xs3+168(FP), xd2+96(FP), xd3+104(FP), X14, X15, FLT4) \
	GRP4V(x4+48(FP), x5+56(FP), xs4+176(FP), xs5+184(FP), xd4+112(FP), xd5+120(FP), X24, X25, FLT4) \
	GRP4V(x6+64(FP), x7+72(FP), xs6+192(FP), xs7+200(FP), xd6+128(FP), xd7+136(FP), X26, X27, FLT4) \
ROWEND: \
	VMOVSS X0, (R9) \
	VMOVSS X5, 4(R9) \
	VMOVSS X14, 8(R9) \
	VMOVSS X15, 12(R9) \
	VMOVSS X24, 16(R9) \
	VMOVSS X25, 20(R9) \
	VMOVSS X26, 24(R9) \
	VMOVSS X27, 28(R9) \
	ADDQ $32, R9 \
	ADDQ AX, SI \
	DECQ DX \
	JNZ ROW \
END: \
	VZEROUPPER \
	RET

// func rows8Q5_0VNNI(w *byte, stride int, x0, x1, x2, x3, x4, x5, x6, x7 *byte, xd0, xd1, xd2, xd3, xd4, xd5, xd6, xd7 *float32, xs0, xs1, xs2, xs3, xs4, xs5, xs6, xs7 *int32, nb, rows int, out *float32)
TEXT ·rows8Q5_0VNNI(SB), NOSPLIT, $32-232
	ROWS8(WQ50, 22, FLT50, FLT50_4, row8k50, grp8k50, tail8k50, rowend8k50, done8k50)

// func rows8Q5_1VNNI(w *byte, stride int, x0, x1, x2, x3, x4, x5, x6, x7 *byte, xd0, xd1, xd2, xd3, xd4, xd5, xd6, xd7 *float32, xs0, xs1, xs2, xs3, xs4, xs5, xs6, xs7 *float32, nb, rows int, out *float32)
TEXT ·rows8Q5_1VNNI(SB), NOSPLIT, $32-232
	ROWS8(WQ51, 24, FLT1, FLT1_4, row8k51, grp8k51, tail8k51, rowend8k51, done8k51)

// func rows8Q4_1VNNI(w *byte, stride int, x0, x1, x2, x3, x4, x5, x6, x7 *byte, xd0, xd1, xd2, xd3, xd4, xd5, xd6, xd7 *float32, xs0, xs1, xs2, xs3, xs4, xs5, xs6, xs7 *float32, nb, rows int, out *float32)
TEXT ·rows8Q4_1VNNI(SB), NOSPLIT, $32-232
	ROWS8(WQ41, 20, FLT1, FLT1_4, row8k41, grp8k41, tail8k41, rowend8k41, done8k41)

// func rows4Q5_0VNNI(w *byte, stride int, x0, x1, x2, x3 *byte, xd0, xd1, xd2, xd3 *float32, xs0, xs1, xs2, xs3 *int32, nb, rows int, out *float32)
TEXT ·rows4Q5_0VNNI(SB), NOSPLIT, $32-136
	ROWS4(WQ50, 22, FLT50, FLT50_4, row4k50, grp4k50, tail4k50, rowend4k50, done4k50)

// func rows4Q5_1VNNI(w *byte, stride int, x0, x1, x2, x3 *byte, xd0, xd1, xd2, xd3 *float32, xs0, xs1, xs2, xs3 *float32, nb, rows int, out *float32)
TEXT ·rows4Q5_1VNNI(SB), NOSPLIT, $32-136
	ROWS4(WQ51, 24, FLT1, FLT1_4, row4k51, grp4k51, tail4k51, rowend4k51, done4k51)

// func rows4Q4_1VNNI(w *byte, stride int, x0, x1, x2, x3 *byte, xd0, xd1, xd2, xd3 *float32, xs0, xs1, xs2, xs3 *float32, nb, rows int, out *float32)
TEXT ·rows4Q4_1VNNI(SB), NOSPLIT, $32-136
	ROWS4(WQ41, 20, FLT1, FLT1_4, row4k41, grp4k41, tail4k41, rowend4k41, done4k41)
