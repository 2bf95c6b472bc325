//go:build arm64 && !noasm

#include "textflag.h"

// NEON row kernels for Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS weights against Q8_K activations, all rows
// of a range in one call: func(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32,
// dp bool). Each block's integer sums are exact, whichever path computes them: with dp, SDOT
// (ARMv8.2 dot product); without, SMULL/SMLAL2 pairs (each pair fits int16: |w| <= 127 and
// |x| <= 128 give at most 32512) widened by SADDLP/SADALP. The float steps per block are the
// Go twins' (dotQ2_K, dotQ3_K, dotQ4_K, dotQ5_K, dotQ6_K, dotIQ4_XS) operation for operation, so the results
// are bit for bit theirs. BlockQ8K: D at 0, Qs at 4, Bsums at 260, 292 bytes.

// Instructions the Go assembler has no mnemonic for, encoded by register number.
#define SDOT_4S(m, n, d) WORD $(0x4E809400 | (m<<16) | (n<<5) | d)
#define SMULL_8H(m, n, d) WORD $(0x0E20C000 | (m<<16) | (n<<5) | d)
#define SMLAL2_8H(m, n, d) WORD $(0x4E208000 | (m<<16) | (n<<5) | d)
#define SMULL_4S(m, n, d) WORD $(0x0E60C000 | (m<<16) | (n<<5) | d)
#define SMLAL2_4S(m, n, d) WORD $(0x4E608000 | (m<<16) | (n<<5) | d)
#define SMLAL_4S(m, n, d) WORD $(0x0E608000 | (m<<16) | (n<<5) | d)
#define UXTL_8H(n, d) WORD $(0x2F08A400 | (n<<5) | d)
#define UXTL2_8H(n, d) WORD $(0x6F08A400 | (n<<5) | d)
#define SADDLP_4S(n, d) WORD $(0x4E602800 | (n<<5) | d)
#define SADALP_4S(n, d) WORD $(0x4E606800 | (n<<5) | d)
#define ADDV_4S(n, d) WORD $(0x4EB1B800 | (n<<5) | d)
#define ADDP_4S(m, n, d) WORD $(0x4EA0BC00 | (m<<16) | (n<<5) | d)
#define ADDP_8H(m, n, d) WORD $(0x4E60BC00 | (m<<16) | (n<<5) | d)
#define MLA_4S(m, n, d) WORD $(0x4EA09400 | (m<<16) | (n<<5) | d)
#define SXTL_8H(n, d) WORD $(0x0F08A400 | (n<<5) | d)
#define SXTL_4S(n, d) WORD $(0x0F10A400 | (n<<5) | d)
#define SXTL2_4S(n, d) WORD $(0x4F10A400 | (n<<5) | d)
#define ZERO(d) WORD $(0x6F00E400 | d)
#define FCVT_SH(n, d) WORD $(0x1EE24000 | (n<<5) | d)

// DOT32: Vd.4S lanes sum to w0·a0 + w1·a1 (16 signed bytes each), plain NEON; t, u scratch.
#define DOT32(w0, w1, a0, a1, t, u, d) \
	SMULL_8H(a0, w0, t) \
	SMLAL2_8H(a0, w0, t) \
	SMULL_8H(a1, w1, u) \
	SMLAL2_8H(a1, w1, u) \
	SADDLP_4S(t, d) \
	SADALP_4S(u, d)

// DOT32DP: DOT32 with SDOT.
#define DOT32DP(w0, w1, a0, a1, d) \
	ZERO(d) \
	SDOT_4S(a0, w0, d) \
	SDOT_4S(a1, w1, d)

// DOT16: Vd.4S lanes sum to w·a (16 signed bytes), plain NEON; t scratch.
#define DOT16(w, a, t, d) \
	SMULL_8H(a, w, t) \
	SMLAL2_8H(a, w, t) \
	SADDLP_4S(t, d)

#define DOT16DP(w, a, d) \
	ZERO(d) \
	SDOT_4S(a, w, d)

