package views

import (
	"testing"
	"time"

	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
)

func TestStatusRows(t *testing.T) {
	yes := true
	snap := gputest.H100s(2, gputest.WithProcess(0, 100, 40<<30, "vllm"), gputest.WithProcess(1, 200, 30<<30, "vllm"))
	st := state.NewFile()
	st.Set(&state.Server{Name: "web", Port: 8000, Instance: state.Instance{PID: 100, LaunchID: "L1"}, Status: state.StatusReady,
		ReadyAt: time.Now().Add(-time.Minute), Gate: &state.GateResult{Passed: true}})
	st.Set(&state.Server{Name: "chat", Port: 9000, BackendPort: 9101, Instance: state.Instance{PID: 200, LaunchID: "L3"},
		Deposed: &state.Server{Name: "chat", Port: 9100, Instance: state.Instance{PID: 300}}})
	st.Set(&state.Server{Name: "gone", Port: 7000, Instance: state.Instance{PID: 400}, Status: state.StatusFailed})
	// A finished rollout that keeps its previous instance: the server
	// serves; the kept one is not "old, serving".
	st.Set(&state.Server{Name: "kept", Port: 6000, BackendPort: 6101, Instance: state.Instance{PID: 500}, Status: state.StatusReady,
		Deposed: &state.Server{Name: "kept", Port: 6000, BackendPort: 6100, Instance: state.Instance{PID: 501}, Status: state.StatusKept}})
	cals := &state.Calibrations{Records: []state.Calibration{
		{Server: "web", LaunchID: "L0", PredictedAs: "uncalibrated"},
		{Server: "web", LaunchID: "L1", PredictedAs: "measured"},
		{Server: "chat", LaunchID: "L2", PredictedAs: "estimated"}, // an earlier start's: no column
		{Server: "gone", PredictedAs: "estimated"},                 // no launch id: this start's
	}}
	observe := func(s *state.Server) *plan.Observation {
		switch s.PID {
		case 100:
			return &plan.Observation{Alive: true, Healthy: &yes, GPUPids: []int{100}}
		case 200, 300, 500, 501:
			return &plan.Observation{Alive: true, GPUPids: []int{s.PID}}
		}
		return &plan.Observation{Detail: "pid 400 exited"}
	}
	for _, c := range []struct {
		name string
		snap bool
		cals *state.Calibrations
		want []StatusRow // the fields checked below
	}{
		{name: "snapshot and calibrations", snap: true, cals: cals, want: []StatusRow{
			{Name: "chat", Instance: "old", Port: 9000, PID: 300, Running: true},
			{Name: "chat", Instance: "new", Port: 9000, PID: 200, Running: true, GPUMemoryBytes: 30 << 30},
			{Name: "gone", Port: 7000, PID: 400, Prediction: "estimated", Detail: "pid 400 exited"},
			{Name: "kept", Instance: "previous", Port: 6000, PID: 501, Running: true},
			{Name: "kept", Port: 6000, PID: 500, Running: true},
			{Name: "web", Port: 8000, PID: 100, Running: true, Prediction: "measured", GPUMemoryBytes: 40 << 30},
		}},
		{name: "neither", want: []StatusRow{
			{Name: "chat", Instance: "old", Port: 9000, PID: 300, Running: true},
			{Name: "chat", Instance: "new", Port: 9000, PID: 200, Running: true},
			{Name: "gone", Port: 7000, PID: 400, Detail: "pid 400 exited"},
			{Name: "kept", Instance: "previous", Port: 6000, PID: 501, Running: true},
			{Name: "kept", Port: 6000, PID: 500, Running: true},
			{Name: "web", Port: 8000, PID: 100, Running: true},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := snap
			if !c.snap {
				s = nil
			}
			rows := StatusRows(st, observe, s, c.cals, nil)
			if len(rows) != len(c.want) {
				t.Fatalf("%d rows, want %d: %+v", len(rows), len(c.want), rows)
			}
			for i, w := range c.want {
				g := rows[i]
				if g.Name != w.Name || g.Instance != w.Instance || g.Port != w.Port || g.PID != w.PID || g.Running != w.Running ||
					g.Prediction != w.Prediction || g.GPUMemoryBytes != w.GPUMemoryBytes || g.Detail != w.Detail {
					t.Errorf("row %d = %+v\nwant %+v", i, g, w)
				}
			}
			web := rows[5]
			if web.GatePassed == nil || !*web.GatePassed || web.Healthy == nil || web.UptimeSec < 59 || web.Unhealthy() {
				t.Errorf("web: gate %v, healthy %v, uptime %v, unhealthy %v", web.GatePassed, web.Healthy, web.UptimeSec, web.Unhealthy())
			}
			if rows[1].BackendPort != 9101 || rows[0].GatePassed != nil || !rows[2].Unhealthy() {
				t.Errorf("chat's backend port %d, old gate %v; gone unhealthy %v", rows[1].BackendPort, rows[0].GatePassed, rows[2].Unhealthy())
			}
		})
	}
}
