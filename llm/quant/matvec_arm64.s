//go:build arm64 && !noasm

#include "textflag.h"

// NEON matrix-vector kernels for Q8_0, Q4_0 and IQ4_NL weights against Q8_0 activations, all
// rows of a range in one call. Each block's integer dot product is exact: with dp (the ARMv8.2
// dot-product extension) by SDOT, without by SMULL/SMLAL2 pairs (they fit int16: |w*x| <=
// 128*127, two of them <= 32512; SADDLP/SADALP widen to int32). The float operations are
// those of the amd64 kernels, which are llama.cpp's (matvec_amd64.s):
//   - Q4_0 and IQ4_NL: sum += float(total) * (d_w*d_x) with one fused multiply-add per block,
//     in block order (what the pure-Go kernels compute on arm64, where Go fuses it);
//   - Q8_0 (ggml_vec_dot_q8_0_q8_0 on AVX2): eight lanes, lane k the block's products 4k..4k+3,
//     acc_k += (d_w*d_x) * float(lane k) fused per block, then hsum_float_8:
//     ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)). quant_sweep_test.go has its Go twin.

// Instructions the Go assembler has no mnemonic for, encoded by register number.
#define SMULL_8H(m, n, d) WORD $(0x0E20C000 | (m<<16) | (n<<5) | d)
#define SMLAL2_8H(m, n, d) WORD $(0x4E208000 | (m<<16) | (n<<5) | d)
#define SADDLP_4S(n, d) WORD $(0x4E602800 | (n<<5) | d)
#define SADALP_4S(n, d) WORD $(0x4E606800 | (n<<5) | d)
#define ADDV_4S(n, d) WORD $(0x4EB1B800 | (n<<5) | d)
#define FCVT_SH(n, d) WORD $(0x1EE24000 | (n<<5) | d)
#define SDOT_4S(m, n, d) WORD $(0x4E809400 | (m<<16) | (n<<5) | d)
#define ZERO(d) WORD $(0x6F00E400 | d)
#define SMULL2_8H(m, n, d) WORD $(0x4E20C000 | (m<<16) | (n<<5) | d)
#define ADDP_4S(m, n, d) WORD $(0x4EA0BC00 | (m<<16) | (n<<5) | d)
#define SCVTF_4S(n, d) WORD $(0x4E21D800 | (n<<5) | d)
#define FMLA_4S_S0(m, n, d) WORD $(0x4F801000 | (m<<16) | (n<<5) | d)
#define FADD_4S(m, n, d) WORD $(0x4E20D400 | (m<<16) | (n<<5) | d)
#define EXT8_16B(m, n, d) WORD $(0x6E004000 | (m<<16) | (n<<5) | d)
#define FADDP_S(n, d) WORD $(0x7E30D800 | (n<<5) | d)

// BLOCKDOT: V6.S[0] = sum of V0.16B*V2.16B + V1.16B*V3.16B (signed bytes).
#define BLOCKDOT \
	SMULL_8H(2, 0, 4) \
	SMLAL2_8H(2, 0, 4) \
	SMULL_8H(3, 1, 5) \
	SMLAL2_8H(3, 1, 5) \
	SADDLP_4S(4, 6) \
	SADALP_4S(5, 6) \
	ADDV_4S(6, 6)

// BLOCKDOTDP: BLOCKDOT with SDOT.
#define BLOCKDOTDP \
	ZERO(6) \
	SDOT_4S(2, 0, 6) \
	SDOT_4S(3, 1, 6) \
	ADDV_4S(6, 6)

// BLOCKACC: F9 += float(R14) * (d_w (half in R13) * d_x (next float at R10)); one block less
// to go in R12.
#define BLOCKACC \
	SCVTFWS R14, F6 \
	FMOVS R13, F7 \
	FCVT_SH(7, 7) \
	FMOVS.P 4(R10), F8 \
	FMULS F8, F7, F7 \
	FMADDS F7, F9, F6, F9 \
	SUBS $1, R12, R12

// ROWEND: store the row's sum, step to the next row (R1 bytes on), one row less in R5.
#define ROWEND \
	FMOVS.P F9, 4(R6) \
	ADD R1, R0, R0 \
	SUBS $1, R5, R5

// LANEDOT: V4 = lanes 0..3, V5 = lanes 4..7 of a Q8_0 block against Q8_0 activations (V0, V1
// by V2, V3; lane k: the products of elements 4k..4k+3, as VPMADDUBSW+VPMADDWD leave them).
#define LANEDOT \
	SMULL_8H(2, 0, 4) \
	SMULL2_8H(2, 0, 6) \
	SMULL_8H(3, 1, 5) \
	SMULL2_8H(3, 1, 7) \
	SADDLP_4S(4, 4) \
	SADDLP_4S(6, 6) \
	SADDLP_4S(5, 5) \
	SADDLP_4S(7, 7) \
	ADDP_4S(6, 4, 4) \
	ADDP_4S(7, 5, 5)

// LANEDOTDP: LANEDOT with SDOT, whose lanes are those groups of four.
#define LANEDOTDP \
	ZERO(4) \
	ZERO(5) \
	SDOT_4S(2, 0, 4) \
	SDOT_4S(3, 1, 5)