#define ARGS \
	MOVD w+0(FP), R0 \
	MOVD stride+8(FP), R1 \
	MOVD x+16(FP), R2 \
	MOVD nb+24(FP), R3 \
	MOVD rows+32(FP), R4 \
	MOVD out+40(FP), R5 \
	MOVBU dp+48(FP), R6

// ROWSTART: R8 the row's blocks, R9 the vector's, R10 blocks to go, sum (F9) zero.
#define ROWSTART \
	MOVD R0, R8 \
	MOVD R2, R9 \
	MOVD R3, R10 \
	VEOR V9.B16, V9.B16, V9.B16

// BLOCKEND: step both block pointers (the weight block is bb bytes), one block less in R10.
#define BLOCKEND(bb) \
	ADD $bb, R8 \
	ADD $292, R9 \
	SUBS $1, R10

// ROWEND: store the row's sum, step to the next row, one row less in R4.
#define ROWEND \
	FMOVS.P F9, 4(R5) \
	ADD R1, R0 \
	SUBS $1, R4

// SCALEMIN: the 6-bit scales of sub-blocks 0..7 of a Q4_K/Q5_K block at R8 as bytes of R22,
// its mins as bytes of R24 (scaleMinK4 with the 12 bytes read as three little-endian words
// u0, u1, u2: scales 0..3 = u0&63, 4..7 = u2&15 | (u0>>6&3)<<4; mins 0..3 = u1&63,
// 4..7 = u2>>4&15 | (u1>>6&3)<<4, bytewise). R19..R21 hold the byte masks 63, 15, 3.
#define SCALEMIN \
	MOVWU 4(R8), R15 \
	MOVWU 8(R8), R16 \
	MOVWU 12(R8), R17 \
	AND R19, R15, R22 \
	LSR $6, R15, R23 \
	AND R21, R23, R23 \
	LSL $4, R23, R23 \
	AND R20, R17, R7 \
	ORR R7, R23, R23 \
	ORR R23<<32, R22, R22 \
	AND R19, R16, R24 \
	LSR $6, R16, R25 \
	AND R21, R25, R25 \
	LSL $4, R25, R25 \
	LSR $4, R17, R7 \
	AND R20, R7, R7 \
	ORR R7, R25, R25 \
	ORR R25<<32, R24, R24

// MINSUM: R16 = sum over sub-blocks j of min_j (bytes of R24) times Bsums[2j]+Bsums[2j+1]
// of the Q8_K block at R9.
#define MINSUM \
	ADD $260, R9, R11 \
	VLD1 (R11), [V22.H8, V23.H8] \
	ADDP_8H(23, 22, 24) \
	VMOV R24, V25.D[0] \
	VUXTL V25.B8, V25.H8 \
	SMULL_4S(24, 25, 26) \
	SMLAL2_4S(24, 25, 26) \
	ADDV_4S(26, 26) \
	FMOVS F26, R16

// PAIRSUM: sumi (R17) += scale_2j * V16's lane sum + scale_2j+1 * V17's, the scales the low
// two bytes of R22, which then moves on to the next pair.
#define PAIRSUM \
	ADDV_4S(16, 16) \
	ADDV_4S(17, 17) \
	FMOVS F16, R14 \
	FMOVS F17, R15 \
	AND $0xff, R22, R7 \
	MULW R7, R14, R14 \
	ADDW R14, R17, R17 \
	LSR $8, R22, R7 \
	AND $0xff, R7, R7 \
	MULW R7, R15, R15 \
	ADDW R15, R17, R17 \
	LSR $16, R22, R22

// KFLOAT: F9 += float32(d*float32(sumi)) - float32(dmin*float32(summ)), d and dmin the
// block's halves at R8 times the Q8_K scale at R9 (dotQ4_K's and dotQ5_K's order).
#define KFLOAT KFLOATAT(R8)

