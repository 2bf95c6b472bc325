//go:build (!amd64 && !arm64) || noasm

package quant

func setVNNI(on bool) func() { return func() {} }

func dotprodPaths() []bool { return []bool{false} }

func setDotprod(on bool) func() { return func() {} }
