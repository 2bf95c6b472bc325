//go:build amd64 && !noasm

#include "textflag.h"

// K-quant dot products against Q8_K activations (AVX2), rows one after the other in one call:
// row r of rows (stride bytes apart, nb blocks each) against x, into out[r]. Per block the
// integer sums are exact (VPMADDUBSW of unsigned quants with the int8 activations cannot
// saturate: at most 63*128*2 per pair), reduced to one int32 total, and the float operations
// are the Go twins' (dotQ4_K, dotQ5_K, dotQ6_K) in the same order, so results are bit-equal.
//
// Registers: SI row, AX stride, DI x, CX nb, DX rows, R9 out; R10 block, R11 Q8_K block,
// BX blocks left; X0 the row's float sum.

// Q8_K block: D float32 at 0, Qs [256]int8 at 4, Bsums [16]int16 at 260; 292 bytes.
#define Q8K_QS 4
#define Q8K_BSUMS 260
#define Q8K_SIZE 292

#define ARGS \
	MOVQ w+0(FP), SI \
	MOVQ stride+8(FP), AX \
	MOVQ x+16(FP), DI \
	MOVQ nb+24(FP), CX \
	MOVQ rows+32(FP), DX \
	MOVQ out+40(FP), R9

// DWORDS(R, V): the 32-bit constant V in every lane of R.
#define DWORDS(R, V) \
	MOVL $V, R8 \
	VMOVD R8, X7 \
	VPBROADCASTD X7, R

// KROWS(BLOCK, SIZE): the row and block loops around BLOCK (labels are per function).
#define KROWS(BLOCK, SIZE) \
	TESTQ DX, DX \
	JZ done \
row: \
	MOVQ SI, R10 \
	MOVQ DI, R11 \
	MOVQ CX, BX \
	VXORPS X0, X0, X0 \
blk: \
	BLOCK \
	ADDQ $SIZE, R10 \
	ADDQ $Q8K_SIZE, R11 \
	DECQ BX \
	JNZ blk \
	MOVSS X0, (R9) \
	ADDQ $4, R9 \
	ADDQ AX, SI \
	DECQ DX \
	JNZ row \
done: \
	VZEROUPPER \
	RET

// SCMIN: the 6-bit scales and mins of the 8 sub-blocks of a Q4_K/Q5_K block (12 bytes at
// 4(R10)) as int16 words: Y1 = scales 0..7 in both 128-bit lanes, Y2 = mins each twice
// (m0 m0 m1 m1 ... m7 m7, one per Q8_K sum of 16), and Y3 = Y2 * Bsums in 8 int32 lanes.
#define SCMIN \
	MOVL 4(R10), R12 \
	MOVL 8(R10), R13 \
	MOVL 12(R10), R14 \
	MOVL R12, R15 \
	SHRL $6, R15 \
	ANDL $0x03030303, R15 \
	SHLL $4, R15 \
	MOVL R14, R8 \
	ANDL $0x0f0f0f0f, R8 \
	ORL R8, R15 \
	ANDL $0x3f3f3f3f, R12 \
	SHLQ $32, R15 \
	ORQ R15, R12 \
	MOVL R13, R15 \
	SHRL $6, R15 \
	ANDL $0x03030303, R15 \
	SHLL $4, R15 \
	SHRL $4, R14 \
	ANDL $0x0f0f0f0f, R14 \
	ORL R14, R15 \
	ANDL $0x3f3f3f3f, R13 \
	SHLQ $32, R15 \
	ORQ R15, R13 \
	VMOVQ R12, X1 \
	VPMOVZXBW X1, X1 \
	VINSERTI128 $1, X1, Y1, Y1 \
	VMOVQ R13, X2 \
	VPUNPCKLBW X2, X2, X2 \
	VPMOVZXBW X2, Y2 \
	VPMADDWD Q8K_BSUMS(R11), Y2, Y3

// PAIR45(J, ACC): sub-blocks 2j and 2j+1 (levels in Y4 and Y5, 32 each) against activations
// 64j..64j+63, times their scales, into ACC (int32 lanes).
#define PAIR45(J, ACC) \
	VPMADDUBSW (Q8K_QS+64*J)(R11), Y4, Y4 \
	VPMADDUBSW (Q8K_QS+64*J+32)(R11), Y5, Y5 \
	VPSHUFB kq45shuf<>+(64*J)(SB), Y1, Y6 \
	VPSHUFB kq45shuf<>+(64*J+32)(SB), Y1, Y7 \
	VPMADDWD Y6, Y4, Y4 \
	VPMADDWD Y7, Y5, Y5 \
	VPADDD Y4, ACC, ACC \
	VPADDD Y5, ACC, ACC

// NIB4(OFF): the low and high nibbles of the 32 bytes at OFF(R10) into Y4 and Y5 (Y15: 0x0f).
#define NIB4(OFF) \
	VMOVDQU OFF(R10), Y4 \
	VPSRLW $4, Y4, Y5 \
	VPAND Y15, Y4, Y4 \
	VPAND Y15, Y5, Y5

// FIN45: sum += d*float32(sumi) - dmin*float32(summ), with d and dmin the block's F16
// scales times the Q8_K scale, sumi the lanes of Y8 and summ those of Y3.
#define FIN45 \
	VPHADDD Y3, Y8, Y8 \
	VEXTRACTI128 $1, Y8, X9 \
	VPADDD X9, X8, X8 \
	VPHADDD X8, X8, X8 \
	VCVTDQ2PS X8, X8 \
	VMOVD (R10), X10 \
	VCVTPH2PS X10, X10 \
	VBROADCASTSS (R11), X11 \
	VMULPS X11, X10, X10 \
	VMULPS X8, X10, X10 \
	VMOVSHDUP X10, X11 \
	VSUBSS X11, X10, X10 \
	VADDSS X10, X0, X0