// KFLOATAT: KFLOAT with d and dmin the halves at (r) and 2(r) (dotQ2_K's order too).
#define KFLOATAT(r) \
	MOVHU (r), R14 \
	FMOVS R14, F7 \
	FCVT_SH(7, 7) \
	FMOVS (R9), F8 \
	FMULS F8, F7, F7 \
	MOVHU 2(r), R14 \
	FMOVS R14, F10 \
	FCVT_SH(10, 10) \
	FMULS F8, F10, F10 \
	SCVTFWS R17, F11 \
	FMULS F11, F7, F11 \
	SCVTFWS R16, F12 \
	FMULS F12, F10, F12 \
	FSUBS F12, F11, F11 \
	FADDS F11, F9, F9

#define MASKS45 \
	VMOVI $15, V31.B16 \
	MOVD $0x3f3f3f3f, R19 \
	MOVD $0x0f0f0f0f, R20 \
	MOVD $0x03030303, R21

// func dotQ4_KRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)
TEXT ·dotQ4_KRowsNEON(SB), NOSPLIT, $0-49
	ARGS
	CBZ R4, q4kdone
	CBZ R3, q4kdone
	MASKS45

q4krow:
	ROWSTART

q4kblock:
	SCALEMIN
	MINSUM
	ADD $16, R8, R11
	ADD $4, R9, R12
	MOVD $4, R13
	MOVD ZR, R17

q4kpair: // sub-blocks 2j (low nibbles of 32 bytes) and 2j+1 (high nibbles)
	VLD1.P 32(R11), [V0.B16, V1.B16]
	VLD1.P 64(R12), [V2.B16, V3.B16, V4.B16, V5.B16]
	VAND V31.B16, V0.B16, V6.B16
	VAND V31.B16, V1.B16, V7.B16
	VUSHR $4, V0.B16, V0.B16
	VUSHR $4, V1.B16, V1.B16
	CBZ R6, q4kplain
	DOT32DP(6, 7, 2, 3, 16)
	DOT32DP(0, 1, 4, 5, 17)
	B q4ksum

q4kplain:
	DOT32(6, 7, 2, 3, 18, 19, 16)
	DOT32(0, 1, 4, 5, 18, 19, 17)

q4ksum:
	PAIRSUM
	SUBS $1, R13
	BNE q4kpair

	KFLOAT
	BLOCKEND(144)
	BNE q4kblock

	ROWEND
	BNE q4krow

q4kdone:
	RET

// func dotQ5_KRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)
TEXT ·dotQ5_KRowsNEON(SB), NOSPLIT, $0-49
	ARGS
	CBZ R4, q5kdone
	CBZ R3, q5kdone
	MASKS45
	VMOVI $16, V30.B16

q5krow:
	ROWSTART

q5kblock:
	SCALEMIN
	MINSUM
	ADD $16, R8, R11
	VLD1 (R11), [V12.B16, V13.B16] // qh: bit 2j of byte l is the 5th bit of sub-block 2j's l-th quant, 2j+1 of 2j+1's
	ADD $48, R8, R11
	ADD $4, R9, R12
	MOVD $4, R13
	MOVD ZR, R17

q5kpair:
	VLD1.P 32(R11), [V0.B16, V1.B16]
	VLD1.P 64(R12), [V2.B16, V3.B16, V4.B16, V5.B16]
	VAND V31.B16, V0.B16, V6.B16
	VAND V31.B16, V1.B16, V7.B16
	VUSHR $4, V0.B16, V0.B16
	VUSHR $4, V1.B16, V1.B16
	VSHL $4, V12.B16, V14.B16
	VSHL $4, V13.B16, V15.B16
	VAND V30.B16, V14.B16, V14.B16
	VAND V30.B16, V15.B16, V15.B16
	VORR V14.B16, V6.B16, V6.B16
	VORR V15.B16, V7.B16, V7.B16
	VSHL $3, V12.B16, V14.B16
	VSHL $3, V13.B16, V15.B16
	VAND V30.B16, V14.B16, V14.B16
	VAND V30.B16, V15.B16, V15.B16
	VORR V14.B16, V0.B16, V0.B16
	VORR V15.B16, V1.B16, V1.B16
	VUSHR $2, V12.B16, V12.B16
	VUSHR $2, V13.B16, V13.B16
	CBZ R6, q5kplain
	DOT32DP(6, 7, 2, 3, 16)
	DOT32DP(0, 1, 4, 5, 17)
	B q5ksum

