package node

import (
	"context"
	"net"
	"path/filepath"
	"strconv"

	imageservice "github.com/skiffnode/skiff/images/service"
	"github.com/skiffnode/skiff/internal/apiclient"
	"github.com/skiffnode/skiff/server"
)

// newServing is the serving phase: the local API on the root-only unix
// socket, the read-only port (--read-only-port) and the kubelet API
// (--port).
func (n *Node) newServing(context.Context) error {
	o, rt, a := &n.cfg, n.rt, n.ag.agent
	// The read-only TCP port, like the kubelet's, never runs commands in
	// containers: only the root-only unix socket serves /run.
	readOnly := server.Config{
		Pods: a, PodLogsDir: o.PodLogsDir, Logger: n.log, Events: a,
		Healthz: a.Healthz,
		Metrics: rt.mx.handler(n.log),
	}
	if rt.cgroups != nil {
		readOnly.Stats = a
	}
	local := readOnly
	local.Exec = a
	withStreaming(&local, rt.rt)
	// Image pulls and removals, like /run, only on the unix socket.
	local.Images = imageservice.New(rt.rt, rt.deps.importer, imageservice.Deps{
		Puller: rt.puller, Creds: n.stor.creds, Records: n.ag.imageGC.Records, Keep: n.ag.keep, Wake: a.WakeAll,
	})
	local.Profiling = true
	var client *apiclient.Client
	var clusterCA []byte
	if api := n.api.source; api != nil {
		client, clusterCA = api.client, api.clusterCA
	}
	kubeletAPI, err := o.KubeletAPI.newKubeletAPI(kubeletAPIDeps{
		RootDir: o.RootDir, NodeName: n.name, Config: local, Client: client, ClusterCA: clusterCA, Logger: n.log,
	})
	if err != nil {
		return err
	}
	if kubeletAPI != nil {
		n.loop("kubelet API", kubeletAPI.serve)
	}
	srv := server.New(local)
	n.loop("local API", func(ctx context.Context) error { return srv.ServeUnix(ctx, filepath.Join(o.RootDir, "skiff.sock")) })
	if o.ReadOnlyPort > 0 {
		roSrv, addr := server.New(readOnly), net.JoinHostPort(o.Address, strconv.Itoa(o.ReadOnlyPort))
		n.loop("read-only API", func(ctx context.Context) error { return roSrv.ServeTCP(ctx, addr) })
	}
	return nil
}