// Q4_K block: f16 d, f16 dmin, scales[12], qs[128] (sub-blocks 2j, 2j+1 in the low and high
// nibbles of qs[32j:32j+32]).
#define Q4KBLOCK \
	SCMIN \
	NIB4(16) \
	VPMADDUBSW (Q8K_QS)(R11), Y4, Y4 \
	VPMADDUBSW (Q8K_QS+32)(R11), Y5, Y5 \
	VPSHUFB kq45shuf<>+0(SB), Y1, Y6 \
	VPSHUFB kq45shuf<>+32(SB), Y1, Y7 \
	VPMADDWD Y6, Y4, Y8 \
	VPMADDWD Y7, Y5, Y5 \
	VPADDD Y5, Y8, Y8 \
	NIB4(48) \
	PAIR45(1, Y8) \
	NIB4(80) \
	PAIR45(2, Y8) \
	NIB4(112) \
	PAIR45(3, Y8) \
	FIN45

// func dotQ4_KRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)
TEXT ·dotQ4_KRowsAVX2(SB), NOSPLIT, $0-48
	ARGS
	DWORDS(Y15, 0x0f0f0f0f)
	KROWS(Q4KBLOCK, 144)

// HI5(J): adds the fifth bits of sub-blocks 2j and 2j+1 (bits 0 and 1 of Y12, qh shifted
// right by 2j) to Y4 and Y5 as 16s, then shifts Y12 on. Y14: 0x01 bytes, Y13: 0x02 bytes.
#define HI5 \
	VPAND Y14, Y12, Y6 \
	VPSLLW $4, Y6, Y6 \
	VPOR Y6, Y4, Y4 \
	VPAND Y13, Y12, Y7 \
	VPSLLW $3, Y7, Y7 \
	VPOR Y7, Y5, Y5 \
	VPSRLW $2, Y12, Y12

// Q5_K block: f16 d, f16 dmin, scales[12], qh[32], qs[128].
#define Q5KBLOCK \
	SCMIN \
	VMOVDQU 16(R10), Y12 \
	NIB4(48) \
	HI5 \
	VPMADDUBSW (Q8K_QS)(R11), Y4, Y4 \
	VPMADDUBSW (Q8K_QS+32)(R11), Y5, Y5 \
	VPSHUFB kq45shuf<>+0(SB), Y1, Y6 \
	VPSHUFB kq45shuf<>+32(SB), Y1, Y7 \
	VPMADDWD Y6, Y4, Y8 \
	VPMADDWD Y7, Y5, Y5 \
	VPADDD Y5, Y8, Y8 \
	NIB4(80) \
	HI5 \
	PAIR45(1, Y8) \
	NIB4(112) \
	HI5 \
	PAIR45(2, Y8) \
	NIB4(144) \
	HI5 \
	PAIR45(3, Y8) \
	FIN45

// func dotQ5_KRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)
TEXT ·dotQ5_KRowsAVX2(SB), NOSPLIT, $0-48
	ARGS
	DWORDS(Y15, 0x0f0f0f0f)
	DWORDS(Y14, 0x01010101)
	DWORDS(Y13, 0x02020202)
	KROWS(Q5KBLOCK, 176)

// AVX-512 (VL, VNNI) form of the Q5_K kernel, same integers and float steps: each fifth bit is
// moved to bit 4 of its byte by one word shift of qh (Y12, kept whole) and merged into the
// nibbles by VPTERNLOGD (dst | (src & 0x10)), and VPDPWSSD does the scale multiply and the add.
// Sub-blocks 2j accumulate in Y8, 2j+1 in Y9 (two dependency chains). Y14: 0x10 bytes.

// HIB(SHIFT, N, L): bit 4 of (qh SHIFT N) into the levels L.
#define HIB(SHIFT, N, L) \
	SHIFT $N, Y12, Y6 \
	VPTERNLOGD $0xf8, Y14, Y6, L

// PAIRV(J): sub-blocks 2j and 2j+1 (levels in Y4 and Y5) against activations 64j..64j+63,
// times their scales, into Y8 and Y9.
#define PAIRV(J) \
	VPMADDUBSW (Q8K_QS+64*J)(R11), Y4, Y4 \
	VPMADDUBSW (Q8K_QS+64*J+32)(R11), Y5, Y5 \
	VPSHUFB kq45shuf<>+(64*J)(SB), Y1, Y6 \
	VPSHUFB kq45shuf<>+(64*J+32)(SB), Y1, Y7 \
	VPDPWSSD Y6, Y4, Y8 \
	VPDPWSSD Y7, Y5, Y9

#define Q5KBLOCKV \
	SCMIN \
	VMOVDQU 16(R10), Y12 \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y9, Y9, Y9 \
	NIB4(48) \
	HIB(VPSLLW, 4, Y4) \
	HIB(VPSLLW, 3, Y5) \
	PAIRV(0) \
	NIB4(80) \
	HIB(VPSLLW, 2, Y4) \
	HIB(VPSLLW, 1, Y5) \
	PAIRV(1) \
	NIB4(112) \
	VPTERNLOGD $0xf8, Y14, Y12, Y4 \
	HIB(VPSRLW, 1, Y5) \
	PAIRV(2) \
	NIB4(144) \
	HIB(VPSRLW, 2, Y4) \
	HIB(VPSRLW, 3, Y5) \
	PAIRV(3) \
	VPADDD Y9, Y8, Y8 \
	FIN45

// func dotQ5_KRowsVNNI(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)
TEXT ·dotQ5_KRowsVNNI(SB), NOSPLIT, $0-48
	ARGS
	DWORDS(Y15, 0x0f0f0f0f)
	DWORDS(Y14, 0x10101010)
	KROWS(Q5KBLOCKV, 176)

// Q6_K: the levels are stored as 0..63 (q+32); a block's sum is
// sum_k sc[k]*sum(level*x) - 32*sum_k sc[k]*Bsums[k], exactly the Go twin's integer.
// Y15: 0x0f bytes, Y14: 0x30 bytes; Y1 = the 16 int8 scales as words, Y5/Y6 = scales 0..7 /
// 8..15 in both lanes; Y3 = 32*sum sc*Bsums lanes; Y8 the sum.

