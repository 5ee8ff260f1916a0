package cri

import (
	"context"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

// imageVolumeSince is the first version of each runtime whose CRI mounts
// images as volumes (Mount.image); CRI reports no feature for it, so the
// version decides.
var imageVolumeSince = map[string][2]int{
	"containerd": {2, 1},
	"cri-o":      {1, 31},
}

// Features asks the runtime what its default handler supports: CRI Status
// reports user namespaces and recursive read-only mounts per handler (""
// is the default) and the supplementalGroupsPolicy globally; a runtime
// without them (containerd 1.x) reports none. Image volumes follow the
// runtime's version (imageVolumeSince).
func (r *Runtime) Features(ctx context.Context) (runtime.Features, error) {
	v, err := r.version(ctx)
	if err != nil {
		return runtime.Features{}, err
	}
	cctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	st, err := r.rt.Status(cctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return runtime.Features{}, wrap(err, "runtime status")
	}
	f := featuresFromStatus(st)
	f.ImageVolumes = versionAtLeast(v.RuntimeName, v.RuntimeVersion, imageVolumeSince)
	return f, nil
}

// featuresFromStatus reads a CRI Status response's features.
func featuresFromStatus(st *runtimeapi.StatusResponse) runtime.Features {
	f := runtime.Features{SupplementalGroupsPolicy: st.GetFeatures().GetSupplementalGroupsPolicy(), Reported: st.GetFeatures() != nil}
	for _, h := range st.GetRuntimeHandlers() {
		f.Handlers = append(f.Handlers, runtime.Handler{Name: h.GetName(),
			UserNamespaces: h.GetFeatures().GetUserNamespaces(), RecursiveReadOnlyMounts: h.GetFeatures().GetRecursiveReadOnlyMounts()})
		if h.GetName() == "" {
			f.UserNamespaces = h.GetFeatures().GetUserNamespaces()
			f.RecursiveReadOnlyMounts = h.GetFeatures().GetRecursiveReadOnlyMounts()
		}
	}
	return f
}

// versionAtLeast reports whether the runtime name at version (CRI
// Version's runtime_version: "v2.4.2", "1.6.20~ds1") is at least since's
// entry for it; unknown runtimes and unreadable versions are not.
func versionAtLeast(name, version string, since map[string][2]int) bool {
	min, ok := since[name]
	if !ok {
		return false
	}
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return major > min[0] || major == min[0] && minor >= min[1]
}
