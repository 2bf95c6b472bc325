package doctor

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/sys/cpu"

	"github.com/gorun-hpc/gorun/comm/jobenv"
	"github.com/gorun-hpc/gorun/comm/rdmadev"
	"github.com/gorun-hpc/gorun/linalg"
)

// Facts is what one rank reports about its host and its own build.
type Facts struct {
	Rank int    `json:"rank"`
	Host string `json:"host"`

	Build Build `json:"build"`

	OS       string   `json:"os"`
	Kernel   string   `json:"kernel"`
	Arch     string   `json:"arch"`
	CPUModel string   `json:"cpu_model"`
	Features []string `json:"cpu_features"` // the vector features the kernels choose by
	Cores    int      `json:"cores"`
	// PanelRows is linalg's packed-panel layout (micro-panel height; 0: no packing). HPL
	// broadcasts packed panels only when every process has the same.
	PanelRows int     `json:"packed_panel_rows"`
	Load1     float64 `json:"load1"` // 1-minute load average (-1: unknown)

	MemTotal     uint64 `json:"mem_total_bytes"`
	MemAvailable uint64 `json:"mem_available_bytes"` // 0: unknown
	THP          string `json:"transparent_hugepages,omitempty"`

	NoFile  Limit `json:"nofile"`
	MemLock Limit `json:"memlock"`

	// ClockOffsetUs is this host's clock minus rank 0's, measured by rank 0 (microseconds,
	// +- half the round trip RTTUs).
	ClockOffsetUs float64 `json:"clock_offset_us"`
	ClockRTTUs    float64 `json:"clock_rtt_us"`

	Shm       string           `json:"shm"` // where shared-memory segments go, or why there is none
	Verbs     bool             `json:"verbs_built_in"`
	RDMA      []rdmadev.Device `json:"rdma,omitempty"`
	RDMAError string           `json:"rdma_error,omitempty"`

	Iface     string `json:"iface"`      // interface of the address peers reach this rank at
	IfaceAddr string `json:"iface_addr"` // that address
	IfaceMTU  int    `json:"iface_mtu,omitempty"`
	IfaceMbps int    `json:"iface_mbps,omitempty"` // link speed the interface reports (0: unknown)
}

// Limit is a resource limit; -1 is unlimited.
type Limit struct {
	Soft int64 `json:"soft"`
	Hard int64 `json:"hard"`
}

// Build identifies the gorun executable a rank runs.
type Build struct {
	ID        string `json:"id"` // revision (or "devel") + the executable's hash: equal ids, equal binaries
	Version   string `json:"version"`
	Revision  string `json:"vcs_revision,omitempty"`
	Modified  bool   `json:"vcs_modified,omitempty"`
	GoVersion string `json:"go_version"`
	Level     string `json:"arch_level,omitempty"` // GOAMD64 / GOARM64
	Tags      string `json:"tags,omitempty"`
	ExeSHA256 string `json:"exe_sha256,omitempty"`
}

func readBuild() Build {
	b := Build{GoVersion: runtime.Version(), Version: "(unknown)"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		b.Version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			case "GOAMD64", "GOARM64", "GOARM":
				b.Level = s.Key + "=" + s.Value
			case "-tags":
				b.Tags = s.Value
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if f, err := os.Open(exe); err == nil {
			h := sha256.New()
			if _, err := io.Copy(h, f); err == nil {
				b.ExeSHA256 = hex.EncodeToString(h.Sum(nil))
			}
			f.Close()
		}
	}
	rev := b.Revision
	if rev == "" {
		rev = "norev"
	} else if len(rev) > 12 {
		rev = rev[:12]
	}
	if b.Modified {
		rev += "+dirty"
	}
	b.ID = rev + "/" + short(b.ExeSHA256)
	return b
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "nohash"
	}
	return h
}

// cpuFeatures lists the features the linear algebra kernels and the runtime choose by.
func cpuFeatures() []string {
	var out []string
	add := func(name string, have bool) {
		if have {
			out = append(out, name)
		}
	}
	switch runtime.GOARCH {
	case "amd64", "386":
		add("sse4.2", cpu.X86.HasSSE42)
		add("avx", cpu.X86.HasAVX)
		add("avx2", cpu.X86.HasAVX2)
		add("fma", cpu.X86.HasFMA)
		add("avx512f", cpu.X86.HasAVX512F)
		add("avx512dq", cpu.X86.HasAVX512DQ)
		add("avx512bw", cpu.X86.HasAVX512BW)
		add("avx512vl", cpu.X86.HasAVX512VL)
		add("avx512vnni", cpu.X86.HasAVX512VNNI)
	case "arm64":
		add("asimd", cpu.ARM64.HasASIMD)
		add("fp", cpu.ARM64.HasFP)
		add("asimddp", cpu.ARM64.HasASIMDDP)
		add("asimdhp", cpu.ARM64.HasASIMDHP)
		add("sve", cpu.ARM64.HasSVE)
		add("sve2", cpu.ARM64.HasSVE2)
		add("i8mm", cpu.ARM64.HasI8MM)
	}
	return out
}

// collectFacts gathers what this rank can learn about its host without communicating.
func collectFacts(rank int, host string) Facts {
	f := Facts{
		Rank: rank, Host: host, Build: readBuild(), Arch: runtime.GOOS + "/" + runtime.GOARCH,
		Features: cpuFeatures(), Cores: runtime.NumCPU(), PanelRows: linalg.PackedALayout(), Load1: -1,
	}
	platformFacts(&f)
	f.Shm = shmState()
	var err error
	f.Verbs, f.RDMA, err = rdmadev.Devices()
	if err != nil {
		f.RDMAError = err.Error()
	}
	f.Iface, f.IfaceAddr, f.IfaceMTU = dataIface()
	f.IfaceMbps = ifaceSpeed(f.Iface)
	return f
}

// shmState is the segment directory when a segment can be created there, else why not.
func shmState() string {
	dir := jobenv.SegmentDir()
	fh, err := os.CreateTemp(dir, "gorun-doctor-*")
	if err != nil {
		return "unavailable: " + err.Error()
	}
	name := fh.Name()
	fh.Close()
	os.Remove(name)
	return dir
}

// dataIface finds the address this rank's peers reach it at, as comm picks it (GORUN_IFACE,
// else the source address of the route to the rendezvous), and the interface holding it.
func dataIface() (name, addr string, mtu int) {
	var ip net.IP
	if spec := os.Getenv(jobenv.Iface); spec != "" {
		ip, _ = jobenv.IfaceAddr(spec)
	}
	if ip == nil {
		if h, _, err := net.SplitHostPort(os.Getenv(jobenv.Coord)); err == nil {
			// A UDP "connection" sends nothing: it asks the kernel for the route's source address.
			if c, err := net.Dial("udp", net.JoinHostPort(h, "9")); err == nil {
				ip = c.LocalAddr().(*net.UDPAddr).IP
				c.Close()
			}
		}
	}
	if ip == nil {
		return "", "", 0
	}
	ifaces, _ := net.Interfaces()
	for _, ifc := range ifaces {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return ifc.Name, ip.String(), ifc.MTU
			}
		}
	}
	return "", ip.String(), 0
}

// firstField returns the value of "key: value" or "key=value" lines.
func firstField(text, key, sep string) string {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, sep)
		if ok && strings.TrimSpace(k) == key {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}