// Q6ONE(L, AOFF, K, SC): levels L (low nibble | high bits, 32 bytes) against activations AOFF
// of the current half, times scale words 2K (bytes 0..15) and 2K+1 (16..31) of SC.
#define Q6ONE(L, AOFF, K, SC) \
	VPMADDUBSW AOFF, L, L \
	VPSHUFB kq6shuf<>+(32*K)(SB), SC, Y7 \
	VPMADDWD Y7, L, L \
	VPADDD L, Y8, Y8

// Q6HALF(N, SC): elements 128n..128n+127: ql[64n:64n+64], qh[32n:32n+32].
#define Q6HALF(N, SC) \
	VMOVDQU (64*N)(R10), Y9 \
	VMOVDQU (64*N+32)(R10), Y10 \
	VMOVDQU (128+32*N)(R10), Y11 \
	VPAND Y15, Y9, Y4 \
	VPSLLW $4, Y11, Y12 \
	VPAND Y14, Y12, Y12 \
	VPOR Y12, Y4, Y4 \
	Q6ONE(Y4, (Q8K_QS+128*N)(R11), 0, SC) \
	VPAND Y15, Y10, Y4 \
	VPSLLW $2, Y11, Y12 \
	VPAND Y14, Y12, Y12 \
	VPOR Y12, Y4, Y4 \
	Q6ONE(Y4, (Q8K_QS+128*N+32)(R11), 1, SC) \
	VPSRLW $4, Y9, Y4 \
	VPAND Y15, Y4, Y4 \
	VPAND Y14, Y11, Y12 \
	VPOR Y12, Y4, Y4 \
	Q6ONE(Y4, (Q8K_QS+128*N+64)(R11), 2, SC) \
	VPSRLW $4, Y10, Y4 \
	VPAND Y15, Y4, Y4 \
	VPSRLW $2, Y11, Y12 \
	VPAND Y14, Y12, Y12 \
	VPOR Y12, Y4, Y4 \
	Q6ONE(Y4, (Q8K_QS+128*N+96)(R11), 3, SC)

// Q6_K block: ql[128], qh[64], int8 scales[16], f16 d; sum += d*D*float32(sumi).
#define Q6KBLOCK \
	VPMOVSXBW 192(R10), Y1 \
	VPMADDWD Q8K_BSUMS(R11), Y1, Y3 \
	VPSLLD $5, Y3, Y3 \
	VPERMQ $0x44, Y1, Y5 \
	VPERMQ $0xee, Y1, Y6 \
	VPXOR Y8, Y8, Y8 \
	Q6HALF(0, Y5) \
	Q6HALF(1, Y6) \
	VPSUBD Y3, Y8, Y8 \
	VEXTRACTI128 $1, Y8, X9 \
	VPADDD X9, X8, X8 \
	VPHADDD X8, X8, X8 \
	VPHADDD X8, X8, X8 \
	VCVTDQ2PS X8, X8 \
	MOVWLZX 208(R10), R12 \
	VMOVD R12, X10 \
	VCVTPH2PS X10, X10 \
	VMULSS (R11), X10, X10 \
	VMULSS X8, X10, X10 \
	VADDSS X10, X0, X0

// func dotQ6_KRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)
TEXT ·dotQ6_KRowsAVX2(SB), NOSPLIT, $0-48
	ARGS
	DWORDS(Y15, 0x0f0f0f0f)
	DWORDS(Y14, 0x30303030)
	KROWS(Q6KBLOCK, 210)

// Q3_K block: hmask[32], qs[64], scales[12], f16 d. A level is u-4 with u = the 2 low bits
// | the hmask bit<<2 (0..7): sumi = sum sc*(u*a) - 4*sum sc*Bsums, the u*a by VPMADDUBSW
// (at most 7*128*2 per pair), then sum += d*D*float32(sumi) as in dotQ3_K.
// Y15: 0x03 bytes, Y14: 0x04 bytes, Y13: 0x20 bytes.

// Q3SCALES: the sixteen 6-bit scales minus 32 as int16 words in Y1. Byte s%8 of scales[0:8]
// holds the low 4 bits (s < 8 low nibble, else high); byte 8+s%4 the high 2 at bit 2*(s/4).
#define Q3SCALES \
	MOVQ 96(R10), R12 \
	MOVL 104(R10), R13 \
	MOVQ $0x0f0f0f0f0f0f0f0f, R8 \
	MOVQ R12, R14 \
	ANDQ R8, R14 \
	SHRQ $4, R12 \
	ANDQ R8, R12 \
	MOVL R13, R15 \
	ANDL $0x03030303, R15 \
	MOVL R13, R8 \
	SHRL $2, R8 \
	ANDL $0x03030303, R8 \
	SHLQ $32, R8 \
	ORQ R8, R15 \
	SHLQ $4, R15 \
	ORQ R15, R14 \
	MOVL R13, R15 \
	SHRL $4, R15 \
	ANDL $0x03030303, R15 \
	SHRL $6, R13 \
	ANDL $0x03030303, R13 \
	SHLQ $32, R13 \
	ORQ R13, R15 \
	SHLQ $4, R15 \
	ORQ R15, R12 \
	VMOVQ R14, X1 \
	VPINSRQ $1, R12, X1, X1 \
	VPSUBB X13, X1, X1 \
	VPMOVSXBW X1, Y1

// Q3ONE(QSH, HINS, HSH, AOFF, K, SC): the 32 levels (qs bits QSH..QSH+1 of Y9, the hmask bit
// that HINS $HSH moves to bit 2 of Y11) against the activations at AOFF, times their scales.
#define Q3ONE(QSH, HINS, HSH, AOFF, K, SC) \
	VPSRLW $QSH, Y9, Y4 \
	VPAND Y15, Y4, Y4 \
	HINS $HSH, Y11, Y12 \
	VPAND Y14, Y12, Y12 \
	VPOR Y12, Y4, Y4 \
	Q6ONE(Y4, AOFF, K, SC)

