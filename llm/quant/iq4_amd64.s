//go:build amd64 && !noasm

#include "textflag.h"

// IQ4_XS and IQ4_NL dot products (AVX2). The 4-bit indices become their int8 levels by one
// VPSHUFB on the table iq4vals; a level v times an activation a is taken as |a| (unsigned,
// 128 for -128) times v*sign(a) (signed, |v| <= 127), so VPMADDUBSW's pair sums stay below
// 2*128*127 and never saturate. Integer sums are exact and the float operations are the Go
// twins' (dotIQ4_XS, dotIQ4_NL) in the same order, so results are bit-equal.

#define Q8K_QS 4
#define Q8K_SIZE 292

// IQ4LEVELS(OFF, B): the 32 levels of the 16 index bytes at OFF(B), low nibbles (elements
// 0..15) in the low 128-bit lane and high nibbles (16..31) in the high one, into Y4.
// Y15: 0x0f bytes, Y14: the levels table in both lanes.
#define IQ4LEVELS(OFF, B) \
	VMOVDQU OFF(B), X4 \
	VPSRLW $4, X4, X5 \
	VINSERTI128 $1, X5, Y4, Y4 \
	VPAND Y15, Y4, Y4 \
	VPSHUFB Y4, Y14, Y4

// IQ4MUL(L, XA, P): P = the 16 pair sums (int16) of levels L times the 32 int8 at XA.
// Clobbers Y5.
#define IQ4MUL(L, XA, P) \
	VMOVDQU XA, Y5 \
	VPSIGNB Y5, L, P \
	VPABSB Y5, Y5 \
	VPMADDUBSW P, Y5, P

// IQ4XSSCALES: the 8 sub-block scales ls-32 of the IQ4_XS block at R10 as int16 words in
// both lanes of Y1: the 4-bit low parts (scales_l at 4) by interleaving the bytes with
// themselves shifted by 4, the 2-bit high parts (scales_h at 2) by multiplying word ib of
// the broadcast by 2^(14-2ib), which leaves them in bits 14 and 15. X15: 0x0f bytes.
#define IQ4XSSCALES \
	VMOVD 4(R10), X1 \
	VPSRLW $4, X1, X2 \
	VPUNPCKLBW X2, X1, X1 \
	VPAND X15, X1, X1 \
	VPMOVZXBW X1, X1 \
	VPBROADCASTW 2(R10), X2 \
	VPMULLW iq4hmul<>(SB), X2, X2 \
	VPSRLW $14, X2, X2 \
	VPSLLW $4, X2, X2 \
	VPOR X2, X1, X1 \
	VPSUBW iq4w32<>(SB), X1, X1 \
	VINSERTI128 $1, X1, Y1, Y1

// XSPAIR(J): the levels of sub-blocks 2J and 2J+1, elements 0..15 of both in Y4 (2J in the
// low lane, 2J+1 in the high one) and elements 16..31 in Y5, and their scales in Y6 (word
// 2J in the low lane, 2J+1 in the high one).
#define XSPAIR(J) \
	VMOVDQU (8+32*J)(R10), Y4 \
	VPSRLW $4, Y4, Y5 \
	VPAND Y15, Y4, Y4 \
	VPAND Y15, Y5, Y5 \
	VPSHUFB Y4, Y14, Y4 \
	VPSHUFB Y5, Y14, Y5 \
	VPSHUFB iq4xspair<>+(32*J)(SB), Y1, Y6

// XSONE(L, OFF, XP, ACC): levels L against the activations at OFF(XP) (low lane) and
// OFF+32(XP) (high lane), times the scales Y6, into ACC. Clobbers Y7 and Y9.
#define XSONE(L, OFF, XP, ACC) \
	VMOVDQU OFF(XP), X7 \
	VINSERTI128 $1, (OFF+32)(XP), Y7, Y7 \
	VPSIGNB Y7, L, Y9 \
	VPABSB Y7, Y7 \
	VPMADDUBSW Y9, Y7, Y9 \
	VPMADDWD Y6, Y9, Y9 \
	VPADDD Y9, ACC, ACC

// XSSUB(J): sub-blocks 2J and 2J+1 against the Q8_K block at R11 into Y8.
#define XSSUB(J) \
	XSPAIR(J) \
	XSONE(Y4, (Q8K_QS+64*J), R11, Y8) \
	XSONE(Y5, (Q8K_QS+64*J+16), R11, Y8)

