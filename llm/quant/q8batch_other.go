//go:build !amd64 || noasm

package quant

type vecRefQ8 struct{}

func gemmOrderedAsm(m *Matrix, xs []Vec, ys [][]float32, refs []vecRefQ8, g0, g1 int) bool {
	return false
}