#define Q3KBLOCK \
	Q3SCALES \
	VPMADDWD Q8K_BSUMS(R11), Y1, Y3 \
	VPSLLD $2, Y3, Y3 \
	VPERMQ $0x44, Y1, Y5 \
	VPERMQ $0xee, Y1, Y6 \
	VPXOR Y8, Y8, Y8 \
	VMOVDQU (R10), Y11 \
	VMOVDQU 32(R10), Y9 \
	Q3ONE(0, VPSLLW, 2, (Q8K_QS)(R11), 0, Y5) \
	Q3ONE(2, VPSLLW, 1, (Q8K_QS+32)(R11), 1, Y5) \
	Q3ONE(4, VPSRLW, 0, (Q8K_QS+64)(R11), 2, Y5) \
	Q3ONE(6, VPSRLW, 1, (Q8K_QS+96)(R11), 3, Y5) \
	VMOVDQU 64(R10), Y9 \
	Q3ONE(0, VPSRLW, 2, (Q8K_QS+128)(R11), 0, Y6) \
	Q3ONE(2, VPSRLW, 3, (Q8K_QS+160)(R11), 1, Y6) \
	Q3ONE(4, VPSRLW, 4, (Q8K_QS+192)(R11), 2, Y6) \
	Q3ONE(6, VPSRLW, 5, (Q8K_QS+224)(R11), 3, Y6) \
	VPSUBD Y3, Y8, Y8 \
	VEXTRACTI128 $1, Y8, X9 \
	VPADDD X9, X8, X8 \
	VPHADDD X8, X8, X8 \
	VPHADDD X8, X8, X8 \
	VCVTDQ2PS X8, X8 \
	MOVWLZX 108(R10), R12 \
	VMOVD R12, X10 \
	VCVTPH2PS X10, X10 \
	VMULSS (R11), X10, X10 \
	VMULSS X8, X10, X10 \
	VADDSS X10, X0, X0

// func dotQ3_KRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)
TEXT ·dotQ3_KRowsAVX2(SB), NOSPLIT, $0-48
	ARGS
	DWORDS(Y15, 0x03030303)
	DWORDS(Y14, 0x04040404)
	DWORDS(Y13, 0x20202020)
	KROWS(Q3KBLOCK, 110)

// Q2_K block: scales[16] (low nibble scale, high nibble min), qs[64], f16 d, f16 dmin:
// sumi = sum sc*(q*a) with q 0..3 by VPMADDUBSW, summ = sum min*Bsums, then
// sum += d*D*float32(sumi) - dmin*D*float32(summ) as in dotQ2_K. Y15: 0x0f bytes, Y14: 0x03.
#define Q2ONE(QSH, AOFF, K, SC) \
	VPSRLW $QSH, Y9, Y4 \
	VPAND Y14, Y4, Y4 \
	Q6ONE(Y4, AOFF, K, SC)

#define Q2KBLOCK \
	VMOVDQU (R10), X2 \
	VPAND X15, X2, X1 \
	VPSRLW $4, X2, X2 \
	VPAND X15, X2, X2 \
	VPMOVZXBW X1, Y1 \
	VPMOVZXBW X2, Y2 \
	VPMADDWD Q8K_BSUMS(R11), Y2, Y3 \
	VPERMQ $0x44, Y1, Y5 \
	VPERMQ $0xee, Y1, Y6 \
	VPXOR Y8, Y8, Y8 \
	VMOVDQU 16(R10), Y9 \
	Q2ONE(0, (Q8K_QS)(R11), 0, Y5) \
	Q2ONE(2, (Q8K_QS+32)(R11), 1, Y5) \
	Q2ONE(4, (Q8K_QS+64)(R11), 2, Y5) \
	Q2ONE(6, (Q8K_QS+96)(R11), 3, Y5) \
	VMOVDQU 48(R10), Y9 \
	Q2ONE(0, (Q8K_QS+128)(R11), 0, Y6) \
	Q2ONE(2, (Q8K_QS+160)(R11), 1, Y6) \
	Q2ONE(4, (Q8K_QS+192)(R11), 2, Y6) \
	Q2ONE(6, (Q8K_QS+224)(R11), 3, Y6) \
	VPHADDD Y3, Y8, Y8 \
	VEXTRACTI128 $1, Y8, X9 \
	VPADDD X9, X8, X8 \
	VPHADDD X8, X8, X8 \
	VCVTDQ2PS X8, X8 \
	VMOVD 80(R10), X10 \
	VCVTPH2PS X10, X10 \
	VBROADCASTSS (R11), X11 \
	VMULPS X11, X10, X10 \
	VMULPS X8, X10, X10 \
	VMOVSHDUP X10, X11 \
	VSUBSS X11, X10, X10 \
	VADDSS X10, X0, X0

// func dotQ2_KRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)
TEXT ·dotQ2_KRowsAVX2(SB), NOSPLIT, $0-48
	ARGS
	DWORDS(Y15, 0x0f0f0f0f)
	DWORDS(Y14, 0x03030303)
	KROWS(Q2KBLOCK, 84)


