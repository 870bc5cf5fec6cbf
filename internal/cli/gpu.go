package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/roofline/roofline/internal/gpu"
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
	if *jsonOut {
		if err := gpu.WriteSnapshot(m.Out, s); err != nil {
			fmt.Fprintf(m.Err, "Error: writing the snapshot: %v\n", err)
			return ExitError
		}
		return ExitOK
	}
	writeGPUTable(m.Out, s)
	return ExitOK
}

// gpuCmdWidth is where a process's command line is cut in the table.
const gpuCmdWidth = 80

// writeGPUTable prints the human view: versions, one row per GPU, then the
// compute processes. Memory is in GiB (2^30), as the engines print it.
func writeGPUTable(w io.Writer, s *gpu.Snapshot) {
	orUnknown := func(v string) string {
		if v == "" {
			return "unknown"
		}
		return v
	}
	fmt.Fprintf(w, "Driver %s, CUDA %s. Host %s, read from %s at %s.\n\n",
		orUnknown(s.DriverVersion), orUnknown(s.CUDADriverVersion), orUnknown(s.Host),
		s.Source, s.TakenAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	if len(s.GPUs) == 0 {
		fmt.Fprintln(w, "No NVIDIA GPUs found.")
		return
	}

	nameW := len("NAME")
	for _, g := range s.GPUs {
		nameW = max(nameW, len(g.Name))
	}
	fmt.Fprintf(w, "GPU  %-*s  %7s  %7s  %7s  %4s  %5s\n", nameW, "NAME", "TOTAL", "USED", "FREE", "MEM", "PROCS")
	var notes []string
	anyProcs := false
	for _, g := range s.GPUs {
		total := g.CUDATotalBytes()
		pct := 0.0
		if total > 0 {
			pct = 100 * float64(min(g.MemoryUsedBytes, total)) / float64(total)
		}
		fmt.Fprintf(w, "%3d  %-*s  %7.2f  %7.2f  %7.2f  %3.0f%%  %5d\n",
			g.Index, nameW, g.Name, gpuGiB(total), gpuGiB(g.MemoryUsedBytes), gpuGiB(g.MemoryFreeBytes), pct, len(g.Processes))
		anyProcs = anyProcs || len(g.Processes) > 0
		if g.MIGMode == gpu.MIGEnabled {
			notes = append(notes, fmt.Sprintf("GPU %d has MIG enabled: its figures are the whole GPU, not one MIG instance.", g.Index))
		}
		if g.MemoryReservedBytes == 0 {
			notes = append(notes, fmt.Sprintf("GPU %d: the driver has no v2 memory call, so TOTAL includes the memory it reserves (USED counts it too).", g.Index))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Memory in GiB. TOTAL is what CUDA and the engines see: NVML's total less the memory the driver reserves.")
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}

	fmt.Fprintln(w)
	if !anyProcs {
		fmt.Fprintln(w, "No compute processes.")
		return
	}
	fmt.Fprintln(w, "Compute processes:")
	fmt.Fprintf(w, "GPU  %7s  %7s  %s\n", "PID", "USED", "COMMAND")
	for _, g := range s.GPUs {
		for _, p := range g.Processes {
			fmt.Fprintf(w, "%3d  %7d  %7.2f  %s\n", g.Index, p.PID, gpuGiB(p.UsedMemoryBytes), gpuProcessLabel(p))
		}
	}
}

// gpuProcessLabel is the command line, else the process name, cut to gpuCmdWidth.
func gpuProcessLabel(p gpu.Process) string {
	label := strings.Join(p.Cmdline, " ")
	if label == "" {
		label = p.Name
	}
	if label == "" {
		return "(exited, or not visible from here)"
	}
	label = strings.Map(func(r rune) rune { // keep control characters out of the terminal
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, label)
	if r := []rune(label); len(r) > gpuCmdWidth {
		label = string(r[:gpuCmdWidth-3]) + "..."
	}
	return label
}

func gpuGiB(b uint64) float64 { return float64(b) / (1 << 30) }
