package verbs

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gorun-hpc/gorun/comm/internal/ibv"
	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// DeviceNames returns the device this rank uses for each peer: spec names one device for
// all (empty: the first with an active port), or is @FILE, a JSON matrix as MLX's jaccl takes
// for a Thunderbolt mesh: row i, column j names the device rank i reaches rank j through
// (null on the diagonal).
func DeviceNames(spec string, rank, size int) ([]string, error) {
	names := make([]string, size)
	if !strings.HasPrefix(spec, "@") {
		for r := range names {
			names[r] = spec
		}
		return names, nil
	}
	b, err := os.ReadFile(spec[1:])
	if err != nil {
		return nil, err
	}
	m, err := ParseDeviceMatrix(b, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec[1:], err)
	}
	for r := range names {
		if r != rank {
			names[r] = *m[rank][r]
		}
	}
	return names, nil
}

// ParseDeviceMatrix checks a device matrix for a job of size ranks.
func ParseDeviceMatrix(b []byte, size int) ([][]*string, error) {
	var m [][]*string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("want a JSON matrix of device names: %w", err)
	}
	if len(m) != size {
		return nil, fmt.Errorf("%d rows for a job of %d ranks", len(m), size)
	}
	for i, row := range m {
		if len(row) != size {
			return nil, fmt.Errorf("row %d has %d entries, want %d", i, len(row), size)
		}
		for j, name := range row {
			switch {
			case i == j && name != nil:
				return nil, fmt.Errorf("row %d names a device (%q) for the rank itself; want null", i, *name)
			case i != j && (name == nil || *name == ""):
				return nil, fmt.Errorf("row %d, column %d: no device for rank %d to reach rank %d", i, j, i, j)
			}
		}
	}
	return m, nil
}

// PairGID picks the GIDs of a connection: GORUN_RDMA_GID_INDEX forces one index on every rank
// (reports differ on which link-local entry of a Thunderbolt port routes over the cable);
// otherwise ibv.PairGID chooses.
func PairGID(local, remote []ibv.GIDEntry) (int, ibv.GID, error) {
	v := os.Getenv(jobenv.RDMAGIDIndex)
	if v == "" {
		return ibv.PairGID(local, remote)
	}
	idx, err := strconv.Atoi(v)
	if err != nil || idx < 0 {
		return 0, ibv.GID{}, fmt.Errorf("%s=%q: want a GID table index", jobenv.RDMAGIDIndex, v)
	}
	have := func(es []ibv.GIDEntry) (ibv.GID, bool) {
		for _, e := range es {
			if e.Index == idx && !e.GID.IsZero() {
				return e.GID, true
			}
		}
		return ibv.GID{}, false
	}
	if _, ok := have(local); !ok {
		return 0, ibv.GID{}, fmt.Errorf("%s=%d: this port has no GID at that index", jobenv.RDMAGIDIndex, idx)
	}
	g, ok := have(remote)
	if !ok {
		return 0, ibv.GID{}, fmt.Errorf("%s=%d: the peer's port has no GID at that index", jobenv.RDMAGIDIndex, idx)
	}
	return idx, g, nil
}

// RandomPSN is a random 24-bit packet sequence number.
func RandomPSN() uint32 {
	var b [4]byte
	io.ReadFull(rand.Reader, b[:])
	return binary.LittleEndian.Uint32(b[:]) & 0xffffff
}
