package gpu_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/gpu/gputest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixtures are the snapshot files in testdata that other packages' tests
// use. They are built with gputest, so the files and the builder cannot drift
// apart; -update rewrites them.
var fixtures = map[string]func() *gpu.Snapshot{
	"h100x8.json": func() *gpu.Snapshot {
		return gputest.H100s(8, gputest.WithHost("dgx-h100-01"),
			gputest.WithProcess(3, 48213, 4608*gputest.MiB, "/usr/bin/python3", "/home/alice/train.py", "--epochs", "3", "--batch-size", "64"))
	},
	"h200x1.json": func() *gpu.Snapshot {
		return gputest.H200s(1, gputest.WithHost("h200-01"), gputest.WithDriver("570.124.06", "12.8"))
	},
	"a100-40gbx2.json": func() *gpu.Snapshot {
		return gputest.A100s40(2, gputest.WithHost("a100-01"), gputest.WithDriver("535.183.01", "12.2"))
	},
	"l4x1.json": func() *gpu.Snapshot {
		return gputest.L4s(1, gputest.WithHost("l4-01"), gputest.WithDriver("550.127.05", "12.4"))
	},
}

func TestFixtures(t *testing.T) {
	for name, build := range fixtures {
		t.Run(name, func(t *testing.T) {
			want := build()
			var buf bytes.Buffer
			if err := gpu.WriteSnapshot(&buf, want); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name)
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			onDisk, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if !bytes.Equal(onDisk, buf.Bytes()) {
				t.Errorf("%s differs from what gputest builds; run go test ./internal/gpu -update\n got:\n%s", path, buf.String())
			}
			got, err := gpu.ReadSnapshotFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got.Source != "file:"+path {
				t.Errorf("Source = %q", got.Source)
			}
			if got.Fingerprint() != want.Fingerprint() {
				t.Error("fingerprint changed through the file")
			}
		})
	}
}