// XSFIN(ACC, ACCX, XP, SUM): SUM += d*D*float32(sumi), sumi the int32 lanes of ACC, d the
// block's F16 scale and D the Q8_K block's at XP.
#define XSFIN(ACC, ACCX, XP, SUM) \
	VEXTRACTI128 $1, ACC, X9 \
	VPADDD X9, ACCX, ACCX \
	VPHADDD ACCX, ACCX, ACCX \
	VPHADDD ACCX, ACCX, ACCX \
	VCVTDQ2PS ACCX, ACCX \
	MOVWLZX (R10), R12 \
	VMOVD R12, X10 \
	VCVTPH2PS X10, X10 \
	VMULSS (XP), X10, X10 \
	VMULSS ACCX, X10, X10 \
	VADDSS X10, SUM, SUM

// IQ4_XS block: f16 d, u16 scales_h, scales_l[4], qs[128] (16 per sub-block of 32).
#define XSBLOCK \
	IQ4XSSCALES \
	VPXOR Y8, Y8, Y8 \
	XSSUB(0) \
	XSSUB(1) \
	XSSUB(2) \
	XSSUB(3) \
	XSFIN(Y8, X8, R11, X0)

#define IQ4CONSTS \
	MOVL $0x0f0f0f0f, R8 \
	VMOVD R8, X7 \
	VPBROADCASTD X7, Y15 \
	VBROADCASTI128 iq4vals<>(SB), Y14

// func dotIQ4_XSRowsAVX2(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32)
// Registers: SI row, AX stride, DI x, CX nb, DX rows, R9 out; R10 block, R11 Q8_K block,
// BX blocks left; X0 the row's float sum.
TEXT ·dotIQ4_XSRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x+16(FP), DI
	MOVQ nb+24(FP), CX
	MOVQ rows+32(FP), DX
	MOVQ out+40(FP), R9
	IQ4CONSTS
	TESTQ DX, DX
	JZ done
	TESTQ CX, CX
	JZ done

row:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, BX
	VXORPS X0, X0, X0

blk:
	XSBLOCK
	ADDQ $136, R10
	ADDQ $Q8K_SIZE, R11
	DECQ BX
	JNZ blk
	MOVSS X0, (R9)
	ADDQ $4, R9
	ADDQ AX, SI
	DECQ DX
	JNZ row

done:
	VZEROUPPER
	RET

// XSSUB2(J): XSSUB against both vectors (R11 into Y8, R14 into Y13), the levels decoded
// once.
#define XSSUB2(J) \
	XSPAIR(J) \
	XSONE(Y4, (Q8K_QS+64*J), R11, Y8) \
	XSONE(Y5, (Q8K_QS+64*J+16), R11, Y8) \
	XSONE(Y4, (Q8K_QS+64*J), R14, Y13) \
	XSONE(Y5, (Q8K_QS+64*J+16), R14, Y13)

#define XSBLOCK2 \
	IQ4XSSCALES \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y13, Y13, Y13 \
	XSSUB2(0) \
	XSSUB2(1) \
	XSSUB2(2) \
	XSSUB2(3) \
	XSFIN(Y8, X8, R11, X0) \
	XSFIN(Y13, X13, R14, X12)

// func dotIQ4_XSRows2AVX2(w *byte, stride int, x0, x1 *BlockQ8K, nb, rows int, out *float32)
// Two activation vectors per pass over the rows (prefill): out receives pairs, row r against
// x0 at out[2r] and against x1 at out[2r+1]. Registers as above, R14 the second Q8_K block
// and X12 its float sum.
TEXT ·dotIQ4_XSRows2AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ nb+32(FP), CX
	MOVQ rows+40(FP), DX
	MOVQ out+48(FP), R9
	IQ4CONSTS
	TESTQ DX, DX
	JZ done2
	TESTQ CX, CX
	JZ done2

row2:
	MOVQ SI, R10
	MOVQ x0+16(FP), R11
	MOVQ x1+24(FP), R14
	MOVQ CX, BX
	VXORPS X0, X0, X0
	VXORPS X12, X12, X12

