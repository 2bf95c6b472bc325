package stage

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
)

// File names inside a staging directory.
const (
	ModelFile    = "model.gguf" // sparse: the header, and the data of the host's ranks only
	ManifestFile = "stage.json"
)

// Message tags of the staging protocol.
const (
	tagRequest = 5701 // receiver -> source: the indices of the tensors it still needs
	tagData    = 5702 // source -> receiver: packed pieces of one tensor, in chunks
	tagSum     = 5703 // source -> receiver: the tensor's SHA-256
)

// chunk bounds one data message, so a large tensor is never held whole.
const chunk = 16 << 20

// manifestVersion is the version written; 1 (tensor parallelism only, no pp) is still read.
const manifestVersion = 2

// Manifest describes a staging directory: which model and layout its sparse file serves, and
// which tensors arrived whole.
type Manifest struct {
	Version      int    `json:"version"`
	Model        string `json:"model"`         // the source's file name
	HeaderSHA256 string `json:"header_sha256"` // of model.gguf's header: the model's identity
	// The layout of the job it serves: pipeline stages, ranks per stage (tensor-parallel
	// degree), layers per stage (absent with one stage).
	PP    int   `json:"pp"`
	TP    int   `json:"tp"`
	Split []int `json:"layer_split,omitempty"`
	// The ranks of that job whose parts it holds (the ranks the job places on this host).
	Ranks        []int    `json:"ranks"`
	RanksPerHost int      `json:"ranks_per_host"`
	Bytes        int64    `json:"bytes"` // tensor bytes the host needs
	Tensors      []Tensor `json:"tensors"`
}

// Layout is the layout m serves.
func (m *Manifest) Layout() Layout { return Layout{PP: m.PP, TP: m.TP, Split: m.Split} }

// Tensor is one tensor's entry: the bytes of it the host holds and their checksum.
type Tensor struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256,omitempty"` // of the pieces, concatenated; set once received
}

// Options configures Stage.
type Options struct {
	Model string // the model on the ranks that have it (any part of a split model); others may give a path that does not exist
	Dir   string // the staging directory on every host
	// PP (0: 1) and TP are the layout of the job that will load the staged copies: PP
	// pipeline stages of TP ranks each (TP 0: the staging job's size / PP). PP x TP is a
	// multiple of the staging job's size: staging rank r stands for ranks r*k ... r*k+k-1 of
	// it, k = PP*TP/size, so a host's copy holds the parts of its ranks'.
	PP, TP int
	// Split is the layers of each pipeline stage, in order; required with PP > 1, and the
	// run must use the same (it reads it from the manifest).
	Split []int
	// HostOf names the host of each rank (nil: the communicator's host identity). Ranks on
	// one host share one copy, written by the lowest of them.
	HostOf   func(r int) string
	Progress io.Writer // progress lines from each receiver (nil: none)
	// stopAfter, when > 0, makes receivers ask for at most that many tensors: an
	// interruption, for tests of resuming.
	stopAfter int
}

// Result is what one rank did.
type Result struct {
	Receiver bool
	Tensors  int           // tensors the host needs
	Skipped  int           // of those, already staged and verified
	Received int64         // bytes received (or copied locally) now
	Elapsed  time.Duration // from the end of the set-up to the last byte written here
}

