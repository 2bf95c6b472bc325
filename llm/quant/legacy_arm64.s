//go:build !noasm

#include "textflag.h"

// NEON row kernels for the legacy types Q5_0 (against Q8_0 activations), Q5_1 and Q4_1
// (against Q8_1), all rows of a range in one call. Each block's integer sum is exact: SDOT
// with dp, else SMULL/SMLAL2 pairs (|w| <= 31, |x| <= 128: a pair fits int16) widened by
// SADDLP/SADALP. The float steps per block are those the Go compiler makes of dotQ5_0,
// dotQ5_1 and dotQ4_1 on arm64, fused multiply-adds included, so the results are bit for bit
// theirs. Activations: Q8_0 blocks of 34 bytes (f16 d, then 32 quants), their scales as
// float32 at d, for Q8_1 the sums at s.

#define SDOT_4S(m, n, d) WORD $(0x4E809400 | (m<<16) | (n<<5) | d)
#define SMULL_8H(m, n, d) WORD $(0x0E20C000 | (m<<16) | (n<<5) | d)
#define SMLAL2_8H(m, n, d) WORD $(0x4E208000 | (m<<16) | (n<<5) | d)
#define SADDLP_4S(n, d) WORD $(0x4E602800 | (n<<5) | d)
#define SADALP_4S(n, d) WORD $(0x4E606800 | (n<<5) | d)
#define ADDV_4S(n, d) WORD $(0x4EB1B800 | (n<<5) | d)
#define CMTST_16B(m, n, d) WORD $(0x4E208C00 | (m<<16) | (n<<5) | d)
#define ZERO(d) WORD $(0x6F00E400 | d)
#define FCVT_SH(n, d) WORD $(0x1EE24000 | (n<<5) | d)

// DOT32 / DOT32DP: Vd.4S lanes sum to w0·a0 + w1·a1 (16 signed bytes each); t, u scratch.
#define DOT32(w0, w1, a0, a1, t, u, d) \
	SMULL_8H(a0, w0, t) \
	SMLAL2_8H(a0, w0, t) \
	SMULL_8H(a1, w1, u) \
	SMLAL2_8H(a1, w1, u) \
	SADDLP_4S(t, d) \
	SADALP_4S(u, d)

#define DOT32DP(w0, w1, a0, a1, d) \
	ZERO(d) \
	SDOT_4S(a0, w0, d) \
	SDOT_4S(a1, w1, d)

// CONSTS: V27, V28 the TBL indices that spread qh's bytes 0, 1 and 2, 3 over 8 lanes each,
// V29 the bit each lane tests (q5Bits), V30 16s, V31 15s.
#define CONSTS \
	MOVD $·q5Bits(SB), R7 \
	VLD1 (R7), [V27.B16, V28.B16, V29.B16] \
	VMOVI $16, V30.B16 \
	VMOVI $15, V31.B16

// QH(off): V21 (elements 0..15), V22 (16..31) hold 16 where the block's qh word at off(R8)
// has the element's bit set, else 0.
#define QH(off) \
	MOVWU off(R8), R15 \
	FMOVS R15, F20 \
	VTBL V27.B16, [V20.B16], V21.B16 \
	VTBL V28.B16, [V20.B16], V22.B16 \
	CMTST_16B(29, 21, 21) \
	CMTST_16B(29, 22, 22) \
	VAND V30.B16, V21.B16, V21.B16 \
	VAND V30.B16, V22.B16, V22.B16

// NIBBLES(off): V6 the low nibbles (elements 0..15), V7 the high (16..31) of the 16 bytes at
// off(R8); V2, V3 the block's 32 activations.
#define NIBBLES(off) \
	ADD $off, R8, R13 \
	VLD1 (R13), [V0.B16] \
	VAND V31.B16, V0.B16, V6.B16 \
	VUSHR $4, V0.B16, V7.B16 \
	ADD $2, R9, R13 \
	VLD1 (R13), [V2.B16, V3.B16]

// ROWSTART: R8 the row's blocks, R9 the vector's, R10 its scales, R11 its sums, R12 blocks
// to go, sum (F9) zero.
#define ROWSTART \
	MOVD R0, R8 \
	MOVD R2, R9 \
	MOVD R3, R10 \
	MOVD R16, R11 \
	MOVD R4, R12 \
	VEOR V9.B16, V9.B16, V9.B16

// ACC: R15 = the lane sum of V16; F11 = float32(R15).
#define ACC \
	ADDV_4S(16, 16) \
	FMOVS F16, R15 \
	SCVTFWS R15, F11

// DDX: F7 = the block's f16 d at (R8) times the activation scale (next at R10).
#define DDX \
	MOVHU (R8), R15 \
	FMOVS R15, F7 \
	FCVT_SH(7, 7) \
	FMOVS.P 4(R10), F8 \
	FMULS F8, F7, F7

