//go:build amd64 && !noasm

#include "textflag.h"

// Conversions of activations, with the roundings of the Go versions (and of llama.cpp's AVX2
// quantize_row_q8_0 and F16C).

DATA q8perm<>+0(SB)/4, $0
DATA q8perm<>+4(SB)/4, $4
DATA q8perm<>+8(SB)/4, $1
DATA q8perm<>+12(SB)/4, $5
DATA q8perm<>+16(SB)/4, $2
DATA q8perm<>+20(SB)/4, $6
DATA q8perm<>+24(SB)/4, $3
DATA q8perm<>+28(SB)/4, $7
GLOBL q8perm<>(SB), RODATA|NOPTR, $32

// func quantizeQ8_0AVX2(src *float32, dst *byte, nb int)
// Per block of 32: d = amax/127 (stored as F16), q = round-half-even(x * (127/amax)), 0 when
// amax is 0.
TEXT ·quantizeQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15      // |x| mask
	MOVL $0x42fe0000, AX
	VMOVD AX, X14              // 127.0
	VXORPS X13, X13, X13
	VMOVDQU q8perm<>(SB), Y12
	TESTQ CX, CX
	JZ qdone

qloop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VANDPS Y15, Y2, Y6
	VANDPS Y15, Y3, Y7
	VMAXPS Y5, Y4, Y4
	VMAXPS Y7, Y6, Y6
	VMAXPS Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VMOVHLPS X4, X4, X5
	VMAXPS X5, X4, X4
	VMOVSHDUP X4, X5
	VMAXSS X5, X4, X4          // amax
	VDIVSS X14, X4, X5         // d = amax/127
	VCVTPS2PH $0, X5, X6
	VPEXTRW $0, X6, AX
	MOVW AX, (DI)
	VDIVSS X4, X14, X7         // 127/amax
	VCMPSS $4, X13, X4, X8     // amax != 0
	VANDPS X8, X7, X7
	VBROADCASTSS X7, Y7
	VMULPS Y7, Y0, Y0
	VMULPS Y7, Y1, Y1
	VMULPS Y7, Y2, Y2
	VMULPS Y7, Y3, Y3
	VROUNDPS $0, Y0, Y0
	VROUNDPS $0, Y1, Y1
	VROUNDPS $0, Y2, Y2
	VROUNDPS $0, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y12, Y0         // undo the per-lane interleaving of the packs
	VMOVDQU Y0, 2(DI)
	ADDQ $128, SI
	ADDQ $34, DI
	DECQ CX
	JNZ qloop

qdone:
	VZEROUPPER
	RET

// func f32ToF16AVX2(dst *uint16, src *float32, n int)
// n is a multiple of 8.
TEXT ·f32ToF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ hdone

hloop:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VMOVDQU X1, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ hloop

hdone:
	VZEROUPPER
	RET

// func roundF16AVX2(x *float32, n int, a float32)
// x[i] = F16ToF32(F32ToF16(x[i]*a)); n is a multiple of 8.
TEXT ·roundF16AVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS a+16(FP), Y2
	SHRQ $3, CX
	JZ rdone

rloop:
	VMULPS (SI), Y2, Y0
	VCVTPS2PH $0, Y0, X1
	VCVTPH2PS X1, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ rloop

rdone:
	VZEROUPPER
	RET
