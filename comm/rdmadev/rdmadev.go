// Package rdmadev lists the RDMA devices gorun's verbs transport can open, with their ports and
// GID tables (gorun --list-devices, gorun doctor): it links the device layer, not the transport,
// so that the launcher can use it.
package rdmadev

import "github.com/gorun-hpc/gorun/comm/internal/ibv"

// Device is one device the verbs transport can open, with its ports: what List
// prints, as values (gorun doctor reports them per host).
type Device struct {
	Name      string `json:"name"`
	Transport string `json:"transport,omitempty"`
	Soft      bool   `json:"soft,omitempty"` // the software device (ranks on one host only)
	Ports     []Port `json:"ports"`
}

// Port is one port of an RDMA device.
type Port struct {
	Num       int    `json:"num"`
	State     string `json:"state,omitempty"` // PORT_ACTIVE, PORT_DOWN, ...
	Active    bool   `json:"active"`
	LinkLayer string `json:"link_layer,omitempty"`
	MTU       int    `json:"mtu,omitempty"` // active MTU, bytes
	LID       uint16 `json:"lid,omitempty"`
	GIDs      []GID  `json:"gids,omitempty"`
	Err       string `json:"error,omitempty"` // the port or its GID table could not be queried
}

// GID is one entry of a port's GID table.
type GID struct {
	Index      int    `json:"index"`
	GID        string `json:"gid"`
	Type       string `json:"type,omitempty"`
	LinkLocal  bool   `json:"link_local,omitempty"`  // fe80:: (Thunderbolt before an IPv4 address exists)
	IPv4Mapped bool   `json:"ipv4_mapped,omitempty"` // ::ffff:a.b.c.d (RoCE v2 over IPv4)
}

// Devices lists the devices of List (hardware, then the software device).
// hardware reports whether this binary was built with libibverbs (build tag verbs): without
// it no hardware device is visible, whatever the host has.
func Devices() (hardware bool, devs []Device, err error) {
	infos, err := ibv.Describe()
	if err != nil {
		return ibv.Hardware(), nil, err
	}
	for _, d := range infos {
		dev := Device{Name: d.Name, Transport: d.Transport, Soft: d.Name == ibv.SoftName}
		for _, p := range d.Ports {
			port := Port{Num: p.Num}
			if p.Err != nil {
				port.Err = p.Err.Error()
				dev.Ports = append(dev.Ports, port)
				continue
			}
			port.State = p.Attr.State.String()
			port.Active = p.Attr.State == ibv.PortActive || p.Attr.State == 5 // ACTIVE_DEFER
			port.LinkLayer, port.MTU, port.LID = p.Attr.LinkLayer, p.Attr.ActiveMTU, p.Attr.LID
			for _, g := range p.GIDs {
				port.GIDs = append(port.GIDs, GID{Index: g.Index, GID: g.GID.String(), Type: g.Type,
					LinkLocal: g.GID.IsLinkLocal(), IPv4Mapped: g.GID.IsIPv4Mapped()})
			}
			dev.Ports = append(dev.Ports, port)
		}
		devs = append(devs, dev)
	}
	return ibv.Hardware(), devs, nil
}
