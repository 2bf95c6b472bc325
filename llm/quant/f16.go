package quant

import (
	"encoding/binary"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

func init() {
	register(format{typ: gguf.F16, blockSize: 1, blockBytes: 2, vec: gguf.F16,
		dequant: func(src []byte, dst []float32) {
			for i := range dst {
				dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
			}
		},
		quant: func(src []float32, dst []byte) {
			for i, v := range src {
				binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
			}
		},
		dot: func(row []byte, v *Vec) float32 { return dotF16(row, v.U16) },
	})
}
