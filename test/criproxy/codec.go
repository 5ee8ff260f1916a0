package criproxy

import (
	"fmt"

	"google.golang.org/grpc/mem"
)

// rawCodec passes messages through as bytes: the proxy never decodes them.
// It is named "proto" so that both ends see the content type they expect.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("criproxy: marshal %T, want *[]byte", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("criproxy: unmarshal into %T, want *[]byte", v)
	}
	*b = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }
