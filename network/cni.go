// Package network prepares pod networking for the managed containerd: it
// writes the CNI bridge configuration the CRI plugin loads, computes a pod's
// resolv.conf content with the kubelet's DNS policy semantics, and finds the
// node's own IPs.
//
// The CRI plugin (not skiff) runs the CNI plugins; skiff only writes their
// configuration. containerd adds the loopback network itself.
package network

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/libcni"
)

// Bridge network defaults.
const (
	DefaultNetworkName = "skiff"
	DefaultBridge      = "skiff0"
	DefaultPodCIDR     = "10.88.0.0/16"
	// ConflistName is the file WriteBridgeConflist writes in its directory.
	ConflistName = "10-skiff.conflist"
	// cniVersion is the newest version the CNI plugins 1.1.x shipped with
	// Debian 12 and containerd 1.6's libcni both support.
	cniVersion = "1.0.0"
)

// BridgeConfig describes the node-local bridge network for pods. Zero
// fields take the defaults above.
type BridgeConfig struct {
	// Name is the CNI network name (default "skiff").
	Name string
	// Bridge is the Linux bridge device (default "skiff0"); at most 15 bytes.
	Bridge string
	// PodCIDR is the subnet pod IPs come from (default 10.88.0.0/16).
	PodCIDR string
	// IPMasq masquerades traffic from pods leaving the node. Off by default:
	// pods only talk to the node and to each other.
	IPMasq bool
	// MTU of the bridge and veths; 0 lets the plugin choose.
	MTU int
	// IPAMDataDir is where host-local records allocated IPs; "" keeps the
	// plugin default (/var/lib/cni/networks).
	IPAMDataDir string
}

func (c BridgeConfig) withDefaults() BridgeConfig {
	if c.Name == "" {
		c.Name = DefaultNetworkName
	}
	if c.Bridge == "" {
		c.Bridge = DefaultBridge
	}
	if c.PodCIDR == "" {
		c.PodCIDR = DefaultPodCIDR
	}
	return c
}

// The JSON shapes of the plugins' configuration (only the fields we set).
type (
	conflist struct {
		CNIVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Plugins    []any  `json:"plugins"`
	}
	bridgePlugin struct {
		Type        string `json:"type"`
		Bridge      string `json:"bridge"`
		IsGateway   bool   `json:"isGateway"`
		IPMasq      bool   `json:"ipMasq"`
		HairpinMode bool   `json:"hairpinMode"`
		MTU         int    `json:"mtu,omitempty"`
		IPAM        ipam   `json:"ipam"`
	}
	ipam struct {
		Type    string        `json:"type"`
		Ranges  [][]ipamRange `json:"ranges"`
		Routes  []ipamRoute   `json:"routes"`
		DataDir string        `json:"dataDir,omitempty"`
	}
	ipamRange struct {
		Subnet string `json:"subnet"`
	}
	ipamRoute struct {
		Dst string `json:"dst"`
	}
	portmapPlugin struct {
		Type         string          `json:"type"`
		Capabilities map[string]bool `json:"capabilities"`
	}
)

// BridgeConflist returns the conflist bytes for c, validated with libcni.
// Pure; deterministic for equal inputs.
func BridgeConflist(c BridgeConfig) ([]byte, error) {
	c = c.withDefaults()
	_, subnet, err := net.ParseCIDR(c.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR %q: %w", c.PodCIDR, err)
	}
	if len(c.Bridge) > 15 {
		return nil, fmt.Errorf("bridge name %q is longer than 15 bytes", c.Bridge)
	}
	if c.MTU < 0 {
		return nil, fmt.Errorf("negative MTU %d", c.MTU)
	}
	defRoute := "0.0.0.0/0"
	if subnet.IP.To4() == nil {
		defRoute = "::/0"
	}
	list := conflist{
		CNIVersion: cniVersion,
		Name:       c.Name,
		Plugins: []any{
			bridgePlugin{
				Type:        "bridge",
				Bridge:      c.Bridge,
				IsGateway:   true,
				IPMasq:      c.IPMasq,
				HairpinMode: true,
				MTU:         c.MTU,
				IPAM: ipam{
					Type:    "host-local",
					Ranges:  [][]ipamRange{{{Subnet: subnet.String()}}},
					Routes:  []ipamRoute{{Dst: defRoute}},
					DataDir: c.IPAMDataDir,
				},
			},
			portmapPlugin{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}},
		},
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode conflist: %w", err)
	}
	b = append(b, '\n')
	if _, err := libcni.ConfListFromBytes(b); err != nil {
		return nil, fmt.Errorf("generated conflist is invalid: %w", err)
	}
	return b, nil
}

// WriteBridgeConflist writes the bridge network of c to dir/10-skiff.conflist
// and returns its path. It creates dir if needed, replaces the file
// atomically (temp file + rename) and leaves an identical file untouched, so
// it is idempotent and safe while containerd watches dir. Not safe for
// concurrent calls on the same dir.
func WriteBridgeConflist(dir string, c BridgeConfig) (path string, err error) {
	b, err := BridgeConflist(c)
	if err != nil {
		return "", err
	}
	path = filepath.Join(dir, ConflistName)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create CNI config dir: %w", err)
	}
	// The temp name must not end in .conf/.conflist/.json, or libcni could
	// load a half-written file.
	tmp, err := os.CreateTemp(dir, "."+ConflistName+".tmp*")
	if err != nil {
		return "", fmt.Errorf("write CNI config: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return "", fmt.Errorf("write CNI config: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return "", fmt.Errorf("write CNI config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write CNI config: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("write CNI config: %w", err)
	}
	return path, nil
}