blk2:
	XSBLOCK2
	ADDQ $136, R10
	ADDQ $Q8K_SIZE, R11
	ADDQ $Q8K_SIZE, R14
	DECQ BX
	JNZ blk2
	MOVSS X0, (R9)
	MOVSS X12, 4(R9)
	ADDQ $8, R9
	ADDQ AX, SI
	DECQ DX
	JNZ row2

done2:
	VZEROUPPER
	RET

// func matVecIQ4_NLAVX2(w *byte, stride int, x *byte, xd *float32, nb, rows int, out *float32)
// IQ4_NL rows (18-byte blocks: f16 d, 16 index bytes) against Q8_0 activations (34-byte
// blocks; their scales as float32 at xd): per block sum += float32(t) * (d_w*d_x), t the
// block's exact integer total, block after block as dotIQ4_NL. Y13: int16 ones.
// Registers: SI row, AX stride, DI x, R8 xd, CX nb, DX rows, R9 out; R10 block, R11 Q8_0
// block, R12 its scale, BX blocks left.
TEXT ·matVecIQ4_NLAVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), AX
	MOVQ x+16(FP), DI
	MOVQ nb+32(FP), CX
	MOVQ rows+40(FP), DX
	MOVQ out+48(FP), R9
	IQ4CONSTS
	MOVL $0x00010001, R8
	VMOVD R8, X7
	VPBROADCASTD X7, Y13
	MOVQ xd+24(FP), R8
	TESTQ DX, DX
	JZ donenl
	TESTQ CX, CX
	JZ donenl

rownl:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ R8, R12
	MOVQ CX, BX
	VXORPS X0, X0, X0

blknl:
	IQ4LEVELS(2, R10)
	IQ4MUL(Y4, 2(R11), Y4)
	VPMADDWD Y13, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPADDD X5, X4, X4
	VPHADDD X4, X4, X4
	VPHADDD X4, X4, X4
	VCVTDQ2PS X4, X4
	MOVWLZX (R10), R13
	VMOVD R13, X6
	VCVTPH2PS X6, X6
	VMULSS (R12), X6, X6
	VMULSS X6, X4, X4
	VADDSS X4, X0, X0
	ADDQ $18, R10
	ADDQ $34, R11
	ADDQ $4, R12
	DECQ BX
	JNZ blknl
	MOVSS X0, (R9)
	ADDQ $4, R9
	ADDQ AX, SI
	DECQ DX
	JNZ rownl

donenl:
	VZEROUPPER
	RET

// The 16 levels of IQ4_NL/IQ4_XS (iq4Values) as bytes.
DATA iq4vals<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4vals<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4vals<>(SB), RODATA|NOPTR, $16

// 32 as int16 words.
DATA iq4w32<>+0(SB)/8, $0x0020002000200020
DATA iq4w32<>+8(SB)/8, $0x0020002000200020
GLOBL iq4w32<>(SB), RODATA|NOPTR, $16

// VPSHUFB masks: entry J (32 bytes) repeats word 2J in the low lane and word 2J+1 in the high.
DATA iq4xspair<>+0(SB)/8, $0x0100010001000100
DATA iq4xspair<>+8(SB)/8, $0x0100010001000100
DATA iq4xspair<>+16(SB)/8, $0x0302030203020302
DATA iq4xspair<>+24(SB)/8, $0x0302030203020302
DATA iq4xspair<>+32(SB)/8, $0x0504050405040504
DATA iq4xspair<>+40(SB)/8, $0x0504050405040504
DATA iq4xspair<>+48(SB)/8, $0x0706070607060706
DATA iq4xspair<>+56(SB)/8, $0x0706070607060706
DATA iq4xspair<>+64(SB)/8, $0x0908090809080908
DATA iq4xspair<>+72(SB)/8, $0x0908090809080908
DATA iq4xspair<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA iq4xspair<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA iq4xspair<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA iq4xspair<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA iq4xspair<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA iq4xspair<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL iq4xspair<>(SB), RODATA|NOPTR, $128

// 2^(14-2ib) in word ib.
DATA iq4hmul<>+0(SB)/8, $0x0100040010004000
DATA iq4hmul<>+8(SB)/8, $0x0001000400100040
GLOBL iq4hmul<>(SB), RODATA|NOPTR, $16