DATA kq45shuf<>+0(SB)/8, $0x0100010001000100
DATA kq45shuf<>+8(SB)/8, $0x0100010001000100
DATA kq45shuf<>+16(SB)/8, $0x0100010001000100
DATA kq45shuf<>+24(SB)/8, $0x0100010001000100
DATA kq45shuf<>+32(SB)/8, $0x0302030203020302
DATA kq45shuf<>+40(SB)/8, $0x0302030203020302
DATA kq45shuf<>+48(SB)/8, $0x0302030203020302
DATA kq45shuf<>+56(SB)/8, $0x0302030203020302
DATA kq45shuf<>+64(SB)/8, $0x0504050405040504
DATA kq45shuf<>+72(SB)/8, $0x0504050405040504
DATA kq45shuf<>+80(SB)/8, $0x0504050405040504
DATA kq45shuf<>+88(SB)/8, $0x0504050405040504
DATA kq45shuf<>+96(SB)/8, $0x0706070607060706
DATA kq45shuf<>+104(SB)/8, $0x0706070607060706
DATA kq45shuf<>+112(SB)/8, $0x0706070607060706
DATA kq45shuf<>+120(SB)/8, $0x0706070607060706
DATA kq45shuf<>+128(SB)/8, $0x0908090809080908
DATA kq45shuf<>+136(SB)/8, $0x0908090809080908
DATA kq45shuf<>+144(SB)/8, $0x0908090809080908
DATA kq45shuf<>+152(SB)/8, $0x0908090809080908
DATA kq45shuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq45shuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq45shuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq45shuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq45shuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq45shuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq45shuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq45shuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq45shuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA kq45shuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA kq45shuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA kq45shuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL kq45shuf<>(SB), RODATA|NOPTR, $256
DATA kq6shuf<>+0(SB)/8, $0x0100010001000100
DATA kq6shuf<>+8(SB)/8, $0x0100010001000100
DATA kq6shuf<>+16(SB)/8, $0x0302030203020302
DATA kq6shuf<>+24(SB)/8, $0x0302030203020302
DATA kq6shuf<>+32(SB)/8, $0x0504050405040504
DATA kq6shuf<>+40(SB)/8, $0x0504050405040504
DATA kq6shuf<>+48(SB)/8, $0x0706070607060706
DATA kq6shuf<>+56(SB)/8, $0x0706070607060706
DATA kq6shuf<>+64(SB)/8, $0x0908090809080908
DATA kq6shuf<>+72(SB)/8, $0x0908090809080908
DATA kq6shuf<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq6shuf<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq6shuf<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq6shuf<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq6shuf<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA kq6shuf<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL kq6shuf<>(SB), RODATA|NOPTR, $128

// Q8_K quantizer (ggml's quantize_row_q8_K_ref, the Go twin quantizeQ8_KBlock): per block of
// 256 the first element of largest magnitude (NaN ignored) gives iscale = -127/x and
// D = 1/iscale; quants are min(127, round-to-even(iscale*x)) kept as their low byte (the Go
// int8 conversion) and Bsums the sums of each 16. Equal to the Go twin for every input
// without NaN (Inf included); a NaN element's quant is 0 here and arbitrary there.
//
// Y15: 0x7fffffff, Y14: 127, Y13: 0xff (dwords); Y12: dword order 0 4 1 5 2 6 3 7; Y11: 0x01
// bytes; Y10: 0x0001 words.

// AMAX4(OFF): running maxima of |x| over 32 floats at OFF(SI) in Y0..Y3 (NaN keeps the max).
#define AMAX4(OFF) \
	VANDPS (OFF)(SI), Y15, Y4 \
	VANDPS (OFF+32)(SI), Y15, Y5 \
	VANDPS (OFF+64)(SI), Y15, Y6 \
	VANDPS (OFF+96)(SI), Y15, Y7 \
	VMAXPS Y0, Y4, Y0 \
	VMAXPS Y1, Y5, Y1 \
	VMAXPS Y2, Y6, Y2 \
	VMAXPS Y3, Y7, Y3

// Q32(C, R): quants of the 32 floats of chunk C stored, and their Bsums partial sums in R
// (8 int32 lanes: sums of 4 of the first 16, then of the second 16).
#define Q32(C, R) \
	VMULPS (128*(C))(SI), Y2, Y4 \
	VMULPS (128*(C)+32)(SI), Y2, Y5 \
	VMULPS (128*(C)+64)(SI), Y2, Y6 \
	VMULPS (128*(C)+96)(SI), Y2, Y7 \
	VCVTPS2DQ Y4, Y4 \
	VCVTPS2DQ Y5, Y5 \
	VCVTPS2DQ Y6, Y6 \
	VCVTPS2DQ Y7, Y7 \
	VPMINSD Y14, Y4, Y4 \
	VPMINSD Y14, Y5, Y5 \
	VPMINSD Y14, Y6, Y6 \
	VPMINSD Y14, Y7, Y7 \
	VPAND Y13, Y4, Y4 \
	VPAND Y13, Y5, Y5 \
	VPAND Y13, Y6, Y6 \
	VPAND Y13, Y7, Y7 \
	VPACKUSDW Y5, Y4, Y4 \
	VPACKUSDW Y7, Y6, Y6 \
	VPACKUSWB Y6, Y4, Y4 \
	VPERMD Y4, Y12, Y4 \
	VMOVDQU Y4, (Q8K_QS+32*(C))(DI) \
	VPMADDUBSW Y4, Y11, R \
	VPMADDWD Y10, R, R

// BSUM8(C): quants and Bsums of chunks C..C+3 (128 floats, 8 sums).
#define BSUM8(C) \
	Q32(C, Y8) \
	Q32(C+1, Y9) \
	VPHADDD Y9, Y8, Y8 \
	Q32(C+2, Y9) \
	Q32(C+3, Y3) \
	VPHADDD Y3, Y9, Y9 \
	VPHADDD Y9, Y8, Y8 \
	VPERMD Y8, Y12, Y8 \
	VPACKSSDW Y8, Y8, Y8 \
	VPERMQ $0x08, Y8, Y8 \
	VMOVDQU X8, (Q8K_BSUMS+4*(C))(DI)

// func quantizeQ8_KAVX2(x *float32, y *BlockQ8K, nb int)
TEXT ·quantizeQ8_KAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ nb+16(FP), CX
	DWORDS(Y15, 0x7fffffff)
	DWORDS(Y14, 127)
	DWORDS(Y13, 0xff)
	DWORDS(Y11, 0x01010101)
	DWORDS(Y10, 0x00010001)
	VMOVDQU kq8perm<>(SB), Y12
	TESTQ CX, CX
	JZ qdone
