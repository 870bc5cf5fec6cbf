package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/state"
)

// stateFixture copies the state package's full round-trip fixture into a
// fresh state directory and returns the directory.
func stateFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../state/testdata/roundtrip/full.out.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "st")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, state.StateFileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestStateList(t *testing.T) {
	dir := stateFixture(t)
	code, out, errs := runMain(t, "state", "list", "-state-dir", dir)
	if code != ExitOK || out != "server.qwen3\nserver.qwen3_next\n" || errs != "" {
		t.Fatalf("state list = %d, %q, %q", code, out, errs)
	}
	code, out, _ = runMain(t, "state", "list", "--json", "--state-dir="+dir)
	if code != ExitOK {
		t.Fatalf("state list -json exit %d", code)
	}
	assertGolden(t, filepath.Join("testdata", "state", "list.json.golden"), strings.ReplaceAll(out, dir, "$STATE_DIR"))

	empty := t.TempDir()
	code, out, errs = runMain(t, "state", "list", "-state-dir", empty)
	if code != ExitOK || out != "" || !strings.Contains(errs, "records no servers") {
		t.Fatalf("state list of no state = %d, %q, %q", code, out, errs)
	}
	if code, _, errs := runMain(t, "state", "list", "-state-dir", dir, "extra"); code != ExitError || !strings.Contains(errs, "unexpected argument") {
		t.Fatalf("state list with an argument = %d, %q", code, errs)
	}
}

func TestStateShow(t *testing.T) {
	dir := stateFixture(t)
	for _, addr := range []string{"server.qwen3", "qwen3"} {
		code, out, errs := runMain(t, "state", "show", "-state-dir", dir, addr)
		if code != ExitOK {
			t.Fatalf("state show %s = %d, %s", addr, code, errs)
		}
		assertGolden(t, filepath.Join("testdata", "state", "show.txt.golden"), out)
	}
	code, out, _ := runMain(t, "state", "show", "-json", "-state-dir", dir, "server.qwen3_next")
	if code != ExitOK {
		t.Fatalf("state show -json exit %d", code)
	}
	assertGolden(t, filepath.Join("testdata", "state", "show_next.json.golden"), out)

	for args, want := range map[string]string{
		"server.qwen":     `server.qwen is not in the state. Did you mean "qwen3"?`,
		"engine.vllm_016": "not a server address",
		"server.":         "has no server name",
		"":                "expected one address",
	} {
		argv := []string{"state", "show", "-state-dir", dir}
		if args != "" {
			argv = append(argv, args)
		}
		code, _, errs := runMain(t, argv...)
		if code != ExitError || !strings.Contains(errs, want) {
			t.Errorf("state show %q = %d, %q; want an error with %q", args, code, errs, want)
		}
	}
}

// TestStateCorrupt: the state commands report a corrupt state with the
// backup to restore, and change nothing.
func TestStateCorrupt(t *testing.T) {
	dir := stateFixture(t)
	path := filepath.Join(dir, state.StateFileName)
	good, _ := os.ReadFile(path)
	os.WriteFile(path+".backup", good, 0o600)
	os.WriteFile(path, good[:100], 0o600)
	for _, args := range [][]string{{"state", "list"}, {"state", "show", "qwen3"}, {"state", "rm", "qwen3"}} {
		code, _, errs := runMain(t, append(args, "-state-dir", dir)...)
		if code != ExitError || !strings.Contains(errs, "is corrupt") || !strings.Contains(errs, "cp "+path+".backup "+path) {
			t.Errorf("%v on a corrupt state = %d, %q", args, code, errs)
		}
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, good[:100]) {
		t.Error("the corrupt state was changed")
	}
}