q5kplain:
	DOT32(6, 7, 2, 3, 18, 19, 16)
	DOT32(0, 1, 4, 5, 18, 19, 17)

q5ksum:
	PAIRSUM
	SUBS $1, R13
	BNE q5kpair

	KFLOAT
	BLOCKEND(176)
	BNE q5kblock

	ROWEND
	BNE q5krow

q5kdone:
	RET

// func dotQ6_KRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)
// Per half of a block (128 elements): the eight groups of 16 quants (6 bits: 4 from ql, 2 from
// qh, minus 32) dotted with the activations into V0..V5, V24, V25, folded by ADDP into the
// eight group sums, multiplied by the groups' int8 scales and accumulated in V28 (lanes).
TEXT ·dotQ6_KRowsNEON(SB), NOSPLIT, $0-49
	ARGS
	CBZ R4, q6kdone
	CBZ R3, q6kdone
	VMOVI $15, V31.B16
	VMOVI $48, V30.B16
	VMOVI $32, V29.B16

q6krow:
	ROWSTART

q6kblock:
	MOVD R8, R11
	ADD $128, R8, R12
	ADD $192, R8, R13
	ADD $4, R9, R7
	ZERO(28)
	MOVD $2, R14

q6khalf:
	VLD1.P 64(R11), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 32(R12), [V4.B16, V5.B16]
	// groups 0, 1: ql[0:32]&15 | (qh&3)<<4
	VAND V31.B16, V0.B16, V6.B16
	VAND V31.B16, V1.B16, V7.B16
	VSHL $4, V4.B16, V16.B16
	VSHL $4, V5.B16, V17.B16
	VAND V30.B16, V16.B16, V16.B16
	VAND V30.B16, V17.B16, V17.B16
	VORR V16.B16, V6.B16, V6.B16
	VORR V17.B16, V7.B16, V7.B16
	// groups 2, 3: ql[32:64]&15 | (qh>>2&3)<<4
	VAND V31.B16, V2.B16, V10.B16
	VAND V31.B16, V3.B16, V11.B16
	VSHL $2, V4.B16, V16.B16
	VSHL $2, V5.B16, V17.B16
	VAND V30.B16, V16.B16, V16.B16
	VAND V30.B16, V17.B16, V17.B16
	VORR V16.B16, V10.B16, V10.B16
	VORR V17.B16, V11.B16, V11.B16
	// groups 4, 5: ql[0:32]>>4 | (qh>>4&3)<<4
	VUSHR $4, V0.B16, V12.B16
	VUSHR $4, V1.B16, V13.B16
	VAND V30.B16, V4.B16, V16.B16
	VAND V30.B16, V5.B16, V17.B16
	VORR V16.B16, V12.B16, V12.B16
	VORR V17.B16, V13.B16, V13.B16
	// groups 6, 7: ql[32:64]>>4 | (qh>>6)<<4
	VUSHR $4, V2.B16, V14.B16
	VUSHR $4, V3.B16, V15.B16
	VUSHR $2, V4.B16, V16.B16
	VUSHR $2, V5.B16, V17.B16
	VAND V30.B16, V16.B16, V16.B16
	VAND V30.B16, V17.B16, V17.B16
	VORR V16.B16, V14.B16, V14.B16
	VORR V17.B16, V15.B16, V15.B16
	VSUB V29.B16, V6.B16, V6.B16
	VSUB V29.B16, V7.B16, V7.B16
	VSUB V29.B16, V10.B16, V10.B16
	VSUB V29.B16, V11.B16, V11.B16
	VSUB V29.B16, V12.B16, V12.B16
	VSUB V29.B16, V13.B16, V13.B16
	VSUB V29.B16, V14.B16, V14.B16
	VSUB V29.B16, V15.B16, V15.B16
	VLD1.P 64(R7), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R7), [V20.B16, V21.B16, V22.B16, V23.B16]
	CBZ R6, q6kplain
	DOT16DP(6, 16, 0)
	DOT16DP(7, 17, 1)
	DOT16DP(10, 18, 2)
	DOT16DP(11, 19, 3)
	DOT16DP(12, 20, 4)
	DOT16DP(13, 21, 5)
	DOT16DP(14, 22, 24)
	DOT16DP(15, 23, 25)
	B q6ksum