qblock:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	AMAX4(0)
	AMAX4(128)
	AMAX4(256)
	AMAX4(384)
	AMAX4(512)
	AMAX4(640)
	AMAX4(768)
	AMAX4(896)
	VMAXPS Y0, Y1, Y0
	VMAXPS Y2, Y3, Y2
	VMAXPS Y0, Y2, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X0, X1, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X0, X1, X0
	VXORPS X1, X1, X1
	VUCOMISS X1, X0
	JEQ qzero
	VBROADCASTSS X0, Y0
	XORQ R8, R8

qfind:
	VANDPS (SI)(R8*4), Y15, Y4
	VCMPPS $0, Y0, Y4, Y5
	VMOVMSKPS Y5, AX
	TESTL AX, AX
	JNZ qfound
	ADDQ $8, R8
	JMP qfind

qfound:
	BSFL AX, AX
	ADDQ R8, AX
	VMOVSS (SI)(AX*4), X1
	MOVL $0xc2fe0000, R8 // -127
	VMOVD R8, X2
	VDIVSS X1, X2, X2
	MOVL $0x3f800000, R8 // 1
	VMOVD R8, X3
	VDIVSS X2, X3, X3
	VMOVSS X3, (DI)
	VBROADCASTSS X2, Y2
	BSUM8(0)
	BSUM8(4)
	JMP qnext

qzero:
	VPXOR Y4, Y4, Y4
	VMOVDQU Y4, (DI)
	VMOVDQU Y4, 32(DI)
	VMOVDQU Y4, 64(DI)
	VMOVDQU Y4, 96(DI)
	VMOVDQU Y4, 128(DI)
	VMOVDQU Y4, 160(DI)
	VMOVDQU Y4, 192(DI)
	VMOVDQU Y4, 224(DI)
	VMOVDQU Y4, 256(DI)
	MOVL $0, 288(DI)

qnext:
	ADDQ $1024, SI
	ADDQ $Q8K_SIZE, DI
	DECQ CX
	JNZ qblock

qdone:
	VZEROUPPER
	RET

DATA kq8perm<>+0(SB)/8, $0x0000000400000000
DATA kq8perm<>+8(SB)/8, $0x0000000500000001
DATA kq8perm<>+16(SB)/8, $0x0000000600000002
DATA kq8perm<>+24(SB)/8, $0x0000000700000003
GLOBL kq8perm<>(SB), RODATA|NOPTR, $32

// Two activation vectors per pass over the weights (prefill): the row's levels and scales are
// decoded once and multiplied by both vectors; each vector's integer sums and float operations
// are those of the one-vector kernels, so results equal theirs (and the Go twins') bit for bit.
// out receives pairs: row r against x0 at out[2r], against x1 at out[2r+1].
//
// Registers: SI row, AX stride, CX nb, DX rows, R9 out; R10 block, R11 and R14 the two Q8_K
// blocks, BX blocks left; X0 and X12 the row's float sums; Y8 and Y14 the integer sums,
// Y3 and Y13 the mins times Bsums; Y9 and Y10 products.

// SCMIN2: SCMIN without R14 (Y1 scales, Y2 mins twice; the Bsums products are left to the
// caller).
#define SCMIN2 \
	MOVL 4(R10), R12 \
	MOVL R12, R15 \
	SHRL $6, R15 \
	ANDL $0x03030303, R15 \
	SHLL $4, R15 \
	MOVL 12(R10), R8 \
	ANDL $0x0f0f0f0f, R8 \
	ORL R8, R15 \
	ANDL $0x3f3f3f3f, R12 \
	SHLQ $32, R15 \
	ORQ R15, R12 \
	MOVL 8(R10), R13 \
	MOVL R13, R15 \
	SHRL $6, R15 \
	ANDL $0x03030303, R15 \
	SHLL $4, R15 \
	MOVL 12(R10), R8 \
	SHRL $4, R8 \
	ANDL $0x0f0f0f0f, R8 \
	ORL R8, R15 \
	ANDL $0x3f3f3f3f, R13 \
	SHLQ $32, R15 \
	ORQ R15, R13 \
	VMOVQ R12, X1 \
	VPMOVZXBW X1, X1 \
	VINSERTI128 $1, X1, Y1, Y1 \
	VMOVQ R13, X2 \
	VPUNPCKLBW X2, X2, X2 \
	VPMOVZXBW X2, Y2 \
	VPMADDWD Q8K_BSUMS(R11), Y2, Y3 \
	VPMADDWD Q8K_BSUMS(R14), Y2, Y13

// PAIR45X2(J): sub-blocks 2j and 2j+1 (levels in Y4 and Y5) against activations 64j..64j+63
// of both vectors, times their scales, into Y8 and Y14.
#define PAIR45X2(J) \
	VPSHUFB kq45shuf<>+(64*J)(SB), Y1, Y6 \
	VPSHUFB kq45shuf<>+(64*J+32)(SB), Y1, Y7 \
	VPMADDUBSW (Q8K_QS+64*J)(R11), Y4, Y9 \
	VPMADDUBSW (Q8K_QS+64*J+32)(R11), Y5, Y10 \
	VPMADDWD Y6, Y9, Y9 \
	VPMADDWD Y7, Y10, Y10 \
	VPADDD Y9, Y8, Y8 \
	VPADDD Y10, Y8, Y8 \
	VPMADDUBSW (Q8K_QS+64*J)(R14), Y4, Y9 \
	VPMADDUBSW (Q8K_QS+64*J+32)(R14), Y5, Y10 \
	VPMADDWD Y6, Y9, Y9 \
	VPMADDWD Y7, Y10, Y10 \
	VPADDD Y9, Y14, Y14 \
	VPADDD Y10, Y14, Y14

// FIN45X(ACC, ACCX, M, XP, SUM): FIN45 for integer sums ACC, mins products M, the Q8_K block
// at XP and the float sum SUM.
#define FIN45X(ACC, ACCX, M, XP, SUM) \
	VPHADDD M, ACC, ACC \
	VEXTRACTI128 $1, ACC, X9 \
	VPADDD X9, ACCX, ACCX \
	VPHADDD ACCX, ACCX, ACCX \
	VCVTDQ2PS ACCX, ACCX \
	VMOVD (R10), X10 \
	VCVTPH2PS X10, X10 \
	VBROADCASTSS (XP), X11 \
	VMULPS X11, X10, X10 \
	VMULPS ACCX, X10, X10 \
	VMOVSHDUP X10, X11 \
	VSUBSS X11, X10, X10 \
	VADDSS X10, SUM, SUM

