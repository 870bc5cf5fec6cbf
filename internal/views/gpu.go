package views

import (
	"fmt"
	"io"
	"strings"

	"github.com/roofline/roofline/internal/gpu"
)

// GPU is roofline gpu's view.
type GPU interface {
	Snapshot(s *gpu.Snapshot) error
}

// NewGPU returns the gpu view of type vt.
func NewGPU(vt ViewType, v *View) GPU {
	if vt == ViewJSON {
		return GPUJSON{v}
	}
	return GPUHuman{v}
}

// GPUJSON writes the snapshot in the -inventory file format.
type GPUJSON struct{ view *View }

func (g GPUJSON) Snapshot(s *gpu.Snapshot) error {
	g.view.gpuWarnings(s)
	if err := gpu.WriteSnapshot(g.view.Out, s); err != nil {
		return fmt.Errorf("writing the snapshot: %w", err)
	}
	return nil
}

// GPUHuman prints the table.
type GPUHuman struct{ view *View }

func (g GPUHuman) Snapshot(s *gpu.Snapshot) error {
	g.view.gpuWarnings(s)
	writeGPUTable(g.view.Out, s)
	return nil
}

// gpuWarnings names, on stderr, the figures NVML could not give.
func (v *View) gpuWarnings(s *gpu.Snapshot) {
	for _, w := range s.Warnings {
		v.Warnf("%s", w)
	}
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
