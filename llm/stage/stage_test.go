package stage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
	"github.com/gorun-hpc/gorun/internal/testfiles"
	"github.com/gorun-hpc/gorun/llm/gguf"
	"github.com/gorun-hpc/gorun/llm/model"
	"github.com/gorun-hpc/gorun/llm/tp"
)

// TestShardNeedsCover checks the byte ranges against the model's shapes: one rank reads every
// tensor whole; two ranks between them read every byte once, except what both need whole (the
// token embedding, read a row per token, and the norms).
func TestShardNeedsCover(t *testing.T) {
	f, err := gguf.Open(testfiles.Path(t, "llm", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total, shared int64
	for _, ti := range f.Tensors {
		total += ti.Size
		if ti.Name == "token_embd.weight" || strings.HasSuffix(ti.Name, "norm.weight") {
			shared += ti.Size
		}
	}
	one, err := ShardNeeds(f, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if one.Bytes() != total || len(one) != len(f.Tensors) {
		t.Errorf("TP=1 reads %d bytes of %d tensors, want all %d of %d", one.Bytes(), len(one), total, len(f.Tensors))
	}
	a, _ := ShardNeeds(f, 0, 2)
	b, _ := ShardNeeds(f, 1, 2)
	if got := a.Bytes() + b.Bytes(); got != total+shared {
		t.Errorf("TP=2 ranks read %d bytes, want %d (all once, plus %d of shared tensors twice)", got, total+shared, shared)
	}
	u := Needs{}
	u.Add(a)
	u.Add(b)
	if u.Bytes() != total {
		t.Errorf("TP=2 union %d bytes, want %d", u.Bytes(), total)
	}
	if _, err := StageNeeds(f, 0, 1, 3, 9, true, true); err == nil {
		t.Error("layers past the model accepted")
	}
}

type result struct {
	tokens []int32
	logits []float32
}

// generate runs greedy decoding at TP=p with in-process ranks, rank r loading path(r) as
// llm generate does (a staging directory resolved to its copy).
func generate(t *testing.T, path func(r int) string, p int) (result, error) {
	t.Helper()
	res := make([]result, p)
	err := comm.Run(p, func(c *comm.Comm) error {
		mp, _, err := Resolve(path(c.Rank()), c.Rank(), Layout{PP: 1, TP: c.Size()})
		if err != nil {
			return err
		}
		f, err := gguf.Open(mp)
		if err != nil {
			return err
		}
		defer f.Close()
		m, err := model.Load(f, model.Options{Group: tp.New(c), Context: 64})
		if err != nil {
			return err
		}
		if err := m.Forward([]int32{1, 403, 407, 261, 378}); err != nil {
			return err
		}
		var r result
		if r.logits, err = m.Logits(); err != nil {
			return err
		}
		for len(r.tokens) < 16 {
			id, err := m.Argmax()
			if err != nil {
				return err
			}
			r.tokens = append(r.tokens, id)
			if err := m.Forward([]int32{id}); err != nil {
				return err
			}
		}
		res[c.Rank()] = r
		return nil
	})
	return res[0], err
}

// stageRun stages with p in-process ranks; hosts[r] names rank r's host, has[r] says whether it
// has the model. Each host's directory is root/HOST.
func stageRun(t *testing.T, src, root string, hosts []string, has []bool, tpDeg, stopAfter int) ([]Result, string, error) {
	t.Helper()
	p := len(hosts)
	res := make([]Result, p)
	var mu sync.Mutex
	var log bytes.Buffer
	err := comm.Run(p, func(c *comm.Comm) error {
		opt := Options{Model: filepath.Join(root, "absent.gguf"), Dir: filepath.Join(root, hosts[c.Rank()]), TP: tpDeg,
			HostOf: func(r int) string { return hosts[r] }, stopAfter: stopAfter}
		if has[c.Rank()] {
			opt.Model = src
		}
		var pl bytes.Buffer
		opt.Progress = &pl
		r, err := Stage(c, opt)
		mu.Lock()
		res[c.Rank()] = r
		log.Write(pl.Bytes())
		mu.Unlock()
		return err
	})
	return res, log.String(), err
}

func TestStageLoadsAndResumes(t *testing.T) {
	src := testfiles.Path(t, "llm", "stories260K.gguf")
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := generate(t, func(int) string { return src }, 2)
	if err != nil {
		t.Fatal(err)
	}

	// Two hosts, one rank each, the model on rank 0 only. Stop after 5 tensors first.
	root := t.TempDir()
	hosts, has := []string{"h0", "h1"}, []bool{true, false}
	need1, _ := ShardNeeds(f, 1, 2)
	var first5 int64
	{
		st, err := gguf.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, ti := range st.Tensors {
			if ps, ok := need1[ti.Name]; ok && k < 5 {
				first5 += totalLen(ps)
				k++
			}
		}
		st.Close()
	}
	res, _, err := stageRun(t, src, root, hosts, has, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	if res[1].Received != first5 || !res[1].Receiver {
		t.Errorf("interrupted: rank 1 received %d bytes, want the first 5 tensors' %d", res[1].Received, first5)
	}
	if _, _, err := Resolve(filepath.Join(root, "h1"), 1, Layout{PP: 1, TP: 2}); err == nil || !strings.Contains(err.Error(), "staging incomplete") {
		t.Errorf("incomplete staging resolved: %v", err)
	}
	// Resume: nothing of the first 5 is sent again; rank 1 ends with exactly its shard.
	res, log, err := stageRun(t, src, root, hosts, has, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res[1].Skipped != 5 || res[1].Received != need1.Bytes()-first5 {
		t.Errorf("resume: rank 1 skipped %d tensors and received %d bytes, want 5 and %d", res[1].Skipped, res[1].Received, need1.Bytes()-first5)
	}
	if !strings.Contains(log, "100%") {
		t.Errorf("no progress: %q", log)
	}
	dir := func(r int) string { return filepath.Join(root, hosts[r]) }
	got, err := generate(t, dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.tokens, want.tokens) || !slices.Equal(got.logits, want.logits) {
		t.Errorf("staged copies generate %v, the model %v", got.tokens, want.tokens)
	}
	// The sparse copy holds nothing beyond the shard: bytes outside it are zero.
	checkOnly(t, filepath.Join(dir(1), ModelFile), need1)

	// A damaged tensor is found by its checksum and fetched again, alone.
	cp, _ := gguf.Open(filepath.Join(dir(1), ModelFile))
	ti, _ := cp.Tensor("blk.2.ffn_down.weight")
	at := cp.Parts()[0].DataOffset + ti.Offset + need1[ti.Name][0].Off
	cp.Close()
	fh, _ := os.OpenFile(filepath.Join(dir(1), ModelFile), os.O_RDWR, 0)
	fh.WriteAt([]byte{0xAB, 0xCD}, at)
	fh.Close()
	res, _, err = stageRun(t, src, root, hosts, has, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res[1].Received != totalLen(need1[ti.Name]) || res[1].Skipped != res[1].Tensors-1 {
		t.Errorf("repair: received %d bytes, skipped %d of %d; want %d bytes", res[1].Received, res[1].Skipped, res[1].Tensors, totalLen(need1[ti.Name]))
	}
	if got, err := generate(t, dir, 2); err != nil || !slices.Equal(got.logits, want.logits) {
		t.Errorf("after repair: %v %v", got.tokens, err)
	}

	// Layout mismatches are errors that say what to do.
	if _, err := generate(t, func(r int) string { return dir(r % 2) }, 4); err == nil || !strings.Contains(err.Error(), "staged for TP=2") {
		t.Errorf("TP=4 from a TP=2 staging: %v", err)
	}
	if _, _, err := Resolve(dir(1), 0, Layout{PP: 1, TP: 2}); err == nil || !strings.Contains(err.Error(), "not rank 0's") {
		t.Errorf("rank 0 from rank 1's copy: %v", err)
	}
	if _, _, err := stageRun(t, src, root, hosts, has, 4, 0); err == nil {
		t.Errorf("restaging with another TP into the same directories accepted")
	}
}

// Four ranks on two hosts, TP=4, the model on one rank of each host: each host's copy holds
// its two ranks' shards, sent over the communicator from the rank on the same host.
func TestStageTwoRanksPerHost(t *testing.T) {
	src := testfiles.Path(t, "llm", "stories260K.gguf")
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := generate(t, func(int) string { return src }, 4)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	hosts := []string{"a", "a", "b", "b"}
	res, _, err := stageRun(t, src, root, hosts, []bool{false, true, false, true}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []int{0, 2} {
		n := Needs{}
		for _, r := range []int{h, h + 1} {
			s, _ := ShardNeeds(f, r, 4)
			n.Add(s)
		}
		if !res[h].Receiver || res[h].Received != n.Bytes() {
			t.Errorf("host of rank %d received %d bytes, want %d", h, res[h].Received, n.Bytes())
		}
		checkOnly(t, filepath.Join(root, hosts[h], ModelFile), n)
	}
	if res[1].Receiver || res[3].Receiver {
		t.Error("second rank of a host received")
	}
	got, err := generate(t, func(r int) string { return filepath.Join(root, hosts[r]) }, 4)
	if err != nil || !slices.Equal(got.logits, want.logits) || !slices.Equal(got.tokens, want.tokens) {
		t.Errorf("staged: %v (%v), want %v", got.tokens, err, want.tokens)
	}
}

// checkOnly checks that the data section of the staged file at path is zero outside needs.
func checkOnly(t *testing.T, path string, needs Needs) {
	t.Helper()
	cp, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	for i := range cp.Tensors {
		ti := &cp.Tensors[i]
		data := bytes.Clone(cp.TensorData(ti))
		for _, p := range needs[ti.Name] {
			clear(data[p.Off : p.Off+p.Len])
		}
		if !bytes.Equal(data, make([]byte, len(data))) {
			t.Errorf("%s: %s has bytes outside the shard", path, ti.Name)
		}
	}
}

func TestStageErrors(t *testing.T) {
	root := t.TempDir()
	err := comm.Run(2, func(c *comm.Comm) error {
		_, err := Stage(c, Options{Model: filepath.Join(root, "none.gguf"), Dir: root})
		if err == nil || !strings.Contains(err.Error(), "no rank could open the model") {
			return fmt.Errorf("rank %d: %v", c.Rank(), err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	for _, c := range []struct{ manifest, want string }{
		{"{", "stage.json"},
		{`{"version":1,"tp":2,"ranks":[1],"tensors":[{"name":"a","bytes":1}]}`, "staging incomplete, 1 of 1"},
		{`{"version":7}`, "manifest version 7"},
	} {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, ManifestFile), []byte(c.manifest), 0o644)
		if _, _, err := Resolve(d, 1, Layout{PP: 1, TP: 2}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.manifest, err, c.want)
		}
	}
	if _, _, err := Resolve(t.TempDir(), 0, Layout{PP: 1, TP: 1}); err == nil || !strings.Contains(err.Error(), "without a staging manifest") {
		t.Errorf("empty dir: %v", err)
	}
}

// Two staging ranks for a TP=4 job: staging rank r stands for ranks 2r and 2r+1 of it.
func TestStageTPMultiple(t *testing.T) {
	src := testfiles.Path(t, "llm", "stories260K.gguf")
	want, err := generate(t, func(int) string { return src }, 4)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	hosts := []string{"a", "b"}
	if _, _, err := stageRun(t, src, root, hosts, []bool{true, false}, 4, 0); err != nil {
		t.Fatal(err)
	}
	got, err := generate(t, func(r int) string { return filepath.Join(root, hosts[r/2]) }, 4)
	if err != nil || !slices.Equal(got.logits, want.logits) {
		t.Errorf("staged for TP=4 by 2 ranks: %v (%v), want %v", got.tokens, err, want.tokens)
	}
	if _, _, err := stageRun(t, src, root, hosts, []bool{true, false}, 3, 0); err == nil || !strings.Contains(err.Error(), "not a multiple") {
		t.Errorf("--tp 3 with 2 ranks: %v", err)
	}
}
