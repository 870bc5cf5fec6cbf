package plan

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/state"
)

func TestCheckApplicable(t *testing.T) {
	if err := (&Plan{}).CheckApplicable("p.plan"); err != nil {
		t.Errorf("a host plan: %v", err)
	}
	err := (&Plan{Review: true}).CheckApplicable("p.plan")
	if err == nil || !strings.HasPrefix(err.Error(), "p.plan is a review plan\n\n") || !strings.Contains(err.Error(), "without -inventory") {
		t.Errorf("a review plan: %v", err)
	}
}

func TestCheckSaved(t *testing.T) {
	st := state.NewFile()
	probes := 0
	installs := func(engine string) func() (map[string]string, map[string]string) {
		return func() (map[string]string, map[string]string) {
			probes++
			return map[string]string{"v": engine}, nil
		}
	}
	for _, tc := range []struct {
		name      string
		p         *Plan
		fp        string
		installs  string
		want      string // in the error; "" for none
		wantProbe bool
	}{
		{"fresh", &Plan{Lineage: st.Lineage, PriorSerial: st.Serial, Installs: map[string]string{"v": "id1"}}, "", "id1", "", true},
		{"the state moved: no probe", &Plan{Lineage: st.Lineage, PriorSerial: st.Serial + 1}, "", "id1", "the state changed", false},
		{"the GPUs changed", &Plan{Lineage: st.Lineage, PriorSerial: st.Serial, InventoryFingerprint: "a"}, "b", "id1", "the GPUs changed", false},
		{"an engine changed", &Plan{Lineage: st.Lineage, PriorSerial: st.Serial, Installs: map[string]string{"v": "id1"}}, "", "id2", `engine "v" changed`, true},
	} {
		probes = 0
		err := CheckSaved(tc.p, st, tc.fp, installs(tc.installs))
		if (err == nil) != (tc.want == "") || (err != nil && (!strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrStale))) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if (probes > 0) != tc.wantProbe {
			t.Errorf("%s: probed %d times", tc.name, probes)
		}
	}
}

func TestPlanSensitiveValues(t *testing.T) {
	p := &Plan{Changes: []*Change{
		{Name: "a", After: &Desired{Env: map[string]string{"HF_TOKEN": "hf_secret", "X": "plain"}, Sensitive: []string{"env.HF_TOKEN"}}},
		{Name: "gone"},
		{Name: "b", After: &Desired{Argv: []string{"serve", "--api-key=sk-1"}, Sensitive: []string{"argv[1]"}}},
	}}
	if got, want := p.SensitiveValues(), []string{"hf_secret", "sk-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}
