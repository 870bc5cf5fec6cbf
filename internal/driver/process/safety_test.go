package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

type sent struct {
	pid int
	sig syscall.Signal
}

// fakeProc writes a /proc tree: a boot id and, per pid, a stat line with
// its group and session (state S, start time 100).
func fakeProc(t *testing.T, procs map[int][2]int) procFS {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sys/kernel/random"), 0o755)
	os.WriteFile(filepath.Join(dir, "sys/kernel/random/boot_id"), []byte("boot-1\n"), 0o644)
	for pid, gs := range procs {
		p := filepath.Join(dir, strconv.Itoa(pid))
		os.MkdirAll(p, 0o755)
		stat := fmt.Sprintf("%d (engine) S 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n", pid, gs[0], gs[1])
		os.WriteFile(filepath.Join(p, "stat"), []byte(stat), 0o644)
		os.WriteFile(filepath.Join(p, "cmdline"), []byte("engine\x00"), 0o644)
		os.WriteFile(filepath.Join(p, "environ"), []byte("A=1\x00"), 0o644)
	}
	return procFS(dir)
}

// TestStopRefusesGroupsNotOurs: a state that records group 1 (or init, or
// roofline's own group, or a group the process no longer leads) is refused
// before any signal. The signals go to a recorder: never a real kill(-1).
func TestStopRefusesGroupsNotOurs(t *testing.T) {
	own := syscall.Getpgrp()
	for _, tc := range []struct {
		name  string
		h     state.Instance
		procs map[int][2]int // pid → group, session
		want  string
	}{
		{"pgid 1", state.Instance{PID: 4242, Group: 1, StartTime: 100, BootID: "boot-1"}, map[int][2]int{4242: {1, 1}}, "1 or less"},
		{"init", state.Instance{PID: 1, Group: 1, StartTime: 100, BootID: "boot-1"}, map[int][2]int{1: {1, 1}}, "1 or less"},
		{"pgid 0", state.Instance{PID: 4242, Group: 0, StartTime: 100, BootID: "boot-1"}, map[int][2]int{4242: {0, 0}}, "no longer leads"},
		{"roofline's group", state.Instance{PID: 4243, Group: own, StartTime: 100, BootID: "boot-1"}, map[int][2]int{4243: {own, own}}, "roofline's own"},
		{"recorded group not the leader's", state.Instance{PID: 4244, Group: 4300, StartTime: 100, BootID: "boot-1"}, map[int][2]int{4244: {4300, 4300}, 4300: {4300, 4300}}, "not the process's own"},
		{"left its session", state.Instance{PID: 4245, Group: 4245, StartTime: 100, BootID: "boot-1"}, map[int][2]int{4245: {5000, 5000}}, "no longer leads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []sent
			d := New()
			d.proc = fakeProc(t, tc.procs)
			d.kill = func(pid int, sig syscall.Signal) error { calls = append(calls, sent{pid, sig}); return nil }
			h := tc.h
			err := d.Stop(context.Background(), h, 10*time.Millisecond)
			var re *RefusedError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Nothing was signalled") {
				t.Fatalf("err = %v, want a refusal saying %q", err, tc.want)
			}
			if len(calls) > 0 {
				t.Fatalf("signals sent despite the refusal: %v", calls)
			}
		})
	}
}

// The same checks let a real target through (so the refusals above are
// not a driver that refuses everything).
func TestStopSignalsAGroupThatIsOurs(t *testing.T) {
	var calls []sent
	d := New()
	d.proc = fakeProc(t, map[int][2]int{4246: {4246, 4246}, 4247: {4246, 4246}})
	d.kill = func(pid int, sig syscall.Signal) error { calls = append(calls, sent{pid, sig}); return nil }
	d.KillWait = 10 * time.Millisecond
	h := state.Instance{PID: 4246, Group: 4246, StartTime: 100, BootID: "boot-1"}
	err := d.Stop(context.Background(), h, 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "still there") {
		t.Fatalf("err = %v (the recorder kills nothing, so the processes stay)", err)
	}
	want := fmt.Sprint([]sent{{-4246, syscall.SIGTERM}, {4246, syscall.SIGTERM}, {4247, syscall.SIGTERM}, {-4246, syscall.SIGKILL}, {4246, syscall.SIGKILL}, {4247, syscall.SIGKILL}})
	if fmt.Sprint(calls) != want {
		t.Fatalf("signals %v, want %v", calls, want)
	}
}

// TestStopFindsProcessesThatLeftTheSession: an engine child that called
// setsid (and ignores SIGTERM) is found by the launch id in its
// environment and stopped with the engine.
func TestStopFindsProcessesThatLeftTheSession(t *testing.T) {
	d := New()
	spec := helperSpec(t, "e", "escape")
	spec.Env[driver.LaunchEnv] = fmt.Sprintf("test-escape-%d", os.Getpid())
	h, err := d.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	stopAll(t, d, h)
	if h.LaunchID != spec.Env[driver.LaunchEnv] {
		t.Fatalf("handle launch id %q", h.LaunchID)
	}
	log := waitLog(t, spec.LogPath, "child ")
	var child int
	for _, line := range strings.Split(log, "\n") {
		if v, ok := strings.CutPrefix(line, "child "); ok {
			child, _ = strconv.Atoi(v)
		}
	}
	if child == 0 {
		t.Fatalf("no child pid in the log:\n%s", log)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	waitLog(t, spec.LogPath, "ready")
	if err := d.Stop(context.Background(), h, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(eventWithin)
	for !gone(child) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !gone(child) {
		t.Fatalf("the child %d that left the session survived Stop", child)
	}
}
