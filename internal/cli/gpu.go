package cli

import (
	"context"
	"fmt"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "gpu",
		Synopsis: "Show the GPUs, their free memory and foreign processes",
		Usage: `Usage: roofline gpu [-json] [-inventory FILE]

  Shows every NVIDIA GPU of this host with its memory (total, used, free, as
  the CUDA runtime and the engines see it) and the compute processes on it, with
  driver and CUDA versions.

  "roofline gpu -json > gpus.json" on the GPU host records a snapshot that
  -inventory accepts here and on vram, plan and apply: that is how a plan is
  made in code review, on a machine without GPUs.

Options:
  -json             Print the snapshot as JSON (the -inventory file format).
  -inventory FILE   Read the GPUs from a snapshot file instead of NVML.
`,
		Run: runGPU,
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
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(m.Err, "Warning: %s\n", w)
	}
	if err := views.NewGPU(views.TypeOf(*jsonOut), m.view()).Snapshot(s); err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	return ExitOK
}
