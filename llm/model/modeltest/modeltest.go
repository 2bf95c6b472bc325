// Package modeltest writes the small random-weight models tests of the llm packages run on.
package modeltest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
)

// Synthetic writes a random-weight model of the registered shape with the given number of
// layers (0: the shape's own), weights of type typ from seed, into the test's temporary
// directory, and returns its path.
func Synthetic(tb testing.TB, shape string, layers int, typ gguf.Type, seed uint64) string {
	tb.Helper()
	s, ok := model.Shapes[shape]
	if !ok {
		tb.Fatalf("no model shape %q", shape)
	}
	if layers > 0 {
		s.Layers = layers
	}
	p := filepath.Join(tb.TempDir(), shape+".gguf")
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	if err := model.WriteSynthetic(f, s, typ, seed, nil); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}
