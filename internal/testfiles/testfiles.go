// Package testfiles locates the project's shared real-data files (small models, tokenizer
// vectors, netlib HPL output). They live outside the repository, in ../shared/testdata next to
// the module root, and are never committed; tests that need them skip when the folder is absent.
package testfiles

import (
	"os"
	"path/filepath"
	"testing"
)

// Root returns the absolute path of the shared testdata folder, or "" when it cannot be found.
// GORUN_TESTDATA overrides the search.
func Root() string {
	if d := os.Getenv("GORUN_TESTDATA"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			td := filepath.Join(dir, "..", "shared", "testdata")
			if st, err := os.Stat(td); err == nil && st.IsDir() {
				return filepath.Clean(td)
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Path returns the path of a file under the shared testdata folder (elements joined), skipping
// the test with a message when the folder or the file is absent.
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	root := Root()
	if root == "" {
		tb.Skip("shared testdata not found (expected ../shared/testdata beside the module root, or GORUN_TESTDATA); skipping")
	}
	p := filepath.Join(append([]string{root}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared testdata file %s not present: %v", p, err)
	}
	return p
}