q6kplain:
	DOT16(6, 16, 26, 0)
	DOT16(7, 17, 26, 1)
	DOT16(10, 18, 26, 2)
	DOT16(11, 19, 26, 3)
	DOT16(12, 20, 26, 4)
	DOT16(13, 21, 26, 5)
	DOT16(14, 22, 26, 24)
	DOT16(15, 23, 26, 25)

q6ksum:
	ADDP_4S(1, 0, 26)
	ADDP_4S(3, 2, 27)
	ADDP_4S(27, 26, 0) // group sums 0..3
	ADDP_4S(5, 4, 26)
	ADDP_4S(25, 24, 27)
	ADDP_4S(27, 26, 1) // group sums 4..7
	VLD1.P 8(R13), [V2.B8]
	SXTL_8H(2, 2)
	SXTL_4S(2, 3)
	SXTL2_4S(2, 4)
	MLA_4S(3, 0, 28)
	MLA_4S(4, 1, 28)
	SUBS $1, R14
	BNE q6khalf

	// F9 += float32(d * D * float32(sumi)) (dotQ6_K's order)
	ADDV_4S(28, 28)
	FMOVS F28, R15
	SCVTFWS R15, F11
	MOVHU 208(R8), R15
	FMOVS R15, F7
	FCVT_SH(7, 7)
	FMOVS (R9), F8
	FMULS F8, F7, F7
	FMULS F11, F7, F7
	FADDS F7, F9, F9
	BLOCKEND(210)
	BNE q6kblock

	ROWEND
	BNE q6krow

q6kdone:
	RET

// func dotIQ4_XSRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)
// Per pair of sub-blocks of 32: the nibbles looked up in iq4Values (TBL), dotted with the
// activations, each sub-block's sum times its 6-bit scale minus 32 added to sumi (R17).
TEXT ·dotIQ4_XSRowsNEON(SB), NOSPLIT, $0-49
	ARGS
	CBZ R4, iq4xdone
	CBZ R3, iq4xdone
	VMOVI $15, V31.B16
	MOVD $·iq4Values(SB), R7
	VLD1 (R7), [V28.B16]

iq4xrow:
	ROWSTART

iq4xblock:
	MOVHU 2(R8), R15 // scales_h: 2 bits per sub-block
	ADD $4, R8, R11  // scales_l: 4 bits per sub-block
	ADD $8, R8, R12
	ADD $4, R9, R13
	MOVD $4, R14
	MOVD ZR, R17

iq4xpair:
	VLD1.P 32(R12), [V0.B16, V1.B16]
	VLD1.P 64(R13), [V2.B16, V3.B16, V4.B16, V5.B16]
	VAND V31.B16, V0.B16, V6.B16
	VUSHR $4, V0.B16, V7.B16
	VAND V31.B16, V1.B16, V16.B16
	VUSHR $4, V1.B16, V17.B16
	VTBL V6.B16, [V28.B16], V6.B16
	VTBL V7.B16, [V28.B16], V7.B16
	VTBL V16.B16, [V28.B16], V16.B16
	VTBL V17.B16, [V28.B16], V17.B16
	CBZ R6, iq4xplain
	DOT32DP(6, 7, 2, 3, 18)
	DOT32DP(16, 17, 4, 5, 19)
	B iq4xsum

iq4xplain:
	DOT32(6, 7, 2, 3, 20, 21, 18)
	DOT32(16, 17, 4, 5, 20, 21, 19)

