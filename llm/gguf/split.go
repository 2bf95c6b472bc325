package gguf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Metadata keys of llama.cpp's split layout (gguf-split): every part carries its index, the
// number of parts and the model's total tensor count; the first part also carries all the
// model's other metadata.
const (
	KeySplitNo      = "split.no"            // uint16, 0-based
	KeySplitCount   = "split.count"         // uint16
	KeySplitTensors = "split.tensors.count" // int32
)

// MaxSplitParts is the most parts a split model may have (split.count is a uint16).
const MaxSplitParts = 1<<16 - 1

// IsSplitKey reports whether key is one of the split layout's keys, which describe one part and
// must not be copied into another file.
func IsSplitKey(key string) bool {
	return key == KeySplitNo || key == KeySplitCount || key == KeySplitTensors
}

// SplitPath returns the name of part i (0-based) of n: PREFIX-%05d-of-%05d.gguf, as llama.cpp
// names them.
func SplitPath(prefix string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, i+1, n)
}

// SplitPrefix returns the prefix of path if it is the name of part i of n.
func SplitPrefix(path string, i, n int) (string, bool) {
	suffix := fmt.Sprintf("-%05d-of-%05d.gguf", i+1, n)
	if len(path) <= len(suffix) || !strings.HasSuffix(path, suffix) {
		return "", false
	}
	return path[:len(path)-len(suffix)], true
}

// Part describes one file of a split model.
type Part struct {
	Path       string
	Size       int64 // file size
	DataOffset int64 // absolute offset of the part's data section
	Tensors    int   // tensors whose data the part holds
}

// Parts returns the files of a split model in order, or f's own file when f is not split.
func (f *File) Parts() []Part {
	if f.parts == nil {
		return []Part{{f.Path, f.Size, f.DataOffset, len(f.Tensors)}}
	}
	out := make([]Part, len(f.parts))
	for i, p := range f.parts {
		out[i] = Part{p.Path, p.Size, p.DataOffset, len(p.Tensors)}
	}
	return out
}

// splitInfo reads a file's split keys: ok is false when the file is not a part of a split model
// (no split.count, or split.count 1 for part 0, as gguf-split writes a single part).
func (f *File) splitInfo() (no, count, tensors int, ok bool, err error) {
	if _, has := f.Get(KeySplitCount); !has {
		return 0, 0, 0, false, nil
	}
	c, err := f.Uint(KeySplitCount)
	if err != nil {
		return 0, 0, 0, false, err
	}
	if c == 0 || c > MaxSplitParts {
		return 0, 0, 0, false, fmt.Errorf("%s: %s = %d, want 1 to %d", f.name(), KeySplitCount, c, MaxSplitParts)
	}
	n, err := f.Uint(KeySplitNo)
	if err != nil {
		return 0, 0, 0, false, err
	}
	if n >= c {
		return 0, 0, 0, false, fmt.Errorf("%s: %s = %d is not below %s = %d", f.name(), KeySplitNo, n, KeySplitCount, c)
	}
	tensors = -1
	if _, has := f.Get(KeySplitTensors); has {
		t, err := f.Uint(KeySplitTensors)
		if err != nil {
			return 0, 0, 0, false, err
		}
		if t > 1<<31-1 {
			return 0, 0, 0, false, fmt.Errorf("%s: %s = %d is out of range", f.name(), KeySplitTensors, t)
		}
		tensors = int(t)
	}
	return int(n), int(c), tensors, true, nil
}

// OpenSplit opens a split model from any of its parts (or an unsplit file); Open does the same.
func OpenSplit(path string) (*File, error) { return Open(path) }

