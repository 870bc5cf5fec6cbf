// Package statetest holds the conformance suite that every state.Manager
// must pass (the idea of Terraform's statemgr.TestFull). It lives apart from
// package state so that the roofline binary does not link package testing.
package statetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/state"
)

// Server returns a plausible server record for tests.
func Server(name string) *state.Server {
	return &state.Server{
		Name:   name,
		Engine: state.EngineRef{Name: "vllm_016", Kind: "vllm", Version: "0.16.0", Identity: "exe:abc"},
		Model:  state.ModelRef{Name: "qwen3_8b", Path: "/models/Qwen3-8B", ServedName: "qwen3-8b", Fingerprint: "fp:1"},
		Argv:   []string{"/opt/vllm/bin/vllm", "serve", "/models/Qwen3-8B", "--port", "8000"},
		Env:    map[string]string{"HF_HUB_OFFLINE": "1"},
		GPUs:   []int{0},
		Host:   "127.0.0.1",
		Port:   8000,
		Instance: state.Instance{Driver: state.DriverProcess, ID: "4242",
			PID: 4242, Group: 4242, StartTime: 123456, BootID: "boot-1", LogPath: "/tmp/x.log"},
		Status:     state.StatusStarting,
		CreatedAt:  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		ConfigHash: "cfg:1",
	}
}

