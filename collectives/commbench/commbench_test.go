package commbench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorun-hpc/gorun/comm"
)

func runTest(t *testing.T, p int, cfg Config) *Result {
	t.Helper()
	var res *Result
	err := comm.Run(p, func(c *comm.Comm) error {
		r, err := Run(c, cfg)
		if c.Rank() == 0 {
			res = r
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestEveryTest(t *testing.T) {
	for _, name := range Tests {
		p := 3
		cfg := Config{Test: name, MinSize: 1, MaxSize: 32 << 10, Iters: 5, ItersLarge: 3, Warmup: 2, WarmupLarge: 1, Window: 4}
		res := runTest(t, p, cfg)
		var want []int
		switch name {
		case "barrier":
			want = []int{0}
		case "allreduce", "reduce":
			for s := 4; s <= 32<<10; s *= 2 {
				want = append(want, s)
			}
		default:
			for s := 1; s <= 32<<10; s *= 2 {
				want = append(want, s)
			}
		}
		if len(res.Rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", name, len(res.Rows), len(want))
		}
		for i, row := range res.Rows {
			if row.Size != want[i] || row.AvgUs <= 0 || row.MinUs > row.AvgUs+1e-9 || row.MaxUs < row.AvgUs-1e-9 {
				t.Fatalf("%s row %d: %+v", name, i, row)
			}
			if name != "barrier" && row.MBps <= 0 {
				t.Fatalf("%s row %d: no bandwidth: %+v", name, i, row)
			}
			wantIters := cfg.Iters
			if row.Size > 8<<10 {
				wantIters = cfg.ItersLarge
			}
			if row.Iters != wantIters {
				t.Fatalf("%s row %d: %d iterations, want %d", name, i, row.Iters, wantIters)
			}
		}
		var tbl bytes.Buffer
		if err := res.WriteTable(&tbl); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(tbl.String()), "\n")
		if len(lines) != 3+len(want) || !strings.HasPrefix(lines[0], "# gorun commbench") || !strings.HasPrefix(lines[2], "#") {
			t.Fatalf("%s table:\n%s", name, tbl.String())
		}
	}
}

func TestZeroSizeAndErrors(t *testing.T) {
	res := runTest(t, 2, Config{Test: "latency", MinSize: 0, MaxSize: 4, Iters: 3, Warmup: 1})
	if len(res.Rows) != 4 || res.Rows[0].Size != 0 { // 0, 1, 2, 4
		t.Fatalf("rows %+v", res.Rows)
	}
	for _, cfg := range []Config{{Test: "nosuch"}, {Test: "latency", MaxSize: 8}, {Test: "allreduce", MinSize: 8, MaxSize: 4}} {
		err := comm.Run(1, func(c *comm.Comm) error { _, err := Run(c, cfg); return err })
		if err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func TestOutputs(t *testing.T) {
	res := runTest(t, 2, Config{Test: "allreduce", MinSize: 4, MaxSize: 4096, Iters: 3, Warmup: 1})
	var b bytes.Buffer
	if err := res.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 1+len(res.Rows) || recs[0][2] != "size" || recs[1][2] != "4" {
		t.Fatalf("csv %v %v", recs, err)
	}
	b.Reset()
	if err := res.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Rows) != len(res.Rows) || back.Ranks != 2 || back.Rows[3].Size != 32 {
		t.Fatalf("json %+v %v", back, err)
	}
	file := filepath.Join(t.TempDir(), "p.png")
	if err := res.Plot(file); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 400 {
		t.Fatalf("plot is %v", b)
	}
	bar := runTest(t, 2, Config{Test: "barrier", Iters: 3, Warmup: 1})
	if err := bar.Plot(file); err == nil {
		t.Fatal("plotting a size-less test should fail")
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "8": 8, "4K": 4096, "64M": 64 << 20, "1MiB": 1 << 20, "2kb": 2048, "1G": 1 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "4Q"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}
