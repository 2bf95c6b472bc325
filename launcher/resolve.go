package launcher

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/sys/unix"
)

// ModulePath is this project's module; its cmd/ folder holds the programs gorun can build
// by name (hpl, llm, commbench, ...).
const ModulePath = "github.com/gorun-hpc/gorun"

// Resolver turns the PROGRAM argument of gorun into an executable file, building Go packages
// when PROGRAM names one. The zero value resolves against the current process: its working
// directory, PATH and executable.
type Resolver struct {
	Dir      string    // directory relative paths are taken from; "" = current directory
	Path     string    // search list for bare names; "" = $PATH
	SelfExe  string    // the gorun executable, whose folder is searched; "" = os.Executable()
	CacheDir string    // where built programs go; "" = DefaultCacheDir()
	GoTool   string    // the go command; "" = "go" on PATH, then $GOROOT/bin/go
	Log      io.Writer // receives the go build's own output (compile errors); nil = discard
	// Pin makes Resolve return, for a program it built, a private hard link to the binary
	// (in pin-<gorun pid>/ beside it), so a concurrent gorun that rebuilds the package cannot
	// swap the binary between the starts of two ranks of this job. Release it with Unpin.
	Pin bool
}

// NotFoundError reports a PROGRAM that none of the resolution rules matched, or a path that
// cannot be run. gorun treats it as a usage error (exit 2).
type NotFoundError struct {
	Program string
	Reason  string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("program %q: %s", e.Program, e.Reason)
}

// BuildError reports a Go package that was found but did not build.
type BuildError struct {
	Dir string
	Err error
}

func (e *BuildError) Error() string { return fmt.Sprintf("go build in %s: %v", e.Dir, e.Err) }
func (e *BuildError) Unwrap() error { return e.Err }

// Resolve returns the absolute path of the executable that runs program, trying in order:
//  1. a path (it contains a '/'): an executable file is run as it is; a directory holding a Go
//     main package is built with `go build` into the cache and the result is run;
//  2. a name found on PATH;
//  3. a program installed beside the gorun executable (where `go install` puts hpl, llm, ...);
//  4. cmd/<name> of the Go module holding the working directory, then cmd/<name> of this
//     project's module (found walking up from the working directory, then from the gorun
//     executable), built as in 1, so `go run ./cmd/gorun -n 4 hpl` works on a fresh clone.
func (r Resolver) Resolve(program string) (string, error) {
	if program == "" {
		return "", &NotFoundError{Program: program, Reason: "empty program name"}
	}
	dir, err := r.dir()
	if err != nil {
		return "", err
	}
	if strings.ContainsRune(program, '/') || program == "." || program == ".." {
		p := program
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return r.resolvePath(program, filepath.Clean(p))
	}
	var looked []string
	if p, ok := r.lookPath(program); ok {
		return p, nil
	}
	looked = append(looked, "not on PATH")
	if self := r.selfExe(); self != "" {
		p := filepath.Join(filepath.Dir(self), program)
		if isExecutableFile(p) {
			return p, nil
		}
		looked = append(looked, "not beside gorun in "+filepath.Dir(self))
	}
	roots := r.moduleRoots(dir)
	if len(roots) == 0 {
		looked = append(looked, "no Go module around "+dir)
	}
	for _, root := range roots {
		pkg := filepath.Join(root, "cmd", program)
		if st, err := os.Stat(pkg); err == nil && st.IsDir() {
			if _, err := mainPackage(pkg); err != nil {
				return "", &NotFoundError{Program: program, Reason: err.Error()}
			}
			return r.build(pkg)
		}
		looked = append(looked, "no "+pkg)
	}
	reason := "not found: " + strings.Join(looked, ", ")
	if local := filepath.Join(dir, program); isExecutableFile(local) {
		reason += fmt.Sprintf(" (there is one in the working directory: run ./%s)", program)
	} else if _, err := mainPackage(local); err == nil {
		reason += fmt.Sprintf(" (there is a Go main package in the working directory: run ./%s)", program)
	}
	return "", &NotFoundError{Program: program, Reason: reason}
}

