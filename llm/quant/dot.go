package quant

import (
	"encoding/binary"
	"math"
)

func dotF32Generic(row []byte, x []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(x)
	row = row[:4*n]
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:])) * x[i]
		s1 += math.Float32frombits(binary.LittleEndian.Uint32(row[4*i+4:])) * x[i+1]
		s2 += math.Float32frombits(binary.LittleEndian.Uint32(row[4*i+8:])) * x[i+2]
		s3 += math.Float32frombits(binary.LittleEndian.Uint32(row[4*i+12:])) * x[i+3]
	}
	for ; i < n; i++ {
		s0 += math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:])) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func dotF16Generic(row []byte, x []uint16) float32 {
	var s0, s1 float32
	n := len(x)
	row = row[:2*n]
	i := 0
	for ; i+2 <= n; i += 2 {
		s0 += F16ToF32(binary.LittleEndian.Uint16(row[2*i:])) * F16ToF32(x[i])
		s1 += F16ToF32(binary.LittleEndian.Uint16(row[2*i+2:])) * F16ToF32(x[i+1])
	}
	for ; i < n; i++ {
		s0 += F16ToF32(binary.LittleEndian.Uint16(row[2*i:])) * F16ToF32(x[i])
	}
	return s0 + s1
}

func dotBF16(row []byte, x []uint16) float32 {
	var s0, s1 float32
	n := len(x)
	row = row[:2*n]
	for i := 0; i < n; i++ {
		p := BF16ToF32(binary.LittleEndian.Uint16(row[2*i:])) * BF16ToF32(x[i])
		if i&1 == 0 {
			s0 += p
		} else {
			s1 += p
		}
	}
	return s0 + s1
}

func dotU16Generic(a, b []uint16) float32 {
	var s float32
	for i, x := range a {
		s += F16ToF32(x) * F16ToF32(b[i])
	}
	return s
}

func axpyU16Generic(out []float32, a float32, v []uint16) {
	for i, x := range v {
		out[i] += a * F16ToF32(x)
	}
}
