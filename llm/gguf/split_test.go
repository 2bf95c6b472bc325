package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/internal/testfiles"
)

// ggufSplit, when set, regenerates testdata/gguf-split-manifest.json from llama.cpp's tool:
//
//	go test ./llm/gguf -run TestSplitMatchesLlamaCpp -args -gguf-split=PATH/llama-gguf-split
var ggufSplit = flag.String("gguf-split", "", "llama-gguf-split binary: rewrite the manifest from its output")

// splitCases are the llama-gguf-split runs recorded in the manifest, on stories260K.gguf.
var splitCases = [][]string{
	{"--split-max-tensors", "10"},
	{"--split-max-size", "1M"},
	{"--no-tensor-first-split", "--split-max-tensors", "20"},
}

type manifestPart struct {
	Name       string   `json:"name"`
	Size       int64    `json:"size"`
	SHA256     string   `json:"sha256"`
	DataOffset int64    `json:"data_offset"`
	Keys       []string `json:"keys"` // key:type, in file order
	Split      []int    `json:"split"`
	Tensors    []string `json:"tensors"` // name type dims @offset, in file order
}

type manifestCase struct {
	Args  []string       `json:"args"`
	Parts []manifestPart `json:"parts"`
}

func describePart(t *testing.T, path string) manifestPart {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	p := manifestPart{Name: filepath.Base(path), Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:]), DataOffset: f.DataOffset}
	for _, kv := range f.KV {
		p.Keys = append(p.Keys, kv.Key+":"+kv.Type.String())
	}
	no, count, tensors, _, err := f.splitInfo()
	if err != nil {
		t.Fatal(err)
	}
	p.Split = []int{no, count, tensors}
	for _, ti := range f.Tensors {
		p.Tensors = append(p.Tensors, fmt.Sprintf("%s %s %v @%d", ti.Name, ti.Type, ti.Dims, ti.Offset))
	}
	return p
}

// writeOurs splits src with our writer as llama-gguf-split would with args.
func writeOurs(t *testing.T, src *File, args []string, prefix string) []string {
	t.Helper()
	var opt SplitOptions
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--split-max-tensors":
			i++
			fmt.Sscan(args[i], &opt.MaxTensors)
		case "--split-max-size":
			i++
			var n int64
			fmt.Sscanf(args[i], "%dM", &n)
			opt.MaxBytes = n * 1000 * 1000
		case "--no-tensor-first-split":
			opt.NoTensorFirstSplit = true
		default:
			t.Fatalf("unknown arg %s", args[i])
		}
	}
	w := NewWriter()
	if err := w.CopyFrom(src); err != nil {
		t.Fatal(err)
	}
	paths, err := w.WriteSplit(prefix, opt)
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestSplitMatchesLlamaCpp checks that our split writer produces, byte for byte, the parts that
// llama.cpp's llama-gguf-split wrote from stories260K.gguf (their hashes and layout are in the
// manifest), and that every part opens as the unsplit model.
func TestSplitMatchesLlamaCpp(t *testing.T) {
	srcPath := testfiles.Path(t, "llm", "stories260K.gguf")
	manifest := filepath.Join("testdata", "gguf-split-manifest.json")
	if *ggufSplit != "" {
		var cases []manifestCase
		for i, args := range splitCases {
			dir := t.TempDir()
			cmd := exec.Command(*ggufSplit, append(append([]string(nil), args...), srcPath, filepath.Join(dir, fmt.Sprintf("c%d", i)))...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
			}
			paths, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
			c := manifestCase{Args: args}
			for _, p := range paths {
				c.Parts = append(c.Parts, describePart(t, p))
			}
			cases = append(cases, c)
		}
		b, _ := json.MarshalIndent(cases, "", " ")
		if err := os.WriteFile(manifest, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var cases []manifestCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) != len(splitCases) {
		t.Fatalf("manifest has %d cases, want %d", len(cases), len(splitCases))
	}
	src, err := Open(srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for i, c := range cases {
		dir := t.TempDir()
		paths := writeOurs(t, src, c.Args, filepath.Join(dir, fmt.Sprintf("c%d", i)))
		if len(paths) != len(c.Parts) {
			t.Fatalf("%v: %d parts, llama-gguf-split wrote %d", c.Args, len(paths), len(c.Parts))
		}
		for j, p := range paths {
			got := describePart(t, p)
			if !reflect.DeepEqual(got, c.Parts[j]) {
				t.Errorf("%v part %d differs from llama-gguf-split's:\n got  %+v\n want %+v", c.Args, j+1, got, c.Parts[j])
			}
		}
		// Any part's name opens the whole model, equal to the source.
		for _, p := range []string{paths[0], paths[len(paths)-1]} {
			m, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			sameModel(t, src, m)
			if len(m.Parts()) != len(paths) {
				t.Errorf("%d parts, want %d", len(m.Parts()), len(paths))
			}
			m.Close()
		}
	}
}

// sameModel checks that m has a's metadata (less split keys) and a's tensors with equal data,
// read every way the File offers.
func sameModel(t *testing.T, a, m *File) {
	t.Helper()
	var ka, km []KV
	for _, kv := range a.KV {
		if !IsSplitKey(kv.Key) {
			ka = append(ka, kv)
		}
	}
	for _, kv := range m.KV {
		if !IsSplitKey(kv.Key) {
			km = append(km, kv)
		}
	}
	if !reflect.DeepEqual(ka, km) {
		t.Errorf("metadata differs")
	}
	if len(a.Tensors) != len(m.Tensors) {
		t.Fatalf("%d tensors, want %d", len(m.Tensors), len(a.Tensors))
	}
	for i := range a.Tensors {
		ta, tm := &a.Tensors[i], &m.Tensors[i]
		if ta.Name != tm.Name || ta.Type != tm.Type || !reflect.DeepEqual(ta.Dims, tm.Dims) || ta.Size != tm.Size {
			t.Fatalf("tensor %d: %+v, want %+v", i, tm, ta)
		}
		if byName, ok := m.Tensor(ta.Name); !ok || byName.Part != tm.Part {
			t.Errorf("Tensor(%q) = %+v %v", ta.Name, byName, ok)
		}
		want := a.TensorData(ta)
		if !bytes.Equal(m.TensorData(tm), want) {
			t.Errorf("tensor %s: data differs", ta.Name)
		}
		half := tm.Size / 2
		if got, err := m.Bytes(tm, half, tm.Size-half); err != nil || !bytes.Equal(got, want[half:]) {
			t.Errorf("tensor %s: Bytes differs (%v)", ta.Name, err)
		}
		buf := make([]byte, tm.Size-half)
		if err := m.ReadAt(tm, buf, half); err != nil || !bytes.Equal(buf, want[half:]) {
			t.Errorf("tensor %s: ReadAt differs (%v)", ta.Name, err)
		}
	}
}

// splitSample writes sample() split in n parts of one tensor (and an empty first part when
// noFirst) and returns the part paths.
func splitSample(t testing.TB, dir string, noFirst bool) []string {
	f, err := Parse(sample(t))
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter()
	if err := w.CopyFrom(f); err != nil {
		t.Fatal(err)
	}
	paths, err := w.WriteSplit(filepath.Join(dir, "s"), SplitOptions{MaxTensors: 1, NoTensorFirstSplit: noFirst})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

func readAll(t testing.TB, paths []string) [][]byte {
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestSplitRoundTrip(t *testing.T) {
	whole, err := Parse(sample(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, noFirst := range []bool{false, true} {
		dir := t.TempDir()
		paths := splitSample(t, dir, noFirst)
		want := len(whole.Tensors)
		if noFirst {
			want++
		}
		if len(paths) != want {
			t.Fatalf("noFirst %v: %d parts, want %d", noFirst, len(paths), want)
		}
		for _, p := range paths {
			m, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			sameModel(t, whole, m)
			if m.Path != paths[0] {
				t.Errorf("Path %q, want the first part %q", m.Path, paths[0])
			}
			if err := m.Close(); err != nil {
				t.Error(err)
			}
		}
		m, err := ParseSplit(readAll(t, paths)...)
		if err != nil {
			t.Fatal(err)
		}
		sameModel(t, whole, m)
		// Parse of one part alone sees that part only.
		p, err := Parse(readAll(t, paths[len(paths)-1:])[0])
		if err != nil || len(p.Tensors) != 1 {
			t.Errorf("last part alone: %v tensors, %v", len(p.Tensors), err)
		}
	}
	// An unsplit file written as one part (split.count 1) opens as itself.
	dir := t.TempDir()
	w := NewWriter()
	w.CopyFrom(whole)
	paths, err := w.WriteSplit(filepath.Join(dir, "one"), SplitOptions{MaxTensors: 100})
	if err != nil || len(paths) != 1 || !strings.HasSuffix(paths[0], "one-00001-of-00001.gguf") {
		t.Fatalf("%v %v", paths, err)
	}
	m, err := Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, whole, m)
	m.Close()
}

func TestSplitPlan(t *testing.T) {
	w := NewWriter()
	for i, n := range []int{100, 20, 40, 200, 8} { // F32 elements: 400, 80, 160, 800, 32 bytes
		w.AddTensor(fmt.Sprint(i), F32, []int64{int64(n)}, make([]byte, 4*n))
	}
	for _, c := range []struct {
		opt  SplitOptions
		want string
	}{
		{SplitOptions{MaxBytes: 500}, "[[0] [1 2] [3] [4]]"}, // padded to 32: 416, 96, 160, 800, 32
		{SplitOptions{MaxBytes: 10}, "[[0] [1] [2] [3] [4]]"},
		{SplitOptions{MaxBytes: 1 << 20}, "[[0 1 2 3 4]]"},
		{SplitOptions{MaxTensors: 2}, "[[0 1] [2 3] [4]]"},
		{SplitOptions{MaxTensors: 2, NoTensorFirstSplit: true}, "[[] [0 1] [2 3] [4]]"},
	} {
		plan, err := w.SplitPlan(c.opt)
		if err != nil || fmt.Sprint(plan) != c.want {
			t.Errorf("%+v: %v %v, want %s", c.opt, plan, err, c.want)
		}
	}
	for _, opt := range []SplitOptions{{}, {MaxBytes: 1, MaxTensors: 1}, {MaxBytes: -1}} {
		if _, err := w.SplitPlan(opt); err == nil {
			t.Errorf("%+v accepted", opt)
		}
	}
}

// rewrite returns part b with its split key values replaced (a value of -1 drops the key) and
// tensor names renamed, re-encoded by our writer.
func rewrite(t *testing.T, b []byte, set map[string]int, rename map[string]string) []byte {
	t.Helper()
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter()
	w.Alignment = f.Alignment
	for _, kv := range f.KV {
		v := kv.Value
		if n, ok := set[kv.Key]; ok {
			if n < 0 {
				continue
			}
			if kv.Key == KeySplitTensors {
				v = int32(n)
			} else {
				v = uint16(n)
			}
		}
		w.Set(kv.Key, v)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		name := ti.Name
		if r, ok := rename[name]; ok {
			name = r
		}
		w.AddTensor(name, ti.Type, ti.Dims, f.TensorData(ti))
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSplitErrors(t *testing.T) {
	dir := t.TempDir()
	paths := splitSample(t, dir, false) // 3 parts: tensors a, b, c
	parts := readAll(t, paths)
	for _, c := range []struct {
		name  string
		parts [][]byte
		want  string
	}{
		{"count mismatch", [][]byte{parts[0], rewrite(t, parts[1], map[string]int{KeySplitCount: 4}, nil), parts[2]}, "split.count = 4, but the model has 3 parts"},
		{"order", [][]byte{parts[0], parts[2], parts[1]}, "split.no = 2, but the file is part 2"},
		{"tensor count", [][]byte{rewrite(t, parts[0], map[string]int{KeySplitTensors: 4}, nil), rewrite(t, parts[1], map[string]int{KeySplitTensors: 4}, nil),
			rewrite(t, parts[2], map[string]int{KeySplitTensors: 4}, nil)}, "hold 3 tensors, but split.tensors.count = 4"},
		{"tensor count disagrees", [][]byte{parts[0], rewrite(t, parts[1], map[string]int{KeySplitTensors: 9}, nil), parts[2]}, "split.tensors.count = 9, but part 1 says 3"},
		{"duplicate", [][]byte{parts[0], parts[1], rewrite(t, parts[2], nil, map[string]string{"c": "a"})}, `tensor "a" is in part 1 and again in part 3`},
		{"not a part", [][]byte{parts[0], rewrite(t, parts[1], map[string]int{KeySplitCount: -1, KeySplitNo: -1}, nil), parts[2]}, "has no split.count"},
		{"no beyond count", [][]byte{rewrite(t, parts[0], map[string]int{KeySplitNo: 3}, nil), parts[1], parts[2]}, "split.no = 3 is not below split.count = 3"},
		{"zero count", [][]byte{rewrite(t, parts[0], map[string]int{KeySplitCount: 0}, nil), parts[1], parts[2]}, "split.count = 0"},
	} {
		_, err := ParseSplit(c.parts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}

	// Missing part, found from the name of another.
	if err := os.Rename(paths[1], paths[1]+".away"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(paths[2])
	if err == nil || !strings.Contains(err.Error(), "part 2 of 3 is missing") {
		t.Errorf("missing part: %v", err)
	}
	os.Rename(paths[1]+".away", paths[1])
	// A part whose name has lost the pattern cannot find the others.
	odd := filepath.Join(dir, "renamed.gguf")
	os.Rename(paths[1], odd)
	if _, err := Open(odd); err == nil || !strings.Contains(err.Error(), `name does not end in "-00002-of-00003.gguf"`) {
		t.Errorf("renamed part: %v", err)
	}
	os.Rename(odd, paths[1])
	// A part on disk from another split (same name pattern, other count inside).
	os.WriteFile(paths[2], rewrite(t, parts[2], map[string]int{KeySplitCount: 5}, nil), 0o644)
	if _, err := Open(paths[0]); err == nil || !strings.Contains(err.Error(), "split.count = 5") {
		t.Errorf("foreign part: %v", err)
	}
}

func FuzzParseSplit(f *testing.F) {
	parts := readAll(f, splitSample(f, f.TempDir(), false))
	f.Add(parts[0], parts[1], parts[2])
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		if h, err := ParseHeader(a); err == nil {
			_ = h.Parts()
		}
		for _, set := range [][][]byte{{a}, {a, b}, {a, b, c}} {
			g, err := ParseSplit(set...)
			if err != nil {
				continue
			}
			for i := range g.Tensors {
				ti := &g.Tensors[i]
				_ = g.TensorData(ti)
				_, _ = g.Bytes(ti, 0, ti.Size)
				_ = g.ReadAt(ti, make([]byte, min(ti.Size, 1<<16)), 0)
			}
			_ = g.Parts()
		}
	})
}

// Header gives the bytes WriteTo writes before the data, and ParseHeader reads them back
// without the data.
func TestHeader(t *testing.T) {
	f, err := Parse(sample(t))
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter()
	if err := w.CopyFrom(f); err != nil {
		t.Fatal(err)
	}
	h, offs, size, err := w.Header()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h, buf.Bytes()[:len(h)]) || int64(len(h))+size != int64(buf.Len()) {
		t.Fatalf("header %d bytes + data %d, file %d", len(h), size, buf.Len())
	}
	g, err := ParseHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	if g.DataOffset != int64(len(h)) || len(g.Tensors) != len(offs) {
		t.Fatalf("data offset %d, %d tensors", g.DataOffset, len(g.Tensors))
	}
	for i, ti := range g.Tensors {
		if ti.Offset != offs[i] || ti.Name != f.Tensors[i].Name || ti.Size != f.Tensors[i].Size {
			t.Errorf("tensor %d: %+v, offset want %d", i, ti, offs[i])
		}
	}
	if _, err := Parse(h); err == nil {
		t.Error("Parse accepted a header without its data")
	}
}
