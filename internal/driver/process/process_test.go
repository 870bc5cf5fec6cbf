package process

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/drivertest"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/testload"
)

func TestConformance(t *testing.T) {
	dir := t.TempDir()
	drivertest.TestDriver(t, New(), drivertest.Options{
		Spec: func(t *testing.T, name, launchID string) driver.LaunchSpec {
			s := helperSpec(t, name, "sleep")
			s.LogPath = filepath.Join(dir, name+".log")
			s.LaunchID = launchID
			return s
		},
		Stale: map[string]func(state.Instance) state.Instance{
			"other start time": func(i state.Instance) state.Instance { i.StartTime++; return i },
			"other boot":       func(i state.Instance) state.Instance { i.BootID = "another-boot"; return i },
		},
	})
}

// TestStartDetached: the engine leads a session and group of its own, not
// roofline's, and writes its output to the log.
func TestStartDetached(t *testing.T) {
	d := New()
	spec := helperSpec(t, "a", "sleep")
	h, err := d.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	stopAll(t, d, h)
	st, err := liveProc.stat(h.PID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Session != h.PID || st.PGRP != h.PID || h.Group != h.PID {
		t.Errorf("session %d group %d (handle %d); want both = pid %d", st.Session, st.PGRP, h.Group, h.PID)
	}
	if own, _ := liveProc.stat(os.Getpid()); own.Session == st.Session {
		t.Error("the engine shares roofline's session")
	}
	if !slices.Equal(h.Cmdline, spec.Argv) {
		t.Errorf("recorded cmdline %q; want %q", h.Cmdline, spec.Argv)
	}
	waitLog(t, spec.LogPath, "ready")
	if fi, _ := os.Stat(spec.LogPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v; want 0600", fi.Mode().Perm())
	}
}

// TestAdoptAfterRooflineExits: a roofline process starts an engine and
// exits; the engine keeps running and a new roofline (a new Driver) finds
// it by its recorded handle and stops it.
func TestAdoptAfterRooflineExits(t *testing.T) {
	self, _ := os.Executable()
	log := filepath.Join(t.TempDir(), "adopted.log")
	launcher := exec.Command(self, "-test.run=^$")
	launcher.Env = append(os.Environ(), helperEnv+"=launch", "HELPER_LOG="+log)
	out, err := launcher.Output()
	if err != nil {
		t.Fatalf("launcher: %v\n%s", err, out)
	}
	var h state.Instance
	if err := json.Unmarshal(out, &h); err != nil {
		t.Fatalf("launcher printed %q: %v", out, err)
	}
	d := New()
	stopAll(t, d, h)
	obs, err := d.Read(context.Background(), h)
	if err != nil || obs == nil || !obs.Alive {
		t.Fatalf("Read after the launcher exited = %+v, %v; want the engine alive", obs, err)
	}
	if err := d.Stop(context.Background(), h, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !gone(h.PID) {
		t.Fatal("the adopted engine still runs after Stop")
	}
}

// TestReadRejectsReusedPID: a live pid with another start time is not ours,
// and Stop leaves it alone. Uses this test process's own pid as the
// "reused" one.
func TestReadRejectsReusedPID(t *testing.T) {
	d := New()
	own, err := liveProc.stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	boot, _ := liveProc.bootID()
	h := state.Instance{Driver: state.DriverProcess, ID: state.ProcessID(os.Getpid()), PID: os.Getpid(), Group: own.PGRP, StartTime: own.StartTime + 7, BootID: boot}
	if obs, err := d.Read(context.Background(), h); obs.Remains() || err != nil {
		t.Fatalf("Read of a pid with another start time = %+v, %v; want nothing of it, no error", obs, err)
	}
	if err := d.Stop(context.Background(), h, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Still here to tell: Stop sent nothing. With the right start time it is ours.
	h.StartTime = own.StartTime
	if obs, err := d.Read(context.Background(), h); err != nil || obs == nil || !obs.Alive {
		t.Fatalf("Read with the true start time = %+v, %v; want alive", obs, err)
	}
}

// TestStopKillsWorkers: an engine with a worker that ignores SIGTERM, in
// the engine's group or in a group of its own: Stop ends both, escalating
// to SIGKILL after the grace period.
func TestStopKillsWorkers(t *testing.T) {
	for _, mode := range []string{"spawn", "spawn-newgroup"} {
		t.Run(mode, func(t *testing.T) {
			d := New()
			spec := helperSpec(t, "w", mode)
			h, err := d.Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			stopAll(t, d, h)
			log := waitLog(t, spec.LogPath, "ready")
			var child int
			for _, line := range strings.Split(log, "\n") {
				if v, ok := strings.CutPrefix(line, "child "); ok {
					child, _ = strconv.Atoi(v)
				}
			}
			if child == 0 {
				t.Fatalf("no child pid in the log:\n%s", log)
			}
			obs, err := d.Read(context.Background(), h)
			if err != nil || obs == nil || !slices.Contains(obs.PIDs, child) || obs.PIDs[0] != h.PID {
				t.Fatalf("Read = %+v, %v; want pids %d (first) and %d", obs, err, h.PID, child)
			}
			grace := 300 * time.Millisecond
			start := time.Now()
			if err := d.Stop(context.Background(), h, grace); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took < grace {
				t.Errorf("Stop took %v; the worker ignores SIGTERM, so it must wait the grace period %v", took, grace)
			}
			if !gone(h.PID) || !gone(child) {
				t.Fatalf("after Stop: engine gone %v, worker %d gone %v", gone(h.PID), child, gone(child))
			}
		})
	}
}

// TestStopWithinGrace: an engine that exits on SIGTERM is not waited for
// the whole grace period.
func TestStopWithinGrace(t *testing.T) {
	d := New()
	h, err := d.Start(context.Background(), helperSpec(t, "a", "sleep"))
	if err != nil {
		t.Fatal(err)
	}
	stopAll(t, d, h)
	start := time.Now()
	if err := d.Stop(context.Background(), h, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	testload.Within(t, "Stop of an engine that exits on SIGTERM", time.Since(start), 10*time.Second)
}

// TestLeftoverWorkers: the main process dies, its worker lives on. Read
// reports it (not alive, worker pid); Stop ends the worker.
func TestLeftoverWorkers(t *testing.T) {
	d := New()
	spec := helperSpec(t, "w", "spawn")
	h, err := d.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	stopAll(t, d, h)
	waitLog(t, spec.LogPath, "ready")
	if err := syscall.Kill(h.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var obs *driver.Observed
	for deadline := time.Now().Add(eventWithin); ; time.Sleep(5 * time.Millisecond) {
		obs, err = d.Read(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		if obs == nil || !obs.Alive || time.Now().After(deadline) {
			break
		}
	}
	if obs == nil || obs.Alive || len(obs.PIDs) != 1 {
		t.Fatalf("Read after the main process died = %+v; want not alive with one worker", obs)
	}
	worker := obs.PIDs[0]
	if err := d.Stop(context.Background(), h, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if obs, _ := d.Read(context.Background(), h); obs.Remains() || !gone(worker) {
		t.Fatalf("after Stop Read = %+v, worker %d gone %v", obs, worker, gone(worker))
	}
}

// TestStartEnv: the engine gets the base variables and the spec's, not the
// rest of roofline's environment.
func TestStartEnv(t *testing.T) {
	d := New()
	d.LookupEnv = func(k string) (string, bool) {
		v, ok := map[string]string{"HOME": "/home/op", "CUDA_VISIBLE_DEVICES": "7", "LANG": "C.UTF-8"}[k]
		return v, ok
	}
	spec := helperSpec(t, "e", "env")
	spec.Env["HF_HUB_OFFLINE"] = "1"
	spec.Env["LANG"] = "en_US.UTF-8"
	if _, err := d.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	log := waitLog(t, spec.LogPath, helperEnv)
	for _, want := range []string{"HOME=/home/op", "HF_HUB_OFFLINE=1", "LANG=en_US.UTF-8", "PATH=" + driver.DefaultPath, "SPT_NOENV=1"} {
		if !strings.Contains(log, want+"\n") {
			t.Errorf("environment lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "CUDA_VISIBLE_DEVICES") {
		t.Errorf("roofline's CUDA_VISIBLE_DEVICES leaked into the engine:\n%s", log)
	}
}

// TestNoInheritedDescriptors: the engine gets stdin, stdout and stderr
// only; in particular not the state lock roofline holds while it starts it.
func TestNoInheritedDescriptors(t *testing.T) {
	sm := state.NewFilesystem(t.TempDir())
	id, err := sm.Lock(context.Background(), state.NewLockInfo("apply"))
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Unlock(id)
	d := New()
	spec := helperSpec(t, "fds", "fds")
	if _, err := d.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	waitLog(t, spec.LogPath, "fd 2 ")
	time.Sleep(50 * time.Millisecond) // let it finish listing
	log, _ := readString(spec.LogPath)
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		switch {
		case f[1] == "0" && f[2] != "/dev/null":
			t.Errorf("stdin is %s; want /dev/null", f[2])
		case f[1] == "1" || f[1] == "2":
			if f[2] != spec.LogPath {
				t.Errorf("fd %s is %s; want the log", f[1], f[2])
			}
		case strings.Contains(f[2], "roofline.lock") || strings.Contains(f[2], "state.json"):
			t.Errorf("the engine inherited %s", line)
		}
	}
}

func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// TestExitStatus: a start that fails at once is seen as gone, its status
// is kept, and no zombie is left.
func TestExitStatus(t *testing.T) {
	d := New()
	spec := helperSpec(t, "x", "exit3")
	h, err := d.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(eventWithin)
	for {
		if ps, ok := d.ExitStatus(h); ok {
			if ps.ExitCode() != 3 {
				t.Fatalf("exit code %d; want 3", ps.ExitCode())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no exit status after %s", eventWithin)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if obs, err := d.Read(context.Background(), h); obs.Remains() || err != nil {
		t.Fatalf("Read of an exited engine = %+v, %v", obs, err)
	}
	if _, err := liveProc.stat(h.PID); err == nil {
		t.Errorf("pid %d is still in /proc after it was reaped", h.PID)
	}
	other := h
	other.StartTime++
	if _, ok := d.ExitStatus(other); ok {
		t.Error("ExitStatus answered for another start time")
	}
}

// TestLogKeptOnRestart: a start keeps the previous run's log as .1 and
// writes a fresh one.
func TestLogKeptOnRestart(t *testing.T) {
	d := New()
	spec := helperSpec(t, "r", "exit3")
	if err := os.WriteFile(spec.LogPath, []byte("previous run\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	log := waitLog(t, spec.LogPath, "failing")
	if strings.Contains(log, "previous run") {
		t.Errorf("the new log holds the previous run:\n%s", log)
	}
	if prev, _ := readString(PreviousLog(spec.LogPath)); prev != "previous run\n" {
		t.Errorf("previous log = %q", prev)
	}
}

// TestLiveLogNeverReplaced: after a failed create-before-destroy rollout
// the old instance, still serving, writes the previous log. The next start
// (and a rotation) must not rename or copy over it: it moves to LOG.2 and
// the engine keeps writing it.
func TestLiveLogNeverReplaced(t *testing.T) {
	for _, via := range []string{"start", "rotate"} {
		t.Run(via, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "e.log")
			live, err := os.OpenFile(PreviousLog(path), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			// The serving engine: a process of its own holding the file.
			engine := exec.Command("sh", "-c", "echo serving; read line; echo still serving")
			engine.Stdout = live
			stdin, _ := engine.StdinPipe()
			if err := engine.Start(); err != nil {
				t.Fatal(err)
			}
			live.Close()
			t.Cleanup(func() { stdin.Close(); _ = engine.Wait() })
			waitLog(t, PreviousLog(path), "serving")
			os.WriteFile(path, []byte("failed attempt\n"), 0o600)
			if via == "start" {
				if err := keepPrevious(path); err != nil {
					t.Fatal(err)
				}
			} else if rotated, err := RotateLog(path, 4); !rotated || err != nil {
				t.Fatalf("RotateLog = %v, %v", rotated, err)
			}
			stdin.Write([]byte("go\n"))
			stdin.Close()
			_ = engine.Wait()
			if got, _ := readString(path + ".2"); got != "serving\nstill serving\n" {
				t.Errorf("the serving engine's log (now .2) = %q", got)
			}
			if got, _ := readString(PreviousLog(path)); got != "failed attempt\n" {
				t.Errorf("previous log = %q", got)
			}
		})
	}
}

// holdLog starts a process of its own that writes path and holds it open
// until the test ends: a serving engine.
func holdLog(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	engine := exec.Command("sh", "-c", "echo serving; read line")
	engine.Stdout = f
	stdin, _ := engine.StdinPipe()
	if err := engine.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { stdin.Close(); _ = engine.Wait() })
	waitLog(t, path, "serving")
}

// TestStaleLogsPruned: the logs set aside for engines that have since
// stopped (LOG.N, N ≥ 2) go at the next start, unless a process holds one
// or the state names it; LOG.1 (the run before's) and other files stay. A
// start without the state's logs (a proxy's) removes nothing.
func TestStaleLogsPruned(t *testing.T) {
	for _, withState := range []bool{true, false} {
		t.Run(fmt.Sprintf("state=%v", withState), func(t *testing.T) {
			spec := helperSpec(t, "e", "exit3")
			path := spec.LogPath
			write := func(p, text string) {
				if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write(path, "failed attempt\n")
			holdLog(t, path+".1") // the instance that serves, after the failed attempt
			holdLog(t, path+".2") // a kept instance
			for _, n := range []string{".3", ".4", ".7", ".02", ".docker"} {
				write(path+n, "old "+n+"\n")
			}
			if withState {
				spec.StateLogs = []string{path, path + ".4"}
			}
			if _, err := New().Start(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			waitLog(t, path, "failing")
			if got, _ := readString(PreviousLog(path)); got != "failed attempt\n" {
				t.Errorf("previous log = %q", got)
			}
			// .1 was held: it moved to the first free number, .5.
			want := map[string]bool{".2": true, ".4": true, ".5": true, ".02": true, ".docker": true, ".3": !withState, ".7": !withState}
			for n, kept := range want {
				_, err := os.Stat(path + n)
				if kept != (err == nil) {
					t.Errorf("%s: kept %v, want %v", n, err == nil, kept)
				}
			}
			if got, _ := readString(path + ".5"); got != "serving\n" {
				t.Errorf("the serving instance's log (.5) = %q", got)
			}
		})
	}
}

func TestRotateLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.log")
	if rotated, err := RotateLog(path, 10); rotated || err != nil {
		t.Fatalf("RotateLog of a missing log = %v, %v", rotated, err)
	}
	os.WriteFile(path, []byte("0123456789"), 0o600)
	if rotated, err := RotateLog(path, 10); rotated || err != nil {
		t.Fatalf("RotateLog at the limit = %v, %v; want no rotation", rotated, err)
	}
	// A writer in append mode, as the engine is, keeps writing after the rotation.
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.WriteString("abc")
	if rotated, err := RotateLog(path, 10); !rotated || err != nil {
		t.Fatalf("RotateLog over the limit = %v, %v", rotated, err)
	}
	w.WriteString("new")
	if got, _ := readString(path); got != "new" {
		t.Errorf("log after rotation = %q; want only what came after", got)
	}
	if got, _ := readString(PreviousLog(path)); got != "0123456789abc" {
		t.Errorf("previous log = %q", got)
	}
}

func TestStartErrors(t *testing.T) {
	d := New()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "engine")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	for name, tc := range map[string]struct {
		argv []string
		want string
	}{
		"empty":          {nil, "empty command line"},
		"not in PATH":    {[]string{"no-such-engine-xyz"}, "not found in PATH=" + driver.DefaultPath},
		"missing path":   {[]string{filepath.Join(dir, "missing")}, "no such file"},
		"not executable": {[]string{notExec}, "not an executable"},
		"directory":      {[]string{dir}, "not an executable"},
	} {
		t.Run(name, func(t *testing.T) {
			d.LookupEnv = func(string) (string, bool) { return "", false }
			_, err := d.Start(context.Background(), driver.LaunchSpec{Name: "s", Argv: tc.argv, LogPath: filepath.Join(dir, "s.log")})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "server s") {
				t.Fatalf("Start = %v; want an error naming server s and containing %q", err, tc.want)
			}
		})
	}
	if _, err := d.Start(context.Background(), driver.LaunchSpec{Name: "s", Argv: []string{"/bin/true"}}); err == nil {
		t.Error("Start without a log path succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Start(ctx, helperSpec(t, "c", "sleep")); err == nil {
		t.Error("Start with an ended context succeeded")
	}
}

// TestLookPathUsesChildPath: a bare name is looked up in the PATH the
// engine gets, not roofline's.
func TestLookPathUsesChildPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-engine")
	os.WriteFile(bin, []byte("#!/bin/sh\necho from-child-path\n"), 0o755)
	d := New()
	d.LookupEnv = func(string) (string, bool) { return "", false }
	log := filepath.Join(dir, "l.log")
	h, err := d.Start(context.Background(), driver.LaunchSpec{Name: "p", Argv: []string{"fake-engine"},
		Env: map[string]string{"PATH": dir + ":/usr/bin:/bin"}, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	stopAll(t, d, h)
	waitLog(t, log, "from-child-path")
}

// TestFindByEnv: an engine whose handle was lost (roofline killed before
// it wrote the state) is found by the launch id in its environment, also
// when only its worker is left.
func TestFindByEnv(t *testing.T) {
	ctx := context.Background()
	d := New()
	spec := helperSpec(t, "lost", "spawn")
	spec.Env["ROOFLINE_LAUNCH_ID"] = "launch-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	h, err := d.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	stopAll(t, d, h)
	other := helperSpec(t, "other", "sleep")
	other.Env["ROOFLINE_LAUNCH_ID"] = "another"
	h2, err := d.Start(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	stopAll(t, d, h2)
	waitLog(t, spec.LogPath, "ready")

	got, err := d.FindByEnv(ctx, "ROOFLINE_LAUNCH_ID", spec.Env["ROOFLINE_LAUNCH_ID"])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].PID != h.PID || got[0].StartTime != h.StartTime || got[0].Group != h.Group ||
		got[0].BootID != h.BootID || got[0].LogPath != spec.LogPath {
		t.Fatalf("FindByEnv = %+v; want one handle equal to %+v", got, h)
	}
	if obs, _ := d.Read(ctx, got[0]); obs == nil || !obs.Alive {
		t.Fatal("the found handle does not read as alive")
	}

	syscall.Kill(h.PID, syscall.SIGKILL)
	for deadline := time.Now().Add(eventWithin); !gone(h.PID) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	got, err = d.FindByEnv(ctx, "ROOFLINE_LAUNCH_ID", spec.Env["ROOFLINE_LAUNCH_ID"])
	if err != nil || len(got) != 1 || got[0].PID != h.PID || got[0].StartTime != 0 {
		t.Fatalf("FindByEnv with only the worker left = %+v, %v; want a leaderless handle for session %d", got, err, h.PID)
	}
	obs, err := d.Read(ctx, got[0])
	if err != nil || obs == nil || obs.Alive || len(obs.PIDs) != 1 {
		t.Fatalf("Read of the leaderless handle = %+v, %v; want the worker", obs, err)
	}
	worker := obs.PIDs[0]
	if err := d.Stop(ctx, got[0], 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !gone(worker) {
		t.Fatal("Stop of the leaderless handle left the worker")
	}
	if got, _ := d.FindByEnv(ctx, "ROOFLINE_LAUNCH_ID", spec.Env["ROOFLINE_LAUNCH_ID"]); len(got) != 0 {
		t.Fatalf("FindByEnv after Stop = %+v", got)
	}
}

// TestDescribeListener: import's port:N names the process that listens on
// N (this test's own), and a port nobody listens on is an error that says so.
func TestDescribeListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	d, err := New().DescribeListener(port)
	if err != nil || d.Instance.PID != os.Getpid() || len(d.Instance.Cmdline) == 0 || d.Env["PATH"] != os.Getenv("PATH") {
		t.Fatalf("DescribeListener(%d) = %+v, %v; want this process (%d)", port, d, err, os.Getpid())
	}
	l.Close()
	if _, err := New().DescribeListener(port); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("nothing this user can see listens on port %d", port)) {
		t.Fatalf("a closed port: %v", err)
	}
}