func TestReadSnapshotFileErrors(t *testing.T) {
	valid, err := os.ReadFile("testdata/l4x1.json")
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) string {
		if !strings.Contains(string(valid), old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(string(valid), old, new, 1)
	}
	twoGPUs, err := os.ReadFile("testdata/a100-40gbx2.json")
	if err != nil {
		t.Fatal(err)
	}
	uuids := strings.Split(string(twoGPUs), `"uuid": "`)
	sameUUID := strings.Replace(string(twoGPUs), uuids[2][:40], uuids[1][:40], 1)

	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"empty", " \n", []string{"the file is empty", "roofline gpu -json"}},
		{"syntax", "{\n  \"format_version\": 1,\n  \"gpus\": [,]\n}", []string{"line 3, column 13"}},
		{"not an object", `[1, 2]`, []string{"is a JSON object", "array"}},
		{"no version", `{"gpus": []}`, []string{"no format_version", "roofline gpu -json"}},
		{"newer version", edit(`"format_version": 1`, `"format_version": 2`), []string{"format_version 2 is newer", "upgrade roofline"}},
		{"version zero", edit(`"format_version": 1`, `"format_version": 0`), []string{"format_version 0 is not a known"}},
		{"version string", edit(`"format_version": 1`, `"format_version": "1"`), []string{"whole number"}},
		{"unknown field", edit(`"mig_mode"`, `"mig_mod"`), []string{`unknown field "mig_mod"`}},
		{"wrong type", edit(`"index": 0`, `"index": "zero"`), []string{"gpus.index must be int", "line 10"}},
		{"trailing data", string(valid) + `{"format_version": 1}`, []string{"line 24, column 2", "after top-level value"}},
		{"negative index", edit(`"index": 0`, `"index": -1`), []string{"index -1 is negative"}},
		{"duplicate index", strings.Replace(string(twoGPUs), `"index": 1`, `"index": 0`, 1), []string{"index 0 appears twice"}},
		{"duplicate uuid", sameUUID, []string{"appears twice"}},
		{"no total", edit(`"memory_total_bytes": 24152899584`, `"memory_total_bytes": 0`), []string{"memory_total_bytes is missing"}},
		{"free too big", edit(`"memory_free_bytes": 23654825984`, `"memory_free_bytes": 24152899584`), []string{"memory_free_bytes", "exceeds total minus reserved"}},
		{"reserved too big", edit(`"memory_reserved_bytes": 498073600`, `"memory_reserved_bytes": 99999999999`), []string{"memory_reserved_bytes", "exceeds"}},
		{"bad pid", edit(`"processes": []`, `"processes": [{"pid": 0, "used_memory_bytes": 1, "name": "x"}]`), []string{"pid 0 is not a valid pid"}},
		{"time out of range", edit(`"taken_at": "2026-01-15T09:30:00Z"`, `"taken_at": "0001-01-01T00:00:00+01:00"`), []string{"taken_at", "out of range"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "inv.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := gpu.ReadSnapshotFile(path)
			if err == nil {
				t.Fatalf("no error; read %+v", s)
			}
			for _, want := range append(tc.want, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestReadSnapshotFileMissingAndHuge(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.json")
	_, err := gpu.ReadSnapshotFile(missing)
	if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "roofline gpu -json > "+missing) {
		t.Errorf("missing file: %v", err)
	}
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(17 << 20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	if _, err := gpu.ReadSnapshotFile(huge); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Errorf("huge file: %v", err)
	}
}

func TestWriteSnapshotNormalizes(t *testing.T) {
	s := gputest.H100s(3,
		gputest.WithProcess(1, 900, gputest.GiB, "b"),
		gputest.WithProcess(1, 100, gputest.GiB, "a"))
	s.GPUs[0], s.GPUs[2] = s.GPUs[2], s.GPUs[0]
	s.GPUs[0].Processes = nil
	s.TakenAt = s.TakenAt.In(time.FixedZone("CET", 3600))
	before := s.Clone()

	var buf bytes.Buffer
	if err := gpu.WriteSnapshot(&buf, s); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, before) {
		t.Error("WriteSnapshot changed its argument")
	}
	out := buf.String()
	if !strings.HasSuffix(out, "}\n") || !strings.Contains(out, `"taken_at": "2026-01-15T09:30:00Z"`) {
		t.Errorf("not indented UTC JSON with a final newline:\n%s", out)
	}
	got, err := gpu.DecodeSnapshot(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got.GPUs {
		if g.Index != i || g.Processes == nil {
			t.Errorf("GPU %d at position %d, processes %v", g.Index, i, g.Processes)
		}
	}
	if p := got.GPUs[1].Processes; len(p) != 2 || p[0].PID != 100 {
		t.Errorf("processes not sorted by pid: %+v", p)
	}
	var again bytes.Buffer
	if err := gpu.WriteSnapshot(&again, got); err != nil {
		t.Fatal(err)
	}
	if again.String() != out {
		t.Error("write → read → write is not byte-stable")
	}
	if err := gpu.WriteSnapshot(&again, nil); err == nil {
		t.Error("nil snapshot written")
	}
}

func TestFingerprint(t *testing.T) {
	base := func() *gpu.Snapshot {
		return gputest.H100s(2, gputest.WithProcess(0, 10, gputest.GiB, "python3"))
	}
	ref := base().Fingerprint()
	if !strings.HasPrefix(ref, "sha256:") || len(ref) != len("sha256:")+64 {
		t.Fatalf("fingerprint %q", ref)
	}
	same := map[string]func(s *gpu.Snapshot){
		"time":          func(s *gpu.Snapshot) { s.TakenAt = s.TakenAt.Add(time.Hour) },
		"host":          func(s *gpu.Snapshot) { s.Host = "other" },
		"source":        func(s *gpu.Snapshot) { s.Source = "file:x.json" },
		"warnings":      func(s *gpu.Snapshot) { s.Warnings = []string{"w"} },
		"process name":  func(s *gpu.Snapshot) { s.GPUs[0].Processes[0].Name = "" },
		"GPU order":     func(s *gpu.Snapshot) { s.GPUs[0], s.GPUs[1] = s.GPUs[1], s.GPUs[0] },
		"nil processes": func(s *gpu.Snapshot) { s.GPUs[1].Processes = nil },
	}
	differ := map[string]func(s *gpu.Snapshot){
		"free":         func(s *gpu.Snapshot) { s.GPUs[1].MemoryFreeBytes-- },
		"used":         func(s *gpu.Snapshot) { s.GPUs[1].MemoryUsedBytes++ },
		"total":        func(s *gpu.Snapshot) { s.GPUs[1].MemoryTotalBytes++ },
		"reserved":     func(s *gpu.Snapshot) { s.GPUs[1].MemoryReservedBytes++ },
		"uuid":         func(s *gpu.Snapshot) { s.GPUs[1].UUID = "GPU-x" },
		"name":         func(s *gpu.Snapshot) { s.GPUs[1].Name = "NVIDIA H200" },
		"index":        func(s *gpu.Snapshot) { s.GPUs[1].Index = 5 },
		"new process":  func(s *gpu.Snapshot) { s.GPUs[1].Processes = append(s.GPUs[1].Processes, gpu.Process{PID: 11}) },
		"process pid":  func(s *gpu.Snapshot) { s.GPUs[0].Processes[0].PID = 12 },
		"process used": func(s *gpu.Snapshot) { s.GPUs[0].Processes[0].UsedMemoryBytes++ },
		"GPU removed":  func(s *gpu.Snapshot) { s.GPUs = s.GPUs[:1] },
		"driver":       func(s *gpu.Snapshot) { s.DriverVersion = "570.1" },
		"cuda":         func(s *gpu.Snapshot) { s.CUDADriverVersion = "12.8" },
		// Field boundaries must not shift: "ab"+"c" is not "a"+"bc".
		"shifted strings": func(s *gpu.Snapshot) {
			s.GPUs[1].UUID += s.GPUs[1].Name[:1]
			s.GPUs[1].Name = s.GPUs[1].Name[1:]
		},
	}
	for name, mutate := range same {
		s := base()
		mutate(s)
		if s.Fingerprint() != ref {
			t.Errorf("%s changed the fingerprint", name)
		}
	}
	for name, mutate := range differ {
		s := base()
		mutate(s)
		if s.Fingerprint() == ref {
			t.Errorf("%s did not change the fingerprint", name)
		}
	}
	var nilSnap *gpu.Snapshot
	if nilSnap.Fingerprint() == ref {
		t.Error("nil snapshot has the fingerprint of a real one")
	}
}

func TestSnapshotHelpers(t *testing.T) {
	s := gputest.H100s(2, gputest.WithProcess(1, 7, gputest.GiB, "x", "--flag"))
	if g, ok := s.GPU(1); !ok || g.Index != 1 {
		t.Errorf("GPU(1) = %v, %v", g, ok)
	}
	if g, ok := s.GPU(2); ok || g != nil {
		t.Errorf("GPU(2) = %v, %v", g, ok)
	}
	var nilSnap *gpu.Snapshot
	if _, ok := nilSnap.GPU(0); ok || nilSnap.Clone() != nil {
		t.Error("nil snapshot helpers")
	}
	// GPU returns a pointer into the snapshot, so callers may update it.
	g, _ := s.GPU(0)
	g.MemoryFreeBytes = 1
	if s.GPUs[0].MemoryFreeBytes != 1 {
		t.Error("GPU() returned a copy")
	}

	c := s.Clone()
	c.GPUs[1].Processes[0].Cmdline[1] = "changed"
	c.GPUs[0].Name = "changed"
	if s.GPUs[1].Processes[0].Cmdline[1] != "--flag" || s.GPUs[0].Name == "changed" {
		t.Error("Clone shares memory with the original")
	}

	odd := gpu.GPU{MemoryTotalBytes: 1, MemoryReservedBytes: 2}
	if odd.CUDATotalBytes() != 0 {
		t.Error("CUDATotalBytes underflows")
	}
}

func TestFileInventory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inv.json")
	write := func(s *gpu.Snapshot) {
		var buf bytes.Buffer
		if err := gpu.WriteSnapshot(&buf, s); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inv := gpu.NewFile(path)
	write(gputest.L4s(1))
	first, err := inv.Snapshot(context.Background())
	if err != nil || len(first.GPUs) != 1 {
		t.Fatalf("%v %v", first, err)
	}
	write(gputest.L4s(2)) // the file is read again on every Snapshot
	second, err := inv.Snapshot(context.Background())
	if err != nil || len(second.GPUs) != 2 {
		t.Fatalf("second read: %v %v", second, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := inv.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	for name := range fixtures {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"", "{}", "null", `{"format_version":1}`, `{"format_version":1,"gpus":null}`,
		`{"format_version":2}`, `{"format_version":1e400}`, `{"format_version":1,"gpus":[{"index":0,"memory_total_bytes":1,"processes":[{"pid":1}]}]}`,
		`{"format_version":1,"taken_at":"9999-12-31T23:00:00-02:00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := gpu.DecodeSnapshot(data)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := gpu.WriteSnapshot(&buf, s); err != nil {
			t.Fatalf("decoded snapshot does not write: %v", err)
		}
		back, err := gpu.DecodeSnapshot(buf.Bytes())
		if err != nil {
			t.Fatalf("written snapshot does not read back: %v\n%s", err, buf.String())
		}
		if back.Fingerprint() != s.Fingerprint() {
			t.Fatal("fingerprint changed through write and read")
		}
	})
}
