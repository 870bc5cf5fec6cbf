package docker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func frame(stream byte, p string) string {
	var hdr [8]byte
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(p)))
	return string(hdr[:]) + p
}

type demuxed struct {
	stream int
	text   string
}

func TestDemux(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []demuxed
		err  string
	}{
		{"empty", "", nil, ""},
		{"frames in order", frame(1, "out 1\n") + frame(2, "err 1\n") + frame(1, "out 2\n"),
			[]demuxed{{1, "out 1\n"}, {2, "err 1\n"}, {1, "out 2\n"}}, ""},
		{"empty frame", frame(1, "") + frame(2, "x"), []demuxed{{1, ""}, {2, "x"}}, ""},
		{"raw stream (TTY)", "plain text\nmore\n", []demuxed{{1, "plain te"}, {1, "xt\nmore\n"}}, ""},
		{"short raw stream", "hi\n", []demuxed{{1, "hi\n"}}, ""},
		{"cut inside a frame", frame(1, "whole\n") + frame(2, "cut here")[:12], []demuxed{{1, "whole\n"}}, "cut inside a frame"},
		{"cut inside a header", frame(1, "whole\n") + "\x01\x00\x00", []demuxed{{1, "whole\n"}}, "cut inside a frame header"},
		{"garbage after frames", frame(1, "ok\n") + "garbage!", []demuxed{{1, "ok\n"}}, "bad frame header"},
		{"huge frame", "\x01\x00\x00\x00\xff\xff\xff\xff", nil, "frame of 4294967295 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []demuxed
			err := Demux(strings.NewReader(tt.in), func(s int, p []byte) error {
				got = append(got, demuxed{s, string(p)})
				return nil
			})
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("error %v, want %q", err, tt.err)
			}
		})
	}
}

func FuzzDemux(f *testing.F) {
	f.Add([]byte(frame(1, "2026-01-02T03:04:05.000000001Z out\n") + frame(2, "err")))
	f.Add([]byte("raw text"))
	f.Add([]byte("\x02\x00\x00\x00\x00\x00\x00\x05abc"))
	f.Fuzz(func(t *testing.T, b []byte) {
		total := 0
		_ = Demux(bytes.NewReader(b), func(s int, p []byte) error {
			if s != Stdout && s != Stderr && s != 0 {
				t.Fatalf("stream %d", s)
			}
			total += len(p)
			splitTimestamp(p)
			return nil
		})
		if total > len(b) {
			t.Fatalf("%d payload bytes from %d input bytes", total, len(b))
		}
	})
}

func TestSplitTimestamp(t *testing.T) {
	for _, tt := range []struct {
		in, rest string
		ok       bool
	}{
		{"2026-01-02T03:04:05.123456789Z hello\n", "hello\n", true},
		{"2026-01-02T03:04:05Z x", "x", true},
		{"no timestamp here", "no timestamp here", false},
		{"2026-13-02T03:04:05.123456789Z bad month", "2026-13-02T03:04:05.123456789Z bad month", false},
		{"", "", false},
	} {
		_, rest, ok := splitTimestamp([]byte(tt.in))
		if string(rest) != tt.rest || ok != tt.ok {
			t.Errorf("splitTimestamp(%q) = %q, %v", tt.in, rest, ok)
		}
	}
}

// TestSyncLog: the mirror copies each line once, however often it syncs,
// also lines that share a timestamp across two syncs.
func TestSyncLog(t *testing.T) {
	f, d := newTestDriver(t)
	ctx := context.Background()
	spec := testSpec(t)
	p, err := d.StartContainer(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	id := p.ID
	f.log(id, Stdout, "one\n")
	f.log(id, Stderr, "two\n")
	if err := d.SyncLog(ctx, id, spec.LogPath); err != nil {
		t.Fatal(err)
	}
	if err := d.SyncLog(ctx, id, spec.LogPath); err != nil {
		t.Fatal(err)
	}
	same := time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)
	f.logAt(id, same, "three (same time)\n")
	if err := d.SyncLog(ctx, id, spec.LogPath); err != nil {
		t.Fatal(err)
	}
	f.logAt(id, same, "four (same time)\n")
	f.log(id, Stdout, "partial line ")
	f.log(id, Stdout, "ends here\n")
	if err := d.SyncLog(ctx, id, spec.LogPath); err != nil {
		t.Fatal(err)
	}
	want := "one\ntwo\nthree (same time)\nfour (same time)\npartial line ends here\n"
	if got := readFile(t, spec.LogPath); got != want {
		t.Errorf("mirror %q, want %q", got, want)
	}
	// A container mirrored into neither file is left alone.
	if err := d.SyncLog(ctx, "someone-else", spec.LogPath); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, spec.LogPath); got != want {
		t.Errorf("mirror of another container changed the log: %q", got)
	}
}

// TestSyncLogRollout: during a create-before-destroy rollout the new
// instance takes the log over and the old one keeps mirroring into the
// previous log until it is stopped.
func TestSyncLogRollout(t *testing.T) {
	f, d := newTestDriver(t)
	ctx := context.Background()
	spec := testSpec(t)
	old, err := d.StartContainer(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	f.log(old.ID, Stdout, "old serving\n")
	d.SyncLog(ctx, old.ID, spec.LogPath)
	spec.LaunchID = "fedcba9876543210"
	cur, err := d.StartContainer(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	f.log(cur.ID, Stdout, "new starting\n")
	f.log(old.ID, Stdout, "old still serving\n")
	d.SyncLog(ctx, cur.ID, spec.LogPath)
	if err := d.Stop(ctx, *old, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, spec.LogPath); got != "new starting\n" {
		t.Errorf("log %q", got)
	}
	if got := readFile(t, previousLog(spec.LogPath)); got != "old serving\nold still serving\nstopped after t=1\n" {
		t.Errorf("previous log %q", got)
	}
}

// TestSyncLogClaimAndRotate: a log without a cursor (a container adopted
// after a killed apply) is taken over; a mirror past MaxLogBytes becomes
// the previous log.
func TestSyncLogClaimAndRotate(t *testing.T) {
	f, d := newTestDriver(t)
	ctx := context.Background()
	spec := testSpec(t)
	spec.LogPath = ""
	p, err := d.StartContainer(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	logPath := testSpec(t).LogPath
	f.log(p.ID, Stdout, strings.Repeat("x", 60)+"\n")
	old := MaxLogBytes
	MaxLogBytes = 100
	t.Cleanup(func() { MaxLogBytes = old })
	if err := d.SyncLog(ctx, p.ID, logPath); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, logPath); len(got) != 61 {
		t.Fatalf("claimed log %q", got)
	}
	f.log(p.ID, Stdout, strings.Repeat("y", 60)+"\n")
	if err := d.SyncLog(ctx, p.ID, logPath); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, logPath); got != "" {
		t.Errorf("log after rotation %q", got)
	}
	if got := readFile(t, previousLog(logPath)); len(got) != 122 {
		t.Errorf("rotated log has %d bytes", len(got))
	}
	f.log(p.ID, Stdout, "after\n")
	d.SyncLog(ctx, p.ID, logPath)
	if got := readFile(t, logPath); got != "after\n" {
		t.Errorf("log after rotation %q", got)
	}
	if _, err := os.Stat(cursorPath(previousLog(logPath))); err == nil {
		t.Error("the rotated log kept a cursor")
	}
}
