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

// refFields are the field numbers (k8s.io/cri-api api.proto) of the fields
// of a listed object that a ref keeps; 0: none (no field has number 0). Both list replies hold
// their objects in field 1 (ListContainersResponse.containers,
// ListPodSandboxResponse.items), a map entry its key in 1, its value in 2.
type refFields struct {
	id, sandboxID, state, labels protowire.Number
}

var (
	// runtime.v1.Container: id, pod_sandbox_id, state, labels.
	containerFields = refFields{id: 1, sandboxID: 2, state: 6, labels: 8}
	// runtime.v1.PodSandbox: id, state, labels.
	sandboxFields = refFields{id: 1, state: 3, labels: 5}
)

const (
	fieldListItems = 1
	fieldMapKey    = 1
	fieldMapValue  = 2
)

// wireRef is one decoded object; state is its raw enum value (proto3
// leaves 0 off the wire: CONTAINER_CREATED, SANDBOX_READY).
type wireRef struct {
	id, sandboxID, label string
	state                int32
}

// ListContainerRefs implements runtime.RefLister: one ListContainers call
// whose reply is decoded straight into refs, skipping the fields a ref
// does not hold (metadata, image, annotations, the other labels) without
// allocating them. The full decode built two maps and ~14 strings per
// container; at 110 pods, once a second, that was most of the relist's
// cost and of the agent's steady allocations (issue 13).
func (r *Runtime) ListContainerRefs(ctx context.Context, labels map[string]string, key string, into []runtime.ContainerRef) ([]runtime.ContainerRef, error) {
	into = into[:0]
	req := &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: labels}}
	err := r.invokeRefs(ctx, runtimeapi.RuntimeService_ListContainers_FullMethodName, req, containerFields, key, func(w wireRef) {
		into = append(into, runtime.ContainerRef{ID: w.id, SandboxID: w.sandboxID,
			State: containerStateFromCRI(runtimeapi.ContainerState(w.state)), Label: w.label})
	})
	if err != nil {
		return nil, wrap(err, "list containers")
	}
	return into, nil
}

// ListSandboxRefs implements runtime.RefLister (see ListContainerRefs).
func (r *Runtime) ListSandboxRefs(ctx context.Context, labels map[string]string, key string, into []runtime.SandboxRef) ([]runtime.SandboxRef, error) {
	into = into[:0]
	req := &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: labels}}
	err := r.invokeRefs(ctx, runtimeapi.RuntimeService_ListPodSandbox_FullMethodName, req, sandboxFields, key, func(w wireRef) {
		into = append(into, runtime.SandboxRef{ID: w.id,
			State: sandboxStateFromCRI(runtimeapi.PodSandboxState(w.state)), Label: w.label})
	})
	if err != nil {
		return nil, wrap(err, "list sandboxes")
	}
	return into, nil
}

// invokeRefs makes the list call method with req and decodes its reply
// with decodeRefs, calling each for every listed object.
func (r *Runtime) invokeRefs(ctx context.Context, method string, req any, f refFields, key string, each func(wireRef)) error {
	ctx, cancel := callCtx(ctx, r.timeout)
	defer cancel()
	reply := &refsReply{fields: f, key: key, each: each}
	return r.conn.Invoke(ctx, method, req, reply, grpc.ForceCodecV2(refsCodec{proto: encoding.GetCodecV2("proto")}))
}

// refsReply is the reply of a ref listing (see refsCodec).
type refsReply struct {
	fields refFields
	key    string
	each   func(wireRef)
}

// refsCodec is gRPC's proto codec, except that it decodes a *refsReply
// with decodeRefs. Its name is "proto", so the call's content type
// (application/grpc+proto) is one every gRPC server of CRI accepts.
type refsCodec struct{ proto encoding.CodecV2 }

func (c refsCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c refsCodec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*refsReply)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return decodeRefs(buf.ReadOnlyData(), r.fields, r.key, r.each)
}

func (refsCodec) Name() string { return "proto" }

// errWire is a malformed list reply.
var errWire = errors.New("malformed CRI list reply")

// decodeContainerRefs decodes a wire-format ListContainersResponse into
// refs appended to into: the same refs as containerFromCRI of a full
// decode gives (Label: the value of label key). Pure.
func decodeContainerRefs(b []byte, key string, into []runtime.ContainerRef) ([]runtime.ContainerRef, error) {
	err := decodeRefs(b, containerFields, key, func(w wireRef) {
		into = append(into, runtime.ContainerRef{ID: w.id, SandboxID: w.sandboxID,
			State: containerStateFromCRI(runtimeapi.ContainerState(w.state)), Label: w.label})
	})
	return into, err
}

// decodeRefs decodes a wire-format list reply, calling each with every
// listed object's ref fields f (label: the value of label key). Fields it
// does not know are skipped, as proto does; a malformed reply is an error
// wrapping errWire. The strings it passes do not alias b. Pure.
func decodeRefs(b []byte, f refFields, key string, each func(wireRef)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
		}
		b = b[n:]
		if num == fieldListItems && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
			}
			w, err := decodeRef(v, f, key)
			if err != nil {
				return err
			}
			each(w)
			b = b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}

// decodeRef decodes one wire-format listed object. Pure.
func decodeRef(b []byte, f refFields, key string) (wireRef, error) {
	var w wireRef
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return w, fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == f.id && typ == protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			w.id = string(v)
		case num == f.sandboxID && typ == protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			w.sandboxID = string(v)
		case num == f.state && typ == protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			w.state = int32(v)
		case num == f.labels && typ == protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			if n >= 0 {
				k, val, err := decodeMapEntry(v)
				if err != nil {
					return w, err
				}
				if string(k) == key {
					w.label = string(val)
				}
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return w, fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return w, nil
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
