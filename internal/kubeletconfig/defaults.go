package kubeletconfig

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

// kubeletDefaults is a KubeletConfiguration with the kubelet's v1beta1
// defaults (SetDefaults_KubeletConfiguration in
// k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1/defaults.go, v1.37,
// ported: skiff never imports k8s.io/kubernetes). A field skiff does not
// support may be given at its default (configuration files written by
// kubeadm or by a kubelet's /configz spell every field out); any other
// value is refused. The fields skiff supports are not compared, so only
// the others matter here.
func kubeletDefaults() *v1beta1.KubeletConfiguration {
	d := func(t time.Duration) metav1.Duration { return metav1.Duration{Duration: t} }
	c := &v1beta1.KubeletConfiguration{
		SyncFrequency:                    d(time.Minute),
		FileCheckFrequency:               d(20 * time.Second),
		HTTPCheckFrequency:               d(20 * time.Second),
		RegistryPullQPS:                  ptr.To[int32](5),
		RegistryBurst:                    10,
		EventRecordQPS:                   ptr.To[int32](50),
		EventBurst:                       100,
		EnableDebuggingHandlers:          ptr.To(true),
		HealthzPort:                      ptr.To[int32](10248),
		HealthzBindAddress:               "127.0.0.1",
		OOMScoreAdj:                      ptr.To[int32](-999),
		StreamingConnectionIdleTimeout:   d(4 * time.Hour),
		VolumeStatsAggPeriod:             d(time.Minute),
		CPUManagerPolicy:                 "none",
		CPUManagerReconcilePeriod:        d(10 * time.Second),
		MemoryManagerPolicy:              v1beta1.NoneMemoryManagerPolicy,
		TopologyManagerPolicy:            v1beta1.NoneTopologyManagerPolicy,
		TopologyManagerScope:             v1beta1.ContainerTopologyManagerScope,
		HairpinMode:                      v1beta1.PromiscuousBridge,
		CPUCFSQuota:                      ptr.To(true),
		CPUCFSQuotaPeriod:                &metav1.Duration{Duration: 100 * time.Millisecond},
		NodeStatusMaxImages:              ptr.To[int32](50),
		MaxOpenFiles:                     1000000,
		EvictionPressureTransitionPeriod: d(5 * time.Minute),
		MergeDefaultEvictionSettings:     ptr.To(false),
		EnableControllerAttachDetach:     ptr.To(true),
		MakeIPTablesUtilChains:           ptr.To(true),
		IPTablesMasqueradeBit:            ptr.To[int32](14),
		IPTablesDropBit:                  ptr.To[int32](15),
		FailSwapOn:                       ptr.To(true),
		EnforceNodeAllocatable:           []string{"pods"},
		VolumePluginDir:                  "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/",
		EnableSystemLogHandler:           ptr.To(true),
		EnableProfilingHandler:           ptr.To(true),
		EnableDebugFlagsHandler:          ptr.To(true),
		// 1.37 adds memoryReservationPolicy (MemoryQoS).
		MemoryReservationPolicy:       v1beta1.NoneMemoryReservationPolicy,
		LocalStorageCapacityIsolation: ptr.To(true),
		// Defaulted only with the KubeletEnsureSecretPulledImages gate.
		ImagePullCredentialsVerificationPolicy:    v1beta1.NeverVerifyPreloadedImages,
		ConfigMapAndSecretChangeDetectionStrategy: v1beta1.WatchChangeDetectionStrategy,
		// Defaulted only with the KubeletCrashLoopBackOffMax gate; 300 s
		// is also the back-off skiff's restarts grow to (agent/).
		CrashLoopBackOff: v1beta1.CrashLoopBackOffConfig{MaxContainerRestartPeriod: &metav1.Duration{Duration: 300 * time.Second}},
		Authentication: v1beta1.KubeletAuthentication{
			Webhook: v1beta1.KubeletWebhookAuthentication{CacheTTL: d(2 * time.Minute)},
		},
		Authorization: v1beta1.KubeletAuthorization{
			Webhook: v1beta1.KubeletWebhookAuthorization{
				CacheAuthorizedTTL: d(5 * time.Minute), CacheUnauthorizedTTL: d(30 * time.Second),
			},
		},
	}
	logsapi.SetRecommendedLoggingConfiguration(&c.Logging)
	return c
}

// defaultEvictionHard is the kubelet's default evictionHard. skiff enforces
// memory.available only (docs/resources-cgroups.md); the other signals are
// accepted at these values and ignored.
func defaultEvictionHard() map[string]string {
	return map[string]string{
		"memory.available":   "100Mi",
		"nodefs.available":   "10%",
		"nodefs.inodesFree":  "5%",
		"imagefs.available":  "15%",
		"imagefs.inodesFree": "5%",
	}
}