// openRest completes f, freshly opened, into the whole model when it is one part of a split
// model: the other parts are found by the name pattern and must agree on the layout.
func openRest(f *File) (*File, error) {
	no, count, _, ok, err := f.splitInfo()
	if err != nil || !ok || count == 1 {
		if err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	prefix, named := SplitPrefix(f.Path, no, count)
	if !named {
		f.Close()
		return nil, fmt.Errorf("%s: part %d of a model split in %d, but the name does not end in %q, so the other parts cannot be found",
			f.Path, no+1, count, fmt.Sprintf("-%05d-of-%05d.gguf", no+1, count))
	}
	parts := make([]*File, count)
	parts[no] = f
	closeAll := func() {
		for _, p := range parts {
			if p != nil {
				p.Close()
			}
		}
	}
	for i := range parts {
		if parts[i] != nil {
			continue
		}
		p, err := openOne(SplitPath(prefix, i, count))
		if err != nil {
			closeAll()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("split model %s: part %d of %d is missing: %w", filepath.Base(prefix), i+1, count, err)
			}
			return nil, fmt.Errorf("split model %s: part %d of %d: %w", filepath.Base(prefix), i+1, count, err)
		}
		parts[i] = p
	}
	m, err := assemble(parts)
	if err != nil {
		closeAll()
		return nil, err
	}
	return m, nil
}

// ParseSplit parses the parts of a split model held in memory, in order, as one File. One part
// that is not split is returned as Parse returns it.
func ParseSplit(parts ...[]byte) (*File, error) {
	if len(parts) == 0 {
		return nil, errors.New("gguf: no parts")
	}
	files := make([]*File, len(parts))
	for i, b := range parts {
		f, err := parse(b, fmt.Sprintf("part %d", i+1))
		if err != nil {
			return nil, err
		}
		files[i] = f
	}
	if len(files) == 1 {
		if _, count, _, ok, err := files[0].splitInfo(); err != nil {
			return nil, err
		} else if !ok || count == 1 {
			return files[0], nil
		}
	}
	return assemble(files)
}

// assemble checks that parts are the parts of one split model, in order, and returns the
// model: the first part's metadata and every part's tensors (in part order).
func assemble(parts []*File) (*File, error) {
	n := len(parts)
	want := -1
	total := 0
	for i, p := range parts {
		no, count, tensors, ok, err := p.splitInfo()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%s: has no %s metadata, but is expected as part %d of %d", p.name(), KeySplitCount, i+1, n)
		}
		if count != n {
			return nil, fmt.Errorf("%s: %s = %d, but the model has %d parts (the first says %d)", p.name(), KeySplitCount, count, n, n)
		}
		if no != i {
			return nil, fmt.Errorf("%s: %s = %d, but the file is part %d (index %d)", p.name(), KeySplitNo, no, i+1, i)
		}
		if i == 0 {
			want = tensors
		} else if tensors != want {
			return nil, fmt.Errorf("%s: %s = %d, but part 1 says %d", p.name(), KeySplitTensors, tensors, want)
		}
		total += len(p.Tensors)
	}
	if want >= 0 && total != want {
		return nil, fmt.Errorf("%s: the %d parts hold %d tensors, but %s = %d", parts[0].name(), n, total, KeySplitTensors, want)
	}
	first := parts[0]
	m := &File{Path: first.Path, Version: first.Version, KV: first.KV, kvIdx: first.kvIdx,
		Alignment: first.Alignment, DataOffset: first.DataOffset,
		Tensors: make([]TensorInfo, 0, total), tIdx: make(map[string]int, total), parts: parts}
	for i, p := range parts {
		m.Size += p.Size
		for _, t := range p.Tensors {
			if j, dup := m.tIdx[t.Name]; dup {
				return nil, fmt.Errorf("split model %s: tensor %q is in part %d and again in part %d (%s)", first.name(), t.Name, m.Tensors[j].Part+1, i+1, p.name())
			}
			t.Part = i
			m.tIdx[t.Name] = len(m.Tensors)
			m.Tensors = append(m.Tensors, t)
		}
	}
	return m, nil
}

// SplitOptions says where WriteSplit starts a new part, as llama.cpp's gguf-split does. Exactly
// one of MaxBytes and MaxTensors is set.
type SplitOptions struct {
	// MaxBytes starts a new part before a tensor that would take the part's tensor data (each
	// tensor padded to the alignment, metadata not counted) past MaxBytes; a part always holds
	// at least one tensor.
	MaxBytes int64
	// MaxTensors puts at most this many tensors in each part.
	MaxTensors int
	// NoTensorFirstSplit leaves the first part with metadata only.
	NoTensorFirstSplit bool
}

