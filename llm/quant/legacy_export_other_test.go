//go:build !amd64 || noasm

package quant

// setLegacy2: the two-vector legacy kernels are amd64's; elsewhere there is nothing to switch.
func setLegacy2(on bool) func() { return func() {} }

func legacyISA512() bool { return false }

func setLegacy4(on bool) func() { return func() {} }

func setLegacy8(on bool) func() { return func() {} }
