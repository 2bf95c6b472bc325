//go:build amd64 && !noasm

package quant

// setVNNI turns the VNNI kernels off (on=false) or back to what the CPU allows, for tests;
// it returns a function that restores the previous setting.
func setVNNI(on bool) func() {
	old := useVNNI
	useVNNI = on && old
	return func() { useVNNI = old }
}

func dotprodPaths() []bool { return []bool{false} }

func setDotprod(on bool) func() { return func() {} }
