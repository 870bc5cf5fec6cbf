package journal

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func entry(server, kind string, tput float64) Entry {
	e := Entry{
		Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Kind: kind, Server: server,
		Engine: EngineInfo{Kind: "vllm", Version: "0.16.0", Identity: "vllm/vllm-openai@sha256:" + strings.Repeat("a", 64)},
		Model:  ModelInfo{Name: "qwen3-8b", Path: "/models/qwen3-8b", Fingerprint: "sha256:0123"},
		GPUs:   []string{"NVIDIA H200", "NVIDIA H200"}, DriverVersion: "570.124.06", CUDAVersion: "12.8",
		Argv: []string{"vllm", "serve", "/models/qwen3-8b", "--served-model-name", "qwen3-8b"},
	}
	if tput > 0 {
		pass := true
		e.Bench = &BenchSummary{MaxConcurrency: 16, NumPrompts: 200, InputTokens: 1024, OutputTokens: 256,
			Completed: 200, OutputThroughput: tput, Passed: &pass}
	}
	if kind == KindRollout {
		e.Gate = &GateSummary{Passed: true, Health: "pass", Smoke: "pass", Bench: "skipped"}
	}
	return e
}

func TestAppendRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", FileName)
	want := []Entry{entry("a", KindRollout, 0), entry("a", KindBench, 1500), entry("b", KindBench, 900)}
	for _, e := range want {
		if err := Append(path, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i].Line = i + 1
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, want)
	}
	raw, _ := os.ReadFile(path)
	if n := strings.Count(string(raw), "\n"); n != 3 || !strings.HasSuffix(string(raw), "}\n") {
		t.Fatalf("want 3 newline-terminated lines, file is:\n%s", raw)
	}
}

func TestReadMissingFile(t *testing.T) {
	got, err := Read(filepath.Join(t.TempDir(), FileName))
	if err != nil || got != nil {
		t.Fatalf("missing journal: %v, %v; want an empty journal", got, err)
	}
}

func TestReadBadLines(t *testing.T) {
	good1 := `{"time":"2026-03-01T12:00:00Z","kind":"bench","server":"a","engine":{},"model":{}}`
	good2 := `{"time":"2026-03-01T12:01:00Z","kind":"rollout","server":"b","engine":{},"model":{}}`
	tests := []struct {
		name    string
		content string
		want    []string // servers of the entries read
		bad     []BadLine
	}{
		{"torn last line", good1 + "\n" + good2 + "\n" + `{"time":"2026-03-01T12:0`, []string{"a", "b"}, []BadLine{{Line: 3, Torn: true}}},
		{"garbage in the middle", good1 + "\nnot json\n" + good2 + "\n", []string{"a", "b"}, []BadLine{{Line: 2}}},
		{"blank lines skipped", "\n" + good1 + "\n\n", []string{"a"}, nil},
		{"last line without newline but whole", good1 + "\n" + good2, []string{"a", "b"}, nil},
		{"wrong type", `{"time":"yesterday","kind":"bench"}` + "\n" + good2 + "\n", []string{"b"}, []BadLine{{Line: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Read(path)
			var servers []string
			for _, e := range got {
				servers = append(servers, e.Server)
			}
			if !reflect.DeepEqual(servers, tt.want) {
				t.Errorf("entries %q, want %q", servers, tt.want)
			}
			var be *BadLinesError
			if len(tt.bad) == 0 {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			if !errors.As(err, &be) {
				t.Fatalf("error %v, want *BadLinesError", err)
			}
			if len(be.Lines) != len(tt.bad) {
				t.Fatalf("bad lines %+v, want %+v", be.Lines, tt.bad)
			}
			for i, b := range tt.bad {
				if be.Lines[i].Line != b.Line || be.Lines[i].Torn != b.Torn {
					t.Errorf("bad line %+v, want %+v", be.Lines[i], b)
				}
			}
		})
	}
}

// TestAppendAfterTornLine: a crash mid-write must spoil only its own line,
// not the next entry appended after it.
func TestAppendAfterTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(`{"time":"2026-03-01T12:00:00Z","kind":"bench","ser`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Append(path, entry("a", KindBench, 100)); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	var be *BadLinesError
	if !errors.As(err, &be) || len(be.Lines) != 1 || be.Lines[0].Line != 1 || be.Lines[0].Torn {
		t.Fatalf("want line 1 reported bad (not torn: it is no longer last), got %v", err)
	}
	if len(got) != 1 || got[0].Server != "a" || got[0].Line != 2 {
		t.Fatalf("the appended entry was not read back: %+v", got)
	}
}

func TestConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := entry("s", KindBench, float64(i+1))
			e.Argv = append(e.Argv, strings.Repeat("x", 5000)) // past any small atomic-write size
			if err := Append(path, e); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := Read(path)
	if err != nil || len(got) != 20 {
		t.Fatalf("%d entries, %v; want 20 intact lines", len(got), err)
	}
}

func TestLastBench(t *testing.T) {
	es := []Entry{entry("a", KindBench, 100), entry("b", KindBench, 200), entry("a", KindRollout, 0), entry("a", KindRollout, 300), entry("c", KindRollout, 0)}
	tests := []struct {
		server string
		want   float64
	}{{"a", 300}, {"b", 200}, {"c", 0}, {"zzz", 0}}
	for _, tt := range tests {
		got := LastBench(es, tt.server)
		switch {
		case tt.want == 0 && got != nil:
			t.Errorf("%s: got %+v, want none", tt.server, got)
		case tt.want != 0 && (got == nil || got.Bench.OutputThroughput != tt.want):
			t.Errorf("%s: got %+v, want throughput %v", tt.server, got, tt.want)
		}
	}
	if n := len(ForServer(es, "a")); n != 3 {
		t.Errorf("ForServer(a) = %d entries, want 3", n)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"time":"2026-03-01T12:00:00Z","kind":"bench","server":"a"}` + "\n"))
	f.Add([]byte("\n\nx\n{\"kind\":1}\n{\"ti"))
	f.Fuzz(func(t *testing.T, in []byte) {
		es, err := read("fuzz", strings.NewReader(string(in)))
		var be *BadLinesError
		if err != nil && !errors.As(err, &be) {
			t.Fatalf("unexpected error kind %v", err)
		}
		lines := strings.Count(string(in), "\n") + 1
		if len(es) > lines {
			t.Fatalf("%d entries from %d lines", len(es), lines)
		}
	})
}
