//go:build amd64 && !noasm

package quant

// setLegacy2 turns the legacy types' two-vector kernels off (on=false) or on, for
// benchmarks; it returns a function that restores the previous setting.
func setLegacy2(on bool) func() {
	old := useLegacy2
	useLegacy2 = on
	return func() { useLegacy2 = old }
}

// legacyISA512 reports whether the legacy types run their AVX-512 forms.
func legacyISA512() bool { return legacy512() }

// setLegacy4 turns the four-vector Q5_0 kernel off (on=false) or on, for benchmarks; it
// returns a function that restores the previous setting.
func setLegacy4(on bool) func() {
	old := useLegacy4
	useLegacy4 = on
	return func() { useLegacy4 = old }
}

// setLegacy8 is setLegacy4 for the eight-vector kernels.
func setLegacy8(on bool) func() {
	old := useLegacy8
	useLegacy8 = on
	return func() { useLegacy8 = old }
}
