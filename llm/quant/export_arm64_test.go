//go:build arm64 && !noasm

package quant

import "golang.org/x/sys/cpu"

func setVNNI(on bool) func() { return func() {} }

// dotprodPaths are the settings of useDotprod the tests run the NEON kernels with: the
// baseline path always, the SDOT path where the CPU has it.
func dotprodPaths() []bool {
	if cpu.ARM64.HasASIMDDP {
		return []bool{false, true}
	}
	return []bool{false}
}

// setDotprod selects the SDOT path (on) or the baseline NEON path; it returns a function that
// restores the previous setting.
func setDotprod(on bool) func() {
	old := useDotprod
	useDotprod = on && cpu.ARM64.HasASIMDDP
	return func() { useDotprod = old }
}
