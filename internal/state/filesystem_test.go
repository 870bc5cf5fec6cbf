package state_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFilesystemWriteModesAndBackup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	m := state.NewFilesystem(dir)
	f := state.NewFile()
	f.Set(statetest.Server("a"))
	if err := m.Write(f); err != nil {
		t.Fatal(err)
	}
	first := readFile(t, m.StatePath())
	if _, err := os.Stat(m.BackupPath()); !os.IsNotExist(err) {
		t.Errorf("a backup exists after the first write: %v", err)
	}
	f.Servers["a"].Status = state.StatusReady
	if err := m.Write(f); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, m.BackupPath()); got != first {
		t.Errorf("backup is not the previous state:\n%s\nwant\n%s", got, first)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, m.StatePath(): 0o600, m.BackupPath(): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != want {
			t.Errorf("%s has mode %v; want %v", path, st.Mode(), want)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
	// A no-op write leaves both files alone.
	before := readFile(t, m.BackupPath())
	if err := m.Write(f); err != nil {
		t.Fatal(err)
	}
	if readFile(t, m.BackupPath()) != before {
		t.Error("a write without changes replaced the backup")
	}
}

// TestFilesystemWriteOverCorrupt: Write never replaces a corrupt state; the
// error names the backup.
func TestFilesystemWriteOverCorrupt(t *testing.T) {
	m := state.NewFilesystem(t.TempDir())
	os.WriteFile(m.StatePath(), []byte(`{"format_version":1,"ser`), 0o600)
	err := m.Write(state.NewFile())
	var ce *state.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), m.BackupPath()) {
		t.Fatalf("Write over a corrupt state = %v; want a CorruptError naming the backup", err)
	}
	if readFile(t, m.StatePath()) != `{"format_version":1,"ser` {
		t.Error("the corrupt file was replaced")
	}
}

// TestLockSeparateDescriptors: goroutines, each with its own Filesystem
// (its own file descriptor, as separate processes have), never hold the lock
// together.
func TestLockSeparateDescriptors(t *testing.T) {
	dir := t.TempDir()
	var holders, maxHolders atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := state.NewFilesystem(dir)
			for range 3 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				id, err := m.Lock(ctx, state.NewLockInfo("test"))
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				n := holders.Add(1)
				for old := maxHolders.Load(); n > old && !maxHolders.CompareAndSwap(old, n); old = maxHolders.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				holders.Add(-1)
				if err := m.Unlock(id); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if maxHolders.Load() != 1 {
		t.Fatalf("%d holders at once; want 1", maxHolders.Load())
	}
}

// startLockHolder runs the test binary as a second roofline that holds the
// lock of dir, and returns once it holds it.
func startLockHolder(t *testing.T, dir string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if !strings.HasPrefix(line, "locked ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper did not take the lock: %q", line)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, func() { stdin.Close() }
}

// TestLockAcrossProcesses: while another process holds the lock, Lock fails
// after its timeout with the holder's info; when the holder releases it, or
// is killed without releasing it, the lock is free again.
func TestLockAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	m := state.NewFilesystem(dir)
	holder, release := startLockHolder(t, dir)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Lock(ctx, state.NewLockInfo("plan"))
	var le *state.LockError
	if !errors.As(err, &le) {
		t.Fatalf("Lock while another process holds it = %v; want a LockError", err)
	}
	if time.Since(start) < 150*time.Millisecond {
		t.Errorf("Lock gave up after %v; want it to retry until the timeout", time.Since(start))
	}
	if le.Info == nil || le.Info.PID != holder.Process.Pid || le.Info.Operation != "apply" || le.Stale {
		t.Fatalf("LockError holder = %+v stale=%v; want pid %d, apply, not stale", le.Info, le.Stale, holder.Process.Pid)
	}
	for _, want := range []string{"roofline force-unlock " + le.Info.ID, "(running)", "-lock-timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("lock error lacks %q:\n%s", want, err)
		}
	}
	st, err := m.LockStatus()
	if err != nil || !st.Held || st.Info == nil || st.Info.ID != le.Info.ID {
		t.Fatalf("LockStatus = %+v, %v; want held by %s", st, err, le.Info.ID)
	}

	release()
	holder.Wait()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	var stale *state.LockInfo
	m.OnStaleLock = func(old *state.LockInfo) { stale = old }
	id, err := m.Lock(ctx2, state.NewLockInfo("plan"))
	if err != nil {
		t.Fatalf("Lock after the holder unlocked: %v", err)
	}
	if stale != nil {
		t.Errorf("a cleanly released lock was reported stale: %+v", stale)
	}
	m.Unlock(id)

	// A holder killed with SIGKILL cannot unlock; the kernel drops its flock
	// and the next Lock takes over, reporting the leftover info.
	holder2, _ := startLockHolder(t, dir)
	holder2.Process.Signal(syscall.SIGKILL)
	holder2.Wait()
	st, err = m.LockStatus()
	if err != nil || st.Held || st.Info == nil || st.Info.PID != holder2.Process.Pid {
		t.Fatalf("LockStatus after the holder died = %+v, %v; want info of pid %d, not held", st, err, holder2.Process.Pid)
	}
	if got := st.Info.HolderState(); got != "gone" {
		t.Errorf("HolderState of a killed holder = %q; want gone", got)
	}
	ctx3, cancel3 := context.WithTimeout(context.Background(), 0)
	defer cancel3()
	id, err = m.Lock(ctx3, state.NewLockInfo("apply"))
	if err != nil {
		t.Fatalf("Lock after the holder was killed: %v", err)
	}
	if stale == nil || stale.PID != holder2.Process.Pid {
		t.Errorf("OnStaleLock got %+v; want the killed holder's info", stale)
	}
	if err := m.Unlock(id); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.LockStatus(); st.Info != nil || st.Held {
		t.Errorf("after Unlock the lock file still says %+v", st)
	}
}

