package proxy

import (
	"testing"
	"time"

	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
)

// TestDefaults: the proxier runs with kube-proxy's defaults, in nftables
// mode.
func TestDefaults(t *testing.T) {
	kpc, err := defaults()
	if err != nil {
		t.Fatal(err)
	}
	if kpc.Mode != kubeproxyconfig.ProxyModeNFTables || kpc.SyncPeriod.Duration != 30*time.Second ||
		kpc.MinSyncPeriod.Duration != time.Second || kpc.NFTables.MasqueradeBit == nil || *kpc.NFTables.MasqueradeBit != 14 ||
		kpc.ConfigSyncPeriod.Duration != 15*time.Minute {
		t.Errorf("config = mode %q, sync %v, min sync %v, masquerade bit %v, config sync %v; want kube-proxy's defaults",
			kpc.Mode, kpc.SyncPeriod, kpc.MinSyncPeriod, kpc.NFTables.MasqueradeBit, kpc.ConfigSyncPeriod)
	}
}