iq4xsum:
	ADDV_4S(18, 18)
	ADDV_4S(19, 19)
	MOVBU.P 1(R11), R7
	AND $15, R7, R16
	AND $3, R15, R19
	ORR R19<<4, R16, R16
	SUB $32, R16, R16
	FMOVS F18, R19
	MULW R19, R16, R16
	ADDW R16, R17, R17
	LSR $4, R7, R16
	LSR $2, R15, R19
	AND $3, R19, R19
	ORR R19<<4, R16, R16
	SUB $32, R16, R16
	FMOVS F19, R19
	MULW R19, R16, R16
	ADDW R16, R17, R17
	LSR $4, R15, R15
	SUBS $1, R14
	BNE iq4xpair

	// F9 += d*D * float32(sumi), fused as the Go twin is on arm64
	MOVHU (R8), R15
	FMOVS R15, F7
	FCVT_SH(7, 7)
	FMOVS (R9), F8
	FMULS F8, F7, F7
	SCVTFWS R17, F11
	FMADDS F7, F9, F11, F9
	BLOCKEND(136)
	BNE iq4xblock

	ROWEND
	BNE iq4xrow

iq4xdone:
	RET

// Q2_K and Q3_K, per half of a block (128 elements): the eight groups of 16 quants (2 bits
// of the 32 bytes Q0, Q1 of qs at shifts 0, 2, 4, 6: groups 2k from Q0 and 2k+1 from Q1 at
// shift 2k; Q3_K adds the third bit from hmask) dotted with the activations into V0..V5,
// V24, V25, folded by ADDP into the eight group sums (KFOLD), multiplied by the groups'
// scales and accumulated in V28 (lanes), as Q6_K's kernel does.

// KDOTS8DP: the eight group dots of weights w0..w7 with the activations V16..V23 into
// V0..V5, V24, V25 by SDOT; KDOTS8 the same by SMULL/SMLAL2 pairs with scratch t.
#define KDOTS8DP(w0, w1, w2, w3, w4, w5, w6, w7) \
	DOT16DP(w0, 16, 0) \
	DOT16DP(w1, 17, 1) \
	DOT16DP(w2, 18, 2) \
	DOT16DP(w3, 19, 3) \
	DOT16DP(w4, 20, 4) \
	DOT16DP(w5, 21, 5) \
	DOT16DP(w6, 22, 24) \
	DOT16DP(w7, 23, 25)

#define KDOTS8(w0, w1, w2, w3, w4, w5, w6, w7, t) \
	DOT16(w0, 16, t, 0) \
	DOT16(w1, 17, t, 1) \
	DOT16(w2, 18, t, 2) \
	DOT16(w3, 19, t, 3) \
	DOT16(w4, 20, t, 4) \
	DOT16(w5, 21, t, 5) \
	DOT16(w6, 22, t, 24) \
	DOT16(w7, 23, t, 25)

// KFOLD: V0 = the group sums 0..3, V1 = 4..7.
#define KFOLD \
	ADDP_4S(1, 0, 26) \
	ADDP_4S(3, 2, 27) \
	ADDP_4S(27, 26, 0) \
	ADDP_4S(5, 4, 26) \
	ADDP_4S(25, 24, 27) \
	ADDP_4S(27, 26, 1)

// func dotQ2_KRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)
// summ (R16) is the mins (high nibbles of scales) times Bsums; sumi (R17) the lane sum of V28.
TEXT ·dotQ2_KRowsNEON(SB), NOSPLIT, $0-49
	ARGS
	CBZ R4, q2kdone
	CBZ R3, q2kdone
	VMOVI $3, V31.B16
	VMOVI $15, V30.B16

q2krow:
	ROWSTART

