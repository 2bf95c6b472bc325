package comm_test

import (
	"fmt"
	"sort"
	"sync"

	"github.com/gorun-hpc/gorun/comm"
)

// Run executes the same function on several goroutine ranks: the way tests and examples run
// SPMD code without starting processes.
func ExampleRun() {
	var mu sync.Mutex
	var lines []string
	err := comm.Run(3, func(c *comm.Comm) error {
		mu.Lock()
		lines = append(lines, fmt.Sprintf("rank %d of %d", c.Rank(), c.Size()))
		mu.Unlock()
		return nil
	})
	sort.Strings(lines)
	fmt.Println(lines, err)
	// Output: [rank 0 of 3 rank 1 of 3 rank 2 of 3] <nil>
}

// Send and Recv move typed slices; Status tells who sent how much.
func ExampleSend() {
	comm.Run(2, func(c *comm.Comm) error {
		if c.Rank() == 0 {
			return comm.Send(c, []float64{1.5, 2.5}, 1, 7)
		}
		buf := make([]float64, 8)
		st, err := comm.Recv(c, buf, 0, 7)
		fmt.Println(buf[:comm.Count[float64](st)], st.Source, st.Tag, err)
		return err
	})
	// Output: [1.5 2.5] 0 7 <nil>
}

// Isend and Irecv return Requests; WaitAll waits for all of them.
func ExampleIrecv() {
	comm.Run(3, func(c *comm.Comm) error {
		next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
		in := make([]int32, 1)
		r := comm.Irecv(c, in, prev, 0)
		s := comm.Isend(c, []int32{int32(c.Rank() * 10)}, next, 0)
		if err := comm.WaitAll(r, s); err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("rank 0 got", in[0])
		}
		return nil
	})
	// Output: rank 0 got 20
}

// Probe finds the size of a pending message before receiving it.
func ExampleComm_Probe() {
	comm.Run(2, func(c *comm.Comm) error {
		if c.Rank() == 0 {
			return comm.Send(c, []byte("variable length"), 1, 3)
		}
		st, err := c.Probe(comm.AnySource, comm.AnyTag)
		if err != nil {
			return err
		}
		buf := make([]byte, st.Count)
		_, err = comm.Recv(c, buf, st.Source, st.Tag)
		fmt.Printf("%d bytes: %s\n", st.Count, buf)
		return err
	})
	// Output: 15 bytes: variable length
}

// Split makes sub-communicators: here the even and the odd ranks.
func ExampleComm_Split() {
	var mu sync.Mutex
	var lines []string
	comm.Run(4, func(c *comm.Comm) error {
		sub, err := c.Split(c.Rank()%2, c.Rank())
		if err != nil {
			return err
		}
		mu.Lock()
		lines = append(lines, fmt.Sprintf("world %d -> color %d rank %d/%d", c.Rank(), c.Rank()%2, sub.Rank(), sub.Size()))
		mu.Unlock()
		return nil
	})
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// world 0 -> color 0 rank 0/2
	// world 1 -> color 1 rank 0/2
	// world 2 -> color 0 rank 1/2
	// world 3 -> color 1 rank 1/2
}

// SendValue carries any Go value, for control messages.
func ExampleComm_SendValue() {
	type job struct {
		Name  string
		Steps int
	}
	comm.Run(2, func(c *comm.Comm) error {
		if c.Rank() == 0 {
			return c.SendValue(job{"train", 100}, 1, 0)
		}
		var j job
		_, err := c.RecvValue(&j, 0, 0)
		fmt.Printf("%+v\n", j)
		return err
	})
	// Output: {Name:train Steps:100}
}