// MINFLOAT: F9 += fma(m, s, d*dx*float32(acc)), m the block's f16 at 2(R8), s the
// activation block's sum (next at R11): dotQ4_1's and dotQ5_1's order on arm64.
#define MINFLOAT \
	ACC \
	DDX \
	FMULS F11, F7, F11 \
	MOVHU 2(R8), R15 \
	FMOVS R15, F12 \
	FCVT_SH(12, 12) \
	FMOVS.P 4(R11), F13 \
	FMADDS F13, F11, F12, F11 \
	FADDS F11, F9, F9

// ROWEND: store the row's sum, step to the next row, one row less in R5.
#define ROWEND \
	FMOVS.P F9, 4(R6) \
	ADD R1, R0 \
	SUBS $1, R5

// func dotQ5_0RowsNEON(w *byte, stride int, x *byte, d *float32, nb, rows int, out *float32, dp bool)
TEXT ·dotQ5_0RowsNEON(SB), NOSPLIT, $0-57
	MOVD w+0(FP), R0
	MOVD stride+8(FP), R1
	MOVD x+16(FP), R2
	MOVD d+24(FP), R3
	MOVD nb+32(FP), R4
	MOVD rows+40(FP), R5
	MOVD out+48(FP), R6
	MOVBU dp+56(FP), R14
	MOVD ZR, R16
	CBZ R5, q50done
	CBZ R4, q50done
	CONSTS

q50row:
	ROWSTART

q50block:
	QH(2)
	NIBBLES(6)
	VORR V21.B16, V6.B16, V6.B16
	VORR V22.B16, V7.B16, V7.B16
	VSUB V30.B16, V6.B16, V6.B16
	VSUB V30.B16, V7.B16, V7.B16
	CBZ R14, q50plain
	DOT32DP(6, 7, 2, 3, 16)
	B q50sum

q50plain:
	DOT32(6, 7, 2, 3, 18, 19, 16)

q50sum:
	// F9 = fma(float32(acc), d*dx, F9): dotQ5_0's order on arm64
	ACC
	DDX
	FMADDS F7, F9, F11, F9
	ADD $22, R8
	ADD $34, R9
	SUBS $1, R12
	BNE q50block

	ROWEND
	BNE q50row

q50done:
	RET

// func dotQ5_1RowsNEON(w *byte, stride int, x *byte, d, s *float32, nb, rows int, out *float32, dp bool)
TEXT ·dotQ5_1RowsNEON(SB), NOSPLIT, $0-65
	MOVD w+0(FP), R0
	MOVD stride+8(FP), R1
	MOVD x+16(FP), R2
	MOVD d+24(FP), R3
	MOVD s+32(FP), R16
	MOVD nb+40(FP), R4
	MOVD rows+48(FP), R5
	MOVD out+56(FP), R6
	MOVBU dp+64(FP), R14
	CBZ R5, q51done
	CBZ R4, q51done
	CONSTS

q51row:
	ROWSTART

q51block:
	QH(4)
	NIBBLES(8)
	VORR V21.B16, V6.B16, V6.B16
	VORR V22.B16, V7.B16, V7.B16
	CBZ R14, q51plain
	DOT32DP(6, 7, 2, 3, 16)
	B q51sum

q51plain:
	DOT32(6, 7, 2, 3, 18, 19, 16)

q51sum:
	MINFLOAT
	ADD $24, R8
	ADD $34, R9
	SUBS $1, R12
	BNE q51block

	ROWEND
	BNE q51row

q51done:
	RET

// func dotQ4_1RowsNEON(w *byte, stride int, x *byte, d, s *float32, nb, rows int, out *float32, dp bool)
TEXT ·dotQ4_1RowsNEON(SB), NOSPLIT, $0-65
	MOVD w+0(FP), R0
	MOVD stride+8(FP), R1
	MOVD x+16(FP), R2
	MOVD d+24(FP), R3
	MOVD s+32(FP), R16
	MOVD nb+40(FP), R4
	MOVD rows+48(FP), R5
	MOVD out+56(FP), R6
	MOVBU dp+64(FP), R14
	CBZ R5, q41done
	CBZ R4, q41done
	VMOVI $15, V31.B16

q41row:
	ROWSTART

q41block:
	NIBBLES(4)
	CBZ R14, q41plain
	DOT32DP(6, 7, 2, 3, 16)
	B q41sum

q41plain:
	DOT32(6, 7, 2, 3, 18, 19, 16)

q41sum:
	MINFLOAT
	ADD $20, R8
	ADD $34, R9
	SUBS $1, R12
	BNE q41block

	ROWEND
	BNE q41row

q41done:
	RET