#define Q4KBLOCKX2 \
	SCMIN2 \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y14, Y14, Y14 \
	NIB4(16) \
	PAIR45X2(0) \
	NIB4(48) \
	PAIR45X2(1) \
	NIB4(80) \
	PAIR45X2(2) \
	NIB4(112) \
	PAIR45X2(3) \
	FIN45X(Y8, X8, Y3, R11, X0) \
	FIN45X(Y14, X14, Y13, R14, X12)

// HI5X: HI5 with qh in Y2 and the bit masks from memory (no free registers).
#define HI5X \
	VPAND kq5bits<>+0(SB), Y2, Y6 \
	VPSLLW $4, Y6, Y6 \
	VPOR Y6, Y4, Y4 \
	VPAND kq5bits<>+32(SB), Y2, Y7 \
	VPSLLW $3, Y7, Y7 \
	VPOR Y7, Y5, Y5 \
	VPSRLW $2, Y2, Y2

// Q5KBLOCKX2: qh goes to Y2 once SCMIN2 is done with the mins.
#define Q5KBLOCKX2 \
	SCMIN2 \
	VMOVDQU 16(R10), Y2 \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y14, Y14, Y14 \
	NIB4(48) \
	HI5X \
	PAIR45X2(0) \
	NIB4(80) \
	HI5X \
	PAIR45X2(1) \
	NIB4(112) \
	HI5X \
	PAIR45X2(2) \
	NIB4(144) \
	HI5X \
	PAIR45X2(3) \
	FIN45X(Y8, X8, Y3, R11, X0) \
	FIN45X(Y14, X14, Y13, R14, X12)

// Q5KBLOCKX2V: Q5KBLOCKX2 in AVX-512 VL/VNNI, as Q5KBLOCKV: Y16 the 0x10 mask, Y6 the
// shifted qh (before PAIRX2V reuses it), Y18 and Y19 the second accumulators of the two
// vectors (odd sub-blocks). Only AVX-512 F, VL and VNNI instructions (what useVNNI checks).
#define HIB2(SHIFT, N, L) \
	SHIFT $N, Y2, Y6 \
	VPTERNLOGD $0xf8, Y16, Y6, L

#define PAIRX2V(J) \
	VPSHUFB kq45shuf<>+(64*J)(SB), Y1, Y6 \
	VPSHUFB kq45shuf<>+(64*J+32)(SB), Y1, Y7 \
	VPMADDUBSW (Q8K_QS+64*J)(R11), Y4, Y9 \
	VPMADDUBSW (Q8K_QS+64*J+32)(R11), Y5, Y10 \
	VPDPWSSD Y6, Y9, Y8 \
	VPDPWSSD Y7, Y10, Y18 \
	VPMADDUBSW (Q8K_QS+64*J)(R14), Y4, Y9 \
	VPMADDUBSW (Q8K_QS+64*J+32)(R14), Y5, Y10 \
	VPDPWSSD Y6, Y9, Y14 \
	VPDPWSSD Y7, Y10, Y19

#define Q5KBLOCKX2V \
	SCMIN2 \
	VMOVDQU 16(R10), Y2 \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y14, Y14, Y14 \
	VPXORD Y18, Y18, Y18 \
	VPXORD Y19, Y19, Y19 \
	NIB4(48) \
	HIB2(VPSLLW, 4, Y4) \
	HIB2(VPSLLW, 3, Y5) \
	PAIRX2V(0) \
	NIB4(80) \
	HIB2(VPSLLW, 2, Y4) \
	HIB2(VPSLLW, 1, Y5) \
	PAIRX2V(1) \
	NIB4(112) \
	VPTERNLOGD $0xf8, Y16, Y2, Y4 \
	HIB2(VPSRLW, 1, Y5) \
	PAIRX2V(2) \
	NIB4(144) \
	HIB2(VPSRLW, 2, Y4) \
	HIB2(VPSRLW, 3, Y5) \
	PAIRX2V(3) \
	VPADDD Y18, Y8, Y8 \
	VPADDD Y19, Y14, Y14 \
	FIN45X(Y8, X8, Y3, R11, X0) \
	FIN45X(Y14, X14, Y13, R14, X12)

// 0x01 bytes, then 0x02 bytes.
DATA kq5bits<>+0(SB)/8, $0x0101010101010101
DATA kq5bits<>+8(SB)/8, $0x0101010101010101
DATA kq5bits<>+16(SB)/8, $0x0101010101010101
DATA kq5bits<>+24(SB)/8, $0x0101010101010101
DATA kq5bits<>+32(SB)/8, $0x0202020202020202
DATA kq5bits<>+40(SB)/8, $0x0202020202020202
DATA kq5bits<>+48(SB)/8, $0x0202020202020202
DATA kq5bits<>+56(SB)/8, $0x0202020202020202
GLOBL kq5bits<>(SB), RODATA, $64

// Q6_K, two vectors: each vector's integer sum starts from -32*sum sc*Bsums (Y8, Y13) and
// the 0x30 mask is read from memory (no free registers); Y2 is the high-bits temporary.
#define Q6ONE2(L, AOFF, K, SC) \
	VPSHUFB kq6shuf<>+(32*K)(SB), SC, Y7 \
	VPMADDUBSW AOFF(R11), L, Y3 \
	VPMADDWD Y7, Y3, Y3 \
	VPADDD Y3, Y8, Y8 \
	VPMADDUBSW AOFF(R14), L, Y3 \
	VPMADDWD Y7, Y3, Y3 \
	VPADDD Y3, Y13, Y13