// TestManager runs the suite on m, which must hold no state and no lock. The
// steps build on each other, in the order apply uses a manager.
func TestManager(t *testing.T, m state.Manager) {
	t.Helper()
	ctx := context.Background()
	mustRead := func(t *testing.T) *state.File {
		t.Helper()
		f, err := m.Read()
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if f == nil {
			t.Fatal("Read returned a nil state without an error")
		}
		return f
	}
	encode := func(t *testing.T, f *state.File) []byte {
		t.Helper()
		b, err := state.Marshal(f)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		return b
	}

	t.Run("empty", func(t *testing.T) {
		f := mustRead(t)
		if f.Serial != 0 || f.Lineage != "" || len(f.Servers) != 0 || f.FormatVersion != state.CurrentFormat {
			t.Fatalf("empty state = serial %d lineage %q servers %d format %d; want 0, \"\", 0, %d",
				f.Serial, f.Lineage, len(f.Servers), f.FormatVersion, state.CurrentFormat)
		}
	})

	var lineage string
	t.Run("first write assigns lineage and serial 1", func(t *testing.T) {
		f := mustRead(t)
		f.Set(Server("a"))
		if err := m.Write(f); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if f.Serial != 1 || f.Lineage == "" {
			t.Fatalf("after first write serial %d lineage %q; want 1 and a lineage", f.Serial, f.Lineage)
		}
		lineage = f.Lineage
		got := mustRead(t)
		if !bytes.Equal(encode(t, got), encode(t, f)) {
			t.Fatalf("read back differs from written:\n%s\nwant\n%s", encode(t, got), encode(t, f))
		}
		// The manager must not keep the caller's pointers.
		f.Servers["a"].Port = 9999
		if mustRead(t).Servers["a"].Port != 8000 {
			t.Fatal("changing the written File changed the stored state")
		}
	})

	t.Run("no-op write keeps the serial", func(t *testing.T) {
		f := mustRead(t)
		if err := m.Write(f); err != nil {
			t.Fatalf("Write: %v", err)
		}
		if f.Serial != 1 || mustRead(t).Serial != 1 {
			t.Fatalf("a write without changes moved the serial to %d", f.Serial)
		}
	})

	t.Run("change bumps the serial", func(t *testing.T) {
		f := mustRead(t)
		f.Servers["a"].Status = state.StatusReady
		f.Set(Server("b"))
		if err := m.Write(f); err != nil {
			t.Fatalf("Write: %v", err)
		}
		got := mustRead(t)
		if f.Serial != 2 || got.Serial != 2 || got.Lineage != lineage {
			t.Fatalf("serial %d (read %d) lineage %q; want 2, 2, %q", f.Serial, got.Serial, got.Lineage, lineage)
		}
		if got.Servers["a"].Status != state.StatusReady || got.Servers["b"] == nil {
			t.Fatalf("change not stored: %+v", got.Servers)
		}
		// Successive writes of the same File work: Write updated its serial.
		f.Remove("b")
		if err := m.Write(f); err != nil {
			t.Fatalf("second Write of the same File: %v", err)
		}
		if f.Serial != 3 || mustRead(t).Server("b") != nil {
			t.Fatalf("remove: serial %d, b still stored: %v", f.Serial, mustRead(t).Server("b") != nil)
		}
	})

	t.Run("stale write is refused", func(t *testing.T) {
		old := mustRead(t)
		newer := mustRead(t)
		newer.Servers["a"].Port = 8001
		if err := m.Write(newer); err != nil {
			t.Fatalf("Write: %v", err)
		}
		old.Servers["a"].Port = 8002
		if err := m.Write(old); err == nil {
			t.Fatal("writing a File read before another write succeeded; want an error")
		}
		if got := mustRead(t); got.Servers["a"].Port != 8001 || got.Serial != newer.Serial {
			t.Fatalf("stale write changed the state: port %d serial %d", got.Servers["a"].Port, got.Serial)
		}
	})

	t.Run("other lineage is refused", func(t *testing.T) {
		f := mustRead(t)
		f.Lineage = "another-lineage"
		f.Servers["a"].Port = 8003
		if err := m.Write(f); err == nil {
			t.Fatal("writing a state of another lineage succeeded; want an error")
		}
	})

	t.Run("lock excludes a second locker", func(t *testing.T) {
		id, err := m.Lock(ctx, state.NewLockInfo("apply"))
		if err != nil || id == "" {
			t.Fatalf("Lock = %q, %v", id, err)
		}
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err = m.Lock(tctx, state.NewLockInfo("plan"))
		var le *state.LockError
		if !errors.As(err, &le) {
			t.Fatalf("second Lock = %v; want a *state.LockError", err)
		}
		if le.Info == nil || le.Info.ID != id || le.Info.Operation != "apply" {
			t.Fatalf("LockError names holder %+v; want ID %s operation apply", le.Info, id)
		}
		if err := m.Unlock("not-" + id); err == nil {
			t.Fatal("Unlock with a wrong ID succeeded")
		}
		if err := m.Unlock(id); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		if err := m.Unlock(id); err == nil {
			t.Fatal("second Unlock of the same ID succeeded")
		}
	})

	t.Run("an ended context still gets one try", func(t *testing.T) {
		done, cancel := context.WithCancel(ctx)
		cancel()
		id, err := m.Lock(done, nil)
		if err != nil {
			t.Fatalf("Lock of a free state with an ended context: %v", err)
		}
		if err := m.Unlock(id); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	})

	t.Run("a waiter gets the lock when it is released", func(t *testing.T) {
		id, err := m.Lock(ctx, state.NewLockInfo("apply"))
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		got := make(chan error, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			id2, err := m.Lock(wctx, state.NewLockInfo("waiter"))
			if err == nil {
				err = m.Unlock(id2)
			}
			got <- err
		}()
		time.Sleep(100 * time.Millisecond)
		select {
		case err := <-got:
			t.Fatalf("the waiter finished while the lock was held: %v", err)
		default:
		}
		if err := m.Unlock(id); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		if err := <-got; err != nil {
			t.Fatalf("waiter: %v", err)
		}
	})

	fu, ok := m.(state.ForceUnlocker)
	if !ok {
		return
	}
	t.Run("force-unlock", func(t *testing.T) {
		if err := fu.ForceUnlock("nothing"); err == nil {
			t.Fatal("ForceUnlock of an unlocked state succeeded")
		}
		id, err := m.Lock(ctx, state.NewLockInfo("apply"))
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		if err := fu.ForceUnlock("wrong-id"); err == nil {
			t.Fatal("ForceUnlock with a wrong ID succeeded")
		}
		if err := fu.ForceUnlock(id); err != nil {
			t.Fatalf("ForceUnlock: %v", err)
		}
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		id2, err := m.Lock(tctx, state.NewLockInfo("next"))
		if err != nil {
			t.Fatalf("Lock after ForceUnlock: %v", err)
		}
		if err := m.Unlock(id2); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	})
}