// func matVecQ8_0NEON(w *byte, stride int, x *byte, xd *float32, nb, rows int, out *float32, dp bool)
// The eight float lanes accumulate in V16 (0..3) and V17 (4..7).
TEXT ·matVecQ8_0NEON(SB), NOSPLIT, $0-57
	MOVD w+0(FP), R0
	MOVD stride+8(FP), R1
	MOVD x+16(FP), R2
	MOVD xd+24(FP), R3
	MOVD nb+32(FP), R4
	MOVD rows+40(FP), R5
	MOVD out+48(FP), R6
	MOVBU dp+56(FP), R7
	CBZ R5, q8done
	CBZ R4, q8done

q8row:
	MOVD R0, R8
	MOVD R2, R9
	MOVD R3, R10
	MOVD R4, R12
	ZERO(16)
	ZERO(17)

q8block:
	MOVHU.P 2(R8), R13
	ADD $2, R9
	VLD1.P 32(R8), [V0.B16, V1.B16]
	VLD1.P 32(R9), [V2.B16, V3.B16]
	CBZ R7, q8plain
	LANEDOTDP
	B q8acc

q8plain:
	LANEDOT

q8acc:
	FMOVS R13, F7
	FCVT_SH(7, 7)
	FMOVS.P 4(R10), F8
	FMULS F8, F7, F7
	SCVTF_4S(4, 4)
	SCVTF_4S(5, 5)
	FMLA_4S_S0(7, 4, 16)
	FMLA_4S_S0(7, 5, 17)
	SUBS $1, R12, R12
	BNE q8block

	// hsum_float_8: a_k + a_{k+4}, then lanes 0+2 and 1+3, then those two
	FADD_4S(17, 16, 16)
	EXT8_16B(16, 16, 18)
	FADD_4S(18, 16, 16)
	FADDP_S(16, 9)
	ROWEND
	BNE q8row

q8done:
	RET

// func matVecQ4_0NEON(w *byte, stride int, x *byte, xd *float32, sum8 *int32, nb, rows int, out *float32, dp bool)
// sum8 is Vec.Q8Sum8: the nibbles are multiplied unsigned and 8*sum(x) subtracted per block.
TEXT ·matVecQ4_0NEON(SB), NOSPLIT, $0-65
	MOVD w+0(FP), R0
	MOVD stride+8(FP), R1
	MOVD x+16(FP), R2
	MOVD xd+24(FP), R3
	MOVD sum8+32(FP), R7
	MOVD nb+40(FP), R4
	MOVD rows+48(FP), R5
	MOVD out+56(FP), R6
	MOVBU dp+64(FP), R16
	CBZ R5, q4done
	CBZ R4, q4done
	VMOVI $15, V31.B16

q4row:
	MOVD R0, R8
	MOVD R2, R9
	MOVD R3, R10
	MOVD R7, R11
	MOVD R4, R12
	VEOR V9.B16, V9.B16, V9.B16

q4block:
	MOVHU.P 2(R8), R13
	ADD $2, R9
	VLD1.P 16(R8), [V1.B16]
	VLD1.P 32(R9), [V2.B16, V3.B16]
	VAND V31.B16, V1.B16, V0.B16
	VUSHR $4, V1.B16, V1.B16
	CBZ R16, q4plain
	BLOCKDOTDP
	B q4acc

q4plain:
	BLOCKDOT

q4acc:
	FMOVS F6, R14
	MOVW.P 4(R11), R15
	SUBW R15, R14, R14
	BLOCKACC
	BNE q4block

	ROWEND
	BNE q4row

q4done:
	RET

// func matVecIQ4_NLNEON(w *byte, stride int, x *byte, xd *float32, nb, rows int, out *float32, dp bool)
// The nibbles index iq4Values (TBL); otherwise as matVecQ8_0NEON.
TEXT ·matVecIQ4_NLNEON(SB), NOSPLIT, $0-57
	MOVD w+0(FP), R0
	MOVD stride+8(FP), R1
	MOVD x+16(FP), R2
	MOVD xd+24(FP), R3
	MOVD nb+32(FP), R4
	MOVD rows+40(FP), R5
	MOVD out+48(FP), R6
	MOVBU dp+56(FP), R7
	CBZ R5, iq4done
	CBZ R4, iq4done
	VMOVI $15, V31.B16
	MOVD $·iq4Values(SB), R11
	VLD1 (R11), [V28.B16]

iq4row:
	MOVD R0, R8
	MOVD R2, R9
	MOVD R3, R10
	MOVD R4, R12
	VEOR V9.B16, V9.B16, V9.B16

iq4block:
	MOVHU.P 2(R8), R13
	ADD $2, R9
	VLD1.P 16(R8), [V1.B16]
	VLD1.P 32(R9), [V2.B16, V3.B16]
	VAND V31.B16, V1.B16, V0.B16
	VUSHR $4, V1.B16, V1.B16
	VTBL V0.B16, [V28.B16], V0.B16
	VTBL V1.B16, [V28.B16], V1.B16
	CBZ R7, iq4plain
	BLOCKDOTDP
	B iq4acc

iq4plain:
	BLOCKDOT

iq4acc:
	FMOVS F6, R14
	BLOCKACC
	BNE iq4block

	ROWEND
	BNE iq4row

iq4done:
	RET
