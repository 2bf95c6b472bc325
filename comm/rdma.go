package comm

import (
	"io"

	"github.com/gorun-hpc/gorun/comm/rdmadev"
)

// RDMADevice is one device the verbs transport can open (package rdmadev, which lists them
// without linking the transports).
type RDMADevice = rdmadev.Device

// RDMAPort is one port of an RDMA device.
type RDMAPort = rdmadev.Port

// RDMAGID is one entry of a port's GID table.
type RDMAGID = rdmadev.GID

// RDMADevices lists the devices the verbs transport can open; hardware reports whether this
// binary was built with libibverbs (rdmadev.Devices).
func RDMADevices() (hardware bool, devs []RDMADevice, err error) { return rdmadev.Devices() }

// ListRDMADevices writes what the verbs transport can use, as gorun --list-devices shows it
// (rdmadev.List).
func ListRDMADevices(w io.Writer) error { return rdmadev.List(w) }
