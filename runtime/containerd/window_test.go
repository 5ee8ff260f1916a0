package containerd

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	eventsapi "github.com/containerd/containerd/api/services/events/v1"
	apitypes "github.com/containerd/containerd/api/types"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/skiffnode/skiff/internal/h2record"
)

// streamingEvents streams n task exits to every subscriber, a millisecond
// apart (time for a PING's ack to come back, as between real exits).
type streamingEvents struct {
	eventsapi.UnimplementedEventsServer
	n int
}

func (f streamingEvents) Subscribe(_ *eventsapi.SubscribeRequest, s eventsapi.Events_SubscribeServer) error {
	for i := range f.n {
		ev, err := anypb.New(&apievents.TaskExit{ContainerID: "c1", ID: "exec", Pid: uint32(i)})
		if err != nil {
			return err
		}
		if err := s.Send(&apitypes.Envelope{Namespace: Namespace, Topic: "/tasks/exit", Event: ev}); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	<-s.Context().Done()
	return nil
}

// The exit watcher's connection has static windows: receiving events (an
// exec probe's exit is one) costs the client no BDP PING (issue 13).
func TestEventConnectionSendsNoBDPPings(t *testing.T) {
	lis, err := net.Listen("unix", filepath.Join(t.TempDir(), "containerd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &h2record.Listener{Listener: lis}
	srv := grpc.NewServer()
	eventsapi.RegisterEventsServer(srv, streamingEvents{n: 20})
	go func() { _ = srv.Serve(rec) }()
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := newEventClient(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	envs, errs := client.Subscribe(ctx)
	for range 20 {
		select {
		case <-envs:
		case err := <-errs:
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // let the last frames arrive
	pings, frames, err := h2record.ClientPings(rec.Sent())
	if err != nil {
		t.Fatal(err)
	}
	if pings != 0 {
		t.Errorf("client sent %d PINGs while receiving 20 events (%d frames)", pings, frames)
	}
}
