//go:build !(linux && cgo)

package gpu

import (
	"context"
	"fmt"
)

// nvmlStub stands in for NVML in builds without cgo (go-nvml needs it) or
// for other systems than Linux.
type nvmlStub struct{}

var _ Inventory = nvmlStub{}

// NewNVML returns an Inventory whose Snapshot always fails: this build cannot
// load NVML.
func NewNVML() Inventory { return nvmlStub{} }

func (nvmlStub) Snapshot(context.Context) (*Snapshot, error) {
	return nil, fmt.Errorf("%w: no NVIDIA driver support in this build of roofline (it was built without cgo or not for Linux). %s", ErrNVMLUnavailable, useInventoryHint)
}
