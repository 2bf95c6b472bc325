package comm

import (
	"fmt"
	"github.com/gorun-hpc/gorun/comm/jobenv"
	"os"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkPingPong measures ping-pong between this process (rank 0) and a child process
// (rank 1) over loopback TCP and over shared memory, as OSU's osu_latency does: one-way
// latency is half the round trip; bandwidth is bytes moved one way per one-way time.
//
//	go test -run '^$' -bench PingPong ./comm/
func BenchmarkPingPong(b *testing.B) {
	for _, transport := range []string{"tcp", "shm"} {
		b.Run(transport, func(b *testing.B) { benchPingPong(b, transport) })
	}
}

func benchPingPong(b *testing.B, transport string) {
	coord := freePort(b)
	child := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	child.Env = append(jobEnv(b, 1, 2, coord), roleVar+"=pingpong", jobenv.Transport+"="+transport)
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer child.Wait()
	id := identity{Rank: 0, Size: 2, Coord: coord, Secret: []byte("0123456789abcdef"), JobID: "testjob", PeerTimeout: 30 * time.Second, Transport: transport}
	c, err := initTCP(id)
	if err != nil {
		child.Process.Kill()
		b.Fatal(err)
	}
	defer func() {
		Send(c, []byte{}, 1, 0) // stop the echo
		c.Finalize()
	}()
	for _, size := range []int{8, 1 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20} {
		buf := make([]byte, size)
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			b.SetBytes(int64(2 * size))
			for i := 0; i < 10; i++ { // warm-up, as OSU's skip iterations
				pingPong(b, c, buf)
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				pingPong(b, c, buf)
			}
			oneWay := time.Since(start).Seconds() / float64(2*b.N)
			b.ReportMetric(oneWay*1e6, "us/one-way")
			b.ReportMetric(float64(size)/oneWay/1e9, "GB/s")
		})
	}
}

func pingPong(b *testing.B, c *Comm, buf []byte) {
	if err := Send(c, buf, 1, 1); err != nil {
		b.Fatal(err)
	}
	if _, err := Recv(c, buf, 1, 1); err != nil {
		b.Fatal(err)
	}
}
