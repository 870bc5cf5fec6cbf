package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/diagfmt"
	"github.com/roofline/roofline/internal/jsonplan"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/version"
)

// UIVersion is the version of the machine-readable stream (plan -json,
// apply -json): docs/json.md. Readers accept the same major version.
const UIVersion = "1.0"

// Message is one line of the stream, in Terraform's machine-readable UI
// shape: the @-fields on every message, then the payload of its type.
type Message struct {
	Level     string `json:"@level"`
	Text      string `json:"@message"`
	Module    string `json:"@module"`
	Timestamp string `json:"@timestamp"`
	Type      string `json:"type"`

	Roofline   string         `json:"roofline,omitempty"` // version
	UI         string         `json:"ui,omitempty"`       // version
	Diagnostic *diagfmt.Diag  `json:"diagnostic,omitempty"`
	Change     *Change        `json:"change,omitempty"`  // planned_change, resource_drift
	Changes    *Summary       `json:"changes,omitempty"` // change_summary
	Hook       *Hook          `json:"hook,omitempty"`    // apply_*
	Gate       *Gate          `json:"gate,omitempty"`    // gate_result
	Plan       *jsonplan.Plan `json:"plan,omitempty"`    // plan (roofline's own, last)
}

// Resource names a server as Terraform names a resource instance.
type Resource struct {
	Addr         string `json:"addr"`
	Module       string `json:"module"`
	Resource     string `json:"resource"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	ResourceKey  any    `json:"resource_key"`
}

// Change is a planned change or a drift.
type Change struct {
	Resource Resource `json:"resource"`
	// Action: create, update, delete, replace, noop (Terraform's words).
	Action string `json:"action"`
	// Reason is Terraform's reason code for replacements
	// (replace_because_cannot_update, replace_by_request).
	Reason string `json:"reason,omitempty"`
	// roofline's own: the reason in words, the order of a replacement
	// (create_before_destroy or destroy_before_create) and its downtime.
	Detail   string   `json:"roofline_detail,omitempty"`
	Order    string   `json:"roofline_order,omitempty"`
	Downtime string   `json:"roofline_downtime,omitempty"`
	Argv     []string `json:"roofline_argv_diff,omitempty"`
}

// Summary counts a plan's or an apply's changes.
type Summary struct {
	Add       int    `json:"add"`
	Change    int    `json:"change"`
	Remove    int    `json:"remove"`
	Operation string `json:"operation"` // plan, apply, destroy
}

// Hook is apply's progress on one server.
type Hook struct {
	Resource       Resource `json:"resource"`
	Action         string   `json:"action"`
	ElapsedSeconds float64  `json:"elapsed_seconds,omitempty"`
	IDKey          string   `json:"id_key,omitempty"`
	IDValue        string   `json:"id_value,omitempty"`
	// Detail is roofline's words: the last log line while starting, the
	// pid and URL when complete, the cause when errored.
	Detail string `json:"roofline_detail,omitempty"`
}

// Gate is roofline's own: the gates a new instance passed or failed.
type Gate struct {
	Resource Resource               `json:"resource"`
	Passed   bool                   `json:"passed"`
	Summary  []string               `json:"summary"`
	Health   *jsonplan.HealthReport `json:"health,omitempty"`
	Smoke    *jsonplan.SmokeReport  `json:"smoke,omitempty"`
	Bench    *jsonplan.BenchResult  `json:"bench,omitempty"`
}

// Stream writes messages, one JSON object per line.
type Stream struct {
	mu  sync.Mutex
	w   io.Writer
	Now func() time.Time
}

// NewStream writes to w.
func NewStream(w io.Writer) *Stream { return &Stream{w: w, Now: time.Now} }

// Emit writes one message, filling the @-fields.
func (s *Stream) Emit(m Message) {
	if m.Level == "" {
		m.Level = "info"
	}
	m.Module = "roofline.ui"
	m.Timestamp = s.Now().Format("2006-01-02T15:04:05.000000Z07:00")
	b, _ := json.Marshal(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write(append(b, '\n'))
}

// Version is the first message of every stream.
func (s *Stream) Version() {
	s.Emit(Message{Type: "version", Text: "roofline " + version.Version, Roofline: version.Version, UI: UIVersion})
}

// Diagnostics writes one message per diagnostic.
func (s *Stream) Diagnostics(diags []diagfmt.Diag) {
	for i := range diags {
		d := diags[i]
		level := "error"
		if d.Severity == "warning" {
			level = "warn"
		}
		text := strings.ToUpper(d.Severity[:1]) + d.Severity[1:] + ": " + d.Summary
		s.Emit(Message{Type: "diagnostic", Level: level, Text: text, Diagnostic: &d})
	}
}

// ResourceOf names a server by its address (server.NAME or
// server.NAME["key"]).
func ResourceOf(addr string) Resource {
	name := strings.TrimPrefix(addr, "server.")
	r := Resource{Addr: addr, Resource: addr, ResourceType: "server", ResourceName: name}
	if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		r.ResourceName = name[:i]
		var key any
		if json.Unmarshal([]byte(name[i+1:len(name)-1]), &key) == nil {
			r.ResourceKey = key
		}
	}
	return r
}

// actionWord is Terraform's action name of a plan action.
func actionWord(a plan.Action) string {
	switch a {
	case plan.Create:
		return "create"
	case plan.Update:
		return "update"
	case plan.Delete:
		return "delete"
	case plan.DeleteThenCreate, plan.CreateThenDelete:
		return "replace"
	}
	return "noop"
}

// PlanStream writes a plan as a stream: version, every diagnostic (load
// time included), the drift, each planned change, the change summary, and
// last the whole plan (roofline's own "plan" message, as show -json).
func PlanStream(s *Stream, j *plan.JSONPlan) {
	s.Version()
	planMessages(s, j)
	s.Emit(Message{Type: "plan", Text: "The whole plan (as roofline show -json prints it)", Plan: plan.Document(j)})
}

// planMessages are the diagnostics, drift, planned changes and summary.
func planMessages(s *Stream, j *plan.JSONPlan) {
	s.Diagnostics(j.Diagnostics)
	for _, d := range j.ResourceDrift {
		s.Emit(Message{Type: "resource_drift", Text: d.Addr + ": " + d.Summary,
			Change: &Change{Resource: ResourceOf(d.Addr), Action: "update", Detail: strings.TrimSpace(d.Summary + ": " + d.Detail)}})
	}
	for _, ch := range j.ResourceChanges {
		act := plan.ActionFromJSON(ch.Actions)
		if act == plan.NoOp {
			continue
		}
		c := &Change{Resource: ResourceOf(ch.Address), Action: actionWord(act), Detail: ch.Reason, Downtime: ch.Downtime}
		switch act {
		case plan.DeleteThenCreate:
			c.Reason, c.Order = "replace_because_cannot_update", "destroy_before_create"
		case plan.CreateThenDelete:
			c.Reason, c.Order = "replace_because_cannot_update", "create_before_destroy"
		}
		if act.IsReplace() && strings.Contains(ch.Reason, "-replace") {
			c.Reason = "replace_by_request"
		}
		for _, op := range plan.ArgvDiff(ch) {
			if op.Kind != ' ' && act != plan.Delete {
				c.Argv = append(c.Argv, string(op.Kind)+" "+op.Text)
			}
		}
		s.Emit(Message{Type: "planned_change", Text: fmt.Sprintf("%s: Plan to %s", ch.Address, c.Action), Change: c})
	}
	op := "plan"
	if j.Mode == plan.ModeDestroy {
		op = "destroy"
	}
	sum := &Summary{Add: j.Summary["add"], Change: j.Summary["change"], Remove: j.Summary["destroy"], Operation: op}
	s.Emit(Message{Type: "change_summary", Text: fmt.Sprintf("Plan: %d to add, %d to change, %d to destroy.", sum.Add, sum.Change, sum.Remove), Changes: sum})
}

// ApplyPlan starts an apply stream: version and the plan's messages.
func ApplyPlan(s *Stream, j *plan.JSONPlan) {
	s.Version()
	planMessages(s, j)
}

// ApplySummary ends an apply stream.
func ApplySummary(s *Stream, add, change, remove int, destroy bool) {
	op, verb := "apply", "Apply"
	if destroy {
		op, verb = "destroy", "Destroy"
	}
	s.Emit(Message{Type: "change_summary", Text: fmt.Sprintf("%s complete! Resources: %d added, %d changed, %d destroyed.", verb, add, change, remove),
		Changes: &Summary{Add: add, Change: change, Remove: remove, Operation: op}})
}

// ApplyHooks turns apply's progress into stream messages: apply_start,
// apply_progress (at most every 2 s per server), apply_complete,
// apply_errored, log (roofline's rollout notes) and gate_result.
type ApplyHooks struct {
	S       *Stream
	Actions map[string]string // address → Terraform action word
	mu      sync.Mutex
	last    map[string]time.Duration
}

// NewApplyHooks reports the changes of p.
func NewApplyHooks(s *Stream, j *plan.JSONPlan) *ApplyHooks {
	h := &ApplyHooks{S: s, Actions: map[string]string{}, last: map[string]time.Duration{}}
	for _, ch := range j.ResourceChanges {
		h.Actions[ch.Address] = actionWord(plan.ActionFromJSON(ch.Actions))
	}
	return h
}

func (h *ApplyHooks) hook(addr string) *Hook {
	return &Hook{Resource: ResourceOf(addr), Action: h.Actions[addr]}
}

// Begin implements apply.Hooks.
func (h *ApplyHooks) Begin(addr, verb string) {
	h.S.Emit(Message{Type: "apply_start", Text: addr + ": " + verb, Hook: h.hook(addr)})
}

// Progress implements apply.Hooks.
func (h *ApplyHooks) Progress(addr string, elapsed time.Duration, lastLog string) {
	h.mu.Lock()
	if elapsed-h.last[addr] < 2*time.Second {
		h.mu.Unlock()
		return
	}
	h.last[addr] = elapsed
	h.mu.Unlock()
	k := h.hook(addr)
	k.ElapsedSeconds, k.Detail = elapsed.Round(time.Millisecond).Seconds(), lastLog
	h.S.Emit(Message{Type: "apply_progress", Text: fmt.Sprintf("%s: Still starting... [%s elapsed]", addr, elapsed.Round(time.Second)), Hook: k})
}

// End implements apply.Hooks.
func (h *ApplyHooks) End(addr, verb string, elapsed time.Duration, detail string) {
	k := h.hook(addr)
	k.ElapsedSeconds, k.Detail = elapsed.Round(time.Millisecond).Seconds(), detail
	typ, level := "apply_complete", "info"
	if verb == "Failed" {
		typ, level = "apply_errored", "error"
	} else if pid, ok := pidOf(detail); ok {
		k.IDKey, k.IDValue = "pid", pid
	}
	h.S.Emit(Message{Type: typ, Level: level, Text: fmt.Sprintf("%s: %s after %s", addr, verb, elapsed.Round(100*time.Millisecond)), Hook: k})
}

// Note reports a step of a rollout (apply.Noter).
func (h *ApplyHooks) Note(addr, msg string) {
	h.S.Emit(Message{Type: "log", Text: addr + ": " + msg})
}

// GateResult implements apply.GateReporter.
func (h *ApplyHooks) GateResult(addr string, res *state.GateResult, err error) {
	g := &Gate{Resource: ResourceOf(addr), Summary: []string{}}
	if res != nil {
		g.Passed = res.Passed && err == nil
		g.Health, g.Smoke, g.Bench = plan.GateReports(res.Health, res.Smoke, res.Bench)
		g.Summary = append(g.Summary, res.Summary...)
	}
	level, text := "info", addr+": gates passed"
	if !g.Passed {
		level, text = "error", addr+": gates failed"
		if err != nil {
			text += ": " + err.Error()
		}
	}
	h.S.Emit(Message{Type: "gate_result", Level: level, Text: text, Gate: g})
}

// pidOf finds "pid N" in a detail text.
func pidOf(detail string) (string, bool) {
	i := strings.Index(detail, "pid ")
	if i < 0 {
		return "", false
	}
	rest := detail[i+4:]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	return rest[:n], n > 0
}
