package agent

import (
	"slices"

	"github.com/roofline/roofline/internal/engine/logdiag"
	"github.com/roofline/roofline/internal/state"
)

// Restarts is what a Restarter decides for one batch of requests, before
// it plans: one Outcome per request, in order, and the servers to restart.
type Restarts struct {
	Outs []Outcome
	// Targets are the servers to restart; Replace those of them whose
	// process runs but hangs.
	Targets, Replace []string
	// Kept are servers that keep a previous instance for rollback: they are
	// planned too, as no-ops, so that apply's recovery reads their
	// keep_previous from the plan (without it, it would end their window).
	Kept []string
}

// Pending is a batch of requests not decided yet.
func Pending(reqs []Request) *Restarts {
	r := &Restarts{Outs: make([]Outcome, len(reqs))}
	for i, q := range reqs {
		r.Outs[i].Name = q.Name
	}
	return r
}

// Triage checks the requests against the state as it is under the lock
// (another roofline may have acted since the agent looked) and the
// configuration (configured reports whether a server is still declared for
// this host). A request skipped here is not restarted.
func (r *Restarts) Triage(reqs []Request, st *state.File, configured func(name string) bool) {
	for i, q := range reqs {
		s := st.Server(q.Name)
		switch {
		case s == nil:
			r.Outs[i].Skipped = "it is no longer in the state"
		case s.LaunchID != q.LaunchID:
			r.Outs[i].Skipped = "another roofline replaced it meanwhile"
		case q.Status == state.StatusStarting && s.Status != state.StatusStarting:
			r.Outs[i].Skipped = "the apply that was starting it has finished"
		case !configured(q.Name):
			r.Outs[i].Skipped, r.Outs[i].Lasting = "it is no longer in the configuration: roofline apply removes it", true
		default:
			r.Targets = append(r.Targets, q.Name)
			if q.Replace {
				r.Replace = append(r.Replace, q.Name)
			}
		}
	}
	if len(r.Targets) == 0 {
		return
	}
	for _, name := range st.Names() {
		if s := st.Servers[name]; s.Deposed != nil && s.Deposed.Status == state.StatusKept && configured(name) && !slices.Contains(r.Targets, name) {
			r.Kept = append(r.Kept, name)
		}
	}
}

// FailAll fails every request not yet decided with err (class names the
// step: "config", "plan"; "" when none does).
func (r *Restarts) FailAll(err error, class string) []Outcome {
	for i := range r.Outs {
		if o := &r.Outs[i]; o.Skipped == "" && !o.Restarted && o.Err == nil {
			o.Err, o.Class, o.Cause = err, class, err.Error()
		}
	}
	return r.Outs
}

// Out is the outcome of server name; nil when no request named it.
func (r *Restarts) Out(name string) *Outcome {
	for i := range r.Outs {
		if r.Outs[i].Name == name {
			return &r.Outs[i]
		}
	}
	return nil
}

// Failed records a failed restart: the log classifier's verdict when it
// has one, else the step (phase) that failed and its error.
func (o *Outcome) Failed(err error, phase string, cause error, d *logdiag.Diagnosis) {
	o.Err = err
	if d != nil {
		o.Class, o.Cause = d.Class, d.Summary
	}
	if o.Class == "" || o.Class == "unknown" {
		o.Class, o.Cause = phase, cause.Error()
	}
}