// TestStateRm: forgetting servers leaves their processes running and says
// how to stop them.
func TestStateRm(t *testing.T) {
	dir := t.TempDir()
	d := process.New()
	h, err := d.Start(context.Background(), driver.LaunchSpec{Name: "live", Argv: []string{"/bin/sleep", "300"}, LogPath: filepath.Join(dir, "live.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(context.Background(), h, time.Second) })

	sm := state.NewFilesystem(dir)
	f := state.NewFile()
	mk := func(name string, port int) *state.Server {
		return &state.Server{Name: name, Instance: state.Instance{Driver: state.DriverProcess}, Status: state.StatusReady, Port: port, Argv: []string{"/bin/sleep", "300"}}
	}
	live := mk("live", 8000)
	live.Instance = h
	dead := mk("dead", 8001)
	dead.ID, dead.PID, dead.Group, dead.StartTime, dead.BootID = state.ProcessID(1<<30), 1<<30, 1<<30, 1, h.BootID // a pid no kernel hands out
	keep := mk("keep", 8002)
	docker := mk("box", 8003)
	docker.Driver, docker.ID = state.DriverDocker, "c0ffee"
	dead.Deposed = mk("dead", 8001)
	dead.Deposed.ID, dead.Deposed.PID, dead.Deposed.Group, dead.Deposed.StartTime, dead.Deposed.BootID = h.ID, h.PID, h.Group, h.StartTime, h.BootID
	live.Proxy = &state.Instance{Driver: state.DriverProcess, ID: state.ProcessID(1<<30 - 1), PID: 1<<30 - 1, Group: 1<<30 - 1, StartTime: 5, BootID: h.BootID}
	for _, s := range []*state.Server{live, dead, keep, docker} {
		f.Set(s)
	}
	if err := sm.Write(f); err != nil {
		t.Fatal(err)
	}

	// An unknown address removes nothing.
	code, _, errs := runMain(t, "state", "rm", "-state-dir", dir, "server.live", "server.nope")
	if code != ExitError || !strings.Contains(errs, "Nothing was removed") {
		t.Fatalf("state rm with an unknown address = %d, %q", code, errs)
	}
	// -dry-run changes nothing.
	code, out, _ := runMain(t, "state", "rm", "-dry-run", "-state-dir", dir, "live")
	if code != ExitOK || !strings.Contains(out, "Would remove server.live") {
		t.Fatalf("state rm -dry-run = %d, %q", code, out)
	}
	if g, _ := sm.Read(); g.Serial != 1 || len(g.Servers) != 4 {
		t.Fatalf("state changed before the real rm: serial %d, %d servers", g.Serial, len(g.Servers))
	}

	code, out, errs = runMain(t, "state", "rm", "-state-dir", dir, "server.live", "dead", "server.box", "live")
	if code != ExitOK {
		t.Fatalf("state rm = %d, %s", code, errs)
	}
	pg := strconv.Itoa(h.Group)
	for _, want := range []string{
		"Removed server.live from the state; it was not stopped.",
		"Still running: pid " + strconv.Itoa(h.PID) + " (process group " + pg + ") on port 8000. To stop it and its workers: kill -TERM -- -" + pg,
		"Its process (pid 1073741824) is no longer running",
		"docker stop c0ffee",
		"Its front proxy: Its process (pid 1073741823) is no longer running",
		"Its previous instance, kept during a rollout: Still running: pid " + strconv.Itoa(h.PID),
		"State serial 2.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("state rm output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "Removed server.live") != 1 {
		t.Errorf("a repeated address was reported twice:\n%s", out)
	}
	g, err := sm.Read()
	if err != nil || g.Serial != 2 || len(g.Servers) != 1 || g.Server("keep") == nil {
		t.Fatalf("state after rm: %+v, %v; want only keep, serial 2", g, err)
	}
	if obs, _ := d.Read(context.Background(), h); obs == nil || !obs.Alive {
		t.Fatal("state rm stopped the process")
	}
	if st, _ := sm.LockStatus(); st.Held || st.Info != nil {
		t.Errorf("state rm left the lock: %+v", st)
	}
}

// TestStateRmWaitsForLock: state rm fails at once on a locked state, or
// waits with -lock-timeout.
func TestStateRmWaitsForLock(t *testing.T) {
	dir := stateFixture(t)
	other := state.NewFilesystem(dir)
	id, err := other.Lock(context.Background(), state.NewLockInfo("apply"))
	if err != nil {
		t.Fatal(err)
	}
	code, _, errs := runMain(t, "state", "rm", "-state-dir", dir, "qwen3")
	if code != ExitError || !strings.Contains(errs, "roofline force-unlock "+id) || !strings.Contains(errs, "Operation: apply") {
		t.Fatalf("state rm on a locked state = %d, %q", code, errs)
	}
	go func() {
		time.Sleep(150 * time.Millisecond)
		other.Unlock(id)
	}()
	code, out, errs := runMain(t, "state", "rm", "-lock-timeout=20s", "-state-dir", dir, "qwen3")
	if code != ExitOK || !strings.Contains(out, "Removed server.qwen3") {
		t.Fatalf("state rm -lock-timeout = %d, %q, %q", code, out, errs)
	}
}

func TestForceUnlock(t *testing.T) {
	dir := stateFixture(t)
	holder := state.NewFilesystem(dir)
	id, err := holder.Lock(context.Background(), state.NewLockInfo("apply"))
	if err != nil {
		t.Fatal(err)
	}
	code, _, errs := runMainIn(t, "yes\n", "force-unlock", "-state-dir", dir, "wrong")
	if code != ExitError || !strings.Contains(errs, "does not match") || !strings.Contains(errs, id) {
		t.Fatalf("force-unlock with a wrong ID = %d, %q", code, errs)
	}
	code, out, errs := runMainIn(t, "no\n", "force-unlock", "-state-dir", dir, id)
	if code != ExitError || !strings.Contains(errs, "cancelled") || !strings.Contains(out, "Only 'yes' will be accepted") ||
		!strings.Contains(out, "is still running") {
		t.Fatalf("force-unlock answered no = %d, %q, %q", code, out, errs)
	}
	code, _, errs = runMain(t, "force-unlock", "-state-dir", dir, id)
	if code != ExitError || !strings.Contains(errs, "no answer") {
		t.Fatalf("force-unlock without an answer = %d, %q", code, errs)
	}
	if st, _ := holder.LockStatus(); !st.Held {
		t.Fatal("a cancelled force-unlock released the lock")
	}
	code, out, errs = runMainIn(t, "yes\n", "force-unlock", "-state-dir", dir, id)
	if code != ExitOK || !strings.Contains(out, "has been removed") {
		t.Fatalf("force-unlock yes = %d, %q, %q", code, out, errs)
	}
	// The lock is free for others; the old holder learns it lost it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	next := state.NewFilesystem(dir)
	id2, err := next.Lock(ctx, state.NewLockInfo("plan"))
	if err != nil {
		t.Fatalf("Lock after force-unlock: %v", err)
	}
	if err := holder.Unlock(id); err == nil {
		t.Error("the old holder unlocked a lock it had lost")
	}
	code, out, _ = runMain(t, "force-unlock", "-force", "-state-dir", dir, id2)
	if code != ExitOK || strings.Contains(out, "Enter a value") {
		t.Fatalf("force-unlock -force = %d, %q", code, out)
	}
	code, _, errs = runMain(t, "force-unlock", "-force", "-state-dir", dir, id2)
	if code != ExitError || !strings.Contains(errs, "not locked") {
		t.Fatalf("force-unlock of an unlocked state = %d, %q", code, errs)
	}
}

// TestStateDirFromConfig: without -state-dir the state directory comes from
// the configuration; without a configuration the error says what to do.
func TestStateDirFromConfig(t *testing.T) {
	src := stateFixture(t)
	dir := t.TempDir()
	t.Chdir(dir)
	code, _, errs := runMain(t, "state", "list")
	if code != ExitError || !strings.Contains(errs, "-state-dir=DIR") {
		t.Fatalf("state list without a configuration = %d, %q", code, errs)
	}
	os.WriteFile("main.hcl", []byte("roofline {\n  state_dir = \"st\"\n}\n"), 0o644)
	if err := os.Rename(src, filepath.Join(dir, "st")); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runMain(t, "state", "list")
	if code != ExitOK || out != "server.qwen3\nserver.qwen3_next\n" {
		t.Fatalf("state list with state_dir from the configuration = %d, %q, %q", code, out, errs)
	}
}

func TestStateParentCommand(t *testing.T) {
	code, _, errs := runMain(t, "state", "lsit")
	if code != ExitError || !strings.Contains(errs, `Did you mean "list"?`) || !strings.Contains(errs, "Subcommands:") {
		t.Fatalf("state lsit = %d, %q", code, errs)
	}
}
