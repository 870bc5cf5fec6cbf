package cli

import (
	"context"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "gpu",
		Synopsis: "Show the GPUs, their free memory and foreign processes",
		Usage:    views.UsageGPU,
		Run:      runGPU,
	})
}

// newNVMLInventory builds the NVML inventory; tests replace it.
var newNVMLInventory = gpu.NewNVML

// inventoryFor returns the GPU inventory a command should use: the snapshot
// file at path when one is given (-inventory), else this host's NVML.
func inventoryFor(path string) gpu.Inventory {
	if path != "" {
		return gpu.NewFile(path)
	}
	return newNVMLInventory()
}

func runGPU(m *Meta, args []string) int {
	fs := newFlags("gpu")
	jsonOut := fs.Bool("json", false, "")
	inventory := fs.String("inventory", "", "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 0 {
		return usageError(m, "gpu", "unexpected argument "+fs.Arg(0))
	}
	s, err := inventoryFor(*inventory).Snapshot(context.Background())
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	if err := views.NewGPU(views.TypeOf(*jsonOut), m.view()).Snapshot(s); err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	return ExitOK
}