// SplitPlan returns the tensor indices (in the order added) that each part of a split write
// holds.
func (w *Writer) SplitPlan(opt SplitOptions) ([][]int, error) {
	if (opt.MaxBytes > 0) == (opt.MaxTensors > 0) {
		return nil, fmt.Errorf("gguf: split by size or by tensor count: set exactly one (size %d, tensors %d)", opt.MaxBytes, opt.MaxTensors)
	}
	if opt.MaxBytes < 0 || opt.MaxTensors < 0 {
		return nil, fmt.Errorf("gguf: negative split limit (size %d, tensors %d)", opt.MaxBytes, opt.MaxTensors)
	}
	align := int64(w.Alignment)
	if align <= 0 {
		align = DefaultAlignment
	}
	var plan [][]int
	if opt.NoTensorFirstSplit {
		plan = append(plan, nil)
	}
	cur := []int{}
	var size int64
	for i, t := range w.tensors {
		n := (t.info.Size + align - 1) / align * align
		var cut bool
		if opt.MaxBytes > 0 {
			cut = len(cur) > 0 && size+n > opt.MaxBytes
		} else {
			cut = i > 0 && i%opt.MaxTensors == 0
		}
		if cut {
			plan = append(plan, cur)
			cur, size = []int{}, 0
		}
		cur = append(cur, i)
		size += n
	}
	plan = append(plan, cur)
	if len(plan) > MaxSplitParts {
		return nil, fmt.Errorf("gguf: %d parts, more than the %d a split model may have", len(plan), MaxSplitParts)
	}
	return plan, nil
}

// WriteSplit writes w as a split model PREFIX-00001-of-0000N.gguf ... in llama.cpp's layout: the
// first part holds all the metadata, every part its split keys and its tensors. The parts are
// written under temporary names and renamed at the end, so a failure leaves no part behind. It
// returns the paths written.
func (w *Writer) WriteSplit(prefix string, opt SplitOptions) ([]string, error) {
	plan, err := w.SplitPlan(opt)
	if err != nil {
		return nil, err
	}
	n := len(plan)
	var tmps []string
	fail := func(err error) ([]string, error) {
		for _, t := range tmps {
			os.Remove(t)
		}
		return nil, err
	}
	for i, idx := range plan {
		pw := &Writer{Alignment: w.Alignment, keys: map[string]bool{}, names: map[string]bool{}}
		if i == 0 {
			for _, kv := range w.kv {
				if !IsSplitKey(kv.Key) {
					pw.kv = append(pw.kv, kv)
					pw.keys[kv.Key] = true
				}
			}
		}
		// In gguf-split's order, which sets split.count last (once the count is known). A later
		// part gets general.alignment from WriteTo when the alignment is not the default.
		pw.kv = append(pw.kv, KV{KeySplitNo, TypeUint16, uint16(i)}, KV{KeySplitTensors, TypeInt32, int32(len(w.tensors))},
			KV{KeySplitCount, TypeUint16, uint16(n)})
		for _, kv := range pw.kv[len(pw.kv)-3:] {
			pw.keys[kv.Key] = true
		}
		for _, j := range idx {
			pw.tensors = append(pw.tensors, w.tensors[j])
			pw.names[w.tensors[j].info.Name] = true
		}
		path := SplitPath(prefix, i, n)
		o, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
		if err != nil {
			return fail(err)
		}
		tmps = append(tmps, o.Name())
		_, err = pw.WriteTo(o)
		if err == nil {
			err = o.Chmod(0o644)
		}
		if cerr := o.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fail(fmt.Errorf("%s: %w", path, err))
		}
	}
	paths := make([]string, n)
	for i, t := range tmps {
		paths[i] = SplitPath(prefix, i, n)
		if err := os.Rename(t, paths[i]); err != nil {
			return fail(err)
		}
	}
	return paths, nil
}

// CopyFrom sets up w to write f's metadata (without split keys) and tensors, in f's order, with
// f's alignment: the source of a split or merge.
func (w *Writer) CopyFrom(f *File) error {
	w.Alignment = f.Alignment
	for _, kv := range f.KV {
		if IsSplitKey(kv.Key) {
			continue
		}
		if err := w.Set(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if err := w.AddTensor(t.Name, t.Type, t.Dims, f.TensorData(t)); err != nil {
			return err
		}
	}
	return nil
}
