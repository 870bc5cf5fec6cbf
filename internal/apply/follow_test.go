package apply

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// steps is a reader that answers with each step in turn: data, io.EOF (the
// end of the file for now) or another error.
type steps []any

func (s *steps) Read(p []byte) (int, error) {
	if len(*s) == 0 {
		return 0, io.EOF
	}
	st := (*s)[0]
	*s = (*s)[1:]
	switch v := st.(type) {
	case string:
		return copy(p, v), nil
	case error:
		return 0, v
	}
	panic("bad step")
}

func TestFollowLog(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name    string
		steps   steps
		cancel  bool
		want    string
		wantErr error
	}{
		{name: "reads past the end as the file grows", steps: steps{"a\n", io.EOF, io.EOF, "b\n", boom}, want: "a\nb\n", wantErr: boom},
		{name: "a read error ends it", steps: steps{boom}, wantErr: boom},
		{name: "cancelled at the end", steps: steps{"a\n"}, cancel: true, want: "a\n", wantErr: context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var got strings.Builder
			fn := func(b []byte) {
				got.Write(b)
				if c.cancel {
					cancel()
				}
			}
			err := FollowLog(ctx, &c.steps, time.Millisecond, fn)
			if !errors.Is(err, c.wantErr) || got.String() != c.want {
				t.Errorf("FollowLog = %q, %v; want %q, %v", got.String(), err, c.want, c.wantErr)
			}
		})
	}
}

// TestFollowLogFile: lines appended to a real file by another writer arrive.
func TestFollowLogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.log")
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan string, 16)
	done := make(chan error, 1)
	go func() { done <- FollowLog(ctx, r, 5*time.Millisecond, func(b []byte) { got <- string(b) }) }()
	var seen strings.Builder
	for _, line := range []string{"one\n", "two\n"} {
		if _, err := w.WriteString(line); err != nil {
			t.Fatal(err)
		}
		for !strings.HasSuffix(seen.String(), line) {
			select {
			case s := <-got:
				seen.WriteString(s)
			case <-ctx.Done():
				t.Fatalf("%q never arrived (got %q)", line, seen.String())
			}
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v", err)
	}
	if seen.String() != "one\ntwo\n" {
		t.Errorf("followed %q", seen.String())
	}
}

// logView records what ShowLog shows; copied is closed once Copy is done.
type logView struct {
	lines, copy string
	copied      chan struct{}
	mu          sync.Mutex
	followed    strings.Builder
}

func (v *logView) Lines(ls []string) { v.lines = strings.Join(ls, "|") }
func (v *logView) Copy(r io.Reader) error {
	b, err := io.ReadAll(r)
	v.copy = string(b)
	if v.copied != nil {
		close(v.copied)
	}
	return err
}
func (v *logView) Follow(b []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.followed.Write(b)
}
func (v *logView) following() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.followed.String()
}

func TestShowLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "engine.log")
	if err := os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	v := &logView{}
	if err := ShowLog(context.Background(), open(), 2, false, v); err != nil || v.lines != "two|three" || v.copy != "" {
		t.Errorf("-n 2: %v, lines %q, copied %q", err, v.lines, v.copy)
	}
	v = &logView{}
	if err := ShowLog(context.Background(), open(), 0, false, v); err != nil || v.copy != "one\ntwo\nthree\n" || v.lines != "" {
		t.Errorf("-n 0: %v, copied %q", err, v.copy)
	}

	// -f: the whole log, then only what it gains, until ctx ends.
	v = &logView{copied: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ShowLog(ctx, open(), 0, true, v) }()
	<-v.copied // read to the end: what is appended now is followed
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("four\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for deadline := time.Now().Add(20 * time.Second); v.following() == "" && time.Now().Before(deadline); {
		select {
		case err := <-done:
			t.Fatalf("ShowLog returned before ctx ended: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("follow ended with %v, want context.Canceled", err)
	}
	if v.copy != "one\ntwo\nthree\n" || v.following() != "four\n" {
		t.Errorf("-f: copied %q, followed %q", v.copy, v.following())
	}
}