q2kblock:
	// summ = sum over s of (scales[s]>>4) * Bsums[s]
	VLD1 (R8), [V12.B16]
	ADD $260, R9, R11
	VLD1 (R11), [V22.H8, V23.H8]
	VUSHR $4, V12.B16, V12.B16
	UXTL_8H(12, 14)
	UXTL2_8H(12, 15)
	SMULL_4S(22, 14, 26)
	SMLAL2_4S(22, 14, 26)
	SMLAL_4S(23, 15, 26)
	SMLAL2_4S(23, 15, 26)
	ADDV_4S(26, 26)
	FMOVS F26, R16
	MOVD R8, R13      // scales: low nibbles, 8 per half
	ADD $16, R8, R11  // qs
	ADD $4, R9, R12   // activations
	ZERO(28)
	MOVD $2, R14

q2khalf:
	VLD1.P 32(R11), [V0.B16, V1.B16]
	VAND V31.B16, V0.B16, V6.B16
	VAND V31.B16, V1.B16, V7.B16
	VUSHR $2, V0.B16, V10.B16
	VUSHR $2, V1.B16, V11.B16
	VAND V31.B16, V10.B16, V10.B16
	VAND V31.B16, V11.B16, V11.B16
	VUSHR $4, V0.B16, V12.B16
	VUSHR $4, V1.B16, V13.B16
	VAND V31.B16, V12.B16, V12.B16
	VAND V31.B16, V13.B16, V13.B16
	VUSHR $6, V0.B16, V14.B16
	VUSHR $6, V1.B16, V15.B16
	VLD1.P 64(R12), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R12), [V20.B16, V21.B16, V22.B16, V23.B16]
	CBZ R6, q2kplain
	KDOTS8DP(6, 7, 10, 11, 12, 13, 14, 15)
	B q2ksum

q2kplain:
	KDOTS8(6, 7, 10, 11, 12, 13, 14, 15, 26)

q2ksum:
	KFOLD
	VLD1.P 8(R13), [V2.B8]
	VAND V30.B16, V2.B16, V2.B16
	UXTL_8H(2, 2)
	SXTL_4S(2, 3)
	SXTL2_4S(2, 4)
	MLA_4S(3, 0, 28)
	MLA_4S(4, 1, 28)
	SUBS $1, R14
	BNE q2khalf

	ADDV_4S(28, 28)
	FMOVS F28, R17
	ADD $80, R8, R11
	KFLOATAT(R11)
	BLOCKEND(84)
	BNE q2kblock

	ROWEND
	BNE q2krow

q2kdone:
	RET

// func dotQ3_KRowsNEON(w *byte, stride int, x *BlockQ8K, nb, rows int, out *float32, dp bool)
// A quant is its 2 bits | its hmask bit << 2, minus 4; hmask bit j of byte l (H0 = bytes
// 0..15, H1 = 16..31) belongs to groups 2j (H0) and 2j+1 (H1) over both halves, so each half
// takes bits 0..3 of V12 (H0) and V13 (H1), which then shift right by 4. The scales (6 bits,
// minus 32) of half h: low nibbles of bytes 0..7 of scales shifted right 4h (R15), high bits
// of bytes 8..11 shifted right 4h, groups 4..7 a further 2 (R16).
TEXT ·dotQ3_KRowsNEON(SB), NOSPLIT, $0-49
	ARGS
	CBZ R4, q3kdone
	CBZ R3, q3kdone
	VMOVI $3, V31.B16
	VMOVI $4, V30.B16
	VMOVI $32, V29.B16
	MOVD $0x0f0f0f0f0f0f0f0f, R20
	MOVD $0x03030303, R21

q3krow:
	ROWSTART

q3kblock:
	VLD1 (R8), [V12.B16, V13.B16]
	ADD $32, R8, R11  // qs
	ADD $4, R9, R12   // activations
	MOVD 96(R8), R15
	MOVWU 104(R8), R16
	ZERO(28)
	MOVD $2, R14

