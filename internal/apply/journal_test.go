package apply

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/plan"
)

// TestJournalRollouts: apply records each rollout in the journal with the
// plan's GPU host, and a failed one (phase, class, error) only when
// JournalFailures says so, as the agent's restarts record successes only.
func TestJournalRollouts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures bool
		want     map[string]string // server → failure phase ("" for a success)
	}{
		{"apply", true, map[string]string{"a": "", "b": "gates"}},
		{"agent", false, map[string]string{"a": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newApplier(t, newFakeDriver(), &fakeGates{failCheck: map[string]bool{"mb": true}})
			a.Journal, a.JournalFailures = filepath.Join(t.TempDir(), journal.FileName), tc.failures
			p := &plan.Plan{Snapshot: &gpu.Snapshot{DriverVersion: "570.86.15"}, Changes: []*plan.Change{
				{Addr: "server.a", Name: "a", Action: plan.Create, After: desired("a", "ma", 8001)},
				{Addr: "server.b", Name: "b", Action: plan.Create, After: desired("b", "mb", 8002)},
			}}
			_, _ = a.Apply(context.Background(), p, nil)
			entries, err := journal.Read(a.Journal)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, e := range entries {
				if e.Kind != journal.KindRollout || e.DriverVersion != "570.86.15" {
					t.Errorf("entry %+v: want a rollout on driver 570.86.15", e)
				}
				got[e.Server] = ""
				if e.Failure != nil {
					got[e.Server] = e.Failure.Phase
					if e.Failure.Error == "" || e.Failure.Class == "" {
						t.Errorf("failure of %s without its error or class: %+v", e.Server, e.Failure)
					}
				}
			}
			if len(got) != len(tc.want) || len(entries) != len(tc.want) {
				t.Fatalf("journal %v, want %v", got, tc.want)
			}
			for s, phase := range tc.want {
				if p, ok := got[s]; !ok || p != phase {
					t.Errorf("server %s: phase %q (recorded %v), want %q", s, p, ok, phase)
				}
			}
		})
	}
}
