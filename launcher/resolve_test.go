package launcher

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), mode))
}

// goModule writes a module with a command cmd/<name> that prints msg.
func goModule(t *testing.T, root, module, name, msg string) {
	t.Helper()
	writeFile(t, filepath.Join(root, "go.mod"), "module "+module+" // a comment\n\ngo 1.26\n", 0o644)
	writeFile(t, filepath.Join(root, "cmd", name, "main.go"),
		"package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Print(\""+msg+"\") }\n", 0o644)
}

func notFound(t *testing.T, err error, contains string) {
	t.Helper()
	var nf *NotFoundError
	require.True(t, errors.As(err, &nf), "want a NotFoundError, got %v", err)
	assert.Contains(t, nf.Error(), contains)
}

func runOutput(t *testing.T, exe string) string {
	t.Helper()
	out, err := exec.Command(exe).Output()
	require.NoError(t, err)
	return string(out)
}

func TestResolvePaths(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "prog"), "#!/bin/sh\necho prog\n", 0o755)
	writeFile(t, filepath.Join(dir, "data"), "not a program", 0o644)
	r := Resolver{Dir: dir, Path: t.TempDir()}

	p, err := r.Resolve("./prog")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "prog"), p)
	p, err = r.Resolve(filepath.Join(dir, "prog"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "prog"), p)

	_, err = r.Resolve("./data")
	notFound(t, err, "is not executable")
	_, err = r.Resolve("./missing")
	notFound(t, err, "no such file or directory: "+filepath.Join(dir, "missing"))
	_, err = r.Resolve(".")
	notFound(t, err, "is a directory without Go files")
	_, err = r.Resolve("")
	notFound(t, err, "empty program name")
	_, err = Resolver{Path: t.TempDir()}.Resolve("./testdata/notmain")
	notFound(t, err, "holds package notmain, not a main package")
}

func TestResolvePATHAndBesideGorun(t *testing.T) {
	bin, other, home := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(bin, "launcher-test-tool"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(bin, "launcher-test-noexec"), "", 0o644)
	writeFile(t, filepath.Join(other, "gorun"), "", 0o755)
	writeFile(t, filepath.Join(other, "sibling"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(home, "launcher-test-local"), "#!/bin/sh\n", 0o755)

	r := Resolver{Dir: home, Path: "relative/dir:" + bin, SelfExe: filepath.Join(other, "gorun")}
	p, err := r.Resolve("launcher-test-tool")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(bin, "launcher-test-tool"), p)

	p, err = r.Resolve("sibling")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(other, "sibling"), p)

	_, err = r.Resolve("launcher-test-noexec")
	notFound(t, err, "not on PATH")

	// A program in the working directory is not run by bare name (shell convention), but the
	// error says how to run it.
	r.Path = "." + string(os.PathListSeparator) + bin
	_, err = r.Resolve("launcher-test-local")
	notFound(t, err, "run ./launcher-test-local")
	notFound(t, err, "no Go module around "+home)

	// The same for a Go main package.
	_, err = Resolver{Dir: "testdata", Path: bin}.Resolve("hello")
	notFound(t, err, "there is a Go main package in the working directory: run ./hello")
}

func TestResolveModuleCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three Go programs")
	}
	cache, empty := t.TempDir(), t.TempDir()

	// cmd/<name> of the module around the working directory.
	mod := t.TempDir()
	goModule(t, mod, "example.com/m", "tool", "v1")
	deep := filepath.Join(mod, "internal", "deep")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	r := Resolver{Dir: deep, Path: empty, SelfExe: filepath.Join(empty, "gorun"), CacheDir: cache}
	exe, err := r.Resolve("tool")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(exe, cache), "built into the cache: %s", exe)
	assert.Equal(t, "v1", runOutput(t, exe))

	// A change in the source is picked up: go build decides staleness, not a timestamp of ours.
	writeFile(t, filepath.Join(mod, "cmd", "tool", "main.go"),
		"package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Print(\"v2\") }\n", 0o644)
	exe2, err := r.Resolve("tool")
	require.NoError(t, err)
	assert.Equal(t, exe, exe2)
	assert.Equal(t, "v2", runOutput(t, exe2))

	// A pinned build is a private link to the same binary, kept when the package is rebuilt
	// and removed by Unpin; pins of dead gorun processes are swept by the next build.
	stale := filepath.Join(filepath.Dir(exe), "pin-999999999")
	writeFile(t, filepath.Join(stale, "tool"), "", 0o755)
	r.Pin = true
	pinned, err := r.Resolve("tool")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(filepath.Dir(exe), fmt.Sprintf("pin-%d", os.Getpid()), "tool"), pinned)
	assert.NoDirExists(t, stale)
	writeFile(t, filepath.Join(mod, "cmd", "tool", "main.go"),
		"package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Print(\"v3\") }\n", 0o644)
	r.Pin = false
	exe3, err := r.Resolve("tool")
	require.NoError(t, err)
	assert.Equal(t, "v3", runOutput(t, exe3))
	assert.Equal(t, "v2", runOutput(t, pinned), "the pinned binary changed under the job")
	Unpin(pinned)
	assert.NoDirExists(t, filepath.Dir(pinned))

	// cmd/<name> of the gorun module above a nested module that lacks it.
	outer := t.TempDir()
	goModule(t, outer, ModulePath, "foo", "foo from gorun")
	inner := filepath.Join(outer, "inner")
	writeFile(t, filepath.Join(inner, "go.mod"), "module example.com/inner\n\ngo 1.26\n", 0o644)
	r = Resolver{Dir: inner, Path: empty, SelfExe: filepath.Join(empty, "gorun"), CacheDir: cache}
	exe, err = r.Resolve("foo")
	require.NoError(t, err)
	assert.Equal(t, "foo from gorun", runOutput(t, exe))

	// ... and of the gorun module the gorun executable lives in, from anywhere.
	r = Resolver{Dir: empty, Path: empty, SelfExe: filepath.Join(outer, "bin", "gorun"), CacheDir: cache}
	exe, err = r.Resolve("foo")
	require.NoError(t, err)
	assert.Equal(t, "foo from gorun", runOutput(t, exe))

	// Unknown everywhere: the error lists where gorun looked.
	_, err = r.Resolve("nope")
	notFound(t, err, "no "+filepath.Join(outer, "cmd", "nope"))
}

func TestBuildErrors(t *testing.T) {
	var log strings.Builder
	_, err := Resolver{Path: t.TempDir(), CacheDir: t.TempDir(), Log: &log}.Resolve("./testdata/broken")
	var be *BuildError
	require.True(t, errors.As(err, &be), "want a BuildError, got %v", err)
	assert.Contains(t, log.String(), "main.go:5")

	_, err = Resolver{Path: t.TempDir(), CacheDir: t.TempDir(), GoTool: "/nonexistent/go"}.Resolve("./testdata/hello")
	require.True(t, errors.As(err, &be), "want a BuildError, got %v", err)
}

func TestParseModulePath(t *testing.T) {
	for in, want := range map[string]string{
		"module github.com/gorun-hpc/gorun\n\ngo 1.26\n": "github.com/gorun-hpc/gorun",
		"// c\nmodule   \"example.com/q\" // note\n":     "example.com/q",
		"\tmodule\texample.com/t\r\n":                    "example.com/t",
		"modules x\nmodule y":                            "y",
		"go 1.26\n":                                      "",
		"module":                                         "",
		"":                                               "",
	} {
		assert.Equal(t, want, parseModulePath([]byte(in)), "%q", in)
	}
}

// FuzzParseModulePath: any go.mod contents give a path found in the input, without spaces.
func FuzzParseModulePath(f *testing.F) {
	f.Add([]byte("module github.com/gorun-hpc/gorun\n\ngo 1.26\n"))
	f.Add([]byte("module \"a/b\" // c\n"))
	f.Add([]byte("module `x`"))
	f.Add([]byte("module \"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := parseModulePath(data)
		if !strings.Contains(string(data), p) {
			t.Fatalf("%q is not in the input", p)
		}
		if strings.ContainsAny(p, "\n\r") || strings.TrimSpace(p) != p {
			t.Fatalf("path %q has spaces at an end or a line break", p)
		}
	})
}
