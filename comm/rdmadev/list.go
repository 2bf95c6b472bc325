package rdmadev

import (
	"fmt"
	"io"

	"github.com/gorun-hpc/gorun/comm/internal/ibv"
)

// List writes what the verbs transport can use, as gorun --list-devices shows it:
// each device libibverbs sees (name, transport, port state, GID table), then the software
// device. Binaries built without the verbs tag list only the software device, and say so.
func List(w io.Writer) error {
	if !ibv.Hardware() {
		fmt.Fprintln(w, "# built without libibverbs (go build -tags verbs): RDMA hardware is not visible to this binary;")
		fmt.Fprintf(w, "# only the software device %s (ranks on one host, for tests) is available\n", ibv.SoftName)
	} else if names, err := ibv.HardwareNames(); err != nil {
		return err
	} else if len(names) == 0 {
		fmt.Fprintln(w, "# libibverbs lists no RDMA device (driver not loaded? on macOS: rdma_ctl enable in Recovery)")
	}
	infos, err := ibv.Describe()
	if err != nil {
		return err
	}
	for _, d := range infos {
		fmt.Fprintf(w, "%s\ttransport: %s\n", d.Name, d.Transport)
		for _, p := range d.Ports {
			if p.Err != nil {
				fmt.Fprintf(w, "\tport %d: %v\n", p.Num, p.Err)
				continue
			}
			fmt.Fprintf(w, "\tport %d: %v\tlink layer: %s\tactive MTU: %d\tLID: %d\n", p.Num, p.Attr.State, p.Attr.LinkLayer, p.Attr.ActiveMTU, p.Attr.LID)
			if len(p.GIDs) == 0 {
				fmt.Fprintln(w, "\t\tno GIDs (a Thunderbolt port publishes them once its interface is up)")
			}
			for _, g := range p.GIDs {
				fmt.Fprintf(w, "\t\tGID[%d]\t%v\t%s\n", g.Index, g.GID, g.Type)
			}
		}
	}
	return nil
}