// Stage copies to every host the bytes its ranks will read of the model, from the ranks that
// have it, over c. Every rank of c calls it.
func Stage(c *comm.Comm, opt Options) (Result, error) {
	var res Result
	size, rank := c.Size(), c.Rank()
	lay := Layout{PP: max(opt.PP, 1), TP: opt.TP, Split: opt.Split}
	if lay.TP == 0 {
		if size%lay.PP != 0 {
			return res, fmt.Errorf("stage: --pp %d does not divide the %d ranks: give --tp", lay.PP, size)
		}
		lay.TP = size / lay.PP
	}
	if lay.TP < 1 || lay.Ranks() < size || lay.Ranks()%size != 0 {
		return res, fmt.Errorf("stage: --pp %d x --tp %d = %d ranks is not a multiple of the %d staging ranks", lay.PP, lay.TP, lay.Ranks(), size)
	}
	if lay.PP == 1 && len(lay.Split) > 1 {
		return res, fmt.Errorf("stage: layer split %s for one pipeline stage", SplitString(lay.Split))
	}
	if lay.PP == 1 {
		lay.Split = nil
	} else if lay.Split == nil {
		return res, fmt.Errorf("stage: --pp %d without a layer split", lay.PP)
	}
	k := lay.Ranks() / size
	hostOf := opt.HostOf
	if hostOf == nil {
		hostOf = c.HostID
	}

	// Who has the model.
	var src *gguf.File
	var header []byte
	if opt.Model != "" {
		if f, err := gguf.Open(opt.Model); err == nil {
			if header, err = headerOf(f); err == nil {
				src = f
				defer src.Close()
			} else {
				f.Close()
			}
		}
	}
	have := make([]int64, size)
	if err := collectives.Allgather(c, []int64{b2i(src != nil)}, have); err != nil {
		return res, err
	}
	var sources []int
	for r, h := range have {
		if h == 1 {
			sources = append(sources, r)
		}
	}
	if len(sources) == 0 {
		return res, fmt.Errorf("stage: no rank could open the model %q", opt.Model)
	}
	root := sources[0]

	// The staged file's header, from the first source to everyone; every other source checks
	// that its copy is the same model.
	n := []int64{int64(len(header))}
	if err := collectives.Bcast(c, n, root); err != nil {
		return res, err
	}
	if n[0] <= 0 || n[0] > 256<<20 {
		return res, fmt.Errorf("stage: header of %d bytes from rank %d", n[0], root)
	}
	rootHeader := make([]byte, n[0])
	if rank == root {
		copy(rootHeader, header)
	}
	if err := collectives.Bcast(c, rootHeader, root); err != nil {
		return res, err
	}

	// Receivers (the lowest rank of each host) and the source each is served by: itself, a
	// rank of its own host, or the sources in turn.
	var receivers []int
	seen := map[string]bool{}
	hostRanks := map[string][]int{}
	for r := 0; r < size; r++ {
		h := hostOf(r)
		if !seen[h] {
			seen[h] = true
			receivers = append(receivers, r)
		}
		for j := 0; j < k; j++ {
			hostRanks[h] = append(hostRanks[h], r*k+j)
		}
	}
	sourceOf := map[int]int{}
	for i, r := range receivers {
		s := sources[i%len(sources)]
		for _, q := range sources {
			if hostOf(q) == hostOf(r) {
				s = q
				break
			}
		}
		if have[r] == 1 {
			s = r
		}
		sourceOf[r] = s
	}

	// Set-up errors anywhere stop every rank here, before any transfer.
	var setupErr error
	if src != nil && !slices.Equal(header, rootHeader) {
		setupErr = fmt.Errorf("stage: rank %d's copy of the model (%s) differs from rank %d's", rank, opt.Model, root)
	}
	if setupErr == nil {
		setupErr = checkLayout(rootHeader, lay)
	}
	var rc *receiverState
	if setupErr == nil && slices.Contains(receivers, rank) {
		res.Receiver = true
		rc, setupErr = openReceiver(opt, rootHeader, lay, hostRanks[hostOf(rank)])
		if rc != nil {
			defer rc.close()
		}
	}
	failed := make([]int64, size)
	if err := collectives.Allgather(c, []int64{b2i(setupErr != nil)}, failed); err != nil {
		return res, err
	}
	if setupErr != nil {
		return res, setupErr
	}
	if i := slices.Index(failed, 1); i >= 0 {
		return res, fmt.Errorf("stage: rank %d failed to set up (see its error)", i)
	}

	// Transfers: each source serves its receivers in rank order; a receiver that is its own
	// source copies locally meanwhile (pread on the source is safe from both).
	var wg sync.WaitGroup
	var localErr error
	start := time.Now()
	if rc != nil {
		res.Tensors, res.Skipped = len(rc.todo)+rc.done, rc.done
		if sourceOf[rank] == rank {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res.Received, localErr = rc.copyLocal(src, opt)
				res.Elapsed = time.Since(start)
			}()
		} else {
			var err error
			if res.Received, err = rc.receive(c, sourceOf[rank], opt); err != nil {
				return res, err
			}
			res.Elapsed = time.Since(start)
		}
	}
	if src != nil {
		for _, r := range receivers {
			if sourceOf[r] != rank || r == rank {
				continue
			}
			needs, err := hostNeeds(src, lay, hostRanks[hostOf(r)])
			if err == nil {
				err = serve(c, src, needs, r)
			}
			if err != nil {
				wg.Wait()
				return res, err
			}
		}
	}
	wg.Wait()
	if localErr != nil {
		return res, localErr
	}
	return res, collectives.Barrier(c)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// headerOf is the header of the staged copy of f: f's metadata (without split keys) and