q3khalf:
	VLD1.P 32(R11), [V0.B16, V1.B16]
	// groups 0, 1: Q&3 | (H<<2)&4
	VAND V31.B16, V0.B16, V6.B16
	VAND V31.B16, V1.B16, V7.B16
	VSHL $2, V12.B16, V16.B16
	VSHL $2, V13.B16, V17.B16
	VAND V30.B16, V16.B16, V16.B16
	VAND V30.B16, V17.B16, V17.B16
	VORR V16.B16, V6.B16, V6.B16
	VORR V17.B16, V7.B16, V7.B16
	// groups 2, 3: (Q>>2)&3 | (H<<1)&4
	VUSHR $2, V0.B16, V10.B16
	VUSHR $2, V1.B16, V11.B16
	VAND V31.B16, V10.B16, V10.B16
	VAND V31.B16, V11.B16, V11.B16
	VSHL $1, V12.B16, V16.B16
	VSHL $1, V13.B16, V17.B16
	VAND V30.B16, V16.B16, V16.B16
	VAND V30.B16, V17.B16, V17.B16
	VORR V16.B16, V10.B16, V10.B16
	VORR V17.B16, V11.B16, V11.B16
	// groups 4, 5: (Q>>4)&3 | H&4
	VUSHR $4, V0.B16, V14.B16
	VUSHR $4, V1.B16, V15.B16
	VAND V31.B16, V14.B16, V14.B16
	VAND V31.B16, V15.B16, V15.B16
	VAND V30.B16, V12.B16, V16.B16
	VAND V30.B16, V13.B16, V17.B16
	VORR V16.B16, V14.B16, V14.B16
	VORR V17.B16, V15.B16, V15.B16
	// groups 6, 7: Q>>6 | (H>>1)&4
	VUSHR $6, V0.B16, V26.B16
	VUSHR $6, V1.B16, V27.B16
	VUSHR $1, V12.B16, V16.B16
	VUSHR $1, V13.B16, V17.B16
	VAND V30.B16, V16.B16, V16.B16
	VAND V30.B16, V17.B16, V17.B16
	VORR V16.B16, V26.B16, V26.B16
	VORR V17.B16, V27.B16, V27.B16
	VUSHR $4, V12.B16, V12.B16
	VUSHR $4, V13.B16, V13.B16
	VSUB V30.B16, V6.B16, V6.B16
	VSUB V30.B16, V7.B16, V7.B16
	VSUB V30.B16, V10.B16, V10.B16
	VSUB V30.B16, V11.B16, V11.B16
	VSUB V30.B16, V14.B16, V14.B16
	VSUB V30.B16, V15.B16, V15.B16
	VSUB V30.B16, V26.B16, V26.B16
	VSUB V30.B16, V27.B16, V27.B16
	VLD1.P 64(R12), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R12), [V20.B16, V21.B16, V22.B16, V23.B16]
	CBZ R6, q3kplain
	KDOTS8DP(6, 7, 10, 11, 14, 15, 26, 27)
	B q3ksum

q3kplain:
	KDOTS8(6, 7, 10, 11, 14, 15, 26, 27, 8)

q3ksum:
	KFOLD
	// this half's scales: (lo nibbles | high bits << 4) - 32 as int32 lanes in V3, V4
	AND R20, R15, R17
	AND R21, R16, R22
	LSR $2, R16, R23
	AND R21, R23, R23
	ORR R23<<32, R22, R22
	ORR R22<<4, R17, R17
	VMOV R17, V2.D[0]
	VSUB V29.B16, V2.B16, V2.B16
	SXTL_8H(2, 2)
	SXTL_4S(2, 3)
	SXTL2_4S(2, 4)
	MLA_4S(3, 0, 28)
	MLA_4S(4, 1, 28)
	LSR $4, R15, R15
	LSR $4, R16, R16
	SUBS $1, R14
	BNE q3khalf

	// F9 += float32(d * D * float32(sumi)) (dotQ3_K's order)
	ADDV_4S(28, 28)
	FMOVS F28, R15
	SCVTFWS R15, F11
	MOVHU 108(R8), R15
	FMOVS R15, F7
	FCVT_SH(7, 7)
	FMOVS (R9), F8
	FMULS F8, F7, F7
	FMULS F11, F7, F7
	FADDS F7, F9, F9
	BLOCKEND(110)
	BNE q3kblock

	ROWEND
	BNE q3krow

q3kdone:
	RET