func (r Resolver) dir() (string, error) {
	if r.Dir != "" {
		return filepath.Abs(r.Dir)
	}
	return os.Getwd()
}

func (r Resolver) resolvePath(program, p string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", &NotFoundError{Program: program, Reason: "no such file or directory: " + p}
		}
		return "", &NotFoundError{Program: program, Reason: err.Error()}
	}
	if st.IsDir() {
		if _, err := mainPackage(p); err != nil {
			return "", &NotFoundError{Program: program, Reason: err.Error()}
		}
		return r.build(p)
	}
	if !st.Mode().IsRegular() {
		return "", &NotFoundError{Program: program, Reason: p + " is not a regular file"}
	}
	if unix.Access(p, unix.X_OK) != nil {
		return "", &NotFoundError{Program: program, Reason: p + " is not executable"}
	}
	return p, nil
}

func (r Resolver) lookPath(name string) (string, bool) {
	path := r.Path
	if path == "" {
		path = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(path) {
		// Relative entries (".", "") would make the result depend on where a rank runs, and
		// running a file from the working directory by bare name is a known trap: skip them.
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if isExecutableFile(p) {
			return p, true
		}
	}
	return "", false
}

func (r Resolver) selfExe() string {
	if r.SelfExe != "" {
		return r.SelfExe
	}
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	if q, err := filepath.EvalSymlinks(p); err == nil {
		p = q
	}
	return p
}

// moduleRoots lists, without repeats, the root of the module holding dir and the roots of this
// project's module found above dir and above the gorun executable.
func (r Resolver) moduleRoots(dir string) []string {
	var roots []string
	add := func(root string) {
		if root == "" {
			return
		}
		for _, x := range roots {
			if x == root {
				return
			}
		}
		roots = append(roots, root)
	}
	add(findModuleRoot(dir, ""))
	add(findModuleRoot(dir, ModulePath))
	if self := r.selfExe(); self != "" {
		add(findModuleRoot(filepath.Dir(self), ModulePath))
	}
	return roots
}

// findModuleRoot walks up from dir to the first go.mod, or with module != "" to the first
// go.mod that declares that module path. It returns "" when there is none.
func findModuleRoot(dir, module string) string {
	for {
		gomod := filepath.Join(dir, "go.mod")
		if st, err := os.Stat(gomod); err == nil && st.Mode().IsRegular() {
			if module == "" || modulePathOf(gomod) == module {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// modulePathOf returns the path declared by the module directive of a go.mod file, or "".
func modulePathOf(gomod string) string {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	return parseModulePath(b)
}

// parseModulePath returns the module path of go.mod contents: the first `module` directive,
// unquoted, without a trailing comment; "" when there is none or it is malformed.
func parseModulePath(gomod []byte) string {
	for len(gomod) > 0 {
		var line []byte
		if i := bytes.IndexByte(gomod, '\n'); i >= 0 {
			line, gomod = gomod[:i], gomod[i+1:]
		} else {
			line, gomod = gomod, nil
		}
		rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("module"))
		if !ok || len(rest) == 0 || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		if i := bytes.Index(rest, []byte("//")); i >= 0 {
			rest = rest[:i]
		}
		rest = bytes.TrimSpace(rest)
		if len(rest) >= 2 && (rest[0] == '"' || rest[0] == '`') && rest[len(rest)-1] == rest[0] {
			rest = rest[1 : len(rest)-1]
		}
		if bytes.ContainsFunc(rest, unicode.IsSpace) {
			return "" // no valid module path has a space in it
		}
		return string(rest)
	}
	return ""
}

// mainPackage checks that dir holds a buildable Go main package for this GOOS/GOARCH.
func mainPackage(dir string) (*build.Package, error) {
	pkg, err := build.ImportDir(dir, 0)
	if err != nil {
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil, fmt.Errorf("%s is a directory without Go files for %s/%s", dir, runtime.GOOS, runtime.GOARCH)
		}
		return nil, fmt.Errorf("%s: %v", dir, err)
	}
	if pkg.Name != "main" {
		return nil, fmt.Errorf("%s holds package %s, not a main package", dir, pkg.Name)
	}
	return pkg, nil
}

// DefaultCacheDir is where gorun keeps the programs it builds: $GORUN_CACHE_DIR, else
// gorun/ under the user's cache directory (~/.cache on Linux), else a per-user temp folder.
func DefaultCacheDir() string {
	if d := os.Getenv("GORUN_CACHE_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "gorun")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("gorun-%d", os.Getuid()))
}

// build compiles the main package in dir and returns the executable. The output path is keyed
// by the package directory and target, one per package; `go build` runs every time because
// only it knows whether any dependency changed, and it leaves an up-to-date binary untouched,
// so a repeated run costs a staleness check, not a link. A file lock serialises concurrent
// gorun jobs building the same package.
func (r Resolver) build(dir string) (string, error) {
	goTool, err := r.goTool()
	if err != nil {
		return "", &BuildError{Dir: dir, Err: err}
	}
	cache := r.CacheDir
	if cache == "" {
		cache = DefaultCacheDir()
	}
	sum := sha256.Sum256([]byte(dir + "\x00" + runtime.GOOS + "/" + runtime.GOARCH))
	outDir := filepath.Join(cache, "bin", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return "", &BuildError{Dir: dir, Err: err}
	}
	out := filepath.Join(outDir, filepath.Base(dir))
	lock, err := os.OpenFile(out+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", &BuildError{Dir: dir, Err: err}
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", &BuildError{Dir: dir, Err: fmt.Errorf("lock %s: %w", lock.Name(), err)}
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)

	cmd := exec.Command(goTool, "build", "-o", out, ".")
	cmd.Dir = dir
	logw := r.Log
	if logw == nil {
		logw = io.Discard
	}
	cmd.Stdout = logw
	cmd.Stderr = logw
	if err := cmd.Run(); err != nil {
		return "", &BuildError{Dir: dir, Err: err}
	}
	if !r.Pin {
		return out, nil
	}
	sweepPins(outDir)
	pinDir := filepath.Join(outDir, fmt.Sprintf("pin-%d", os.Getpid()))
	pinned := filepath.Join(pinDir, filepath.Base(out))
	if err := os.MkdirAll(pinDir, 0o700); err != nil {
		return "", &BuildError{Dir: dir, Err: err}
	}
	_ = os.Remove(pinned)
	if err := os.Link(out, pinned); err != nil {
		// A file system without hard links: run the shared binary, as unpinned.
		os.Remove(pinDir)
		return out, nil
	}
	return pinned, nil
}

// Unpin removes a binary pinned by a Resolver with Pin set (any other path is left alone).
func Unpin(path string) {
	dir := filepath.Dir(path)
	if filepath.Base(dir) != fmt.Sprintf("pin-%d", os.Getpid()) {
		return
	}
	os.Remove(path)
	os.Remove(dir)
}

// sweepPins removes the pins that gorun processes which no longer exist left behind (killed
// before they could Unpin).
func sweepPins(outDir string) {
	pins, _ := filepath.Glob(filepath.Join(outDir, "pin-*"))
	for _, p := range pins {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "pin-"))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			os.RemoveAll(p)
		}
	}
}

func (r Resolver) goTool() (string, error) {
	if r.GoTool != "" {
		return r.GoTool, nil
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if isExecutableFile(p) {
			return p, nil
		}
	}
	return "", errors.New("the go command is needed to build it and is not on PATH")
}

func isExecutableFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && unix.Access(p, unix.X_OK) == nil
}
