package quant

import (
	"encoding/binary"
	"math"

	"github.com/gorun-hpc/gorun/llm/gguf"
)

func init() {
	register(format{typ: gguf.F32, blockSize: 1, blockBytes: 4, vec: gguf.F32,
		dequant: func(src []byte, dst []float32) {
			for i := range dst {
				dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			}
		},
		quant: func(src []float32, dst []byte) {
			for i, v := range src {
				binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
			}
		},
		dot: func(row []byte, v *Vec) float32 { return dotF32(row, v.F32) },
	})
}