// tensor infos, laid out as one file.
func headerOf(f *gguf.File) ([]byte, error) {
	w := gguf.NewWriter()
	w.Alignment = f.Alignment
	for _, kv := range f.KV {
		if gguf.IsSplitKey(kv.Key) {
			continue
		}
		if err := w.Set(kv.Key, kv.Value); err != nil {
			return nil, err
		}
	}
	for _, t := range f.Tensors {
		if err := w.AddTensorFunc(t.Name, t.Type, t.Dims, nil); err != nil {
			return nil, err
		}
	}
	h, _, _, err := w.Header()
	return h, err
}

// checkLayout checks on every rank, before any transfer, that the layout fits the model
// whose header is given.
func checkLayout(header []byte, l Layout) error {
	f, err := gguf.ParseHeader(header)
	if err != nil {
		return err
	}
	cfg, err := model.ReadConfig(f)
	if err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	if err := l.Check(cfg.Layers); err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	if l.PP > cfg.Layers {
		return fmt.Errorf("stage: --pp %d: more pipeline stages than the model's %d layers", l.PP, cfg.Layers)
	}
	if err := cfg.CheckDegree(l.TP); err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	return nil
}

// hostNeeds is the union of the parts of f that ranks of a job of layout l read.
func hostNeeds(f *gguf.File, l Layout, ranks []int) (Needs, error) {
	all := Needs{}
	for _, r := range ranks {
		n, err := RankNeeds(f, l, r)
		if err != nil {
			return nil, err
		}
		all.Add(n)
	}
	return all, nil
}