#define Q6HALF2(N, SC) \
	VMOVDQU (64*N)(R10), Y9 \
	VMOVDQU (64*N+32)(R10), Y10 \
	VMOVDQU (128+32*N)(R10), Y11 \
	VPAND Y15, Y9, Y4 \
	VPSLLW $4, Y11, Y2 \
	VPAND kq6m30<>(SB), Y2, Y2 \
	VPOR Y2, Y4, Y4 \
	Q6ONE2(Y4, (Q8K_QS+128*N), 0, SC) \
	VPAND Y15, Y10, Y4 \
	VPSLLW $2, Y11, Y2 \
	VPAND kq6m30<>(SB), Y2, Y2 \
	VPOR Y2, Y4, Y4 \
	Q6ONE2(Y4, (Q8K_QS+128*N+32), 1, SC) \
	VPSRLW $4, Y9, Y4 \
	VPAND Y15, Y4, Y4 \
	VPAND kq6m30<>(SB), Y11, Y2 \
	VPOR Y2, Y4, Y4 \
	Q6ONE2(Y4, (Q8K_QS+128*N+64), 2, SC) \
	VPSRLW $4, Y10, Y4 \
	VPAND Y15, Y4, Y4 \
	VPSRLW $2, Y11, Y2 \
	VPAND kq6m30<>(SB), Y2, Y2 \
	VPOR Y2, Y4, Y4 \
	Q6ONE2(Y4, (Q8K_QS+128*N+96), 3, SC)

// FIN6X(ACC, ACCX, XP, SUM): sum += d*D*float32(sumi) for the integer sums ACC and the Q8_K
// block at XP.
#define FIN6X(ACC, ACCX, XP, SUM) \
	VEXTRACTI128 $1, ACC, X9 \
	VPADDD X9, ACCX, ACCX \
	VPHADDD ACCX, ACCX, ACCX \
	VPHADDD ACCX, ACCX, ACCX \
	VCVTDQ2PS ACCX, ACCX \
	MOVWLZX 208(R10), R12 \
	VMOVD R12, X10 \
	VCVTPH2PS X10, X10 \
	VMULSS (XP), X10, X10 \
	VMULSS ACCX, X10, X10 \
	VADDSS X10, SUM, SUM

#define Q6KBLOCKX2 \
	VPMOVSXBW 192(R10), Y1 \
	VPXOR Y3, Y3, Y3 \
	VPMADDWD Q8K_BSUMS(R11), Y1, Y8 \
	VPSLLD $5, Y8, Y8 \
	VPSUBD Y8, Y3, Y8 \
	VPMADDWD Q8K_BSUMS(R14), Y1, Y13 \
	VPSLLD $5, Y13, Y13 \
	VPSUBD Y13, Y3, Y13 \
	VPERMQ $0x44, Y1, Y5 \
	VPERMQ $0xee, Y1, Y6 \
	Q6HALF2(0, Y5) \
	Q6HALF2(1, Y6) \
	FIN6X(Y8, X8, R11, X0) \
	FIN6X(Y13, X13, R14, X12)

DATA kq6m30<>+0(SB)/8, $0x3030303030303030
DATA kq6m30<>+8(SB)/8, $0x3030303030303030
DATA kq6m30<>+16(SB)/8, $0x3030303030303030
DATA kq6m30<>+24(SB)/8, $0x3030303030303030
GLOBL kq6m30<>(SB), RODATA, $32

// KROWS2(BLOCK, SIZE): the row and block loops of the two-vector kernels.
#define KROWS2(BLOCK, SIZE) \
	MOVQ w+0(FP), SI \
	MOVQ stride+8(FP), AX \
	MOVQ nb+32(FP), CX \
	MOVQ rows+40(FP), DX \
	MOVQ out+48(FP), R9 \
	TESTQ DX, DX \
	JZ done \
	TESTQ CX, CX \
	JZ done \
row: \
	MOVQ SI, R10 \
	MOVQ x0+16(FP), R11 \
	MOVQ x1+24(FP), R14 \
	MOVQ CX, BX \
	VXORPS X0, X0, X0 \
	VXORPS X12, X12, X12 \
blk: \
	BLOCK \
	ADDQ $SIZE, R10 \
	ADDQ $Q8K_SIZE, R11 \
	ADDQ $Q8K_SIZE, R14 \
	DECQ BX \
	JNZ blk \
	MOVSS X0, (R9) \
	MOVSS X12, 4(R9) \
	ADDQ $8, R9 \
	ADDQ AX, SI \
	DECQ DX \
	JNZ row \
done: \
	VZEROUPPER \
	RET

// func dotQ4_KRows2AVX2(w *byte, stride int, x0, x1 *BlockQ8K, nb, rows int, out *float32)
TEXT ·dotQ4_KRows2AVX2(SB), NOSPLIT, $0-56
	DWORDS(Y15, 0x0f0f0f0f)
	KROWS2(Q4KBLOCKX2, 144)

// func dotQ5_KRows2AVX2(w *byte, stride int, x0, x1 *BlockQ8K, nb, rows int, out *float32)
TEXT ·dotQ5_KRows2AVX2(SB), NOSPLIT, $0-56
	DWORDS(Y15, 0x0f0f0f0f)
	KROWS2(Q5KBLOCKX2, 176)

// func dotQ6_KRows2AVX2(w *byte, stride int, x0, x1 *BlockQ8K, nb, rows int, out *float32)
TEXT ·dotQ6_KRows2AVX2(SB), NOSPLIT, $0-56
	DWORDS(Y15, 0x0f0f0f0f)
	KROWS2(Q6KBLOCKX2, 210)

// func dotQ5_KRows2VNNI(w *byte, stride int, x0, x1 *BlockQ8K, nb, rows int, out *float32)
TEXT ·dotQ5_KRows2VNNI(SB), NOSPLIT, $0-56
	DWORDS(Y15, 0x0f0f0f0f)
	MOVL $0x10101010, R8
	VMOVD R8, X7
	VPBROADCASTD X7, Y16
	KROWS2(Q5KBLOCKX2V, 176)
