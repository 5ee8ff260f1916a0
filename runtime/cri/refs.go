package cri

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // the "proto" codec refsCodec delegates to
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiffnode/skiff/runtime"
)

var _ runtime.RefLister = (*Runtime)(nil)

// Field numbers of runtime.v1.ListContainersResponse and runtime.v1.Container
// (k8s.io/cri-api api.proto), and of a map entry.
const (
	fieldContainers      = 1 // ListContainersResponse.containers
	fieldContainerID     = 1 // Container.id
	fieldContainerSandID = 2 // Container.pod_sandbox_id
	fieldContainerState  = 6 // Container.state
	fieldContainerLabels = 8 // Container.labels
	fieldMapKey          = 1
	fieldMapValue        = 2
)

// ListContainerRefs implements runtime.RefLister: one ListContainers call
// whose reply is decoded straight into refs, skipping the fields a ref
// does not hold (metadata, image, annotations, the other labels) without
// allocating them. The full decode built two maps and ~14 strings per
// container; at 110 pods, once a second, that was most of the relist's
// cost and of the agent's steady allocations (issue 13).
func (r *Runtime) ListContainerRefs(ctx context.Context, labels map[string]string, key string, into []runtime.ContainerRef) ([]runtime.ContainerRef, error) {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	req := &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: labels}}
	reply := &refsReply{key: key, refs: into[:0]}
	err := r.conn.Invoke(ctx, runtimeapi.RuntimeService_ListContainers_FullMethodName, req, reply,
		grpc.ForceCodecV2(refsCodec{proto: encoding.GetCodecV2("proto")}))
	if err != nil {
		return nil, wrap(err, "list containers")
	}
	return reply.refs, nil
}

// refsReply is the reply of a ListContainerRefs call (see refsCodec).
type refsReply struct {
	key  string
	refs []runtime.ContainerRef
}

// refsCodec is gRPC's proto codec, except that it decodes a *refsReply
// with decodeContainerRefs. Its name is "proto", so the call's content
// type (application/grpc+proto) is one every gRPC server of CRI accepts.
type refsCodec struct{ proto encoding.CodecV2 }

func (c refsCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c refsCodec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*refsReply)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	var err error
	r.refs, err = decodeContainerRefs(buf.ReadOnlyData(), r.key, r.refs)
	return err
}

func (refsCodec) Name() string { return "proto" }

// errWire is a malformed ListContainersResponse.
var errWire = errors.New("malformed ListContainersResponse")

// decodeContainerRefs decodes a wire-format ListContainersResponse into
// refs appended to into: the same refs as containerFromCRI of a full
// decode gives (Label: the value of label key). Fields it does not know
// are skipped, as proto does. The strings it returns do not alias b. Pure.
func decodeContainerRefs(b []byte, key string, into []runtime.ContainerRef) ([]runtime.ContainerRef, error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
		}
		b = b[n:]
		if num == fieldContainers && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
			}
			ref, err := decodeContainerRef(v, key)
			if err != nil {
				return nil, err
			}
			into = append(into, ref)
			b = b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return nil, fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return into, nil
}

// decodeContainerRef decodes one wire-format runtime.v1.Container. Pure.
func decodeContainerRef(b []byte, key string) (runtime.ContainerRef, error) {
	// proto3 leaves zero values off the wire: state 0 is CONTAINER_CREATED.
	ref := runtime.ContainerRef{State: containerStateFromCRI(0)}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ref, fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == fieldContainerID && typ == protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			ref.ID = string(v)
		case num == fieldContainerSandID && typ == protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			ref.SandboxID = string(v)
		case num == fieldContainerState && typ == protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			ref.State = containerStateFromCRI(runtimeapi.ContainerState(int32(v)))
		case num == fieldContainerLabels && typ == protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			if n >= 0 {
				k, val, err := decodeMapEntry(v)
				if err != nil {
					return ref, err
				}
				if string(k) == key {
					ref.Label = string(val)
				}
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return ref, fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return ref, nil
}

// decodeMapEntry decodes a map<string, string> entry; k and v alias b.
func decodeMapEntry(b []byte) (k, v []byte, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == fieldMapKey && typ == protowire.BytesType:
			k, n = protowire.ConsumeBytes(b)
		case num == fieldMapValue && typ == protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return nil, nil, fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return k, v, nil
}