// pack reads the pieces of t from f into buf, chunk by chunk, calling emit for each.
func pack(f *gguf.File, t *gguf.TensorInfo, ps []Piece, emit func([]byte) error) error {
	buf := make([]byte, 0, min(chunk, totalLen(ps)))
	for _, p := range ps {
		for off := p.Off; off < p.Off+p.Len; {
			n := min(p.Off+p.Len-off, int64(cap(buf)-len(buf)))
			b := buf[len(buf) : len(buf)+int(n)]
			if err := f.ReadAt(t, b, off); err != nil {
				return err
			}
			buf = buf[:len(buf)+int(n)]
			off += n
			if len(buf) == cap(buf) {
				if err := emit(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	if len(buf) > 0 {
		return emit(buf)
	}
	return nil
}

func totalLen(ps []Piece) int64 {
	var n int64
	for _, p := range ps {
		n += p.Len
	}
	return n
}

// serve answers one receiver: its list of tensor indices, then for each the packed pieces and
// their SHA-256.
func serve(c *comm.Comm, f *gguf.File, needs Needs, dst int) error {
	var n [1]int64
	if _, err := comm.Recv(c, n[:], dst, tagRequest); err != nil {
		return err
	}
	if n[0] < 0 || n[0] > int64(len(f.Tensors)) {
		return fmt.Errorf("stage: rank %d asks for %d tensors; the model has %d", dst, n[0], len(f.Tensors))
	}
	idx := make([]int64, n[0])
	if n[0] > 0 {
		if _, err := comm.Recv(c, idx, dst, tagRequest); err != nil {
			return err
		}
	}
	for _, i := range idx {
		if i < 0 || i >= int64(len(f.Tensors)) {
			return fmt.Errorf("stage: rank %d asks for tensor %d of %d", dst, i, len(f.Tensors))
		}
		t := &f.Tensors[i]
		h := sha256.New()
		err := pack(f, t, needs[t.Name], func(b []byte) error {
			h.Write(b)
			return comm.Send(c, b, dst, tagData)
		})
		if err != nil {
			return err
		}
		if err := comm.Send(c, h.Sum(nil), dst, tagSum); err != nil {
			return err
		}
	}
	return nil
}

// receiverState is a host's staging directory being filled.
type receiverState struct {
	dir    string
	file   *os.File
	staged *gguf.File // the sparse copy, parsed (its header gives offsets)
	man    Manifest
	needs  Needs
	todo   []int // indices into staged.Tensors still to receive
	done   int
}

func openReceiver(opt Options, header []byte, lay Layout, ranks []int) (*receiverState, error) {
	if opt.Dir == "" {
		return nil, errors.New("stage: no directory: give --to DIR")
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(header)
	hsum := fmt.Sprintf("%x", sum)
	rs := &receiverState{dir: opt.Dir}
	manPath := filepath.Join(opt.Dir, ManifestFile)
	var old *Manifest
	if m, err := readManifest(manPath); err == nil {
		if m.HeaderSHA256 != hsum {
			return nil, fmt.Errorf("stage: %s holds a staging of another model (%s); remove it or stage elsewhere", opt.Dir, m.Model)
		}
		if !sameLayout(m.Layout(), lay) || !slices.Equal(m.Ranks, ranks) {
			return nil, fmt.Errorf("stage: %s holds ranks %v of %s; this job stages ranks %v of %s: remove it or stage elsewhere", opt.Dir, m.Ranks, m.Layout(), ranks, lay)
		}
		old = m
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	path := filepath.Join(opt.Dir, ModelFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	rs.file = f
	// The header again (the same bytes on a resume), then the data section as a hole.
	if _, err := f.WriteAt(header, 0); err != nil {
		rs.close()
		return nil, err
	}
	// The data size: the end of the last tensor, padded, as Writer.Header laid it out.
	end, err := dataEnd(header)
	if err != nil {
		rs.close()
		return nil, err
	}
	if err := f.Truncate(int64(len(header)) + end); err != nil {
		rs.close()
		return nil, err
	}
	if rs.staged, err = gguf.Open(path); err != nil {
		rs.close()
		return nil, err
	}
	if rs.needs, err = hostNeeds(rs.staged, lay, ranks); err != nil {
		rs.close()
		return nil, err
	}
	name := filepath.Base(opt.Model)
	if old != nil {
		name = old.Model
	}
	rs.man = Manifest{Version: manifestVersion, Model: name, HeaderSHA256: hsum, PP: lay.PP, TP: lay.TP, Split: lay.Split,
		Ranks: ranks, RanksPerHost: len(ranks), Bytes: rs.needs.Bytes()}
	prev := map[string]string{}
	if old != nil {
		for _, t := range old.Tensors {
			prev[t.Name] = t.SHA256
		}
	}
	for i := range rs.staged.Tensors {
		t := &rs.staged.Tensors[i]
		ps, ok := rs.needs[t.Name]
		if !ok {
			continue
		}
		e := Tensor{Name: t.Name, Bytes: totalLen(ps)}
		// A tensor staged before counts when its bytes on disk still match its checksum.
		if s := prev[t.Name]; s != "" {
			h := sha256.New()
			if err := pack(rs.staged, t, ps, func(b []byte) error { h.Write(b); return nil }); err == nil && fmt.Sprintf("%x", h.Sum(nil)) == s {
				e.SHA256 = s
				rs.done++
			}
		}
		if e.SHA256 == "" {
			rs.todo = append(rs.todo, i)
		}
		rs.man.Tensors = append(rs.man.Tensors, e)
	}
	if err := rs.save(); err != nil {
		rs.close()
		return nil, err
	}
	return rs, nil
}

// dataEnd parses a header (without data) far enough to find where the data section ends.
func dataEnd(header []byte) (int64, error) {
	f, err := gguf.ParseHeader(header)
	if err != nil {
		return 0, err
	}
	var end int64
	a := int64(f.Alignment)
	for _, t := range f.Tensors {
		end = max(end, t.Offset+(t.Size+a-1)/a*a)
	}
	return end, nil
}

func (rs *receiverState) close() {
	if rs.staged != nil {
		rs.staged.Close()
	}
	if rs.file != nil {
		rs.file.Close()
	}
}

// save writes the manifest atomically.
func (rs *receiverState) save() error {
	b, err := json.MarshalIndent(rs.man, "", " ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(rs.dir, ManifestFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(rs.dir, ManifestFile))
}

// put writes packed bytes of tensor t (starting at byte pos of its packing) to their pieces.
func (rs *receiverState) put(t *gguf.TensorInfo, ps []Piece, pos int64, b []byte) error {
	base := rs.staged.Parts()[0].DataOffset + t.Offset
	for _, p := range ps {
		if len(b) == 0 {
			return nil
		}
		if pos >= p.Len {
			pos -= p.Len
			continue
		}
		n := min(p.Len-pos, int64(len(b)))
		if _, err := rs.file.WriteAt(b[:n], base+p.Off+pos); err != nil {
			return err
		}
		b, pos = b[n:], 0
	}
	return nil
}

// finish records tensor i as received with checksum sum.
func (rs *receiverState) finish(name string, sum []byte) error {
	for j := range rs.man.Tensors {
		if rs.man.Tensors[j].Name == name {
			rs.man.Tensors[j].SHA256 = fmt.Sprintf("%x", sum)
		}
	}
	return rs.save()
}

type progress struct {
	w           io.Writer
	dir         string
	total, done int64
	start       time.Time
	last        int64
}

func (p *progress) add(n int64) {
	p.done += n
	if p.w == nil {
		return
	}
	step := max(p.total/10, 1)
	if p.done/step != p.last/step || p.done == p.total {
		fmt.Fprintf(p.w, "stage %s: %3d%% %.1f of %.1f MiB, %.1f MiB/s\n", p.dir, 100*p.done/max(p.total, 1),
			float64(p.done)/(1<<20), float64(p.total)/(1<<20), float64(p.done)/(1<<20)/max(time.Since(p.start).Seconds(), 1e-9))
	}
	p.last = p.done
}

func (rs *receiverState) todoList(opt Options) []int {
	todo := rs.todo
	if opt.stopAfter > 0 && len(todo) > opt.stopAfter {
		todo = todo[:opt.stopAfter]
	}
	return todo
}

func (rs *receiverState) newProgress(opt Options, todo []int) *progress {
	p := &progress{w: opt.Progress, dir: opt.Dir, start: time.Now()}
	for _, i := range todo {
		p.total += totalLen(rs.needs[rs.staged.Tensors[i].Name])
	}
	return p
}

// receive asks src for the tensors still to do and writes them.
func (rs *receiverState) receive(c *comm.Comm, src int, opt Options) (int64, error) {
	todo := rs.todoList(opt)
	idx := make([]int64, len(todo))
	for i, t := range todo {
		idx[i] = int64(t)
	}
	if err := comm.Send(c, []int64{int64(len(idx))}, src, tagRequest); err != nil {
		return 0, err
	}
	if len(idx) > 0 {
		if err := comm.Send(c, idx, src, tagRequest); err != nil {
			return 0, err
		}
	}
	pr := rs.newProgress(opt, todo)
	buf := make([]byte, chunk)
	var got int64
	for _, i := range todo {
		t := &rs.staged.Tensors[i]
		ps := rs.needs[t.Name]
		total := totalLen(ps)
		h := sha256.New()
		for pos := int64(0); pos < total; {
			n := min(total-pos, chunk)
			st, err := comm.Recv(c, buf[:n], src, tagData)
			if err != nil {
				return got, err
			}
			if int64(st.Count) != n {
				return got, fmt.Errorf("stage: tensor %s: %d bytes from rank %d, want %d", t.Name, st.Count, src, n)
			}
			h.Write(buf[:n])
			if err := rs.put(t, ps, pos, buf[:n]); err != nil {
				return got, err
			}
			pos += n
			got += n
			pr.add(n)
		}
		var sum [32]byte
		if _, err := comm.Recv(c, sum[:], src, tagSum); err != nil {
			return got, err
		}
		if mine := h.Sum(nil); !slices.Equal(mine, sum[:]) {
			return got, fmt.Errorf("stage: tensor %s: checksum mismatch (sent %x, received %x)", t.Name, sum, mine)
		}
		if err := rs.finish(t.Name, sum[:]); err != nil {
			return got, err
		}
	}
	return got, nil
}

// copyLocal fills the staging directory from the model on this rank.
func (rs *receiverState) copyLocal(src *gguf.File, opt Options) (int64, error) {
	todo := rs.todoList(opt)
	pr := rs.newProgress(opt, todo)
	var got int64
	for _, i := range todo {
		t := &rs.staged.Tensors[i]
		st, ok := src.Tensor(t.Name)
		if !ok {
			return got, fmt.Errorf("stage: tensor %s missing from %s", t.Name, src.Path)
		}
		ps := rs.needs[t.Name]
		h := sha256.New()
		var pos int64
		err := pack(src, st, ps, func(b []byte) error {
			h.Write(b)
			if err := rs.put(t, ps, pos, b); err != nil {
				return err
			}
			pos += int64(len(b))
			got += int64(len(b))
			pr.add(int64(len(b)))
			return nil
		})
		if err != nil {
			return got, err
		}
		if err := rs.finish(t.Name, h.Sum(nil)); err != nil {
			return got, err
		}
	}
	return got, nil
}

// Resolve returns the model file to open for rank of a job of layout want: path itself (and a
// nil manifest), or, when path is a staging directory, its sparse copy after checking that
// the copy serves this layout (pipeline stages, ranks per stage, the layer split, this rank
// among the ranks staged on this host) and arrived whole. A want.Split of nil accepts the
// manifest's split: the run then uses the manifest's (Manifest.Split).
func Resolve(path string, rank int, want Layout) (string, *Manifest, error) {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return path, nil, nil
	}
	m, err := readManifest(filepath.Join(path, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil, fmt.Errorf("%s is a directory without a staging manifest (%s): %w", path, ManifestFile, err)
	}
	if err != nil {
		return "", nil, err
	}
	want.PP = max(want.PP, 1)
	if want.PP == 1 {
		want.Split = nil
	}
	if m.PP != want.PP || m.TP != want.TP {
		run, again := fmt.Sprintf("-n %d --pp %d", m.Layout().Ranks(), m.PP), fmt.Sprintf("--pp %d --tp %d", want.PP, want.TP)
		if m.PP == 1 && want.PP == 1 {
			run, again = fmt.Sprintf("-n %d", m.TP), fmt.Sprintf("--tp %d", want.TP)
		}
		return "", nil, fmt.Errorf("%s was staged for %s (%d ranks); this job is %s: run with %s or stage again with %s",
			path, m.Layout(), m.Layout().Ranks(), fmt.Sprintf("PP=%d x TP=%d", want.PP, want.TP), run, again)
	}
	if want.Split != nil && !slices.Equal(want.Split, m.Split) {
		return "", nil, fmt.Errorf("%s was staged with layer split %s; this job asks for --layer-split %s: drop --layer-split (the run takes the staged split) or stage again with it",
			path, SplitString(m.Split), SplitString(want.Split))
	}
	if !slices.Contains(m.Ranks, rank) {
		return "", nil, fmt.Errorf("%s holds the parts of ranks %v of %s (%d ranks per host), not rank %d's: this host's ranks differ from the staging job's (place %d ranks per host as it did, or stage again)",
			path, m.Ranks, m.Layout(), m.RanksPerHost, rank, m.RanksPerHost)
	}
	missing := 0
	for _, t := range m.Tensors {
		if t.SHA256 == "" {
			missing++
		}
	}
	if missing > 0 {
		return "", nil, fmt.Errorf("%s: staging incomplete, %d of %d tensors missing: run llm stage again to finish it", path, missing, len(m.Tensors))
	}
	return filepath.Join(path, ModelFile), m, nil
}

// sameLayout reports whether a and b are the same layout (a nil split is an empty one).
func sameLayout(a, b Layout) bool {
	return a.PP == b.PP && a.TP == b.TP && slices.Equal(a.Split, b.Split)
}

// maxManifest bounds the manifest read from disk: a few hundred bytes per tensor.
const maxManifest = 64 << 20

func readManifest(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifest+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxManifest {
		return nil, fmt.Errorf("%s: larger than %d MiB, not a staging manifest", path, maxManifest>>20)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	switch m.Version {
	case 1: // tensor parallelism only: tp was the job's size
		m.PP, m.RanksPerHost = 1, len(m.Ranks)
	case manifestVersion:
	default:
		return nil, fmt.Errorf("%s: manifest version %d (this llm reads 1 and %d)", path, m.Version, manifestVersion)
	}
	if m.PP < 1 || m.TP < 1 || m.PP > 1<<20 || m.TP > 1<<20 {
		return nil, fmt.Errorf("%s: layout PP=%d x TP=%d in the manifest", path, m.PP, m.TP)
	}
	if m.PP == 1 && len(m.Split) <= 1 {
		m.Split = nil
	} else if len(m.Split) != m.PP {
		return nil, fmt.Errorf("%s: layer split %v for %d pipeline stages in the manifest", path, m.Split, m.PP)
	}
	return &m, nil
}