// TestForceUnlockLiveHolder: force-unlock takes the lock from a holder that
// still runs; the holder's later Write and Unlock fail instead of
// clobbering the new holder's state.
func TestForceUnlockLiveHolder(t *testing.T) {
	dir := t.TempDir()
	stuck := state.NewFilesystem(dir)
	other := state.NewFilesystem(dir)
	ctx := context.Background()
	id, err := stuck.Lock(ctx, state.NewLockInfo("apply"))
	if err != nil {
		t.Fatal(err)
	}
	if err := other.ForceUnlock("not-" + id); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("ForceUnlock with a wrong ID = %v", err)
	}
	if err := other.ForceUnlock(id); err != nil {
		t.Fatalf("ForceUnlock: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	id2, err := other.Lock(tctx, state.NewLockInfo("apply"))
	if err != nil {
		t.Fatalf("Lock after force-unlock: %v", err)
	}
	f := state.NewFile()
	f.Set(statetest.Server("a"))
	if err := stuck.Write(f); err == nil || !strings.Contains(err.Error(), "taken away") {
		t.Errorf("Write by the holder that lost its lock = %v; want a refusal", err)
	}
	if err := stuck.Unlock(id); err == nil || !strings.Contains(err.Error(), "force-unlocked") {
		t.Errorf("Unlock by the holder that lost its lock = %v", err)
	}
	if err := other.Write(f); err != nil {
		t.Errorf("Write by the new holder: %v", err)
	}
	if err := other.Unlock(id2); err != nil {
		t.Error(err)
	}
}

func TestForceUnlockStale(t *testing.T) {
	dir := t.TempDir()
	holder, _ := startLockHolder(t, dir)
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	m := state.NewFilesystem(dir)
	st, _ := m.LockStatus()
	if st.Info == nil {
		t.Fatal("no lock info left by the killed holder")
	}
	if err := m.ForceUnlock(st.Info.ID); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.LockStatus(); st.Info != nil {
		t.Errorf("info still there after force-unlock: %+v", st.Info)
	}
	if err := m.ForceUnlock(st.Info.ID); err == nil || !strings.Contains(err.Error(), "not locked") {
		t.Errorf("second ForceUnlock = %v; want not locked", err)
	}
}

// TestLockShared: readers share the lock, a writer waits for them and they
// for it; a shared lock writes nothing, not even a lock file.
func TestLockShared(t *testing.T) {
	dir := t.TempDir()
	fs := state.NewFilesystem(dir)
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	r0, err := fs.LockShared(short())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, state.LockFileName)); !os.IsNotExist(err) {
		t.Fatalf("a shared lock created the lock file: %v", err)
	}
	if err := fs.Unlock(r0); err != nil {
		t.Fatal(err)
	}

	w, err := fs.Lock(short(), state.NewLockInfo("apply"))
	if err != nil {
		t.Fatal(err)
	}
	var le *state.LockError
	if _, err := state.NewFilesystem(dir).LockShared(short()); !errors.As(err, &le) || le.Info == nil || le.Info.Operation != "apply" {
		t.Fatalf("LockShared while a writer holds the lock = %v; want a LockError naming the apply", err)
	}
	if err := fs.Unlock(w); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, state.LockFileName))

	other := state.NewFilesystem(dir)
	r1, err := fs.LockShared(short())
	if err != nil {
		t.Fatal(err)
	}
	r2, err := other.LockShared(short())
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	if _, err := other.Lock(short(), state.NewLockInfo("apply")); !errors.As(err, &le) {
		t.Fatalf("Lock while readers hold the lock = %v; want a LockError", err)
	}
	if err := fs.Unlock(r1); err != nil {
		t.Fatal(err)
	}
	if err := other.Unlock(r2); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, state.LockFileName)); !bytes.Equal(before, after) {
		t.Errorf("shared locks changed the lock file: %q → %q", before, after)
	}
	w, err = other.Lock(short(), state.NewLockInfo("apply"))
	if err != nil {
		t.Fatalf("Lock after the readers left: %v", err)
	}
	other.Unlock(w)
}
